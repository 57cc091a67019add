//! The optional `jp:tool/stateful` export (`wit/tool/stateful.wit`, RFD 009): a component that
//! has it keeps a live session per handle. [`WasmRuntime::spawn_session`] instantiates it once,
//! calls `spawn` and the session's first `fetch`; the [`SessionHandle`] then owns the store, the
//! instance and the session resource, and runs each `fetch`/`apply` under the same limits as a
//! one-shot call — a fresh wall-clock deadline per command, the instance's memory limit, the
//! output cap — with files committed after each command. A trap, a deadline or output over the
//! cap stops the handle (`stopped` with the error); `abort` drops the store. Which actions a tool
//! offers is the component's answer to `actions(name)`, asked once per component and tool.

use std::time::Instant;

use jp_core::BoxFuture;
use jp_core::cancel::CancellationToken;
use jp_core::handles::{AnyToolHandle, ApplyInput};
use jp_core::runtime::{ComponentError, RuntimeError, SpawnResult, ToolCall, ToolConfig};
use jp_core::schema::StatefulAction;
use jp_core::state::component::{WitError, WitQuestion, WitToolState};
use jp_core::state::{ToolError, ToolState};
use wasmtime::Store;
use wasmtime::component::ResourceAny;

use super::{CallState, WasmLimits, WasmRuntime};

#[allow(missing_docs, unreachable_pub, clippy::all)]
pub(super) mod bindings {
    wasmtime::component::bindgen!({
        world: "stateful-tool",
        path: "../wit/tool",
        exports: { default: async },
    });
}

pub(super) use bindings::exports::jp::tool::stateful::GuestIndices;
use bindings::exports::jp::tool::stateful::{Answer, Guest, Input, ToolState as WitState};
use bindings::jp::tool::types::{Action, Context};

/// How long a component may take to say which actions its tool offers.
const ACTIONS_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

impl WasmRuntime {
    /// The RFD 009 actions of tool `name` when its component exports `jp:tool/stateful` (its
    /// answer to `actions`, cached with the component); `None` for any other component or one
    /// that cannot be loaded (its table's `stateful`, if any, then applies as before).
    pub fn stateful_actions_of(&self, name: &str, config: &ToolConfig) -> Option<Vec<StatefulAction>> {
        let path = super::component_path(config, &self.services.workspace)?;
        let loaded = self.engine.load_file(&path).ok()?;
        let indices = loaded.stateful.as_ref()?;
        if let Some(known) = loaded.actions.lock().ok().and_then(|a| a.get(name).cloned()) {
            return Some(known);
        }
        let call = ToolCall::new(name, "actions", Default::default());
        let mut store = self.store(&call, Vec::new(), None);
        store.data_mut().deadline = Instant::now() + ACTIONS_DEADLINE;
        // Sync by the trait's contract; the call touches no I/O, so any executor drives it.
        let answer = futures_executor::block_on(async {
            let instance = loaded.pre.instantiate_async(&mut store).await?;
            let guest = indices.load(&mut store, &instance)?;
            guest.call_actions(&mut store, name).await
        });
        let actions: Vec<StatefulAction> = match answer {
            Ok(names) => StatefulAction::ALL.into_iter().filter(|a| names.iter().any(|n| n == a.name())).collect(),
            Err(e) => {
                eprintln!("warning: tool '{name}': the component's `actions` failed ({e:#}); it is one-shot");
                Vec::new()
            }
        };
        if let Ok(mut a) = loaded.actions.lock() {
            a.insert(name.to_owned(), actions.clone());
        }
        Some(actions)
    }

    /// Start a session of a stateful component: its first state, and its handle unless it
    /// stopped at once.
    pub async fn spawn_session(&self, call: ToolCall, config: &ToolConfig) -> SpawnResult {
        let policy = self.policy(&call, config)?;
        let source = self.source(&call, config)?;
        let (loaded, mounts, dispatcher) = self.prepare(&call, &source, policy)?;
        let Some(indices) = &loaded.stateful else {
            return Err(RuntimeError::Input(format!(
                "tool '{}' is a one-shot component (it does not export jp:tool/stateful); call it without `action`",
                call.name
            )));
        };
        let root = mounts.first().map_or_else(|| "/".to_owned(), |m| m.guest_path.clone());
        let mut store = self.store(&call, mounts, dispatcher);
        let failed = |e: wasmtime::Error| ComponentError::Instantiate {
            what: format!("for '{}'", call.name),
            why: format!("{e:#}"),
        };
        let instance = loaded.pre.instantiate_async(&mut store).await.map_err(failed)?;
        let guest = indices.load(&mut store, &instance).map_err(failed)?;
        let arguments = serde_json::to_string(&call.arguments).unwrap_or_default();
        let ctx = Context { root, action: Action::Run };
        let stopped = |e: ToolError| Ok((ToolState::Stopped { result: Err(e) }, None));
        let spawned = tokio::select! {
            r = guest.call_spawn(&mut store, &ctx, &call.name, &arguments) => r,
            () = call.cancel.cancelled() => return stopped(ToolError::new("cancelled")),
        };
        let session = match spawned {
            Ok(Ok(session)) => session,
            Ok(Err(e)) => return stopped(ToolError { message: e.message, trace: e.trace, transient: e.transient }),
            Err(e) => return stopped(failure(&call.name, &self.limits, store.data(), e)),
        };
        // From here on the handle's commands are stopped by dropping them, not by this call's token.
        store.data_mut().cancel = CancellationToken::new();
        let mut handle = SessionHandle {
            live: Some(Live { store, guest, session }),
            name: call.name.clone(),
            limits: self.limits,
            interrupted: false,
        };
        let state = handle.command(None).await.unwrap_or_else(|e| ToolState::Stopped { result: Err(e) });
        let handle = (!state.is_stopped()).then(|| Box::new(handle) as Box<dyn AnyToolHandle>);
        Ok((state, handle))
    }
}

/// What a live handle holds: the instance's store and the session resource in it.
struct Live {
    store: Store<CallState>,
    guest: Guest,
    session: ResourceAny,
}

/// A live session of a component (`h_1`, …); dropping it drops the store and the instance.
pub(super) struct SessionHandle {
    /// `None` once the session stopped or was aborted.
    live: Option<Live>,
    name: String,
    limits: WasmLimits,
    /// A command was dropped before it returned (its call was cancelled or preempted): the
    /// instance stopped mid-call and cannot be entered again.
    interrupted: bool,
}

impl SessionHandle {
    /// Run `fetch` (`None`) or `apply` under a fresh deadline; a trap, deadline or output over
    /// the cap stops the session.
    async fn command(&mut self, input: Option<Input>) -> Result<ToolState, ToolError> {
        if self.interrupted {
            self.live = None;
        }
        let Some(live) = self.live.as_mut() else {
            return Err(ToolError::new(if self.interrupted {
                "the previous command on this handle was interrupted before it ended; the session cannot continue"
            } else {
                "the session has stopped"
            }));
        };
        let data = live.store.data_mut();
        data.deadline = Instant::now() + self.limits.deadline;
        data.stop = None;
        live.store.set_epoch_deadline(1);
        self.interrupted = true;
        let answer = match &input {
            None => live.guest.session().call_fetch(&mut live.store, live.session).await,
            Some(input) => live.guest.session().call_apply(&mut live.store, live.session, input).await,
        };
        self.interrupted = false;
        let state = match answer {
            Ok(state) => state,
            Err(e) => {
                let error = failure(&self.name, &self.limits, live.store.data(), e);
                self.live = None;
                return Err(error);
            }
        };
        if let Err(e) = live.store.data_mut().fs.commit_all().await {
            self.live = None;
            return Err(ToolError::new(format!("tool '{}' answered but {e}", self.name)));
        }
        let state = plain(state, &self.name, self.limits.output);
        if state.is_stopped() {
            self.live = None;
        }
        Ok(state)
    }
}

impl AnyToolHandle for SessionHandle {
    fn fetch(&mut self) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        Box::pin(self.command(None))
    }

    fn apply(&mut self, input: ApplyInput) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        let input = match input {
            ApplyInput::Data(v) => Input::Data(v.to_string()),
            ApplyInput::Answer { question_id, value } => {
                Input::Answer(Answer { question_id, value: value.to_string() })
            }
        };
        Box::pin(self.command(Some(input)))
    }

    fn abort(&mut self) -> BoxFuture<'_, ()> {
        // Dropping the store ends the instance and everything it holds; the session's own
        // destructor (guest code) is not run, so an abort never waits on the tool.
        self.live = None;
        Box::pin(async {})
    }
}

/// A session's state as the core's: the bindings' values in core's plain types, mapped by the
/// one mapping every engine uses (`WitToolState::into_state`, which holds it to the output cap).
fn plain(state: WitState, name: &str, max: usize) -> ToolState {
    let error = |e: bindings::jp::tool::types::ErrorInfo| WitError {
        message: e.message,
        trace: e.trace,
        transient: e.transient,
    };
    let wit = match state {
        WitState::Running(content) => WitToolState::Running(content),
        WitState::Waiting(w) => {
            let q = w.question;
            let question = WitQuestion { id: q.id, text: q.text, answer_type: q.answer_type, default: q.default };
            WitToolState::Waiting { content: w.content, question }
        }
        WitState::Stopped(r) => WitToolState::Stopped(r.map_err(error)),
    };
    wit.into_state(name, max)
}

/// Why a command trapped, in the words of a one-shot call's failure (which limit, how to raise it).
fn failure(name: &str, limits: &WasmLimits, state: &CallState, e: wasmtime::Error) -> ToolError {
    let mut error = match super::failed_with(name, "session", limits, state, e) {
        Ok(jp_core::runtime::ExecutionOutcome::Completed { result: Err(e), .. }) => e,
        Ok(_) => ToolError::new("cancelled"),
        Err(RuntimeError::Timeout { tool, seconds }) => ToolError::new(format!(
            "tool '{tool}' timed out after {seconds} s: one command of a session gets the call deadline \
             (raise it with `--timeout SECONDS`)"
        )),
        Err(e) => ToolError::new(e.to_string()),
    };
    if error.message.contains("memory limit") {
        error.message.push_str(" (the limit holds for the session's instance as a whole)");
    }
    error.message.push_str("; the session has stopped");
    error
}
