//! [`ServerPipes`]: the line multiplexer on a started stdio MCP server's stdin/stdout that lets
//! `jp mcp`'s relay ([`crate::mcp::relay`]) send a `tools/call` past rmcp's typed model. rmcp's
//! client speaks through a duplex pipe to it; the relay writes its requests (ids `jp-relay-N`,
//! which rmcp never uses) to the same stdin, and the answers to them are taken out of the
//! server's stdout before the rest goes on to rmcp.
//!
//! What the relay does not trust: the server's answer must be one line holding a JSON object
//! (else it is a protocol error, with the server's stderr tail); it is re-framed with the
//! agent's id, never echoed as is. A server that dies fails its pending calls at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

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
                if let Some((n, answered)) = relay_answer(&mut line) {
                    let waiter =
                        reader_pipes.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&n);
                    if let Some(tx) = waiter {
                        let _ = tx.send(answered);
                    }
                    continue;
                }
                // rmcp parses what it gets into a tree of values, each many times its bytes.
                if values_over(&line, super::bounds::MAX_MESSAGE_VALUES) {
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
        let mut guard = Pending { pipes: self.clone(), n, answered: false };
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
struct Pending {
    pipes: Arc<ServerPipes>,
    n: u64,
    answered: bool,
}

impl Drop for Pending {
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

/// Whether the JSON text `line` holds more than `cap` values, counting each string (keys too)
/// and each `{`, `[` and `,` outside strings: what parsing it into a tree would allocate. Strings
/// are skipped with `memchr`, so a line of text costs little.
fn values_over(line: &[u8], cap: usize) -> bool {
    let mut count = 0usize;
    let mut i = 0;
    while i < line.len() {
        let quote = memchr::memchr(b'"', &line[i..]).map_or(line.len(), |j| i + j);
        count += line[i..quote].iter().filter(|b| matches!(b, b'{' | b'[' | b',')).count();
        if count > cap || quote == line.len() {
            break;
        }
        // The string's end: the next quote that no backslash escapes.
        let mut j = quote + 1;
        loop {
            match memchr::memchr2(b'"', b'\\', line.get(j..).unwrap_or_default()) {
                Some(k) if line[j + k] == b'\\' => j += k + 2,
                Some(k) => {
                    i = j + k + 1;
                    break;
                }
                None => return count > cap,
            }
        }
        count += 1;
    }
    count > cap
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
    use super::values_over;

    #[test]
    fn values_are_counted_outside_strings_only() {
        let line = br#"{"content":[{"type":"text","text":"a, [b], {c} \" ,,, \\"}],"n":[1,2]}"#;
        // Strings: content type text text <the text> n = 6; outside: { [ { , , ] , [ , = 7.
        assert!(!values_over(line, 13));
        assert!(values_over(line, 12));
        let tiny = br#"[[],[],[],[]]"#;
        assert!(values_over(tiny, 7) && !values_over(tiny, 8));
        assert!(!values_over(br#""unterminated \" , , ,"#, 1));
    }
}
