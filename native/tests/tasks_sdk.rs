//! MCP tasks in `jp mcp` driven by the official Tasks client: `@modelcontextprotocol/ext-tasks`
//! (`createTaskSessionFromClient`, with the raw request path a 2026-07-28 server needs) on the
//! official TypeScript SDK v2 client `@modelcontextprotocol/client`, both pinned in package.json,
//! run by the pinned Node (`tests/mcp/tasks_ext.mjs`). Over stdio on protocol 2026-07-28: a quick
//! call answers inline; a slow `run` becomes a task and settles with its output; cancelling a
//! running task stops its process and says cancelled; a `.env` read (the policy asks) is a task
//! input request answered through ext-tasks' input routing — allow once reads, deny is a tool
//! error. `tests/tasks.rs` covers the same extension with rmcp's client, and its abuse cases.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Command;

mod support;
use support::approve_config;

const JP: &str = env!("CARGO_BIN_EXE_jp");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The pinned Node, with the pinned SDK v2 client and ext-tasks next to it.
fn node() -> PathBuf {
    let repo = repo();
    let node = repo.join("node_modules/node/bin/node");
    assert!(node.is_file(), "{} is missing: run `npm install` (./tests/run does)", node.display());
    for package in ["@modelcontextprotocol/client", "@modelcontextprotocol/ext-tasks"] {
        let dir = repo.join("node_modules").join(package);
        assert!(dir.is_dir(), "{} is missing: run `npm install` (./tests/run does)", dir.display());
    }
    node
}

/// A workspace whose `run` may start `sh` and `sleep`, with a plain file and a sensitive `.env`.
fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.txt"), "hello\n").unwrap();
    std::fs::write(ws.path().join(".env"), "TOKEN=hunter2\n").unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    let config = r#"[conversation.tools.run]
source = "builtin"
[conversation.tools.run.access]
filesystem = [{ path = ".", allow = ["read", "write"] }]
commands = { sh = { args = [["**"]] }, sleep = { args = [["**"]] } }
"#;
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    approve_config(ws.path());
    ws
}

#[test]
fn the_official_ext_tasks_client_drives_jp_tasks() {
    let ws = workspace();
    let out = Command::new(node())
        .arg(repo().join("tests/mcp/tasks_ext.mjs"))
        .arg(JP)
        .arg(ws.path())
        .current_dir(repo())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "tasks_ext.mjs failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    for check in [
        "ok speaks 2026-07-28 and declares io.modelcontextprotocol/tasks",
        "ok a quick call answers inline",
        "ok a slow run becomes a task and settles with its output",
        "ok cancelling a running task stops its process",
        "allow once gives a read",
        "deny gives a tool error",
    ] {
        assert!(stdout.contains(check), "{check:?} missing:\n{stdout}\nstderr:\n{stderr}");
    }
    let summary: serde_json::Value = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON summary:\n{stdout}"));
    assert_eq!(summary["ok"], true, "{summary}");
    assert_eq!(summary["tasks"]["cancelled"]["server"], "cancelled", "{summary}");
}
