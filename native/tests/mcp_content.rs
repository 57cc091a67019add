//! Content blocks, prompts and resources of wrapped MCP servers through `jp tool call` and
//! `jp mcp` (bare Python servers, no SDK): every block type kept as it came, and the servers'
//! prompts and resources offered under jp.

#![cfg(target_os = "linux")]

use serde_json::{Value, json};

mod support;
use support::approve_config;
use support::mcp::{Session, jp};

/// What every tool of [`blocks_workspace`] answers: one block of each MCP type with their
/// `annotations` and `_meta`, and `structuredContent`.
fn blocks_result() -> Value {
    json!({
        "content": [
            {"type": "text", "text": "two pictures and a sound", "annotations": {"audience": ["user"]}},
            {"type": "image", "data": "iVBORw0KGgo=".repeat(128), "mimeType": "image/png",
             "annotations": {"priority": 0.5}, "_meta": {"origin": "camera"}},
            {"type": "audio", "data": "UklGRiQAAABXQVZF".repeat(2048), "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///x", "mimeType": "text/plain", "text": "body"}},
            {"type": "resource_link", "uri": "file:///y", "name": "y", "description": "the other file",
             "mimeType": "text/markdown", "_meta": {"k": 1}},
        ],
        "structuredContent": {"width": 4, "height": 2, "tags": ["a", "b"]},
    })
}

/// What `jp tool call` prints for [`blocks_result`]: text as text, the rest one line each.
const BLOCKS_SHOWN: &str = "two pictures and a sound\n[image/png, 1.0 KiB]\n[audio/wav, 24 KiB]\n\
                            [resource file:///x (text/plain, 4 B)]\n[link file:///y (text/markdown)]\n";

/// A workspace with a bare MCP server (written here, no SDK), a stdio tool and a VFS tool, all
/// three answering [`blocks_result`].
fn blocks_workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let dir = ws.path().join("tools");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    let result = blocks_result().to_string();
    let server = format!(
        r#"import json, sys
RESULT = json.loads({result:?})
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    method = m.get("method")
    if method == "initialize":
        send({{"jsonrpc": "2.0", "id": m["id"], "result": {{"protocolVersion": m["params"]["protocolVersion"],
              "capabilities": {{"tools": {{}}}}, "serverInfo": {{"name": "blocks", "version": "0"}}}}}})
    elif method == "tools/list":
        send({{"jsonrpc": "2.0", "id": m["id"], "result": {{"tools": [{{"name": "blocks",
              "inputSchema": {{"type": "object", "properties": {{}}}}}}]}}}})
    elif method == "tools/call":
        send({{"jsonrpc": "2.0", "id": m["id"], "result": RESULT}})
    elif "id" in m and method is not None:
        send({{"jsonrpc": "2.0", "id": m["id"], "error": {{"code": -32601, "message": "no"}}}})
"#
    );
    std::fs::write(dir.join("server.py"), server).unwrap();
    // A stdio tool prints the result object; a VFS tool sends it as its `result` notification.
    std::fs::write(dir.join("stdio.py"), format!("import sys\nsys.stdin.read()\nprint({result:?})\n")).unwrap();
    let vfs = format!(
        "import json, sys\nsys.stdin.readline()\nprint(json.dumps({{\"jsonrpc\": \"2.0\", \"method\": \"result\", \"params\": json.loads({result:?})}}), flush=True)\n"
    );
    std::fs::write(dir.join("vfs.py"), vfs).unwrap();
    let config = format!(
        r#"[mcp.servers.bare]
command = "/usr/bin/python3"
args = [{server:?}]
tools = "*"

[conversation.tools.stdio_blocks]
source = "local"
command = "/usr/bin/python3 tools/stdio.py"
parameters = {{}}

[conversation.tools.vfs_blocks]
source = "local"
command = "/usr/bin/python3 tools/vfs.py"
runtime = "vfs"
parameters = {{}}
"#,
        server = dir.join("server.py"),
    );
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    approve_config(ws.path());
    ws
}

#[test]
fn image_audio_resource_blocks_and_structured_content_reach_the_caller_as_they_came() {
    let ws = blocks_workspace();
    let expected = blocks_result();
    for tool in ["bare.blocks", "stdio_blocks", "vfs_blocks"] {
        // `jp tool call`: text as text, every other block as one line.
        let (code, out, err) = jp(ws.path(), &["tool", "call", tool]);
        assert_eq!(code, 0, "{tool}: {err}");
        assert_eq!(out, BLOCKS_SHOWN, "{tool}");
        // `--json`: the blocks and structuredContent as the tool gave them.
        let (code, out, err) = jp(ws.path(), &["tool", "call", tool, "--json"]);
        assert_eq!(code, 0, "{tool}: {err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["result"], expected, "{tool}");
    }

    // `jp mcp`: the first call of the server's tool starts it and goes through rmcp on both
    // sides (client.rs, then mod.rs); the second is relayed raw. Both give the agent the same.
    let mut s = Session::start(ws.path());
    for (tool, path) in
        [("bare.blocks", "rmcp"), ("bare.blocks", "relay"), ("stdio_blocks", "stdio"), ("vfs_blocks", "vfs")]
    {
        let reply = s.call(tool, json!({}));
        let mut result = reply["result"].clone();
        // rmcp writes `isError: false`; the relay passes on the server's result, which has none.
        assert_ne!(result["isError"], true, "{path}: {reply}");
        result.as_object_mut().unwrap().remove("isError");
        assert_eq!(result, expected, "{path}");
    }
    drop(s.child.stdin.take());
    assert!(s.child.wait().unwrap().success());
}

/// A result nested 200,000 levels deep (`structuredContent` of arrays in arrays), as one line of
/// Python: far past the 128 levels serde_json reads.
const DEEP_RESULT: &str =
    r#"'{"content":[{"type":"text","text":"x"}],"structuredContent":' + "[" * 200000 + "]" * 200000 + "}""#;

/// A workspace whose MCP server `deep` (tool `deep.nested`), stdio tool `stdio_nested` and VFS
/// tool `vfs_nested` each answer [`DEEP_RESULT`], written by hand (Python's `json` recurses).
fn deep_workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let dir = ws.path().join("tools");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    let server = format!(
        r#"import json, sys
DEEP = {DEEP_RESULT}
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    method = m.get("method")
    if method == "initialize":
        send({{"jsonrpc": "2.0", "id": m["id"], "result": {{"protocolVersion": m["params"]["protocolVersion"],
              "capabilities": {{"tools": {{}}}}, "serverInfo": {{"name": "deep", "version": "0"}}}}}})
    elif method == "tools/list":
        send({{"jsonrpc": "2.0", "id": m["id"], "result": {{"tools": [{{"name": "nested",
              "inputSchema": {{"type": "object", "properties": {{}}}}}}]}}}})
    elif method == "tools/call":
        sys.stdout.write('{{"jsonrpc":"2.0","id":' + json.dumps(m["id"]) + ',"result":' + DEEP + '}}\n'); sys.stdout.flush()
    elif "id" in m and method is not None:
        send({{"jsonrpc": "2.0", "id": m["id"], "error": {{"code": -32601, "message": "no"}}}})
"#
    );
    std::fs::write(dir.join("server.py"), server).unwrap();
    let stdio = format!("import sys\nsys.stdin.read()\nsys.stdout.write({DEEP_RESULT})\n");
    std::fs::write(dir.join("stdio.py"), stdio).unwrap();
    // The VFS tool keeps reading its stdin after its result: it leaves when jp ends the call.
    let vfs = format!(
        "import sys\nsys.stdin.readline()\nsys.stdout.write('{{\"jsonrpc\":\"2.0\",\"method\":\"result\",\"params\":' + {DEEP_RESULT} + '}}\\n')\nsys.stdout.flush()\nsys.stdin.read()\n"
    );
    std::fs::write(dir.join("vfs.py"), vfs).unwrap();
    let config = format!(
        r#"[mcp.servers.deep]
command = "/usr/bin/python3"
args = [{server:?}]
tools = "*"

[conversation.tools.stdio_nested]
source = "local"
command = "/usr/bin/python3 tools/stdio.py"
parameters = {{}}

[conversation.tools.vfs_nested]
source = "local"
command = "/usr/bin/python3 tools/vfs.py"
runtime = "vfs"
parameters = {{}}
"#,
        server = dir.join("server.py"),
    );
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    approve_config(ws.path());
    ws
}

/// Far above what any of these calls needs: a call that hung would end with "timed out"
/// instead of the error, and fail the test.
const LONG_TIMEOUT: &str = "120";

#[test]
fn a_result_nested_too_deep_is_a_tool_error_that_says_so_not_a_timeout() {
    let ws = deep_workspace();
    let says_too_deep = |text: &str| text.contains("nested more than 127 levels deep") && !text.contains("timed out");
    for tool in ["deep.nested", "stdio_nested", "vfs_nested"] {
        let (code, out, err) = jp(ws.path(), &["tool", "call", tool, "--timeout", LONG_TIMEOUT]);
        assert_ne!(code, 0, "{tool}: {out}");
        assert!(says_too_deep(&err), "{tool}: {err}");
    }
    // `jp mcp`: the server's first call goes through rmcp, the second is relayed raw.
    let mut s = Session::start_with(ws.path(), &["--timeout", LONG_TIMEOUT]);
    for (tool, path) in
        [("deep.nested", "rmcp"), ("deep.nested", "relay"), ("stdio_nested", "stdio"), ("vfs_nested", "vfs")]
    {
        let reply = s.call(tool, json!({}));
        assert_eq!(reply["result"]["isError"], true, "{path}: {reply}");
        let text = reply["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert!(says_too_deep(text), "{path}: {reply}");
    }
    drop(s.child.stdin.take());
    assert!(s.child.wait().unwrap().success());
}

/// A bare MCP server with prompts and resources (and no tools).
const DOCS_SERVER: &str = r##"import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    rid, method, params = m.get("id"), m.get("method"), m.get("params") or {}
    if rid is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion", "2025-06-18"), "serverInfo": {"name": "docs", "version": "0"},
                  "capabilities": {"prompts": {}, "resources": {}, "tools": {}}}
    elif method == "tools/list":
        result = {"tools": []}
    elif method == "prompts/list":
        result = {"prompts": [{"name": "summarize", "description": "Summarize a topic.", "arguments": [{"name": "topic", "required": True}]}]}
    elif method == "prompts/get":
        topic = (params.get("arguments") or {}).get("topic", "?")
        result = {"description": "Summarize.", "messages": [{"role": "user", "content": {"type": "text", "text": f"Summarize {topic}."}}]}
    elif method == "resources/list":
        result = {"resources": [{"uri": "docs://readme", "name": "readme", "mimeType": "text/markdown"}]}
    elif method == "resources/read":
        result = {"contents": [{"uri": params["uri"], "mimeType": "text/markdown", "text": "# Read me\n"}]}
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": method}}); continue
    send({"jsonrpc": "2.0", "id": rid, "result": result})
"##;

#[test]
fn a_wrapped_servers_prompts_and_resources_are_offered_through_jp_mcp() {
    let ws = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("docs.py"), DOCS_SERVER).unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    let config =
        format!("[mcp.servers.docs]\ncommand = \"/usr/bin/python3\"\nargs = [{:?}]\n", dir.path().join("docs.py"));
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    approve_config(ws.path());
    let mut s = Session::start(ws.path());
    let prompts = s.request("prompts/list", json!({}));
    assert_eq!(prompts["result"]["prompts"][0]["name"], "docs.summarize", "{prompts}");
    let got = s.request("prompts/get", json!({"name": "docs.summarize", "arguments": {"topic": "sandboxes"}}));
    assert_eq!(got["result"]["messages"][0]["content"]["text"], "Summarize sandboxes.", "{got}");
    let missing = s.request("prompts/get", json!({"name": "docs.nope"}));
    assert!(missing["error"]["message"].as_str().unwrap().contains("no prompt 'docs.nope'"), "{missing}");
    let resources = s.request("resources/list", json!({}));
    assert_eq!(resources["result"]["resources"][0]["uri"], "docs://readme", "{resources}");
    let read = s.request("resources/read", json!({"uri": "docs://readme"}));
    assert_eq!(read["result"]["contents"][0]["text"], "# Read me\n", "{read}");
    drop(s.child.stdin.take());
    assert!(s.child.wait().unwrap().success());
}
