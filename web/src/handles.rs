//! Stateful tools (RFD 009) in the page and at the edge, through the core's handle session
//! (`jp_core::handles::session`) — the dispatch `jp mcp` and `jp query` use: `spawn` registers a
//! handle (`h_1`, …) with the caller's owner, `fetch` / `apply` / `abort` reach it, a call
//! without `action` runs to its end, limits and idle expiry hold.
//!
//! A handle is a live instance of a component that exports `jp:tool/stateful`, kept by the JS
//! runner (`www/jp.js`: on the page's thread, or in a Worker of its own) for as long as the
//! handle lives. Each command runs on a call session of its own — its requests decided by the
//! policy like any call's — and what it changed is committed when it ends (not when it traps).
//! Owners are the embedder's: the page's agent panel uses one per turn, the edge one per bearer
//! token, project and scope; another owner's ids are unknown.
//!
//! A host whose project lives in the embedder's storage (the edge) also keeps each handle's
//! saved session there, and rebuilds a handle whose instance it lost (see [`crate::saved`]).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use jp_core::BoxFuture;
use jp_core::agent::surface::{self, CallReply};
use jp_core::handles::{AnyToolHandle, ApplyInput, HandleSession, StatefulTools};
use jp_core::runtime::call::{Answerer, NoAnswerer};
use jp_core::runtime::{ExecutionOutcome, RuntimeError, SpawnResult, ToolCall, ToolConfig, ToolRuntime};
use jp_core::schema::StatefulAction;
use jp_core::state::component::WitToolState;
use jp_core::state::{ToolError, ToolState};
use js_sys::{Array, Function, Object, Promise, Reflect};
use serde_json::{Map, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::JpHost;
use crate::agent::AbortHook;
use crate::call::CallSession;
use crate::js::{err, obj};
use crate::run::{JcoRuntime, JsAnswerer, MAX_OUTPUT, message_of, outcome_js, to_value};
use crate::saved::{Issued, SavedHandle, handle_key, issued_key};
use crate::store::Records;

/// Owners (turns, callers' scopes) that may hold live handles in one host at once.
pub const MAX_OWNERS: usize = 64;

/// Call `object[method](args…)` and wait for its promise (or take its value).
async fn call_js(object: &JsValue, method: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    let f: Function = Reflect::get(object, &JsValue::from_str(method))?
        .dyn_into()
        .map_err(|_| JsValue::from(err(format!("the stateful runner has no '{method}' function"))))?;
    let returned = f.apply(object, &args.iter().collect::<Array>())?;
    match returned.dyn_into::<Promise>() {
        Ok(p) => JsFuture::from(p).await,
        Err(v) => Ok(v),
    }
}

/// A session state in jco's shape, as the core's.
fn state_of(raw: JsValue, tool: &str) -> Result<ToolState, ToolError> {
    let wit: WitToolState = serde_wasm_bindgen::from_value(raw)
        .map_err(|e| ToolError::new(format!("tool '{tool}' answered with a state jp cannot read: {e}")))?;
    Ok(wit.into_state(tool, MAX_OUTPUT))
}

/// What a command changed is committed unless the tool failed.
fn commits(state: &ToolState) -> bool {
    !matches!(state, ToolState::Stopped { result: Err(_) })
}

/// The page's and the edge's tools as the core's handle session sees them: one-shot tools run
/// as `JpHost.call` runs them, stateful ones spawned by the JS `stateful` runner.
struct WebTools {
    oneshot: JcoRuntime,
    stateful: Option<Object>,
    deadline: Duration,
    /// Set when the host keeps saved sessions (a JS storage): whose handles these are.
    saving: Option<Saving>,
}

/// Whose handles a call's commands save, and the session that issues their ids.
struct Saving {
    owner: String,
    session: Arc<HandleSession>,
    /// The id a spawn of this call saved its handle under (the one the session was to issue).
    spawned: Rc<RefCell<String>>,
}

/// A handle's record after a command that left it in `state`: what the component's `save`
/// answered (run on the command's `session`, so under its deadline), or why nothing was kept.
async fn record_of(js: &JsValue, session: &CallSession, tool: &str, state: &ToolState) -> Vec<u8> {
    let has_save = Reflect::get(js, &JsValue::from_str("save")).is_ok_and(|f| f.is_function());
    let saved = if has_save {
        match call_js(js, "save", &[session.clone().into()]).await {
            Ok(v) => v.as_string().ok_or_else(|| format!("tool '{tool}' does not save its sessions")),
            Err(e) => Err(format!("saving its session failed: {}", message_of(&e))),
        }
    } else {
        Err("this host cannot save its sessions".to_owned())
    };
    SavedHandle::new(tool, state, saved, js_sys::Date::now()).bytes()
}

impl WebTools {
    fn host(&self) -> &JpHost {
        &self.oneshot.host
    }
}

impl StatefulTools for WebTools {
    fn actions(&self, tool: &str) -> Vec<StatefulAction> {
        self.host().tools.borrow().get(tool).map(|t| t.actions.clone()).unwrap_or_default()
    }

    fn live(&self, tool: &str) -> bool {
        // Every stateful component keeps its instance between commands.
        !self.actions(tool).is_empty()
    }

    fn spawn(&self, call: ToolCall) -> BoxFuture<'_, SpawnResult> {
        Box::pin(async move {
            let name = call.name.clone();
            self.host().check_parameters(&name, &call.arguments).map_err(RuntimeError::Input)?;
            let Some(stateful) = self.stateful.clone() else {
                return Err(RuntimeError::Other(format!(
                    "tool '{name}' keeps a live instance, and this host was given no way to run one"
                )));
            };
            let session = self
                .host()
                .begin_call(name.clone(), None, self.oneshot.inquirer.clone())
                .await
                .map_err(|e| RuntimeError::Other(message_of(&e)))?;
            let arguments = Value::Object(call.arguments.clone()).to_string();
            let spawned = call_js(
                &stateful,
                "spawn",
                &[session.clone().into(), JsValue::from_str(&name), JsValue::from_str(&arguments)],
            )
            .await;
            let (state, handle) = match spawned {
                Err(e) => {
                    let _ = session.finish(false).await;
                    return Ok((ToolState::Stopped { result: Err(ToolError::new(message_of(&e))) }, None));
                }
                Ok(spawned) => {
                    let raw = Reflect::get(&spawned, &JsValue::from_str("state")).unwrap_or(JsValue::UNDEFINED);
                    let handle = Reflect::get(&spawned, &JsValue::from_str("handle")).unwrap_or(JsValue::UNDEFINED);
                    (state_of(raw, &name).unwrap_or_else(|e| ToolState::Stopped { result: Err(e) }), handle)
                }
            };
            // Kept: the handle's saved session under the id the session is about to issue, and
            // the owner's count of ids — with the spawn's files, in one batch.
            let mut records = Records::new();
            let mut saved_as = None;
            if let Some(saving) = self.saving.as_ref().filter(|_| !state.is_stopped()) {
                let id = saving.session.next_id();
                let issued = saving.session.issued() + 1;
                records.push((handle_key(&saving.owner, &id), Some(record_of(&handle, &session, &name, &state).await)));
                let count = Issued { issued, at: js_sys::Date::now() };
                records.push((issued_key(&saving.owner), Some(serde_json::to_vec(&count).unwrap_or_default())));
                saving.spawned.replace(id);
                // Shared with the call: a spawn registered under another id moves it (agentCall).
                saved_as = Some((saving.owner.clone(), saving.spawned.clone()));
            }
            let changed =
                session.finish_with(commits(&state), records).await.map_err(|e| RuntimeError::Other(message_of(&e)))?;
            *self.oneshot.changed.borrow_mut() = changed;
            if state.is_stopped() {
                let _ = call_js(&handle, "abort", &[]).await;
                return Ok((state, None));
            }
            let live = JsHandle {
                host: self.host().clone(),
                tool: name,
                inquirer: self.oneshot.inquirer.clone(),
                js: handle,
                saved_as,
            };
            Ok((state, Some(Box::new(live) as Box<dyn AnyToolHandle>)))
        })
    }

    fn call(&self, call: ToolCall) -> BoxFuture<'_, Result<ExecutionOutcome, RuntimeError>> {
        Box::pin(async move {
            self.host().check_parameters(&call.name, &call.arguments).map_err(RuntimeError::Input)?;
            let config: ToolConfig =
                toml::from_str("").map_err(|e| RuntimeError::Other(format!("the tool's configuration: {e}")))?;
            self.oneshot.execute(call, &config).await
        })
    }

    fn timeout(&self, _: &str) -> Duration {
        self.deadline
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let ms = duration.as_millis().min(i32::MAX as u128) as i32;
            let p = Promise::new(&mut |resolve, _| {
                let global = js_sys::global();
                if let Ok(set) =
                    Reflect::get(&global, &JsValue::from_str("setTimeout")).and_then(|f| f.dyn_into::<Function>())
                {
                    let _ = set.call2(&global, &resolve, &JsValue::from(ms));
                }
            });
            let _ = JsFuture::from(p).await;
        })
    }

    fn now(&self) -> Duration {
        Duration::from_secs_f64(js_sys::Date::now() / 1000.0)
    }
}

/// A live component instance behind a handle: the JS runner's `{fetch(session), apply(session,
/// input), abort()}`.
struct JsHandle {
    host: JpHost,
    tool: String,
    inquirer: Option<Function>,
    js: JsValue,
    /// The owner and id its saved session is kept under (a host with a JS storage).
    saved_as: Option<(String, Rc<RefCell<String>>)>,
}

impl JsHandle {
    async fn command(&mut self, method: &str, input: Option<JsValue>) -> Result<ToolState, ToolError> {
        let session = self
            .host
            .begin_call(self.tool.clone(), None, self.inquirer.clone())
            .await
            .map_err(|e| ToolError::new(message_of(&e)))?;
        let mut args = vec![JsValue::from(session.clone())];
        args.extend(input);
        let answered = call_js(&self.js, method, &args).await;
        let state = match answered {
            Ok(raw) => state_of(raw, &self.tool),
            Err(e) => Err(ToolError::new(message_of(&e))),
        };
        let commit = state.as_ref().is_ok_and(commits);
        // The saved session moves with the command's files; a stopped handle's goes.
        let mut records = Records::new();
        if let Some((owner, id)) = &self.saved_as {
            let key = handle_key(owner, &id.borrow());
            match &state {
                Ok(s) if !s.is_stopped() => {
                    records.push((key, Some(record_of(&self.js, &session, &self.tool, s).await)));
                }
                _ => records.push((key, None)),
            }
        }
        let finished = session.finish_with(commit, records).await;
        if !matches!(&state, Ok(s) if !s.is_stopped()) || finished.is_err() {
            // The handle ends here: its instance goes now (a page's Worker is terminated), and
            // with a refused commit its saved session too (it would bring back the old state).
            let _ = call_js(&self.js, "abort", &[]).await;
            if let (Err(_), Some((owner, id))) = (&finished, &self.saved_as) {
                let gone = vec![(handle_key(owner, &id.borrow()), None)];
                let _ = self.host.store().put_records(&gone).await;
            }
        }
        match finished {
            Ok(changed) => self.host.handle_changes.borrow_mut().extend(changed),
            Err(e) => return Err(ToolError::new(format!("tool '{}' answered, but {}", self.tool, message_of(&e)))),
        }
        state
    }
}

impl AnyToolHandle for JsHandle {
    fn fetch(&mut self) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        Box::pin(self.command("fetch", None))
    }

    fn apply(&mut self, input: ApplyInput) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        // jco's `input` variant: the data or the answer, JSON-encoded.
        let input = match input {
            ApplyInput::Data(v) => obj(&[("tag", "data".into()), ("val", JsValue::from_str(&v.to_string()))]),
            ApplyInput::Answer { question_id, value } => obj(&[
                ("tag", "answer".into()),
                (
                    "val",
                    obj(&[
                        ("questionId", JsValue::from_str(&question_id)),
                        ("value", JsValue::from_str(&value.to_string())),
                    ]),
                ),
            ]),
        };
        Box::pin(self.command("apply", Some(input)))
    }

    fn abort(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let _ = call_js(&self.js, "abort", &[]).await;
            if let Some((owner, id)) = &self.saved_as {
                let gone = vec![(handle_key(owner, &id.borrow()), None)];
                let _ = self.host.store().put_records(&gone).await;
            }
        })
    }
}

impl JpHost {
    /// Before a command of a host that keeps saved sessions: a spawn's ids follow those its
    /// owner was issued before (this host may be new); a command on a handle this host does
    /// not hold but whose saved session is kept rebuilds it under its id (`None`: go on), or
    /// answers itself — `stopped`, transient, when it cannot be rebuilt.
    async fn revive(
        &self,
        web: &WebTools,
        name: &str,
        arguments: &Map<String, Value>,
    ) -> Option<Result<CallReply, RuntimeError>> {
        let saving = web.saving.as_ref()?;
        let action = arguments.get("action")?.as_str()?;
        if action == "spawn" {
            if let Ok(Some(bytes)) = self.store().record(&issued_key(&saving.owner)).await
                && let Ok(kept) = serde_json::from_slice::<Issued>(&bytes)
            {
                saving.session.raise_issued(kept.issued);
            }
            return None;
        }
        if !matches!(action, "fetch" | "apply" | "abort") {
            return None;
        }
        let id = arguments.get("id")?.as_str()?;
        if saving.session.holds(id) {
            return None;
        }
        let key = handle_key(&saving.owner, id);
        let bytes = match self.store().record(&key).await {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return None,
            Err(e) => return Some(Err(RuntimeError::Other(message_of(&e)))),
        };
        let forget =
            || async { self.store().put_records(&vec![(key.clone(), None)]).await.map_err(|e| message_of(&e)) };
        let stopped = |state: ToolState| Some(Ok(CallReply::Handle { id: id.to_owned(), state }));
        let Some(record) = SavedHandle::parse(&bytes) else {
            let _ = forget().await;
            return None;
        };
        if record.tool != name {
            return None; // the session's answer: the id is not this tool's
        }
        let max_idle = saving.session.limits().max_idle;
        if record.expired(js_sys::Date::now(), max_idle) {
            let _ = forget().await;
            return Some(Err(RuntimeError::Input(format!(
                "handle '{id}' is gone: stopped after {} min idle (the most a handle may sit unused)",
                max_idle.as_secs() / 60
            ))));
        }
        if action == "abort" {
            return match forget().await {
                Ok(()) => stopped(ToolState::Stopped { result: Err(ToolError::new("aborted")) }),
                Err(e) => Some(Err(RuntimeError::Other(e))),
            };
        }
        let lost = |why: String| async move {
            let _ = forget().await;
            stopped(SavedHandle::lost(id, name, &why))
        };
        let Some(saved) = record.saved else {
            return lost(record.unsaved.unwrap_or_else(|| "it did not save its session".into())).await;
        };
        let restore = web
            .stateful
            .as_ref()
            .filter(|s| Reflect::get(s, &JsValue::from_str("restore")).is_ok_and(|f| f.is_function()));
        let Some(restore) = restore else { return lost("this host cannot restore sessions".into()).await };
        let session = match self.begin_call(name.to_owned(), None, web.oneshot.inquirer.clone()).await {
            Ok(s) => s,
            Err(e) => return Some(Err(RuntimeError::Other(message_of(&e)))),
        };
        let args = [session.clone().into(), JsValue::from_str(name), JsValue::from_str(&saved)];
        let restored = call_js(restore, "restore", &args).await;
        // Rebuilding is not a command: nothing it wrote is kept.
        let _ = session.finish(false).await;
        let handle = match restored {
            Ok(r) => Reflect::get(&r, &JsValue::from_str("handle")).unwrap_or(JsValue::UNDEFINED),
            Err(e) => return lost(format!("rebuilding it from its saved session failed: {}", message_of(&e))).await,
        };
        let live = JsHandle {
            host: self.clone(),
            tool: name.to_owned(),
            inquirer: web.oneshot.inquirer.clone(),
            js: handle,
            saved_as: Some((saving.owner.clone(), Rc::new(RefCell::new(id.to_owned())))),
        };
        let now = Duration::from_secs_f64(js_sys::Date::now() / 1000.0);
        match saving.session.adopt(id, name, record.state, Box::new(live), now).await {
            Ok(()) => None,
            Err(e) => Some(Err(e)),
        }
    }

    /// A spawn's saved session was kept under the id its owner's session was to issue; when
    /// another spawn of the owner registered first, move it to the id it got.
    async fn move_spawned(&self, saving: &Saving, id: &str) {
        let kept = saving.spawned.borrow().clone();
        if kept.is_empty() || kept == id {
            return;
        }
        let (from, to) = (handle_key(&saving.owner, &kept), handle_key(&saving.owner, id));
        if let Ok(Some(bytes)) = self.store().record(&from).await {
            let _ = self.store().put_records(&vec![(to, Some(bytes)), (from, None)]).await;
        }
        saving.spawned.replace(id.to_owned());
    }
}

#[wasm_bindgen]
impl JpHost {
    /// One call of an agent (RFD 009), its handles kept for `owner`: with `action` a stateful
    /// command (`spawn` starts a live instance through `stateful.spawn(session, name,
    /// argumentsJson)` → `{state, handle: {fetch(session), apply(session, input), abort()}}`,
    /// states in jco's shape), without it a call run to its end (`runner` as for `call`; a
    /// stateful tool's questions go to `answerer`). `deadlineMs` bounds a call run to its end;
    /// `signal` (an `AbortSignal`) stops it — its instance aborted — or gives up on a command.
    ///
    /// Resolves to `call`'s `{tag, val, result?, changed}`, or for a stateful command to
    /// `{tag: "handle", val: {id, state, content?|result?|error?|question?}, result, changed}`
    /// (`result`: MCP's `CallToolResult`, as `jp mcp` answers). `changed`: the paths the call
    /// changed — for a command on a handle, those every handle command of this host changed
    /// since the previous reply (commands of calls running at the same time are not told apart).
    #[wasm_bindgen(js_name = agentCall)]
    #[allow(clippy::too_many_arguments)]
    pub async fn agent_call(
        &self,
        owner: String,
        name: String,
        args: JsValue,
        inquirer: Option<Function>,
        answerer: Option<Function>,
        runner: Function,
        stateful: Option<Object>,
        deadline_ms: f64,
        signal: Option<web_sys::AbortSignal>,
    ) -> Result<JsValue, JsValue> {
        let arguments: Map<String, Value> = match serde_wasm_bindgen::from_value(args) {
            Ok(a) => a,
            Err(e) => {
                let problem = format!("tool '{name}': the arguments must be an object of the tool's parameters ({e})");
                return outcome_js(&ExecutionOutcome::failed("", problem), false, &[]);
            }
        };
        let component = self.tools.borrow().get(&name).map(|t| t.component().to_owned()).unwrap_or_default();
        let now = Duration::from_secs_f64(js_sys::Date::now() / 1000.0);
        let session = self.owners.session(&owner, now).await;
        let saving = match &session {
            Ok(s) if self.store().keeps_records() => {
                Some(Saving { owner: owner.clone(), session: s.clone(), spawned: Rc::default() })
            }
            _ => None,
        };
        // The core's session takes `Arc<dyn StatefulTools>`; one thread here.
        #[allow(clippy::arc_with_non_send_sync)]
        let web = Arc::new(WebTools {
            oneshot: JcoRuntime {
                host: self.clone(),
                component,
                files: None,
                inquirer,
                runner,
                changed: RefCell::default(),
                blocks: RefCell::new(false),
                failure: RefCell::default(),
            },
            stateful,
            deadline: Duration::from_secs_f64(deadline_ms.max(0.0) / 1000.0),
            saving,
        });
        let tools: Arc<dyn StatefulTools> = web.clone();
        let answerer: Box<dyn Answerer> = match answerer {
            Some(f) => Box::new(JsAnswerer(f)),
            None => Box::new(NoAnswerer),
        };
        let reply = match session {
            Ok(session) => match self.revive(&web, &name, &arguments).await {
                Some(reply) => reply,
                None => {
                    let call = ToolCall::new(name.clone(), "", arguments);
                    // Stop: a call run to its end aborts its instance; a command gives up.
                    let _hook = signal.map(|s| AbortHook::new(s, call.cancel.clone()));
                    session.agent_call(&tools, call, answerer.as_ref()).await
                }
            },
            Err(e) => Err(e),
        };
        if let (Some(saving), Ok(CallReply::Handle { id, .. })) = (&web.saving, &reply) {
            self.move_spawned(saving, id).await;
        }
        if let Some(e) = web.oneshot.failure.take() {
            return Err(e);
        }
        // A command on a handle reports what it changed to the host (the handle outlives this
        // call's runtime); commands of other calls running meanwhile are counted too.
        let mut changed = web.oneshot.changed.borrow().clone();
        changed.extend(self.handle_changes.borrow_mut().drain(..));
        changed.sort();
        changed.dedup();
        match reply {
            Ok(CallReply::Outcome(outcome)) => outcome_js(&outcome, *web.oneshot.blocks.borrow(), &changed),
            Ok(CallReply::Handle { id, state }) => {
                let val = state.to_handle_response(&id);
                let result = surface::to_mcp(&surface::call_result(&name, CallReply::Handle { id, state }));
                let changed: Array = changed.iter().map(|p| JsValue::from_str(p)).collect();
                Ok(obj(&[
                    ("tag", "handle".into()),
                    ("val", to_value(&val)?),
                    ("result", to_value(&result)?),
                    ("changed", changed.into()),
                ]))
            }
            Err(e) => outcome_js(&ExecutionOutcome::failed("", e.to_string()), false, &changed),
        }
    }

    /// The live handles of `owner`: `[{id, tool, state, question?}]` (`state` is `running`,
    /// `waiting` or `busy` while a command runs on it).
    pub fn handles(&self, owner: &str) -> Result<JsValue, JsValue> {
        to_value(&self.owners.list(owner))
    }

    /// End `owner`'s handles (the turn ended, the caller left): each is aborted — its instance
    /// dropped, its Worker terminated — and a command running on one is stopped where it stands.
    #[wasm_bindgen(js_name = closeHandles)]
    pub async fn close_handles(&self, owner: String) {
        self.owners.close_owner(&owner).await;
    }
}
