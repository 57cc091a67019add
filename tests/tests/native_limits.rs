//! Memory a tool can make the host hold: a VFS tool that pipelines large requests without
//! reading the answers is held back by its own pipe, not buffered by the host.

#![cfg(all(not(target_arch = "wasm32"), target_os = "linux"))]

use std::sync::Arc;
use std::time::Duration;

use jp_core::cancel::CancellationToken;
use jp_core::runtime::{Config, ExecutionOutcome, ToolCall};
use jp_native::files::FsProjectFiles;
use jp_native::runtime::vfs::VfsRuntime;
use serde_json::Map;

const TOOL: &str = env!("CARGO_BIN_EXE_jp-test-tools");

/// An inquirer that never answers: the request stays pending for the whole call.
struct NeverAnswers;

impl jp_core::host::Inquirer for NeverAnswers {
    fn ask<'a>(&'a self, _: &'a jp_core::host::Inquiry) -> jp_core::BoxFuture<'a, jp_core::host::InquiryAnswer> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_pipelining_large_writes_behind_a_held_request_is_held_back() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join(".env"), "TOKEN=1").unwrap();
    let text = format!(
        "[conversation.tools.t]\nsource = \"local\"\nruntime = \"vfs\"\ncommand = {:?}\n\
         [conversation.tools.t.sandbox]\nfilesystem = {{ allow = [\".\"], writable = true }}\n",
        format!("{TOOL} raw pipeline-writes")
    );
    let config = Config::from_toml(&text, "test.toml").unwrap().conversation.tools.remove("t").unwrap();
    let call = ToolCall {
        name: "t".into(),
        id: "call-1".into(),
        arguments: Map::new(),
        answers: Map::new(),
        cancel: CancellationToken::new(),
        inquirer: None,
        policy: None,
    };
    let rt =
        VfsRuntime::new(Arc::new(FsProjectFiles::open(ws.path()).unwrap()), ws.path()).inquirer(Arc::new(NeverAnswers));
    let out = tokio::time::timeout(Duration::from_secs(120), rt.run(call, &config, None))
        .await
        .expect("the host hung")
        .unwrap();
    // The tool gives up (exits) once its writer thread has been stuck for 2 s, and says how far
    // it got on stderr.
    let ExecutionOutcome::Completed { result: Err(e), .. } = out else { panic!("{out:?}") };
    let n: usize = e
        .message
        .split("wrote ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", e.message));
    // While `.env` waits for the user, the host takes a few requests into its queue and then
    // stops reading: the tool's pipe fills and its writes block. Without that bound the host
    // read and kept all 200 (1.6 GiB).
    assert!(n <= 10, "{n} of 200 8-MiB requests were taken while the first one was held");
}
