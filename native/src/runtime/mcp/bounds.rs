//! What an MCP server that jp-host is a client of ([`client`](super::client)) can make `jp` hold
//! in memory: every way in has a cap, so a hostile server costs reading its output, never a
//! growing `jp`.
//!
//! - One message (a JSON-RPC line over stdio, a JSON body or an SSE event over HTTP) is at most
//!   [`MAX_MESSAGE`]; over stdio a longer line closes the connection (see [`pipes`](super::pipes),
//!   which reads the server's stdout first), and the error names the cap. A tool's result is one
//!   message. A message rmcp parses holds at most [`MAX_MESSAGE_VALUES`] JSON values (parsed, a
//!   16 MiB line of tiny values took 1.7 GiB); the relay's results stay raw JSON. No message over
//!   stdio, relayed or not, nests deeper than serde_json reads
//!   ([`MAX_DEPTH`](jp_core::json_shape::MAX_DEPTH)): an answer that deep fails its request at
//!   once, instead of being dropped unparsed while the call waits for it.
//! - `tools/list` is paged by hand ([`list_tools`]): at most [`MAX_LIST_PAGES`] pages,
//!   [`MAX_LIST_TOOLS`] tools and [`MAX_LIST_BYTES`] of tool definitions; over a cap is an error
//!   naming it. (rmcp's `list_all_tools` follows `nextCursor` without end.) rmcp's response cache
//!   is switched off (it would keep up to 512 pages); jp keeps what it needs itself.
//! - [`BoundedTransport`] sits between rmcp's client and its transport. Requests of the server
//!   (ping, roots, sampling, elicitation — each answered by rmcp at once) are held to
//!   [`MAX_UNANSWERED`] not yet sent back: at that many, nothing more is read from the server until
//!   an answer has been written (a server that does not read its stdin stops being read; its own
//!   pipe then holds it back). Notifications never reach rmcp (it would spawn a task for each):
//!   they are handed to the server's [`Inbox`], which queues what goes on
//!   to the agent without waiting and drops what does not fit (without one, they are dropped), so
//!   a flood of `notifications/message` or progress costs reading it, nothing more.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleClient;
use rmcp::model::{ClientRequest, GetMeta, JsonRpcMessage, PaginatedRequestParams, RequestId, Tool};
use rmcp::service::{Peer, RxJsonRpcMessage, ServiceError, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::Notify;

use super::forward::Inbox;

/// Longest message a server may send: one line over stdio, one JSON body or SSE event over HTTP
/// (rmcp's own default for both).
pub const MAX_MESSAGE: usize = 16 << 20;

/// Most JSON values in one message of a server that rmcp parses (a string, an object, an array,
/// a number…): parsed into a tree, each costs about a hundred bytes and more, whatever its size
/// on the wire. (A result relayed by `jp mcp` is not parsed into values.)
pub const MAX_MESSAGE_VALUES: usize = 1 << 18;

/// Most pages of `tools/list` asked of one server.
pub const MAX_LIST_PAGES: usize = 64;

/// Most tools one server may list.
pub const MAX_LIST_TOOLS: usize = 4096;

/// Most bytes of tool definitions (as JSON) one server may list.
pub const MAX_LIST_BYTES: usize = 8 << 20;

/// Most requests of a server answered but not yet sent back before jp stops reading it.
pub const MAX_UNANSWERED: usize = 64;

/// `n` bytes, in MiB when it is a whole number of them.
pub fn size(n: usize) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) { format!("{} MiB", n >> 20) } else { format!("{n} bytes") }
}

/// Why a listing stopped: the server's error, or a cap it went over.
#[derive(Debug)]
pub enum ListError {
    /// rmcp's error (the server's answer, or the connection).
    Service(ServiceError),
    /// The server went over a cap: what it sent more of.
    Cap(String),
}

/// Counts the bytes written to it.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every tool the server lists, page by page, within the caps.
pub async fn list_tools(peer: &Peer<RoleClient>) -> Result<Vec<Tool>, ListError> {
    let mut tools = Vec::new();
    let mut bytes = 0usize;
    let mut cursor = None;
    for _page in 0..MAX_LIST_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        let page = peer.list_tools(Some(params)).await.map_err(ListError::Service)?;
        for tool in page.tools {
            if tools.len() == MAX_LIST_TOOLS {
                return Err(ListError::Cap(format!("more than {MAX_LIST_TOOLS} tools in tools/list")));
            }
            let mut counter = Counter(0);
            // A tool serialises (it was just parsed); an error counts as nothing.
            let _ = serde_json::to_writer(&mut counter, &tool);
            bytes += counter.0;
            if bytes > MAX_LIST_BYTES {
                return Err(ListError::Cap(format!(
                    "more than {} of tool definitions in tools/list",
                    size(MAX_LIST_BYTES)
                )));
            }
            tools.push(tool);
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(tools),
        }
    }
    Err(ListError::Cap(format!("more than {MAX_LIST_PAGES} pages of tools/list")))
}

/// Every page of a list (`what`: `prompts/list`, …) fetched by `page(cursor)`, within the same
/// caps as `tools/list`: pages, items and bytes.
pub async fn list_all<T, F, Fut>(what: &str, mut page: F) -> Result<Vec<T>, ListError>
where
    T: serde::Serialize,
    F: FnMut(Option<String>) -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
{
    let mut items = Vec::new();
    let mut bytes = 0usize;
    let mut cursor = None;
    for _page in 0..MAX_LIST_PAGES {
        let (got, next) = page(cursor).await.map_err(ListError::Service)?;
        for item in got {
            if items.len() == MAX_LIST_TOOLS {
                return Err(ListError::Cap(format!("more than {MAX_LIST_TOOLS} items in {what}")));
            }
            let mut counter = Counter(0);
            let _ = serde_json::to_writer(&mut counter, &item);
            bytes += counter.0;
            if bytes > MAX_LIST_BYTES {
                return Err(ListError::Cap(format!("more than {} in {what}", size(MAX_LIST_BYTES))));
            }
            items.push(item);
        }
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(items),
        }
    }
    Err(ListError::Cap(format!("more than {MAX_LIST_PAGES} pages of {what}")))
}

/// The ids of the server's requests that rmcp has not answered yet.
#[derive(Default)]
struct Unanswered {
    ids: Mutex<HashSet<RequestId>>,
    answered: Notify,
}

impl Unanswered {
    fn len(&self) -> usize {
        self.ids.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// rmcp's client transport `T`, with the server's requests held to [`MAX_UNANSWERED`] and its
/// notifications handed to `inbox` (see the module's doc).
pub struct BoundedTransport<T> {
    inner: T,
    unanswered: Arc<Unanswered>,
    inbox: Option<Arc<Inbox>>,
}

impl<T> BoundedTransport<T> {
    /// Wrap `inner`; the server's notifications go to `inbox` (none: dropped).
    pub fn new(inner: T, inbox: Option<Arc<Inbox>>) -> Self {
        Self { inner, unanswered: Arc::default(), inbox }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for BoundedTransport<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let (Some(inbox), JsonRpcMessage::Request(r)) = (&self.inbox, &mut item) {
            // rmcp keeps its progress token beside the params until it serialises the request.
            let token = r.request.get_meta().get_progress_token();
            if let ClientRequest::CallToolRequest(call) = &mut r.request
                && let Some(meta) = call.params.meta.as_mut()
            {
                inbox.outgoing(meta, token);
            }
        }
        let answers = match &item {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone(),
            _ => None,
        };
        let sent = self.inner.send(item);
        let unanswered = self.unanswered.clone();
        async move {
            let result = sent.await;
            if let Some(id) = answers {
                unanswered.ids.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
                unanswered.answered.notify_one();
            }
            result
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            // One waiter (receive is sequential), so a wake-up is never lost: `notify_one`
            // keeps a permit when nobody waits yet.
            while self.unanswered.len() >= MAX_UNANSWERED {
                self.unanswered.answered.notified().await;
            }
            match self.inner.receive().await? {
                JsonRpcMessage::Notification(n) => {
                    if let Some(inbox) = &self.inbox {
                        inbox.take(n.notification);
                    }
                    continue;
                }
                JsonRpcMessage::Request(r) => {
                    self.unanswered.ids.lock().unwrap_or_else(PoisonError::into_inner).insert(r.id.clone());
                    return Some(JsonRpcMessage::Request(r));
                }
                other => return Some(other),
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_said_in_mib_when_whole() {
        assert_eq!(size(16 << 20), "16 MiB");
        assert_eq!(size(1000), "1000 bytes");
    }
}
