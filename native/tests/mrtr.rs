//! MCP 2026-07-28 clients (Claude Code speaks it) are asked too (issue 25): the protocol has no
//! server-to-client requests, so a policy inquiry becomes an `input_required` result (SEP-2322,
//! MRTR) and the client retries the call with its answer. Driven by rmcp's own client over
//! `server/discover`, which fulfils input requests through its `ClientHandler` and retries — as
//! a real client does. The tool keeps running across the round trip (suspended, not restarted).

#![cfg(target_os = "linux")]

mod support;

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    Implementation, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _, RequestContext};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::json;

const JP: &str = env!("CARGO_BIN_EXE_jp");

/// A client that answers every elicitation with `decision` and records the questions.
#[derive(Clone)]
struct Answers {
    decision: &'static str,
    asked: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Answers {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &request {
            self.asked.lock().unwrap().push(message.clone());
        }
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"decision": self.decision})))
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("mrtr-test", "0.0.0"),
        )
    }
}

/// One `fs_read_file` of `.env` (a sensitive path: the policy asks) by a 2026-07-28 client that
/// answers `decision`; the result's text and whether it is an error, and the questions asked.
async fn read_env(decision: &'static str) -> (String, bool, Vec<String>) {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join(".env"), "TOKEN=hunter2\n").unwrap();
    let mut child = tokio::process::Command::new(JP)
        .arg("mcp")
        .current_dir(ws.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let asked = Arc::new(Mutex::new(Vec::new()));
    let client = Answers { decision, asked: asked.clone() }
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] },
        )
        .await
        .expect("server/discover with jp mcp");
    let mut params = CallToolRequestParams::new("fs_read_file");
    params.arguments = json!({"path": ".env"}).as_object().cloned();
    let result = client.call_tool(params).await.expect("tools/call");
    let text = result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("");
    let is_error = result.is_error == Some(true);
    let _ = client.cancel().await;
    let _ = child.kill().await;
    let asked = asked.lock().unwrap().clone();
    (text, is_error, asked)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_07_28_client_is_asked_through_input_required_and_allow_once_reads_the_file() {
    let (text, is_error, asked) = read_env("allow once").await;
    assert!(!is_error, "{text}");
    assert_eq!(text, "TOKEN=hunter2\n");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("fs.read") && asked[0].contains(".env"), "{asked:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_07_28_client_that_denies_gets_the_denial_as_a_tool_error() {
    let (text, is_error, asked) = read_env("deny").await;
    assert!(is_error, "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    assert_eq!(asked.len(), 1, "{asked:?}");
}

/// The official Python SDK's high-level `Client` on 2026-07-28: its input-required driver
/// answers jp's questions through the elicitation callback (allow once, then deny), and content
/// blocks and argument errors arrive as the spec says (`tests/mcp/python_mrtr.py`).
#[test]
fn the_python_sdk_on_2026_07_28_is_asked_by_result_and_gets_typed_blocks() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join(".env"), "TOKEN=hunter2\n").unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    let picture = r#"{"content": [{"type": "text", "text": "a picture"}, {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="}], "structuredContent": {"width": 1, "height": 1}}"#;
    std::fs::write(ws.path().join("picture.py"), format!("import sys\nsys.stdin.read()\nprint({picture:?})\n"))
        .unwrap();
    std::fs::write(
        ws.path().join(".jp/config.toml"),
        "[conversation.tools.picture]\nsource = \"local\"\ncommand = \"/usr/bin/python3 picture.py\"\nparameters = {}\n",
    )
    .unwrap();
    support::approve_config(ws.path());
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let out = std::process::Command::new(support::python_sdk_venv().join("bin/python"))
        .arg(repo.join("tests/mcp/python_mrtr.py"))
        .args([JP, ws.path().to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    for check in
        ["speaks 2026-07-28", "asked once through input_required", "deny keeps", "an image block", "a wrong argument"]
    {
        assert!(stdout.contains(&format!("ok {check}")), "{check:?} missing:\n{stdout}");
    }
}
