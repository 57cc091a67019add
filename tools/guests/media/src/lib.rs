//! A component that answers with typed content blocks through `jp:tool/content`
//! (`wit/tool/content.wit`), for the tests of that export on every host (wasmtime, jco in the
//! page and at the edge):
//!
//! - `chart`: a 4×4 PNG with annotations and `_meta`, and a caption;
//! - `tone`: a short WAV;
//! - `report`: a workspace file as an embedded resource, a link to it and `structuredContent`;
//! - `big`: an image of `bytes` bytes with the media type `mime` (the output limit; a hostile
//!   media type);
//! - `bad_meta`: a block whose `meta` is not JSON (the host must refuse the result).
//!
//! Its seed `run` answers the same calls as text, for hosts that do not know `content`.

wit_bindgen::generate!({
    world: "content-tool",
    path: "../../../wit/tool",
});

use exports::jp::tool::content::{
    self, Annotations, BlockKind, CallOutcome, ContentBlock, EmbeddedResource, Media, ResourceContents, ResourceLink,
    Role, ToolResult,
};
use exports::jp::tool::describe;
use jp::tool::types::ErrorInfo;
use jp_tool::Host as _;
use jp_tool::component::ComponentHost;
use serde_json::{Value, json};

const DOT_PNG: &[u8] = include_bytes!("dot.png");

fn block(kind: BlockKind) -> ContentBlock {
    ContentBlock { kind, annotations: None, meta: None }
}

fn failure(message: String) -> CallOutcome {
    CallOutcome::Error(ErrorInfo { message, trace: Vec::new(), transient: false })
}

/// A mono 8 kHz 16-bit WAV of `samples` samples of a square wave.
fn wav(samples: u32) -> Vec<u8> {
    let data_len = samples * 2;
    let mut out = Vec::with_capacity(44 + data_len as usize);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data_len).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1u16.to_le_bytes()); // mono
    out.extend_from_slice(&8000u32.to_le_bytes());
    out.extend_from_slice(&16000u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data_len.to_le_bytes());
    for i in 0..samples {
        let v: i16 = if (i / 10) % 2 == 0 { 8000 } else { -8000 };
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

fn call(name: &str, args: &Value) -> CallOutcome {
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    match name {
        "chart" => {
            let label = text("label").unwrap_or("chart");
            let image = ContentBlock {
                kind: BlockKind::Image(Media { data: DOT_PNG.to_vec(), mime_type: "image/png".into() }),
                annotations: Some(Annotations {
                    audience: vec![Role::User],
                    priority: Some(0.5),
                    last_modified: Some("2026-11-25T10:00:00Z".into()),
                }),
                meta: Some(json!({"example.com/label": label}).to_string()),
            };
            CallOutcome::Success(ToolResult {
                content: vec![block(BlockKind::Text(format!("{label}: a 4x4 red square"))), image],
                structured_content: None,
            })
        }
        "tone" => CallOutcome::Success(ToolResult {
            content: vec![block(BlockKind::Audio(Media { data: wav(800), mime_type: "audio/wav".into() }))],
            structured_content: None,
        }),
        "report" => {
            let Some(path) = text("path") else { return failure("report needs `path`".into()) };
            // Through `jp:host/filesystem`, which every host serves (the page has no preopens).
            let body = match ComponentHost.read(path) {
                Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                Err(e) => return failure(format!("cannot read {path}: {e}")),
            };
            let uri = format!("file:///workspace/{path}");
            let lines = body.lines().count();
            let bytes = body.len();
            CallOutcome::Success(ToolResult {
                content: vec![
                    block(BlockKind::Text(format!("{path}: {lines} lines, {bytes} bytes"))),
                    block(BlockKind::Resource(EmbeddedResource {
                        uri: uri.clone(),
                        mime_type: Some("text/plain".into()),
                        contents: ResourceContents::Text(body),
                    })),
                    block(BlockKind::ResourceLink(ResourceLink {
                        uri,
                        name: path.to_owned(),
                        title: Some(format!("The file {path}")),
                        description: None,
                        mime_type: Some("text/plain".into()),
                        size: Some(bytes as u64),
                    })),
                ],
                structured_content: Some(json!({"path": path, "lines": lines, "bytes": bytes}).to_string()),
            })
        }
        "big" => {
            let n = args.get("bytes").and_then(Value::as_u64).unwrap_or(1024) as usize;
            let mime = text("mime").unwrap_or("image/png").to_owned();
            if args.get("nested").and_then(Value::as_bool) == Some(true) {
                // `n` bytes of arrays in arrays: `[[[…]]]`, nested `n / 2` levels deep.
                CallOutcome::Success(ToolResult {
                    content: Vec::new(),
                    structured_content: Some(format!("{}{}", "[".repeat(n / 2), "]".repeat(n / 2))),
                })
            } else if args.get("structured").and_then(Value::as_bool) == Some(true) {
                // `n` bytes of JSON that is many small values: `[0,0,…,0]`.
                let zeros = "0,".repeat(n / 2);
                CallOutcome::Success(ToolResult {
                    content: Vec::new(),
                    structured_content: Some(format!("[{zeros}0]")),
                })
            } else {
                CallOutcome::Success(ToolResult {
                    content: vec![block(BlockKind::Image(Media { data: vec![0u8; n], mime_type: mime }))],
                    structured_content: None,
                })
            }
        }
        "bad_meta" => CallOutcome::Success(ToolResult {
            content: vec![ContentBlock {
                kind: BlockKind::Text("hello".into()),
                annotations: None,
                meta: Some("{not json".into()),
            }],
            structured_content: None,
        }),
        other => failure(format!("no tool '{other}' in this component")),
    }
}

struct Media_;

impl content::Guest for Media_ {
    fn run(_ctx: Context, name: String, arguments: String, _answers: String) -> CallOutcome {
        match serde_json::from_str::<Value>(&arguments) {
            Ok(args) => call(&name, &args),
            Err(e) => failure(format!("invalid arguments: {e}")),
        }
    }
}

impl Guest for Media_ {
    /// The seed's `run`: the same answers as text, one line for each block that is not text.
    fn run(ctx: Context, name: String, arguments: String, answers: String) -> Outcome {
        match <Media_ as content::Guest>::run(ctx, name, arguments, answers) {
            CallOutcome::Success(r) => Outcome::Success(
                r.content
                    .iter()
                    .map(|b| match &b.kind {
                        BlockKind::Text(t) => t.clone(),
                        BlockKind::Image(m) | BlockKind::Audio(m) => format!("[{}, {} B]", m.mime_type, m.data.len()),
                        BlockKind::Resource(r) => format!("[resource {}]", r.uri),
                        BlockKind::ResourceLink(l) => format!("[link {}]", l.uri),
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            CallOutcome::Error(e) => Outcome::Error(e),
            CallOutcome::NeedsInput(q) => Outcome::NeedsInput(q),
        }
    }
}

impl describe::Guest for Media_ {
    fn schema() -> String {
        let tool = |name: &str, summary: &str, parameters: Value| json!({"name": name, "summary": summary, "description": "", "parameters": parameters});
        json!({"tools": [
            tool("chart", "Draw a chart as a PNG image.", json!({"label": {"type": "string", "summary": "Caption.", "required": false}})),
            tool("tone", "Play a short tone (WAV).", json!({})),
            tool("report", "Report on a workspace file, with the file embedded and linked.",
                json!({"path": {"type": "string", "summary": "The file, relative to the workspace."}})),
            tool("big", "An image of `bytes` bytes of media type `mime`, or with `structured` a JSON array of that size as structured content, or with `nested` arrays in arrays of that size.", json!({
                "bytes": {"type": "integer", "minimum": 0},
                "mime": {"type": "string", "required": false},
                "structured": {"type": "boolean", "required": false},
                "nested": {"type": "boolean", "required": false},
            })),
            tool("bad_meta", "A block whose meta is not JSON.", json!({})),
        ]})
        .to_string()
    }
}

export!(Media_);
