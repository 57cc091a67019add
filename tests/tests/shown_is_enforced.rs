//! What jp shows is what it enforces (issue 23): for every kind of tool — first-party in-process
//! and as a VFS subprocess, a local VFS tool, a local component, a stdio tool — under every
//! configuration shape (no policy table, a read-only table, a read-write table), the policy the
//! listing shows (and from which the MCP annotations and the `jp query` ask gate are derived)
//! says "writes" exactly when the tool, really run, manages to create a file.

#![cfg(all(not(target_arch = "wasm32"), target_os = "linux"))]

use std::path::Path;

use jp_core::runtime::{ExecutionOutcome, ToolCall};
use jp_native::app::{App, AppOptions};
use serde_json::json;

const TEST_TOOLS: &str = env!("CARGO_BIN_EXE_jp-test-tools");

/// `(name, table)` of every tool kind that creates `made-by-<name>.txt` when called with
/// `{"path": …, "content": …}`.
fn kinds() -> Vec<(&'static str, String)> {
    let component = Path::new(jp_native::runtime::wasm::GUESTS_DIR).join("jp_fs_component.wasm");
    vec![
        ("fs_create_file", "source = \"builtin\"\n".into()),
        ("as_vfs", "source = \"builtin\"\nruntime = \"vfs\"\n".into()),
        ("local_vfs", format!("source = \"local\"\nruntime = \"vfs\"\ncommand = {TEST_TOOLS:?}\ntool = \"fs_create_file\"\n")),
        ("component", format!("source = \"local\"\nwasm = {:?}\ntool = \"fs_create_file\"\n", component.display().to_string())),
        (
            "stdio",
            "source = \"local\"\ncommand = \"/bin/sh -c 'echo x > made-by-stdio.txt && echo made'\"\n[conversation.tools.stdio.parameters]\npath = { type = \"string\" }\ncontent = { type = \"string\" }\n".into(),
        ),
    ]
}

const SHAPES: [(&str, &str); 3] = [
    ("no policy table", ""),
    ("read-only", "[conversation.tools.NAME.access]\nfilesystem = [{ path = \".\", allow = [\"read\"] }]\n"),
    (
        "read-write",
        "[conversation.tools.NAME.access]\nfilesystem = [{ path = \".\", allow = [\"read\", \"write\"] }]\n",
    ),
];

#[tokio::test(flavor = "multi_thread")]
async fn the_listed_policy_is_the_enforced_one_for_every_tool_kind_and_configuration_shape() {
    let mut checked = 0;
    for (shape, policy_table) in SHAPES {
        for (name, table) in kinds() {
            let ws = tempfile::tempdir().unwrap();
            let dir = tempfile::tempdir().unwrap();
            // `as_vfs` is a first-party tool's own table: its name must be the tool's.
            let (tool_name, table) = if name == "as_vfs" { ("fs_create_file", table) } else { (name, table) };
            let config =
                format!("[conversation.tools.{tool_name}]\n{table}{}", policy_table.replace("NAME", tool_name));
            let config_file = dir.path().join("config.toml");
            std::fs::write(&config_file, &config).unwrap();
            let mut options = AppOptions::new(ws.path());
            options.config_file = Some(config_file);
            options.self_exe = TEST_TOOLS.into();
            let app = App::load(options).unwrap_or_else(|e| panic!("{name} / {shape}: {e}"));
            let entry = app.tool(tool_name).unwrap();
            let policy = entry.policy();
            let shown_writes = policy.hints().writes;
            assert_eq!(
                shown_writes,
                entry.policy_summary().contains("create"),
                "{name} / {shape}: the summary and the hints disagree: {}",
                entry.policy_summary()
            );

            let file = format!("made-by-{name}.txt");
            let call =
                ToolCall::new(tool_name, "c", json!({"path": file, "content": "x"}).as_object().cloned().unwrap());
            let outcome = app.call(call).await;
            let wrote = ws.path().join(&file).exists();
            assert_eq!(
                wrote,
                shown_writes,
                "{name} / {shape}: listed as {} but the call {} ({outcome:?})",
                entry.policy_summary(),
                if wrote { "wrote" } else { "did not write" }
            );
            if !wrote {
                assert!(
                    !matches!(outcome, Ok(ExecutionOutcome::Completed { result: Ok(_), .. })) || name == "stdio",
                    "{name} / {shape}: a refused write is an error: {outcome:?}"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, SHAPES.len() * kinds().len());
}
