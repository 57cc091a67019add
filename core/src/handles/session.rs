//! One owner's handles as an agent drives them (RFD 009): a call with `action` goes to the
//! owner's registry ([`HandleSession::agent_call`]); a call without it runs to its end
//! ([`run_to_end`]) — a live stateful tool is spawned and fetched until it stops, its questions
//! answered by an [`Answerer`] and applied to the live instance; a one-shot tool that needs
//! input is run again with the accumulated answers.
//!
//! Where tools run is the platform's ([`StatefulTools`]): the native `App` (processes, wasmtime),
//! jp-web in the page (a Worker per live component) and at the edge (instances kept by the
//! isolate). Who owns a session is the platform's too — an MCP session, an agent turn, an
//! authenticated principal's scope ([`HandleOwners`]); another owner's ids mean nothing here.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Poll;
use std::time::Duration;

use super::registry::{AnyToolHandle, ApplyInput, Checkout, DEFAULT_MAX_LIVE, HandleError, HandleRegistry};
use crate::BoxFuture;
use crate::agent::surface::CallReply;
use crate::cancel::{CancellationToken, or_cancelled};
use crate::maybe::{MaybeSend, MaybeSync};
use crate::runtime::call::{Answerer, run_answered};
use crate::runtime::{ExecutionOutcome, RuntimeError, SpawnResult, ToolCall};
use crate::schema::StatefulAction;
use crate::state::{ToolCommand, ToolError, ToolResult, ToolState};

/// What a platform gives a handle session: its tools and a clock.
pub trait StatefulTools: MaybeSend + MaybeSync {
    /// The RFD 009 actions tool `tool` offers (empty: one-shot).
    fn actions(&self, tool: &str) -> Vec<StatefulAction>;
    /// Whether a stateful `tool` keeps a live instance between commands (a process, a
    /// component instance); the others are run again with the answers.
    fn live(&self, tool: &str) -> bool;
    /// Start a live stateful tool (its arguments checked and its policy applied as for any
    /// call): its first state, and its handle unless it stopped at once.
    fn spawn(&self, call: ToolCall) -> BoxFuture<'_, SpawnResult>;
    /// Run a call once (the platform's one-shot path).
    fn call(&self, call: ToolCall) -> BoxFuture<'_, Result<ExecutionOutcome, RuntimeError>>;
    /// The most a call of `tool` run to its end may take.
    fn timeout(&self, tool: &str) -> Duration;
    /// Resolve after `duration`.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
    /// The time now, from any fixed origin (idle expiry compares two of them).
    fn now(&self) -> Duration;
}

/// What one owner may keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Live handles at once.
    pub max_handles: usize,
    /// How long a handle may sit unused before it is aborted.
    pub max_idle: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self { max_handles: DEFAULT_MAX_LIVE, max_idle: Duration::from_secs(30 * 60) }
    }
}

/// The live handles of one owner. Closing it aborts every handle, including one a call is
/// working with when it closes.
pub struct HandleSession {
    registry: Mutex<HandleRegistry>,
    closed: AtomicBool,
    limits: SessionLimits,
}

impl Default for HandleSession {
    fn default() -> Self {
        Self::new(SessionLimits::default())
    }
}

impl std::fmt::Debug for HandleSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandleSession").field("live", &self.ids()).finish()
    }
}

/// A handle for a tool that stopped at once (so that `spawn` always returns an id).
struct Finished;

impl AnyToolHandle for Finished {
    fn fetch(&mut self) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        Box::pin(async { Err(ToolError::new("the tool has stopped")) })
    }
    fn apply(&mut self, _: ApplyInput) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        Box::pin(async { Err(ToolError::new("the tool has stopped")) })
    }
    fn abort(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// Re-runs a one-shot tool with the accumulated answers (RFD 009: for a tool that exited,
/// `apply` means "run again with this answer").
struct Rerun {
    tools: Arc<dyn StatefulTools>,
    call: ToolCall,
    /// The state of its last run (waiting: it is kept only while it asks).
    state: ToolState,
}

impl AnyToolHandle for Rerun {
    /// Nothing runs between answers: the state is the last run's, its question still open
    /// (the handle stays for the `apply` that answers it).
    fn fetch(&mut self) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        Box::pin(async { Ok(self.state.clone()) })
    }
    fn apply(&mut self, input: ApplyInput) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        Box::pin(async move {
            let ApplyInput::Answer { question_id, value } = input else {
                return Err(ToolError::new("this tool takes input only as answers to its questions"));
            };
            self.call.answers.insert(question_id, value);
            // Its own token: the spawn call's is long gone (a cancelled apply is dropped).
            let mut call = self.call.clone();
            call.cancel = CancellationToken::new();
            let outcome = self.tools.call(call).await.map_err(|e| ToolError::new(e.to_string()))?;
            self.state = state_of(outcome);
            Ok(self.state.clone())
        })
    }
    fn abort(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

fn state_of(outcome: ExecutionOutcome) -> ToolState {
    match outcome {
        ExecutionOutcome::Completed { result, .. } => ToolState::Stopped { result: result.map(|r| r.to_text()) },
        ExecutionOutcome::NeedsInput { question, .. } => ToolState::Waiting { content: None, question },
        ExecutionOutcome::Cancelled { .. } => ToolState::Stopped { result: Err(ToolError::new("cancelled")) },
    }
}

/// Start a stateful tool: a live one through the platform, any other run once and kept as a
/// [`Rerun`] while it waits for an answer.
async fn spawn(tools: &Arc<dyn StatefulTools>, call: ToolCall) -> SpawnResult {
    if tools.live(&call.name) {
        return tools.spawn(call).await;
    }
    let state = state_of(tools.call(call.clone()).await?);
    let handle = (!state.is_stopped())
        .then(|| Box::new(Rerun { tools: tools.clone(), call, state: state.clone() }) as Box<dyn AnyToolHandle>);
    Ok((state, handle))
}

/// How a bounded wait ended.
enum Ended<T> {
    Done(T),
    Cancelled,
    TimedOut,
}

/// Resolve `work`, unless `cancel` fires or `timer` resolves first (both looked at first, so a
/// stop is never overtaken by more work).
async fn bounded<F: Future>(work: F, cancel: &CancellationToken, timer: BoxFuture<'static, ()>) -> Ended<F::Output> {
    let mut work = pin!(work);
    let mut cancelled = pin!(cancel.cancelled());
    let mut timer = timer;
    std::future::poll_fn(|cx| {
        if cancelled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Ended::Cancelled);
        }
        if timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Ended::TimedOut);
        }
        work.as_mut().poll(cx).map(Ended::Done)
    })
    .await
}

fn command_id(command: &ToolCommand) -> String {
    match command {
        ToolCommand::Fetch { id } | ToolCommand::Apply { id, .. } | ToolCommand::Abort { id } => id.clone(),
        ToolCommand::Spawn { .. } => String::new(),
    }
}

fn action_of(command: &ToolCommand) -> StatefulAction {
    match command {
        ToolCommand::Spawn { .. } => StatefulAction::Spawn,
        ToolCommand::Fetch { .. } => StatefulAction::Fetch,
        ToolCommand::Apply { .. } => StatefulAction::Apply,
        ToolCommand::Abort { .. } => StatefulAction::Abort,
    }
}

/// A live handle as a listing shows it (the page's agent panel, `jp` diagnostics).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LiveHandle {
    /// `h_1`, …
    pub id: String,
    /// Its tool.
    pub tool: String,
    /// `running` or `waiting` (`busy` while a command runs on it).
    pub state: String,
    /// The question a waiting handle asks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
}

impl HandleSession {
    /// An empty session with these limits.
    pub fn new(limits: SessionLimits) -> Self {
        Self::continuing(limits, 0)
    }

    /// An empty session whose ids follow the `issued` ones of its owner's earlier session.
    pub fn continuing(limits: SessionLimits, issued: u64) -> Self {
        Self {
            registry: Mutex::new(HandleRegistry::continuing(limits.max_handles, issued)),
            closed: AtomicBool::new(false),
            limits,
        }
    }

    /// How many ids this session's owner was issued.
    pub fn issued(&self) -> u64 {
        self.lock().issued()
    }

    fn lock(&self) -> MutexGuard<'_, HandleRegistry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ids of the live handles.
    pub fn ids(&self) -> Vec<String> {
        self.lock().ids()
    }

    /// The live handles and what they are doing.
    pub fn list(&self) -> Vec<LiveHandle> {
        let registry = self.lock();
        let listed = registry.list();
        let mut out: Vec<LiveHandle> = registry
            .ids()
            .into_iter()
            .map(|id| match listed.iter().find(|(i, ..)| *i == id) {
                Some((_, tool, state)) => LiveHandle {
                    id,
                    tool: tool.clone(),
                    state: state.name().into(),
                    question: match state {
                        ToolState::Waiting { question, .. } => Some(question.text.clone()),
                        _ => None,
                    },
                },
                None => LiveHandle { id, tool: String::new(), state: "busy".into(), question: None },
            })
            .collect();
        out.sort_by_key(|h| h.id.trim_start_matches("h_").parse::<u64>().unwrap_or(u64::MAX));
        out
    }

    /// The id the next spawn will be given, unless another spawn registers first.
    pub fn next_id(&self) -> String {
        format!("h_{}", self.lock().issued() + 1)
    }

    /// Whether handle `id` is live in this session.
    pub fn holds(&self, id: &str) -> bool {
        self.lock().holds(id)
    }

    /// Count `issued` ids as issued (see [`HandleRegistry::raise_issued`]).
    pub fn raise_issued(&self, issued: u64) {
        self.lock().raise_issued(issued);
    }

    /// Take a rebuilt handle back under its old `id` (see [`HandleRegistry::adopt`]); refused
    /// (and the handle aborted) once the session is closed, when the id is live, or with no
    /// room.
    pub async fn adopt(
        &self,
        id: &str,
        tool: &str,
        state: ToolState,
        handle: Box<dyn AnyToolHandle>,
        now: Duration,
    ) -> Result<(), RuntimeError> {
        let refused = {
            let mut registry = self.lock();
            if self.closed.load(Ordering::SeqCst) {
                (RuntimeError::Other("the session has ended".into()), handle)
            } else {
                match registry.adopt(id, tool, state, handle, now) {
                    Ok(()) => return Ok(()),
                    Err((e, handle)) => (RuntimeError::Input(format!("tool '{tool}': {e}")), handle),
                }
            }
        };
        let (error, mut handle) = refused;
        handle.abort().await;
        Err(error)
    }

    /// The limits this session keeps.
    pub fn limits(&self) -> SessionLimits {
        self.limits
    }

    /// Whether the session has ended.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Whether no handle is live.
    pub fn is_empty(&self) -> bool {
        self.lock().ids().is_empty()
    }

    /// Abort the handles that sat unused for longer than the session's idle limit.
    pub async fn expire(&self, now: Duration) {
        let idle = self.lock().take_idle(now, self.limits.max_idle);
        for h in idle {
            h.abort().await;
        }
    }

    /// Register a spawned tool; after [`close`](Self::close), or with no room left, it is
    /// aborted at once instead.
    async fn register(
        &self,
        tool: &str,
        state: &ToolState,
        handle: Option<Box<dyn AnyToolHandle>>,
        now: Duration,
    ) -> Result<String, RuntimeError> {
        let handle = handle.unwrap_or_else(|| Box::new(Finished));
        let refused = {
            // `closed` is set under the same lock, so no handle slips in after `close`.
            let mut registry = self.lock();
            if self.closed.load(Ordering::SeqCst) {
                (RuntimeError::Other("the session has ended".into()), handle)
            } else {
                match registry.register(tool, state.clone(), handle, now) {
                    Ok(id) => return Ok(id),
                    Err((e, handle)) => (RuntimeError::Input(format!("tool '{tool}': {e}")), handle),
                }
            }
        };
        let (error, mut handle) = refused;
        handle.abort().await;
        Err(error)
    }

    /// Run a command on a handle. Cancelling the call gives up on the command (the handle is
    /// given back as it was and stays usable — `abort` it to stop the tool).
    async fn command(
        &self,
        tools: &Arc<dyn StatefulTools>,
        tool: &str,
        command: ToolCommand,
        cancel: &CancellationToken,
    ) -> Result<ToolState, RuntimeError> {
        let id = command_id(&command);
        let checked_out = self.lock().checkout(tool, &command);
        let mut checkout = match checked_out {
            Ok(c) => c,
            // An abort of a handle another call is running a command on: that command stopped
            // it (RFD 009: abort preempts).
            Err(HandleError::Preempted { .. }) => {
                return Ok(ToolState::Stopped { result: Err(ToolError::new("aborted")) });
            }
            Err(e) => return Err(RuntimeError::Input(e.to_string())),
        };
        let state = or_cancelled(checkout.run(command), cancel).await.ok();
        let give_back = {
            let mut registry = self.lock();
            if !self.closed.load(Ordering::SeqCst) {
                registry.checkin(checkout, tools.now());
                None
            } else if checkout.state().is_stopped() {
                // Preempted by `close`: the command already stopped the tool.
                None
            } else {
                Some(checkout)
            }
        };
        if let Some(c) = give_back {
            Checkout::abort(c).await;
        }
        match state {
            Some(s) => s.map_err(|e| RuntimeError::Input(format!("{id}: {e}"))),
            None => Err(RuntimeError::Other(format!("the {id} command was cancelled; the handle is unchanged"))),
        }
    }

    /// One call of an agent: a stateful command when the tool offers actions and the
    /// arguments carry `action`, otherwise a call run to its end. Handles idle past the
    /// session's limit are aborted first.
    pub async fn agent_call(
        &self,
        tools: &Arc<dyn StatefulTools>,
        mut call: ToolCall,
        answerer: &dyn Answerer,
    ) -> Result<CallReply, RuntimeError> {
        self.expire(tools.now()).await;
        let name = call.name.clone();
        let actions = tools.actions(&name);
        if actions.is_empty() {
            return run_to_end(tools, call, answerer).await.map(CallReply::Outcome);
        }
        let Some(command) = ToolCommand::from_arguments(&call.arguments)
            .map_err(|e| RuntimeError::Input(format!("tool '{name}': {e}")))?
        else {
            return run_to_end(tools, call, answerer).await.map(CallReply::Outcome);
        };
        let action = action_of(&command);
        if !actions.contains(&action) {
            return Err(RuntimeError::Input(format!(
                "tool '{name}' does not support action '{}'; it supports: {}",
                action.name(),
                actions.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
            )));
        }
        match command {
            ToolCommand::Spawn { args } => {
                if self.is_closed() {
                    return Err(RuntimeError::Other("the session has ended".into()));
                }
                if !self.lock().has_room() {
                    let limit = HandleError::Limit { limit: self.limits.max_handles };
                    return Err(RuntimeError::Input(format!("tool '{name}': {limit}")));
                }
                call.arguments = args;
                let cancel = call.cancel.clone();
                let (state, mut handle) = spawn(tools, call).await?;
                if cancel.is_cancelled() {
                    // Nobody will see the id: the tool must not live on.
                    if let Some(h) = handle.as_mut() {
                        h.abort().await;
                    }
                    return Ok(CallReply::Outcome(ExecutionOutcome::Cancelled { id: String::new() }));
                }
                let id = self.register(&name, &state, handle, tools.now()).await?;
                Ok(CallReply::Handle { id, state })
            }
            command => {
                let id = command_id(&command);
                let state = self.command(tools, &name, command, &call.cancel).await?;
                Ok(CallReply::Handle { id, state })
            }
        }
    }

    /// End of the session: abort every live handle; a command in progress is preempted (its
    /// tool stopped where it stands) and its handle aborted when the call gives it back.
    pub async fn close(&self) {
        let drained = {
            let mut registry = self.lock();
            self.closed.store(true, Ordering::SeqCst);
            registry.preempt_all();
            registry.drain()
        };
        for h in drained {
            h.abort().await;
        }
    }
}

/// Run a call to its end (RFD 009 one-shot wrapping): a live stateful tool is spawned and
/// fetched until it stops (its output gathered into the result), a question is answered by
/// `answerer` and applied; other tools that need input are run again with the answers. Without
/// an answer the outcome is the question (`NeedsInput`).
pub async fn run_to_end(
    tools: &Arc<dyn StatefulTools>,
    call: ToolCall,
    answerer: &dyn Answerer,
) -> Result<ExecutionOutcome, RuntimeError> {
    let name = call.name.clone();
    if tools.actions(&name).is_empty() || !tools.live(&name) {
        return run_answered(call, answerer, |call| tools.call(call)).await;
    }
    let (id, cancel) = (call.id.clone(), call.cancel.clone());
    // Answers given up front (`--answer`) are applied when their question comes.
    let mut given = call.answers.clone();
    let timeout = tools.timeout(&name);
    let (mut state, handle) = tools.spawn(call).await?;
    let Some(mut handle) = handle else { return Ok(completed(id, String::new(), state)) };
    let mut gathered = RunOutput::default();
    let mut pause = Duration::ZERO;
    let work = async {
        loop {
            match state {
                ToolState::Stopped { .. } => return Ok(state),
                ToolState::Running { content } => {
                    let quiet = content.as_deref().is_none_or(str::is_empty);
                    gathered.push(content.as_deref().unwrap_or_default());
                    // Fetched again after a pause — longer while it says nothing — through the
                    // host's timer, so that the deadline and a Stop get their turn even on a
                    // host with one thread and a tool that answers at once forever.
                    pause = if quiet { (pause * 2).clamp(MIN_POLL, MAX_POLL) } else { Duration::ZERO };
                    tools.sleep(pause).await;
                    state = handle.fetch().await.unwrap_or_else(|e| ToolState::Stopped { result: Err(e) });
                }
                ToolState::Waiting { content, question } => {
                    gathered.push(content.as_deref().unwrap_or_default());
                    let answer = match given.remove(&question.id) {
                        Some(a) => a,
                        None => match answerer.answer(&name, &question).await {
                            Some(a) => a,
                            None => return Err(question),
                        },
                    };
                    let input = ApplyInput::Answer { question_id: question.id.clone(), value: answer };
                    state = handle.apply(input).await.unwrap_or_else(|e| ToolState::Stopped { result: Err(e) });
                }
            }
        }
    };
    let ended = bounded(work, &cancel, tools.sleep(timeout)).await;
    match ended {
        Ended::Done(Ok(state)) => Ok(completed(id, gathered.text, state)),
        Ended::Done(Err(question)) => {
            handle.abort().await;
            Ok(ExecutionOutcome::NeedsInput { id, question })
        }
        Ended::Cancelled => {
            handle.abort().await;
            Ok(ExecutionOutcome::Cancelled { id })
        }
        Ended::TimedOut => {
            handle.abort().await;
            Err(RuntimeError::Timeout { tool: name, seconds: timeout.as_secs() })
        }
    }
}

/// The first pause before fetching a quiet running tool again when it is run to its end.
const MIN_POLL: Duration = Duration::from_millis(1);
/// The longest pause between two fetches of a quiet running tool.
const MAX_POLL: Duration = Duration::from_millis(100);

/// Output a stateful tool printed while it was run to its end, up to the content cap.
#[derive(Default)]
struct RunOutput {
    text: String,
    truncated: bool,
}

impl RunOutput {
    fn push(&mut self, content: &str) {
        if self.truncated || content.is_empty() {
            return;
        }
        let room = crate::protocol::DEFAULT_MAX_CONTENT.saturating_sub(self.text.len());
        if content.len() <= room {
            self.text.push_str(content);
        } else {
            let mut cut = room;
            while !content.is_char_boundary(cut) {
                cut -= 1;
            }
            self.text.push_str(&content[..cut]);
            self.text.push_str("\n[… more output was not kept: over the 10 MiB limit]\n");
            self.truncated = true;
        }
    }
}

/// The outcome of a stateful tool run to its end: the output it gathered, then its result.
fn completed(id: String, gathered: String, state: ToolState) -> ExecutionOutcome {
    let result = match state {
        ToolState::Stopped { result: Ok(r) } if gathered.is_empty() => Ok(ToolResult::text(r)),
        ToolState::Stopped { result: Ok(r) } => {
            let sep = if gathered.ends_with('\n') { "" } else { "\n" };
            Ok(ToolResult::text(format!("{gathered}{sep}{r}")))
        }
        ToolState::Stopped { result: Err(mut e) } => {
            if !gathered.is_empty() {
                e.message = format!("{}\n(output before it stopped:)\n{gathered}", e.message);
            }
            Err(e)
        }
        other => Err(ToolError::new(format!("the tool did not stop (it is {})", other.name()))),
    };
    ExecutionOutcome::Completed { id, result }
}

/// Owners whose issued-id count a [`HandleOwners`] remembers after their session is dropped.
pub const REMEMBERED_OWNERS: usize = 4096;

/// The handle sessions of many owners in one server (stateless MCP requests natively, the
/// edge): each owner — an authenticated principal and the scope it named, never shown — gets
/// its own session, so another owner's ids are unknown to it. Sessions with no handles left are
/// dropped when the next owner is looked up (unless a call still holds them); at most `max_owners` are kept.
pub struct HandleOwners {
    sessions: Mutex<BTreeMap<String, Arc<HandleSession>>>,
    /// How many ids owners whose session was dropped had been issued, so that a later session
    /// of theirs never reissues one (at most [`REMEMBERED_OWNERS`]; past it the oldest go).
    issued: Mutex<(BTreeMap<String, u64>, VecDeque<String>)>,
    limits: SessionLimits,
    max_owners: usize,
}

impl std::fmt::Debug for HandleOwners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandleOwners").field("owners", &self.lock().len()).finish()
    }
}

impl HandleOwners {
    /// No owners yet; each gets a session with `limits`, and at most `max_owners` are kept.
    pub fn new(limits: SessionLimits, max_owners: usize) -> Self {
        Self { sessions: Mutex::default(), issued: Mutex::default(), limits, max_owners }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Arc<HandleSession>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session of `owner` (made on first use), after aborting every owner's idle handles.
    /// Too many owners with live handles is an error that says so.
    pub async fn session(&self, owner: &str, now: Duration) -> Result<Arc<HandleSession>, RuntimeError> {
        self.expire(now).await;
        let mut sessions = self.lock();
        // Kept: sessions with handles, and those a call still holds (a spawn in progress); the
        // others are dropped, what they issued remembered.
        let idle: Vec<String> = sessions
            .iter()
            .filter(|(key, s)| key.as_str() != owner && s.is_empty() && Arc::strong_count(s) == 1)
            .map(|(key, _)| key.clone())
            .collect();
        for key in idle {
            if let Some(s) = sessions.remove(&key) {
                self.remember(key, s.issued());
            }
        }
        if let Some(s) = sessions.get(owner) {
            return Ok(s.clone());
        }
        if sessions.len() >= self.max_owners {
            return Err(RuntimeError::Other(format!(
                "{} scopes hold live handles on this server, the most it keeps; abort their handles (action \"abort\") or wait until they are idle for {} s",
                self.max_owners,
                self.limits.max_idle.as_secs()
            )));
        }
        let issued = self.issued.lock().unwrap_or_else(PoisonError::into_inner).0.get(owner).copied().unwrap_or(0);
        // Shared across threads natively; on wasm32 its handles hold JS values (one thread).
        #[allow(clippy::arc_with_non_send_sync)]
        let s = Arc::new(HandleSession::continuing(self.limits, issued));
        sessions.insert(owner.to_owned(), s.clone());
        Ok(s)
    }

    fn remember(&self, owner: String, issued: u64) {
        let mut guard = self.issued.lock().unwrap_or_else(PoisonError::into_inner);
        let (counts, order) = &mut *guard;
        if counts.insert(owner.clone(), issued).is_none() {
            order.push_back(owner);
            if order.len() > REMEMBERED_OWNERS
                && let Some(oldest) = order.pop_front()
            {
                counts.remove(&oldest);
            }
        }
    }

    /// The live handles of `owner` (none when it has no session).
    pub fn list(&self, owner: &str) -> Vec<LiveHandle> {
        self.lock().get(owner).map(|s| s.list()).unwrap_or_default()
    }

    /// End `owner`'s session (a turn ended, an MCP session was deleted): its handles are
    /// aborted; its next call starts a new session.
    pub async fn close_owner(&self, owner: &str) {
        let session = self.lock().remove(owner);
        if let Some(s) = session {
            self.remember(owner.to_owned(), s.issued());
            s.close().await;
        }
    }

    /// Abort idle handles of every owner.
    pub async fn expire(&self, now: Duration) {
        let all: Vec<Arc<HandleSession>> = self.lock().values().cloned().collect();
        for s in all {
            s.expire(now).await;
        }
    }

    /// Close every owner's session (the server stops).
    pub async fn close(&self) {
        let all: Vec<Arc<HandleSession>> = std::mem::take(&mut *self.lock()).into_values().collect();
        for s in all {
            s.close().await;
        }
    }
}

#[cfg(test)]
mod tests;
