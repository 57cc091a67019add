//! NDJSON framing on any byte stream.
//!
//! [`LineDecoder`] is fed whatever chunks the transport delivers (pipe reads, WebSocket frames,
//! a `Uint8Array`) and yields complete lines. Memory stays bounded: a line longer than the maximum
//! is dropped while it streams past and reported once as [`Frame::TooLong`], and decoding resumes
//! at the next newline — one bad message never desynchronises the stream.

use serde_json::Value;

use super::envelope::{ErrorCode, Id, RpcError, RpcMessage};
use super::methods::HostRequest;
use crate::json_shape::{self, TOO_DEEP};

/// One framed unit from the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete line without its `\n` (and without a trailing `\r`).
    Line(Vec<u8>),
    /// A line longer than the limit was skipped.
    TooLong {
        /// How many bytes the skipped line had.
        len: usize,
    },
}

/// Incremental NDJSON line splitter with a maximum line size.
#[derive(Debug)]
pub struct LineDecoder {
    buf: Vec<u8>,
    max_line: usize,
    /// Bytes of an over-long line skipped so far, while skipping.
    skipping: Option<usize>,
}

impl LineDecoder {
    /// A decoder that accepts lines of at most `max_line` bytes.
    pub fn new(max_line: usize) -> Self {
        Self { buf: Vec::new(), max_line, skipping: None }
    }

    /// Feed bytes; returns the frames completed by them, in order. Blank lines are skipped.
    pub fn push(&mut self, mut bytes: &[u8]) -> Vec<Frame> {
        let mut frames = Vec::new();
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&b| b == b'\n');
            let (chunk, rest, complete) = match newline {
                Some(i) => (&bytes[..i], &bytes[i + 1..], true),
                None => (bytes, &[][..], false),
            };
            bytes = rest;
            if let Some(skipped) = self.skipping.as_mut() {
                *skipped += chunk.len() + usize::from(complete);
                if complete {
                    frames.push(Frame::TooLong { len: *skipped - 1 });
                    self.skipping = None;
                }
                continue;
            }
            if self.buf.len() + chunk.len() > self.max_line {
                self.skipping = Some(self.buf.len() + chunk.len() + usize::from(complete));
                self.buf.clear();
                if complete {
                    frames.push(Frame::TooLong { len: self.skipping.take().unwrap_or(1) - 1 });
                }
                continue;
            }
            self.buf.extend_from_slice(chunk);
            if complete {
                let mut line = std::mem::take(&mut self.buf);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if !line.iter().all(u8::is_ascii_whitespace) {
                    frames.push(Frame::Line(line));
                }
            }
        }
        frames
    }

    /// The stream ended: a final line without `\n` is still a line.
    pub fn finish(&mut self) -> Option<Frame> {
        if let Some(len) = self.skipping.take() {
            return Some(Frame::TooLong { len });
        }
        let line = std::mem::take(&mut self.buf);
        (!line.iter().all(u8::is_ascii_whitespace)).then_some(Frame::Line(line))
    }

    /// Bytes buffered for an incomplete line.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }
}

/// Parse one frame into a [`RpcMessage`]. Errors carry the request id when it could be read and a
/// -32600 error that says what was wrong.
pub fn decode_frame(frame: &Frame, max_line: usize) -> Result<RpcMessage, (Option<Id>, RpcError)> {
    match frame {
        Frame::TooLong { len } => Err((
            None,
            RpcError::new(
                ErrorCode::InvalidRequest,
                format!(
                    "Invalid Request: message of {len} bytes exceeds the {max_line}-byte line limit; send large content in smaller pieces"
                ),
            ),
        )),
        Frame::Line(line) => match serde_json::from_slice::<Value>(line) {
            Ok(value) => RpcMessage::from_value(value),
            Err(_) if too_deep(line) => Err((
                Envelope::read(line).and_then(|e| e.id),
                RpcError::new(
                    ErrorCode::InvalidRequest,
                    format!("Invalid Request: the message is {TOO_DEEP}; send it less deeply nested"),
                ),
            )),
            Err(e) => Err((
                None,
                RpcError::new(
                    ErrorCode::InvalidRequest,
                    format!("Invalid Request: not valid JSON ({e}); send one JSON object per line"),
                ),
            )),
        },
    }
}

/// One frame read from a tool, as the host serves it: a request typed straight from its JSON
/// text, or any other message.
#[derive(Debug)]
pub enum Incoming {
    /// A request: its id and method, and its typed params (or why they are not valid).
    Request {
        /// Correlates the response.
        id: Id,
        /// The method as sent.
        method: String,
        /// The typed request, or the -32601/-32602 error for it.
        request: Result<HostRequest, RpcError>,
    },
    /// A notification or a response.
    Other(RpcMessage),
    /// A notification nested deeper than jp reads JSON ([`json_shape::MAX_DEPTH`]): its method,
    /// its params unread. (A request or a response that deep is an error that says so, with its
    /// id, as any malformed message.)
    TooDeep {
        /// The method as sent.
        method: String,
    },
}

/// Whether a line nests deeper than jp reads JSON (what makes serde_json refuse it).
fn too_deep(line: &[u8]) -> bool {
    json_shape::deeper_than(line, json_shape::MAX_DEPTH)
}

/// The envelope of a message, read without its params or result (skipping a value does not
/// recurse, so any depth is read).
#[derive(serde::Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Option<Id>,
    #[serde(default)]
    method: Option<String>,
}

impl Envelope {
    fn read(line: &[u8]) -> Option<Self> {
        serde_json::from_slice(line).ok()
    }
}

/// The envelope of a well-formed request, borrowed from its line; anything else goes the
/// `Value` route of [`decode_frame`], which says precisely what is wrong.
#[derive(serde::Deserialize)]
struct FastRequest<'a> {
    jsonrpc: &'a str,
    id: Id,
    #[serde(borrow)]
    method: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    params: Option<&'a serde_json::value::RawValue>,
}

/// Like [`decode_frame`], but a request's params are typed straight from the line (no `Value`
/// in between). Errors and classification are those of [`decode_frame`].
pub fn decode_incoming(frame: &Frame, max_line: usize) -> Result<Incoming, (Option<Id>, RpcError)> {
    if let Frame::Line(line) = frame
        && let Ok(fast) = serde_json::from_slice::<FastRequest<'_>>(line)
        && fast.jsonrpc == "2.0"
        && fast.params.is_none_or(|p| p.get().starts_with(['{', '[']) || p.get() == "null")
    {
        let request = HostRequest::parse_json(&fast.method, fast.params.map(|p| p.get())).map_err(|e| {
            match fast.params.filter(|p| too_deep(p.get().as_bytes())) {
                Some(_) => RpcError::new(
                    ErrorCode::InvalidParams,
                    format!("Invalid params: the params are {TOO_DEEP}; send them less deeply nested"),
                ),
                None => e,
            }
        });
        return Ok(Incoming::Request { id: fast.id, method: fast.method.into_owned(), request });
    }
    match decode_frame(frame, max_line) {
        Ok(RpcMessage::Request(r)) => {
            Ok(Incoming::Request { request: HostRequest::parse(&r.method, r.params), id: r.id, method: r.method })
        }
        Ok(other) => Ok(Incoming::Other(other)),
        // A notification too deep to read: its method says whether it mattered (a tool's last
        // word does; see the VFS conversation).
        Err((None, e)) => match frame {
            Frame::Line(line) if too_deep(line) => match Envelope::read(line) {
                Some(Envelope { id: None, method: Some(method) }) => Ok(Incoming::TooDeep { method }),
                _ => Err((None, e)),
            },
            _ => Err((None, e)),
        },
        Err(e) => Err(e),
    }
}

/// Serialise a message as one NDJSON line (JSON escapes every newline inside it).
pub fn encode_message(message: &RpcMessage) -> Vec<u8> {
    let mut line = serde_json::to_vec(&message.to_value()).unwrap_or_default();
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(frames: Vec<Frame>) -> Vec<String> {
        frames
            .into_iter()
            .map(|f| match f {
                Frame::Line(l) => String::from_utf8(l).unwrap(),
                Frame::TooLong { len } => format!("<too long {len}>"),
            })
            .collect()
    }

    #[test]
    fn splits_across_arbitrary_chunks() {
        let input = b"{\"a\":1}\n\n{\"b\":2}\r\n{\"c\":3}";
        for chunk in 1..input.len() {
            let mut d = LineDecoder::new(100);
            let mut out = Vec::new();
            for part in input.chunks(chunk) {
                out.extend(d.push(part));
            }
            out.extend(d.finish());
            assert_eq!(lines(out), ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"], "chunk {chunk}");
        }
    }

    #[test]
    fn over_long_line_is_skipped_and_sync_kept() {
        let mut input = vec![b'x'; 50];
        input.extend_from_slice(b"\nok\n");
        input.extend(vec![b'y'; 11]);
        input.extend_from_slice(b"\nfine\n");
        for chunk in [1, 3, 7, 64] {
            let mut d = LineDecoder::new(10);
            let mut out = Vec::new();
            for part in input.chunks(chunk) {
                out.extend(d.push(part));
                assert!(d.pending() <= 10);
            }
            assert_eq!(lines(out), ["<too long 50>", "ok", "<too long 11>", "fine"], "chunk {chunk}");
        }
        // Exactly at the limit is fine.
        assert_eq!(lines(LineDecoder::new(3).push(b"abc\n")), ["abc"]);
    }

    #[test]
    fn decode_errors_are_invalid_request() {
        let (_, e) = decode_frame(&Frame::Line(b"{nope".to_vec()), 10).unwrap_err();
        assert_eq!(e.code, -32600);
        assert!(e.message.contains("not valid JSON"));
        let (_, e) = decode_frame(&Frame::TooLong { len: 99 }, 10).unwrap_err();
        assert!(e.message.contains("99 bytes exceeds the 10-byte"));
    }

    #[test]
    fn the_typed_decoder_classifies_and_fails_exactly_like_the_value_route() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"fs.read","params":{"path":"a.txt"}}"#,
            r#"{"jsonrpc":"2.0","id":"x","method":"fs.write","params":{"path":"a","content":"AAE=","encoding":"base64"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"fs.read","params":{"pth":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"fs.read"}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"fs.read","params":null}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"fs.read","params":["a.txt"]}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"fs.read","params":"a.txt"}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"read","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":8,"method":"fs.read","params":{"path":"a"},"id":9}"#,
            r#"{"jsonrpc":"2.0","id":10,"method":"fs.read","params":{"path":"a"}}"#,
            r#"{"jsonrpc":"1.0","id":11,"method":"fs.read","params":{"path":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"fs.read","params":{"path":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":12,"method":"fs.write","params":{"path":"a","content":"%","encoding":"base64"}}"#,
            r#"{"jsonrpc":"2.0","method":"cancel"}"#,
            r#"{"jsonrpc":"2.0","id":13,"result":{}}"#,
            r#"[1]"#,
            r#"{nope"#,
        ];
        for line in lines {
            let frame = Frame::Line(line.as_bytes().to_vec());
            let slow = decode_frame(&frame, 1000).map(|m| match m {
                RpcMessage::Request(r) => Ok((r.id.clone(), r.method.clone(), HostRequest::parse(&r.method, r.params))),
                other => Err(other),
            });
            let fast = decode_incoming(&frame, 1000).map(|i| match i {
                Incoming::Request { id, method, request } => Ok((id, method, request)),
                Incoming::Other(m) => Err(m),
                Incoming::TooDeep { method } => panic!("{method}: not too deep"),
            });
            assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "{line}");
        }
    }

    #[test]
    fn encoded_messages_are_single_lines() {
        let m =
            RpcMessage::from_value(serde_json::json!({"jsonrpc":"2.0","method":"result","params":{"content":"a\nb"}}))
                .unwrap();
        let line = encode_message(&m);
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        assert_eq!(*line.last().unwrap(), b'\n');
    }

    #[test]
    fn a_message_nested_too_deep_is_named_so_and_a_notification_keeps_its_method() {
        let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
        let line = |text: String| Frame::Line(text.into_bytes());
        let max = crate::protocol::DEFAULT_MAX_LINE;
        let result = line(format!(r#"{{"jsonrpc":"2.0","method":"result","params":{{"structuredContent":{deep}}}}}"#));
        assert!(matches!(decode_incoming(&result, max), Ok(Incoming::TooDeep { method }) if method == "result"));
        let (id, e) = decode_frame(&result, max).unwrap_err();
        assert_eq!(id, None);
        assert!(e.message.contains("nested more than 127 levels deep"), "{}", e.message);
        // A request: answered, its id kept.
        let request =
            line(format!(r#"{{"jsonrpc":"2.0","id":7,"method":"fs.write","params":{{"path":"a","content":{deep}}}}}"#));
        let Ok(Incoming::Request { id, request, .. }) = decode_incoming(&request, max) else { panic!() };
        assert_eq!(id, Id::Number(7));
        let e = request.unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidParams.code());
        assert!(e.message.contains("nested more than 127 levels deep"), "{}", e.message);
        // A response: an error for its id.
        let response = line(format!(r#"{{"jsonrpc":"2.0","id":"r","result":{deep}}}"#));
        let (id, e) = decode_incoming(&response, max).unwrap_err();
        assert_eq!(id, Some(Id::String("r".into())));
        assert!(e.message.contains("nested more than 127 levels deep"), "{}", e.message);
        // 127 levels are read as ever.
        let fits = format!("{}{}", "[".repeat(120), "]".repeat(120));
        let fine = line(format!(r#"{{"jsonrpc":"2.0","method":"result","params":{{"structuredContent":{fits}}}}}"#));
        assert!(matches!(decode_incoming(&fine, max), Ok(Incoming::Other(RpcMessage::Notification(_)))));
    }
}
