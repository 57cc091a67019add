//! The optional `jp:tool/content` export (`wit/tool/content.wit`): a component that has it is
//! called through `content.run` and answers with typed content blocks, which become the core's
//! [`ToolResult`] — the same blocks an MCP server or a stdio tool hands back. A component built
//! against the seed's `tool` world alone is called through its `run`, whose string stays text.

use jp_core::json_shape::{self, TOO_DEEP};
use jp_core::state::{ContentBlock, ResourceContents, ResourceLink, ToolResult, encode_base64};
use serde_json::{Map, Value, json};

#[allow(missing_docs, unreachable_pub, clippy::all)]
pub(super) mod bindings {
    wasmtime::component::bindgen!({
        world: "content-tool",
        path: "../wit/tool",
        exports: { default: async },
    });
}

use bindings::exports::jp::tool::content::{
    Annotations, BlockKind, ContentBlock as WitBlock, ResourceContents as WitContents, Role, ToolResult as WitResult,
};
pub(super) use bindings::exports::jp::tool::content::{CallOutcome, GuestIndices};
pub(super) use bindings::jp::tool::types::{Action, Context};

/// The first value of a component's result that is not what the interface promises.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Unusable {
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

/// The least number of bytes `result` takes as it is sent on: its texts, `meta` and
/// `structured-content` as written, its bytes in base64. Counted before anything is parsed or
/// encoded, so a result over the output limit costs nothing more.
pub(super) fn least_size(result: &WitResult) -> usize {
    let base64 = |n: usize| n.div_ceil(3) * 4;
    let block = |b: &WitBlock| {
        let kind = match &b.kind {
            BlockKind::Text(t) => t.len(),
            BlockKind::Image(m) | BlockKind::Audio(m) => base64(m.data.len()) + m.mime_type.len(),
            BlockKind::Resource(r) => {
                r.uri.len()
                    + match &r.contents {
                        WitContents::Text(t) => t.len(),
                        WitContents::Blob(bytes) => base64(bytes.len()),
                    }
            }
            BlockKind::ResourceLink(l) => l.uri.len() + l.name.len(),
        };
        kind + b.meta.as_ref().map_or(0, String::len)
    };
    result.content.iter().map(block).sum::<usize>() + result.structured_content.as_ref().map_or(0, String::len)
}

/// A component's typed result as the core's [`ToolResult`].
pub(super) fn to_result(result: WitResult) -> Result<ToolResult, Unusable> {
    let content = result.content.into_iter().enumerate().map(|(index, b)| block(index, b));
    let content = content.collect::<Result<Vec<_>, _>>()?;
    let structured_content = match result.structured_content {
        Some(text) => Some(json(&text, "structured-content", |e| Unusable::StructuredNotJson(e.to_string()))?),
        None => None,
    };
    Ok(ToolResult { content, structured_content, is_error: false })
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
    let annotations = b.annotations.map(annotations);
    let block = match b.kind {
        BlockKind::Text(text) => ContentBlock::text(text),
        BlockKind::Image(m) => ContentBlock::image(&m.data, m.mime_type),
        BlockKind::Audio(m) => ContentBlock::audio(&m.data, m.mime_type),
        BlockKind::Resource(r) => {
            let (text, blob) = match r.contents {
                WitContents::Text(t) => (Some(t), None),
                WitContents::Blob(b) => (None, Some(encode_base64(&b))),
            };
            let resource = ResourceContents { uri: r.uri, mime_type: r.mime_type, text, blob, meta: None };
            ContentBlock::Resource { resource, annotations: None, meta: None }
        }
        BlockKind::ResourceLink(l) => ContentBlock::ResourceLink(ResourceLink {
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
fn annotations(a: Annotations) -> Value {
    let mut out = Map::new();
    if !a.audience.is_empty() {
        let roles: Vec<&str> = a
            .audience
            .iter()
            .map(|r| match r {
                Role::User => "user",
                Role::Assistant => "assistant",
            })
            .collect();
        out.insert("audience".into(), json!(roles));
    }
    if let Some(p) = a.priority {
        out.insert("priority".into(), json!(p));
    }
    if let Some(t) = a.last_modified {
        out.insert("lastModified".into(), json!(t));
    }
    Value::Object(out)
}
