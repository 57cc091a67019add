//! Calls as an agent makes them (RFD 009), through the core's handle session
//! ([`jp_core::handles::session`]): the native `App` is its [`StatefulTools`] — processes,
//! wasmtime and MCP servers behind one policy — and the session dispatches `action`s to the
//! owner's handles and runs other calls to their end.

use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use jp_core::BoxFuture;
use jp_core::agent::surface::{AgentTool, ToolFacts};
use jp_core::handles::{StatefulTools, run_to_end};
use jp_core::runtime::{ExecutionOutcome, RuntimeError, SpawnResult, ToolCall};
use jp_core::schema::{StatefulAction, flat_stateful_schema, stateful_schema};
use serde_json::Value;

use super::App;
use crate::sandbox::SandboxMode;

/// Who answers a tool's own questions (a `waiting` state, a `NeedsInput`) during a call that
/// runs to its end — the core's, shared with the page and the edge.
pub use jp_core::runtime::call::{Answerer, NoAnswerer};

/// What an agent's call produced (the core's agent surface owns it).
pub use jp_core::agent::surface::CallReply;

/// The live handles of one owner (an MCP session, a stateless principal's scope, an agent
/// turn): the core's session. Closing it aborts every handle.
pub use jp_core::handles::HandleSession as Handles;

/// The origin of [`StatefulTools::now`] for this process.
static STARTED: LazyLock<Instant> = LazyLock::new(Instant::now);

impl StatefulTools for App {
    fn actions(&self, tool: &str) -> Vec<StatefulAction> {
        self.stateful_actions(tool)
    }

    fn live(&self, tool: &str) -> bool {
        self.tool(tool).is_ok_and(|entry| self.runtime_of(&entry).live(tool, &entry.config))
    }

    fn spawn(&self, call: ToolCall) -> BoxFuture<'_, SpawnResult> {
        Box::pin(async move {
            let name = call.name.clone();
            self.check_arguments(&name, &call.arguments).await?;
            let entry = self.tool(&name)?;
            // The runtime enforces the policy resolved at load: the one listings and
            // annotations show.
            let mut call = call;
            call.policy = Some(entry.policy());
            self.runtime_of(&entry).spawn(call, &entry.config, self.fetch_wait).await
        })
    }

    fn call(&self, call: ToolCall) -> BoxFuture<'_, Result<ExecutionOutcome, RuntimeError>> {
        Box::pin(App::call(self, call))
    }

    fn timeout(&self, _: &str) -> Duration {
        self.timeout
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }

    fn now(&self) -> Duration {
        STARTED.elapsed()
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

    /// Run a call to its end (RFD 009 one-shot wrapping, [`run_to_end`]).
    pub async fn run_to_end(
        self: &Arc<Self>,
        call: ToolCall,
        answerer: &dyn Answerer,
    ) -> Result<ExecutionOutcome, RuntimeError> {
        let tools: Arc<dyn StatefulTools> = self.clone();
        run_to_end(&tools, call, answerer).await
    }

    /// One call of an agent, its handles kept by `handles` (the core's session dispatch).
    pub async fn agent_call(
        self: &Arc<Self>,
        call: ToolCall,
        handles: &Handles,
        answerer: &dyn Answerer,
    ) -> Result<CallReply, RuntimeError> {
        self.tool(&call.name)?;
        let tools: Arc<dyn StatefulTools> = self.clone();
        handles.agent_call(&tools, call, answerer).await
    }

    /// How long a stateful `fetch`/`apply` waits for a change.
    pub fn fetch_wait(&self) -> Duration {
        self.fetch_wait
    }
}
