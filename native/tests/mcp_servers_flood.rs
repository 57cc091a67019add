//! Hostile MCP servers that flood `jp` (a bare Python server, no SDK): endless pages of tools, an
//! endless line, a huge result, 15 MiB of tiny values, floods of notifications and of requests —
//! each meets a cap, and `jp`'s peak memory stays under a bound measured from `/proc`.

#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

mod support;
use support::approve_config;
use support::mcp::Session;

const JP: &str = env!("CARGO_BIN_EXE_jp");

/// A bare MCP server (no SDK) that misbehaves in the way `argv[1]` names, once jp asks for its
/// tools (`tools/list`) or calls `flood` — each would grow an unbounded client to gigabytes.
const FLOOD_SERVER: &str = r#"import json, sys
mode = sys.argv[1]
out = sys.stdout.buffer
def send(m):
    out.write(json.dumps(m).encode() + b"\n")
    out.flush()
def tool(name, description=""):
    return {"name": name, "description": description, "inputSchema": {"type": "object"}}
BIG = "d" * (64 << 10)
for line in sys.stdin.buffer:
    m = json.loads(line)
    method, rid = m.get("method"), m.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": m["params"]["protocolVersion"],
              "capabilities": {"tools": {}}, "serverInfo": {"name": "flood", "version": "0"}}})
    elif method == "tools/list":
        page = int((m.get("params") or {}).get("cursor") or 0)
        if mode == "pages":  # one tool a page, and always another page
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [tool("t%d" % page)], "nextCursor": str(page + 1)}})
        elif mode == "items":  # 128 small tools a page, and always another page
            tools = [tool("t%d_%d" % (page, i)) for i in range(128)]
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools, "nextCursor": str(page + 1)}})
        elif mode == "bytes":  # 1 MiB pages (16 tools of 64 KiB), 1 GiB in all
            tools = [tool("t%d_%d" % (page, i), BIG) for i in range(16)]
            more = {"nextCursor": str(page + 1)} if page < 1023 else {}
            send({"jsonrpc": "2.0", "id": rid, "result": dict(tools=tools, **more)})
        elif mode == "line":  # one line of 2 GiB, never ended
            out.write(b'{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"' % json.dumps(rid).encode())
            chunk = b"a" * (1 << 20)
            for _ in range(2048):
                out.write(chunk)
            out.flush()
        else:
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [tool("flood")]}})
    elif method == "tools/call":
        if mode == "notifications":  # 600 MB of log messages and progress, then the answer
            log = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                              "params": {"level": "info", "data": "x" * 1000}}).encode() + b"\n"
            progress = json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                                   "params": {"progressToken": 1, "progress": 1, "message": "y" * 1000}}).encode() + b"\n"
            for _ in range(1 << 18):
                out.write(log)
                out.write(progress)
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "flooded"}]}})
        elif mode == "result":  # a result of 32 MiB
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "r" * (32 << 20)}]}})
        elif mode == "values":  # 15 MiB (under the cap) of tiny content blocks
            block = b'{"type":"text","text":""},'
            blocks = block * ((15 << 20) // len(block))
            out.write(b'{"jsonrpc":"2.0","id":%s,"result":{"content":[%s{"type":"text","text":"end"}]}}\n' % (json.dumps(rid).encode(), blocks))
            out.flush()
        elif mode == "requests":  # pings without ever reading the answers (4 Mi of them, 1 GiB)
            pad = b"z" * 200
            for i in range(1 << 22):
                out.write(b'{"jsonrpc":"2.0","id":"p%d","method":"ping","params":{"_meta":{"pad":"%s"}}}\n' % (i, pad))
            out.flush()
    elif rid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no method %s" % method}})
"#;

/// Peak resident memory `jp` may reach while one flooding server is running. Without the caps,
/// the floods of tools, bytes and requests below took it past 1 GiB.
const MAX_RSS_MIB: i64 = 300;

/// A workspace whose one MCP server `flood` misbehaves as `mode` says (the script lives outside
/// the workspace, like the other test servers).
fn flood_workspace(mode: &str) -> (tempfile::TempDir, tempfile::TempDir) {
    let scripts = tempfile::tempdir().unwrap();
    let script = scripts.path().join("flood_server.py");
    std::fs::write(&script, FLOOD_SERVER).unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    let config =
        format!("[mcp.servers.flood]\ncommand = \"/usr/bin/python3\"\nargs = [{script:?}, {mode:?}]\ntools = \"*\"\n");
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    approve_config(ws.path());
    (ws, scripts)
}

/// Run `jp` in `ws` and return its exit code, stderr and peak RSS in MiB: its `VmHWM`, read from
/// `/proc` every 10 ms while it runs (killed at twice [`MAX_RSS_MIB`]). (Not `ru_maxrss` from `wait4`: a child's starts at its
/// parent's high-water mark, and this test process can be large — a failing test's backtrace.)
fn jp_peak_rss(ws: &Path, args: &[&str]) -> (i32, String, i64) {
    use std::io::{Read as _, Seek as _};
    let mut stderr_file = tempfile::tempfile().unwrap();
    let mut child = Command::new(JP)
        .args(args)
        .current_dir(ws)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr_file.try_clone().unwrap())
        .spawn()
        .unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0i64;
    let status = loop {
        let status = std::fs::read_to_string(&status_file).unwrap_or_default();
        let hwm = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().strip_suffix("kB"));
        peak_kib = peak_kib.max(hwm.and_then(|v| v.trim().parse().ok()).unwrap_or(0));
        if peak_kib > 2 * MAX_RSS_MIB * 1024 {
            // Over the bound already: stopped before it takes the machine's memory.
            let _ = child.kill();
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let mut stderr = String::new();
    stderr_file.rewind().unwrap();
    stderr_file.read_to_string(&mut stderr).unwrap();
    let rss = peak_kib / 1024;
    eprintln!("jp {args:?}: peak RSS {rss} MiB");
    (status.code().unwrap_or(-1), stderr, rss)
}

#[test]
fn a_server_paging_its_tools_without_end_meets_the_caps_of_tools_list() {
    for (mode, cap) in [
        ("pages", "more than 64 pages of tools/list (cap)"),
        ("items", "more than 4096 tools in tools/list (cap)"),
        ("bytes", "more than 8 MiB of tool definitions in tools/list (cap)"),
    ] {
        let (ws, _scripts) = flood_workspace(mode);
        let (code, stderr, rss) = jp_peak_rss(ws.path(), &["tool", "list"]);
        assert!(rss < MAX_RSS_MIB, "{mode}: jp reached {rss} MiB (bound {MAX_RSS_MIB} MiB); {stderr}");
        assert!(stderr.contains(&format!("MCP server 'flood' sent {cap}")), "{mode}: {stderr}");
        assert_eq!(code, 0, "the other tools are still listed: {stderr}");
    }
}

#[test]
fn a_server_writing_one_endless_line_or_a_huge_result_meets_the_caps_of_a_message() {
    let (ws, _scripts) = flood_workspace("line");
    let (code, stderr, rss) = jp_peak_rss(ws.path(), &["tool", "list"]);
    assert!(rss < MAX_RSS_MIB, "jp reached {rss} MiB (bound {MAX_RSS_MIB} MiB); {stderr}");
    assert!(stderr.contains("MCP server 'flood'") && stderr.contains("longer than 16 MiB (cap)"), "{stderr}");
    assert_eq!(code, 0, "{stderr}");
    // A tool's result is one message: 32 MiB is over the cap, through `jp tool call`…
    let (ws, _scripts) = flood_workspace("result");
    let (code, stderr, rss) = jp_peak_rss(ws.path(), &["tool", "call", "flood.flood"]);
    assert!(rss < MAX_RSS_MIB, "jp reached {rss} MiB (bound {MAX_RSS_MIB} MiB); {stderr}");
    assert!(stderr.contains("failed on tools/call flood") && stderr.contains("longer than 16 MiB (cap)"), "{stderr}");
    assert_eq!(code, 1, "{stderr}");
    // 15 MiB of tiny values would be 1.7 GiB once parsed: over the cap of values.
    let (ws_values, _scripts_values) = flood_workspace("values");
    let (code, stderr, rss) = jp_peak_rss(ws_values.path(), &["tool", "call", "flood.flood"]);
    assert!(rss < MAX_RSS_MIB, "jp reached {rss} MiB (bound {MAX_RSS_MIB} MiB); {stderr}");
    assert!(stderr.contains("more than 262144 JSON values (cap)"), "{stderr}");
    assert_eq!(code, 1, "{stderr}");
    // …and the 32 MiB result through `jp mcp`, whose relay reads the server's lines once it runs.
    let mut s = Session::start(ws.path());
    let listed = s.request("tools/list", json!({}));
    assert!(listed.to_string().contains("flood.flood"), "{listed}");
    for _ in 0..2 {
        let r = s.call("flood.flood", json!({}));
        assert_eq!(r["result"]["isError"], true, "{r}");
        let text = r["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("longer than 16 MiB (cap)"), "{text}");
    }
    drop(s.child.stdin.take());
    assert!(s.child.wait().unwrap().success());
}

#[test]
fn a_server_flooding_notifications_or_requests_cannot_grow_the_host() {
    // 600 MB (twice the bound) of `notifications/message` and `notifications/progress` before
    // the answer. Through a debug `jp` on a slow 2-core machine that takes minutes, not the
    // default 60 s of a call: the limit is set to what the work needs.
    let (ws, _scripts) = flood_workspace("notifications");
    let (code, stderr, rss) = jp_peak_rss(ws.path(), &["tool", "call", "--timeout", "900", "flood.flood"]);
    assert!(rss < MAX_RSS_MIB, "notifications: jp reached {rss} MiB (bound {MAX_RSS_MIB} MiB); {stderr}");
    assert_eq!(code, 0, "{stderr}");
    // 4 Mi pings while never reading jp's answers: held back, then the call's time limit.
    let (ws, _scripts) = flood_workspace("requests");
    let (code, stderr, rss) = jp_peak_rss(ws.path(), &["tool", "call", "--timeout", "20", "flood.flood"]);
    assert!(rss < MAX_RSS_MIB, "requests: jp reached {rss} MiB (bound {MAX_RSS_MIB} MiB); {stderr}");
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("timed out after 20 s"), "{stderr}");
}
