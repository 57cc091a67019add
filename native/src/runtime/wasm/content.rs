//! The optional `jp:tool/content` export (`wit/tool/content.wit`): a component that has it is
//! called through `content.run` and answers with typed content blocks, which become the core's
//! `ToolResult` — the same blocks an MCP server or a stdio tool hands back. A component built
//! against the seed's `tool` world alone is called through its `run`, whose string stays text.

use jp_core::state::component;

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

/// The bindings' result as the core's plain values, which hold the one mapping to a
/// [`ToolResult`] (the same for jco in the page and at the edge).
pub(super) fn plain(result: WitResult) -> component::WitToolResult {
    let kind = |k: BlockKind| match k {
        BlockKind::Text(t) => component::WitKind::Text(t),
        BlockKind::Image(m) => component::WitKind::Image(component::WitMedia { data: m.data, mime_type: m.mime_type }),
        BlockKind::Audio(m) => component::WitKind::Audio(component::WitMedia { data: m.data, mime_type: m.mime_type }),
        BlockKind::Resource(r) => component::WitKind::Resource(component::WitResource {
            uri: r.uri,
            mime_type: r.mime_type,
            contents: match r.contents {
                WitContents::Text(t) => component::WitContents::Text(t),
                WitContents::Blob(b) => component::WitContents::Blob(b),
            },
        }),
        BlockKind::ResourceLink(l) => component::WitKind::ResourceLink(component::WitLink {
            uri: l.uri,
            name: l.name,
            title: l.title,
            description: l.description,
            mime_type: l.mime_type,
            size: l.size,
        }),
    };
    let annotations = |a: Annotations| component::WitAnnotations {
        audience: a
            .audience
            .iter()
            .map(|r| match r {
                Role::User => "user".to_owned(),
                Role::Assistant => "assistant".to_owned(),
            })
            .collect(),
        priority: a.priority,
        last_modified: a.last_modified,
    };
    component::WitToolResult {
        content: result
            .content
            .into_iter()
            .map(|b: WitBlock| component::WitBlock {
                kind: kind(b.kind),
                annotations: b.annotations.map(annotations),
                meta: b.meta,
            })
            .collect(),
        structured_content: result.structured_content,
    }
}
