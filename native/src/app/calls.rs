//! Calls as an agent makes them (RFD 009): a stateful tool's `action` goes to the session's
//! handle registry ([`Handles`]); without `action` a call runs to its end — a stateful tool is
//! spawned and fetched until it stops, its questions answered by an [`Answerer`] and applied to
//! the live process; a one-shot tool that needs input is run again with the accumulated answers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jp_core::BoxFuture;
use jp_core::agent::surface::{AgentTool, ToolFacts};
use jp_core::cancel::CancellationToken;
use jp_core::handles::{AnyToolHandle, ApplyInput, HandleError, HandleRegistry};
use jp_core::runtime::call::run_answered;
use jp_core::runtime::{ExecutionOutcome, RuntimeError, ToolCall};
use jp_core::schema::{StatefulAction, flat_stateful_schema, stateful_schema};
use jp_core::state::{ToolCommand, ToolError, ToolResult, ToolState};
use serde_json::Value;

use super::App;
use crate::sandbox::SandboxMode;

/// Who answers a tool's own questions (a `waiting` state, a `NeedsInput`) during a call that
/// runs to its end — the core's, shared with the page and the edge.
pub use jp_core::runtime::call::{Answerer, NoAnswerer};

/// What an agent's call produced (the core's agent surface owns it).
pub use jp_core::agent::surface::CallReply;

/// The live handles of one agent session (an MCP connection; later, a turn). Closing it aborts
/// every handle, including one a call is working with when it closes.
#[derive(Default)]
pub struct Handles {
    registry: Mutex<HandleRegistry>,
    closed: AtomicBool,
}

impl std::fmt::Debug for Handles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handles").field("live", &self.ids()).finish()
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

impl Handles {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HandleRegistry> {
        self.registry.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Ids of the live handles.
    pub fn ids(&self) -> Vec<String> {
        self.lock().ids()
    }

    /// Register a spawned tool; after [`close`](Self::close) it is aborted at once instead
    /// (`None`: the session is over).
    async fn register(&self, tool: &str, state: &ToolState, handle: Option<Box<dyn AnyToolHandle>>) -> Option<String> {
        let mut handle = handle.unwrap_or_else(|| Box::new(Finished));
        {
            // `closed` is set under the same lock, so no handle slips in after `close`.
            let mut registry = self.lock();
            if !self.closed.load(Ordering::SeqCst) {
                return Some(registry.register(tool, state.clone(), handle));
            }
        }
        handle.abort().await;
        None
    }

    /// Run a command on a handle. Cancelling the call gives up on the command (the handle is
    /// given back as it was and stays usable — `abort` it to stop the tool).
    async fn command(
        &self,
        tool: &str,
        command: ToolCommand,
        cancel: &CancellationToken,
    ) -> Result<ToolState, RuntimeError> {
        let id = match &command {
            ToolCommand::Fetch { id } | ToolCommand::Apply { id, .. } | ToolCommand::Abort { id } => id.clone(),
            ToolCommand::Spawn { .. } => String::new(),
        };
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
        let state = tokio::select! {
            s = checkout.run(command) => Some(s),
            () = cancel.cancelled() => None,
        };
        let give_back = {
            let mut registry = self.lock();
            if self.closed.load(Ordering::SeqCst) {
                Some(checkout)
            } else {
                registry.checkin(checkout);
                None
            }
        };
        if let Some(c) = give_back {
            c.abort().await;
        }
        match state {
            Some(s) => s.map_err(|e| RuntimeError::Input(format!("{id}: {e}"))),
            None => Err(RuntimeError::Other(format!("the {id} command was cancelled; the handle is unchanged"))),
        }
    }

    /// End of the session: abort every live handle (their processes are stopped: `cancel`,
    /// SIGTERM, SIGKILL); handles a call still has are aborted when it gives them back.
    pub async fn close(&self) {
        let drained = {
            let mut registry = self.lock();
            self.closed.store(true, Ordering::SeqCst);
            registry.drain()
        };
        for h in drained {
            h.abort().await;
        }
    }
}

/// Re-runs a one-shot tool with the accumulated answers (RFD 009: for a tool that exited, `apply`
/// means "run again with this answer").
struct Rerun {
    app: Arc<App>,
    call: ToolCall,
}

impl AnyToolHandle for Rerun {
    fn fetch(&mut self) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        Box::pin(async { Err(ToolError::new("the tool is waiting for an answer: send it with apply")) })
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
            let outcome = self.app.call(call).await.map_err(|e| ToolError::new(e.to_string()))?;
            Ok(state_of(outcome))
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

impl App {
    /// The RFD 009 actions a tool declares (empty: one-shot): its runtime's own (the
    /// builtin `run` declares all four), else its table's `stateful` ones.
    pub fn stateful_actions(&self, name: &str) -> Vec<StatefulAction> {
        match self.tool(name) {
            Ok(e) => self
                .runtime_of(&e)
                .stateful_actions(name, &e.config)
                .unwrap_or_else(|| e.config.stateful.as_ref().map(|s| s.actions()).unwrap_or_default()),
            Err(_) => Vec::new(),
        }
    }

    /// The arguments' schema as an agent sees it: a stateful tool's in RFD 009's flat form
    /// (`action`, `id`, `input` and the spawn parameters; no top-level `oneOf`), or with
    /// `one_of` its `oneOf` form.
    pub async fn agent_schema(&self, name: &str, one_of: bool) -> Result<Value, RuntimeError> {
        let spawn = self.definition(name).await?.to_json_schema();
        let actions = self.stateful_actions(name);
        Ok(match (actions.is_empty(), one_of) {
            (true, _) => spawn,
            (false, false) => flat_stateful_schema(&spawn, &actions),
            (false, true) => stateful_schema(&spawn, &actions),
        })
    }

    /// Tool `name` as every agent sees it (the core's agent surface): description, schema,
    /// annotations from its policy, and the rule that says when the user is asked. Without the
    /// OS sandbox, what touches files directly (a stdio tool, the programs a tool runs) is held
    /// by nothing: it is described as able to do anything.
    pub async fn agent_tool(&self, name: &str) -> Result<AgentTool, RuntimeError> {
        let entry = self.tool(name)?;
        let definition = self.definition(name).await?;
        let input_schema = self.agent_schema(name, false).await?;
        let hints = entry.policy().hints();
        let direct = self.runs_direct(&entry) || hints.commands;
        Ok(AgentTool::new(ToolFacts {
            name,
            summary: definition.summary.as_deref(),
            description: definition.description.as_deref(),
            input_schema,
            hints,
            stateful: !self.stateful_actions(name).is_empty(),
            unconfined: self.sandbox_mode() == SandboxMode::Disabled && direct,
            run_mode: entry.config.run_mode,
        }))
    }

    /// Whether a stateful tool keeps a live process between commands (its runtime says: VFS
    /// tools and `run`); the others are run again with answers.
    fn live(&self, name: &str) -> bool {
        self.tool(name).is_ok_and(|entry| self.runtime_of(&entry).live(name, &entry.config))
    }

    /// Start a stateful tool: its first state, and its handle unless it stopped at once.
    pub async fn spawn(
        self: &Arc<Self>,
        call: ToolCall,
    ) -> Result<(ToolState, Option<Box<dyn AnyToolHandle>>), RuntimeError> {
        let name = call.name.clone();
        self.check_arguments(&name, &call.arguments).await?;
        let entry = self.tool(&name)?;
        // The runtime enforces the policy resolved at load: the one listings and annotations show.
        let mut call = call;
        call.policy = Some(entry.policy());
        let runtime = self.runtime_of(&entry);
        if runtime.live(&name, &entry.config) {
            return runtime.spawn(call, &entry.config, self.fetch_wait).await;
        }
        let state = state_of(self.call(call.clone()).await?);
        let handle =
            (!state.is_stopped()).then(|| Box::new(Rerun { app: self.clone(), call }) as Box<dyn AnyToolHandle>);
        Ok((state, handle))
    }

    /// Run a call to its end (RFD 009 one-shot wrapping): a live stateful tool is spawned and
    /// fetched until it stops (its output gathered into the result), a question is answered by
    /// `answerer` and applied; other tools that need input are run again with the answers.
    /// Without an answer the outcome is the question (`NeedsInput`).
    pub async fn run_to_end(
        self: &Arc<Self>,
        call: ToolCall,
        answerer: &dyn Answerer,
    ) -> Result<ExecutionOutcome, RuntimeError> {
        let name = call.name.clone();
        if self.stateful_actions(&name).is_empty() || !self.live(&name) {
            return run_answered(call, answerer, |call| Box::pin(self.call(call))).await;
        }
        let (id, cancel) = (call.id.clone(), call.cancel.clone());
        // Answers given up front (`--answer`) are applied when their question comes.
        let mut given = call.answers.clone();
        let timeout = self.timeout;
        let (mut state, handle) = self.spawn(call).await?;
        let Some(mut handle) = handle else { return Ok(completed(id, String::new(), state)) };
        let mut gathered = Gathered::default();
        let work = async {
            loop {
                match state {
                    ToolState::Stopped { .. } => return Ok(state),
                    ToolState::Running { content } => {
                        gathered.push(content.as_deref().unwrap_or_default());
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
        let ended = tokio::select! {
            r = work => r,
            () = cancel.cancelled() => {
                handle.abort().await;
                return Ok(ExecutionOutcome::Cancelled { id });
            }
            () = tokio::time::sleep(timeout) => {
                handle.abort().await;
                return Err(RuntimeError::Timeout { tool: name, seconds: timeout.as_secs() });
            }
        };
        match ended {
            Ok(state) => Ok(completed(id, gathered.text, state)),
            Err(question) => {
                handle.abort().await;
                Ok(ExecutionOutcome::NeedsInput { id, question })
            }
        }
    }

    /// One call of an agent: a stateful command when the tool declares actions and the
    /// arguments carry `action`, otherwise a call run to its end.
    pub async fn agent_call(
        self: &Arc<Self>,
        mut call: ToolCall,
        handles: &Handles,
        answerer: &dyn Answerer,
    ) -> Result<CallReply, RuntimeError> {
        let name = call.name.clone();
        self.tool(&name)?;
        let actions = self.stateful_actions(&name);
        if actions.is_empty() {
            return self.run_to_end(call, answerer).await.map(CallReply::Outcome);
        }
        let Some(command) = ToolCommand::from_arguments(&call.arguments)
            .map_err(|e| RuntimeError::Input(format!("tool '{name}': {e}")))?
        else {
            return self.run_to_end(call, answerer).await.map(CallReply::Outcome);
        };
        let action = match &command {
            ToolCommand::Spawn { .. } => StatefulAction::Spawn,
            ToolCommand::Fetch { .. } => StatefulAction::Fetch,
            ToolCommand::Apply { .. } => StatefulAction::Apply,
            ToolCommand::Abort { .. } => StatefulAction::Abort,
        };
        if !actions.contains(&action) {
            return Err(RuntimeError::Input(format!(
                "tool '{name}' does not support action '{}'; it supports: {}",
                action.name(),
                actions.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
            )));
        }
        match command {
            ToolCommand::Spawn { args } => {
                call.arguments = args;
                let cancel = call.cancel.clone();
                let (state, mut handle) = self.spawn(call).await?;
                if cancel.is_cancelled() {
                    // Nobody will see the id: the tool must not live on.
                    if let Some(h) = handle.as_mut() {
                        h.abort().await;
                    }
                    return Ok(CallReply::Outcome(ExecutionOutcome::Cancelled { id: String::new() }));
                }
                let Some(id) = handles.register(&name, &state, handle).await else {
                    return Err(RuntimeError::Other("the session has ended".into()));
                };
                Ok(CallReply::Handle { id, state })
            }
            command => {
                let id = match &command {
                    ToolCommand::Fetch { id } | ToolCommand::Apply { id, .. } | ToolCommand::Abort { id } => id.clone(),
                    ToolCommand::Spawn { .. } => String::new(),
                };
                let state = handles.command(&name, command, &call.cancel).await?;
                Ok(CallReply::Handle { id, state })
            }
        }
    }

    /// How long a stateful `fetch`/`apply` waits for a change.
    pub fn fetch_wait(&self) -> Duration {
        self.fetch_wait
    }
}

/// Output a stateful tool printed while it was run to its end, up to the content cap.
#[derive(Default)]
struct Gathered {
    text: String,
    truncated: bool,
}

impl Gathered {
    fn push(&mut self, content: &str) {
        if self.truncated || content.is_empty() {
            return;
        }
        let room = jp_core::protocol::DEFAULT_MAX_CONTENT.saturating_sub(self.text.len());
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
