//! `jp mcp` driven by real MCP clients: the official Python SDK (`mcp`, pinned; the test makes its
//! own venv in the cache) and the npm SDK (`@modelcontextprotocol/sdk`, a pinned devDependency)
//! over stdio and Streamable HTTP, against a workspace with a stateful Python VFS tool, a hanging
//! tool and the first-party `run`. The client scripts are in `tests/mcp/`.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Command;

mod support;
use support::approve_config;

const JP: &str = env!("CARGO_BIN_EXE_jp");
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The pinned Python SDK's interpreter.
fn python() -> PathBuf {
    support::python_sdk_venv().join("bin/python")
}

/// The workspace the client scripts expect.
fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(ws.path().join(".env"), "TOKEN=hunter2\n").unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    let stager = repo().join("tests/mcp/stager.py");
    let command = format!("/usr/bin/python3 {}", stager.display());
    let config = format!(
        r#"[conversation.tools.stager]
source = "local"
runtime = "vfs"
command = {command:?}
stateful = true
[conversation.tools.stager.access]
filesystem = [{{ path = ".", allow = ["read", "write"] }}]

[conversation.tools.hang]
source = "local"
runtime = "vfs"
command = {command:?}
[conversation.tools.hang.access]
filesystem = [{{ path = ".", allow = ["read", "write"] }}]

[conversation.tools.count]
source = "local"
runtime = "vfs"
command = {command:?}
[conversation.tools.count.access]
filesystem = [{{ path = ".", allow = ["read", "write"] }}]

[conversation.tools.run]
source = "builtin"
[conversation.tools.run.access]
filesystem = [{{ path = ".", allow = ["read", "write"] }}]
commands = {{ sh = {{ args = [["**"]], envs = ["JP_TEST_SECRET"] }}, sleep = {{ args = [["**"]] }}, cat = {{ args = [["**"]] }} }}
"#
    );
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    approve_config(ws.path());
    ws
}

fn run_client(mut command: Command, expected_checks: usize) {
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "the client failed:\n{stdout}\n{stderr}");
    let checks = stdout.lines().filter(|l| l.starts_with("ok ")).count();
    assert_eq!(checks, expected_checks, "every check of the client ran:\n{stdout}");
}

#[test]
fn the_python_sdk_drives_jp_mcp_over_stdio() {
    let ws = workspace();
    let mut c = Command::new(python());
    c.arg(repo().join("tests/mcp/python_client.py")).arg(JP).arg(ws.path());
    run_client(c, 17);
    // The last writer of staged.txt is the one-shot run (answers yes, yes, no).
    assert_eq!(std::fs::read_to_string(ws.path().join("staged.txt")).unwrap(), "one\ntwo\n");
}

#[test]
fn the_npm_sdk_drives_jp_mcp_over_stdio_and_streamable_http() {
    let sdk = repo().join("node_modules/@modelcontextprotocol/sdk");
    assert!(sdk.is_dir(), "{} is missing: run `npm install` in the repository (./tests/run does)", sdk.display());
    let ws = workspace();
    let mut c = Command::new("node");
    c.arg(repo().join("tests/mcp/npm_client.mjs")).arg(JP).arg(ws.path());
    run_client(c, 8);
}

#[test]
fn run_allows_no_command_by_default() {
    let ws = tempfile::tempdir().unwrap();
    let out = Command::new(JP)
        .args([
            "tool",
            "call",
            "run",
            "--no-interaction",
            "--args",
            r#"{"action":"spawn","program":"echo","args":["hi"]}"#,
        ])
        .current_dir(ws.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(reply["state"], "stopped");
    assert!(reply["error"]["message"].as_str().unwrap().contains("not allowed"), "{reply}");
}

#[test]
fn http_on_a_non_loopback_address_needs_a_chosen_token() {
    let ws = workspace();
    let out = Command::new(JP).args(["mcp", "--http", "0.0.0.0:0"]).current_dir(ws.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a loopback address") && err.contains("--token-env"), "{err}");
}

#[test]
fn a_stateful_tool_without_action_runs_to_its_end_in_jp_tool_call() {
    let ws = workspace();
    let out = Command::new(JP)
        .args(["tool", "call", "stager", "path=notes.txt", "--answer", "hunk0=true", "--no-interaction"])
        .current_dir(ws.path())
        .output()
        .unwrap();
    // The first question is answered by --answer; nobody answers the second: the call ends with
    // it (and the tool's process is aborted).
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Stage 'two'?") && err.contains("--answer hunk1="), "{err}");
    let all = Command::new(JP)
        .args(["tool", "call", "stager", "path=notes.txt", "--no-interaction"])
        .args(["--answer", "hunk0=true", "--answer", "hunk1=false", "--answer", "hunk2=true"])
        .current_dir(ws.path())
        .output()
        .unwrap();
    assert_eq!(all.status.code(), Some(0), "{}", String::from_utf8_lossy(&all.stderr));
    assert!(String::from_utf8_lossy(&all.stdout).ends_with("Staged 2 of 3 changes.\n"));
    assert_eq!(std::fs::read_to_string(ws.path().join("staged.txt")).unwrap(), "one\nthree\n");
    let schema =
        Command::new(JP).args(["tool", "schema", "stager", "--one-of"]).current_dir(ws.path()).output().unwrap();
    let schema: serde_json::Value = serde_json::from_slice(&schema.stdout).unwrap();
    assert_eq!(schema["parameters"]["oneOf"].as_array().unwrap().len(), 4, "{schema}");
    let flat = Command::new(JP).args(["tool", "schema", "stager"]).current_dir(ws.path()).output().unwrap();
    let flat: serde_json::Value = serde_json::from_slice(&flat.stdout).unwrap();
    assert!(
        flat["parameters"].get("oneOf").is_none() && flat["parameters"]["properties"]["action"].is_object(),
        "{flat}"
    );
}

/// `tools/list` of `jp mcp` (plus `extra` arguments) in `ws`, over a raw JSON-RPC exchange.
fn list_tools(ws: &Path, extra: &[&str]) -> Vec<serde_json::Value> {
    use std::io::{BufRead, BufReader, Write};
    let mut child = Command::new(JP)
        .args(extra)
        .arg("mcp")
        .current_dir(ws)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    writeln!(stdin, "{init}").unwrap();
    lines.next().unwrap().unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list"}}"#).unwrap();
    let reply: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    reply["result"]["tools"].as_array().unwrap().clone()
}

#[test]
fn annotations_follow_the_policy_and_say_more_without_the_os_sandbox() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    let config = r#"[conversation.tools.run]
source = "builtin"
[conversation.tools.run.access]
filesystem = [{ path = ".", allow = ["read"] }]
network = { allow = [] }
commands = { ls = { args = [["**"]] } }
"#;
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    approve_config(ws.path());
    let hints = |tools: &[serde_json::Value], name: &str| {
        tools.iter().find(|t| t["name"] == name).unwrap()["annotations"].clone()
    };
    let pair = |h: &serde_json::Value| (h["readOnlyHint"].as_bool(), h["openWorldHint"].as_bool());
    let tools = list_tools(ws.path(), &[]);
    let run = hints(&tools, "run");
    assert_eq!(pair(&run), (Some(true), Some(false)), "a read-only workspace and no network hold its commands: {run}");
    assert_eq!(hints(&tools, "fs_read_file")["readOnlyHint"], true);
    assert_eq!(hints(&tools, "fs_create_file")["destructiveHint"], true);
    let tools = list_tools(ws.path(), &["--no-os-sandbox"]);
    let run = hints(&tools, "run");
    assert_eq!(pair(&run), (Some(false), Some(true)), "without the OS sandbox a command can do anything: {run}");
    assert_eq!(
        hints(&tools, "fs_read_file")["readOnlyHint"],
        true,
        "in-process tools are held by the dispatcher alone"
    );
}
