//! [`McpRuntime`] (D10): tools of MCP servers that jp-host starts itself, **under the OS
//! sandbox**. An MCP server touches files directly, so — like a stdio tool — the kernel holds it
//! to the workspace as a whole (read-only or read-write per the server's policy), system
//! directories read+exec, its own program files and `read_paths` read, a private `HOME`/`TMPDIR`,
//! no network unless its policy allows some URL (then only through jp's egress proxy, per host
//! and port, for as long as the server runs: [`crate::egress`]), a clean environment plus the
//! variables it names, its own process group. A policy the kernel
//! cannot hold it to is refused with the reason.
//!
//! Each server starts on first use, once per `jp` process, and is shared by all its tools; one
//! that died is started again on the next call. Its stderr is drained (the tail kept for error
//! messages). It is an rmcp client over the pipes we spawned; requests the server makes of us
//! (elicitation, sampling, roots) reach the agent's client through `jp mcp` as its `forward`
//! says, and are declined otherwise ([`forward`](super::forward)), as are its notifications
//! passed on. What a server sends is capped ([`bounds`](super::bounds)): one message, the pages,
//! tools and bytes of `tools/list`, its requests waiting for an answer, its notifications queued.
//! Its prompts, resources, completions and logging level: [`requests`](super::requests).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use jp_core::host::DispatchEvents;
use jp_core::runtime::{ExecutionOutcome, McpServerConfig, RuntimeError};
use jp_core::state::ToolError;
use rmcp::model::{CallToolRequestParams, Tool};
use rmcp::service::{RoleClient, RunningService};

use super::bounds::ListError;
use super::forward::Hub;
use super::pipes::{RelayError, ServerPipes};
use super::wrapped::Wrapped;
use crate::process::GroupGuard;
use crate::runtime::services::HostServices;
use crate::runtime::tail::StderrTail;
use crate::sandbox::SandboxMode;

/// How long a server has to answer `initialize` and `tools/list`.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Most of a server's stderr kept for error messages.
pub(super) const STDERR_TAIL: usize = 8 * 1024;

/// A started server (or a connection to a remote one: no process, no stderr).
pub(super) struct Server {
    pub(super) service: RunningService<RoleClient, Wrapped>,
    /// A stdio server's pipes, which the relay shares with rmcp.
    pub(super) pipes: Option<Arc<ServerPipes>>,
    pub(super) stderr: StderrTail,
    pub(super) pgid: Option<u32>,
    pub(super) _guard: Option<GroupGuard>,
    pub(super) _scratch: Option<tempfile::TempDir>,
    /// Its egress proxy (after the guard: the group dies first).
    pub(super) _egress: Option<crate::egress::EgressProxy>,
}

impl Server {
    pub(super) fn tail(&self) -> String {
        self.stderr.text()
    }

    /// What became of a server whose connection is gone, as a clause to append: jp closed it (a
    /// message over the cap), or it exited.
    pub(super) fn gone(&self) -> String {
        match self.pipes.as_ref().and_then(|p| p.broken()) {
            Some(why) => format!(" ({why}; the next call starts it again)"),
            None => " (it exited; the next call starts it again)".into(),
        }
    }
}

/// The MCP servers of the configuration, started on demand.
pub struct McpRuntime {
    pub(super) workspace: PathBuf,
    pub(super) env: BTreeMap<String, String>,
    pub(super) sandbox: SandboxMode,
    pub(super) timeout: Duration,
    pub(super) servers: BTreeMap<String, McpServerConfig>,
    pub(super) running: tokio::sync::Mutex<HashMap<String, Arc<Server>>>,
    /// Where the servers' notifications and requests go (`jp mcp`'s sessions).
    pub(super) hub: Arc<Hub>,
    /// `--trace`: the requests passed on to servers, and the decisions on their connections.
    pub(super) trace: Option<Arc<dyn DispatchEvents>>,
    /// Who is asked about a server's connections.
    pub(super) inquirer: Arc<dyn jp_core::host::Inquirer>,
}

impl std::fmt::Debug for McpRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpRuntime").field("servers", &self.servers.keys()).finish_non_exhaustive()
    }
}

pub(super) fn with_tail(message: String, tail: &str) -> String {
    if tail.is_empty() { message } else { format!("{message}; its stderr ends with:\n{tail}") }
}

impl McpRuntime {
    /// The servers of `servers`, started in `workspace` with variables picked from `env`.
    pub fn new(
        workspace: impl Into<PathBuf>,
        servers: BTreeMap<String, McpServerConfig>,
        env: BTreeMap<String, String>,
        sandbox: SandboxMode,
        timeout: Duration,
    ) -> Self {
        Self {
            workspace: workspace.into(),
            env,
            sandbox,
            timeout,
            servers,
            running: tokio::sync::Mutex::new(HashMap::new()),
            hub: Arc::default(),
            inquirer: Arc::new(jp_core::host::DenyInquirer),
            trace: None,
        }
    }

    /// The servers of `servers`, built from the host's services: their workspace, environment,
    /// inquirer (asked about the servers' connections) and trace.
    pub fn with_services(
        services: &HostServices,
        servers: BTreeMap<String, McpServerConfig>,
        sandbox: SandboxMode,
        timeout: Duration,
    ) -> Self {
        Self::new(&services.workspace, servers, services.env.clone(), sandbox, timeout)
            .egress_observers(services.inquirer.clone(), services.trace.clone())
    }

    /// Who answers the inquiries about the servers' connections (default: nobody, denied) and
    /// where their decisions are reported.
    #[must_use]
    pub fn egress_observers(
        mut self,
        inquirer: Arc<dyn jp_core::host::Inquirer>,
        trace: Option<Arc<dyn DispatchEvents>>,
    ) -> Self {
        self.inquirer = inquirer;
        self.trace = trace;
        self
    }

    pub(super) fn tracer(&self) -> Option<&Arc<dyn DispatchEvents>> {
        self.trace.as_ref()
    }

    /// The names of the servers running now.
    pub async fn running(&self) -> Vec<String> {
        self.running.lock().await.iter().filter(|(_, s)| !s.service.is_closed()).map(|(n, _)| n.clone()).collect()
    }

    /// Where the servers' notifications and requests go.
    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    /// The configured servers.
    pub fn servers(&self) -> &BTreeMap<String, McpServerConfig> {
        &self.servers
    }

    /// The running server `name`, started (again) when needed.
    /// The configuration of server `name`, if there is one.
    pub fn server_config(&self, name: &str) -> Option<&McpServerConfig> {
        self.servers.get(name)
    }

    pub(super) async fn server(&self, name: &str) -> Result<Arc<Server>, RuntimeError> {
        let mut running = self.running.lock().await;
        if let Some(s) = running.get(name) {
            if !s.service.is_closed() {
                return Ok(s.clone());
            }
            running.remove(name);
        }
        let server = Arc::new(self.start(name).await?);
        running.insert(name.to_owned(), server.clone());
        drop(running);
        self.log_at_level(name, &server).await;
        Ok(server)
    }

    /// The pipes of server `name` when it is running over stdio: what `jp mcp` relays calls of
    /// its tools through. `None` when it is not running (the next call starts it), remote, or gone.
    pub async fn relay_pipes(&self, name: &str) -> Option<Arc<ServerPipes>> {
        let running = self.running.lock().await;
        let server = running.get(name).filter(|s| !s.service.is_closed())?;
        server.pipes.clone().filter(|p| !p.is_closed())
    }

    /// Each call's time limit.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The error text of a relayed call of `tool` (as [`McpRuntime::call`] words it, with the
    /// server's stderr tail); a server that is gone is forgotten, so the next call starts it again.
    pub async fn relay_failed(&self, name: &str, tool: &str, pipes: &Arc<ServerPipes>, error: RelayError) -> String {
        let server = {
            let running = self.running.lock().await;
            running.get(name).filter(|s| s.pipes.as_ref().is_some_and(|p| Arc::ptr_eq(p, pipes))).cloned()
        };
        let tail = server.as_ref().map(|s| s.tail()).unwrap_or_default();
        let message = match error {
            RelayError::Timeout => {
                return RuntimeError::Timeout { tool: format!("mcp.{name}.{tool}"), seconds: self.timeout.as_secs() }
                    .to_string();
            }
            RelayError::Server(e) => format!("MCP server '{name}' failed on tools/call {tool}: {e}"),
            RelayError::Malformed(e) => format!("MCP server '{name}' failed on tools/call {tool}: {e}"),
            RelayError::Gone => {
                if let Some(server) = &server {
                    self.forget(name, server).await;
                }
                let tail = server.as_ref().map(|s| s.tail()).unwrap_or(tail);
                let why = pipes.broken().unwrap_or_else(|| "it exited".into());
                return with_tail(
                    format!(
                        "MCP server '{name}' failed on tools/call {tool}: the connection closed ({why}; the next call starts it again)"
                    ),
                    &tail,
                );
            }
        };
        with_tail(message, &tail)
    }

    /// The tools server `name` offers, within the caps of [`bounds::list_tools`](super::bounds::list_tools).
    pub async fn list_tools(&self, name: &str) -> Result<Vec<Tool>, RuntimeError> {
        let server = self.server(name).await?;
        let listed = tokio::time::timeout(START_TIMEOUT, super::bounds::list_tools(server.service.peer())).await;
        let message = match listed {
            Ok(Ok(tools)) => return Ok(tools),
            Ok(Err(ListError::Cap(what))) => format!("MCP server '{name}' sent {what} (cap)"),
            Ok(Err(ListError::Service(e))) => {
                // As for a call: anything but the server's JSON-RPC error means the connection is gone.
                let dead = !matches!(e, rmcp::ServiceError::McpError(_)) || server.service.is_closed();
                if dead {
                    self.forget(name, &server).await;
                }
                format!(
                    "MCP server '{name}' failed on tools/list: {e}{}",
                    if dead { server.gone() } else { String::new() }
                )
            }
            Err(_) => {
                return Err(RuntimeError::Timeout { tool: format!("mcp.{name}"), seconds: START_TIMEOUT.as_secs() });
            }
        };
        Err(RuntimeError::Protocol { tool: format!("mcp.{name}"), message: with_tail(message, &server.tail()) })
    }

    /// Call `tool` of server `name`. Its result's content blocks (typed, `super::content`) and
    /// `structuredContent` become the tool's; `isError`
    /// becomes a tool error; a server that fails or dies is a protocol error with its stderr tail.
    pub async fn call(
        &self,
        name: &str,
        tool: &str,
        call: jp_core::runtime::ToolCall,
    ) -> Result<ExecutionOutcome, RuntimeError> {
        let server = self.server(name).await?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = Some(call.arguments.clone());
        let peer = server.service.peer().clone();
        // Served for an agent's call (`jp mcp`): the server's progress and questions go to it.
        let caller = super::forward::CALLER.try_with(Clone::clone).ok();
        let (guard, mut rx) = match caller.map(|c| self.hub.start_call(name, c)) {
            Some((guard, meta, rx)) => {
                params.meta = meta;
                (Some(guard), rx)
            }
            None => (None, None),
        };
        let answer = peer.call_tool(params);
        tokio::pin!(answer);
        let deadline = tokio::time::sleep(self.timeout);
        tokio::pin!(deadline);
        let result = loop {
            tokio::select! {
                r = &mut answer => break r,
                Some(p) = async { match rx.as_mut() { Some(rx) => rx.recv().await, None => None } } => {
                    if let Some(guard) = &guard {
                        guard.forward(p).await;
                    }
                }
                () = call.cancel.cancelled() => return Ok(ExecutionOutcome::Cancelled { id: call.id }),
                () = &mut deadline => {
                    return Err(RuntimeError::Timeout { tool: call.name, seconds: self.timeout.as_secs() });
                }
            }
        };
        if let Some(guard) = &guard {
            guard.finish(rx.as_mut()).await;
        }
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                // A JSON-RPC error is the server's answer; anything else means the connection
                // is gone: the server is dropped and the next call starts it again.
                let dead = !matches!(e, rmcp::ServiceError::McpError(_)) || server.service.is_closed();
                if dead {
                    self.forget(name, &server).await;
                }
                return Err(RuntimeError::Protocol {
                    tool: call.name,
                    message: with_tail(
                        format!(
                            "MCP server '{name}' failed on tools/call {tool}: {e}{}",
                            if dead { server.gone() } else { String::new() }
                        ),
                        &server.tail(),
                    ),
                });
            }
        };
        let is_error = result.is_error == Some(true);
        let tool_result = super::content::from_rmcp(result.content, result.structured_content);
        if is_error {
            return Ok(ExecutionOutcome::Completed { id: call.id, result: Err(ToolError::new(tool_result.to_text())) });
        }
        Ok(ExecutionOutcome::Completed { id: call.id, result: Ok(tool_result) })
    }
}

impl jp_core::runtime::ToolRuntime for McpRuntime {
    fn execute<'a>(
        &'a self,
        call: jp_core::runtime::ToolCall,
        config: &'a jp_core::runtime::ToolConfig,
    ) -> jp_core::runtime::Execution<'a> {
        Box::pin(async move {
            match &config.source {
                jp_core::runtime::ToolSource::Mcp { server, tool } => self.call(server, tool, call).await,
                _ => Err(RuntimeError::Misrouted { tool: call.name, runtime: "mcp" }),
            }
        })
    }
}
