//! `jp mcp`: the sandboxed tools served to agents over the Model Context Protocol (the official
//! Rust SDK, `rmcp`). Every `tools/call` goes through the same [`App`] — runtimes, policies,
//! OS sandbox — as `jp tool call`; stateful tools (RFD 009) keep their handles in the session
//! ([`Handles`]), which aborts them all when the client goes away.
//!
//! - `tools/list`: each tool's schema as an agent sees it (a stateful tool in RFD 009's flat form,
//!   never a top-level `oneOf`), with hints derived from its policy.
//! - `tools/call`: at most [`McpOptions::max_concurrent`] at once (per server), each in its own
//!   sandbox;
//!   `notifications/cancelled` cancels the call (D11 `cancel`, SIGTERM, SIGKILL); with a
//!   `progressToken`, progress is reported while it runs, always before the result.
//! - Inquiries become `elicitation/create` when the client declared elicitation ([`elicit`]);
//!   otherwise they are denied at once with the reason.
//! - MCP tasks (`tasks`, the `io.modelcontextprotocol/tasks` extension): for a client that
//!   declares them, a call that runs long or asks becomes a task of its session.
//! - Wrapped servers (`[mcp.servers.*]`): their prompts, resources, templates, subscriptions,
//!   completions and logging level are passed on (`passthrough`), their progress, log messages
//!   and requests of a client forwarded to this session's client within bounds ([`forward`]).
//! - [`http`]: Streamable HTTP on a loopback address, behind a bearer token and an `Origin` check.
//! - [`relay`]: over stdio, a `tools/call` of a running stdio MCP server's tool is relayed as raw
//!   JSON, past rmcp's typed model on both sides (the same tool resolution and argument check).

pub mod elicit;
mod hints;
pub mod http;
mod mrtr;
mod passthrough;
pub mod relay;
mod tasks;

pub use tasks::TaskStore;

use std::sync::Arc;
use std::time::Duration;

use jp_core::agent::surface;
use jp_core::cancel::CancellationToken;
use jp_core::handles::HandleOwners;
use jp_core::runtime::{RuntimeError, ToolCall};
use jp_core::schema::SchemaError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use tokio::sync::Semaphore;

use crate::app::{App, CallReply, Handles};
use crate::runtime::mcp::pipes::RelayError;
use crate::runtime::mcp::{ask, content, forward};

/// How often a call with a `progressToken` reports that it is still running.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// The `_meta` key of a stateless request naming whose handles it uses (see
/// `JpMcp::handles_for`).
pub const SCOPE_META: &str = "jp-host/scope";

/// How `jp mcp` serves.
#[derive(Debug, Clone, Copy)]
pub struct McpOptions {
    /// Calls running at once per session; more wait for a slot.
    pub max_concurrent: usize,
}

impl Default for McpOptions {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        Self { max_concurrent: 2 * cores }
    }
}

/// One MCP session's server: the shared host, this session's handles and call slots.
#[derive(Clone)]
pub struct JpMcp {
    app: Arc<App>,
    handles: Arc<Handles>,
    /// Over HTTP: the handles of stateless requests (2026-07-28, no session), by the scope the
    /// request names (see [`JpMcp::handles_for`]).
    owners: Option<Arc<HandleOwners>>,
    slots: Arc<Semaphore>,
    /// This session's client, as wrapped servers' messages see it.
    session: Arc<forward::AgentSession>,
    tasks: tasks::SessionTasks,
    _session: Arc<SessionEnd>,
}

impl std::fmt::Debug for JpMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JpMcp").field("handles", &self.handles).finish_non_exhaustive()
    }
}

/// Aborts the session's handles when the last clone of its server goes (an HTTP session that
/// ended by DELETE or timeout; stdio ends them explicitly first).
struct SessionEnd {
    handles: Arc<Handles>,
    tasks: tasks::SessionTasks,
}

impl Drop for SessionEnd {
    fn drop(&mut self) {
        let (handles, tasks) = (self.handles.clone(), self.tasks.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                tasks.close().await;
                handles.close().await;
            });
        }
    }
}

impl JpMcp {
    /// A session over `app`.
    pub fn new(app: Arc<App>, options: McpOptions) -> Self {
        Self::with_slots(app, Arc::new(Semaphore::new(options.max_concurrent.max(1))))
    }

    /// A session whose calls take their slots from `slots`, shared with other sessions (HTTP:
    /// one bound for the whole server).
    pub fn with_slots(app: Arc<App>, slots: Arc<Semaphore>) -> Self {
        Self::with_tasks(app, slots, tasks::SessionTasks::own())
    }

    /// A session of an HTTP server: call slots and MCP tasks shared with the server's other
    /// sessions (each task still bound to its session).
    pub fn shared(app: Arc<App>, slots: Arc<Semaphore>, tasks: Arc<TaskStore>, owners: Arc<HandleOwners>) -> Self {
        let mut server = Self::with_tasks(app, slots, tasks::SessionTasks::shared(tasks));
        server.owners = Some(owners);
        server
    }

    fn with_tasks(app: Arc<App>, slots: Arc<Semaphore>, tasks: tasks::SessionTasks) -> Self {
        let handles = Arc::new(Handles::default());
        let end = Arc::new(SessionEnd { handles: handles.clone(), tasks: tasks.clone() });
        Self { app, slots, session: Arc::default(), tasks, _session: end, handles, owners: None }
    }

    /// Whose handles `ctx`'s request uses: its session's — or, for a stateless request over
    /// HTTP (protocol 2026-07-28, no `initialize`, a server that lives for that request only),
    /// those of the principal (holders of the server's bearer token) in the scope the request
    /// names in `_meta["jp-host/scope"]` (none: the principal's default scope). A handle spawned
    /// in one stateless request is found by later requests of the same scope and by nobody else:
    /// another scope, or a session, hears what an unknown id gets.
    pub(crate) async fn handles_for(&self, ctx: &RequestContext<RoleServer>) -> Result<Arc<Handles>, RuntimeError> {
        let stateless = ctx.protocol_version().is_some_and(|v| !v.has_initialize());
        let Some(owners) = self.owners.as_ref().filter(|_| stateless) else { return Ok(self.handles.clone()) };
        let scope = match ctx.meta.get(SCOPE_META) {
            None => "",
            Some(serde_json::Value::String(s)) if s.len() <= 128 && !s.chars().any(char::is_control) => s.as_str(),
            Some(_) => {
                return Err(RuntimeError::Input(format!(
                    "_meta[\"{SCOPE_META}\"] must be a string of at most 128 characters without control characters (it names whose handles this request uses)"
                )));
            }
        };
        owners.session(&format!("principal/{scope}"), jp_core::handles::StatefulTools::now(&*self.app)).await
    }

    /// This session's handles.
    pub fn handles(&self) -> &Arc<Handles> {
        &self.handles
    }

    /// Tool `name` as `tools/list` shows it: the core's agent surface, in rmcp's model.
    async fn tool(&self, name: &str) -> Result<Tool, RuntimeError> {
        let tool = self.app.agent_tool(name).await?;
        Ok(serde_json::from_value(tool.to_mcp())
            .map_err(|e| SchemaError::Unusable { tool: name.into(), why: e.to_string() })?)
    }

    /// Serve `call` until it ends, reporting progress to `ctx` when asked to.
    async fn run(
        &self,
        call: ToolCall,
        ctx: &RequestContext<RoleServer>,
        questions: Option<ask::Questions>,
    ) -> Result<CallReply, RuntimeError> {
        // A wrapped server's progress and questions go to this call (see `forward`).
        let caller = forward::Caller::new(&self.session, ctx, questions.clone());
        let answerer = elicit::Elicitor::new(ctx, questions);
        let handles = self.handles_for(ctx).await?;
        let work = forward::CALLER.scope(caller.clone(), self.app.agent_call(call, &handles, &answerer));
        if !caller.wants_progress() {
            return work.await;
        }
        tokio::pin!(work);
        loop {
            tokio::select! {
                r = &mut work => return r,
                // jp's own ticks, unless a wrapped server reports progress itself; sent and
                // flushed before the next select: the result cannot overtake them.
                () = tokio::time::sleep(PROGRESS_EVERY) => caller.tick().await,
            }
        }
    }
}

/// The answer to one step of a call that may ask by result: its end, or its question.
fn progress_response(name: &str, step: mrtr::Progress) -> Result<CallToolResponse, ErrorData> {
    match step {
        mrtr::Progress::Done(reply) => Ok(response(name, reply)),
        mrtr::Progress::Asks(input_required) => Ok(input_required.into()),
    }
}

fn tool_error(message: impl Into<String>) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(message.into())]).into()
}

/// The answer to `tools/call`: the core's agent surface ([`surface::call_result`]) in rmcp's
/// model. Bad arguments, an unknown or stopped handle, an unsupported action (MCP SEP-1303), and
/// every other failure are a result the model reads and can act on; only an unknown tool and a
/// `requestState` that resumes no call are protocol errors, answered before the call.
fn response(name: &str, reply: Result<CallReply, RuntimeError>) -> CallToolResponse {
    match reply {
        Ok(reply) => content::to_rmcp(surface::call_result(name, reply)).into(),
        Err(e) => tool_error(e.to_string()),
    }
}

impl ServerHandler for JpMcp {
    #[allow(deprecated, reason = "logging is what 2025-11-25 clients speak")]
    fn get_info(&self) -> ServerConfig {
        // Wrapped servers' prompts, resources, completions and logging are offered through jp
        // (see `passthrough`).
        let capabilities = if passthrough::any(&self.app) {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_resources_list_changed()
                .enable_logging()
                .enable_completions()
                .build()
        } else {
            ServerCapabilities::builder().enable_tools().build()
        };
        ServerConfig::new(tasks::advertise(capabilities))
            .with_server_info(Implementation::new("jp", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "jp-host tools for the project at {}. Every call runs sandboxed: files, network and commands are decided by the tool's access policy. Stateful tools take an `action` (spawn, then fetch/apply/abort with the returned id).",
                self.app.workspace().display()
            ))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        passthrough::declared(&self.app, "prompts/list")?;
        let mut r = passthrough::list_prompts(&self.app).await;
        hints::set(&context, &mut r.ttl_ms, &mut r.cache_scope, hints::LISTS_TTL_MS);
        Ok(r)
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        passthrough::declared(&self.app, "prompts/get")?;
        passthrough::get_prompt(&self.app, request).await.map(Into::into)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        passthrough::declared(&self.app, "resources/list")?;
        let mut r = passthrough::list_resources(&self.app).await;
        hints::set(&context, &mut r.ttl_ms, &mut r.cache_scope, hints::RESOURCES_TTL_MS);
        Ok(r)
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        passthrough::declared(&self.app, "resources/read")?;
        passthrough::read_resource(&self.app, request).await.map(Into::into)
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        // Wrapped servers' notifications reach this session from now on.
        self.session.attach(&context.peer);
        self.app.mcp().hub().join(&self.session);
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        passthrough::declared(&self.app, "resources/templates/list")?;
        Ok(passthrough::list_resource_templates(&self.app).await)
    }

    #[allow(deprecated, reason = "resources/subscribe is what 2025-11-25 clients speak")]
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        passthrough::declared(&self.app, "resources/subscribe")?;
        self.session.attach(&context.peer);
        passthrough::subscribe(&self.app, &self.session, &request.uri, true).await
    }

    /// MCP 2026-07-28 `subscriptions/listen`: offered when a wrapped server is configured; the
    /// client gets what it asked for of what jp declares (the SDK intersects the two).
    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        passthrough::any(&self.app).then(|| requested.clone())
    }

    /// One listen stream: the resources it names subscribed at their servers, its change
    /// notifications sent on it until the client cancels it; then the resources unsubscribed.
    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        self.session.attach(&context.request_context().peer);
        let uris = context.accepted().resource_subscriptions.clone().unwrap_or_default();
        for uri in &uris {
            passthrough::subscribe(&self.app, &self.session, uri, true).await?;
        }
        let id = context.sink().id().clone();
        self.session.listen(context.sink().clone());
        context.cancelled().await;
        self.session.unlisten(&id);
        for uri in &uris {
            let _ = passthrough::subscribe(&self.app, &self.session, uri, false).await;
        }
        Ok(())
    }

    #[allow(deprecated, reason = "resources/unsubscribe is what 2025-11-25 clients speak")]
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        passthrough::declared(&self.app, "resources/unsubscribe")?;
        passthrough::subscribe(&self.app, &self.session, &request.uri, false).await
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        passthrough::declared(&self.app, "completion/complete")?;
        passthrough::complete(&self.app, request).await
    }

    #[allow(deprecated, reason = "logging/setLevel is what 2025-11-25 clients speak")]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        passthrough::declared(&self.app, "logging/setLevel")?;
        self.session.attach(&context.peer);
        passthrough::set_level(&self.app, &self.session, request.level).await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = Vec::new();
        self.app.discover().await;
        let names: Vec<String> = self.app.tools().into_iter().map(|t| t.name).collect();
        for name in names {
            match self.tool(&name).await {
                Ok(t) => tools.push(t),
                Err(e) => crate::app::warn(format_args!("jp mcp: tool '{name}' is not listed: {e}")),
            }
        }
        let mut r = ListToolsResult::with_all_items(tools);
        hints::set(&context, &mut r.ttl_ms, &mut r.cache_scope, hints::LISTS_TTL_MS);
        Ok(r)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        self.app.discover().await;
        // An unknown tool is a protocol error (-32602); everything after it is a result.
        if let Err(e) = self.app.tool(&name) {
            return Err(ErrorData::invalid_params(e.to_string(), None));
        }
        // MCP 2026-07-28: the retry of a call that asked (its answer in `inputResponses`). A
        // `requestState` that resumes nothing is invalid params too (SEP-2322: a server rejects
        // state it cannot verify with a JSON-RPC error).
        if let Some(state) = &request.request_state {
            let arguments = request.arguments.as_ref();
            return match mrtr::resume(&name, arguments, state, request.input_responses.as_ref()).await {
                Ok(step) => progress_response(&name, step),
                Err(stale) => Err(ErrorData::invalid_params(stale.to_string(), None)),
            };
        }
        // Cancelled while waiting for a slot: the tool never starts.
        let slot = tokio::select! {
            biased;
            () = context.ct.cancelled() => return Ok(tool_error(format!("tool '{name}' was cancelled"))),
            slot = self.slots.clone().acquire_owned() => slot.map_err(|e| ErrorData::internal_error(e.to_string(), None))?,
        };
        let cancel = CancellationToken::new();
        let mut call =
            ToolCall::new(name.clone(), format!("mcp-{}", context.id), request.arguments.unwrap_or_default());
        call.cancel = cancel.clone();
        // The client declared MCP tasks: a call that runs long or asks becomes one (see `tasks`).
        if self.tasks.offered(&context) {
            return Ok(tasks::call(self, &name, call, cancel, slot, &context).await);
        }
        if mrtr::asks_by_result(&context) {
            // No server-to-client requests on this protocol: the call runs in a task of its own
            // and a question suspends it (see `mrtr`).
            let (questions, asked) = ask::channel();
            call.inquirer = Some(Arc::new(elicit::ElicitInquirer::new(&context, Some(questions.clone()))));
            // Kept for the retry, which must repeat them.
            let arguments = call.arguments.clone();
            let (this, ctx) = (self.clone(), context.clone());
            let work = tokio::spawn(async move {
                let _slot = slot;
                this.run(call, &ctx, Some(questions)).await
            });
            let step = tokio::select! {
                step = mrtr::drive(&name, arguments, mrtr::Running { work, questions: asked }) => step,
                () = context.ct.cancelled() => {
                    cancel.cancel();
                    return Ok(tool_error(format!("tool '{name}' was cancelled")));
                }
            };
            return progress_response(&name, step);
        }
        let _slot = slot;
        call.inquirer = Some(Arc::new(elicit::ElicitInquirer::new(&context, None)));
        let work = self.run(call, &context, None);
        tokio::pin!(work);
        let reply = tokio::select! {
            r = &mut work => r,
            () = context.ct.cancelled() => {
                // Cancelled by the client (or the session ended): stop the tool and wait until
                // its processes are gone; the answer is dropped.
                cancel.cancel();
                let _ = work.await;
                return Ok(tool_error(format!("tool '{name}' was cancelled")));
            }
        };
        Ok(response(&name, reply))
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        self.tasks.get(&context, &request.task_id).map(rmcp::model::GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.update(&context, &request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel(&context, &request.task_id)
    }
}

/// Which `tools/call`s the stdio front relays: tools of a running stdio MCP server, not
/// stateful, with arguments that pass the same check as every call.
/// A server whose requests may be forwarded to this client is not relayed: they are tied to
/// the call through rmcp (see `forward`).
struct AppRouter(Arc<App>, Arc<forward::AgentSession>);

impl relay::Router for AppRouter {
    async fn route(&self, name: &str, arguments: &serde_json::value::RawValue) -> Option<relay::Route> {
        let entry = self.0.tool(name).ok()?;
        let jp_core::runtime::ToolSource::Mcp { server, tool } = &entry.config.source else { return None };
        if self.0.mcp().servers().get(server).is_some_and(|sc| self.1.forwards_any(sc)) {
            return None;
        }
        let mcp = self.0.mcp();
        let pipes = mcp.relay_pipes(server).await?;
        let args: JsonObject = serde_json::from_str(arguments.get()).ok()?;
        self.0.check_arguments(name, &args).await.ok()?;
        Some(relay::Route { pipes, server: server.clone(), tool: tool.clone(), timeout: mcp.timeout() })
    }

    async fn failed(&self, route: &relay::Route, error: RelayError) -> String {
        self.0.mcp().relay_failed(&route.server, &route.tool, &route.pipes, error).await
    }
}

/// Why `jp mcp` could not serve (exit code 1): each says what failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// No random token could be drawn for `--http`.
    #[error("cannot generate a token: {0}")]
    Token(String),
    /// `--http` on a non-loopback address with a generated token.
    #[error(
        "{addr} is not a loopback address: serving there needs a token you chose (--token-env VAR); a generated one is only for 127.0.0.1"
    )]
    NotLoopback {
        /// The address asked for.
        addr: std::net::SocketAddr,
    },
    /// The address could not be listened on.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The listener's own address could not be read.
    #[error("{0}")]
    LocalAddr(std::io::Error),
    /// The MCP session over stdio failed.
    #[error("MCP session: {0}")]
    Session(String),
}

/// Serve one session over stdin/stdout until the client closes it or `jp` is asked to stop
/// (SIGINT, SIGTERM); then abort its handles, so no tool process outlives `jp mcp`. rmcp serves
/// the session behind the [`relay`] front, which relays what it can.
pub async fn serve_stdio(app: Arc<App>, options: McpOptions) -> Result<(), ServeError> {
    let server = JpMcp::new(app.clone(), options);
    let handles = server.handles().clone();
    let tasks = server.tasks.clone();
    let (front, rmcp_side) = tokio::io::duplex(1 << 16);
    // Non-blocking pipes when stdin/stdout are pipes (a pending read can be dropped; no
    // blocking-pool thread per read and write), tokio's blocking handles otherwise.
    let (input, output) = rmcp::transport::stdio_pipes();
    let front = tokio::spawn(relay::serve_front(
        Arc::new(AppRouter(app, server.session.clone())),
        server.slots.clone(),
        input,
        output,
        front,
    ));
    let session = async {
        let running = match server.serve(tokio::io::split(rmcp_side)).await {
            Ok(running) => running,
            // A client that leaves before (or without: MCP 2026-07-28 has no `initialize`)
            // initializing ended the session; it is not an error.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(ServeError::Session(e.to_string())),
        };
        running.waiting().await.map(|_| ()).map_err(|e| ServeError::Session(e.to_string()))
    };
    let ended = tokio::select! {
        r = session => r,
        _ = shutdown_signal() => Ok(()),
    };
    tasks.close().await;
    handles.close().await;
    front.abort();
    ended
}

pub use crate::signals::shutdown_signal;
