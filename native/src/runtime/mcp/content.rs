//! Content blocks between rmcp's model and jp's ([`jp_core::state::ContentBlock`]), both ways,
//! typed: an image stays an image, `annotations` and `_meta` go along, the big strings (text,
//! base64 data) are moved, not re-serialized. The MCP client maps what a wrapped server answers
//! ([`from_rmcp`]); `jp mcp` maps a tool's result back ([`to_rmcp`]). jp's own `question` block
//! has no MCP form: it goes out as its text.

use jp_core::state::{ContentBlock, ResourceContents, ResourceLink, ToolResult};
use rmcp::model::{
    self, AudioContent, CallToolResult, EmbeddedResource, ImageContent, MetaObject, Resource, TextContent,
};
use serde_json::{Map, Value};

/// A wrapped server's blocks and `structuredContent` as jp's result (`isError` is the caller's).
pub fn from_rmcp(content: Vec<model::ContentBlock>, structured_content: Option<Value>) -> ToolResult {
    let content = content.into_iter().map(block_from_rmcp).collect();
    ToolResult { content, structured_content, is_error: false }
}

fn block_from_rmcp(block: model::ContentBlock) -> ContentBlock {
    let annotations = |a: Option<model::Annotations>| a.and_then(|a| serde_json::to_value(a).ok());
    let meta = |m: Option<MetaObject>| m.map(|m| m.0);
    match block {
        model::ContentBlock::Text(t) => ContentBlock::Text {
            text: t.text,
            mime_type: None,
            annotations: annotations(t.annotations),
            meta: meta(t.meta),
        },
        model::ContentBlock::Image(i) => ContentBlock::Image {
            data: i.data,
            mime_type: i.mime_type,
            annotations: annotations(i.annotations),
            meta: meta(i.meta),
        },
        model::ContentBlock::Audio(a) => ContentBlock::Audio {
            data: a.data,
            mime_type: a.mime_type,
            annotations: annotations(a.annotations),
            meta: meta(a.meta),
        },
        model::ContentBlock::Resource(r) => ContentBlock::Resource {
            resource: contents_from_rmcp(r.resource),
            annotations: annotations(r.annotations),
            meta: meta(r.meta),
        },
        model::ContentBlock::ResourceLink(l) => ContentBlock::ResourceLink(ResourceLink {
            uri: l.uri,
            name: l.name,
            title: l.title,
            description: l.description,
            mime_type: l.mime_type,
            size: l.size,
            icons: l.icons.and_then(|i| serde_json::to_value(i).ok()),
            annotations: annotations(l.annotations),
            meta: meta(l.meta),
        }),
        // A block type rmcp learns later: its JSON as text, rather than nothing.
        other => ContentBlock::text(serde_json::to_string(&other).unwrap_or_default()),
    }
}

fn contents_from_rmcp(contents: model::ResourceContents) -> ResourceContents {
    match contents {
        model::ResourceContents::TextResourceContents { uri, mime_type, text, meta } => {
            ResourceContents { uri, mime_type, text: Some(text), blob: None, meta: meta.map(|m| m.0) }
        }
        model::ResourceContents::BlobResourceContents { uri, mime_type, blob, meta } => {
            ResourceContents { uri, mime_type, text: None, blob: Some(blob), meta: meta.map(|m| m.0) }
        }
        other => ResourceContents {
            text: Some(serde_json::to_string(&other).unwrap_or_default()),
            ..ResourceContents::default()
        },
    }
}

/// A tool's result as an MCP `CallToolResult`: every block in its MCP form, `structuredContent`
/// as it came, `isError` as given.
pub fn to_rmcp(result: ToolResult) -> CallToolResult {
    let blocks = result.content.into_iter().map(block_to_rmcp).collect();
    let mut out = if result.is_error { CallToolResult::error(blocks) } else { CallToolResult::success(blocks) };
    out.structured_content = result.structured_content;
    out
}

fn block_to_rmcp(block: ContentBlock) -> model::ContentBlock {
    // rmcp types its annotations (audience, priority, lastModified): what does not fit them is
    // dropped here, the rest goes through.
    let annotations = |a: Option<Value>| a.and_then(|a| serde_json::from_value::<model::Annotations>(a).ok());
    let meta = |m: Option<Map<String, Value>>| m.map(MetaObject);
    match block {
        ContentBlock::Text { text, annotations: a, meta: m, .. } => {
            let mut t = TextContent::new(text);
            t.annotations = annotations(a);
            t.meta = meta(m);
            model::ContentBlock::Text(t)
        }
        ContentBlock::Image { data, mime_type, annotations: a, meta: m } => {
            let mut i = ImageContent::new(data, mime_type);
            i.annotations = annotations(a);
            i.meta = meta(m);
            model::ContentBlock::Image(i)
        }
        ContentBlock::Audio { data, mime_type, annotations: a, meta: m } => {
            let mut au = AudioContent::new(data, mime_type);
            au.annotations = annotations(a);
            au.meta = meta(m);
            model::ContentBlock::Audio(au)
        }
        ContentBlock::Resource { resource, annotations: a, meta: m } => {
            let ResourceContents { uri, mime_type, text, blob, meta: rm } = resource;
            let contents = match (text, blob) {
                (None, Some(blob)) => {
                    model::ResourceContents::BlobResourceContents { uri, mime_type, blob, meta: meta(rm) }
                }
                (text, _) => model::ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text: text.unwrap_or_default(),
                    meta: meta(rm),
                },
            };
            let mut r = EmbeddedResource::new(contents);
            r.annotations = annotations(a);
            r.meta = meta(m);
            model::ContentBlock::Resource(r)
        }
        ContentBlock::ResourceLink(l) => {
            let mut r = Resource::new(l.uri, l.name);
            r.title = l.title;
            r.description = l.description;
            r.mime_type = l.mime_type;
            r.size = l.size;
            r.icons = l.icons.and_then(|i| serde_json::from_value(i).ok());
            r.annotations = annotations(l.annotations);
            r.meta = meta(l.meta);
            model::ContentBlock::ResourceLink(r)
        }
        ContentBlock::Question { question } => model::ContentBlock::text(question.text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// jp → rmcp → JSON is what jp serializes, and rmcp → jp gives the same blocks back.
    #[test]
    fn blocks_round_trip_through_rmcp() {
        let wire = json!({
            "content": [
                {"type":"text","text":"a","annotations":{"audience":["user"]},"_meta":{"k":1}},
                {"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png","annotations":{"priority":0.5},"_meta":{"x":"y"}},
                {"type":"audio","data":"UklGRg==","mimeType":"audio/wav"},
                {"type":"resource","resource":{"uri":"file:///x","mimeType":"text/plain","text":"body","_meta":{"r":true}},
                 "annotations":{"lastModified":"2025-01-01T00:00:00Z"}},
                {"type":"resource","resource":{"uri":"file:///b","blob":"AAEC"}},
                {"type":"resource_link","uri":"file:///y","name":"y","title":"Y","description":"a file",
                 "mimeType":"text/plain","size":3,"icons":[{"src":"data:,"}],"annotations":{"audience":["assistant"]},"_meta":{"m":0}},
            ],
            "structuredContent": {"n": 1},
        });
        let ours: ToolResult = serde_json::from_value(wire.clone()).unwrap();
        let theirs = to_rmcp(ours.clone());
        let mut as_json = serde_json::to_value(&theirs).unwrap();
        let obj = as_json.as_object_mut().unwrap();
        obj.remove("resultType");
        obj.remove("isError");
        assert_eq!(as_json, wire);
        assert_eq!(from_rmcp(theirs.content, theirs.structured_content), ours);
    }
}
