//! The one request dispatcher.
//!
//! A tool's request — from a VFS subprocess (native), a `jp:host` import of a wasmtime component
//! (native) or of a jco component (browser) — arrives here as a [`HostRequest`]. The
//! [`Dispatcher`] checks it against the tool's [`AccessPolicy`], asks the user through the
//! [`Inquirer`] when the policy says so, resolves it through [`ProjectFiles`], [`HttpClient`] or
//! [`ProcessRunner`], scrubs secrets from everything it returns, enforces the size cap and answers.
//! Every failure becomes a [`HostError`], and [`HostError::code`] is the one place where failures
//! map to D11 error codes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use crate::files::{FilesError, GrepQuery, ProjectFiles};
use crate::maybe::{BoxFuture, MaybeSend, MaybeSync};
use crate::policy::{AccessPolicy, Capability, Decision, ProcessGrant, Scrubber, WorkspacePath, is_base_env};
use crate::protocol::{
    DEFAULT_MAX_CONTENT, DEFAULT_MAX_LINE, EmptyResult, ErrorCode, Frame, FsExistsResult, FsGrepResult,
    FsListDirResult, FsMetadataResult, FsReadResult, Header, HostRequest, HttpResult, Id, Message, ProcessRunResult,
    Request, Response, RpcError, decode_content, decode_frame, encode_content, encode_message,
};

/// A failed request. [`HostError::code`] maps each variant to its D11 code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// Malformed message.
    #[error("{0}")]
    InvalidRequest(String),
    /// Unknown method.
    #[error("{0}")]
    MethodNotFound(String),
    /// Bad parameters.
    #[error("{0}")]
    InvalidParams(String),
    /// The request would carry more than the size cap.
    #[error("{0}")]
    TooLarge(String),
    /// The policy (or the user) refused.
    #[error("{0}")]
    AccessDenied(String),
    /// No such file or resource.
    #[error("{0}")]
    NotFound(String),
    /// The target exists.
    #[error("{0}")]
    AlreadyExists(String),
    /// Timed out.
    #[error("{0}")]
    Timeout(String),
    /// Cancelled.
    #[error("{0}")]
    Cancelled(String),
    /// This platform or host lacks the capability.
    #[error("{0}")]
    Unavailable(String),
    /// The host failed.
    #[error("{0}")]
    Internal(String),
}

impl HostError {
    /// The D11 error code of this error. This is the only mapping from failures to codes.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::InvalidRequest(_) => ErrorCode::InvalidRequest,
            Self::MethodNotFound(_) | Self::Unavailable(_) => ErrorCode::MethodNotFound,
            Self::InvalidParams(_) | Self::TooLarge(_) => ErrorCode::InvalidParams,
            Self::AccessDenied(_) => ErrorCode::AccessDenied,
            Self::NotFound(_) => ErrorCode::NotFound,
            Self::AlreadyExists(_) => ErrorCode::AlreadyExists,
            Self::Timeout(_) => ErrorCode::Timeout,
            Self::Cancelled(_) => ErrorCode::Cancelled,
            Self::Internal(_) => ErrorCode::InternalError,
        }
    }

    /// As a JSON-RPC error object.
    pub fn to_rpc(&self) -> RpcError {
        RpcError::new(self.code(), self.to_string())
    }

    /// From a JSON-RPC error object (the tool side of the SDK).
    pub fn from_rpc(err: &RpcError) -> Self {
        let m = err.message.clone();
        match ErrorCode::from_code(err.code) {
            Some(ErrorCode::InvalidRequest) => Self::InvalidRequest(m),
            Some(ErrorCode::MethodNotFound) => Self::MethodNotFound(m),
            Some(ErrorCode::InvalidParams) => Self::InvalidParams(m),
            Some(ErrorCode::AccessDenied) => Self::AccessDenied(m),
            Some(ErrorCode::NotFound) => Self::NotFound(m),
            Some(ErrorCode::AlreadyExists) => Self::AlreadyExists(m),
            Some(ErrorCode::Timeout) => Self::Timeout(m),
            Some(ErrorCode::Cancelled) => Self::Cancelled(m),
            Some(ErrorCode::InternalError) | None => Self::Internal(m),
        }
    }
}

impl From<RpcError> for HostError {
    fn from(e: RpcError) -> Self {
        Self::from_rpc(&e)
    }
}

impl From<FilesError> for HostError {
    fn from(e: FilesError) -> Self {
        let m = e.to_string();
        match e {
            FilesError::NotFound(_) => Self::NotFound(m),
            FilesError::AlreadyExists(_) => Self::AlreadyExists(m),
            FilesError::IsADirectory(_) | FilesError::NotADirectory(_) | FilesError::InvalidPattern(_) => {
                Self::InvalidParams(m)
            }
            FilesError::InvalidPath(_) => Self::AccessDenied(format!("Access denied: {m}")),
            FilesError::Unsupported(_) => Self::Unavailable(m),
            FilesError::Io { .. } => Self::Internal(m),
        }
    }
}

/// A failure of an HTTP client or process runner backend.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// The backend does not exist on this platform.
    #[error("{0}")]
    Unavailable(String),
    /// The operation timed out.
    #[error("{0}")]
    Timeout(String),
    /// The operation was cancelled.
    #[error("{0}")]
    Cancelled(String),
    /// The program or resource does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The output exceeded the cap.
    #[error("{0}")]
    TooLarge(String),
    /// Anything else (connection refused, spawn failed, …).
    #[error("{0}")]
    Failed(String),
}

impl From<BackendError> for HostError {
    fn from(e: BackendError) -> Self {
        match e {
            BackendError::Unavailable(m) => Self::Unavailable(m),
            BackendError::Timeout(m) => Self::Timeout(m),
            BackendError::Cancelled(m) => Self::Cancelled(m),
            BackendError::NotFound(m) => Self::NotFound(m),
            BackendError::TooLarge(m) => Self::TooLarge(m),
            BackendError::Failed(m) => Self::Internal(m),
        }
    }
}

/// HTTP methods the protocol offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethod {
    /// `http.get`
    Get,
    /// `http.post`
    Post,
}

/// One HTTP exchange as the dispatcher hands it to a client. Redirects are *not* followed by the
/// client: the dispatcher follows them itself so that each hop is checked against the policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// Method.
    pub method: HttpMethod,
    /// Absolute URL.
    pub url: String,
    /// Headers with `${VAR}` already substituted.
    pub headers: Vec<Header>,
    /// Body (empty for GET).
    pub body: Vec<u8>,
    /// Largest body the client may return.
    pub max_body: usize,
}

/// An HTTP response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// Headers.
    pub headers: Vec<Header>,
    /// Body.
    pub body: Vec<u8>,
}

/// The platform's HTTP client (reqwest natively, `fetch` in the browser).
pub trait HttpClient: MaybeSend + MaybeSync {
    /// Perform one exchange without following redirects.
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, BackendError>>;
}

/// One process to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessRequest {
    /// Program name.
    pub program: String,
    /// Arguments.
    pub args: Vec<String>,
    /// The complete environment (clean: base variables plus the allowed ones).
    pub env: Vec<(String, String)>,
    /// Working directory: the materialised project root, when the project backend has one. A
    /// runner that needs a real directory refuses to run without it.
    pub cwd: Option<String>,
    /// Largest stdout/stderr kept, each.
    pub max_output: usize,
    /// What an OS sandbox must grant the process ([`AccessPolicy::process_grant`]); an error
    /// says why the policy cannot be held by a kernel sandbox (a runner that sandboxes refuses
    /// to run it).
    pub grant: Result<ProcessGrant, String>,
}

/// What a process produced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProcessOutput {
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Standard error.
    pub stderr: Vec<u8>,
    /// Exit code; `None` when killed by a signal.
    pub exit_code: Option<i32>,
}

/// The platform's way to run host processes.
pub trait ProcessRunner: MaybeSend + MaybeSync {
    /// Run to completion.
    fn run(&self, request: ProcessRequest) -> BoxFuture<'_, Result<ProcessOutput, BackendError>>;
}

/// A backend for a capability this platform does not have; every call fails with `reason`.
#[derive(Debug, Clone)]
pub struct Unavailable {
    /// The message every call returns.
    pub reason: String,
}

impl Unavailable {
    /// A backend that always answers `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        Self { reason: reason.into() }
    }

    /// The default HTTP client of a host that has none.
    pub fn no_http() -> Self {
        Self::new("http.get and http.post are not available: this host has no HTTP client")
    }

    /// The default process runner of a host that cannot run processes.
    pub fn no_process() -> Self {
        Self::new("process.run is not available: this host cannot run processes")
    }
}

impl HttpClient for Unavailable {
    fn send(&self, _: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, BackendError>> {
        Box::pin(async move { Err(BackendError::Unavailable(self.reason.clone())) })
    }
}

impl ProcessRunner for Unavailable {
    fn run(&self, _: ProcessRequest) -> BoxFuture<'_, Result<ProcessOutput, BackendError>> {
        Box::pin(async move { Err(BackendError::Unavailable(self.reason.clone())) })
    }
}

/// An HTTP client answering from a fixed table — for tests, vectors and offline demos. A route
/// with `echo` answers with a JSON description of the request it received.
#[derive(Debug, Default)]
pub struct StaticHttpClient {
    routes: BTreeMap<String, StaticRoute>,
    log: Mutex<Vec<HttpRequest>>,
}

/// One route of a [`StaticHttpClient`].
#[derive(Debug, Clone)]
pub enum StaticRoute {
    /// Answer with this response.
    Respond(HttpResponse),
    /// Answer 200 with `{"method","url","headers","body"}` of the request.
    Echo,
    /// Fail as a client would (timeout, cancellation, connection error).
    Fail(BackendError),
}

impl StaticHttpClient {
    /// A client with these routes, keyed by exact URL.
    pub fn new(routes: BTreeMap<String, StaticRoute>) -> Self {
        Self { routes, log: Mutex::default() }
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<HttpRequest> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl HttpClient for StaticHttpClient {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, BackendError>> {
        Box::pin(async move {
            if let Ok(mut log) = self.log.lock() {
                log.push(request.clone());
            }
            match self.routes.get(&request.url) {
                Some(StaticRoute::Respond(r)) => Ok(r.clone()),
                Some(StaticRoute::Echo) => {
                    let headers: Vec<Value> =
                        request.headers.iter().map(|h| serde_json::json!({"name": h.name, "value": h.value})).collect();
                    let body = serde_json::json!({
                        "method": match request.method { HttpMethod::Get => "GET", HttpMethod::Post => "POST" },
                        "url": request.url,
                        "headers": headers,
                        "body": String::from_utf8_lossy(&request.body),
                    });
                    Ok(HttpResponse { status: 200, headers: Vec::new(), body: body.to_string().into_bytes() })
                }
                Some(StaticRoute::Fail(e)) => Err(e.clone()),
                None => Err(BackendError::Failed(format!("connection refused: {}", request.url))),
            }
        })
    }
}

/// A process runner answering from a fixed table keyed by program name — for tests and vectors.
#[derive(Debug, Default)]
pub struct StaticProcessRunner {
    programs: BTreeMap<String, Result<ProcessOutput, BackendError>>,
    log: Mutex<Vec<ProcessRequest>>,
}

impl StaticProcessRunner {
    /// A runner with these canned outputs (or failures), by program name.
    pub fn new(programs: BTreeMap<String, Result<ProcessOutput, BackendError>>) -> Self {
        Self { programs, log: Mutex::default() }
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<ProcessRequest> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl ProcessRunner for StaticProcessRunner {
    fn run(&self, request: ProcessRequest) -> BoxFuture<'_, Result<ProcessOutput, BackendError>> {
        Box::pin(async move {
            if let Ok(mut log) = self.log.lock() {
                log.push(request.clone());
            }
            self.programs.get(&request.program).cloned().unwrap_or_else(|| {
                Err(BackendError::NotFound(format!("program '{}' not found on PATH", request.program)))
            })
        })
    }
}

/// A question for the user about one request that the policy does not settle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inquiry {
    /// The tool asking.
    pub tool: String,
    /// The protocol method, e.g. `fs.read`.
    pub method: String,
    /// The path, URL or command line.
    pub target: String,
    /// Why the policy asks.
    pub reason: String,
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InquiryAnswer {
    /// Allow this request.
    Allow,
    /// Allow this and every further inquiry of this call.
    AllowAll,
    /// Refuse, with an explanation for the tool.
    Deny(String),
}

/// Who answers inquiries: a terminal prompt, a JS callback, or nobody.
pub trait Inquirer: MaybeSend + MaybeSync {
    /// Ask and wait for the answer.
    fn ask<'a>(&'a self, inquiry: &'a Inquiry) -> BoxFuture<'a, InquiryAnswer>;
}

/// Non-interactive mode: every inquiry is denied at once with a message that says how to allow it.
#[derive(Debug, Default, Clone, Copy)]
pub struct DenyInquirer;

impl Inquirer for DenyInquirer {
    fn ask<'a>(&'a self, _: &'a Inquiry) -> BoxFuture<'a, InquiryAnswer> {
        Box::pin(async {
            InquiryAnswer::Deny(
                "no one can be asked in non-interactive mode; allow it in the tool's configuration or run interactively".into(),
            )
        })
    }
}

/// An inquirer that gives the same answer every time (tests, scripted runs).
#[derive(Debug, Clone)]
pub struct StaticInquirer(pub InquiryAnswer);

impl Inquirer for StaticInquirer {
    fn ask<'a>(&'a self, _: &'a Inquiry) -> BoxFuture<'a, InquiryAnswer> {
        Box::pin(async move { self.0.clone() })
    }
}

/// One policy decision, for `--trace` and the browser's request log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEvent {
    /// The protocol method.
    pub method: String,
    /// Path, URL or command.
    pub target: String,
    /// `allow`, `deny` or `ask`.
    pub decision: &'static str,
    /// The policy's explanation.
    pub reason: String,
    /// Whether the request went ahead (after any inquiry).
    pub allowed: bool,
}

/// Observers of the dispatcher: the VFS runtime sends `pending`, the CLI prints `--trace`, the
/// browser streams events. Both methods default to doing nothing.
pub trait DispatchEvents: MaybeSend + MaybeSync {
    /// A request is held while the user is asked.
    fn pending(&self, _request_id: &Id, _reason: &str) {}
    /// A policy decision was made.
    fn decided(&self, _event: &TraceEvent) {}
}

/// Events go nowhere.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoEvents;
impl DispatchEvents for NoEvents {}

/// How many redirects the dispatcher follows, each re-checked against the policy.
pub const MAX_REDIRECTS: usize = 10;

/// Serves the requests of one tool call. Cheap to build: it holds `Arc`s and per-call state (the
/// "allow all for this call" answer).
pub struct Dispatcher {
    tool: String,
    policy: Arc<AccessPolicy>,
    files: Arc<dyn ProjectFiles>,
    http: Arc<dyn HttpClient>,
    process: Arc<dyn ProcessRunner>,
    inquirer: Arc<dyn Inquirer>,
    env: BTreeMap<String, String>,
    scrubber: Scrubber,
    max_content: usize,
    max_line: usize,
    approve_all: AtomicBool,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("tool", &self.tool)
            .field("files", &self.files.display_root())
            .finish_non_exhaustive()
    }
}

/// Builds a [`Dispatcher`]; backends default to "unavailable" and inquiries to [`DenyInquirer`].
pub struct DispatcherBuilder {
    inner: Dispatcher,
    secret_names: Vec<String>,
}

impl DispatcherBuilder {
    /// The HTTP client.
    pub fn http(mut self, http: Arc<dyn HttpClient>) -> Self {
        self.inner.http = http;
        self
    }

    /// The process runner.
    pub fn process(mut self, process: Arc<dyn ProcessRunner>) -> Self {
        self.inner.process = process;
        self
    }

    /// Who answers inquiries.
    pub fn inquirer(mut self, inquirer: Arc<dyn Inquirer>) -> Self {
        self.inner.inquirer = inquirer;
        self
    }

    /// The host environment. Only the base variables (PATH, HOME, USER, LANG, LC_*) and those
    /// the policy names are kept; the values of the latter are the secrets that get scrubbed, so
    /// passing the whole process environment is safe.
    pub fn env(mut self, env: BTreeMap<String, String>) -> Self {
        let names: std::collections::BTreeSet<&str> = self.inner.policy.resolvable_env().collect();
        self.inner.env = env.into_iter().filter(|(k, _)| is_base_env(k) || names.contains(k.as_str())).collect();
        self
    }

    /// Extra secret values to scrub (besides the environment's).
    pub fn secrets(mut self, names_or_values: Vec<String>) -> Self {
        self.secret_names = names_or_values;
        self
    }

    /// The size cap for one file, body or output (default 10 MiB).
    pub fn max_content(mut self, bytes: usize) -> Self {
        self.inner.max_content = bytes;
        self
    }

    /// The largest response line (default [`DEFAULT_MAX_LINE`]).
    pub fn max_line(mut self, bytes: usize) -> Self {
        self.inner.max_line = bytes;
        self
    }

    /// Finish.
    pub fn build(mut self) -> Dispatcher {
        let mut secrets: Vec<String> =
            self.inner.env.iter().filter(|(k, _)| !is_base_env(k)).map(|(_, v)| v.clone()).collect();
        secrets.append(&mut self.secret_names);
        self.inner.scrubber = Scrubber::new(secrets);
        self.inner
    }
}

fn substitute_headers(
    policy: &AccessPolicy,
    env: &BTreeMap<String, String>,
    headers: &[Header],
) -> Result<Vec<Header>, HostError> {
    let mut out = Vec::with_capacity(headers.len());
    for h in headers {
        let mut value = String::new();
        let mut rest = h.value.as_str();
        while let Some(start) = rest.find("${") {
            let Some(len) = rest[start + 2..].find('}') else { break };
            let name = &rest[start + 2..start + 2 + len];
            value.push_str(&rest[..start]);
            match policy.check_header_env(name) {
                Decision::Allow(_) => {}
                other => return Err(HostError::AccessDenied(other.reason().to_owned())),
            }
            let resolved = env.get(name).ok_or_else(|| {
                HostError::InvalidParams(format!(
                    "header {} uses ${{{name}}}, which is not set in the host environment; set it before starting jp",
                    h.name
                ))
            })?;
            value.push_str(resolved);
            rest = &rest[start + 3 + len..];
        }
        value.push_str(rest);
        out.push(Header { name: h.name.clone(), value });
    }
    Ok(out)
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value, HostError> {
    serde_json::to_value(v).map_err(|e| HostError::Internal(format!("could not encode the result: {e}")))
}

impl Dispatcher {
    /// Start building a dispatcher for `tool` with its policy and project files.
    pub fn builder(
        tool: impl Into<String>,
        policy: Arc<AccessPolicy>,
        files: Arc<dyn ProjectFiles>,
    ) -> DispatcherBuilder {
        DispatcherBuilder {
            inner: Dispatcher {
                tool: tool.into(),
                policy,
                files,
                http: Arc::new(Unavailable::no_http()),
                process: Arc::new(Unavailable::no_process()),
                inquirer: Arc::new(DenyInquirer),
                env: BTreeMap::new(),
                scrubber: Scrubber::default(),
                max_content: DEFAULT_MAX_CONTENT,
                max_line: DEFAULT_MAX_LINE,
                approve_all: AtomicBool::new(false),
            },
            secret_names: Vec::new(),
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> &AccessPolicy {
        &self.policy
    }

    /// The project files.
    pub fn files(&self) -> &Arc<dyn ProjectFiles> {
        &self.files
    }

    /// The scrubber built from the environment's secrets.
    pub fn scrubber(&self) -> &Scrubber {
        &self.scrubber
    }

    /// The largest file, body or output served.
    pub fn max_content(&self) -> usize {
        self.max_content
    }

    /// Decide one filesystem capability on `path` (and on what it resolves to) exactly as a
    /// request would be decided — policy, inquiry, trace — without doing the operation. For
    /// hosts whose file access does not arrive as protocol requests (a component's
    /// `wasi:filesystem`), so it obeys the same rules. Returns the resolved path (symlinks
    /// followed beneath the root) that was decided: act on *that* path, never on `path` again,
    /// so that a symlink swapped in after the decision cannot redirect the operation
    /// (backends do not follow symlinks in the paths they are given).
    pub async fn authorize(
        &self,
        method: &str,
        cap: Capability,
        path: &WorkspacePath,
        events: &dyn DispatchEvents,
    ) -> Result<WorkspacePath, HostError> {
        self.authorize_fs(method, cap, path, &Id::String(format!("{method}:{}", path.as_str())), events).await
    }

    /// Serve one NDJSON frame: a request gets a response line; notifications and responses are
    /// not for the dispatcher and get `None`; malformed input gets a -32600 response.
    pub async fn handle_frame(&self, frame: &Frame, events: &dyn DispatchEvents) -> Option<Vec<u8>> {
        match decode_frame(frame, self.max_line) {
            Err((id, e)) => Some(encode_message(&Message::Response(Response { id, outcome: Err(e) }))),
            Ok(Message::Request(req)) => {
                Some(encode_message(&Message::Response(self.handle_request(&req, events).await)))
            }
            Ok(_) => None,
        }
    }

    /// Serve one request envelope.
    pub async fn handle_request(&self, req: &Request, events: &dyn DispatchEvents) -> Response {
        let outcome = match HostRequest::parse(&req.method, req.params.clone()) {
            Err(e) => Err(e),
            Ok(typed) => self.handle(&typed, &req.id, events).await.map_err(|e| e.to_rpc()),
        };
        let mut response = Response { id: Some(req.id.clone()), outcome };
        // Backstop: scrub the whole answer (also error messages), keeping it valid JSON.
        let scrub_value = |v: &Value| -> Option<Value> {
            let text = v.to_string();
            let scrubbed = self.scrubber.scrub_str(&text);
            match scrubbed {
                std::borrow::Cow::Borrowed(_) => None,
                std::borrow::Cow::Owned(s) => serde_json::from_str(&s).ok(),
            }
        };
        match &mut response.outcome {
            Ok(v) => {
                if let Some(s) = scrub_value(v) {
                    *v = s;
                }
            }
            Err(e) => e.message = self.scrubber.scrub_str(&e.message).into_owned(),
        }
        let size = encode_message(&Message::Response(response.clone())).len();
        if size > self.max_line {
            response.outcome = Err(HostError::TooLarge(format!(
                "the response to {} would be {size} bytes, over the {}-byte message limit; narrow the request (fewer paths, a more specific pattern)",
                req.method, self.max_line
            ))
            .to_rpc());
        }
        response
    }

    async fn enforce(
        &self,
        method: &str,
        target: &str,
        decision: Decision,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<(), HostError> {
        let kind = decision.kind();
        let rule = decision.reason().to_owned();
        let result = match decision {
            Decision::Allow(_) => Ok(()),
            Decision::Deny(reason) => Err(HostError::AccessDenied(reason)),
            Decision::Ask(reason) => {
                if self.approve_all.load(Ordering::SeqCst) {
                    Ok(())
                } else {
                    events.pending(id, &format!("awaiting user approval: {reason}"));
                    let inquiry = Inquiry {
                        tool: self.tool.clone(),
                        method: method.into(),
                        target: target.into(),
                        reason: reason.clone(),
                    };
                    match self.inquirer.ask(&inquiry).await {
                        InquiryAnswer::Allow => Ok(()),
                        InquiryAnswer::AllowAll => {
                            self.approve_all.store(true, Ordering::SeqCst);
                            Ok(())
                        }
                        InquiryAnswer::Deny(why) => {
                            Err(HostError::AccessDenied(format!("Access denied: {reason}; {why}")))
                        }
                    }
                }
            }
        };
        // The rule that decided (for an allow or an answered inquiry), or why it was refused.
        let reason = match &result {
            Ok(()) => rule,
            Err(e) => e.to_string(),
        };
        events.decided(&TraceEvent {
            method: method.into(),
            target: target.into(),
            decision: kind,
            reason,
            allowed: result.is_ok(),
        });
        result
    }

    /// Check a filesystem capability on a path and on what it resolves to (symlinks).
    async fn authorize_fs(
        &self,
        method: &str,
        cap: Capability,
        path: &WorkspacePath,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<WorkspacePath, HostError> {
        let resolved = self.files.resolve(path).await.map_err(|e| match e {
            FilesError::InvalidPath(p) => HostError::AccessDenied(format!("Access denied: {p}")),
            other => HostError::from(other),
        })?;
        let mut decision = self.policy.check_fs(cap, path);
        if &resolved != path {
            let second = self.policy.check_fs(cap, &resolved);
            decision = match (&decision, &second) {
                (Decision::Deny(_), _) => decision,
                (_, Decision::Deny(r)) => {
                    Decision::Deny(format!("{r} ('{}' resolves to '{}')", path.display(), resolved.display()))
                }
                (Decision::Ask(_), _) => decision,
                (_, Decision::Ask(_)) => second,
                _ => decision,
            };
        }
        self.enforce(method, path.display(), decision, id, events).await?;
        Ok(resolved)
    }

    fn parse_path(&self, text: &str) -> Result<WorkspacePath, HostError> {
        WorkspacePath::parse(text).map_err(|e| HostError::AccessDenied(format!("Access denied: {e}")))
    }

    fn scrubbed(&self, bytes: Vec<u8>) -> Vec<u8> {
        match self.scrubber.scrub_bytes(&bytes) {
            std::borrow::Cow::Borrowed(_) => bytes,
            std::borrow::Cow::Owned(b) => b,
        }
    }

    fn too_large(&self, what: &str, size: usize) -> HostError {
        HostError::TooLarge(format!(
            "{what} is {size} bytes, over the {}-byte limit; process it in pieces or through process.run",
            self.max_content
        ))
    }

    /// Serve one typed request; the result is the JSON `result` value.
    pub async fn handle(
        &self,
        request: &HostRequest,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<Value, HostError> {
        let method = request.method();
        match request {
            HostRequest::FsRead(p) => {
                let path = self.parse_path(&p.path)?;
                // Act on the path decided (links resolved): backends do not follow links again.
                let path = self.authorize_fs(method, Capability::Read, &path, id, events).await?;
                let meta = self.files.metadata(&path).await?;
                if meta.size as usize > self.max_content {
                    return Err(self.too_large(&format!("'{}'", path.display()), meta.size as usize));
                }
                let bytes = self.files.read(&path).await?;
                if bytes.len() > self.max_content {
                    return Err(self.too_large(&format!("'{}'", path.display()), bytes.len()));
                }
                let size = bytes.len() as u64;
                let (content, encoding) = encode_content(self.scrubbed(bytes));
                to_value(&FsReadResult { content, encoding, size })
            }
            HostRequest::FsWrite(p) => {
                let path = self.parse_path(&p.path)?;
                let bytes = decode_content(&p.content, p.encoding).map_err(HostError::InvalidParams)?;
                if bytes.len() > self.max_content {
                    return Err(self.too_large("the content", bytes.len()));
                }
                // Whether the target exists, through its links; a path that cannot be resolved
                // is refused by authorize_fs, which says why.
                let exists = match self.files.resolve(&path).await {
                    Ok(target) => self.files.exists(&target).await?,
                    Err(_) => false,
                };
                let cap = if exists { Capability::Update } else { Capability::Create };
                let path = self.authorize_fs(method, cap, &path, id, events).await?;
                self.files.write(&path, &bytes).await?;
                to_value(&EmptyResult {})
            }
            HostRequest::FsExists(p) => {
                let path = self.parse_path(&p.path)?;
                self.authorize_fs(method, Capability::Read, &path, id, events).await?;
                to_value(&FsExistsResult { exists: self.files.exists(&path).await? })
            }
            HostRequest::FsListDir(p) => {
                let path = self.parse_path(&p.path)?;
                self.authorize_fs(method, Capability::Read, &path, id, events).await?;
                let mut entries = self.files.list_dir(&path).await?;
                for e in &mut entries {
                    e.path = self.scrubber.scrub_str(&e.path).into_owned();
                }
                to_value(&FsListDirResult { entries })
            }
            HostRequest::FsMetadata(p) => {
                let path = self.parse_path(&p.path)?;
                self.authorize_fs(method, Capability::Read, &path, id, events).await?;
                let m = self.files.metadata(&path).await?;
                to_value(&FsMetadataResult { kind: m.kind, size: m.size })
            }
            HostRequest::FsDelete(p) => {
                let path = self.parse_path(&p.path)?;
                self.authorize_fs(method, Capability::Delete, &path, id, events).await?;
                self.files.delete(&path).await?;
                to_value(&EmptyResult {})
            }
            HostRequest::FsRename(p) => {
                let from = self.parse_path(&p.from)?;
                let to = self.parse_path(&p.to)?;
                // Moving a file reads and removes it at `from` and creates it at `to`.
                self.authorize_fs(method, Capability::Read, &from, id, events).await?;
                self.authorize_fs(method, Capability::Delete, &from, id, events).await?;
                self.authorize_fs(method, Capability::Create, &to, id, events).await?;
                self.files.rename(&from, &to).await?;
                to_value(&EmptyResult {})
            }
            HostRequest::FsGrep(p) => {
                let paths = p.paths.clone().unwrap_or_default();
                let query =
                    GrepQuery::new(&p.pattern, &paths, p.extensions.as_deref().unwrap_or(&[]), p.context.unwrap_or(0))
                        .map_err(|e| match e {
                            FilesError::InvalidPath(pe) => HostError::AccessDenied(format!("Access denied: {pe}")),
                            other => HostError::InvalidParams(format!("Invalid params for fs.grep: {other}")),
                        })?;
                let roots = if query.paths.is_empty() { vec![WorkspacePath::root()] } else { query.paths.clone() };
                for root in &roots {
                    self.authorize_fs(method, Capability::Read, root, id, events).await?;
                }
                let mut matches = self.files.grep(&query).await?;
                // A rule may deny part of an allowed tree (`secrets/` under `.`), and sensitive
                // files ask: neither is searched without a decision of its own.
                let mut kept = Vec::with_capacity(matches.len());
                for mut m in matches.drain(..) {
                    let Ok(path) = WorkspacePath::parse(&m.path) else { continue };
                    if !self.policy.check_fs(Capability::Read, &path).is_allow() {
                        continue;
                    }
                    if let Ok(resolved) = self.files.resolve(&path).await
                        && resolved != path
                        && !self.policy.check_fs(Capability::Read, &resolved).is_allow()
                    {
                        continue;
                    }
                    for line in &mut m.lines {
                        line.content = self.scrubber.scrub_str(&line.content).into_owned();
                    }
                    kept.push(m);
                }
                to_value(&FsGrepResult { matches: kept })
            }
            HostRequest::HttpGet(p) => self.http(HttpMethod::Get, &p.url, &p.headers, Vec::new(), id, events).await,
            HostRequest::HttpPost(p) => {
                let body = decode_content(&p.body, p.encoding).map_err(HostError::InvalidParams)?;
                if body.len() > self.max_content {
                    return Err(self.too_large("the request body", body.len()));
                }
                self.http(HttpMethod::Post, &p.url, &p.headers, body, id, events).await
            }
            HostRequest::ProcessRun(p) => {
                let line = std::iter::once(p.program.as_str())
                    .chain(p.args.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" ");
                self.enforce(method, &line, self.policy.check_process(&p.program, &p.args, &p.envs), id, events)
                    .await?;
                let cwd = self.files.materialize().await.ok().map(|m| m.root);
                let mut env: Vec<(String, String)> =
                    self.env.iter().filter(|(k, _)| is_base_env(k)).map(|(k, v)| (k.clone(), v.clone())).collect();
                for name in &p.envs {
                    if is_base_env(name) {
                        continue;
                    }
                    let value = self.env.get(name).ok_or_else(|| {
                        HostError::InvalidParams(format!("environment variable {name} is not set on the host"))
                    })?;
                    env.push((name.clone(), value.clone()));
                }
                let out = self
                    .process
                    .run(crate::host::ProcessRequest {
                        program: p.program.clone(),
                        args: p.args.clone(),
                        env,
                        cwd,
                        max_output: self.max_content,
                        grant: self.policy.process_grant(),
                    })
                    .await?;
                to_value(&ProcessRunResult {
                    stdout: String::from_utf8_lossy(&self.scrubbed(out.stdout)).into_owned(),
                    stderr: String::from_utf8_lossy(&self.scrubbed(out.stderr)).into_owned(),
                    exit_code: out.exit_code,
                })
            }
        }
    }

    async fn http(
        &self,
        method: HttpMethod,
        url: &str,
        headers: &[Header],
        body: Vec<u8>,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<Value, HostError> {
        let name = match method {
            HttpMethod::Get => "http.get",
            HttpMethod::Post => "http.post",
        };
        let headers = substitute_headers(&self.policy, &self.env, headers)?;
        let mut request = HttpRequest { method, url: url.to_owned(), headers, body, max_body: self.max_content };
        for _ in 0..=MAX_REDIRECTS {
            self.enforce(name, &request.url, self.policy.check_http(&request.url), id, events).await?;
            let response = self.http.send(request.clone()).await?;
            let location =
                response.headers.iter().find(|h| h.name.eq_ignore_ascii_case("location")).map(|h| h.value.clone());
            match (response.status, location) {
                (301 | 302 | 303 | 307 | 308, Some(location)) => {
                    let next = url::Url::parse(&request.url).and_then(|base| base.join(&location)).map_err(|e| {
                        HostError::Internal(format!("redirect to an invalid location {location:?}: {e}"))
                    })?;
                    if response.status == 303
                        || (response.status != 307 && response.status != 308 && request.method == HttpMethod::Post)
                    {
                        request.method = HttpMethod::Get;
                        request.body.clear();
                    }
                    request.url = next.to_string();
                }
                _ => {
                    if response.body.len() > self.max_content {
                        return Err(self.too_large("the response body", response.body.len()));
                    }
                    let (body, encoding) = encode_content(self.scrubbed(response.body));
                    let headers = response
                        .headers
                        .into_iter()
                        .map(|h| Header { value: self.scrubber.scrub_str(&h.value).into_owned(), name: h.name })
                        .collect();
                    return to_value(&HttpResult { status: response.status, body, encoding, headers });
                }
            }
        }
        Err(HostError::Internal(format!("more than {MAX_REDIRECTS} redirects starting at {url}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::InMemoryProjectFiles;
    use crate::policy::SandboxConfig;
    use futures_executor::block_on;
    use serde_json::json;

    #[test]
    fn every_host_error_has_a_code() {
        let all = [
            HostError::InvalidRequest(String::new()),
            HostError::MethodNotFound(String::new()),
            HostError::InvalidParams(String::new()),
            HostError::TooLarge(String::new()),
            HostError::AccessDenied(String::new()),
            HostError::NotFound(String::new()),
            HostError::AlreadyExists(String::new()),
            HostError::Timeout(String::new()),
            HostError::Cancelled(String::new()),
            HostError::Unavailable(String::new()),
            HostError::Internal(String::new()),
        ];
        let codes: std::collections::BTreeSet<i32> = all.iter().map(|e| e.code().code()).collect();
        assert_eq!(codes.len(), 9, "every D11 code is reachable");
    }

    #[test]
    fn redirects_are_rechecked_against_the_policy() {
        let sb: SandboxConfig = toml::from_str(r#"network = { allow = ["https://ok.example"] }"#).unwrap();
        let policy = AccessPolicy::from_config(Some(&sb), None).unwrap();
        let routes = BTreeMap::from([
            (
                "https://ok.example/go".to_owned(),
                StaticRoute::Respond(HttpResponse {
                    status: 302,
                    headers: vec![Header { name: "Location".into(), value: "https://evil.example/x".into() }],
                    body: vec![],
                }),
            ),
            ("https://evil.example/x".to_owned(), StaticRoute::Echo),
        ]);
        let http = Arc::new(StaticHttpClient::new(routes));
        let d = Dispatcher::builder("t", Arc::new(policy), Arc::new(InMemoryProjectFiles::new()))
            .http(http.clone())
            .build();
        let req = HostRequest::parse("http.get", json!({"url":"https://ok.example/go"})).unwrap();
        let err = block_on(d.handle(&req, &Id::Number(1), &NoEvents)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::AccessDenied);
        assert!(err.to_string().contains("evil.example"), "{err}");
        assert_eq!(http.requests().len(), 1, "the redirect target was never contacted");
    }

    #[test]
    fn allow_all_answer_lasts_for_the_call() {
        struct Counting(Mutex<u32>);
        impl Inquirer for Counting {
            fn ask<'a>(&'a self, _: &'a Inquiry) -> BoxFuture<'a, InquiryAnswer> {
                *self.0.lock().unwrap() += 1;
                Box::pin(async { InquiryAnswer::AllowAll })
            }
        }
        let files = Arc::new(InMemoryProjectFiles::with_files([(".env", "A=1"), ("x/.env", "B=2")]).unwrap());
        let asker = Arc::new(Counting(Mutex::new(0)));
        let d = Dispatcher::builder("t", Arc::new(AccessPolicy::vfs_default()), files).inquirer(asker.clone()).build();
        for path in [".env", "x/.env"] {
            let req = HostRequest::parse("fs.read", json!({ "path": path })).unwrap();
            block_on(d.handle(&req, &Id::Number(1), &NoEvents)).unwrap();
        }
        assert_eq!(*asker.0.lock().unwrap(), 1);
    }
}
