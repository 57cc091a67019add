//! Components that answer with typed content blocks (`jp:tool/content`, `wit/tool/content.wit`)
//! under the real wasmtime runtime, through `jp tool call` and `jp mcp`: every block kept typed,
//! a result that breaks the interface's promises refused, the output limit held, and a component
//! built against the seed's `tool` world alone still answering text.

#![cfg(target_os = "linux")]

use std::path::Path;
use std::sync::Arc;

use jp_core::runtime::{Config, ExecutionOutcome, ToolCall, ToolConfig};
use jp_core::state::{ContentBlock, ToolResult};
use jp_native::files::FsProjectFiles;
use jp_native::runtime::wasm::{GUESTS_DIR, WasmEngine, WasmLimits, WasmRuntime};
use serde_json::{Value, json};

mod support;
use support::approve_config;
use support::mcp::{Session, jp};

/// The PNG the `media` component draws (`tools/guests/media/src/dot.png`).
const DOT_PNG: &[u8] = include_bytes!("../../tools/guests/media/src/dot.png");

fn b64(data: &[u8]) -> String {
    jp_core::state::encode_base64(data)
}

/// A workspace with the `media` component as tools `chart`, `tone`, `report`, `big` and
/// `bad_meta`, and a file to report on.
fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let w = ws.path();
    std::fs::create_dir_all(w.join(".jp/tools")).unwrap();
    std::fs::write(w.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::copy(Path::new(GUESTS_DIR).join("jp_tool_media.wasm"), w.join(".jp/tools/media.wasm")).unwrap();
    std::fs::copy(Path::new(GUESTS_DIR).join("jp_tool_test.wasm"), w.join(".jp/tools/seed.wasm")).unwrap();
    let mut config = String::new();
    for (tool, params) in [
        ("chart", r#"{ label = { type = "string", required = false } }"#),
        ("tone", "{}"),
        ("report", r#"{ path = { type = "string" } }"#),
        (
            "big",
            r#"{ bytes = { type = "integer" }, mime = { type = "string", required = false }, structured = { type = "boolean", required = false }, nested = { type = "boolean", required = false } }"#,
        ),
        ("bad_meta", "{}"),
    ] {
        config.push_str(&format!(
            "[conversation.tools.{tool}]\nsource = \"local\"\nwasm = \".jp/tools/media.wasm\"\nparameters = {params}\n\n"
        ));
    }
    config.push_str("[conversation.tools.wasm_test]\nsource = \"local\"\nwasm = \".jp/tools/seed.wasm\"\nparameters = { path = { type = \"string\" } }\n");
    std::fs::write(w.join(".jp/config.toml"), config).unwrap();
    approve_config(w);
    ws
}

fn tool_config(ws: &Path, name: &str) -> ToolConfig {
    let text = std::fs::read_to_string(ws.join(".jp/config.toml")).unwrap();
    Config::from_toml(&text, "config.toml").unwrap().conversation.tools.remove(name).unwrap()
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall::new(name, "c", args.as_object().cloned().unwrap_or_default())
}

async fn run(rt: &WasmRuntime, ws: &Path, name: &str, args: Value) -> ExecutionOutcome {
    rt.run(call(name, args), &tool_config(ws, name), None).await.unwrap()
}

fn result(out: ExecutionOutcome) -> ToolResult {
    match out {
        ExecutionOutcome::Completed { result: Ok(r), .. } => r,
        other => panic!("expected a result, got {other:?}"),
    }
}

fn failure(out: ExecutionOutcome) -> String {
    match out {
        ExecutionOutcome::Completed { result: Err(e), .. } => e.message,
        other => panic!("expected a tool error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_components_blocks_arrive_typed_with_their_annotations_meta_and_structured_content() {
    let ws = workspace();
    let files = Arc::new(FsProjectFiles::open(ws.path()).unwrap());
    let rt = WasmRuntime::new(WasmEngine::shared().unwrap(), files, ws.path());

    let chart = serde_json::to_value(result(run(&rt, ws.path(), "chart", json!({"label": "sales"})).await)).unwrap();
    assert_eq!(
        chart,
        json!({"content": [
            {"type": "text", "text": "sales: a 4x4 red square"},
            {"type": "image", "data": b64(DOT_PNG), "mimeType": "image/png",
             "annotations": {"audience": ["user"], "priority": 0.5, "lastModified": "2026-11-25T10:00:00Z"},
             "_meta": {"example.com/label": "sales"}},
        ]})
    );

    let tone = result(run(&rt, ws.path(), "tone", json!({})).await);
    match &tone.content[..] {
        [ContentBlock::Audio { data, mime_type, .. }] => {
            assert_eq!(mime_type, "audio/wav");
            assert!(data.starts_with(&b64(b"RIFF")[..4]), "{data:.16}");
            assert_eq!(tone.content[0].summary().unwrap(), "[audio/wav, 1.6 KiB]");
        }
        other => panic!("{other:?}"),
    }

    let report =
        serde_json::to_value(result(run(&rt, ws.path(), "report", json!({"path": "notes.txt"})).await)).unwrap();
    assert_eq!(
        report,
        json!({
            "content": [
                {"type": "text", "text": "notes.txt: 3 lines, 14 bytes"},
                {"type": "resource", "resource": {"uri": "file:///workspace/notes.txt", "mimeType": "text/plain", "text": "one\ntwo\nthree\n"}},
                {"type": "resource_link", "uri": "file:///workspace/notes.txt", "name": "notes.txt",
                 "title": "The file notes.txt", "mimeType": "text/plain", "size": 14},
            ],
            "structuredContent": {"path": "notes.txt", "lines": 3, "bytes": 14},
        })
    );
    // The tool's own failure stays a tool error.
    let missing = failure(run(&rt, ws.path(), "report", json!({"path": "nope.txt"})).await);
    assert!(missing.starts_with("cannot read nope.txt"), "{missing}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_result_that_breaks_the_interface_or_the_output_limit_is_refused_and_the_seed_world_stays_text() {
    let ws = workspace();
    let files = Arc::new(FsProjectFiles::open(ws.path()).unwrap());
    let limits = WasmLimits { output: 64 << 10, ..WasmLimits::default() };
    let rt = WasmRuntime::new(WasmEngine::shared().unwrap(), files, ws.path()).limits(limits);

    let bad = failure(run(&rt, ws.path(), "bad_meta", json!({})).await);
    assert_eq!(
        bad,
        "tool 'bad_meta' returned a result jp cannot use: block 0: meta is not JSON (key must be a string at line 1 column 2)"
    );

    // 40 KiB of bytes is 53 KiB in base64: under the limit; 60 KiB is 80 KiB: over it.
    let under = result(run(&rt, ws.path(), "big", json!({"bytes": 40 << 10})).await);
    assert_eq!(under.content[0].summary().unwrap(), "[image/png, 40 KiB]");
    let over = failure(run(&rt, ws.path(), "big", json!({"bytes": 60 << 10})).await);
    assert!(over.contains("over the 65536-byte output limit; ask it for less"), "{over}");
    // Counted before anything is encoded or parsed: 16 MiB of `[0,0,…]` (8 million JSON values
    // once parsed) is refused from its length alone.
    let over = failure(run(&rt, ws.path(), "big", json!({"bytes": 16 << 20, "structured": true})).await);
    assert!(over.contains("returned at least 16777219 bytes, over the 65536-byte output limit"), "{over}");

    // The seed's test tool has no `content` export: its string is text, even when it reads a
    // file that looks like a result object.
    let lookalike = r#"{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}"#;
    std::fs::write(ws.path().join("result.json"), lookalike).unwrap();
    let text = result(run(&rt, ws.path(), "wasm_test", json!({"path": "result.json"})).await);
    assert_eq!(text, ToolResult::text(lookalike));
}

#[test]
fn jp_tool_call_shows_a_components_blocks_and_jp_mcp_hands_them_on() {
    let ws = workspace();
    let (code, out, err) = jp(ws.path(), &["tool", "call", "chart", "--args", r#"{"label":"sales"}"#]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "sales: a 4x4 red square\n[image/png, 73 B]\n");
    let (code, out, err) = jp(ws.path(), &["tool", "call", "report", "--args", r#"{"path":"notes.txt"}"#, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["result"]["structuredContent"], json!({"path": "notes.txt", "lines": 3, "bytes": 14}));
    assert_eq!(v["result"]["content"][2]["type"], "resource_link");

    let mut s = Session::start(ws.path());
    let reply = s.call("chart", json!({"label": "q3"}));
    let image = &reply["result"]["content"][1];
    assert_eq!(image["type"], "image", "{reply}");
    assert_eq!(image["data"], b64(DOT_PNG));
    assert_eq!(image["annotations"]["audience"], json!(["user"]));
    assert_eq!(image["_meta"], json!({"example.com/label": "q3"}));
    let reply = s.call("report", json!({"path": "notes.txt"}));
    assert_eq!(reply["result"]["structuredContent"]["lines"], 3, "{reply}");
    assert_eq!(reply["result"]["content"][1]["resource"]["text"], "one\ntwo\nthree\n");
    drop(s.child.stdin.take());
    assert!(s.child.wait().unwrap().success());

    // A media type is the component's text: the terminal gets it escaped, on one line.
    let hostile = "image/png\u{1b}]0;owned\u{7}\n[fake line]";
    let args = json!({"bytes": 3, "mime": hostile}).to_string();
    let (code, out, err) = jp(ws.path(), &["tool", "call", "big", "--args", &args]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    assert_eq!(out.lines().count(), 1, "{out:?}");
}

#[test]
fn structured_content_nested_too_deep_is_a_tool_error_that_says_so_not_a_timeout() {
    let ws = workspace();
    // 200,000 levels of arrays; a call timeout far above what the call needs: a hang would end
    // with "timed out" instead, and fail the test.
    let args = json!({"bytes": 400_000, "nested": true}).to_string();
    let says_too_deep = |text: &str| {
        text.contains("structured-content is nested more than 127 levels deep") && !text.contains("timed out")
    };
    let (code, out, err) = jp(ws.path(), &["tool", "call", "big", "--timeout", "120", "--args", &args]);
    assert_ne!(code, 0, "{out}");
    assert!(says_too_deep(&err), "{err}");
    let mut s = Session::start_with(ws.path(), &["--timeout", "120"]);
    let reply = s.call("big", json!({"bytes": 400_000, "nested": true}));
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(says_too_deep(reply["result"]["content"][0]["text"].as_str().unwrap_or_default()), "{reply}");
    drop(s.child.stdin.take());
    assert!(s.child.wait().unwrap().success());
}
