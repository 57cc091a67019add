//! MCP 2026-07-28 clients (Claude Code speaks it) are asked too (issue 25): the protocol has no
//! server-to-client requests, so a policy inquiry becomes an `input_required` result (SEP-2322,
//! MRTR) and the client retries the call with its answer. Driven by rmcp's own client over
//! `server/discover`, which fulfils input requests through its `ClientHandler` and retries — as
//! a real client does. The tool keeps running across the round trip (suspended, not restarted).

#![cfg(target_os = "linux")]

mod support;

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ErrorCode, Implementation, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _, RequestContext, RunningService, ServiceError};
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

/// `fs_read_file` of `path`; with `state`, the retry of the call that asked under it, answering
/// "allow once".
fn read(path: &str, state: Option<&str>) -> CallToolRequestParams {
    let mut p = CallToolRequestParams::new("fs_read_file");
    p.arguments = json!({"path": path}).as_object().cloned();
    if let Some(state) = state {
        p.request_state = Some(state.to_owned());
        let answer = json!({"action": "accept", "content": {"decision": "allow once"}});
        p.input_responses = Some([("decision".to_owned(), answer)].into());
    }
    p
}

/// The message of a JSON-RPC -32602 error; anything else fails the test.
fn invalid_params(r: Result<CallToolResponse, ServiceError>) -> String {
    match r {
        Err(ServiceError::McpError(e)) if e.code == ErrorCode::INVALID_PARAMS => e.message.to_string(),
        other => panic!("expected a JSON-RPC -32602 error, got {other:?}"),
    }
}

/// A `fs_read_file` of `.env` asks; retries under a tampered or unknown `requestState`, or with
/// another tool or other arguments than the call that asked, are JSON-RPC -32602 errors that say
/// what to do, and leave that call waiting: its own retry then reads the file.
async fn foreign_retries_are_refused_and_the_call_that_asked_resumes(client: &RunningService<RoleClient, Answers>) {
    let first = client.call_tool_once(read(".env", None)).await.expect("tools/call");
    let CallToolResponse::InputRequired(asked) = first else { panic!("expected input_required, got {first:?}") };
    let state = asked.request_state.expect("a requestState");
    for bad in [format!("{state}-TAMPERED"), "0".repeat(32), String::new()] {
        let e = invalid_params(client.call_tool_once(read(".env", Some(&bad))).await);
        assert!(e.contains("requestState") && e.contains("call the tool again"), "{bad:?}: {e}");
    }
    let e = invalid_params(client.call_tool_once(read("README.md", Some(&state))).await);
    assert!(e.contains("arguments differ from the call that asked"), "{e}");
    let mut other_tool = read(".", Some(&state));
    other_tool.name = "fs_list_files".into();
    let e = invalid_params(client.call_tool_once(other_tool).await);
    assert!(e.contains("'fs_read_file'") && e.contains("'fs_list_files'"), "{e}");
    let done = client.call_tool_once(read(".env", Some(&state))).await.expect("tools/call");
    let CallToolResponse::Complete(result) = done else { panic!("expected the result, got {done:?}") };
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let text: String = result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
    assert_eq!(text, "TOKEN=hunter2\n");
    // Answered: the state is spent.
    let e = invalid_params(client.call_tool_once(read(".env", Some(&state))).await);
    assert!(e.contains("call the tool again"), "{e}");
}

/// A workspace with a sensitive `.env` (reading it asks) and a `README.md`.
fn env_workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join(".env"), "TOKEN=hunter2\n").unwrap();
    std::fs::write(ws.path().join("README.md"), "# readme\n").unwrap();
    ws
}

fn answers() -> Answers {
    Answers { decision: "deny", asked: Arc::default() }
}

fn discover() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] }
}

#[tokio::test(flavor = "multi_thread")]
async fn over_stdio_a_foreign_retry_is_invalid_params_and_the_call_that_asked_resumes() {
    let ws = env_workspace();
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
    let client = answers().serve_with_lifecycle(transport, discover()).await.expect("server/discover");
    foreign_retries_are_refused_and_the_call_that_asked_resumes(&client).await;
    let _ = client.cancel().await;
    let _ = child.kill().await;
}

/// A `jp mcp --http` killed when dropped (a failed assertion must not leave it running).
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn over_http_a_foreign_retry_is_invalid_params_and_the_call_that_asked_resumes() {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use std::io::BufRead;
    let ws = env_workspace();
    let token = "mrtr-test-token";
    let mut server = std::process::Command::new(JP)
        .args(["mcp", "--http", "127.0.0.1:0", "--token-env", "JP_MRTR_TOKEN"])
        .current_dir(ws.path())
        .env("JP_MRTR_TOKEN", token)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(server.stderr.take().unwrap()).lines();
    let _server = Server(server);
    let url = loop {
        let line = err.next().expect("jp mcp --http printed its address").unwrap();
        if let Some(rest) = line.split(" at ").nth(1) {
            break rest.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in err {});
    // reqwest is built without a TLS provider; jp installs *ring* before any client is made.
    jp_native::http::crypto_provider();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    config.auth_header = Some(token.to_owned());
    let transport = StreamableHttpClientTransport::from_config(config);
    // Stateless: every request is one of its own, the retries included.
    let client = answers().serve_with_lifecycle(transport, discover()).await.expect("server/discover over HTTP");
    foreign_retries_are_refused_and_the_call_that_asked_resumes(&client).await;
    let _ = client.cancel().await;
}
