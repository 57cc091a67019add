//! [`StderrTail`]: the last bytes of a tool's or server's stderr, for error messages. Every
//! runtime that starts a process (VFS, stdio, MCP servers) drains its stderr through this one
//! reader — always, since a full stderr pipe would block the child.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncRead, AsyncReadExt as _};

/// The last `max` bytes a child wrote to stderr; clones share them, so the tail can be read while
/// the child still runs (an MCP server) or once it has ended (a tool).
#[derive(Debug, Clone)]
pub struct StderrTail {
    bytes: Arc<Mutex<Vec<u8>>>,
    max: usize,
}

impl StderrTail {
    /// An empty tail keeping at most `max` bytes.
    pub fn new(max: usize) -> Self {
        Self { bytes: Arc::default(), max }
    }

    /// Read `stderr` to its end (or its first error), keeping the last `max` bytes.
    pub async fn read_from(&self, mut stderr: impl AsyncRead + Unpin) {
        let mut buf = vec![0u8; 8192];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            let mut tail = self.bytes.lock().unwrap_or_else(PoisonError::into_inner);
            tail.extend_from_slice(&buf[..n]);
            if tail.len() > self.max {
                let cut = tail.len() - self.max;
                tail.drain(..cut);
            }
        }
    }

    /// The tail as text (invalid UTF-8 replaced), trimmed.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes.lock().unwrap_or_else(PoisonError::into_inner)).trim().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keeps_the_last_bytes_trimmed() {
        let tail = StderrTail::new(10);
        tail.read_from(&b"first line\nlast one \n"[..]).await;
        assert_eq!(tail.text(), "last one");
        let short = StderrTail::new(64);
        short.read_from(&b"  oops\n"[..]).await;
        assert_eq!(short.text(), "oops");
    }
}
