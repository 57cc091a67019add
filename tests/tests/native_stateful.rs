//! Stateful VFS tools (D11 "Integration with the stateful tool protocol", RFD 009): the process
//! stays alive across `apply` cycles under the sandbox, its states reach the handle registry,
//! and `abort` ends it with no process left behind.

#![cfg(target_os = "linux")]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use jp_core::cancel::CancellationToken;
use jp_core::handles::HandleRegistry;
use jp_core::policy::AccessPolicy;
use jp_core::runtime::{Config, ToolCall, ToolConfig};
use jp_core::state::{ToolCommand, ToolState};
use jp_native::files::FsProjectFiles;
use jp_native::runtime::vfs::VfsRuntime;
use serde_json::{Map, Value, json};

/// A hunk stager speaking NDJSON by hand (`tests/mcp/stager.py`, shared with the MCP tests):
/// asks about each line of `path`, then writes the accepted ones to `staged.txt` and stops.
fn stager() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/stager.py")
}

/// How long fetch and apply wait for the tool's next state (generous: a slow machine must not turn
/// "not yet" into a different answer).
const WAIT: std::time::Duration = std::time::Duration::from_secs(2);

fn setup() -> (tempfile::TempDir, tempfile::TempDir, ToolConfig) {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("changes.txt"), "add a\nremove b\nrename c\n").unwrap();
    let tools = tempfile::tempdir().unwrap();
    let text = format!(
        "[conversation.tools.stager]\nsource = \"local\"\nruntime = \"vfs\"\ncommand = \"/usr/bin/python3 {}\"\n",
        stager().display()
    );
    let cfg = Config::from_toml(&text, "test.toml").unwrap().conversation.tools.remove("stager").unwrap();
    (ws, tools, cfg)
}

fn runtime(ws: &Path) -> VfsRuntime {
    VfsRuntime::new(Arc::new(FsProjectFiles::open(ws).unwrap()), ws)
}

fn call(args: Value) -> ToolCall {
    ToolCall {
        name: "stager".into(),
        id: "c1".into(),
        arguments: args.as_object().cloned().unwrap(),
        answers: Map::new(),
        cancel: CancellationToken::new(),
        inquirer: None,
        policy: None,
    }
}

fn pid_of(state: &ToolState) -> u32 {
    match state {
        ToolState::Waiting { content: Some(c), .. } => c.trim().trim_start_matches("pid ").parse().unwrap(),
        other => panic!("expected a waiting state with the pid, got {other:?}"),
    }
}

fn alive(pid: u32) -> bool {
    // A zombie (not reaped by PID 1 here) counts as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stateful_tool_lives_across_apply_cycles_in_the_registry() {
    let (ws, _tools, cfg) = setup();
    let rt = runtime(ws.path());
    let policy = AccessPolicy::stdio_default();
    let (state, handle) = rt.spawn_stateful(call(json!({"path": "changes.txt"})), &cfg, policy, WAIT).await.unwrap();
    let pid = pid_of(&state);
    assert!(matches!(&state, ToolState::Waiting { question, .. } if question.text == "Stage 'add a'?"), "{state:?}");
    let mut registry = HandleRegistry::new();
    let id = registry
        .register("stager", state, Box::new(handle.expect("a live handle")), Duration::ZERO)
        .ok()
        .expect("room");

    // fetch shows the same question (its content went back with spawn); the same process
    // answers every apply.
    let fetched = registry.dispatch("stager", ToolCommand::Fetch { id: id.clone() }, Duration::ZERO).await.unwrap();
    assert!(
        matches!(&fetched, ToolState::Waiting { question, content: None } if question.text == "Stage 'add a'?"),
        "{fetched:?}"
    );
    let next = registry
        .dispatch("stager", ToolCommand::Apply { id: id.clone(), input: json!("y") }, Duration::ZERO)
        .await
        .unwrap();
    assert!(matches!(&next, ToolState::Waiting { question, .. } if question.text == "Stage 'remove b'?"), "{next:?}");
    assert_eq!(pid_of(&next), pid, "the process stays alive between applies");
    registry
        .dispatch("stager", ToolCommand::Apply { id: id.clone(), input: json!("n") }, Duration::ZERO)
        .await
        .unwrap();
    let last = registry
        .dispatch("stager", ToolCommand::Apply { id: id.clone(), input: json!(true) }, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(last, ToolState::Stopped { result: Ok("Staged 2 of 3 changes.".into()) });

    // Its writes went through the dispatcher; the handle is gone and so is the process.
    assert_eq!(std::fs::read_to_string(ws.path().join("staged.txt")).unwrap(), "add a\nrename c\n");
    assert!(registry.is_empty());
    assert!(registry.dispatch("stager", ToolCommand::Fetch { id }, Duration::ZERO).await.is_err());
    assert!(!alive(pid), "the tool exited");
}

#[tokio::test(flavor = "multi_thread")]
async fn aborting_a_stateful_tool_ends_its_process() {
    let (ws, _tools, cfg) = setup();
    let rt = runtime(ws.path());
    let (state, handle) = rt
        .spawn_stateful(call(json!({"path": "changes.txt"})), &cfg, AccessPolicy::stdio_default(), WAIT)
        .await
        .unwrap();
    let pid = pid_of(&state);
    assert!(alive(pid));
    let mut registry = HandleRegistry::new();
    let id = registry.register("stager", state, Box::new(handle.unwrap()), Duration::ZERO).ok().expect("room");
    let other =
        registry.dispatch("other_tool", ToolCommand::Fetch { id: id.clone() }, Duration::ZERO).await.unwrap_err();
    assert!(other.to_string().contains("belongs to tool 'stager'"), "{other}");
    let end = registry.dispatch("stager", ToolCommand::Abort { id }, Duration::ZERO).await.unwrap();
    assert!(end.is_stopped());
    assert!(!alive(pid), "abort ended the process");
    assert!(!ws.path().join("staged.txt").exists(), "nothing was written");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stateful_call_that_ends_at_once_has_no_handle() {
    let (ws, _tools, cfg) = setup();
    std::fs::write(ws.path().join("empty.txt"), "").unwrap();
    let (state, handle) = runtime(ws.path())
        .spawn_stateful(call(json!({"path": "empty.txt"})), &cfg, AccessPolicy::stdio_default(), WAIT)
        .await
        .unwrap();
    assert_eq!(state, ToolState::Stopped { result: Ok("Staged 0 of 0 changes.".into()) });
    assert!(handle.is_none());
}
