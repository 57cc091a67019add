//! [`ServerPipes`]: the line multiplexer on a started stdio MCP server's stdin/stdout that lets
//! `jp mcp`'s relay ([`crate::mcp::relay`]) send a `tools/call` past rmcp's typed model. rmcp's
//! client speaks through a duplex pipe to it; the relay writes its requests (ids `jp-relay-N`,
//! which rmcp never uses) to the same stdin, and the answers to them are taken out of the
//! server's stdout before the rest goes on to rmcp.
//!
//! What the relay does not trust: the server's answer must be one line holding a JSON object
//! (else it is a protocol error, with the server's stderr tail); it is re-framed with the
//! agent's id, never echoed as is. A server that dies fails its pending calls at once.
//!
//! Every line is measured before it goes on ([`json_shape`]): one nested deeper than serde_json
//! reads would be dropped by rmcp unparsed (the call then waits for its answer until it times
//! out) and passed on by the relay to an agent that cannot read it either. An answer that deep
//! fails its request at once — the relay's waiter gets the error, rmcp a JSON-RPC error in its
//! place —; a request or notification of the server's that deep is dropped, as rmcp would drop
//! it (answering it would have this reader write to a server that may not read).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use jp_core::json_shape::{self, Over, TOO_DEEP};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, oneshot};

/// Longest line read from a server or an agent (one message: as rmcp's own limit).
pub const MAX_LINE: usize = super::bounds::MAX_MESSAGE;

/// The id prefix of the relay's own requests to a server.
const RELAY_ID: &str = "jp-relay-";

/// Read one `\n`-terminated line into `buf` (cleared first), at most `MAX_LINE` bytes; `Ok(false)`
/// at the end of the stream. A longer line is an error: the stream is then unusable.
pub(crate) async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    buf: &mut Vec<u8>,
) -> std::io::Result<bool> {
    buf.clear();
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(!buf.is_empty());
        }
        let (used, done) = match memchr::memchr(b'\n', available) {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        buf.extend_from_slice(&available[..used]);
        reader.consume(used);
        if buf.len() > MAX_LINE {
            buf.clear();
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a message (one line) longer than {} (cap)", super::bounds::size(MAX_LINE)),
            ));
        }
        if done {
            return Ok(true);
        }
    }
}

/// Why a relayed call has no result.
#[derive(Debug)]
pub enum RelayError {
    /// The server answered with a JSON-RPC error.
    Server(String),
    /// The server's answer is not a JSON-RPC response with an object result.
    Malformed(String),
    /// The server's stdout closed (it exited) before it answered.
    Gone,
    /// No answer within the call's time limit.
    Timeout,
}

/// A line of the server's that may answer one of the relay's requests: parsed once, the
/// `result` left as raw JSON where it stands in the line.
#[derive(Deserialize)]
struct ServerLine<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<serde::de::IgnoredAny>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<AnswerError>,
}

#[derive(Deserialize)]
struct AnswerError {
    #[serde(default)]
    code: i64,
    #[serde(default)]
    message: String,
}

/// A relayed call's result: the server's line and where its `result` object is in it.
#[derive(Debug)]
pub struct RelayResult {
    line: Vec<u8>,
    range: std::ops::Range<usize>,
}

impl RelayResult {
    /// The `result` object, raw JSON.
    pub fn get(&self) -> &[u8] {
        &self.line[self.range.clone()]
    }
}

/// What a waiter gets: the result, or why there is none.
type Answered = Result<RelayResult, RelayError>;

/// A started stdio server's pipes, shared by rmcp's client and the relay.
pub struct ServerPipes {
    stdin: Mutex<Box<dyn AsyncWrite + Send + Unpin>>,
    pending: std::sync::Mutex<HashMap<u64, oneshot::Sender<Answered>>>,
    next: AtomicU64,
    closed: std::sync::atomic::AtomicBool,
    /// Why the server's stdout stopped being read, when it was not its end (a line over the cap).
    broken: std::sync::Mutex<Option<String>>,
}

impl std::fmt::Debug for ServerPipes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerPipes").field("closed", &self.is_closed()).finish_non_exhaustive()
    }
}

impl ServerPipes {
    /// Sit on a server's `stdin` and `stdout`. Returns the pipes and the transport for rmcp's
    /// client (what it reads, what it writes).
    pub fn start(
        stdin: impl AsyncWrite + Send + Unpin + 'static,
        stdout: impl AsyncRead + Send + Unpin + 'static,
    ) -> (Arc<Self>, tokio::io::DuplexStream) {
        let pipes = Arc::new(Self {
            stdin: Mutex::new(Box::new(stdin)),
            pending: std::sync::Mutex::default(),
            next: AtomicU64::new(1),
            closed: std::sync::atomic::AtomicBool::new(false),
            broken: std::sync::Mutex::default(),
        });
        let (ours, rmcp) = tokio::io::duplex(1 << 16);
        let (from_rmcp, mut to_rmcp) = tokio::io::split(ours);
        // The server's stdout: answers to the relay to their callers, the rest to rmcp.
        let reader_pipes = pipes.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::with_capacity(1 << 16, stdout);
            let mut line = Vec::new();
            loop {
                match read_line(&mut reader, &mut line).await {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) => {
                        *reader_pipes.broken.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
                            Some(format!("it sent {e}, so jp closed the connection"));
                        break;
                    }
                }
                let shape = json_shape::over(&line, json_shape::MAX_DEPTH, super::bounds::MAX_MESSAGE_VALUES);
                // Past the values cap the depth was not measured to the end (the relay's answers
                // may hold that many: they are not parsed into values).
                let too_deep = match shape {
                    Some(Over::Depth) => true,
                    Some(Over::Values) => json_shape::deeper_than(&line, json_shape::MAX_DEPTH),
                    None => false,
                };
                if too_deep {
                    match refuse_too_deep(&line) {
                        Refused::Relay(n) => {
                            let waiter = reader_pipes
                                .pending
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner)
                                .remove(&n);
                            if let Some(tx) = waiter {
                                let _ = tx.send(Err(RelayError::Malformed(format!("its answer is {TOO_DEEP}"))));
                            }
                        }
                        Refused::ForRmcp(error) => {
                            if to_rmcp.write_all(&error).await.is_err() {
                                break;
                            }
                        }
                        Refused::Dropped => {}
                    }
                    continue;
                }
                if let Some((n, answered)) = relay_answer(&mut line) {
                    let waiter =
                        reader_pipes.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&n);
                    if let Some(tx) = waiter {
                        let _ = tx.send(answered);
                    }
                    continue;
                }
                // rmcp parses what it gets into a tree of values, each many times its bytes.
                if shape == Some(Over::Values) {
                    *reader_pipes.broken.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(format!(
                        "it sent a message of more than {} JSON values (cap), so jp closed the connection",
                        super::bounds::MAX_MESSAGE_VALUES
                    ));
                    break;
                }
                if to_rmcp.write_all(&line).await.is_err() {
                    break;
                }
            }
            // Gone (or unreadable): every pending call fails now, rmcp sees the end too.
            reader_pipes.closed.store(true, Ordering::SeqCst);
            reader_pipes.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
            let _ = to_rmcp.shutdown().await;
        });
        // rmcp's requests to the server, whole lines at a time.
        let writer_pipes = pipes.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(from_rmcp);
            let mut line = Vec::new();
            while let Ok(true) = read_line(&mut reader, &mut line).await {
                if writer_pipes.write(&line).await.is_err() {
                    break;
                }
            }
        });
        (pipes, rmcp)
    }

    /// Whether the server's stdout has closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Why jp stopped reading the server's stdout, when it was not its end (a message over the
    /// cap): said in the errors of what was waiting.
    pub fn broken(&self) -> Option<String> {
        self.broken.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    async fn write(&self, line: &[u8]) -> std::io::Result<()> {
        let mut stdin = self.stdin.lock().await;
        stdin.write_all(line).await?;
        stdin.flush().await
    }

    /// Call `tool` with `arguments` (a JSON object, raw) and return the server's `result` (raw
    /// JSON, an object) — or why there is none. Cancelled when the future is dropped: the server
    /// is told (`notifications/cancelled`).
    pub async fn call(self: &Arc<Self>, tool: &str, arguments: &RawValue, timeout: Duration) -> Answered {
        if self.is_closed() {
            return Err(RelayError::Gone);
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(n, tx);
        let mut guard = InFlight { pipes: self.clone(), n, answered: false };
        let name = serde_json::to_string(tool).map_err(|e| RelayError::Malformed(e.to_string()))?;
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"{RELAY_ID}{n}\",\"method\":\"tools/call\",\"params\":{{\"name\":{name},\"arguments\":{}}}}}\n",
            arguments.get()
        );
        if self.write(line.as_bytes()).await.is_err() {
            guard.answered = true;
            return Err(RelayError::Gone);
        }
        let answered = tokio::time::timeout(timeout, rx).await;
        guard.answered = answered.is_ok();
        match answered {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(RelayError::Gone),
            Err(_) => Err(RelayError::Timeout),
        }
    }
}

/// A request in flight: when dropped unanswered (cancelled, timed out), the waiter is forgotten
/// and the server is told (`notifications/cancelled`).
struct InFlight {
    pipes: Arc<ServerPipes>,
    n: u64,
    answered: bool,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        self.pipes.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&self.n);
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":\"{RELAY_ID}{}\",\"reason\":\"the client cancelled the call\"}}}}\n",
            self.n
        );
        let pipes = self.pipes.clone();
        tokio::spawn(async move {
            let _ = pipes.write(line.as_bytes()).await;
        });
    }
}

/// What becomes of a line of the server's nested too deep to read.
#[derive(Debug, PartialEq, Eq)]
enum Refused {
    /// The answer to the relay's request `n`: it fails.
    Relay(u64),
    /// The answer to one of rmcp's requests: this error line goes to rmcp in its place.
    ForRmcp(Vec<u8>),
    /// Anything else (a request or notification of the server's, no envelope to read).
    Dropped,
}

/// The envelope of a line: the rest (result, error, params) skipped, which does not recurse.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<serde::de::IgnoredAny>,
}

/// What to do with `line`, nested too deep to read: only its envelope is read.
fn refuse_too_deep(line: &[u8]) -> Refused {
    let Ok(parsed) = serde_json::from_slice::<Envelope<'_>>(line) else { return Refused::Dropped };
    let Some(id) = parsed.id.map(RawValue::get).filter(|id| !id.starts_with(['{', '['])) else {
        return Refused::Dropped;
    };
    if parsed.method.is_some() {
        return Refused::Dropped;
    }
    if let Some(n) = serde_json::from_str::<&str>(id).ok().and_then(|id| id.strip_prefix(RELAY_ID)?.parse().ok()) {
        return Refused::Relay(n);
    }
    let message =
        serde_json::to_string(&format!("jp did not read the server's answer: it is {TOO_DEEP}")).unwrap_or_default();
    Refused::ForRmcp(
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32700,\"message\":{message}}}}}\n")
            .into_bytes(),
    )
}

/// Whether `haystack` holds `needle` (SIMD search: a server's lines are kilobytes long).
pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

/// If `line` answers one of the relay's requests: its number and the answer (the line is taken).
fn relay_answer(line: &mut Vec<u8>) -> Option<(u64, Answered)> {
    // Cheap first: most lines are rmcp's and do not carry our id at all.
    if !contains(line, b"\"jp-relay-") {
        return None;
    }
    let parsed: ServerLine<'_> = serde_json::from_slice(line).ok()?;
    if parsed.method.is_some() {
        return None; // a request or notification from the server, not an answer
    }
    let id: &str = serde_json::from_str(parsed.id?.get()).ok()?;
    let n: u64 = id.strip_prefix(RELAY_ID)?.parse().ok()?;
    let answered = match (parsed.result, parsed.error) {
        (_, Some(e)) => Err(RelayError::Server(format!("{} (JSON-RPC error {})", e.message, e.code))),
        (Some(result), None) if result.get().starts_with('{') => {
            let start = result.get().as_ptr() as usize - line.as_ptr() as usize;
            Ok(start..start + result.get().len())
        }
        _ => Err(RelayError::Malformed("its answer to tools/call has no object `result`".into())),
    };
    Some((n, answered.map(|range| RelayResult { line: std::mem::take(line), range })))
}

#[cfg(test)]
mod tests {
    use super::{Refused, refuse_too_deep};

    #[test]
    fn an_answer_too_deep_fails_its_request_and_anything_else_is_dropped() {
        let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
        let answer = |id: &str| format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"structuredContent":{deep}}}}}"#);
        assert_eq!(refuse_too_deep(answer(r#""jp-relay-7""#).as_bytes()), Refused::Relay(7));
        let Refused::ForRmcp(error) = refuse_too_deep(answer("3").as_bytes()) else { panic!() };
        let error: serde_json::Value = serde_json::from_slice(&error).unwrap();
        assert_eq!((error["id"].as_i64(), error["error"]["code"].as_i64()), (Some(3), Some(-32700)));
        assert!(error["error"]["message"].as_str().unwrap().contains("nested more than 127 levels deep"), "{error}");
        let request = format!(r#"{{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{deep}}}"#);
        assert_eq!(refuse_too_deep(request.as_bytes()), Refused::Dropped);
        let notification = format!(r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{deep}}}"#);
        assert_eq!(refuse_too_deep(notification.as_bytes()), Refused::Dropped);
        assert_eq!(refuse_too_deep(deep.as_bytes()), Refused::Dropped);
    }
}
