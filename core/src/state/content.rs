//! Content blocks and [`ToolResult`]: the MCP `CallToolResult` shape (RFD 058, MCP 2025-11-25)
//! that every runtime hands back — `text`, `image`, `audio`, `resource` (embedded, text or
//! blob), `resource_link`, each with its `annotations` and `_meta` passed through as they came —
//! plus jp's own `question` block, and `structuredContent` beside the blocks. A block is kept
//! typed from the tool to the agent: nothing becomes a JSON string inside a text block on the
//! way. [`ToolResult::to_text`] is what a model that reads only text gets; [`ContentBlock::summary`]
//! is the one line a terminal shows for a block that is not text.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::{Question, ToolError, ToolState};
use crate::display::escape;
use crate::json_shape::{self, TOO_DEEP};

/// One content block (MCP `ContentBlock`), plus `question`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Media type of the text, e.g. `text/markdown` (RFD 058; not in MCP, which ignores it).
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// MCP annotations (`audience`, `priority`, `lastModified`), passed through.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// MCP `_meta`, passed through.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
    /// An image, base64-encoded.
    Image {
        /// The image bytes in base64.
        data: String,
        /// Its media type, e.g. `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// MCP annotations, passed through.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// MCP `_meta`, passed through.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
    /// Audio, base64-encoded.
    Audio {
        /// The audio bytes in base64.
        data: String,
        /// Its media type, e.g. `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// MCP annotations, passed through.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// MCP `_meta`, passed through.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
    /// An embedded resource (MCP `EmbeddedResource`).
    Resource {
        /// The resource's contents.
        resource: ResourceContents,
        /// MCP annotations, passed through.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// MCP `_meta`, passed through.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
    /// A link to a resource the client may read (MCP `ResourceLink`).
    ResourceLink(ResourceLink),
    /// A question for the user or assistant (jp's own block).
    Question {
        /// The question.
        question: Question,
    },
}

impl ContentBlock {
    /// A plain text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into(), mime_type: None, annotations: None, meta: None }
    }

    /// An image block of raw `data` (encoded in base64 here).
    pub fn image(data: &[u8], mime_type: impl Into<String>) -> Self {
        Self::Image { data: encode_base64(data), mime_type: mime_type.into(), annotations: None, meta: None }
    }

    /// An audio block of raw `data` (encoded in base64 here).
    pub fn audio(data: &[u8], mime_type: impl Into<String>) -> Self {
        Self::Audio { data: encode_base64(data), mime_type: mime_type.into(), annotations: None, meta: None }
    }

    /// Set the block's MCP `annotations` and `_meta` (a question block has neither; it is
    /// returned unchanged).
    #[must_use]
    pub fn with(mut self, new_annotations: Option<Value>, new_meta: Option<Map<String, Value>>) -> Self {
        match &mut self {
            Self::Text { annotations, meta, .. }
            | Self::Image { annotations, meta, .. }
            | Self::Audio { annotations, meta, .. }
            | Self::Resource { annotations, meta, .. } => {
                *annotations = new_annotations;
                *meta = new_meta;
            }
            Self::ResourceLink(link) => {
                link.annotations = new_annotations;
                link.meta = new_meta;
            }
            Self::Question { .. } => {}
        }
        self
    }

    /// The one line that stands for a block which is not text: `[image/png, 1.2 KiB]`,
    /// `[audio/wav, 30 KiB]`, `[resource file:///x (text/plain, 12 B)]`, `[link file:///y]`.
    /// Every value from the tool in it is escaped ([`escape`]), so it is always one line.
    /// `None` for text and questions, which are shown as their text.
    pub fn summary(&self) -> Option<String> {
        let media = |kind: &str, mime: &str, data: &str| {
            let size = human_size(base64_len(data));
            if mime.starts_with(&format!("{kind}/")) {
                format!("[{}, {size}]", escape(mime))
            } else {
                format!("[{kind} {}, {size}]", escape(mime))
            }
        };
        Some(match self {
            Self::Text { .. } | Self::Question { .. } => return None,
            Self::Image { data, mime_type, .. } => media("image", mime_type, data),
            Self::Audio { data, mime_type, .. } => media("audio", mime_type, data),
            Self::Resource { resource: r, .. } => {
                let size = match (&r.text, &r.blob) {
                    (Some(t), _) => t.len(),
                    (None, Some(b)) => base64_len(b),
                    (None, None) => 0,
                };
                let mime = r.mime_type.as_deref().map(|m| format!("{}, ", escape(m))).unwrap_or_default();
                format!("[resource {} ({mime}{})]", escape(&r.uri), human_size(size))
            }
            Self::ResourceLink(link) => match &link.mime_type {
                Some(m) => format!("[link {} ({})]", escape(&link.uri), escape(m)),
                None => format!("[link {}]", escape(&link.uri)),
            },
        })
    }
}

/// The contents of an embedded resource (MCP `TextResourceContents` / `BlobResourceContents`):
/// `text`, or `blob` in base64.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResourceContents {
    /// Resource URI.
    pub uri: String,
    /// Media type.
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 binary content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// MCP `_meta`, passed through.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// A `resource_link` block (MCP `ResourceLink`, which extends `Resource`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResourceLink {
    /// Resource URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Media type.
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size in bytes, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// MCP icons, passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Value>,
    /// MCP annotations, passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// MCP `_meta`, passed through.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// A tool's result (MCP `CallToolResult`): content blocks and `structuredContent`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolResult {
    /// The blocks, in order.
    pub content: Vec<ContentBlock>,
    /// MCP `structuredContent`, as the tool gave it (an explicit `null` is kept).
    #[serde(
        rename = "structuredContent",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub structured_content: Option<Value>,
    /// MCP's error flag.
    #[serde(rename = "isError", default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

/// A field that is present is `Some`, even when it is `null`.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// What a stdio tool printed (RFD 058), see [`ToolResult::parse_stdout`].
#[derive(Debug, Clone, PartialEq)]
pub enum Printed {
    /// A `{"content":…}` object: its blocks and `structuredContent`, or the error it flags
    /// with `isError`.
    Result(Result<ToolResult, ToolError>),
    /// An `Outcome` / `ToolState` JSON, or anything else as a `stopped` state with the text.
    State(ToolState),
}

impl ToolResult {
    /// A result of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self { content: vec![ContentBlock::text(text)], structured_content: None, is_error: false }
    }

    /// Parse a `content` value: a string is one text block (D11), an array is a list of blocks.
    pub fn from_content(content: Value) -> Result<Self, serde_json::Error> {
        match content {
            Value::String(s) => Ok(Self::text(s)),
            Value::Null => Ok(Self::default()),
            other => Ok(Self { content: serde_json::from_value(other)?, ..Self::default() }),
        }
    }

    /// Parse a result object `{"content": …, "structuredContent": …, "isError": …}` (a VFS
    /// `result` notification's params, what a stdio tool prints); `content` as in
    /// [`from_content`](Self::from_content).
    pub fn from_object(mut object: Map<String, Value>) -> Result<Self, serde_json::Error> {
        let mut result = Self::from_content(object.remove("content").unwrap_or(Value::Null))?;
        result.structured_content = object.remove("structuredContent");
        result.is_error = match object.remove("isError") {
            None | Some(Value::Null) => false,
            Some(v) => serde_json::from_value(v)?,
        };
        Ok(result)
    }

    /// Parse a stdio tool's stdout (RFD 058): a `{"content":…}` object (its blocks kept), an
    /// `Outcome` / `ToolState` JSON, or anything else as one raw text block — except an object
    /// nested deeper than jp reads JSON, which is an error that says so (it was meant as a
    /// result, and passed on as text it would only fail further on).
    pub fn parse_stdout(stdout: &str) -> Printed {
        let trimmed = stdout.trim();
        let parsed = serde_json::from_str::<Value>(trimmed);
        if parsed.is_err()
            && trimmed.starts_with('{')
            && json_shape::deeper_than(trimmed.as_bytes(), json_shape::MAX_DEPTH)
        {
            return Printed::Result(Err(ToolError::new(format!(
                "the tool printed JSON {TOO_DEEP}; print its result less deeply nested"
            ))));
        }
        if let Ok(Value::Object(object)) = parsed {
            if object.get("type").is_some()
                && let Ok(state) = serde_json::from_value::<ToolState>(Value::Object(object.clone()))
            {
                return Printed::State(state);
            }
            if object.contains_key("content")
                && let Ok(result) = Self::from_object(object)
            {
                return Printed::Result(if result.is_error {
                    Err(ToolError::new(result.to_text()))
                } else {
                    Ok(result)
                });
            }
        }
        Printed::State(ToolState::Stopped { result: Ok(stdout.to_owned()) })
    }

    /// The text an assistant that reads only text sees: text blocks as they are, an embedded
    /// resource by its text (or its [summary](ContentBlock::summary)), a question by its text,
    /// any other block by its summary (`[image/png, 1.2 KiB]`), joined by newlines. With no
    /// blocks at all, `structuredContent` as JSON.
    pub fn to_text(&self) -> String {
        if self.content.is_empty() {
            return self.structured_content.as_ref().map(Value::to_string).unwrap_or_default();
        }
        let parts: Vec<String> = self
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::Text { text, .. } => text.clone(),
                ContentBlock::Resource { resource: ResourceContents { text: Some(text), .. }, .. } => text.clone(),
                ContentBlock::Question { question } => question.text.clone(),
                other => other.summary().unwrap_or_default(),
            })
            .collect();
        parts.join("\n")
    }

    /// The result as a terminal shows it: text blocks and questions as their text, every other
    /// block as its one-line [summary](ContentBlock::summary); `structuredContent` is left to
    /// `--json`.
    pub fn to_shown(&self) -> String {
        let parts: Vec<String> = self
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::Text { text, .. } => text.clone(),
                ContentBlock::Question { question } => question.text.clone(),
                other => other.summary().unwrap_or_default(),
            })
            .collect();
        parts.join("\n")
    }
}

/// `data` in standard base64 with padding, as MCP carries bytes.
pub fn encode_base64(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// Bytes a base64 text stands for (padding and whitespace not counted; not validated).
fn base64_len(data: &str) -> usize {
    let chars = data.bytes().filter(|b| !b.is_ascii_whitespace() && *b != b'=').count();
    chars * 3 / 4
}

/// `512 B`, `1.2 KiB`, `30 KiB`, `4.5 MiB`: one decimal below 10 of a unit.
fn human_size(bytes: usize) -> String {
    #[allow(clippy::cast_precision_loss)] // a display figure
    let mut value = bytes as f64;
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    for unit in ["KiB", "MiB", "GiB"] {
        value /= 1024.0;
        if value < 1024.0 || unit == "GiB" {
            return if value < 10.0 { format!("{value:.1} {unit}") } else { format!("{value:.0} {unit}") };
        }
    }
    unreachable!("the loop returns at GiB")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every MCP 2025-11-25 block type, with `annotations` and `_meta`, and jp's question.
    fn all_blocks() -> Value {
        json!([
            {"type":"text","text":"a","mimeType":"text/markdown","annotations":{"audience":["user"]},"_meta":{"k":1}},
            {"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png","annotations":{"priority":0.5},"_meta":{"x":"y"}},
            {"type":"audio","data":"UklGRg==","mimeType":"audio/wav"},
            {"type":"resource","resource":{"uri":"file:///x","mimeType":"text/plain","text":"body","_meta":{"r":true}},
             "annotations":{"lastModified":"2025-01-01T00:00:00Z"}},
            {"type":"resource","resource":{"uri":"file:///b","blob":"AAEC"}},
            {"type":"resource_link","uri":"file:///y","name":"y","title":"Y","description":"a file",
             "mimeType":"text/plain","size":3,"icons":[{"src":"data:,"}],"annotations":{"audience":["assistant"]},"_meta":{"m":0}},
            {"type":"question","question":{"id":"q","text":"Go?","answer_type":"boolean"}},
        ])
    }

    #[test]
    fn every_block_round_trips() {
        let blocks = all_blocks();
        let result = json!({"content": blocks, "structuredContent": {"n": 1}, "isError": true});
        let parsed: ToolResult = serde_json::from_value(result.clone()).unwrap();
        assert_eq!(parsed.content.len(), 7);
        assert!(matches!(&parsed.content[1], ContentBlock::Image { mime_type, .. } if mime_type == "image/png"));
        assert!(matches!(&parsed.content[5], ContentBlock::ResourceLink(l) if l.name == "y" && l.size == Some(3)));
        assert_eq!(serde_json::to_value(&parsed).unwrap(), result);
        // The same through `from_object` (stdout, VFS `result`).
        let from_object = ToolResult::from_object(result.as_object().unwrap().clone()).unwrap();
        assert_eq!(from_object, parsed);
        // An explicit `null` is kept apart from no field.
        let null: ToolResult = serde_json::from_value(json!({"content": [], "structuredContent": null})).unwrap();
        assert_eq!(null.structured_content, Some(Value::Null));
        assert_eq!(serde_json::to_value(&null).unwrap(), json!({"content": [], "structuredContent": null}));
        let absent: ToolResult = serde_json::from_value(json!({"content": []})).unwrap();
        assert_eq!(absent.structured_content, None);
    }

    #[test]
    fn summaries_and_text() {
        let r: ToolResult = serde_json::from_value(json!({"content": all_blocks()})).unwrap();
        let lines: Vec<Option<String>> = r.content.iter().map(ContentBlock::summary).collect();
        assert_eq!(
            lines,
            [
                None,
                Some("[image/png, 8 B]".into()),
                Some("[audio/wav, 4 B]".into()),
                Some("[resource file:///x (text/plain, 4 B)]".into()),
                Some("[resource file:///b (3 B)]".into()),
                Some("[link file:///y (text/plain)]".into()),
                None,
            ]
        );
        assert_eq!(
            r.to_text(),
            "a\n[image/png, 8 B]\n[audio/wav, 4 B]\nbody\n[resource file:///b (3 B)]\n[link file:///y (text/plain)]\nGo?"
        );
        assert_eq!(
            r.to_shown(),
            "a\n[image/png, 8 B]\n[audio/wav, 4 B]\n[resource file:///x (text/plain, 4 B)]\n[resource file:///b (3 B)]\n[link file:///y (text/plain)]\nGo?"
        );
        // Tool-controlled values cannot break the line.
        let evil = ContentBlock::Image {
            data: String::new(),
            mime_type: "x\n\u{1b}[2J".into(),
            annotations: None,
            meta: None,
        };
        assert_eq!(evil.summary().unwrap(), "[image x\\n\\x1b[2J, 0 B]");
        // Only structuredContent: its JSON.
        let only = ToolResult { structured_content: Some(json!({"a": 1})), ..ToolResult::default() };
        assert_eq!(only.to_text(), r#"{"a":1}"#);
    }

    #[test]
    fn sizes() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1229), "1.2 KiB");
        assert_eq!(human_size(30 * 1024), "30 KiB");
        assert_eq!(human_size(5 * 1024 * 1024 + 512 * 1024), "5.5 MiB");
        assert_eq!(base64_len("iVBORw0KGgo="), 8);
    }

    #[test]
    fn content_forms() {
        assert_eq!(
            ToolResult::from_content(json!("Modified 2 files.")).unwrap(),
            ToolResult::text("Modified 2 files.")
        );
        let blocks = json!([
            {"type":"text","text":"a","mimeType":"text/markdown"},
            {"type":"resource","resource":{"uri":"file:///x","text":"body"}},
        ]);
        let r = ToolResult::from_content(blocks.clone()).unwrap();
        assert_eq!(serde_json::to_value(&r.content).unwrap(), blocks);
        assert_eq!(r.to_text(), "a\nbody");
    }

    #[test]
    fn stdout_nested_too_deep_is_an_error_that_says_so() {
        let deep = format!(
            r#"{{"content":[{{"type":"text","text":"x"}}],"structuredContent":{}{}}}"#,
            "[".repeat(200_000),
            "]".repeat(200_000)
        );
        let Printed::Result(Err(e)) = ToolResult::parse_stdout(&deep) else { panic!("not an error") };
        assert!(e.message.contains("nested more than 127 levels deep"), "{}", e.message);
        // Text that is no object stays text, however many brackets it has.
        let brackets = "[".repeat(1000);
        assert_eq!(ToolResult::parse_stdout(&brackets), Printed::State(ToolState::Stopped { result: Ok(brackets) }));
    }

    #[test]
    fn stdout_parsing() {
        assert_eq!(
            ToolResult::parse_stdout("plain words\n"),
            Printed::State(ToolState::Stopped { result: Ok("plain words\n".into()) })
        );
        assert_eq!(
            ToolResult::parse_stdout(r#"{"type":"success","content":"hi"}"#),
            Printed::State(ToolState::Stopped { result: Ok("hi".into()) })
        );
        assert_eq!(
            ToolResult::parse_stdout(r#"{"content":[{"type":"text","text":"x"}],"isError":true}"#),
            Printed::Result(Err(ToolError::new("x")))
        );
        let printed = ToolResult::parse_stdout(
            r#"{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}],"structuredContent":{"w":1}}"#,
        );
        let Printed::Result(Ok(r)) = printed else { panic!("{printed:?}") };
        assert!(matches!(&r.content[0], ContentBlock::Image { data, .. } if data == "AAAA"));
        assert_eq!(r.structured_content, Some(json!({"w": 1})));
        // JSON that is neither shape is raw text; so is a block of an unknown type.
        assert_eq!(
            ToolResult::parse_stdout("[1,2]"),
            Printed::State(ToolState::Stopped { result: Ok("[1,2]".into()) })
        );
        let unknown = r#"{"content":[{"type":"video","data":""}]}"#;
        assert_eq!(
            ToolResult::parse_stdout(unknown),
            Printed::State(ToolState::Stopped { result: Ok(unknown.into()) })
        );
    }
}
