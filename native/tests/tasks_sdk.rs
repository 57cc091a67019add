//! MCP tasks in `jp mcp` driven by the official Tasks client: `@modelcontextprotocol/ext-tasks`
//! (`createTaskSessionFromClient`, with the raw request path a 2026-07-28 server needs) on the
//! official TypeScript SDK v2 client `@modelcontextprotocol/client`, both pinned in package.json,
//! run by the pinned Node (`tests/mcp/tasks_ext.mjs`). Over stdio on protocol 2026-07-28: a quick
//! call answers inline; a slow `run` becomes a task and settles with its output; cancelling a
//! running task stops its process and says cancelled; a `.env` read (the policy asks) is a task
//! input request answered through ext-tasks' input routing — allow once reads, deny is a tool
//! error. `tests/tasks.rs` covers the same extension with rmcp's client, and its abuse cases.
//! The same SDK v2 client without ext-tasks (`tests/mcp/npm_mrtr.mjs`) covers what `tests/mrtr.rs`
//! covers with the Python SDK: `input_required` answered by the SDK's own driver, typed blocks,
//! argument errors as tool results.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Command;

mod support;
use support::{approve_config, run_workspace};

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

/// Run `tests/mcp/<script>` with the pinned Node against `jp` in `ws`; it must succeed and print
/// a line containing each of `checks`. Returns its stdout.
fn run_script(script: &str, ws: &Path, checks: &[&str]) -> String {
    let out = Command::new(node())
        .arg(repo().join("tests/mcp").join(script))
        .arg(JP)
        .arg(ws)
        .current_dir(repo())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "{script} failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    for check in checks {
        assert!(stdout.lines().any(|l| l.contains(check)), "{check:?} missing:\nstdout:\n{stdout}\nstderr:\n{stderr}");
    }
    assert!(!stdout.contains("FAILED"), "{stdout}");
    stdout
}

/// [`run_workspace`] with a plain file.
fn workspace() -> tempfile::TempDir {
    let ws = run_workspace();
    std::fs::write(ws.path().join("notes.txt"), "hello\n").unwrap();
    ws
}

#[test]
fn the_official_ext_tasks_client_drives_jp_tasks() {
    let ws = workspace();
    let stdout = run_script(
        "tasks_ext.mjs",
        ws.path(),
        &[
            "ok speaks 2026-07-28 and declares io.modelcontextprotocol/tasks",
            "ok a quick call answers inline",
            "ok a slow run becomes a task and settles with its output",
            "ok cancelling a running task stops its process",
            "allow once gives a read",
            "deny gives a tool error",
        ],
    );
    let summary: serde_json::Value = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON summary:\n{stdout}"));
    assert_eq!(summary["ok"], true, "{summary}");
    assert_eq!(summary["tasks"]["cancelled"]["server"], "cancelled", "{summary}");
}

/// The official TypeScript SDK v2 client on 2026-07-28 without ext-tasks (`tests/mcp/npm_mrtr.mjs`),
/// the coverage `tests/mrtr.rs` has with the Python SDK: its built-in input-required driver answers
/// jp's `.env` question (an `input_required` result, SEP-2322) through the `elicitation/create`
/// handler, asked once — allow once reads, deny is a tool error without the secret; a stdio tool's
/// image block and `structuredContent` arrive typed; a wrong argument type is a tool error naming
/// the argument (SEP-1303), not a JSON-RPC error.
#[test]
fn the_official_sdk_v2_client_is_asked_by_result_and_gets_typed_blocks() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join(".env"), "TOKEN=hunter2\n").unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    std::fs::create_dir_all(ws.path().join("tools")).unwrap();
    let picture = r#"{"content": [{"type": "text", "text": "a picture"}, {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="}], "structuredContent": {"width": 1, "height": 1}}"#;
    std::fs::write(ws.path().join("tools/picture.py"), format!("import sys\nsys.stdin.read()\nprint({picture:?})\n"))
        .unwrap();
    std::fs::write(
        ws.path().join(".jp/config.toml"),
        "[conversation.tools.picture]\nsource = \"local\"\ncommand = \"/usr/bin/python3 tools/picture.py\"\nparameters = {}\n",
    )
    .unwrap();
    approve_config(ws.path());
    run_script(
        "npm_mrtr.mjs",
        ws.path(),
        &[
            "ok speaks 2026-07-28",
            "ok lists tools",
            "ok asked once through input_required; allow once reads .env",
            "ok deny is a tool error and keeps .env from the model",
            "ok an image block and structuredContent arrive typed",
            "ok a wrong argument type is a tool error that names the argument",
        ],
    );
}
