//! What a component answers a call with (`wit/tool`: the seed's `outcome`, and the optional
//! `jp:tool/content` export's blocks) as plain Rust values, and the ONE mapping of it to the
//! core's [`ExecutionOutcome`] and [`ToolResult`] — for every engine:
//! wasmtime natively converts its bindings into these types, jco in the page and at the edge
//! hands its JS values over as they are (`serde` in the shape jco gives them: variants as
//! `{ tag, val }`, fields in camelCase, bytes as a `Uint8Array`).

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{
    AnswerType, ContentBlock, Question, ResourceContents, ResourceLink, ToolError, ToolResult, ToolState, encode_base64,
};
use crate::json_shape::{self, TOO_DEEP};
use crate::runtime::ExecutionOutcome;

/// WIT `outcome` of `run` (the seed's `tool` world) or of `jp:tool/content`'s `run` — what a
/// component answers a call with.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "tag", content = "val", rename_all = "kebab-case")]
pub enum WitOutcome {
    /// It succeeded: text (`run`) or content blocks (`jp:tool/content`).
    Success(WitSuccess),
    /// It failed.
    Error(WitError),
    /// It asks a question; it is run again with the answer.
    NeedsInput(WitQuestion),
}

/// What a successful component call gave.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum WitSuccess {
    /// The seed's `run`: text.
    Text(String),
    /// `jp:tool/content`: blocks.
    Content(WitToolResult),
}

/// WIT `error-info`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct WitError {
    /// What went wrong.
    pub message: String,
    /// The error chain.
    #[serde(default)]
    pub trace: Vec<String>,
    /// Whether a retry may succeed.
    #[serde(default)]
    pub transient: bool,
}

/// WIT `question`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WitQuestion {
    /// Its id: the answer comes back under it.
    pub id: String,
    /// What to show.
    pub text: String,
    /// `boolean`, `text`, or a JSON object with `select` and `options`.
    pub answer_type: String,
    /// The default answer, JSON-encoded.
    #[serde(default)]
    pub default: Option<String>,
}

impl WitQuestion {
    /// The question as the core's (an unknown answer type is free text; a default that is not
    /// JSON is dropped) — the one mapping for `outcome`'s `needs-input` and a session's
    /// `waiting` state alike.
    pub fn into_question(self) -> Question {
        Question {
            id: self.id,
            text: self.text,
            answer_type: AnswerType::from_wit(&self.answer_type).unwrap_or(AnswerType::Text),
            default: self.default.and_then(|d| serde_json::from_str(&d).ok()),
        }
    }

    fn size(&self) -> usize {
        self.text.len() + self.answer_type.len() + self.default.as_ref().map_or(0, String::len)
    }
}

/// WIT `tool-state` of `jp:tool/stateful` (`wit/tool/stateful.wit`): what a live session of a
/// component is doing, in the shape jco gives it (`{tag, val}`; the stopped result as
/// `{tag: "ok" | "err", val}`).
#[derive(Debug, Clone, PartialEq)]
pub enum WitToolState {
    /// Working, with output since the last state.
    Running(Option<String>),
    /// Waiting on a question.
    Waiting {
        /// Output so far.
        content: Option<String>,
        /// The question.
        question: WitQuestion,
    },
    /// Ended.
    Stopped(Result<String, WitError>),
}

impl<'de> Deserialize<'de> for WitToolState {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        struct Tagged {
            tag: String,
            #[serde(default)]
            val: Option<Value>,
        }
        #[derive(Deserialize)]
        struct Waiting {
            #[serde(default)]
            content: Option<String>,
            question: WitQuestion,
        }
        let t = Tagged::deserialize(d)?;
        let val = t.val.unwrap_or(Value::Null);
        match t.tag.as_str() {
            "running" => Ok(Self::Running(serde_json::from_value(val).map_err(D::Error::custom)?)),
            "waiting" => {
                let w: Waiting = serde_json::from_value(val).map_err(D::Error::custom)?;
                Ok(Self::Waiting { content: w.content, question: w.question })
            }
            "stopped" => {
                let r: Tagged = serde_json::from_value(val).map_err(D::Error::custom)?;
                let val = r.val.unwrap_or(Value::Null);
                match r.tag.as_str() {
                    "ok" => Ok(Self::Stopped(Ok(serde_json::from_value(val).map_err(D::Error::custom)?))),
                    "err" => Ok(Self::Stopped(Err(serde_json::from_value(val).map_err(D::Error::custom)?))),
                    other => Err(D::Error::custom(format!("a stopped result is ok or err, not {other:?}"))),
                }
            }
            other => Err(D::Error::custom(format!("a tool-state is running, waiting or stopped, not {other:?}"))),
        }
    }
}

impl WitToolState {
    /// The state as the core's, for `tool`: content, a question or an error of more than
    /// `max_output` bytes stops the session with an error that says so.
    pub fn into_state(self, tool: &str, max_output: usize) -> ToolState {
        let size = match &self {
            Self::Running(c) => c.as_ref().map_or(0, String::len),
            Self::Waiting { content, question } => content.as_ref().map_or(0, String::len) + question.size(),
            Self::Stopped(Ok(r)) => r.len(),
            Self::Stopped(Err(e)) => e.message.len() + e.trace.iter().map(String::len).sum::<usize>(),
        };
        if size > max_output {
            let message = format!(
                "tool '{tool}' returned a state of {size} bytes, over the {max_output}-byte output limit; ask it for less"
            );
            return ToolState::Stopped { result: Err(ToolError::new(message)) };
        }
        match self {
            Self::Running(content) => ToolState::Running { content },
            Self::Waiting { content, question } => ToolState::Waiting { content, question: question.into_question() },
            Self::Stopped(Ok(r)) => ToolState::Stopped { result: Ok(r) },
            Self::Stopped(Err(e)) => ToolState::Stopped {
                result: Err(ToolError { message: e.message, trace: e.trace, transient: e.transient }),
            },
        }
    }
}

impl WitOutcome {
    /// The outcome as the core's, for call `id` of `tool`: a result of more than `max_output`
    /// bytes as it is sent on (images and audio in base64) is a failure that says so, and so is
    /// one that breaks the interface's promises.
    pub fn into_outcome(self, id: &str, tool: &str, max_output: usize) -> ExecutionOutcome {
        let over = |size: &str| {
            ExecutionOutcome::failed(
                id,
                format!(
                    "tool '{tool}' returned {size} bytes, over the {max_output}-byte output limit; ask it for less"
                ),
            )
        };
        let (result, size) = match self {
            Self::Success(WitSuccess::Text(text)) => {
                let size = text.len();
                (ToolResult::text(text), size)
            }
            Self::Success(WitSuccess::Content(r)) => {
                // Refused before its JSON is parsed or its bytes encoded: a component could
                // otherwise make the host build far more than its own memory held.
                let least = r.least_size();
                if least > max_output {
                    return over(&format!("at least {least}"));
                }
                match r.into_result() {
                    Ok(r) => {
                        let size = serde_json::to_vec(&r).map_or(usize::MAX, |v| v.len());
                        (r, size)
                    }
                    Err(e) => {
                        return ExecutionOutcome::failed(
                            id,
                            format!("tool '{tool}' returned a result jp cannot use: {e}"),
                        );
                    }
                }
            }
            Self::Error(e) if e.message.len() + e.trace.iter().map(String::len).sum::<usize>() > max_output => {
                return over(&format!(
                    "an error of {}",
                    e.message.len() + e.trace.iter().map(String::len).sum::<usize>()
                ));
            }
            Self::NeedsInput(q) if q.size() > max_output => {
                return over(&format!("a question of {}", q.text.len()));
            }
            Self::Error(e) => {
                let error = ToolError { message: e.message, trace: e.trace, transient: e.transient };
                return ExecutionOutcome::Completed { id: id.to_owned(), result: Err(error) };
            }
            Self::NeedsInput(q) => {
                return ExecutionOutcome::NeedsInput { id: id.to_owned(), question: q.into_question() };
            }
        };
        if size > max_output {
            return over(&size.to_string());
        }
        ExecutionOutcome::Completed { id: id.to_owned(), result: Ok(result) }
    }
}

/// WIT `tool-result`: the blocks, and `structured-content` as serialized JSON.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WitToolResult {
    /// The blocks, in order.
    pub content: Vec<WitBlock>,
    /// MCP `structuredContent`, serialized.
    #[serde(default)]
    pub structured_content: Option<String>,
}

/// WIT `content-block`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct WitBlock {
    /// What the block is.
    pub kind: WitKind,
    /// MCP annotations.
    #[serde(default)]
    pub annotations: Option<WitAnnotations>,
    /// MCP `_meta`, serialized (a JSON object).
    #[serde(default)]
    pub meta: Option<String>,
}

/// WIT `block-kind`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "tag", content = "val", rename_all = "kebab-case")]
pub enum WitKind {
    /// Text.
    Text(String),
    /// An image.
    Image(WitMedia),
    /// Audio.
    Audio(WitMedia),
    /// An embedded resource.
    Resource(WitResource),
    /// A link to a resource.
    ResourceLink(WitLink),
}

/// WIT `media`: bytes and their media type.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WitMedia {
    /// The bytes.
    #[serde(deserialize_with = "bytes")]
    pub data: Vec<u8>,
    /// Their media type.
    pub mime_type: String,
}

/// WIT `embedded-resource`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WitResource {
    /// Its URI.
    pub uri: String,
    /// Its media type.
    #[serde(default)]
    pub mime_type: Option<String>,
    /// Text or bytes.
    pub contents: WitContents,
}

/// WIT `resource-contents`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "tag", content = "val", rename_all = "kebab-case")]
pub enum WitContents {
    /// Text.
    Text(String),
    /// Bytes.
    Blob(#[serde(deserialize_with = "bytes")] Vec<u8>),
}

/// WIT `resource-link`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WitLink {
    /// Its URI.
    pub uri: String,
    /// Its programmatic name.
    pub name: String,
    /// Display title.
    #[serde(default)]
    pub title: Option<String>,
    /// What it is.
    #[serde(default)]
    pub description: Option<String>,
    /// Media type.
    #[serde(default)]
    pub mime_type: Option<String>,
    /// Size in bytes.
    #[serde(default)]
    pub size: Option<u64>,
}

/// WIT `annotations`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WitAnnotations {
    /// `user` and/or `assistant`.
    #[serde(default)]
    pub audience: Vec<String>,
    /// 0 (least) to 1 (most important).
    #[serde(default)]
    pub priority: Option<f64>,
    /// ISO 8601.
    #[serde(default)]
    pub last_modified: Option<String>,
}

/// Bytes from a byte buffer (a JS `Uint8Array`) or a sequence of numbers.
fn bytes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    struct Bytes;
    impl<'de> serde::de::Visitor<'de> for Bytes {
        type Value = Vec<u8>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("bytes")
        }
        fn visit_bytes<E>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }
        fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(v)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
            while let Some(b) = seq.next_element()? {
                out.push(b);
            }
            Ok(out)
        }
    }
    d.deserialize_bytes(Bytes)
}

/// The first value of a component's result that is not what the interface promises.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unusable {
    /// A block's `meta` is JSON, but not an object.
    #[error("block {index}: meta must be a JSON object")]
    MetaNotObject {
        /// Which block.
        index: usize,
    },
    /// A block's `meta` is not JSON.
    #[error("block {index}: meta is not JSON ({why})")]
    MetaNotJson {
        /// Which block.
        index: usize,
        /// The parser's words.
        why: String,
    },
    /// `structured-content` is not JSON.
    #[error("structured-content is not JSON ({0}); pass it as serialized JSON")]
    StructuredNotJson(String),
    /// `structured-content` or a block's `meta` nests deeper than jp reads JSON.
    #[error("{what} is {TOO_DEEP}; return it less deeply nested")]
    TooDeep {
        /// What: `structured-content`, `block 0: meta`.
        what: String,
    },
    /// An audience other than `user` or `assistant`.
    #[error("block {index}: audience {role:?} is neither user nor assistant")]
    Audience {
        /// Which block.
        index: usize,
        /// What it said.
        role: String,
    },
}

/// `text` (`what`: `structured-content`, `block 0: meta`) as JSON: nested too deep is
/// [`Unusable::TooDeep`], any other parse error what `not_json` makes of it.
fn json(text: &str, what: &str, not_json: impl FnOnce(serde_json::Error) -> Unusable) -> Result<Value, Unusable> {
    serde_json::from_str::<Value>(text).map_err(|e| {
        if json_shape::deeper_than(text.as_bytes(), json_shape::MAX_DEPTH) {
            Unusable::TooDeep { what: what.to_owned() }
        } else {
            not_json(e)
        }
    })
}

impl WitToolResult {
    /// The least number of bytes this takes as it is sent on: its texts, `meta` and
    /// `structured-content` as written, its bytes in base64. Counted before anything is parsed or
    /// encoded, so a result over the output limit costs nothing more.
    pub fn least_size(&self) -> usize {
        let base64 = |n: usize| n.div_ceil(3) * 4;
        let block = |b: &WitBlock| {
            let kind = match &b.kind {
                WitKind::Text(t) => t.len(),
                WitKind::Image(m) | WitKind::Audio(m) => base64(m.data.len()) + m.mime_type.len(),
                WitKind::Resource(r) => {
                    r.uri.len()
                        + match &r.contents {
                            WitContents::Text(t) => t.len(),
                            WitContents::Blob(bytes) => base64(bytes.len()),
                        }
                }
                WitKind::ResourceLink(l) => l.uri.len() + l.name.len(),
            };
            kind + b.meta.as_ref().map_or(0, String::len)
        };
        self.content.iter().map(block).sum::<usize>() + self.structured_content.as_ref().map_or(0, String::len)
    }

    /// The result as the core's [`ToolResult`] (MCP's `CallToolResult`), or the first thing in
    /// it that breaks the interface's promises.
    pub fn into_result(self) -> Result<ToolResult, Unusable> {
        let content = self.content.into_iter().enumerate().map(|(index, b)| block(index, b));
        let content = content.collect::<Result<Vec<_>, _>>()?;
        let structured_content = match self.structured_content {
            Some(text) => Some(json(&text, "structured-content", |e| Unusable::StructuredNotJson(e.to_string()))?),
            None => None,
        };
        Ok(ToolResult { content, structured_content, is_error: false })
    }
}

fn block(index: usize, b: WitBlock) -> Result<ContentBlock, Unusable> {
    let meta = match b.meta {
        Some(text) => {
            match json(&text, &format!("block {index}: meta"), |e| Unusable::MetaNotJson { index, why: e.to_string() })?
            {
                Value::Object(map) => Some(map),
                _ => return Err(Unusable::MetaNotObject { index }),
            }
        }
        None => None,
    };
    let annotations = b.annotations.map(|a| annotations(index, a)).transpose()?;
    let block = match b.kind {
        WitKind::Text(text) => ContentBlock::text(text),
        WitKind::Image(m) => ContentBlock::image(&m.data, m.mime_type),
        WitKind::Audio(m) => ContentBlock::audio(&m.data, m.mime_type),
        WitKind::Resource(r) => {
            let (text, blob) = match r.contents {
                WitContents::Text(t) => (Some(t), None),
                WitContents::Blob(b) => (None, Some(encode_base64(&b))),
            };
            let resource = ResourceContents { uri: r.uri, mime_type: r.mime_type, text, blob, meta: None };
            ContentBlock::Resource { resource, annotations: None, meta: None }
        }
        WitKind::ResourceLink(l) => ContentBlock::ResourceLink(ResourceLink {
            uri: l.uri,
            name: l.name,
            title: l.title,
            description: l.description,
            mime_type: l.mime_type,
            size: l.size,
            ..ResourceLink::default()
        }),
    };
    Ok(block.with(annotations, meta))
}

/// MCP's `annotations` object; only the fields the component set.
fn annotations(index: usize, a: WitAnnotations) -> Result<Value, Unusable> {
    let mut out = Map::new();
    if let Some(role) = a.audience.iter().find(|r| *r != "user" && *r != "assistant") {
        return Err(Unusable::Audience { index, role: role.clone() });
    }
    if !a.audience.is_empty() {
        out.insert("audience".into(), json!(a.audience));
    }
    if let Some(p) = a.priority {
        out.insert("priority".into(), json!(p));
    }
    if let Some(t) = a.last_modified {
        out.insert("lastModified".into(), json!(t));
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What jco hands over, as JSON (bytes as a number array).
    fn from_jco(value: Value) -> WitToolResult {
        serde_json::from_value(value).expect("the jco shape")
    }

    #[test]
    fn a_stateful_sessions_states_in_the_jco_shape() {
        let state = |v: Value| serde_json::from_value::<WitToolState>(v).map(|s| s.into_state("calc", 64));
        assert_eq!(state(json!({"tag": "running"})).unwrap(), ToolState::Running { content: None });
        assert_eq!(
            state(json!({"tag": "running", "val": "= 7"})).unwrap(),
            ToolState::Running { content: Some("= 7".into()) }
        );
        let waiting = state(
            json!({"tag": "waiting", "val": {"question": {"id": "clear", "text": "Forget?", "answerType": "boolean"}}}),
        );
        let ToolState::Waiting { question, .. } = waiting.unwrap() else { panic!() };
        assert_eq!((question.id.as_str(), question.answer_type), ("clear", AnswerType::Boolean));
        assert_eq!(
            state(json!({"tag": "stopped", "val": {"tag": "ok", "val": "bye"}})).unwrap(),
            ToolState::Stopped { result: Ok("bye".into()) }
        );
        let ToolState::Stopped { result: Err(e) } =
            state(json!({"tag": "stopped", "val": {"tag": "err", "val": {"message": "boom", "trace": [], "transient": true}}})).unwrap()
        else {
            panic!()
        };
        assert!(e.transient && e.message == "boom");
        let ToolState::Stopped { result: Err(e) } = state(json!({"tag": "running", "val": "x".repeat(65)})).unwrap()
        else {
            panic!()
        };
        assert!(e.message.contains("65 bytes, over the 64-byte output limit"), "{}", e.message);
        assert!(state(json!({"tag": "sleeping"})).is_err());
    }

    #[test]
    fn the_jco_shape_maps_to_mcp_blocks() {
        let r = from_jco(json!({
            "content": [
                { "kind": { "tag": "text", "val": "hi" }, "annotations": { "audience": ["user"], "priority": 0.5 } },
                { "kind": { "tag": "image", "val": { "data": [1, 2, 3], "mimeType": "image/png" } }, "meta": "{\"k\":1}" },
                { "kind": { "tag": "resource", "val": { "uri": "file:///a", "contents": { "tag": "blob", "val": [255] } } } },
                { "kind": { "tag": "resource-link", "val": { "uri": "file:///b", "name": "b", "size": 7 } } }
            ],
            "structuredContent": "{\"n\":2}"
        }));
        // text 2; image 4 (base64) + 9 + meta 7; resource 9 + 4; link 9 + 1; structured 7.
        assert_eq!(r.least_size(), 2 + (4 + 9 + 7) + (9 + 4) + (9 + 1) + 7);
        let out = serde_json::to_value(r.into_result().unwrap()).unwrap();
        assert_eq!(
            out["content"][0],
            json!({ "type": "text", "text": "hi", "annotations": { "audience": ["user"], "priority": 0.5 } })
        );
        assert_eq!(out["content"][1]["data"], "AQID");
        assert_eq!(out["content"][1]["_meta"], json!({ "k": 1 }));
        assert_eq!(out["content"][2]["resource"]["blob"], "/w==");
        assert_eq!(out["content"][3]["size"], 7);
        assert_eq!(out["structuredContent"], json!({ "n": 2 }));
    }

    #[test]
    fn an_error_or_a_question_over_the_output_limit_is_refused_like_a_result() {
        let error = WitOutcome::Error(WitError { message: "x".repeat(100), ..WitError::default() });
        let ExecutionOutcome::Completed { result: Err(e), .. } = error.into_outcome("1", "t", 64) else { panic!() };
        assert!(e.message.contains("an error of 100 bytes, over the 64-byte output limit"), "{}", e.message);
        let question = WitOutcome::NeedsInput(WitQuestion { text: "?".repeat(100), ..WitQuestion::default() });
        assert!(matches!(question.into_outcome("1", "t", 64), ExecutionOutcome::Completed { result: Err(_), .. }));
    }

    #[test]
    fn what_breaks_the_promises_is_named() {
        let meta = |m: &str| from_jco(json!({ "content": [{ "kind": { "tag": "text", "val": "" }, "meta": m }] }));
        assert_eq!(meta("[1]").into_result(), Err(Unusable::MetaNotObject { index: 0 }));
        assert!(matches!(meta("{").into_result(), Err(Unusable::MetaNotJson { index: 0, .. })));
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(
            from_jco(json!({ "content": [], "structuredContent": deep })).into_result(),
            Err(Unusable::TooDeep { what: "structured-content".into() })
        );
        let role = from_jco(
            json!({ "content": [{ "kind": { "tag": "text", "val": "" }, "annotations": { "audience": ["robot"] } }] }),
        );
        assert_eq!(role.into_result(), Err(Unusable::Audience { index: 0, role: "robot".into() }));
    }
}
