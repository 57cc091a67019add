//! Real agent CLIs pointed at `jp mcp` as the README says (issue 25, "done when"), each offline
//! against a scripted model endpoint on 127.0.0.1. Claude Code (npm `@anthropic-ai/claude-code`,
//! pinned in package.json; `tests/agents/anthropic_endpoint.mjs`), with the README's
//! `--allowedTools mcp__jp`; Codex (npm `@openai/codex`, pinned; `tests/agents/
//! responses_endpoint.mjs`) with the README's `required = true` and
//! `default_tools_approval_mode = "approve"`. Claude Code speaks MCP 2026-07-28 and starts stdio servers on
//! sockets, so this drives jp's MRTR path and its socket handling as a user's session would:
//! the model reads a file, gets an image from a stdio tool, asks for `.env` — the user is asked
//! (Claude Code's `Elicitation` hook answers as the user would in its dialog) — and when the
//! session ends no jp process is left.

#![cfg(target_os = "linux")]

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};
use support::approve_config;

const JP: &str = env!("CARGO_BIN_EXE_jp");

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The scripted model (`script` in tests/agents): makes the calls of `plan`, one per round;
/// returns it and its port.
fn endpoint(script: &str, plan: &Value, log: &Path) -> (Killed, u16) {
    let mut child = Command::new("node")
        .arg(repo().join("tests/agents").join(script))
        .env("PLAN", plan.to_string())
        .env("LOG", log)
        .stdout(Stdio::piped())
        .spawn()
        .expect("node");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port = line.trim().strip_prefix("listening ").and_then(|p| p.parse().ok()).expect("the endpoint's port");
    (Killed(child), port)
}

/// A workspace with a file, a `.env`, and a stdio tool `picture` that answers with an image.
fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.txt"), "hello from the workspace\n").unwrap();
    std::fs::write(ws.path().join(".env"), "SECRET=s3cr3t-for-the-test\n").unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    std::fs::create_dir_all(ws.path().join("tools")).unwrap();
    let result = json!({"content": [
        {"type": "text", "text": "a picture"},
        {"type": "image", "data": PNG, "mimeType": "image/png"},
    ]});
    std::fs::write(
        ws.path().join("tools/picture.py"),
        format!("import sys\nsys.stdin.read()\nprint({:?})\n", result.to_string()),
    )
    .unwrap();
    std::fs::write(
        ws.path().join(".jp/config.toml"),
        "[conversation.tools.picture]\nsource = \"local\"\ncommand = \"/usr/bin/python3 tools/picture.py\"\nsummary = \"Takes a picture.\"\nparameters = {}\n",
    )
    .unwrap();
    approve_config(ws.path());
    ws
}

/// What one `claude -p` session did: the requests the model got, the questions jp asked, and
/// (when tapped) the JSON-RPC messages Claude Code sent to jp and got from it.
struct Session {
    requests: Vec<Value>,
    asked: Vec<Value>,
    to_jp: Vec<Value>,
    from_jp: Vec<Value>,
}

impl Session {
    /// The `tool_result` blocks the model was sent, in order.
    fn results(&self) -> Vec<Value> {
        let mut seen = Vec::new();
        for r in &self.requests {
            let Some(last) = r["messages"].as_array().and_then(|m| m.last()) else { continue };
            for block in last["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_result" && !seen.contains(block) {
                    seen.push(block.clone());
                }
            }
        }
        seen
    }
}

/// Run Claude Code once in `ws` with the README's snippet (`jp mcp` as server `jp`,
/// `--allowedTools mcp__jp`); its `Elicitation` hook answers jp's questions with `decision`.
fn claude(ws: &Path, prompt: &str, plan: &Value, decision: &str) -> Session {
    claude_session(ws, prompt, plan, decision, false)
}

/// [`claude`], with `tap`: jp is started through `sh` with `tee` on both sides of its stdio,
/// so that the test sees the protocol as Claude Code speaks it.
fn claude_session(ws: &Path, prompt: &str, plan: &Value, decision: &str, tap: bool) -> Session {
    let claude = repo().join("node_modules/.bin/claude");
    assert!(claude.exists(), "{} is missing: run `npm install` at the repository's root", claude.display());
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("requests.jsonl");
    let asked = scratch.path().join("asked.jsonl");
    let (_endpoint, port) = endpoint("anthropic_endpoint.mjs", plan, &log);
    // jp finds the approval where `jp trust` put it (Claude Code passes its servers only a few
    // variables of its own environment, and its HOME here is a scratch one).
    let state =
        std::env::var("XDG_STATE_HOME").unwrap_or_else(|_| format!("{}/.local/state", std::env::var("HOME").unwrap()));
    let (to_jp, from_jp) = (scratch.path().join("to_jp.jsonl"), scratch.path().join("from_jp.jsonl"));
    let mcp = if tap {
        let wrap = scratch.path().join("tap.sh");
        std::fs::write(
            &wrap,
            format!(
                "#!/bin/sh\ntee '{}' | '{JP}' mcp --workspace '{}' | tee '{}'\n",
                to_jp.display(),
                ws.display(),
                from_jp.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&wrap, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        json!({"mcpServers": {"jp": {"command": wrap, "args": [], "env": {"XDG_STATE_HOME": state}}}})
    } else {
        json!({"mcpServers": {"jp": {"command": JP, "args": ["mcp", "--workspace", ws], "env": {"XDG_STATE_HOME": state}}}})
    };
    std::fs::write(scratch.path().join("mcp.json"), mcp.to_string()).unwrap();
    let hook = scratch.path().join("hook.sh");
    let answer = json!({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept", "content": {"decision": decision}}});
    std::fs::write(
        &hook,
        format!("#!/bin/sh\ncat >> '{}'\necho >> '{}'\necho '{answer}'\n", asked.display(), asked.display()),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let settings =
        json!({"hooks": {"Elicitation": [{"matcher": "jp", "hooks": [{"type": "command", "command": hook}]}]}});
    std::fs::write(scratch.path().join("settings.json"), settings.to_string()).unwrap();
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = Command::new(&claude)
        .current_dir(ws)
        .args(["-p", prompt, "--strict-mcp-config", "--allowedTools", "mcp__jp", "--output-format", "json"])
        .arg("--mcp-config")
        .arg(scratch.path().join("mcp.json"))
        .arg("--settings")
        .arg(scratch.path().join("settings.json"))
        .env("HOME", &home)
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("ANTHROPIC_API_KEY", "sk-test-not-a-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        // Otherwise MCP tools hide behind ToolSearch and the first round offers none.
        .env("ENABLE_TOOL_SEARCH", "false")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "claude: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    Session { requests: lines(&log), asked: lines(&asked), to_jp: lines(&to_jp), from_jp: lines(&from_jp) }
}

/// Where jp finds the approval `jp trust` recorded: the clients pass their servers only a few
/// variables of their own environment, and their HOME here is a scratch one.
fn state_dir() -> String {
    std::env::var("XDG_STATE_HOME").unwrap_or_else(|_| format!("{}/.local/state", std::env::var("HOME").unwrap()))
}

fn lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Processes whose command line names `ws` (jp serving it, the tools it started).
fn left_in(ws: &Path) -> Vec<String> {
    let needle = ws.to_string_lossy().into_owned();
    let mut left = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if !entry.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(&needle) {
            left.push(cmdline);
        }
    }
    left
}

#[test]
fn claude_code_reads_sees_an_image_is_asked_and_leaves_nothing_running() {
    let ws = workspace();
    let plan = json!([
        {"name": "mcp__jp__fs_read_file", "input": {"path": "notes.txt"}},
        {"name": "mcp__jp__picture", "input": {}},
        {"name": "mcp__jp__fs_read_file", "input": {"path": ".env"}},
    ]);
    let session = claude(ws.path(), "do as planned", &plan, "allow once");
    // The model was offered jp's tools, described.
    let first = session.requests.iter().find(|r| r["tools"].as_array().is_some_and(|t| !t.is_empty())).unwrap();
    for name in ["mcp__jp__fs_read_file", "mcp__jp__picture", "mcp__jp__run"] {
        assert!(first["tools"].as_array().unwrap().contains(&json!(name)), "{name} not offered: {}", first["tools"]);
    }
    let results = session.results();
    assert_eq!(results.len(), 3, "{results:#?}");
    // The file, as text.
    assert_eq!(results[0]["content"][0]["text"], "hello from the workspace\n", "{:#}", results[0]);
    // The picture, as an image the model sees (not a JSON string in a text block).
    let image = results[1]["content"].as_array().unwrap().iter().find(|b| b["type"] == "image");
    let image = image.unwrap_or_else(|| panic!("no image block: {:#}", results[1]));
    assert_eq!(image["source"]["data"], PNG, "{image:#}");
    assert_eq!(image["source"]["media_type"], "image/png", "{image:#}");
    // `.env` is sensitive: the user was asked once, through Claude Code, and allowed it.
    assert_eq!(session.asked.len(), 1, "{:#?}", session.asked);
    let message = session.asked[0]["message"].as_str().unwrap();
    assert!(message.contains("fs_read_file") && message.contains(".env"), "{message}");
    assert_eq!(session.asked[0]["mcp_server_name"], "jp");
    assert!(results[2].to_string().contains("SECRET=s3cr3t-for-the-test"), "{:#}", results[2]);
    // The session ended: jp and every tool it started are gone.
    let left = left_in(ws.path());
    assert!(left.is_empty(), "still running after the session: {left:#?}");
}

#[test]
fn claude_code_user_who_denies_keeps_the_file_from_the_model() {
    let ws = workspace();
    let plan = json!([{"name": "mcp__jp__fs_read_file", "input": {"path": ".env"}}]);
    let session = claude(ws.path(), "do as planned", &plan, "deny");
    assert_eq!(session.asked.len(), 1, "{:#?}", session.asked);
    let results = session.results();
    assert_eq!(results.len(), 1, "{results:#?}");
    let text = results[0].to_string();
    assert!(!text.contains("s3cr3t"), "{text}");
    assert_eq!(results[0]["is_error"], true, "{text}");
    assert!(text.contains("denied"), "{text}");
}

/// A workspace whose jp wraps server-everything (npm, pinned) under the OS sandbox, as the
/// README shows.
fn everything_workspace() -> tempfile::TempDir {
    let repo = repo();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    let config = format!(
        "[mcp.servers.everything]\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\nread_paths = [{:?}]\ntools = \"*\"\n",
        repo.join("node_modules/node/bin/node").display().to_string(),
        repo.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js").display().to_string(),
        repo.join("node_modules").display().to_string(),
    );
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    approve_config(ws.path());
    ws
}

#[test]
fn claude_code_offers_a_wrapped_servers_prompt_and_its_tools() {
    let ws = everything_workspace();
    // The user runs the server's prompt as Claude Code offers it: a slash command.
    let session = claude(ws.path(), "/mcp__jp__everything.simple-prompt", &json!([]), "deny");
    let first = session.requests.first().expect("the model was asked");
    let sent = first["messages"].to_string();
    assert!(
        sent.contains("This is a simple prompt without arguments."),
        "the prompt's text did not reach the model: {sent}"
    );
    let tools = first["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t.as_str().is_some_and(|t| t.starts_with("mcp__jp__everything"))), "{tools:?}");
    let left = left_in(ws.path());
    assert!(left.is_empty(), "still running after the session: {left:#?}");
}

#[test]
fn claude_code_gets_a_wrapped_servers_progress_under_its_own_token() {
    // Print mode shows no progress, so the test looks at the wire: Claude Code sends a
    // `progressToken` with its call, and the wrapped server's progress comes back under it.
    let ws = everything_workspace();
    let plan =
        json!([{"name": "mcp__jp__everything_trigger-long-running-operation", "input": {"duration": 3, "steps": 3}}]);
    let session = claude_session(ws.path(), "do as planned", &plan, "deny", true);
    let call = session.to_jp.iter().find(|m| m["method"] == "tools/call").expect("Claude Code called the tool");
    assert_eq!(call["params"]["name"], "everything.trigger-long-running-operation", "{call:#}");
    let token = call["params"]["_meta"]["progressToken"].clone();
    assert!(!token.is_null(), "Claude Code sent no progressToken: {call:#}");
    let progress: Vec<f64> = session
        .from_jp
        .iter()
        .filter(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == token)
        .map(|m| m["params"]["progress"].as_f64().unwrap())
        .collect();
    // The server reports each of its 3 steps; jp may tick once before it starts reporting.
    assert!(progress.len() >= 3, "{:#?}", session.from_jp);
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "progress must increase: {progress:?}");
    let reply = session.from_jp.iter().find(|m| m["id"] == call["id"] && m.get("result").is_some()).unwrap();
    assert_eq!(
        reply["result"]["content"][0]["text"],
        "Long running operation completed. Duration: 3 seconds, Steps: 3."
    );
    let results = session.results();
    assert!(results[0].to_string().contains("Long running operation completed"), "{results:#?}");
}

/// Run `codex exec` once in `ws` with the README's `[mcp_servers.jp]`; the `function_call_output`
/// items the model was sent, in order.
fn codex(ws: &Path, plan: &Value) -> Vec<Value> {
    let codex = repo().join("node_modules/.bin/codex");
    assert!(codex.exists(), "{} is missing: run `npm install` at the repository's root", codex.display());
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("requests.jsonl");
    let (_endpoint, port) = endpoint("responses_endpoint.mjs", plan, &log);
    let config = format!(
        r#"model = "gpt-5"
model_provider = "scripted"

[model_providers.scripted]
name = "scripted"
base_url = "http://127.0.0.1:{port}/v1"
env_key = "SCRIPTED_KEY"
wire_api = "responses"

[mcp_servers.jp]
command = {JP:?}
args = ["mcp", "--workspace", {ws:?}]
env = {{ XDG_STATE_HOME = {state:?} }}
required = true
default_tools_approval_mode = "approve"
"#,
        ws = ws.display().to_string(),
        state = state_dir(),
    );
    std::fs::write(scratch.path().join("config.toml"), config).unwrap();
    let out = Command::new(&codex)
        .current_dir(ws)
        .args(["exec", "--skip-git-repo-check", "--ephemeral", "--disable", "plugins", "-C"])
        .arg(ws)
        .arg("do as planned")
        .env("CODEX_HOME", scratch.path())
        .env("HOME", scratch.path())
        .env("SCRIPTED_KEY", "not-a-key")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "codex: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let mut outputs: Vec<Value> = Vec::new();
    for request in lines(&log) {
        for item in request["input"].as_array().into_iter().flatten() {
            if item["type"] == "function_call_output" && !outputs.iter().any(|o| o["call_id"] == item["call_id"]) {
                outputs.push(item.clone());
            }
        }
    }
    outputs
}

#[test]
fn codex_reads_sees_an_image_and_leaves_nothing_running() {
    let ws = workspace();
    let plan = json!([
        {"name": "fs_read_file", "input": {"path": "notes.txt"}},
        {"name": "picture", "input": {}},
        {"name": "fs_read_file", "input": {"path": ".env"}},
    ]);
    let outputs = codex(ws.path(), &plan);
    assert_eq!(outputs.len(), 3, "{outputs:#?}");
    assert!(outputs[0]["output"].to_string().contains("hello from the workspace"), "{:#}", outputs[0]);
    // The picture reaches the model as an image, not as a JSON string.
    let image = outputs[1]["output"].as_array().into_iter().flatten().find(|b| b["type"] == "input_image");
    let image = image.unwrap_or_else(|| panic!("no image: {:#}", outputs[1]));
    assert_eq!(image["image_url"], format!("data:image/png;base64,{PNG}"), "{image:#}");
    // `codex exec` has nobody to ask: jp's question about `.env` is declined, and the file
    // stays with the user.
    let denied = outputs[2]["output"].to_string();
    assert!(!denied.contains("s3cr3t") && denied.contains(".env") && denied.contains("declined"), "{denied}");
    let left = left_in(ws.path());
    assert!(left.is_empty(), "still running after the session: {left:#?}");
}
