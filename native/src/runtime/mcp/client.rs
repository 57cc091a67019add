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
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jp_core::host::DispatchEvents;
use jp_core::runtime::{ExecutionOutcome, McpServerConfig, RuntimeError};
use jp_core::state::ToolError;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, Tool};
use rmcp::service::{RoleClient, RunningService};
use rustix::process::Signal;
use tokio::io::AsyncReadExt;

use super::bounds::{BoundedTransport, ListError, MAX_MESSAGE};
use super::forward::{Hub, Inbox};
use super::pipes::{RelayError, ServerPipes};
use super::wrapped::Wrapped;
use crate::process::{GroupGuard, find_program, private_env, signal_group};
use crate::sandbox::{ChildCommand, PROCESS_CONFIG_READ, SandboxMode, SandboxSpec, read_paths};

/// The ELF program interpreters a dynamically linked program needs to start.
const ELF_LOADERS: [&str; 4] = [
    "/lib64/ld-linux-x86-64.so.2",
    "/lib/ld-linux-aarch64.so.1",
    "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
    "/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1",
];

/// A script's interpreter (`#!/usr/bin/python3`, or `#!/usr/bin/env node` → `env` and `node`).
fn script_interpreter(program: &std::path::Path, path_var: Option<&str>, cwd: &std::path::Path) -> Vec<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(program).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
    let Some(line) = head[..n].strip_prefix(b"#!") else { return Vec::new() };
    let line = String::from_utf8_lossy(line.split(|b| *b == b'\n').next().unwrap_or_default()).into_owned();
    let mut words = line.split_whitespace();
    let mut out = Vec::new();
    if let Some(first) = words.next() {
        out.push(std::fs::canonicalize(first).unwrap_or_else(|_| PathBuf::from(first)));
        if first.ends_with("/env")
            && let Some(next) = words.find(|w| !w.starts_with('-'))
            && let Some(found) = find_program(next, path_var, cwd)
        {
            out.push(std::fs::canonicalize(&found).unwrap_or(found));
        }
    }
    out
}

/// How long a server has to answer `initialize` and `tools/list`.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Most of a server's stderr kept for error messages.
const STDERR_TAIL: usize = 8 * 1024;

/// A started server (or a connection to a remote one: no process, no stderr).
pub(super) struct Server {
    pub(super) service: RunningService<RoleClient, Wrapped>,
    /// A stdio server's pipes, which the relay shares with rmcp.
    pipes: Option<Arc<ServerPipes>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    pgid: Option<u32>,
    _guard: Option<GroupGuard>,
    _scratch: Option<tempfile::TempDir>,
    /// Its egress proxy (after the guard: the group dies first).
    _egress: Option<crate::egress::EgressProxy>,
}

impl Server {
    pub(super) fn tail(&self) -> String {
        let tail = self.stderr.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        String::from_utf8_lossy(&tail).trim().to_owned()
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
    workspace: PathBuf,
    env: BTreeMap<String, String>,
    sandbox: SandboxMode,
    timeout: Duration,
    servers: BTreeMap<String, McpServerConfig>,
    running: tokio::sync::Mutex<HashMap<String, Arc<Server>>>,
    /// Where the servers' notifications and requests go (`jp mcp`'s sessions).
    hub: Arc<Hub>,
    /// `--trace`: the requests passed on to servers, and the decisions on their connections.
    trace: Option<Arc<dyn DispatchEvents>>,
    /// Who is asked about a server's connections.
    inquirer: Arc<dyn jp_core::host::Inquirer>,
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

    /// Report the requests passed on to servers to `trace` (`--trace`).
    #[must_use]
    pub fn with_trace(mut self, trace: Option<Arc<dyn DispatchEvents>>) -> Self {
        self.trace = trace;
        self
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

    async fn start(&self, name: &str) -> Result<Server, RuntimeError> {
        let config = self
            .servers
            .get(name)
            .ok_or_else(|| RuntimeError::Config(format!("no MCP server '{name}' is configured")))?;
        let who = format!("MCP server '{name}'");
        if let Some(url) = &config.url {
            return self.connect(name, config, url).await;
        }
        let command = config
            .command
            .as_deref()
            .ok_or_else(|| RuntimeError::Config(format!("{who} has neither `command` nor `url`")))?;
        let path_var = self.env.get("PATH").map(String::as_str);
        let program = find_program(command, path_var, &self.workspace)
            .ok_or_else(|| RuntimeError::Config(format!("{who}: program {command:?} was not found on PATH")))?;
        let program = std::fs::canonicalize(&program).unwrap_or(program);
        let policy = config.policy().map_err(|e| RuntimeError::Config(format!("[mcp.servers.{name}] {e}")))?;
        let workspace = std::fs::canonicalize(&self.workspace).unwrap_or_else(|_| self.workspace.clone());
        // Arguments naming existing files (a script) are readable in the sandbox.
        let script_files: Vec<PathBuf> = config
            .args
            .iter()
            .filter(|a| !a.starts_with('-'))
            .map(|a| workspace.join(a))
            .filter(|p| p.is_file())
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .filter(|p| !p.starts_with(&workspace))
            .collect();
        let scratch = tempfile::Builder::new()
            .prefix("jp-mcp-")
            .tempdir()
            .map_err(|e| RuntimeError::Spawn { tool: who.clone(), message: format!("no private HOME: {e}") })?;
        let mut env = private_env(&self.env, |k| config.env.iter().any(|e| e == k), scratch.path());
        let mut network = false;
        let sandbox = match self.sandbox {
            SandboxMode::Enforce => {
                let grant = policy.process_grant().map_err(|why| {
                    RuntimeError::Sandbox(format!(
                        "{who} was not started: a server touches files and the network directly, so the OS sandbox can grant it only the whole workspace (read-only or read-write) and the network per host and port (through jp's egress proxy), and its policy cannot be held that way: {why}"
                    ))
                })?;
                let mut spec =
                    SandboxSpec::for_tool(&program, &script_files, &read_paths(&self.workspace, &config.read_paths)?);
                // It runs its own program only: the system directories stay readable (libraries,
                // an interpreter's modules) but nothing in them may be executed, except the
                // program, the ELF loader, a script's interpreter and what `exec` lists.
                let mut may_exec = vec![program.clone()];
                may_exec.extend(ELF_LOADERS.iter().map(PathBuf::from).filter(|p| p.exists()));
                may_exec.extend(script_interpreter(&program, path_var, &workspace));
                for name in &config.exec {
                    let found = find_program(name, path_var, &workspace).ok_or_else(|| {
                        RuntimeError::Config(format!("{who}: `exec` entry {name:?} was not found on PATH"))
                    })?;
                    may_exec.push(std::fs::canonicalize(&found).unwrap_or(found));
                }
                let system: Vec<PathBuf> = std::mem::take(&mut spec.read_exec);
                for p in system {
                    if may_exec.contains(&p) {
                        spec.read_exec.push(p);
                    } else {
                        spec.read_only.push(p);
                    }
                }
                for p in may_exec {
                    if !spec.read_exec.contains(&p) {
                        spec.read_exec.push(p);
                    }
                }
                spec.read_write.push(scratch.path().to_path_buf());
                // The harmless system files common programs fail without (as for process.run).
                spec.read_only.extend(
                    PROCESS_CONFIG_READ.iter().map(PathBuf::from).filter(|p| std::fs::symlink_metadata(p).is_ok()),
                );
                if grant.workspace.write {
                    spec.read_write.push(workspace.clone());
                } else if grant.workspace.read {
                    spec.read_only.push(workspace.clone());
                }
                if grant.network {
                    network = true;
                    spec.egress = true;
                    spec.read_only
                        .extend(crate::sandbox::NETWORK_READ.iter().map(PathBuf::from).filter(|p| p.exists()));
                    env = crate::egress::with_proxy_env(env);
                }
                Some(spec.prepare().map_err(|e| RuntimeError::Sandbox(format!("{who}: {e}")))?)
            }
            SandboxMode::Disabled => None,
        };
        let mut child =
            ChildCommand::new(&program).args(&config.args).envs(&env).current_dir(&workspace).spawn(sandbox).map_err(
                |e| RuntimeError::Spawn { tool: who.clone(), message: format!("{}: {e}", program.display()) },
            )?;
        let pgid = child.id();
        let egress = child.egress.take().filter(|_| network).map(|listener| {
            let gate = jp_core::host::EgressGate::new(
                format!("mcp.{name}"),
                Arc::new(policy.clone()),
                self.inquirer.clone(),
                self.trace.clone(),
                Arc::default(),
            );
            crate::egress::serve(listener, Arc::new(gate), crate::egress::EgressLimits::default())
        });
        let guard = GroupGuard(pgid);
        let (stdin, stdout, stderr) = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(i), Some(o), Some(e)) => (i, o, e),
            _ => return Err(RuntimeError::Spawn { tool: who, message: "pipes were not created".into() }),
        };
        // Drained always: a full stderr pipe would block the server.
        let tail = Arc::new(Mutex::new(Vec::new()));
        {
            let tail = tail.clone();
            let mut stderr = stderr;
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                while let Ok(n) = stderr.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    let mut t = tail.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    t.extend_from_slice(&buf[..n]);
                    if t.len() > STDERR_TAIL {
                        let cut = t.len() - STDERR_TAIL;
                        t.drain(..cut);
                    }
                }
            });
        }
        // The child is reaped by its own task; the group dies with the guard.
        tokio::spawn(async move {
            let _ = child.wait().await;
        });
        // rmcp's client and the relay share the pipes (see relay.rs).
        let (pipes, transport) = ServerPipes::start(stdin, stdout);
        let (read, write) = tokio::io::split(transport);
        let transport =
            rmcp::transport::async_rw::AsyncRwTransport::new_client(read, write).with_max_line_length(MAX_MESSAGE);
        let transport = BoundedTransport::new(transport, Some(Inbox::start(name, &self.hub)));
        let started = tokio::time::timeout(START_TIMEOUT, Wrapped::new(name, config, &self.hub).serve(transport)).await;
        let tail_now = || {
            String::from_utf8_lossy(&tail.lock().unwrap_or_else(std::sync::PoisonError::into_inner)).trim().to_owned()
        };
        let service = match started {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                signal_group(pgid, Signal::KILL);
                let why = pipes.broken().map(|why| format!(" ({why})")).unwrap_or_default();
                return Err(RuntimeError::Spawn {
                    tool: who,
                    message: with_tail(format!("initialize failed: {e}{why}"), &tail_now()),
                });
            }
            Err(_) => {
                signal_group(pgid, Signal::KILL);
                return Err(RuntimeError::Spawn {
                    tool: who,
                    message: with_tail(
                        format!("it did not answer initialize within {} s", START_TIMEOUT.as_secs()),
                        &tail_now(),
                    ),
                });
            }
        };
        // jp keeps what it needs of a list itself; rmcp's cache would keep up to 512 pages.
        service.peer().set_response_cache_config(rmcp::ClientCacheConfig::disabled()).await;
        Ok(Server {
            service,
            pipes: Some(pipes),
            stderr: tail,
            pgid: Some(pgid),
            _guard: Some(guard),
            _scratch: Some(scratch),
            _egress: egress,
        })
    }

    /// Connect to a Streamable-HTTP server. Its URL was checked against the server's network
    /// rules when the configuration was read, and is checked again here.
    async fn connect(&self, name: &str, config: &McpServerConfig, url: &str) -> Result<Server, RuntimeError> {
        use rmcp::transport::StreamableHttpClientTransport;
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        let who = format!("MCP server '{name}'");
        let policy = config.policy().map_err(|e| RuntimeError::Config(format!("[mcp.servers.{name}] {e}")))?;
        if !policy.check_request(&jp_core::policy::HttpCheck::new("POST", url)).is_allow() {
            return Err(RuntimeError::Config(format!("{who}: {url} is not allowed by its network rules")));
        }
        let mut transport = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
        if let Some(var) = &config.token_env {
            let token = self.env.get(var).filter(|t| !t.is_empty()).ok_or_else(|| {
                RuntimeError::Config(format!("{who}: token_env {var} is not set in the environment; export it"))
            })?;
            transport.auth_header = Some(token.clone());
        }
        // One JSON body, one SSE event: one message (rmcp's defaults, named here).
        transport.max_json_response_size = MAX_MESSAGE;
        transport.max_sse_event_size = MAX_MESSAGE;
        let transport = BoundedTransport::new(
            StreamableHttpClientTransport::from_config(transport),
            Some(Inbox::start(name, &self.hub)),
        );
        let connected =
            tokio::time::timeout(START_TIMEOUT, Wrapped::new(name, config, &self.hub).serve(transport)).await;
        let service = match connected {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                return Err(RuntimeError::Spawn { tool: who, message: format!("connecting to {url} failed: {e}") });
            }
            Err(_) => {
                return Err(RuntimeError::Spawn {
                    tool: who,
                    message: format!("{url} did not answer initialize within {} s", START_TIMEOUT.as_secs()),
                });
            }
        };
        service.peer().set_response_cache_config(rmcp::ClientCacheConfig::disabled()).await;
        Ok(Server {
            service,
            pipes: None,
            stderr: Arc::default(),
            pgid: None,
            _guard: None,
            _scratch: None,
            _egress: None,
        })
    }

    /// A server that died: its group is killed and the next call starts it again.
    pub(super) async fn forget(&self, name: &str, server: &Arc<Server>) {
        // Give the tail a moment to arrive when the server just died.
        tokio::time::sleep(Duration::from_millis(50)).await;
        if let Some(pgid) = server.pgid {
            signal_group(pgid, Signal::KILL);
        }
        let mut running = self.running.lock().await;
        if running.get(name).is_some_and(|s| Arc::ptr_eq(s, server)) {
            running.remove(name);
        }
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
    fn kind(&self) -> &'static str {
        "mcp"
    }

    fn execute<'a>(
        &'a self,
        call: jp_core::runtime::ToolCall,
        config: &'a jp_core::runtime::ToolConfig,
    ) -> jp_core::BoxFuture<'a, Result<ExecutionOutcome, RuntimeError>> {
        Box::pin(async move {
            match &config.source {
                jp_core::runtime::ToolSource::Mcp { server, tool } => self.call(server, tool, call).await,
                other => Err(RuntimeError::Config(format!("tool '{}' is not an MCP tool ({other:?})", call.name))),
            }
        })
    }
}
