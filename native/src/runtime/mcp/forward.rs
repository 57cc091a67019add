//! What a wrapped MCP server (`[mcp.servers.*]`) sends towards the agent, passed on through
//! `jp mcp` (issue 25) — and only within bounds, since every wrapped server is untrusted:
//!
//! - Its `notifications/progress` for a call becomes progress of the agent's own `tools/call`
//!   (the agent's `progressToken`; only if it gave one), in place of jp's "running for N s"
//!   ticks, rebased so that the values the agent sees keep increasing ([`Caller`]).
//! - Its `notifications/message` reaches every agent session as a log message whose logger is
//!   the server's name, at or above the level that session set ([`AgentSession`]); its list-changed
//!   notifications reach every session, `notifications/resources/updated` the sessions that
//!   subscribed to that URI.
//! - Its `elicitation/create`, `sampling/createMessage` and `roots/list` reach the agent's client
//!   when its `forward` lists them and the client declared them ([`Wrapped`](super::wrapped::Wrapped)): asked of the
//!   session whose call of that server is running (a question says which server asks, so a server
//!   cannot pose as jp). Everything else is declined as before, with the reason.
//!
//! Bounds: the transport hands each notification over without waiting ([`Inbox::take`]): a
//! call's progress goes to that call's queue ([`MAX_CALL_PROGRESS`]), the rest to the server's
//! queue ([`MAX_QUEUED`]), drained by one task; what does not fit is dropped and counted (said
//! in the next log message). A log message's data is cut at [`MAX_LOG_DATA`], a progress or
//! elicitation message at [`MAX_TEXT`] characters. (rmcp's own handler would spawn a task per
//! notification, without a bound.)

// Logging, roots and sampling are deprecated by SEP-2577, but 2025-11-25 clients speak them.
#![allow(deprecated)]

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use jp_core::runtime::{McpForward, McpServerConfig};
use rmcp::model::{
    ClientResult, LoggingLevel, ProgressNotificationParam, ProgressToken, RequestId, RequestMetaObject,
    ServerNotification, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, PeerRequestOptions, RequestContext, SubscriptionSink};
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use tokio::sync::mpsc;

use super::ask::{ASK_TIMEOUT, Client, Questions};

mod inbox;

pub use inbox::{Inbox, MAX_LOG_DATA, MAX_QUEUED};

/// Most progress notifications of one call waiting to be passed on; more are dropped.
pub const MAX_CALL_PROGRESS: usize = 16;

/// Most characters of a forwarded progress or elicitation message; more are cut.
pub const MAX_TEXT: usize = 4096;

tokio::task_local! {
    /// The agent's `tools/call` being served in this task (set by `jp mcp` around a call), so
    /// that the wrapped server's call can be tied to it.
    pub(crate) static CALLER: Arc<Caller>;
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `text` cut to [`MAX_TEXT`] characters.
pub(super) fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT) {
        Some((i, _)) => format!("{}… (cut by jp at {MAX_TEXT} characters)", &text[..i]),
        None => text.to_owned(),
    }
}

/// The severity rank of `level` (debug lowest).
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// One `jp mcp` session's client (the agent's): its peer once known, the log level it set,
/// the URIs it subscribed to.
#[derive(Default)]
pub struct AgentSession {
    peer: Mutex<Option<Peer<RoleServer>>>,
    level: Mutex<Option<LoggingLevel>>,
    subscriptions: Mutex<HashSet<String>>,
    /// The open `subscriptions/listen` streams of a 2026-07-28 client: its change notifications
    /// go there, filtered by what each accepted, and nowhere else.
    listeners: Mutex<Vec<SubscriptionSink>>,
}

impl std::fmt::Debug for AgentSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentSession").field("level", &*lock(&self.level)).finish_non_exhaustive()
    }
}

impl AgentSession {
    /// Remember the session's peer (the first one seen).
    pub fn attach(&self, peer: &Peer<RoleServer>) {
        lock(&self.peer).get_or_insert_with(|| peer.clone());
    }

    pub(super) fn peer(&self) -> Option<Peer<RoleServer>> {
        lock(&self.peer).clone()
    }

    /// The level the client set (`logging/setLevel`).
    pub fn set_level(&self, level: LoggingLevel) {
        *lock(&self.level) = Some(level);
    }

    /// Whether the session subscribed to `uri`; `subscribe` adds or removes it.
    pub fn subscribe(&self, uri: &str, subscribe: bool) {
        let mut subs = lock(&self.subscriptions);
        if subscribe {
            subs.insert(uri.to_owned());
        } else {
            subs.remove(uri);
        }
    }

    fn subscribed(&self, uri: &str) -> bool {
        lock(&self.subscriptions).contains(uri)
    }

    /// Add a `subscriptions/listen` stream (MCP 2026-07-28).
    pub fn listen(&self, sink: SubscriptionSink) {
        lock(&self.listeners).push(sink);
    }

    /// Remove the stream of listen request `id`.
    pub fn unlisten(&self, id: &rmcp::model::RequestId) {
        lock(&self.listeners).retain(|s| s.id() != id);
    }

    /// Whether the client speaks 2026-07-28, where change notifications go only to the
    /// `subscriptions/listen` streams it opened.
    fn listens(&self) -> bool {
        self.peer().and_then(|p| p.peer_info()).is_some_and(|i| !i.protocol_version.has_initialize())
    }

    /// Send a change notification to every listen stream that accepted it.
    async fn to_listeners(&self, notification: &ServerNotification) {
        let sinks = lock(&self.listeners).clone();
        for sink in sinks {
            let _ = sink.send(notification.clone()).await;
        }
    }

    /// Whether the client declared `what` (and can be asked by request: not 2026-07-28).
    pub fn declared(&self, what: McpForward) -> bool {
        let Some(info) = self.peer().and_then(|p| p.peer_info()) else { return false };
        if !info.protocol_version.has_initialize() {
            return false;
        }
        let caps = &info.capabilities;
        match what {
            McpForward::Elicitation => caps.elicitation.is_some(),
            McpForward::Sampling => caps.sampling.is_some(),
            McpForward::Roots => caps.roots.is_some(),
        }
    }

    /// Whether a call of a server configured as `config` must go through rmcp (not the raw
    /// relay), so that what it asks can be forwarded to this client.
    pub fn forwards_any(&self, config: &McpServerConfig) -> bool {
        [McpForward::Elicitation, McpForward::Sampling, McpForward::Roots]
            .into_iter()
            .any(|f| config.forwards(f) && self.declared(f))
    }
}

/// Where jp's own progress ticks and a server's forwarded progress stand for one call.
#[derive(Default)]
struct Progress {
    /// jp's ticks sent so far.
    ticks: u32,
    /// The ticks sent before the server's first report: its values are shifted by as much.
    offset: Option<f64>,
    /// The server's last value passed on.
    last: Option<f64>,
    /// The call has ended: nothing more is sent.
    ended: bool,
}

/// One agent `tools/call` served by `jp mcp`: where its progress and its questions go.
pub struct Caller {
    session: Arc<AgentSession>,
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    origin: RequestId,
    pub(super) asker: Client,
    progress: tokio::sync::Mutex<Progress>,
}

impl Caller {
    /// The call `ctx` belongs to, in `session`; its questions go through `questions` (MRTR).
    pub(crate) fn new(
        session: &Arc<AgentSession>,
        ctx: &RequestContext<RoleServer>,
        questions: Option<Questions>,
    ) -> Arc<Self> {
        session.attach(&ctx.peer);
        Arc::new(Self {
            session: session.clone(),
            peer: ctx.peer.clone(),
            token: ctx.meta.get_progress_token(),
            origin: ctx.id.clone(),
            asker: Client::new(ctx, questions),
            progress: tokio::sync::Mutex::default(),
        })
    }

    /// Whether the agent asked for progress.
    pub(crate) fn wants_progress(&self) -> bool {
        self.token.is_some()
    }

    /// jp's own "running for N s", unless the server reports progress itself.
    pub(crate) async fn tick(&self) {
        let Some(token) = &self.token else { return };
        let mut p = self.progress.lock().await;
        if p.offset.is_some() || p.ended {
            return;
        }
        p.ticks += 1;
        let n = p.ticks;
        let note =
            ProgressNotificationParam::new(token.clone(), f64::from(n)).with_message(format!("running for {n} s"));
        // Sent and flushed under the lock: the result, and the server's progress, cannot overtake it.
        let _ = self.peer.notify_progress(note).await;
    }

    /// The server's progress, passed on as this call's: shifted past jp's ticks, only when it
    /// increases (a server's values that do not are dropped).
    async fn forward(&self, server: ProgressNotificationParam) {
        let Some(token) = &self.token else { return };
        let mut p = self.progress.lock().await;
        let value = server.progress;
        if p.ended || !value.is_finite() || value < 0.0 || p.last.is_some_and(|last| value <= last) {
            return;
        }
        let ticks = f64::from(p.ticks);
        let offset = *p.offset.get_or_insert(ticks);
        p.last = Some(value);
        let mut note = ProgressNotificationParam::new(token.clone(), offset + value);
        note.total = server.total.filter(|t| t.is_finite() && *t >= value).map(|t| offset + t);
        note.message = server.message.as_deref().map(cut);
        let _ = self.peer.notify_progress(note).await;
    }

    /// The call has ended: nothing more goes to the agent as its progress.
    async fn end(&self) {
        self.progress.lock().await.ended = true;
    }
}

/// A server's call in flight for an agent's call.
struct InFlight {
    server: String,
    caller: Arc<Caller>,
    progress: Option<mpsc::Sender<ProgressNotificationParam>>,
    /// The progress token rmcp sent the call with.
    token: Option<ProgressToken>,
}

/// The `_meta` key marking a `tools/call` of jp's client with its call's number (never sent).
const CALL_MARK: &str = "jp-host/call";

/// The agent sessions and calls that wrapped servers' messages go to (one per `jp` process,
/// in its [`McpRuntime`](super::client::McpRuntime)).
#[derive(Default)]
pub struct Hub {
    sessions: Mutex<Vec<Weak<AgentSession>>>,
    calls: Mutex<HashMap<u64, InFlight>>,
    next: AtomicU64,
    /// The last `logging/setLevel`, for servers started later.
    level: Mutex<Option<LoggingLevel>>,
    /// Servers whose tools changed since jp listed them.
    tools_changed: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").finish_non_exhaustive()
    }
}

impl Hub {
    /// A session joins: wrapped servers' notifications reach it.
    pub fn join(&self, session: &Arc<AgentSession>) {
        let mut sessions = lock(&self.sessions);
        sessions.retain(|s| s.strong_count() > 0);
        if !sessions.iter().any(|s| std::ptr::eq(s.as_ptr(), Arc::as_ptr(session))) {
            sessions.push(Arc::downgrade(session));
        }
    }

    fn sessions(&self) -> Vec<Arc<AgentSession>> {
        lock(&self.sessions).iter().filter_map(Weak::upgrade).collect()
    }

    /// Remember `level` (set by some session) and return the level servers should log at: the
    /// lowest any live session asked for.
    pub fn set_level(&self, level: LoggingLevel) -> LoggingLevel {
        *lock(&self.level) = Some(level);
        self.level().unwrap_or(level)
    }

    /// The level servers should log at, once some session set one.
    pub fn level(&self) -> Option<LoggingLevel> {
        let lowest = self.sessions().iter().filter_map(|s| *lock(&s.level)).min_by_key(|l| rank(*l));
        lowest.or(*lock(&self.level))
    }

    /// Whether server `name` said its tools changed since the last call (then cleared).
    pub fn take_tools_changed(&self, name: &str) -> bool {
        lock(&self.tools_changed).remove(name)
    }

    /// The call of server `server` made for `caller`: registered until the guard is dropped.
    /// When the agent asked for progress: the `_meta` to send the call with (its mark, which
    /// [`Hub::bind`] takes out again, learning rmcp's progress token) and the call's progress.
    pub(crate) fn start_call(
        self: &Arc<Self>,
        server: &str,
        caller: Arc<Caller>,
    ) -> (CallGuard, Option<RequestMetaObject>, Option<mpsc::Receiver<ProgressNotificationParam>>) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = if caller.wants_progress() {
            let (tx, rx) = mpsc::channel(MAX_CALL_PROGRESS);
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let meta = rx.as_ref().map(|_| {
            let mut meta = RequestMetaObject::new();
            meta.0.0.insert(CALL_MARK.into(), Value::from(n));
            meta
        });
        let call = InFlight { server: server.to_owned(), caller: caller.clone(), progress: tx, token: None };
        lock(&self.calls).insert(n, call);
        (CallGuard { hub: self.clone(), n, caller }, meta, rx)
    }

    /// A `tools/call` on its way to a server: its mark is taken out of its `_meta` and its
    /// progress token (rmcp's own) bound to that call, before the server can report any.
    pub(crate) fn bind(&self, meta: &mut RequestMetaObject, token: Option<ProgressToken>) {
        let Some(n) = meta.0.0.remove(CALL_MARK).and_then(|v| v.as_u64()) else { return };
        if let Some(call) = lock(&self.calls).get_mut(&n) {
            call.token = token;
        }
    }

    /// Who can be asked on behalf of server `server`: the session whose call of it is running
    /// (its latest call), or the only session there is; otherwise why nobody.
    pub(super) fn asker(&self, server: &str) -> Result<Asker, NoAsker> {
        let calls = lock(&self.calls);
        let mut running: Vec<(&u64, &InFlight)> = calls.iter().filter(|(_, c)| c.server == server).collect();
        running.sort_by_key(|(n, _)| **n);
        if let Some((_, last)) = running.last() {
            let one = running.iter().all(|(_, c)| Arc::ptr_eq(&c.caller.session, &last.caller.session));
            if !one {
                return Err(NoAsker::SeveralCalls);
            }
            return Ok(Asker::Call(last.caller.clone()));
        }
        drop(calls);
        let sessions: Vec<Arc<AgentSession>> = self.sessions().into_iter().filter(|s| s.peer().is_some()).collect();
        match sessions.as_slice() {
            [] => Err(NoAsker::NoClient),
            [one] => Ok(Asker::Session(one.clone())),
            _ => Err(NoAsker::SeveralSessions),
        }
    }

    fn progress_of(&self, server: &str, token: &ProgressToken) -> Option<mpsc::Sender<ProgressNotificationParam>> {
        let calls = lock(&self.calls);
        let call = calls.values().find(|c| c.server == server && c.token.as_ref() == Some(token))?;
        call.progress.clone()
    }
}

/// A wrapped server's call in flight; dropped when it ends.
pub(crate) struct CallGuard {
    hub: Arc<Hub>,
    n: u64,
    caller: Arc<Caller>,
}

impl CallGuard {
    /// Pass on the server's progress that arrived before its answer, then stop: nothing after
    /// the result.
    pub(crate) async fn finish(&self, progress: Option<&mut mpsc::Receiver<ProgressNotificationParam>>) {
        if let Some(rx) = progress {
            while let Ok(p) = rx.try_recv() {
                self.caller.forward(p).await;
            }
        }
        self.caller.end().await;
    }

    /// Pass on one progress notification of the server.
    pub(crate) async fn forward(&self, p: ProgressNotificationParam) {
        self.caller.forward(p).await;
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        lock(&self.hub.calls).remove(&self.n);
    }
}

/// Who a server's request is asked of.
pub(super) enum Asker {
    /// The session of the running call, tied to it.
    Call(Arc<Caller>),
    /// The only session, outside of any call.
    Session(Arc<AgentSession>),
}

impl Asker {
    pub(super) fn session(&self) -> &AgentSession {
        match self {
            Self::Call(c) => &c.session,
            Self::Session(s) => s,
        }
    }

    pub(super) fn peer(&self) -> Option<Peer<RoleServer>> {
        match self {
            Self::Call(c) => Some(c.peer.clone()),
            Self::Session(s) => s.peer(),
        }
    }

    /// A request to the agent's client, tied to the call when there is one.
    pub(super) async fn request(&self, mut request: ServerRequest) -> Result<ClientResult, AskFailed> {
        let peer = self.peer().ok_or(AskFailed::NotConnected)?;
        if let Self::Call(c) = self {
            let extensions = match &mut request {
                ServerRequest::CreateMessageRequest(r) => Some(&mut r.extensions),
                ServerRequest::ListRootsRequest(r) => Some(&mut r.extensions),
                _ => None,
            };
            if let Some(e) = extensions {
                e.insert(OriginatingRequestId(c.origin.clone()));
            }
        }
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(ASK_TIMEOUT);
        let handle =
            peer.send_request_with_option(request, options).await.map_err(|e| AskFailed::Failed(e.to_string()))?;
        handle.await_response().await.map_err(|e| AskFailed::Failed(e.to_string()))
    }
}

/// Why no agent session can be asked on a wrapped server's behalf.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NoAsker {
    /// Calls of the server from more than one session are running.
    #[error("calls of several agent sessions are running on it, and jp cannot tell whose asks")]
    SeveralCalls,
    /// No session is connected.
    #[error("no agent's MCP client is connected to jp")]
    NoClient,
    /// More than one session is connected, and none is calling the server.
    #[error("several agent sessions are connected and none has a call of it running")]
    SeveralSessions,
}

/// Why a request passed on to the agent's client got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskFailed {
    /// The session's client has gone.
    #[error("the agent's client is not connected")]
    NotConnected,
    /// Sending it or waiting for the answer failed (the transport's words).
    #[error("{0}")]
    Failed(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_cut() {
        assert!(cut(&"é".repeat(MAX_TEXT + 1)).ends_with("(cut by jp at 4096 characters)"));
        assert_eq!(cut("short"), "short");
    }

    #[test]
    fn levels_are_ranked_by_severity() {
        assert!(rank(LoggingLevel::Debug) < rank(LoggingLevel::Info));
        assert!(rank(LoggingLevel::Error) < rank(LoggingLevel::Emergency));
    }
}
