//! Handles over stateless MCP (2026-07-28 on HTTP, issue 35): each request gets a server of its
//! own, yet a `run` handle spawned in one request is fed, read and aborted by later requests —
//! new connections — of the same principal and scope (`_meta["jp-host/scope"]`), and is unknown
//! to another scope and to a session, exactly as an id that never existed.

#![cfg(target_os = "linux")]

mod support;

use std::io::BufRead;

use rmcp::model::{CallToolRequestParams, CallToolResponse, ProtocolVersion, RequestMetaObject};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};

const JP: &str = env!("CARGO_BIN_EXE_jp");
const TOKEN: &str = "handles-test-token";

/// A `jp mcp --http` killed when dropped.
struct Server(std::process::Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(ws: &std::path::Path) -> Server {
    let mut child = std::process::Command::new(JP)
        .args(["mcp", "--http", "127.0.0.1:0", "--token-env", "JP_HANDLES_TOKEN"])
        .current_dir(ws)
        .env("JP_HANDLES_TOKEN", TOKEN)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = err.next().expect("jp mcp --http printed its address").unwrap();
        if let Some(rest) = line.split(" at ").nth(1) {
            break rest.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in err {});
    Server(child, url)
}

fn transport(url: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    config.auth_header = Some(TOKEN.to_owned());
    StreamableHttpClientTransport::from_config(config)
}

/// A new stateless client: a connection of its own, every request standing alone.
async fn stateless(url: &str) -> RunningService<RoleClient, ()> {
    let discover = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    ().serve_with_lifecycle(transport(url), discover).await.expect("server/discover over HTTP")
}

/// One `run` call; `scope` goes in `_meta["jp-host/scope"]`. Returns the handle JSON, or the
/// error text of a failed call.
async fn run(client: &RunningService<RoleClient, ()>, args: Value, scope: Option<&str>) -> Result<Value, String> {
    let mut p = CallToolRequestParams::new("run");
    p.arguments = args.as_object().cloned();
    if let Some(scope) = scope {
        let mut meta = RequestMetaObject::default();
        meta.0.insert("jp-host/scope".into(), json!(scope));
        p.meta = Some(meta);
    }
    let reply = client.call_tool_once(p).await.expect("tools/call");
    let CallToolResponse::Complete(result) = reply else { panic!("expected a result, got {reply:?}") };
    let text: String = result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
    match (result.is_error, result.structured_content) {
        (Some(true), None) => Err(text),
        (_, Some(json)) => Ok(json),
        (_, None) => Err(format!("no handle in the reply: {text}")),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_handle_spawned_in_one_stateless_request_is_driven_by_later_ones_of_its_scope_only() {
    let ws = support::run_workspace();
    let server = serve(ws.path());
    jp_native::http::crypto_provider();
    let script = "read a; echo got $a; read b; echo bye $b";
    let spawn = json!({"action": "spawn", "program": "sh", "args": ["-c", script]});

    let first = stateless(&server.1).await;
    let h = run(&first, spawn.clone(), Some("agent-1")).await.unwrap();
    assert_eq!(h["state"], "running", "{h}");
    let id = h["id"].as_str().unwrap().to_owned();
    let _ = first.cancel().await;

    // A later connection, same principal and scope: it feeds the live process.
    let later = stateless(&server.1).await;
    let fed = run(&later, json!({"action": "apply", "id": id, "input": "one\n"}), Some("agent-1")).await.unwrap();
    let mut seen = fed["content"].as_str().unwrap_or_default().to_owned();
    while !seen.contains("got one") {
        let r = run(&later, json!({"action": "fetch", "id": id}), Some("agent-1")).await.unwrap();
        assert_eq!(r["state"], "running", "{r}");
        seen.push_str(r["content"].as_str().unwrap_or_default());
    }

    // Another scope, no scope, and a session: the id is unknown to each, as one that never was.
    let unknown = run(&later, json!({"action": "fetch", "id": "h_999"}), Some("agent-2")).await.unwrap_err();
    assert!(unknown.contains("no live handle 'h_999'"), "{unknown}");
    for scope in [Some("agent-2"), None] {
        let e = run(&later, json!({"action": "fetch", "id": id}), scope).await.unwrap_err();
        assert_eq!(e.replace(&id, "h_999"), unknown, "scope {scope:?}");
    }
    let session = ().serve(transport(&server.1)).await.expect("a 2025-11-25 session (initialize)");
    let e = run(&session, json!({"action": "fetch", "id": id}), Some("agent-1")).await.unwrap_err();
    assert_eq!(e.replace(&id, "h_999"), unknown, "a session does not see stateless handles");
    let _ = session.cancel().await;
    // A scope that is not a short string is refused with what it must be.
    let e = run(&later, json!({"action": "fetch", "id": id}), Some(&"x".repeat(200))).await.unwrap_err();
    assert!(e.contains("jp-host/scope") && e.contains("at most 128 characters"), "{e}");

    // Its owner aborts it; then it is gone for the owner too.
    let aborted = run(&later, json!({"action": "abort", "id": id}), Some("agent-1")).await.unwrap();
    assert_eq!(aborted["state"], "stopped", "{aborted}");
    let e = run(&later, json!({"action": "fetch", "id": id}), Some("agent-1")).await.unwrap_err();
    assert!(e.contains(&format!("no live handle '{id}'")), "{e}");
    let _ = later.cancel().await;
}
