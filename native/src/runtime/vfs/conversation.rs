//! Serving one spawned VFS tool: the reader loop (this task), the dispatch task and the writer
//! task of a [`VfsConversation`] (the stateful `VfsHandle` built on it is in `handle.rs`).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use jp_core::cancel::CancellationToken;
use jp_core::host::{DispatchEvents, Dispatcher, HostError, TraceEvent};
use jp_core::json_shape::TOO_DEEP;
use jp_core::protocol::{
    Frame, HostRequest, Id, Incoming, LineDecoder, PendingParams, ProtocolNotification, Response, RpcError, RpcMessage,
    decode_incoming, encode_message,
};
use jp_core::runtime::{ExecutionOutcome, RuntimeError};
use jp_core::state::{ToolError, ToolResult, ToolState};
use rustix::process::Signal;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::{Notify, mpsc, watch};

use super::VfsOptions;
use crate::process::{GroupGuard, signal_group};
use crate::runtime::tail::StderrTail;
use crate::sandbox::SandboxedChild;

/// Requests read from the tool and waiting to be served, at most. When the queue is full the
/// reader stops reading the tool's stdout until the dispatcher takes the next one, so a tool
/// cannot make the host hold more than this many requests (each up to the line limit) at once.
pub(super) const QUEUED_REQUESTS: usize = 4;

/// A freshly spawned tool and what serves it.
pub(super) struct Spawned {
    pub(super) name: String,
    pub(super) call_id: String,
    pub(super) opts: VfsOptions,
    pub(super) child: SandboxedChild,
    pub(super) pgid: u32,
    pub(super) guard: GroupGuard,
    pub(super) stdin: pipe::Sender,
    pub(super) stdout: pipe::Receiver,
    pub(super) stderr: pipe::Receiver,
    pub(super) init: ProtocolNotification,
    pub(super) dispatcher: Arc<Dispatcher>,
    pub(super) trace: Option<Arc<dyn DispatchEvents>>,
}

/// Where serving a tool stopped.
pub(super) enum Halt {
    /// The tool's last word.
    Final(Result<ExecutionOutcome, RuntimeError>),
    /// A stateful tool's new `running` or `waiting` state; it stays alive.
    State(ToolState),
    Eof,
    Cancelled,
    Timeout,
    Misbehaved(String),
}

/// A request as read from the tool, typed straight from its line.
struct ToolRequest {
    id: Id,
    method: String,
    request: Result<HostRequest, RpcError>,
}

/// A request in the queue, numbered in the order the tool sent it (from 1).
struct Queued {
    seq: u64,
    req: ToolRequest,
}

/// A spawned tool being served.
pub(super) struct VfsConversation {
    name: String,
    call_id: String,
    opts: VfsOptions,
    child: SandboxedChild,
    pgid: u32,
    guard: GroupGuard,
    pub(super) out: Outbox,
    writer: tokio::task::JoinHandle<()>,
    stderr_task: tokio::task::JoinHandle<String>,
    dispatch_task: tokio::task::JoinHandle<()>,
    req_tx: mpsc::Sender<Queued>,
    pending_bytes: Arc<AtomicUsize>,
    /// Requests put in the queue so far (the last one's number).
    queued: u64,
    /// The number of the last request the dispatcher answered (they are answered in order).
    answered: Arc<AtomicU64>,
    /// The number of the request the tool abandoned with `cancel`.
    abandon: watch::Sender<u64>,
    served: Arc<Notify>,
    /// Frames read but not handled yet (what one read brought beyond a full queue).
    backlog: VecDeque<Frame>,
    /// A request waiting for room in the queue; nothing more is read from the tool meanwhile.
    blocked: Option<ToolRequest>,
    decoder: LineDecoder,
    buf: Vec<u8>,
    stdout: pipe::Receiver,
    malformed: usize,
    exited: Option<std::process::ExitStatus>,
    eof: bool,
    /// No request timeout: a live stateful tool waits for the assistant as long as it likes.
    pub(super) idle_ok: bool,
}

impl VfsConversation {
    /// Start the writer, stderr and dispatch tasks for a spawned tool and send it `init`.
    pub(super) fn start(s: Spawned) -> Self {
        // Writer: one task owns the tool's stdin.
        let pending_bytes = Arc::new(AtomicUsize::new(0));
        let (write_tx, mut write_rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let writer_pending = pending_bytes.clone();
        let mut stdin = s.stdin;
        let writer = tokio::spawn(async move {
            // Lines that are ready together go out in one write (the pipe is unbuffered).
            let mut batch = Vec::new();
            while let Some(line) = write_rx.recv().await {
                let mut len = line.len();
                // (Big lines are written as they are: no copy of a 10 MiB answer.)
                let ok = if line.len() > 64 * 1024 {
                    stdin.write_all(&line).await.is_ok()
                } else if let Ok(next) = write_rx.try_recv() {
                    batch.clear();
                    batch.extend_from_slice(&line);
                    batch.extend_from_slice(&next);
                    while let Ok(more) = write_rx.try_recv() {
                        batch.extend_from_slice(&more);
                    }
                    len = batch.len();
                    stdin.write_all(&batch).await.is_ok()
                } else {
                    stdin.write_all(&line).await.is_ok()
                };
                writer_pending.fetch_sub(len, Ordering::SeqCst);
                if !ok {
                    break;
                }
            }
        });
        let out = Outbox { tx: write_tx, pending: pending_bytes.clone() };

        // Stderr: keep the tail.
        let tail = StderrTail::new(s.opts.max_stderr);
        let stderr = s.stderr;
        let stderr_task = tokio::spawn(async move {
            tail.read_from(stderr).await;
            tail.text()
        });

        out.send(encode_message(&s.init.to_message()));

        // Dispatch: requests are served in order, one at a time, on their own task.
        let events = Arc::new(RuntimeEvents { out: out.clone(), trace: s.trace });
        let answered = Arc::new(AtomicU64::new(0));
        let served = Arc::new(Notify::new());
        let (abandon, abandoned) = watch::channel(0u64);
        let (req_tx, mut req_rx) = mpsc::channel::<Queued>(QUEUED_REQUESTS);
        let dispatch_task = {
            let (dispatcher, out, answered, served) = (s.dispatcher, out.clone(), answered.clone(), served.clone());
            tokio::spawn(async move {
                while let Some(Queued { seq, req }) = req_rx.recv().await {
                    let mut abandoned = abandoned.clone();
                    // Only a `cancel` aimed at this very request abandons it (see `cancel`).
                    let cancelled = async move {
                        if abandoned.wait_for(|&n| n == seq).await.is_err() {
                            std::future::pending::<()>().await;
                        }
                    };
                    let ToolRequest { id, method, request } = req;
                    let line = tokio::select! {
                        line = dispatcher.respond(&id, &method, request, events.as_ref()) => line,
                        () = cancelled => encode_message(&RpcMessage::Response(Response {
                            id: Some(id.clone()),
                            outcome: Err(HostError::Cancelled(format!("{method} was abandoned by the tool")).to_rpc()),
                        })),
                    };
                    out.send(line);
                    answered.store(seq, Ordering::SeqCst);
                    served.notify_one();
                }
            })
        };

        Self {
            name: s.name,
            call_id: s.call_id,
            opts: s.opts,
            child: s.child,
            pgid: s.pgid,
            guard: s.guard,
            out,
            writer,
            stderr_task,
            dispatch_task,
            req_tx,
            pending_bytes,
            queued: 0,
            answered,
            abandon,
            served,
            backlog: VecDeque::new(),
            blocked: None,
            decoder: LineDecoder::new(s.opts.max_line),
            buf: vec![0u8; 256 * 1024],
            stdout: s.stdout,
            malformed: 0,
            exited: None,
            eof: false,
            idle_ok: false,
        }
    }

    /// Whether a request of the tool is queued, being served or waiting for room in the queue.
    fn busy(&self) -> bool {
        self.blocked.is_some() || self.queued > self.answered.load(Ordering::SeqCst)
    }

    /// Serve the tool's requests until its last word, or — when `stateful` — its next
    /// `running`/`waiting` state.
    pub(super) async fn serve(&mut self, cancel: &CancellationToken, stateful: bool) -> Halt {
        let opts = self.opts;
        let mut deadline = tokio::time::Instant::now() + opts.request_timeout;
        loop {
            if self.exited.is_some() {
                // Nobody is left to read an answer; what remains in the pipe is read to the end
                // (bounded by the pipe, as the group is dead) for a last word.
                self.blocked = None;
            }
            // Handle what was read, in order, until a request finds the queue full.
            while self.blocked.is_none() {
                let Some(frame) = self.backlog.pop_front() else { break };
                if let Some(step) = self.handle(&frame, stateful) {
                    return step;
                }
                deadline = tokio::time::Instant::now() + opts.request_timeout;
            }
            if self.eof && self.backlog.is_empty() {
                return Halt::Eof;
            }
            let busy = self.busy();
            let blocked = self.blocked.is_some();
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Halt::Cancelled,
                status = self.child.wait(), if self.exited.is_none() => {
                    self.exited = status.ok();
                    // Whatever the tool left behind dies now, so its pipes close and we reach EOF.
                    signal_group(self.pgid, Signal::KILL);
                }
                () = self.served.notified() => {
                    deadline = tokio::time::Instant::now() + opts.request_timeout;
                }
                () = tokio::time::sleep_until(deadline), if !busy && !self.idle_ok => return Halt::Timeout,
                permit = self.req_tx.reserve(), if blocked => {
                    if let (Ok(permit), Some(req)) = (permit, self.blocked.take()) {
                        self.queued += 1;
                        permit.send(Queued { seq: self.queued, req });
                    }
                }
                read = self.stdout.read(&mut self.buf), if !blocked && !self.eof => {
                    let n: usize = read.unwrap_or_default();
                    self.backlog.extend(self.decoder.push(&self.buf[..n]));
                    if n == 0 {
                        self.backlog.extend(self.decoder.finish());
                        self.eof = true;
                    }
                }
            }
        }
    }

    /// Handle one frame from the tool; `Some` when serving stops here.
    fn handle(&mut self, frame: &Frame, stateful: bool) -> Option<Halt> {
        let opts = self.opts;
        if self.pending_bytes.load(Ordering::SeqCst) > opts.max_line.saturating_mul(4) {
            return Some(Halt::Misbehaved("it stopped reading its stdin while sending requests".into()));
        }
        match decode_incoming(frame, opts.max_line) {
            Err((id, e)) => {
                self.malformed += 1;
                self.out.send(encode_message(&RpcMessage::Response(Response { id, outcome: Err(e) })));
                if self.malformed >= opts.max_malformed {
                    return Some(Halt::Misbehaved(format!(
                        "it sent {} malformed messages; it does not speak the VFS protocol",
                        self.malformed
                    )));
                }
            }
            Ok(Incoming::Request { id, method, request }) => self.enqueue(ToolRequest { id, method, request }),
            Ok(Incoming::Other(RpcMessage::Notification(n))) => {
                let id = self.call_id.clone();
                let done = |result| Some(Halt::Final(Ok(ExecutionOutcome::Completed { id: id.clone(), result })));
                match ProtocolNotification::parse(&n.method, n.params) {
                    Ok(ProtocolNotification::Result(r)) if r.is_error => {
                        return done(Err(ToolError::new(r.to_text())));
                    }
                    Ok(ProtocolNotification::Result(r)) => return done(Ok(r)),
                    Ok(ProtocolNotification::Error(e)) => return done(Err(e)),
                    Ok(ProtocolNotification::State(ToolState::Stopped { result })) => {
                        return done(result.map(ToolResult::text));
                    }
                    Ok(ProtocolNotification::State(state)) if stateful => return Some(Halt::State(state)),
                    Ok(ProtocolNotification::State(ToolState::Waiting { question, .. })) => {
                        return Some(Halt::Final(Ok(ExecutionOutcome::NeedsInput { id, question })));
                    }
                    Ok(ProtocolNotification::Cancel) => self.cancel(),
                    // The tool's last word, unreadable: say so rather than "exited without a
                    // result" once it exits.
                    Err(e) if matches!(n.method.as_str(), "result" | "error" | "state") => {
                        return done(Err(ToolError::new(format!(
                            "tool '{}' sent a malformed {} notification: {}; nothing else it sent after it is read",
                            self.name, n.method, e.message
                        ))));
                    }
                    // Progress of a stateful tool in a one-shot call, or notifications that only
                    // the host sends: nothing to do.
                    Ok(_) | Err(_) => {}
                }
            }
            // The tool's last word, too deep to read: the call ends here, saying so (the tool
            // would wait for its end, the call for a result that never comes).
            Ok(Incoming::TooDeep { method }) if matches!(method.as_str(), "result" | "error" | "state") => {
                let message = format!(
                    "tool '{}' sent a {method} notification {TOO_DEEP}; nothing else it sent after it is read",
                    self.name
                );
                let result = Err(ToolError::new(message));
                return Some(Halt::Final(Ok(ExecutionOutcome::Completed { id: self.call_id.clone(), result })));
            }
            Ok(Incoming::Other(_) | Incoming::TooDeep { .. }) => {}
        }
        None
    }

    /// Queue a request, or hold it (and stop reading) when the queue is full.
    fn enqueue(&mut self, req: ToolRequest) {
        if self.exited.is_some() {
            // The tool is gone: nobody would read the answer.
            return;
        }
        match self.req_tx.try_send(Queued { seq: self.queued + 1, req }) {
            Ok(()) => self.queued += 1,
            Err(mpsc::error::TrySendError::Full(q)) => self.blocked = Some(q.req),
            // The dispatcher is gone only when the conversation ends.
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }

    /// The tool's `cancel`: abandon the oldest request not answered yet — the one being served,
    /// or the next to be when the dispatcher is between two. With nothing in flight the cancel
    /// is stale (it crossed its answer) and is ignored, so it cannot cancel a later request.
    fn cancel(&mut self) {
        let answered = self.answered.load(Ordering::SeqCst);
        if self.queued > answered {
            self.abandon.send_replace(answered + 1);
        }
    }

    /// Wind down after `step`: stop serving, close stdin, make sure the group is gone, and say
    /// how the call ended.
    pub(super) async fn end(mut self, step: Halt) -> Result<ExecutionOutcome, RuntimeError> {
        self.dispatch_task.abort();
        let (name, pgid) = (self.name.clone(), self.pgid);
        let result = match step {
            Halt::Final(outcome) => {
                // The tool said its last word; it should exit by itself.
                self.stop(false).await;
                outcome
            }
            Halt::State(_) | Halt::Cancelled => {
                self.stop(true).await;
                Ok(ExecutionOutcome::Cancelled { id: self.call_id.clone() })
            }
            Halt::Timeout => {
                signal_group(pgid, Signal::KILL);
                Err(RuntimeError::Timeout { tool: name, seconds: self.opts.request_timeout.as_secs() })
            }
            Halt::Misbehaved(why) => {
                signal_group(pgid, Signal::KILL);
                let tail = tail_of(self.stderr_task, pgid).await;
                return Err(RuntimeError::Protocol {
                    tool: name,
                    message: with_tail(format!("it was stopped because {why}"), &tail),
                });
            }
            Halt::Eof => {
                let status = match self.exited {
                    Some(s) => Some(s),
                    None => {
                        tokio::time::timeout(self.opts.cancel_grace, self.child.wait()).await.ok().and_then(Result::ok)
                    }
                };
                signal_group(pgid, Signal::KILL);
                let tail = tail_of(self.stderr_task, pgid).await;
                let how = match status.and_then(|s| s.code()) {
                    Some(code) => format!("exited with status {code}"),
                    None => "was killed by a signal".to_owned(),
                };
                drop(self.guard);
                return Ok(ExecutionOutcome::Completed {
                    id: self.call_id,
                    result: Err(ToolError {
                        message: with_tail(format!("tool '{name}' {how} without sending a result or error"), &tail),
                        trace: Vec::new(),
                        transient: false,
                    }),
                });
            }
        };
        drop(self.out);
        drop(self.req_tx);
        self.writer.abort();
        drop(self.guard);
        let _ = tokio::time::timeout(Duration::from_secs(1), self.stderr_task).await;
        result
    }

    /// Stop a tool that is done or cancelled: wait for it to exit by itself (after sending
    /// `cancel` when cancelling), then `SIGTERM`, then `SIGKILL` — always ending with the group
    /// killed.
    async fn stop(&mut self, cancel: bool) {
        let grace = self.opts.cancel_grace;
        if cancel {
            self.out.send(encode_message(&ProtocolNotification::Cancel.to_message()));
        }
        if tokio::time::timeout(grace, self.child.wait()).await.is_err() {
            signal_group(self.pgid, Signal::TERM);
            if tokio::time::timeout(grace, self.child.wait()).await.is_err() {
                signal_group(self.pgid, Signal::KILL);
                let _ = self.child.wait().await;
            }
        }
        signal_group(self.pgid, Signal::KILL);
    }
}

/// The terminal state for how a stateful call ended.
pub(super) fn stopped(outcome: Result<ExecutionOutcome, RuntimeError>) -> ToolState {
    let result = match outcome {
        Ok(ExecutionOutcome::Completed { result: Ok(r), .. }) => Ok(r.to_text()),
        Ok(ExecutionOutcome::Completed { result: Err(e), .. }) => Err(e),
        Ok(ExecutionOutcome::NeedsInput { question, .. }) => {
            Err(ToolError::new(format!("the tool stopped with an unanswered question: {}", question.text)))
        }
        Ok(ExecutionOutcome::Cancelled { .. }) => Err(ToolError::new("the tool was cancelled")),
        Err(e) => Err(ToolError::new(e.to_string())),
    };
    ToolState::Stopped { result }
}

async fn tail_of(task: tokio::task::JoinHandle<String>, pgid: u32) -> String {
    signal_group(pgid, Signal::KILL);
    tokio::time::timeout(Duration::from_secs(2), task).await.ok().and_then(Result::ok).unwrap_or_default()
}

fn with_tail(message: String, tail: &str) -> String {
    let tail = tail.trim();
    if tail.is_empty() { message } else { format!("{message}; stderr ends with:\n{tail}") }
}

/// Lines for the tool's stdin, with a count of bytes not yet written.
#[derive(Clone)]
pub(super) struct Outbox {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    pending: Arc<AtomicUsize>,
}

impl Outbox {
    pub(super) fn send(&self, line: Vec<u8>) {
        self.pending.fetch_add(line.len(), Ordering::SeqCst);
        if self.tx.send(line).is_err() {
            self.pending.store(0, Ordering::SeqCst);
        }
    }
}

/// Sends `pending` to the tool and forwards decisions to the trace.
struct RuntimeEvents {
    out: Outbox,
    trace: Option<Arc<dyn DispatchEvents>>,
}

impl DispatchEvents for RuntimeEvents {
    fn pending(&self, request_id: &Id, reason: &str) {
        let n =
            ProtocolNotification::Pending(PendingParams { request_id: request_id.clone(), reason: reason.to_owned() });
        self.out.send(encode_message(&n.to_message()));
        if let Some(t) = &self.trace {
            t.pending(request_id, reason);
        }
    }
    fn decided(&self, event: &TraceEvent) {
        if let Some(t) = &self.trace {
            t.decided(event);
        }
    }
}
