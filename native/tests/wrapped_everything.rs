//! `jp mcp` wrapping the reference server `@modelcontextprotocol/server-everything` (pinned in
//! package.json; started by jp under the OS sandbox with the pinned Node ≥ 22 it needs), driven
//! by the official npm SDK (`tests/mcp/wrapped_everything.mjs`): what the server offers comes
//! through jp as it is — content blocks, progress, logging, prompts, resources, templates,
//! completions, elicitation; and a hostile bare server (`tests/mcp_servers/noisy_server.py`)
//! flooding log messages, sending progress backwards or for another token, posing as jp in an
//! elicitation and asking for sampling reaches the agent only within bounds, under its own name.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Command;

mod support;
use support::approve_config;

const JP: &str = env!("CARGO_BIN_EXE_jp");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The pinned Node (server-everything's dependencies need Node ≥ 22).
fn node() -> PathBuf {
    let node = repo().join("node_modules/node/bin/node");
    assert!(node.is_file(), "{} is missing: run `npm install` (./tests/run does)", node.display());
    node
}

/// A workspace whose `.jp/config.toml` wraps server-everything as `everything`, plus `extra`.
fn everything_workspace(extra: &str) -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    let node_modules = repo().join("node_modules");
    let server = node_modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    assert!(server.is_file(), "{} is missing: run `npm install` (./tests/run does)", server.display());
    let config = format!(
        "[mcp.servers.everything]\ncommand = {node:?}\nargs = [{server:?}, \"stdio\"]\nread_paths = [{node_modules:?}]\ntools = \"*\"\n{extra}",
        node = node(),
    );
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    approve_config(ws.path());
    ws
}

#[test]
fn the_reference_everything_server_comes_through_jp_mcp_as_it_is() {
    let ws = everything_workspace("");
    let out = Command::new(node())
        .arg(repo().join("tests/mcp/wrapped_everything.mjs"))
        .arg(JP)
        .arg(ws.path())
        .current_dir(repo())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    for check in ["an image block", "progress:", "logging:", "prompts:", "resources:", "completion:", "elicitation:"] {
        assert!(stdout.contains(&format!("ok {check}")), "{check} missing:\n{stdout}");
    }
}

/// Peak resident memory `jp mcp` may reach while a server floods it (as in `mcp_servers.rs`).
const MAX_RSS_MIB: i64 = 300;

fn peak_rss_mib(pid: u32) -> i64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let hwm = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().strip_suffix("kB"));
    hwm.and_then(|v| v.trim().parse::<i64>().ok()).unwrap_or(0) / 1024
}

#[test]
fn a_hostile_server_reaches_the_agent_only_within_bounds_and_under_its_own_name() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;

    use serde_json::{Value, json};

    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    let script = repo().join("tests/mcp_servers/noisy_server.py");
    let config = format!("[mcp.servers.noisy]\ncommand = \"/usr/bin/python3\"\nargs = [{script:?}]\ntools = \"*\"\n");
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    approve_config(ws.path());
    let mut child = Command::new(JP)
        .arg("mcp")
        .current_dir(ws.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    // The agent declares elicitation and sampling: sampling must still not reach it (not in `forward`).
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {"elicitation": {}, "sampling": {}}, "clientInfo": {"name": "t", "version": "0"}}}));
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "debug"}}));
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "noisy.noisy", "arguments": {}, "_meta": {"progressToken": "agent-1"}}}));
    let (mut logs, mut progress, mut asked, mut sampled, mut rss) = (0, Vec::new(), Vec::new(), 0, 0);
    let result = loop {
        let v: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        match v["method"].as_str() {
            Some("notifications/message") => {
                logs += 1;
                let (logger, data) = (&v["params"]["logger"], v["params"]["data"].to_string());
                assert!(data.len() < 20 << 10, "a log message of {} bytes reached the agent", data.len());
                if logger == "jp" {
                    assert!(data.contains("jp dropped") && data.contains("'noisy'"), "{data}");
                } else {
                    assert_eq!(logger, "noisy", "the server's messages are under its own name: {v}");
                }
                if logs % 1000 == 0 {
                    rss = rss.max(peak_rss_mib(child.id()));
                }
            }
            Some("notifications/progress") => {
                assert_eq!(v["params"]["progressToken"], "agent-1", "{v}");
                progress.push(v["params"]["progress"].as_f64().unwrap());
            }
            Some("elicitation/create") => {
                asked.push(v["params"]["message"].as_str().unwrap().to_owned());
                send(json!({"jsonrpc": "2.0", "id": v["id"], "result": {"action": "accept", "content": {"ok": true}}}));
            }
            Some("sampling/createMessage") => {
                sampled += 1;
                send(json!({"jsonrpc": "2.0", "id": v["id"], "error": {"code": -1, "message": "no"}}));
            }
            _ if v["id"] == 3 => break v,
            _ => {}
        }
    };
    rss = rss.max(peak_rss_mib(child.id()));
    assert!(rss < MAX_RSS_MIB, "jp mcp reached {rss} MiB (bound {MAX_RSS_MIB} MiB)");
    assert!(logs > 0, "no log message was forwarded");
    // The server's backwards and repeated values are dropped; what reaches the agent increases.
    assert!(!progress.is_empty() && progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
    assert!(!progress.contains(&100.0), "progress for a token it was not given: {progress:?}");
    // Its question is attributed to it, its line break shown, not obeyed.
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].starts_with("MCP server 'noisy' asks: jp asks:") && !asked[0].contains('\n'), "{:?}", asked[0]);
    assert_eq!(sampled, 0, "sampling reached the agent without `forward = [\"sampling\"]`");
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    let outcome: Value = serde_json::from_str(text).unwrap();
    assert_eq!(outcome["elicited"]["action"], "accept", "{outcome}");
    let refused = outcome["sampled"]["message"].as_str().unwrap_or_default();
    assert!(refused.contains("add \"sampling\" to [mcp.servers.noisy] forward"), "{outcome}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
