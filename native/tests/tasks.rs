//! MCP tasks in `jp mcp` (the `io.modelcontextprotocol/tasks` extension, SEP-2663, as MCP
//! 2026-07-28 and rmcp define it: `tasks/get`, `tasks/update`, `tasks/cancel`), driven by rmcp's
//! own client — the installed Python (`mcp` 2.3.0) and npm (1.32.2) SDKs have no client for
//! this form. A call that runs long or asks becomes a task; a client that did not declare
//! the extension gets results as always. Abuse: another session's or a forged task id, answers
//! to questions never asked, malformed answers, floods of tasks.

#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ErrorCode, GetTaskParams, GetTaskResult,
    Implementation, ProtocolVersion, TaskPayload, TaskStatus,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _, RunningService, ServiceError};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};

mod support;
use support::run_workspace;

const JP: &str = env!("CARGO_BIN_EXE_jp");

/// A client that declares the tasks extension and form elicitation, or not.
#[derive(Clone)]
struct Client {
    tasks: bool,
    elicitation: bool,
}

const TASKS: Client = Client { tasks: true, elicitation: true };

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::builder().enable_elicitation().build();
        if !self.elicitation {
            caps.elicitation = None;
        }
        if self.tasks {
            caps.extensions = ClientCapabilities::builder().enable_tasks().build().extensions;
        }
        ClientConfig::new(caps, Implementation::new("tasks-test", "0.0.0"))
    }
}

type Session = RunningService<RoleClient, Client>;

/// `jp mcp` over stdio, on protocol 2026-07-28.
async fn stdio(ws: &Path, client: Client) -> (Session, tokio::process::Child) {
    let mut child = tokio::process::Command::new(JP)
        .arg("mcp")
        .current_dir(ws)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let session = client.serve_with_lifecycle(transport, lifecycle).await.expect("server/discover");
    (session, child)
}

fn params(name: &'static str, args: Value) -> CallToolRequestParams {
    let mut p = CallToolRequestParams::new(name);
    p.arguments = args.as_object().cloned();
    p
}

/// A `run` of `sh -c script`, one-shot (no `action`).
fn sh(script: &str) -> CallToolRequestParams {
    params("run", json!({"program": "sh", "args": ["-c", script]}))
}

/// Call, expecting a task; its id.
async fn task_of(client: &Session, p: CallToolRequestParams) -> String {
    match client.call_tool_once(p).await.expect("tools/call") {
        CallToolResponse::Task(t) => t.task.task_id,
        other => panic!("expected a task, got {other:?}"),
    }
}

async fn get(client: &Session, id: &str) -> GetTaskResult {
    client.get_task(GetTaskParams::new(id)).await.expect("tasks/get")
}

/// Poll until the task's status is `want` or it ended (at most 30 s).
async fn until(client: &Session, id: &str, want: TaskStatus) -> GetTaskResult {
    for _ in 0..600 {
        let t = get(client, id).await;
        if t.task.status() == want || t.task.status().is_terminal() {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} never reached {want:?}");
}

async fn settle(client: &Session, id: &str) -> GetTaskResult {
    until(client, id, TaskStatus::Completed).await
}

/// The text blocks of a completed task's result, and its `isError`.
fn result_text(t: &GetTaskResult) -> (String, bool) {
    let TaskPayload::Completed { result } = &t.task.payload else { panic!("not completed: {t:?}") };
    let text =
        result["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect::<Vec<_>>().join("");
    (text, result.get("isError") == Some(&Value::Bool(true)))
}

/// The JSON-RPC error code of a failed request.
fn code<T: std::fmt::Debug>(r: Result<T, ServiceError>) -> ErrorCode {
    match r {
        Err(ServiceError::McpError(e)) => e.code,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

fn gone(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.is_empty() || stat.contains(") Z ")
}

async fn pid_in(ws: &Path, file: &str) -> u32 {
    for _ in 0..200 {
        if let Ok(t) = std::fs::read_to_string(ws.join(file))
            && let Ok(pid) = t.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no pid in {file}");
}

async fn wait_gone(pid: u32) -> bool {
    for _ in 0..200 {
        if gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// A program that runs until the test creates `file` in the workspace.
fn waits_for(file: &str) -> CallToolRequestParams {
    sh(&format!("while [ ! -e {file} ]; do sleep 0.05; done; echo finished"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_that_runs_long_becomes_a_task_that_completes_with_its_result() {
    let ws = run_workspace();
    let (client, _child) = stdio(ws.path(), TASKS).await;
    let id = task_of(&client, waits_for("go")).await;
    assert_eq!(id.len(), 32, "128 random bits, hex: {id}");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    // It cannot end before `go` exists.
    let t = get(&client, &id).await;
    assert_eq!(t.task.status(), TaskStatus::Working, "{t:?}");
    assert!(t.task.task.ttl_ms.is_some() && t.task.task.poll_interval_ms.is_some(), "{t:?}");
    std::fs::write(ws.path().join("go"), "").unwrap();
    let t = settle(&client, &id).await;
    assert_eq!(t.task.status(), TaskStatus::Completed, "{t:?}");
    let (text, is_error) = result_text(&t);
    assert!(!is_error && text.contains("finished"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn tasks_cancel_stops_the_tool_and_leaves_no_process() {
    let ws = run_workspace();
    let (client, _child) = stdio(ws.path(), TASKS).await;
    let id = task_of(&client, sh("echo $$ > sleeper.pid; exec sleep 300")).await;
    let pid = pid_in(ws.path(), "sleeper.pid").await;
    assert!(!gone(pid));
    client.cancel_task(rmcp::model::CancelTaskParams::new(id.as_str())).await.expect("tasks/cancel");
    let t = until(&client, &id, TaskStatus::Cancelled).await;
    assert_eq!(t.task.status(), TaskStatus::Cancelled, "{t:?}");
    // The task settles only once the call has ended: the process is gone already.
    assert!(gone(pid), "sleep {pid} outlived its cancelled task");
}

/// A `fs_read_file` of `.env` (sensitive: the policy asks) as a task, answered with `answer`
/// through `tasks/update`; the ended task and the question's text.
async fn read_env_answering(answer: Value) -> (GetTaskResult, String) {
    let ws = run_workspace();
    let (client, _child) = stdio(ws.path(), TASKS).await;
    let id = task_of(&client, params("fs_read_file", json!({"path": ".env"}))).await;
    let t = until(&client, &id, TaskStatus::InputRequired).await;
    let TaskPayload::InputRequired { input_requests } = &t.task.payload else { panic!("{t:?}") };
    assert_eq!(input_requests.len(), 1, "{input_requests:?}");
    let (key, request) = input_requests.iter().next().unwrap();
    let question = serde_json::to_value(request).unwrap()["params"]["message"].as_str().unwrap().to_owned();
    // An answer to a question never asked is ignored; the one asked still waits.
    let mut stray = rmcp::model::InputResponses::new();
    stray.insert("q999".into(), json!({"action": "accept", "content": {"decision": "allow once"}}));
    client.update_task(rmcp::model::UpdateTaskParams::new(id.as_str(), stray)).await.expect("tasks/update");
    assert_eq!(get(&client, &id).await.task.status(), TaskStatus::InputRequired);
    let mut responses = rmcp::model::InputResponses::new();
    responses.insert(key.clone(), answer);
    client.update_task(rmcp::model::UpdateTaskParams::new(id.as_str(), responses)).await.expect("tasks/update");
    (settle(&client, &id).await, question)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_inquiry_in_a_task_is_an_input_request_and_allow_once_completes_it() {
    let (t, question) = read_env_answering(json!({"action": "accept", "content": {"decision": "allow once"}})).await;
    assert!(question.contains("fs.read") && question.contains(".env"), "{question}");
    let (text, is_error) = result_text(&t);
    assert!(!is_error, "{text}");
    assert_eq!(text, "TOKEN=hunter2\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_answer_to_an_input_request_denies() {
    let (t, _) = read_env_answering(json!("allow once, please")).await;
    let (text, is_error) = result_text(&t);
    assert!(is_error, "{text}");
    assert!(!text.contains("hunter2"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_did_not_declare_tasks_gets_its_result_and_no_task_methods() {
    let ws = run_workspace();
    let (client, _child) = stdio(ws.path(), Client { tasks: false, elicitation: true }).await;
    // Longer than jp waits before it makes a task for a client that declared them.
    let r = client.call_tool_once(sh("sleep 2; echo done")).await.expect("tools/call");
    let CallToolResponse::Complete(r) = r else { panic!("expected a result, got {r:?}") };
    let text: String = r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
    assert!(text.contains("done") && r.is_error != Some(true), "{text}");
    // The extension's methods need the capability: -32021.
    let forged = "0".repeat(32);
    assert_eq!(code(client.get_task(GetTaskParams::new(forged.as_str())).await), ErrorCode(-32021));
    assert_eq!(code(client.cancel_task(rmcp::model::CancelTaskParams::new(forged.as_str())).await), ErrorCode(-32021));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_without_elicitation_is_not_sent_input_requests_the_inquiry_is_denied() {
    let ws = run_workspace();
    let (client, _child) = stdio(ws.path(), Client { tasks: true, elicitation: false }).await;
    // Nobody can be asked: denied at once, so the call ends at once, with its own result.
    let r = client.call_tool_once(params("fs_read_file", json!({"path": ".env"}))).await.expect("tools/call");
    let CallToolResponse::Complete(r) = r else { panic!("expected a result, got {r:?}") };
    let text: String = r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
    assert!(r.is_error == Some(true) && text.contains("elicitation") && !text.contains("hunter2"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn ending_the_session_stops_its_tasks() {
    let ws = run_workspace();
    let (client, mut child) = stdio(ws.path(), TASKS).await;
    let _id = task_of(&client, sh("echo $$ > sleeper.pid; exec sleep 300")).await;
    let pid = pid_in(ws.path(), "sleeper.pid").await;
    let _ = client.cancel().await;
    let ended = tokio::time::timeout(Duration::from_secs(30), child.wait()).await;
    assert!(ended.is_ok(), "jp mcp did not end with its client");
    assert!(wait_gone(pid).await, "sleep {pid} outlived its session");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_tasks_keeps_only_the_newest() {
    // Each task asks at once (so it is a task), is cancelled and ends; past the bound the
    // oldest ended ones are dropped.
    const MAX_TASKS: usize = 64;
    let ws = run_workspace();
    let (client, _child) = stdio(ws.path(), TASKS).await;
    let mut ids = Vec::new();
    for _ in 0..MAX_TASKS + 3 {
        let id = task_of(&client, params("fs_read_file", json!({"path": ".env"}))).await;
        client.cancel_task(rmcp::model::CancelTaskParams::new(id.as_str())).await.expect("tasks/cancel");
        assert!(until(&client, &id, TaskStatus::Cancelled).await.task.status().is_terminal());
        ids.push(id);
    }
    for old in &ids[..3] {
        assert_eq!(code(client.get_task(GetTaskParams::new(old.as_str())).await), ErrorCode::INVALID_PARAMS);
    }
    for kept in &ids[3..] {
        assert_eq!(get(&client, kept).await.task.status(), TaskStatus::Cancelled);
    }
}

/// A `jp mcp --http` killed when dropped (a failed assertion must not leave it running).
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `jp mcp --http` on 127.0.0.1; its URL.
fn http(ws: &Path, token: &str) -> (Server, String) {
    use std::io::BufRead;
    let mut server = std::process::Command::new(JP)
        .args(["mcp", "--http", "127.0.0.1:0", "--token-env", "JP_TASKS_TOKEN"])
        .current_dir(ws)
        .env("JP_TASKS_TOKEN", token)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(server.stderr.take().unwrap()).lines();
    let server = Server(server);
    let url = loop {
        let line = err.next().expect("jp mcp --http printed its address").unwrap();
        if let Some(rest) = line.split(" at ").nth(1) {
            break rest.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in err {});
    (server, url)
}

async fn http_client(url: &str, token: &str, lifecycle: ClientLifecycleMode) -> Session {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    // reqwest is built without a TLS provider; jp installs *ring* before any client is made.
    jp_native::http::crypto_provider();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    config.auth_header = Some(token.to_owned());
    let transport = StreamableHttpClientTransport::from_config(config);
    TASKS.serve_with_lifecycle(transport, lifecycle).await.expect("connect over HTTP")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_is_reached_only_from_its_own_session() {
    let ws = run_workspace();
    let token = "tasks-test-token";
    let (_server, url) = http(ws.path(), token);
    let a = http_client(&url, token, ClientLifecycleMode::Initialize).await;
    let b = http_client(&url, token, ClientLifecycleMode::Initialize).await;
    let stateless = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let c = http_client(&url, token, stateless).await;

    let id = task_of(&a, sh("echo $$ > a.pid; exec sleep 300")).await;
    let pid = pid_in(ws.path(), "a.pid").await;
    let invalid = ErrorCode::INVALID_PARAMS;
    // Another session, and a stateless client holding the same token: unknown, whatever they ask.
    for other in [&b, &c] {
        assert_eq!(code(other.get_task(GetTaskParams::new(id.as_str())).await), invalid);
        assert_eq!(code(other.cancel_task(rmcp::model::CancelTaskParams::new(id.as_str())).await), invalid);
        let answers = rmcp::model::InputResponses::from([("q1".to_owned(), json!({"action": "accept"}))]);
        assert_eq!(code(other.update_task(rmcp::model::UpdateTaskParams::new(id.as_str(), answers)).await), invalid);
    }
    // A forged id in its own session: unknown too.
    let mut forged = id.clone();
    forged.replace_range(..4, if id.starts_with("0000") { "ffff" } else { "0000" });
    assert_eq!(code(a.get_task(GetTaskParams::new(forged.as_str())).await), invalid);
    assert_eq!(get(&a, &id).await.task.status(), TaskStatus::Working, "untouched by the others");
    assert!(!gone(pid));

    // A stateless client's task lives across its requests (each has a server of its own) and is
    // its own: the session cannot see it.
    let cid = task_of(&c, waits_for("go")).await;
    assert_eq!(get(&c, &cid).await.task.status(), TaskStatus::Working);
    assert_eq!(code(a.get_task(GetTaskParams::new(cid.as_str())).await), invalid);
    std::fs::write(ws.path().join("go"), "").unwrap();
    let (text, _) = result_text(&settle(&c, &cid).await);
    assert!(text.contains("finished"), "{text}");

    a.cancel_task(rmcp::model::CancelTaskParams::new(id.as_str())).await.expect("tasks/cancel");
    assert_eq!(until(&a, &id, TaskStatus::Cancelled).await.task.status(), TaskStatus::Cancelled);
    assert!(gone(pid), "sleep {pid} outlived its cancelled task");
}

#[tokio::test(flavor = "multi_thread")]
async fn list_results_carry_caching_hints_on_2026_07_28() {
    let ws = run_workspace();
    let (client, _child) = stdio(ws.path(), TASKS).await;
    let listed = client.list_tools(None).await.expect("tools/list");
    assert_eq!(listed.ttl_ms, Some(60_000));
    assert_eq!(listed.cache_scope, Some(rmcp::model::CacheScope::Private));
}
