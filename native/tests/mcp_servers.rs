//! MCP servers run by jp-host under the OS sandbox (D10 `McpRuntime`): the reference
//! `@modelcontextprotocol/server-filesystem`, told it may use `/`, and a hostile Python server
//! (the official SDK's server side, `tests/mcp_servers/hostile_server.py`) trying the network,
//! files outside the workspace and a crash — the kernel refuses what the policy does not grant,
//! through `jp tool call` and through `jp mcp` as a proxy; and `jp policy suggest -- mcp` learning
//! from a client's calls until it leaves.

#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

mod support;
use support::mcp::{Session, jp, venv};
use support::{approve_config, try_approve_config};

const JP: &str = env!("CARGO_BIN_EXE_jp");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("inside.txt"), "inside the workspace\n").unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    let node_modules = repo().join("node_modules");
    let server_js = node_modules.join("@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(server_js.is_file(), "{} is missing: run `npm install` (./tests/run does)", server_js.display());
    let venv = venv();
    let config = format!(
        r#"[mcp.servers.files]
command = "node"
args = [{server_js:?}, "/"]
read_paths = [{node_modules:?}]
tools = "*"
[mcp.servers.files.access]
filesystem = [{{ path = ".", allow = ["read"] }}]

[mcp.servers.hostile]
command = "/usr/bin/python3"
args = [{script:?}]
env = ["PYTHONPATH"]
read_paths = [{venv:?}]
tools = ["connect", "read", "write", "spawn", "whoami", "crash"]
[mcp.servers.hostile.access]
filesystem = [{{ path = ".", allow = ["read", "write"] }}]

[conversation.tools.read_text]
source = "mcp.files.read_text_file"
summary = "Read a text file (through the sandboxed reference server)."
"#,
        script = repo().join("tests/mcp_servers/hostile_server.py"),
    );
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    approve_config(ws.path());
    ws
}

#[test]
fn the_reference_filesystem_server_is_held_to_the_workspace_by_the_kernel() {
    let ws = workspace();
    let root = ws.path().canonicalize().unwrap();
    let inside = root.join("inside.txt");
    let (code, out, err) =
        jp(ws.path(), &["tool", "call", "files.read_text_file", &format!("path={}", inside.display())]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim_end(), "inside the workspace");
    // The server believes it may use all of `/`…
    let (code, out, err) = jp(ws.path(), &["tool", "call", "files.list_allowed_directories"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Allowed directories:\n/"), "{out}");
    // …the kernel says otherwise.
    let (code, _, err) = jp(ws.path(), &["tool", "call", "files.read_text_file", "path=/etc/hostname"]);
    assert_eq!(code, 1);
    assert!(err.contains("EACCES") || err.contains("permission denied"), "{err}");
    let target = root.join("new.txt");
    let (code, _, err) =
        jp(ws.path(), &["tool", "call", "files.write_file", &format!("path={}", target.display()), "content=x"]);
    assert_eq!(code, 1, "a read-only policy: {err}");
    assert!(!target.exists());
    // A table naming one tool of the server: the user's summary on top of the server's schema.
    let (code, out, err) = jp(ws.path(), &["tool", "schema", "read_text"]);
    assert_eq!(code, 0, "{err}");
    let schema: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(schema["summary"], "Read a text file (through the sandboxed reference server).");
    assert_eq!(schema["parameters"]["type"], "object");
    assert!(schema["parameters"]["properties"]["path"].is_object(), "{schema}");
}

#[test]
fn a_hostile_server_cannot_reach_the_network_or_files_outside_and_a_crash_is_a_clear_error() {
    let ws = workspace();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("id_rsa");
    std::fs::write(&secret, "PRIVATE KEY").unwrap();

    let text = |args: &[&str]| {
        let (code, out, err) = jp(ws.path(), args);
        assert_eq!(code, 0, "{args:?}: {err}");
        out
    };
    let connected = text(&["tool", "call", "hostile.connect", &format!("port={port}")]);
    assert!(connected.contains("refused"), "{connected}");
    let read = text(&["tool", "call", "hostile.read", &format!("path={}", secret.display())]);
    assert!(read.contains("refused") && !read.contains("PRIVATE KEY"), "{read}");
    let escaped = outside.path().join("planted.txt");
    let wrote = text(&["tool", "call", "hostile.write", &format!("path={}", escaped.display()), "text=x"]);
    assert!(wrote.contains("refused") && !escaped.exists(), "{wrote}");
    let inside = ws.path().canonicalize().unwrap().join("made-by-server.txt");
    let wrote = text(&["tool", "call", "hostile.write", &format!("path={}", inside.display()), "text=ok"]);
    assert_eq!(wrote.trim_end(), "written", "the workspace is writable by its policy");
    let spawned = text(&["tool", "call", "hostile.spawn", "program=/bin/sh"]);
    assert!(
        spawned.contains("refused") && !spawned.contains("escaped"),
        "a server runs only its own program: {spawned}"
    );
    let who = text(&["tool", "call", "hostile.whoami"]);
    let home = who.split_whitespace().nth(1).unwrap();
    assert!(home.contains("jp-mcp-") && !home.starts_with(&std::env::var("HOME").unwrap()), "a private HOME: {who}");
    drop(listener);
}

#[test]
fn jp_mcp_serves_the_servers_tools_sandboxed_and_restarts_a_server_that_died() {
    let ws = workspace();
    let mut s = Session::start(ws.path());
    let list = s.request("tools/list", json!({}));
    let names: Vec<&str> =
        list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    for n in ["files.read_text_file", "files.write_file", "hostile.crash", "read_text", "fs_read_file"] {
        assert!(names.contains(&n), "{n} in {names:?}");
    }
    let inside = ws.path().canonicalize().unwrap().join("inside.txt");
    let r = s.call("read_text", json!({"path": inside}));
    assert_eq!(r["result"]["content"][0]["text"], "inside the workspace\n", "{r}");
    let r = s.call("files.read_text_file", json!({"path": "/etc/hostname"}));
    assert_eq!(r["result"]["isError"], true, "{r}");

    let before = s.call("hostile.whoami", json!({}));
    let pid: u32 =
        before["result"]["content"][0]["text"].as_str().unwrap().split_whitespace().next().unwrap().parse().unwrap();
    let crashed = s.call("hostile.crash", json!({}));
    let message = crashed["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    assert_eq!(crashed["result"]["isError"], true, "{crashed}");
    assert!(
        message.contains("MCP server 'hostile'") && message.contains("crashing on purpose"),
        "the stderr tail: {message}"
    );
    let after = s.call("hostile.whoami", json!({}));
    let again: u32 =
        after["result"]["content"][0]["text"].as_str().unwrap().split_whitespace().next().unwrap().parse().unwrap();
    assert_ne!(pid, again, "the next call started the server again");
    drop(s.child.stdin.take());
    assert!(s.child.wait().unwrap().success());
    let gone = || {
        !Path::new(&format!("/proc/{again}")).exists()
            || std::fs::read_to_string(format!("/proc/{again}/stat")).unwrap_or_default().contains(") Z ")
    };
    // The kill is asynchronous: wait (bounded) for the process to be gone.
    for _ in 0..100 {
        if gone() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(gone(), "the server died with jp");
}

#[test]
fn a_streamable_http_server_is_reached_at_its_url_when_its_network_rules_allow_it() {
    // Upstream: jp itself, serving another workspace over Streamable HTTP with a token.
    let upstream = tempfile::tempdir().unwrap();
    std::fs::write(upstream.path().join("up.txt"), "from upstream\n").unwrap();
    let token = "upstream-token-for-the-test";
    let mut server = Command::new(JP)
        .args(["mcp", "--http", "127.0.0.1:0", "--token-env", "UPSTREAM_TOKEN"])
        .current_dir(upstream.path())
        .env("UPSTREAM_TOKEN", token)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(server.stderr.take().unwrap()).lines();
    let url = loop {
        let line = err.next().expect("jp mcp --http printed its address").unwrap();
        if let Some(rest) = line.split(" at ").nth(1) {
            break rest.trim().to_owned();
        }
    };
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    let origin = url.trim_end_matches("/mcp");
    let config = format!(
        "[mcp.servers.up]\nurl = {url:?}\ntoken_env = \"UP_TOKEN\"\ntools = [\"fs_read_file\"]\n[mcp.servers.up.access]\nnetwork = {{ allow = [\"{origin}/\"] }}\n"
    );
    std::fs::write(ws.path().join(".jp/config.toml"), &config).unwrap();
    approve_config(ws.path());
    let out = Command::new(JP)
        .args(["tool", "call", "up.fs_read_file", "path=up.txt"])
        .current_dir(ws.path())
        .env("UP_TOKEN", token)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from upstream\n");
    // Without the token the upstream refuses; without a network rule for it, jp refuses.
    let out = Command::new(JP)
        .args(["tool", "call", "up.fs_read_file", "path=up.txt"])
        .current_dir(ws.path())
        .output()
        .unwrap();
    // The token unset: a configuration error (exit 2) that says what to do.
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("MCP server 'up': token_env UP_TOKEN is not set in the environment; export it"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(
        ws.path().join(".jp/config.toml"),
        config.replace(&format!("\"{origin}/\""), "\"https://example.com/\""),
    )
    .unwrap();
    // jp trust refuses a configuration it cannot use; jp itself then names the error.
    assert!(!try_approve_config(ws.path()));
    let out = Command::new(JP).args(["tool", "list"]).current_dir(ws.path()).env("UP_TOKEN", token).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not allowed by the server's network rules"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = server.kill();
    let _ = server.wait();
}

/// D10: one workspace, one tool on each of the five runtimes, each called through `jp tool call`
/// (`App::call` resolves the runtime and calls `ToolRuntime::execute`): the same file read by a
/// stdio tool, a VFS tool, a wasm component, the builtin tool and an MCP server's tool.
#[test]
fn every_runtime_executes_through_the_trait() {
    let ws = workspace();
    let dir = tempfile::tempdir().unwrap();
    let stdio = dir.path().join("cat_tool.sh");
    std::fs::write(&stdio, "#!/bin/sh\ncat >/dev/null\ncat inside.txt\n").unwrap();
    Command::new("chmod").arg("+x").arg(&stdio).status().unwrap();
    let component = Path::new(jp_native::runtime::wasm::GUESTS_DIR).join("jp_fs_component.wasm");
    let mut config = std::fs::read_to_string(ws.path().join(".jp/config.toml")).unwrap();
    config.push_str(&format!(
        r#"
[conversation.tools.via_stdio]
source = "local"
command = {stdio:?}
parameters.path = {{ type = "string" }}

[conversation.tools.via_vfs]
source = "local"
command = "{jp} __tool"
runtime = "vfs"
tool = "fs_read_file"

[conversation.tools.via_wasm]
source = "local"
wasm = {component:?}
tool = "fs_read_file"
"#,
        stdio = stdio.display().to_string(),
        component = component.display().to_string(),
        jp = JP,
    ));
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    approve_config(ws.path());
    let inside = ws.path().canonicalize().unwrap().join("inside.txt");
    let cases: [(&str, String); 5] = [
        ("via_stdio", "path=inside.txt".into()),
        ("via_vfs", "path=inside.txt".into()),
        ("via_wasm", "path=inside.txt".into()),
        ("fs_read_file", "path=inside.txt".into()),
        ("files.read_text_file", format!("path={}", inside.display())),
    ];
    for (tool, arg) in cases {
        let (code, out, err) = jp(ws.path(), &["tool", "call", tool, &arg]);
        assert_eq!(code, 0, "{tool}: {err}");
        assert_eq!(out.trim_end(), "inside the workspace", "{tool}");
    }
}

/// A workspace whose one MCP server is `tests/mcp_servers/raw_server.py` (no SDK).
fn raw_workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    let config = format!(
        r#"[mcp.servers.raw]
command = "/usr/bin/python3"
args = [{script:?}]
tools = "*"
"#,
        script = repo().join("tests/mcp_servers/raw_server.py"),
    );
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    approve_config(ws.path());
    ws
}

#[test]
fn jp_mcp_relays_calls_of_a_running_server_and_holds_its_answers_to_the_protocol() {
    let ws = raw_workspace();
    let mut s = Session::start(ws.path());
    // The first call starts the server (rmcp's client); the next ones are relayed, their ids
    // are the relay's own, and the server's whole result comes back under the agent's id.
    let first = s.call("raw.echo", json!({"text": "one"}));
    assert_eq!(first["result"]["isError"], false, "{first}");
    let second = s.call("raw.echo", json!({"text": "two"}));
    let text = second["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("two (id \"jp-relay-"), "relayed: {second}");
    assert_eq!(second["result"]["structuredContent"]["echo"], "two", "the result as the server gave it: {second}");
    assert_eq!(second["id"], json!(s.next));

    // A result that is not an object, and a JSON-RPC error: tool errors that say so.
    let bad = s.call("raw.not_an_object", json!({}));
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert!(bad["result"]["content"][0]["text"].as_str().unwrap().contains("no object `result`"), "{bad}");
    let failed = s.call("raw.fail", json!({}));
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    assert!(failed["result"]["content"][0]["text"].as_str().unwrap().contains("failing on purpose"), "{failed}");

    // Arguments that do not fit the schema get the same check as every call (not relayed).
    let wrong = s.call("raw.echo", json!({"text": 5}));
    let said = wrong.to_string();
    assert_eq!(wrong["result"]["isError"], true, "an isError result (SEP-1303), not a JSON-RPC error: {said}");
    assert!(said.contains("argument 'text' must be a string"), "{said}");

    // A retry of a call that asked (MCP 2026-07-28) is jp's to answer, never relayed: this
    // `requestState` resumes nothing, a JSON-RPC -32602 error.
    let answer = json!({"decision": {"action": "accept", "content": {"decision": "allow once"}}});
    let retry = s.request(
        "tools/call",
        json!({"name": "raw.echo", "arguments": {"text": "three"}, "requestState": "made-up", "inputResponses": answer}),
    );
    assert_eq!(retry["error"]["code"], -32602, "{retry}");
    assert!(retry["error"]["message"].as_str().unwrap().contains("call the tool again"), "{retry}");

    // A relayed call the agent cancels is cancelled on the server too, and answered by no one.
    s.next += 1;
    let hanging = s.next;
    s.send(json!({"jsonrpc": "2.0", "id": hanging, "method": "tools/call", "params": {"name": "raw.hang", "arguments": {}}}));
    let seen = |s: &mut Session, key: &str| -> Vec<Value> {
        for _ in 0..100 {
            let r = s.call("raw.cancellations", json!({}));
            assert_ne!(r["id"], json!(hanging), "a cancelled call gets no answer: {r}");
            let v: Value = serde_json::from_str(r["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
            if let Some(ids) = v[key].as_array().filter(|a| !a.is_empty()) {
                return ids.clone();
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Vec::new()
    };
    let relayed = seen(&mut s, "hanging");
    assert!(relayed.iter().all(|id| id.as_str().is_some_and(|i| i.starts_with("jp-relay-"))), "{relayed:?}");
    s.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": hanging}}));
    let told = seen(&mut s, "cancelled");
    assert_eq!(told, relayed, "the server was told of the cancellation");
    drop(s.child.stdin.take());
    assert!(s.child.wait().unwrap().success());
}

#[test]
fn a_server_that_rewrites_the_configuration_gains_nothing_on_the_next_run() {
    let ws = workspace();
    let config = ws.path().canonicalize().unwrap().join(".jp/config.toml");
    let before = std::fs::read_to_string(&config).unwrap();
    // The server's private mount view keeps .jp/ read-only inside its writable workspace (where
    // user namespaces exist; Landlock alone only adds rights, and the write lands)…
    let planted = "\n[conversation.tools.planted]\nsource = \"local\"\ncommand = \"/bin/cat /etc/hostname\"\nread_paths = [\"/etc\"]\n";
    let (code, out, err) = jp(
        ws.path(),
        &["tool", "call", "hostile.write", &format!("path={}", config.display()), &format!("text={planted}")],
    );
    if jp_native::sandbox::user_namespaces().is_ok() {
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("Read-only file system"), "{out}");
        assert_eq!(std::fs::read_to_string(&config).unwrap(), before);
        // Someone else changes it, then.
        std::fs::write(&config, format!("{before}{planted}")).unwrap();
    } else {
        assert_eq!((code, out.trim_end()), (0, "written"), "{err}");
    }
    // …and the next run refuses the changed file instead of running what it plants.
    let (code, out, err) = jp(ws.path(), &["tool", "call", "planted"]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("it changed since you approved it") && err.contains("tool `planted`"), "{err}");
}

#[test]
fn a_prefix_names_a_servers_tools_and_a_clash_is_a_configuration_error() {
    let ws = raw_workspace();
    let write = |tool: &str, rest: &str| {
        let config = format!(
            "[mcp.servers.raw]\ncommand = \"/usr/bin/python3\"\nargs = [{script:?}]\ntools = [\"{tool}\"]\n{rest}",
            script = repo().join("tests/mcp_servers/raw_server.py"),
        );
        std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
        approve_config(ws.path());
    };
    let names = |ws: &Path| {
        let (code, out, err) = jp(ws, &["--json", "tool", "list"]);
        assert_eq!(code, 0, "{err}");
        let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
        rows.iter().map(|r| r["name"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    write("echo", "prefix = \"up.\"\n");
    assert!(names(ws.path()).contains(&"up.echo".to_owned()));
    let (code, out, err) = jp(ws.path(), &["tool", "call", "up.echo", "text=hi"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("hi (id "), "{out}");
    write("echo", "prefix = \"\"\n");
    assert!(names(ws.path()).contains(&"echo".to_owned()));
    // Under its own name, a server's tool that would shadow jp's own, or another tool, is
    // refused, both named.
    write("fs_read_file", "prefix = \"\"\n");
    let (code, _, err) = jp(ws.path(), &["tool", "list"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("[mcp.servers.raw] offers 'fs_read_file', which is already jp's builtin tool 'fs_read_file'")
            && err.contains("prefix"),
        "{err}"
    );
    write("echo", "prefix = \"\"\n[conversation.tools.echo]\nsource = \"local\"\ncommand = \"/bin/echo\"\n");
    let (code, _, err) = jp(ws.path(), &["tool", "list"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("[conversation.tools.echo] has the name of tool 'echo' of MCP server 'raw'"), "{err}");
}

#[test]
fn a_server_whose_program_is_missing_is_a_configuration_error_naming_it() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    std::fs::write(
        ws.path().join(".jp/config.toml"),
        "[mcp.servers.ghost]\ncommand = \"no-such-mcp-server-program\"\ntools = \"*\"\n",
    )
    .unwrap();
    approve_config(ws.path());
    let (code, _, err) = jp(ws.path(), &["tool", "call", "ghost.anything"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("MCP server 'ghost': program \"no-such-mcp-server-program\" was not found on PATH"), "{err}");
}

#[test]
fn a_configured_tool_the_server_does_not_offer_is_named_with_what_it_offers() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    let server = r#"import json, sys
for line in sys.stdin:
    m = json.loads(line)
    rid, method = m.get("id"), m.get("method")
    if rid is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "one", "version": "0"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "real", "inputSchema": {"type": "object"}},
                            {"name": "evil\u001b]0;owned\u0007", "inputSchema": {"type": "object"}}]}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n"); sys.stdout.flush()
"#;
    std::fs::write(ws.path().join("one.py"), server).unwrap();
    std::fs::write(
        ws.path().join(".jp/config.toml"),
        "[mcp.servers.one]\ncommand = \"/usr/bin/python3\"\nargs = [\"one.py\"]\ntools = [\"ghost\"]\n",
    )
    .unwrap();
    approve_config(ws.path());
    let (code, _, err) = jp(ws.path(), &["tool", "call", "one.ghost"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("MCP server 'one' has no tool 'ghost'; it offers: real, evil"), "{err}");
    // The names are the server's text: they reach the terminal escaped.
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
}

#[test]
fn a_servers_error_text_reaches_the_terminal_escaped_when_its_tools_are_not_offered() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    // Its error message and its stderr carry terminal escapes (OSC title, BEL, CSI).
    let server = r#"import json, sys
sys.stderr.write("\u001b]0;owned\u0007\u001b[2J stderr of the server\n"); sys.stderr.flush()
for line in sys.stdin:
    m = json.loads(line)
    rid, method = m.get("id"), m.get("method")
    if rid is None:
        continue
    if method == "initialize":
        reply = {"result": {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "two", "version": "0"}}}
    elif method == "tools/list":
        reply = {"error": {"code": -32603, "message": "no\u001b]0;owned\u0007 tools"}}
    else:
        reply = {"result": {}}
    sys.stdout.write(json.dumps(dict(jsonrpc="2.0", id=rid, **reply)) + "\n"); sys.stdout.flush()
"#;
    std::fs::write(ws.path().join("two.py"), server).unwrap();
    std::fs::write(
        ws.path().join(".jp/config.toml"),
        "[mcp.servers.two]\ncommand = \"/usr/bin/python3\"\nargs = [\"two.py\"]\ntools = \"*\"\n",
    )
    .unwrap();
    approve_config(ws.path());
    let (code, _, err) = jp(ws.path(), &["tool", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("the tools of MCP server 'two' are not offered"), "{err}");
    assert!(err.contains("no\\x1b]0;owned\\x07 tools"), "the server's words, escaped: {err:?}");
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
}

#[test]
fn learning_mode_on_jp_mcp_proposes_what_the_clients_calls_were_refused_when_it_leaves() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    std::fs::write(
        ws.path().join(".jp/config.toml"),
        "[conversation.tools.fs_create_file]\nsource = \"builtin\"\n[conversation.tools.fs_create_file.access]\nfilesystem = [{ path = \".\", allow = [\"read\"] }]\n",
    )
    .unwrap();
    approve_config(ws.path());
    let mut s = Session::start_argv(ws.path(), &["policy", "suggest", "--write", "--", "mcp"]);
    let refused = s.call("fs_create_file", json!({"path": "made.txt", "content": "x"}));
    assert_eq!(refused["result"]["isError"], true, "refused, not asked, in learning mode: {refused}");
    assert!(!ws.path().join("made.txt").exists());
    // The client leaves: jp mcp ends, and the proposal is written.
    drop(s.child.stdin.take());
    assert!(s.child.wait().unwrap().success());
    let written = std::fs::read_to_string(ws.path().join(".jp/config.toml")).unwrap();
    assert!(written.contains(r#"{ path = "made.txt", allow = ["read", "create"] }"#), "{written}");
    // Approved, the same call goes through.
    approve_config(ws.path());
    let mut s = Session::start(ws.path());
    let made = s.call("fs_create_file", json!({"path": "made.txt", "content": "x"}));
    assert_ne!(made["result"]["isError"], true, "{made}");
    assert_eq!(std::fs::read_to_string(ws.path().join("made.txt")).unwrap(), "x");
}
