//! Components under the real wasmtime runtime: the seed's test tool, the builtin `learn`, the
//! first-party tools as a component (and their parity with the VFS binary), policy holding for
//! plain `std::fs`, and the per-call limits.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jp_core::cancel::CancellationToken;
use jp_core::runtime::{Config, ExecutionOutcome, RuntimeError, ToolCall, ToolConfig};
use jp_native::files::FsProjectFiles;
use jp_native::wasm::{ComponentSource, GUESTS_DIR, LEARN_WASM, WasmEngine, WasmLimits, WasmRuntime};
use serde_json::{Value, json};

fn guest(name: &str) -> PathBuf {
    Path::new(GUESTS_DIR).join(format!("{name}.wasm"))
}

fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let w = ws.path();
    std::fs::create_dir_all(w.join("src")).unwrap();
    std::fs::create_dir_all(w.join(".jp/tools")).unwrap();
    std::fs::write(w.join("src/main.rs"), "fn main() {\n    println!(\"hi\");\n}\n").unwrap();
    std::fs::write(w.join("README.md"), "# demo\n").unwrap();
    std::fs::write(w.join(".env"), "TOKEN=hunter2\n").unwrap();
    for g in ["jp_tool_test", "jp_tool_faults", "jp_fs_component"] {
        std::fs::copy(guest(g), w.join(format!(".jp/tools/{g}.wasm"))).unwrap();
    }
    ws
}

fn config(toml_body: &str) -> ToolConfig {
    let text = format!("[conversation.tools.t]\nsource = \"local\"\n{toml_body}");
    Config::from_toml(&text, "test.toml").unwrap().conversation.tools.remove("t").unwrap()
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall {
        name: name.into(),
        id: "c".into(),
        arguments: args.as_object().cloned().unwrap_or_default(),
        answers: Default::default(),
        cancel: CancellationToken::new(),
    }
}

fn runtime(ws: &Path) -> WasmRuntime {
    let files = Arc::new(FsProjectFiles::open(ws).unwrap());
    WasmRuntime::new(WasmEngine::shared().unwrap(), files, ws)
}

fn ok(out: &ExecutionOutcome) -> String {
    match out {
        ExecutionOutcome::Completed { result: Ok(r), .. } => r.to_text(),
        other => panic!("expected success, got {other:?}"),
    }
}

fn tool_err(out: &ExecutionOutcome) -> String {
    match out {
        ExecutionOutcome::Completed { result: Err(e), .. } => e.message.clone(),
        other => panic!("expected a tool error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_seed_test_tool_reads_a_workspace_file() {
    let ws = workspace();
    let rt = runtime(ws.path());
    for cfg in [
        config("wasm = \".jp/tools/jp_tool_test.wasm\""),
        config("command = \".jp/tools/jp_tool_test.wasm\""),
        config("command = \".jp/tools/jp_tool_test.wasm\"\nruntime = \"wasm\""),
    ] {
        let out = rt.run(call("wasm_test", json!({"path": "src/main.rs"})), &cfg, None).await.unwrap();
        assert_eq!(ok(&out), "fn main() {\n    println!(\"hi\");\n}\n");
    }
}
