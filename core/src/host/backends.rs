//! The backend traits the dispatcher serves requests through — [`HttpClient`], [`ProcessRunner`],
//! [`Inquirer`] — their wire-free request/response types, the [`Unavailable`] backend of a
//! platform that lacks one, and the [`DispatchEvents`] observers.

use crate::maybe::{BoxFuture, MaybeSend, MaybeSync};
use crate::policy::ProcessGrant;
use crate::protocol::{Header, Id};

use super::BackendError;

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

    /// Like [`send`](Self::send), handing the body to `on_chunk` piece by piece as it arrives
    /// (a model's streamed reply shown while it is written); the response still holds the whole
    /// body. By default the body comes in one piece, at the end.
    fn send_streaming<'a>(
        &'a self,
        request: HttpRequest,
        on_chunk: crate::maybe::OnBytes<'a>,
    ) -> BoxFuture<'a, Result<HttpResponse, BackendError>> {
        Box::pin(async move {
            let response = self.send(request).await?;
            on_chunk(&response.body);
            Ok(response)
        })
    }
}

/// One process to run.
#[derive(Debug, Clone)]
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
    /// What an OS sandbox must grant the process ([`AccessPolicy::process_grant`](crate::policy::AccessPolicy::process_grant)); an error
    /// says why the policy cannot be held by a kernel sandbox (a runner that sandboxes refuses
    /// to run it).
    pub grant: Result<ProcessGrant, crate::policy::GrantError>,
    /// Who decides the connections of a process whose grant has the network (through jp's
    /// egress proxy): the tool's policy, inquirer and trace. `None`: nobody — a runner then
    /// gives such a process no network.
    pub egress: Option<std::sync::Arc<super::EgressGate>>,
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

/// Nobody is there to ask (a host without an inquirer): every inquiry is denied at once with
/// this message, which says how to allow it there.
#[derive(Debug, Clone)]
pub struct NoOneToAsk(pub String);

impl Inquirer for NoOneToAsk {
    fn ask<'a>(&'a self, _: &'a Inquiry) -> BoxFuture<'a, InquiryAnswer> {
        Box::pin(async { InquiryAnswer::Deny(self.0.clone()) })
    }
}

/// One policy decision, for `--trace` and the browser's request log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEvent {
    /// The tool (or `mcp.<server>` for an MCP server's own connections) it was decided for.
    pub tool: String,
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
