//! The agent turn loop (issue 15), platform-neutral: messages, model providers reached through
//! the [`HttpClient`](crate::host::HttpClient) trait, and [`turn::run_turn`], which asks the model,
//! runs the tool calls it makes through a [`turn::TurnTools`], and repeats until the model
//! answers without tool calls or the round limit is reached. No I/O of its own: it runs natively
//! and on wasm32. [`scripted`] replays a recording (the offline demo).

pub mod anthropic;
pub mod openai;
pub mod prompt;
pub mod scripted;
pub mod surface;
pub mod turn;

use serde::{Deserialize, Serialize};

use crate::maybe::{BoxFuture, MaybeSend, MaybeSync};
use serde_json::Value;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions.
    System,
    /// The person.
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// The provider's id for it, echoed with its result.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments (a JSON object).
    pub arguments: Value,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// Its text (for a tool message: the result).
    pub content: String,
    /// The tool calls of an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
    /// The call a tool message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Whether a tool message reports a failure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl Message {
    /// A message without tool calls.
    pub fn text(role: Role, content: impl Into<String>) -> Self {
        Self { role, content: content.into(), tool_calls: Vec::new(), tool_call_id: None, is_error: false }
    }

    /// A tool's result for call `id`.
    pub fn tool_result(id: impl Into<String>, content: impl Into<String>, is_error: bool) -> Self {
        Self {
            role: Role::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(id.into()),
            is_error,
        }
    }
}

/// A tool as the model is told about it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelTool {
    /// Name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its arguments' JSON Schema (an object schema).
    pub input_schema: Value,
}

/// What the model answered in one request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelReply {
    /// Its text.
    pub text: String,
    /// The tool calls it made.
    pub tool_calls: Vec<ToolCallRequest>,
}

/// A model: one request with the conversation and the tools, one answer.
pub trait Model: MaybeSend + MaybeSync {
    /// Ask the model, giving `on_text` the reply's text as it is written when it streams its
    /// answer (a model that does not gives nothing before the whole reply).
    fn complete_streaming<'a>(
        &'a self,
        messages: &'a [Message],
        tools: &'a [ModelTool],
        on_text: crate::maybe::OnText<'a>,
    ) -> BoxFuture<'a, Result<ModelReply, ProviderError>>;

    /// Ask the model for the whole reply.
    fn complete<'a>(
        &'a self,
        messages: &'a [Message],
        tools: &'a [ModelTool],
    ) -> BoxFuture<'a, Result<ModelReply, ProviderError>> {
        self.complete_streaming(messages, tools, &|_: &str| {})
    }
}

/// A model behind an HTTP API (OpenAI's Chat Completions, Anthropic's Messages): it says how
/// its request is built and how its answers are read, and asking it — whole or streamed — is
/// one path for every such provider (the [`Model`] impl below, over [`post_json`]).
pub(crate) trait Endpoint: MaybeSend + MaybeSync {
    /// How its answers are read.
    const READING: Reading;
    /// The client its requests go through.
    fn http(&self) -> &dyn crate::host::HttpClient;
    /// Whether it asks for a server-sent event stream.
    fn streams(&self) -> bool;
    /// The URL, the headers and the JSON body of a request for `messages` and `tools`.
    fn request(&self, messages: &[Message], tools: &[ModelTool]) -> (String, Vec<crate::protocol::Header>, Value);
}

impl<E: Endpoint> Model for E {
    fn complete_streaming<'a>(
        &'a self,
        messages: &'a [Message],
        tools: &'a [ModelTool],
        on_text: crate::maybe::OnText<'a>,
    ) -> BoxFuture<'a, Result<ModelReply, ProviderError>> {
        Box::pin(async move {
            let (url, headers, body) = self.request(messages, tools);
            let streamed = self.streams().then_some(on_text);
            post_json(self.http(), url, headers, &body, &E::READING, streamed).await
        })
    }
}

/// How a provider reads an answer's body.
pub(crate) type Parse = fn(&[u8]) -> Result<ModelReply, ProviderError>;

/// The text deltas of a server-sent event stream, found as its bytes arrive: `extract` picks
/// the text out of one event's JSON `data`. Only for showing; the reply is parsed whole.
///
/// Linear in the bytes received: each byte is searched for the blank line that ends an event
/// once (`scanned` remembers how far the search got), read as part of its event once, and moved
/// at most once, when the events before it are dropped at the end of a [`feed`](Self::feed).
pub(crate) struct SseText<'a> {
    buffer: std::sync::Mutex<SseBuffer>,
    extract: fn(&Value) -> Option<&str>,
    on_text: crate::maybe::OnText<'a>,
}

/// The bytes of the events not complete yet.
#[derive(Default)]
struct SseBuffer {
    /// From the start of the first incomplete event.
    pending: Vec<u8>,
    /// `pending[..scanned]` holds no `\n\n` (the last byte may be the first `\n` of one).
    scanned: usize,
}

impl SseBuffer {
    /// Add `chunk`, and give every event it completes (without its blank line) to `event`.
    fn feed(&mut self, chunk: &[u8], mut event: impl FnMut(&[u8])) {
        self.pending.extend_from_slice(chunk);
        let mut start = 0;
        // The search resumes one byte back: a `\n` at the end may be followed by the next one.
        let mut from = self.scanned.saturating_sub(1);
        while let Some(at) = self.pending[from..].windows(2).position(|w| w == b"\n\n") {
            let end = from + at;
            event(&self.pending[start..end]);
            start = end + 2;
            from = start;
        }
        self.pending.drain(..start);
        self.scanned = self.pending.len();
    }
}

impl<'a> SseText<'a> {
    pub(crate) fn new(extract: fn(&Value) -> Option<&str>, on_text: crate::maybe::OnText<'a>) -> Self {
        Self { buffer: std::sync::Mutex::default(), extract, on_text }
    }

    /// More bytes of the stream: every event they complete is looked at.
    pub(crate) fn feed(&self, chunk: &[u8]) {
        let mut buffer = self.buffer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        buffer.feed(chunk, |event| {
            for line in String::from_utf8_lossy(event).lines() {
                let Some(data) = line.strip_prefix("data:") else { continue };
                if let Ok(v) = serde_json::from_str::<Value>(data.trim())
                    && let Some(text) = (self.extract)(&v)
                    && !text.is_empty()
                {
                    (self.on_text)(text);
                }
            }
        });
    }
}

/// Why a model request failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// The key was refused (401/403).
    #[error("the model endpoint refused the API key ({status}): {message}; check the provider's api_key_env")]
    Unauthorized {
        /// HTTP status.
        status: u16,
        /// The endpoint's message.
        message: String,
    },
    /// Too many requests (429); retry after this many seconds, when the endpoint said.
    #[error("the model endpoint is rate limiting (429){}: {message}", retry_after.map(|s| format!(", retry after {s} s")).unwrap_or_default())]
    RateLimited {
        /// `Retry-After`, in seconds.
        retry_after: Option<u64>,
        /// The endpoint's message.
        message: String,
    },
    /// The conversation is longer than the model's context.
    #[error("the conversation is too long for the model's context: {0}")]
    ContextTooLong(String),
    /// The endpoint failed (5xx).
    #[error("the model endpoint failed ({status}): {message}")]
    Server {
        /// HTTP status.
        status: u16,
        /// The endpoint's message.
        message: String,
    },
    /// Any other refusal (4xx).
    #[error("the model endpoint refused the request ({status}): {message}")]
    Rejected {
        /// HTTP status.
        status: u16,
        /// The endpoint's message.
        message: String,
    },
    /// The answer could not be understood.
    #[error("the model endpoint's answer is malformed: {0}")]
    Malformed(String),
    /// The request did not get through.
    #[error("the model endpoint could not be reached: {0}")]
    Transport(String),
}

impl ProviderError {
    /// Whether asking again may help (429 and 5xx).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::RateLimited { .. } | Self::Server { .. })
    }

    /// The error for an HTTP status and body that are not a success.
    pub fn from_status(status: u16, headers: &[crate::protocol::Header], body: &[u8]) -> Self {
        let text = String::from_utf8_lossy(body);
        let message = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v.pointer("/error/message").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| text.chars().take(500).collect());
        let lower = message.to_lowercase();
        match status {
            401 | 403 => Self::Unauthorized { status, message },
            429 => Self::RateLimited {
                retry_after: headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("retry-after"))
                    .and_then(|h| h.value.trim().parse().ok()),
                message,
            },
            400 | 413 if lower.contains("context") || lower.contains("too long") || lower.contains("maximum") => {
                Self::ContextTooLong(message)
            }
            500..=599 => Self::Server { status, message },
            _ => Self::Rejected { status, message },
        }
    }
}

/// POST `body` as JSON to `url` with `headers` (plus the JSON content type): a status other
/// than 2xx becomes its [`ProviderError`], a 2xx body is read by `parse`. Shared by the providers.
async fn post_json(
    http: &dyn crate::host::HttpClient,
    url: String,
    mut headers: Vec<crate::protocol::Header>,
    body: &Value,
    reading: &Reading,
    on_text: Option<crate::maybe::OnText<'_>>,
) -> Result<ModelReply, ProviderError> {
    /// Largest answer read from the endpoint.
    const MAX_BODY: usize = 16 << 20;
    headers.insert(0, crate::protocol::Header { name: "content-type".into(), value: "application/json".into() });
    let request = crate::host::HttpRequest {
        method: crate::host::HttpMethod::Post,
        url,
        headers,
        body: body.to_string().into_bytes(),
        max_body: MAX_BODY,
    };
    let response = match on_text {
        Some(on_text) => {
            let sse = SseText::new(reading.delta, on_text);
            http.send_streaming(request, &|chunk: &[u8]| sse.feed(chunk)).await
        }
        None => http.send(request).await,
    }
    .map_err(|e| ProviderError::Transport(e.to_string()))?;
    if !(200..300).contains(&response.status) {
        return Err(ProviderError::from_status(response.status, &response.headers, &response.body));
    }
    if on_text.is_some() { (reading.stream)(&response.body) } else { (reading.whole)(&response.body) }
}

/// How a provider reads its answers: a whole JSON body, or an event stream whose text pieces
/// `delta` finds as they arrive.
pub(crate) struct Reading {
    pub(crate) whole: Parse,
    pub(crate) stream: Parse,
    pub(crate) delta: fn(&Value) -> Option<&str>,
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn stream_text_is_found_as_it_arrives_even_when_events_are_cut_between_pieces() {
        let seen = Mutex::new(Vec::new());
        let on_text = |t: &str| seen.lock().unwrap().push(t.to_owned());
        let sse = SseText::new(|v| v.pointer("/choices/0/delta/content").and_then(Value::as_str), &on_text);
        let event = |t: &str| format!("data: {}\n\n", serde_json::json!({"choices": [{"delta": {"content": t}}]}));
        let stream = format!("{}{}: comment\n\n{}data: [DONE]\n\n", event("Hel"), event("lo"), event(" there"));
        let bytes = stream.as_bytes();
        // Cut in the middle of the second event, and of the blank line after the third.
        let (a, rest) = bytes.split_at(event("Hel").len() + 10);
        sse.feed(a);
        assert_eq!(*seen.lock().unwrap(), ["Hel"]);
        sse.feed(rest);
        assert_eq!(*seen.lock().unwrap(), ["Hel", "lo", " there"]);
    }

    #[test]
    fn a_stream_fed_one_byte_at_a_time_gives_every_piece_in_order() {
        let seen = Mutex::new(Vec::new());
        let on_text = |t: &str| seen.lock().unwrap().push(t.to_owned());
        let sse = SseText::new(|v| v.pointer("/choices/0/delta/content").and_then(Value::as_str), &on_text);
        let pieces: Vec<String> = (0..2000).map(|i| format!("{i} é\n🦀 ")).collect();
        let mut stream = String::new();
        for (i, p) in pieces.iter().enumerate() {
            stream.push_str(&format!("data: {}\n\n", serde_json::json!({"choices": [{"delta": {"content": p}}]})));
            if i % 7 == 0 {
                stream.push_str(": keep-alive\n\nevent: ping\ndata: {}\n\n");
            }
        }
        stream.push_str("data: [DONE]\n\n");
        for byte in stream.as_bytes() {
            sse.feed(std::slice::from_ref(byte));
        }
        assert_eq!(*seen.lock().unwrap(), pieces);
        let buffer = sse.buffer.lock().unwrap();
        assert!(buffer.pending.is_empty() && buffer.scanned == 0, "every event was dropped once read");
    }

    #[test]
    fn the_search_resumes_where_it_stopped_and_read_events_are_dropped() {
        let mut buffer = SseBuffer::default();
        let mut events = Vec::new();
        // A long event arriving a byte at a time: nothing before `scanned` is searched again.
        let long = format!("data: {}", "x".repeat(100_000));
        for (i, byte) in long.as_bytes().iter().enumerate() {
            buffer.feed(std::slice::from_ref(byte), |e| events.push(e.to_vec()));
            assert_eq!((buffer.pending.len(), buffer.scanned), (i + 1, i + 1));
        }
        // Its blank line split over two feeds, then two short events and half of a third in one.
        buffer.feed(b"\n", |e| events.push(e.to_vec()));
        assert!(events.is_empty());
        buffer.feed(b"\ndata: a\n\ndata: b\n\ndata: c", |e| events.push(e.to_vec()));
        assert_eq!(events, [long.into_bytes(), b"data: a".to_vec(), b"data: b".to_vec()]);
        assert_eq!(buffer.pending, b"data: c", "only the incomplete event is kept");
        assert_eq!(buffer.scanned, buffer.pending.len());
    }
}
