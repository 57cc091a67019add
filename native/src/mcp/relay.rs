//! The `tools/call` relay of `jp mcp` (stdio) for tools of stdio MCP servers: the agent's call
//! goes to the server and the server's result comes back as raw JSON, without rmcp's typed
//! model on either side.
//!
//! Why: through rmcp on both sides, a relayed call cost ~1.33× the server called directly,
//! nearly all of it in parsing and re-serialising the same result several times (the sandbox
//! costs nothing per call). Nothing is decided per call for such a tool — the kernel holds the
//! server to its policy (see [`client`](crate::runtime::mcp::client)) — so the relay changes only the
//! transport: which server and which of its tools still come from the same resolution as every
//! other call, and everything else (initialize, tools/list, stateful and builtin tools,
//! progress, elicitation, a server not yet started) stays on rmcp.
//!
//! Two line multiplexers make it possible:
//! - [`ServerPipes`] (in the MCP client) sits on a started server's stdin/stdout. rmcp's client
//!   speaks through a duplex pipe to it; the relay writes its requests (ids `jp-relay-N`, which
//!   rmcp never uses) to the same stdin, and the answers to them are taken out of the server's
//!   stdout before the rest goes on to rmcp.
//! - [`serve_front`] sits on `jp mcp`'s own stdin/stdout: a `tools/call` it can relay is relayed,
//!   every other line goes to rmcp's server through a duplex pipe; both write whole lines to
//!   stdout under one lock.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, Semaphore};

use crate::runtime::mcp::pipes::{RelayError, ServerPipes, contains, read_line};

/// A `tools/call` from the agent, as much as the relay needs of it.
#[derive(Deserialize)]
struct CallLine<'a> {
    #[serde(borrow)]
    id: &'a RawValue,
    method: String,
    #[serde(borrow)]
    params: CallParams<'a>,
}

#[derive(Deserialize)]
struct CallParams<'a> {
    name: String,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "_meta")]
    meta: Option<&'a RawValue>,
    /// MCP 2026-07-28's retry of a call that asked: rmcp serves it (`mrtr`), as it served the call.
    #[serde(borrow, default, rename = "requestState")]
    request_state: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "inputResponses")]
    input_responses: Option<&'a RawValue>,
}

/// A `notifications/cancelled` from the agent.
#[derive(Deserialize)]
struct CancelLine<'a> {
    method: String,
    #[serde(borrow)]
    params: CancelParams<'a>,
}

#[derive(Deserialize)]
struct CancelParams<'a> {
    #[serde(borrow, rename = "requestId")]
    request_id: &'a RawValue,
}

/// Where a relayable call goes: the server's pipes, the tool's name there, and how to say
/// errors the way the rest of `jp mcp` does.
pub struct Route {
    /// The server's pipes.
    pub pipes: Arc<ServerPipes>,
    /// The server's name in the configuration.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// The call's time limit.
    pub timeout: Duration,
}

/// What the front needs of the host: which calls it may relay, and what to do when a server
/// turned out to be gone.
pub trait Router: Send + Sync + 'static {
    /// The route of a call of tool `name` with `arguments`, when it can be relayed now (a tool of
    /// a running stdio MCP server, arguments that fit its schema); `None`: rmcp serves it (and
    /// says what is wrong, if anything).
    fn route(&self, name: &str, arguments: &RawValue) -> impl std::future::Future<Output = Option<Route>> + Send;
    /// The error text of a failed relayed call (with the server's stderr tail), and forget a
    /// server that is gone so that the next call starts it again.
    fn failed(&self, route: &Route, error: RelayError) -> impl std::future::Future<Output = String> + Send;
}

/// The agent's side: read `input` line by line, relay what can be relayed, pass the rest to
/// `rmcp` (the duplex pipe rmcp's server reads and writes), and write rmcp's lines and the
/// relay's answers to `output`, whole lines under one lock. Returns when `input` ends.
pub async fn serve_front<R: Router>(
    router: Arc<R>,
    slots: Arc<Semaphore>,
    input: impl AsyncRead + Send + Unpin + 'static,
    output: impl AsyncWrite + Send + Unpin + 'static,
    rmcp: tokio::io::DuplexStream,
) {
    let output: Arc<Mutex<Box<dyn AsyncWrite + Send + Unpin>>> = Arc::new(Mutex::new(Box::new(output)));
    let (from_rmcp, mut to_rmcp) = tokio::io::split(rmcp);
    let copier = {
        let output = output.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::with_capacity(1 << 16, from_rmcp);
            let mut line = Vec::new();
            while let Ok(true) = read_line(&mut reader, &mut line).await {
                let mut out = output.lock().await;
                if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
                    break;
                }
            }
        })
    };
    // The agent's id (raw JSON) of each relayed call in flight → its task, for cancellation.
    let inflight: Arc<std::sync::Mutex<HashMap<String, tokio::task::AbortHandle>>> = Arc::default();
    let mut reader = BufReader::with_capacity(1 << 16, input);
    let mut line = Vec::new();
    while let Ok(true) = read_line(&mut reader, &mut line).await {
        if relay(&router, &slots, &output, &inflight, &line).await {
            continue;
        }
        cancel_relayed(&inflight, &line);
        if to_rmcp.write_all(&line).await.is_err() {
            break;
        }
    }
    // The agent is gone: rmcp's session ends with its input.
    let _ = to_rmcp.shutdown().await;
    let _ = copier.await;
}

/// Relay `line` if it is a `tools/call` that can be relayed (then `true`: a task serves it).
async fn relay<R: Router>(
    router: &Arc<R>,
    slots: &Arc<Semaphore>,
    output: &Arc<Mutex<Box<dyn AsyncWrite + Send + Unpin>>>,
    inflight: &Arc<std::sync::Mutex<HashMap<String, tokio::task::AbortHandle>>>,
    line: &[u8],
) -> bool {
    if !contains(line, b"tools/call") {
        return false;
    }
    let Ok(call) = serde_json::from_slice::<CallLine<'_>>(line) else { return false };
    // Progress reports and other `_meta` requests stay with rmcp, which serves them; so do the
    // retries of calls that asked.
    if call.method != "tools/call"
        || call.params.meta.is_some()
        || call.params.request_state.is_some()
        || call.params.input_responses.is_some()
    {
        return false;
    }
    let arguments: Box<RawValue> = match call.params.arguments {
        Some(a) if a.get().trim_start().starts_with('{') => a.to_owned(),
        // Not an object: rmcp says what is wrong.
        Some(_) => return false,
        None => match RawValue::from_string("{}".into()) {
            Ok(v) => v,
            Err(_) => return false,
        },
    };
    let Some(route) = router.route(&call.params.name, &arguments).await else { return false };
    let id = call.id.get().to_owned();
    let (router, slots, output, registry) = (router.clone(), slots.clone(), output.clone(), inflight.clone());
    let key = id.clone();
    let task = tokio::spawn(async move {
        let reply = match slots.acquire().await {
            Ok(_slot) => match route.pipes.call(&route.tool, &arguments, route.timeout).await {
                Ok(result) => {
                    let mut reply = Vec::with_capacity(result.get().len() + id.len() + 40);
                    reply.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
                    reply.extend_from_slice(id.as_bytes());
                    reply.extend_from_slice(b",\"result\":");
                    reply.extend_from_slice(result.get());
                    reply.extend_from_slice(b"}\n");
                    reply
                }
                Err(e) => {
                    let message = router.failed(&route, e).await;
                    let text = serde_json::to_string(&message).unwrap_or_else(|_| "\"the MCP server failed\"".into());
                    format!(
                        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":{text}}}],\"isError\":true}}}}\n"
                    )
                    .into_bytes()
                }
            },
            Err(_) => return,
        };
        registry.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&id);
        let mut out = output.lock().await;
        let _ = out.write_all(&reply).await;
        let _ = out.flush().await;
    });
    let mut registry = inflight.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    // A call that already ended has removed its entry: it must not stay behind.
    if !task.is_finished() {
        registry.insert(key, task.abort_handle());
    }
    true
}

/// If `line` cancels a relayed call, stop it (its server is told when its request is dropped).
fn cancel_relayed(inflight: &std::sync::Mutex<HashMap<String, tokio::task::AbortHandle>>, line: &[u8]) {
    if !contains(line, b"notifications/cancelled") {
        return;
    }
    let Ok(cancel) = serde_json::from_slice::<CancelLine<'_>>(line) else { return };
    if cancel.method != "notifications/cancelled" {
        return;
    }
    let task =
        inflight.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(cancel.params.request_id.get());
    if let Some(task) = task {
        task.abort();
    }
}
