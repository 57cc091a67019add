//! [`BuiltinRuntime`] (D10): builtin tools run in-process. A tool is our own code written
//! against [`jp_tool::Host`] only; its host calls become typed [`HostRequest`]s served directly by
//! the core [`Dispatcher`](jp_core::host::Dispatcher) — the same policy, inquiries and trace events
//! as a VFS tool, without a subprocess or JSON in between.
//!
//! The tool runs on a blocking thread (its `Host` is synchronous); each request is driven to
//! completion on the runtime from there. Cancellation ends the call at once; the tool's thread
//! finishes the request it is in (writes are atomic) and every later request is refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use jp_core::host::{DispatchEvents, HostError, NoEvents};
use jp_core::policy::AccessPolicy;
use jp_core::protocol::{HostRequest, Id};
use jp_core::runtime::{ExecutionOutcome, RuntimeError, ToolCall, ToolConfig};
use jp_tool::{Call, DirectHost, Reply, ToolSpec};

use crate::runtime::services::HostServices;

/// Runs builtin tools in this process.
#[derive(Debug)]
pub struct BuiltinRuntime {
    services: HostServices,
    tools: &'static [ToolSpec],
    /// Each tool's compiled policy (the configuration does not change while `jp` runs).
    policies: std::sync::Mutex<std::collections::HashMap<String, Arc<AccessPolicy>>>,
}

impl BuiltinRuntime {
    /// A runtime serving `tools` with these services.
    pub fn new(services: HostServices, tools: &'static [ToolSpec]) -> Self {
        Self { services, tools, policies: std::sync::Mutex::default() }
    }

    /// The tool's policy, compiled once (its table's, or the default: workspace read-only for
    /// `jp_fs_tools::READ_ONLY_TOOLS`, writable for the others).
    fn compiled(&self, name: &str, config: &ToolConfig) -> Result<Arc<AccessPolicy>, RuntimeError> {
        let mut policies = self.policies.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(p) = policies.get(name) {
            return Ok(p.clone());
        }
        let default = jp_core::runtime::default_policy(name, config, !jp_fs_tools::READ_ONLY_TOOLS.contains(&name));
        let policy = self.services.compile(config, default)?;
        policies.insert(name.to_owned(), policy.clone());
        Ok(policy)
    }

    /// Whether it has a tool of this name.
    pub fn has(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name == name)
    }

    /// Run one call under the tool's policy (`default` without a `sandbox`/`access` table).
    pub async fn run(
        &self,
        call: ToolCall,
        config: &ToolConfig,
        default: AccessPolicy,
    ) -> Result<ExecutionOutcome, RuntimeError> {
        let policy = self.services.policy(&call, config, default)?;
        self.run_compiled(call, config, policy).await
    }

    /// [`run`](Self::run) with the tool's policy already compiled (a host that runs a tool many
    /// times compiles it once).
    pub async fn run_compiled(
        &self,
        call: ToolCall,
        config: &ToolConfig,
        policy: Arc<AccessPolicy>,
    ) -> Result<ExecutionOutcome, RuntimeError> {
        let spec = *self
            .tools
            .iter()
            .find(|t| t.name == call.name)
            .ok_or_else(|| RuntimeError::Misrouted { tool: call.name.clone(), runtime: "builtin" })?;
        let dispatcher = self.services.dispatcher(&call, policy);
        let trace = self.services.trace.clone();
        let runtime = tokio::runtime::Handle::current();
        let cancel = call.cancel.clone();
        let tool_call = Call {
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            answers: call.answers.clone(),
            options: config.options.clone(),
        };
        let work = tokio::task::spawn_blocking(move || {
            let next = AtomicI64::new(0);
            let events: &dyn DispatchEvents = match &trace {
                Some(t) => t.as_ref(),
                None => &NoEvents,
            };
            let host = DirectHost::new(|request: HostRequest| {
                if cancel.is_cancelled() {
                    return Err(HostError::Cancelled("the call was cancelled".into()));
                }
                let id = Id::Number(next.fetch_add(1, Ordering::Relaxed) + 1);
                runtime.block_on(dispatcher.handle(&request, &id, events))
            });
            (spec.run)(&host, &tool_call)
        });
        let reply = tokio::select! {
            r = work => r.map_err(|e| RuntimeError::Protocol {
                tool: call.name.clone(),
                message: format!("the builtin tool failed: {e}"),
            })?,
            () = call.cancel.cancelled() => return Ok(ExecutionOutcome::Cancelled { id: call.id }),
        };
        let id = call.id;
        Ok(match reply {
            Reply::Result(r) => ExecutionOutcome::Completed { id, result: Ok(r) },
            Reply::Error(e) => ExecutionOutcome::Completed { id, result: Err(e) },
            Reply::NeedsInput(question) => ExecutionOutcome::NeedsInput { id, question },
        })
    }
}

impl jp_core::runtime::ToolRuntime for BuiltinRuntime {
    fn own_schema(&self) -> Option<String> {
        // These tools are this very binary in tool mode: its answer to the schema action is
        // this table, so it is read here instead of spawning `jp __tool`.
        Some(jp_tool::schema_response(self.tools).to_string())
    }

    fn execute<'a>(&'a self, call: ToolCall, config: &'a ToolConfig) -> jp_core::runtime::Execution<'a> {
        Box::pin(async move {
            let policy = match &call.policy {
                Some(resolved) => resolved.clone(),
                None => self.compiled(&call.name, config)?,
            };
            self.run_compiled(call, config, policy).await
        })
    }
}
