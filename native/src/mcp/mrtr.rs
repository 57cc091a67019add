//! Asking a client of MCP 2026-07-28, which has no server-to-client requests: a question becomes
//! an `input_required` result of the `tools/call` (SEP-2322, multi round-trip requests), and the
//! client calls again with the answers and the `requestState` it was given.
//!
//! jp's tool is running when it asks (a policy inquiry comes in the middle of a request), so the
//! call is suspended, not restarted: it keeps running in a task of its own, its question waits
//! here under a random `requestState`, and the retry delivers the answer and follows the same
//! call to its end — or to its next question. The state is an unguessable handle, bound to the
//! tool's name and arguments: a retry must repeat both, else it resumes nothing (and the call
//! keeps waiting for its own retry); nothing in the state is trusted. A question nobody answers
//! within the ask timeout is denied, and a call nobody resumes is aborted (its processes killed).

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use rmcp::model::{ElicitRequest, ElicitResult, InputRequest, InputRequests, InputRequiredResult, JsonObject};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use jp_core::runtime::RuntimeError;

use crate::app::CallReply;
use crate::runtime::mcp::ask::{ASK_TIMEOUT, Asked};

/// The key of the one question in an `input_required` result.
const KEY: &str = "decision";

/// A call running in its own task, with its questions.
pub(crate) struct Running {
    pub(crate) work: JoinHandle<Result<CallReply, RuntimeError>>,
    pub(crate) questions: mpsc::Receiver<Asked>,
}

/// A call waiting for the client to answer its question.
struct Suspended {
    tool: String,
    /// The arguments it was called with: its retry repeats them.
    arguments: JsonObject,
    running: Running,
    answer: oneshot::Sender<Option<ElicitResult>>,
}

/// Every suspended call of this process (shared by every session: over Streamable HTTP each
/// request of protocol 2026-07-28 gets a server of its own).
fn suspended() -> &'static Mutex<HashMap<String, Suspended>> {
    static SUSPENDED: OnceLock<Mutex<HashMap<String, Suspended>>> = OnceLock::new();
    SUSPENDED.get_or_init(Mutex::default)
}

/// What to answer `tools/call` with: the call's end, or its question.
pub(crate) enum Progress {
    /// The call ended.
    Done(Result<CallReply, RuntimeError>),
    /// It asks: send this `input_required` result.
    Asks(InputRequiredResult),
}

/// Follow `running` (a call of `tool` with `arguments`) until it ends or asks; a question
/// suspends it under a fresh state.
pub(crate) async fn drive(tool: &str, arguments: JsonObject, mut running: Running) -> Progress {
    tokio::select! {
        done = &mut running.work => Progress::Done(done.unwrap_or_else(|e| Err(RuntimeError::Other(format!("the call failed: {e}"))))),
        asked = running.questions.recv() => match asked {
            None => Progress::Done((&mut running.work).await.unwrap_or_else(|e| Err(RuntimeError::Other(format!("the call failed: {e}"))))),
            Some(Asked { request, answer }) => {
                let state = new_state();
                let mut requests = InputRequests::new();
                requests.insert(KEY.into(), InputRequest::Elicitation(ElicitRequest::new(request)));
                suspended()
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(state.clone(), Suspended { tool: tool.to_owned(), arguments, running, answer });
                // Nobody resumes it: the question is denied (its sender dropped) and the call
                // aborted, its processes killed.
                let expired = state.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(ASK_TIMEOUT).await;
                    let gone = suspended().lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&expired);
                    if let Some(s) = gone {
                        s.running.work.abort();
                    }
                });
                Progress::Asks(InputRequiredResult::new(Some(requests), Some(state)))
            }
        },
    }
}

/// The retry of a suspended call — the same tool with the same `arguments` (none: `{}`) under
/// its `state`: deliver the client's answer (`responses[KEY]`, an `ElicitResult`; missing or
/// malformed is no answer, which denies) and follow the call on.
pub(crate) async fn resume(
    tool: &str,
    arguments: Option<&JsonObject>,
    state: &str,
    responses: Option<&BTreeMap<String, serde_json::Value>>,
) -> Result<Progress, StaleState> {
    let found = suspended().lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(state);
    let Some(s) = found else {
        return Err(StaleState::Unknown);
    };
    let none = JsonObject::new();
    let refused = if s.tool != tool {
        Some(StaleState::OtherTool { tool_was: s.tool.clone(), tool: tool.to_owned() })
    } else if s.arguments != *arguments.unwrap_or(&none) {
        Some(StaleState::OtherArguments { tool: tool.to_owned() })
    } else {
        None
    };
    if let Some(refused) = refused {
        // Not this call's: put it back untouched, for its own retry.
        suspended().lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(state.to_owned(), s);
        return Err(refused);
    }
    let answer =
        responses.and_then(|r| r.get(KEY)).and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok());
    let _ = s.answer.send(answer);
    Ok(drive(tool, s.arguments, s.running).await)
}

/// Why a retry's `requestState` resumes nothing: a JSON-RPC -32602 error (SEP-2322 has a server
/// reject state it cannot verify), its message what the client can do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StaleState {
    /// No call waits under it: it was answered, expired, or never issued (altered, made up).
    #[error(
        "this requestState names no call waiting for an answer (it was answered, it expired, or it was altered); call the tool again without requestState"
    )]
    Unknown,
    /// A call of another tool waits under it.
    #[error(
        "this requestState belongs to a call of '{tool_was}', not '{tool}'; retry that call with its own tool and arguments, or call '{tool}' again without requestState"
    )]
    OtherTool {
        /// The waiting call's tool.
        tool_was: String,
        /// The tool the retry names.
        tool: String,
    },
    /// A call of the same tool waits under it, called with other arguments.
    #[error(
        "the arguments differ from the call that asked under this requestState; retry with the arguments of that call of '{tool}', or call it again without requestState"
    )]
    OtherArguments {
        /// The tool.
        tool: String,
    },
}

/// A fresh, unguessable state: 128 random bits from the OS, hex.
fn new_state() -> String {
    let mut bytes = [0u8; 16];
    rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty()).ok();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether a call of this client asks through `input_required` results.
pub(crate) fn asks_by_result(ctx: &rmcp::service::RequestContext<rmcp::RoleServer>) -> bool {
    let new_protocol = ctx.protocol_version().is_some_and(|v| !v.has_initialize());
    let form =
        ctx.client_capabilities().and_then(|c| c.elicitation).is_some_and(|e| e.form.is_some() || e.url.is_none());
    new_protocol && form
}
