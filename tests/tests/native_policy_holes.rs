//! The policy holes of issue 10 reproduced end to end as a user found them: a real VFS tool
//! subprocess under the OS sandbox, real files in a temporary directory.

#![cfg(all(not(target_arch = "wasm32"), target_os = "linux"))]

use std::sync::Arc;

use jp_core::cancel::CancellationToken;
use jp_core::runtime::{Config, ExecutionOutcome, ToolCall};
use jp_native::files::FsProjectFiles;
use jp_native::runtime::vfs::VfsRuntime;
use serde_json::{Map, Value, json};

const TOOL: &str = env!("CARGO_BIN_EXE_jp-test-tools");

#[tokio::test(flavor = "multi_thread")]
async fn renaming_an_ancestor_does_not_move_a_denied_subtree_out_from_under_its_rule() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("a/secrets")).unwrap();
    std::fs::write(ws.path().join("a/secrets/key.txt"), "TOP SECRET").unwrap();
    std::fs::write(ws.path().join("a/readme.txt"), "hello").unwrap();
    let text = format!(
        "[conversation.tools.t]\nsource = \"local\"\nruntime = \"vfs\"\ncommand = {TOOL:?}\n\
         [conversation.tools.t.access]\n\
         filesystem = [{{ path = \".\", allow = [\"read\", \"write\"] }}, {{ path = \"a/secrets\", allow = [] }}]\n"
    );
    let config = Config::from_toml(&text, "test.toml").unwrap().conversation.tools.remove("t").unwrap();
    let requests = json!([
        { "method": "fs.read", "params": { "path": "a/secrets/key.txt" } },
        { "method": "fs.rename", "params": { "from": "a", "to": "b" } },
        { "method": "fs.read", "params": { "path": "b/secrets/key.txt" } },
    ]);
    let call = ToolCall {
        name: "script".into(),
        id: "call-1".into(),
        arguments: json!({ "requests": requests }).as_object().cloned().unwrap(),
        answers: Map::new(),
        cancel: CancellationToken::new(),
        inquirer: None,
        policy: None,
    };
    let rt = VfsRuntime::new(Arc::new(FsProjectFiles::open(ws.path()).unwrap()), ws.path());
    let out = rt.run(call, &config, None).await.unwrap();
    let ExecutionOutcome::Completed { result: Ok(result), .. } = out else { panic!("{out:?}") };
    let answers: Vec<Value> = serde_json::from_str(&result.to_text()).unwrap();
    assert_eq!(answers[0]["error"]["code"], json!(-32001), "the secret is denied: {}", answers[0]);
    assert_eq!(answers[1]["error"]["code"], json!(-32001), "the rename is refused: {}", answers[1]);
    let why = answers[1]["error"]["message"].as_str().unwrap();
    assert!(why.contains("a/secrets") && why.contains("b/secrets"), "{why}");
    assert!(!answers[2].to_string().contains("TOP SECRET"), "{}", answers[2]);
    // Nothing moved.
    assert_eq!(std::fs::read_to_string(ws.path().join("a/secrets/key.txt")).unwrap(), "TOP SECRET");
    assert_eq!(std::fs::read_to_string(ws.path().join("a/readme.txt")).unwrap(), "hello");
    assert!(!ws.path().join("b").exists());
}
