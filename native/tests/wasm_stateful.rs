//! Components with live sessions (RFD 009, `jp:tool/stateful`) under the real `jp mcp`: the
//! example `calc` component keeps its bindings across commands, asks before clearing them,
//! stops on `quit`, and still runs as a one-shot call; a misbehaving session (the test-only
//! `faults-stateful` component) hits the per-command deadline, the memory limit or a trap, its
//! handle stops, and `jp` goes on serving.

#![cfg(target_os = "linux")]

mod support;

use std::path::Path;

use jp_native::runtime::wasm::GUESTS_DIR;
use serde_json::{Value, json};
use support::approve_config;
use support::mcp::Session;

fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let w = ws.path();
    std::fs::create_dir_all(w.join(".jp/tools")).unwrap();
    for (guest, name) in [("jp_tool_calc", "calc"), ("jp_tool_faults_stateful", "stuck")] {
        std::fs::copy(Path::new(GUESTS_DIR).join(format!("{guest}.wasm")), w.join(format!(".jp/tools/{name}.wasm")))
            .unwrap();
    }
    let config = "[conversation.tools.calc]\nsource = \"local\"\nwasm = \".jp/tools/calc.wasm\"\n\n\
                  [conversation.tools.stuck]\nsource = \"local\"\nwasm = \".jp/tools/stuck.wasm\"\n\
                  parameters = { note = { type = \"string\", required = false } }\n";
    std::fs::write(w.join(".jp/config.toml"), config).unwrap();
    approve_config(w);
    ws
}

/// A stateful command's RFD 009 reply (`{"id","state",…}`).
fn state(reply: &Value) -> Value {
    let result = &reply["result"];
    assert!(result.is_object(), "not a result: {reply}");
    result["structuredContent"].clone()
}

#[test]
fn calc_keeps_its_bindings_across_commands_asks_before_clearing_and_stops_on_quit() {
    let ws = workspace();
    let mut s = Session::start_with(ws.path(), &["--timeout", "20"]);

    let list = s.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    let calc = tools.iter().find(|t| t["name"] == "calc").unwrap_or_else(|| panic!("no calc in {list}"));
    let schema = &calc["inputSchema"];
    assert_eq!(schema["properties"]["action"]["enum"], json!(["spawn", "fetch", "apply", "abort"]), "{schema}");
    assert!(schema["properties"]["prelude"].is_object() && schema.get("oneOf").is_none(), "{schema}");

    let spawned = state(&s.call("calc", json!({"action": "spawn", "prelude": "a = 40"})));
    assert_eq!(spawned["id"], "h_1", "{spawned}");
    assert_eq!(spawned["state"], "running");
    let greeting = spawned["content"].as_str().unwrap();
    assert!(greeting.starts_with("calc:") && greeting.ends_with("a = 40"), "{greeting}");

    let r = state(&s.call("calc", json!({"action": "apply", "id": "h_1", "input": "x = 2 * 3"})));
    assert_eq!((r["state"].as_str(), r["content"].as_str()), (Some("running"), Some("x = 6")), "{r}");
    let r = state(&s.call("calc", json!({"action": "apply", "id": "h_1", "input": "x + 1"})));
    assert_eq!(r["content"], "= 7", "{r}");
    // A mistake is a line of the session's output; the session lives on.
    let r = state(&s.call("calc", json!({"action": "apply", "id": "h_1", "input": "x / 0\nx + a"})));
    assert_eq!(r["content"], "error: division by zero in 6 / 0\n= 46", "{r}");
    let r = state(&s.call("calc", json!({"action": "fetch", "id": "h_1"})));
    assert_eq!(r["state"], "running", "{r}");

    let r = state(&s.call("calc", json!({"action": "apply", "id": "h_1", "input": "clear"})));
    assert_eq!(r["state"], "waiting", "{r}");
    assert_eq!(r["question"]["id"], "clear", "{r}");
    assert_eq!(r["question"]["text"], "Forget all 2 bindings?", "{r}");
    // The answer is routed by the handle's state: `true` answers the question.
    let r = state(&s.call("calc", json!({"action": "apply", "id": "h_1", "input": true})));
    assert_eq!((r["state"].as_str(), r["content"].as_str()), (Some("running"), Some("forgot 2 bindings")), "{r}");
    let r = state(&s.call("calc", json!({"action": "apply", "id": "h_1", "input": "vars"})));
    assert_eq!(r["content"], "(no bindings)", "{r}");

    let r = state(&s.call("calc", json!({"action": "apply", "id": "h_1", "input": "y = 1\nquit"})));
    assert_eq!((r["state"].as_str(), r["result"].as_str()), (Some("stopped"), Some("y = 1\nbye: 1 binding")), "{r}");
    let gone = s.call("calc", json!({"action": "fetch", "id": "h_1"}));
    assert!(gone.to_string().contains("no live handle 'h_1'"), "{gone}");

    // Abort of a live session.
    let r = state(&s.call("calc", json!({"action": "spawn"})));
    assert_eq!((r["id"].as_str(), r["state"].as_str()), (Some("h_2"), Some("running")), "{r}");
    let r = state(&s.call("calc", json!({"action": "abort", "id": "h_2"})));
    assert_eq!(r["state"], "stopped", "{r}");
    let gone = s.call("calc", json!({"action": "apply", "id": "h_2", "input": "1"}));
    assert!(gone.to_string().contains("no live handle 'h_2'"), "{gone}");

    // Without `action`: run to its end (spawned with `program`, which ends the session).
    let one = s.call("calc", json!({"program": "n = 6\nn * 7"}));
    assert_eq!(one["result"]["isError"], false, "{one}");
    assert_eq!(one["result"]["content"][0]["text"], "n = 6\n= 42", "{one}");

    drop(s.child.stdin.take());
    assert!(s.child.wait().unwrap().success());
}

#[test]
fn a_session_command_over_the_deadline_or_memory_limit_or_trapping_stops_only_its_handle() {
    let ws = workspace();
    // A 10 s deadline per command: the spin ends there, whatever the machine, and the other
    // commands (a flood to the output limit through a debug build) finish well within it on a
    // busy one.
    let mut s = Session::start_with(ws.path(), &["--timeout", "10"]);

    let r = state(&s.call("stuck", json!({"action": "spawn"})));
    assert_eq!((r["id"].as_str(), r["content"].as_str()), (Some("h_1"), Some("commands: 1")), "{r}");
    // The instance lives between commands (its counter goes on), each command with its own deadline.
    let r = state(&s.call("stuck", json!({"action": "fetch", "id": "h_1"})));
    assert_eq!(r["content"], "commands: 2", "{r}");
    let spun = s.call("stuck", json!({"action": "apply", "id": "h_1", "input": "spin"}));
    let text = spun.to_string();
    assert!(text.contains("timed out after 10 s") && text.contains("--timeout"), "{spun}");
    let gone = s.call("stuck", json!({"action": "fetch", "id": "h_1"}));
    assert!(gone.to_string().contains("no live handle 'h_1'"), "{gone}");

    let r = state(&s.call("stuck", json!({"action": "spawn"})));
    assert_eq!(r["id"], "h_2", "{r}");
    let bombed = s.call("stuck", json!({"action": "apply", "id": "h_2", "input": "bomb"}));
    assert!(bombed.to_string().contains("exceeded its memory limit"), "{bombed}");

    let r = state(&s.call("stuck", json!({"action": "spawn"})));
    assert_eq!(r["id"], "h_3", "{r}");
    let trapped = s.call("stuck", json!({"action": "apply", "id": "h_3", "input": "trap"}));
    assert!(trapped.to_string().contains("told to trap"), "{trapped}");

    let r = state(&s.call("stuck", json!({"action": "spawn"})));
    let flooded = s.call("stuck", json!({"action": "apply", "id": r["id"], "input": "flood"}));
    assert!(flooded.to_string().contains("output limit"), "{flooded}");

    // jp goes on serving: a fresh session of another component works.
    let r = state(&s.call("calc", json!({"action": "spawn", "prelude": "1 + 1"})));
    assert!(r["content"].as_str().unwrap().ends_with("= 2"), "{r}");
    drop(s.child.stdin.take());
    assert!(s.child.wait().unwrap().success());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_seed_run_export_of_calc_runs_a_program_and_asks_before_clearing() {
    use std::sync::Arc;

    use jp_core::runtime::{Config, ExecutionOutcome, ToolCall};
    use jp_native::files::FsProjectFiles;
    use jp_native::runtime::wasm::{WasmEngine, WasmRuntime};

    let ws = workspace();
    let files = Arc::new(FsProjectFiles::open(ws.path()).unwrap());
    let rt = WasmRuntime::new(WasmEngine::shared().unwrap(), files, ws.path());
    let text = "[conversation.tools.calc]\nsource = \"local\"\nwasm = \".jp/tools/calc.wasm\"\n";
    let config = Config::from_toml(text, "t.toml").unwrap().conversation.tools.remove("calc").unwrap();
    let call = |args: Value, answers: Value| {
        let mut c = ToolCall::new("calc", "c", args.as_object().cloned().unwrap());
        c.answers = answers.as_object().cloned().unwrap();
        c
    };
    let program = json!({"program": "a = 2\nb = a * 21\nclear\nvars"});
    match rt.run(call(program.clone(), json!({})), &config, None).await.unwrap() {
        ExecutionOutcome::NeedsInput { question, .. } => assert_eq!(question.text, "Forget all 2 bindings?"),
        other => panic!("expected the question, got {other:?}"),
    }
    match rt.run(call(program, json!({"clear": false})), &config, None).await.unwrap() {
        ExecutionOutcome::Completed { result: Ok(r), .. } => {
            assert_eq!(r.to_text(), "a = 2\nb = 42\nkept 2 bindings\na = 2\nb = 42")
        }
        other => panic!("expected the output, got {other:?}"),
    }
    let schema =
        rt.describe("calc", jp_native::runtime::wasm::ComponentSource::File(ws.path().join(".jp/tools/calc.wasm")));
    let schema: Value = serde_json::from_str(&schema.await.unwrap().unwrap()).unwrap();
    assert_eq!(schema["tools"][0]["name"], "calc");
    assert_eq!(schema["tools"][0]["parameters"]["program"]["required"], false);
}

/// The calc example of docs/tools.md (linked from the README), as written: its configuration and
/// both commands.
#[test]
fn the_documented_calc_example_runs_as_written() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/tools.md")).unwrap();
    let block = |fence: &str, marker: &str| -> String {
        readme
            .split(fence)
            .skip(1)
            .map(|b| b.split("```").next().unwrap_or_default())
            .find(|b| b.contains(marker))
            .unwrap_or_else(|| panic!("docs/tools.md has a {fence} block with {marker}"))
            .to_owned()
    };
    let config = block("```toml\n", "[conversation.tools.calc]");
    let commands = block("```sh\n", "jp tool call calc");
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp/tools")).unwrap();
    std::fs::copy(Path::new(GUESTS_DIR).join("jp_tool_calc.wasm"), ws.path().join(".jp/tools/calc.wasm")).unwrap();
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    support::approve_config(ws.path());
    // Each command as the shell runs it (the doc's `jp` is this one), its `#` comment dropped.
    let script = commands.replace("jp tool call", &format!("{} tool call", env!("CARGO_BIN_EXE_jp")));
    let out = std::process::Command::new("sh").arg("-c").arg(&script).current_dir(ws.path()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("= 42\nbye: 1 binding"), "{stdout}");
    assert!(stdout.contains(r#""id":"h_1","state":"running""#), "{stdout}");
}
