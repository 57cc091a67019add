//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! package.json; it needs Node ≥ 22, which the pinned `node` package provides) against
//! `jp mcp --http` on jp's own tools, for protocol 2025-11-25 and 2026-07-28; and against
//! `jp mcp --http` wrapping the reference server (`@modelcontextprotocol/server-everything`,
//! started by jp under the OS sandbox): every check that passes against that server directly
//! passes through jp.
//!
//! The suite's client sends no `Authorization`, and `jp mcp --http` takes none without it, so a
//! small proxy (`tests/mcp/conformance_proxy.mjs`) adds the bearer token and names jp's own
//! address in `Host`/`Origin` where the client named the proxy's. A scenario passes when every
//! check succeeds or is skipped; a check the suite marks "Not testable" (it needs the reference
//! server's diagnostic tools, e.g. `test_missing_capability`) does not apply to jp's tools.

#![cfg(target_os = "linux")]

mod support;

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const JP: &str = env!("CARGO_BIN_EXE_jp");
const TOKEN: &str = "conformance-token-5a1c93e0";

/// `(scenario, protocol version)` that apply to a server with jp's tools (scenarios about the
/// reference server's own tools, prompts, resources and logging do not). The tampered-state
/// scenario calls `test_input_required_result_tampered_state`, which [`TAMPERED_STATE_TOOL`]
/// is: a tool that asks (SEP-2322), as any of jp's tools does when its policy asks. The other
/// `input-required-result-*` scenarios expect their tools' own questions (keys such as
/// `user_name`, sampling, roots, several at once), which jp never asks: its one question is the
/// policy's `decision`.
const SCENARIOS: &[(&str, &str)] = &[
    ("server-initialize", "2025-11-25"),
    ("server-session-lifecycle", "2025-11-25"),
    ("ping", "2025-11-25"),
    ("tools-list", "2025-11-25"),
    ("dns-rebinding-protection", "2025-11-25"),
    ("tools-list", "2026-07-28"),
    ("server-stateless", "2026-07-28"),
    ("http-header-validation", "2026-07-28"),
    ("dns-rebinding-protection", "2026-07-28"),
    ("input-required-result-tampered-state", "2026-07-28"),
    ("input-required-result-unsupported-methods", "2026-07-28"),
];

/// A VFS tool (no arguments) that reads the workspace's `.env`: a sensitive path, so the policy
/// asks, and a 2026-07-28 client is asked through an `input_required` result.
const TAMPERED_STATE_TOOL: &str = r#"import json, sys
sys.stdin.readline()
print(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "fs.read", "params": {"path": ".env"}}), flush=True)
while True:
    answer = json.loads(sys.stdin.readline())
    if answer.get("id") == 1:
        break
text = answer["result"]["content"] if "result" in answer else answer["error"]["message"]
print(json.dumps({"jsonrpc": "2.0", "method": "result", "params": {"content": [{"type": "text", "text": text}]}}), flush=True)
"#;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for(port: u16) {
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nothing listens on port {port}");
}

/// `jp mcp --http` in `ws` behind the token-adding proxy (`tests/mcp/conformance_proxy.mjs`),
/// both listening; the proxy's port.
fn jp_behind_proxy(node: &Path, ws: &Path) -> (Killed, Killed, u16) {
    let (jp_port, proxy_port) = (free_port(), free_port());
    let jp = Killed(
        Command::new(JP)
            .args(["mcp", "--http", &format!("127.0.0.1:{jp_port}"), "--token-env", "JP_CONFORMANCE_TOKEN"])
            .current_dir(ws)
            .env("JP_CONFORMANCE_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let proxy = Killed(
        Command::new(node)
            .arg(repo().join("tests/mcp/conformance_proxy.mjs"))
            .args([proxy_port.to_string(), jp_port.to_string(), TOKEN.to_string()])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for(jp_port);
    wait_for(proxy_port);
    (jp, proxy, proxy_port)
}

#[test]
fn the_official_conformance_suite_passes_every_applicable_scenario() {
    let node = repo().join("node_modules/node/bin/node");
    let suite = repo().join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(node.is_file() && suite.is_file(), "run `npm install` first (./tests/run does)");
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join(".env"), "TOKEN=hunter2\n").unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    std::fs::write(ws.path().join("asks.py"), TAMPERED_STATE_TOOL).unwrap();
    std::fs::write(
        ws.path().join(".jp/config.toml"),
        "[conversation.tools.test_input_required_result_tampered_state]\nsource = \"local\"\nsummary = \"Read the workspace's .env (the policy asks first).\"\ncommand = \"/usr/bin/python3 asks.py\"\nruntime = \"vfs\"\nparameters = {}\n",
    )
    .unwrap();
    support::approve_config(ws.path());
    let (_jp, _proxy, proxy_port) = jp_behind_proxy(&node, ws.path());
    let mut failures = Vec::new();
    let mut passed = 0;
    let mut succeeded = std::collections::BTreeSet::new();
    for (scenario, version) in SCENARIOS {
        let out = tempfile::tempdir().unwrap();
        let run = Command::new(&node)
            .arg(&suite)
            .args(["server", "--url", &format!("http://localhost:{proxy_port}/mcp"), "--scenario", scenario])
            .args(["--spec-version", version, "-o"])
            .arg(out.path())
            .output()
            .unwrap();
        let dir = std::fs::read_dir(out.path()).unwrap().flatten().next().map(|e| e.path());
        let Some(checks) = dir.map(|d| d.join("checks.json")).filter(|p| p.is_file()) else {
            failures.push(format!("{scenario} {version}: no checks written: {}", String::from_utf8_lossy(&run.stdout)));
            continue;
        };
        let checks: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(checks).unwrap()).unwrap();
        assert!(!checks.is_empty(), "{scenario} {version}: no checks");
        for check in &checks {
            let message = check["errorMessage"].as_str().unwrap_or("");
            match check["status"].as_str() {
                Some("SUCCESS") => {
                    passed += 1;
                    succeeded.insert(check["id"].as_str().unwrap_or("?").to_owned());
                }
                Some("SKIPPED") => {}
                Some("FAILURE") if message.starts_with("Not testable") => {}
                other => failures.push(format!("{scenario} {version}: {} {other:?}: {message}", check["id"])),
            }
        }
    }
    println!("conformance: {passed} checks passed over {} scenarios", SCENARIOS.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(passed >= 40, "only {passed} checks ran");
    // Run, not skipped: a retry under a tampered requestState is a JSON-RPC error.
    assert!(succeeded.contains("sep-2322-reject-tampered-state"), "{succeeded:?}");
}

/// The suite's server scenarios for protocol 2025-11-25 and 2026-07-28, as `conformance list`
/// names them (extensions left out).
fn all_scenarios(node: &Path, suite: &Path) -> Vec<(String, String)> {
    let out = Command::new(node).arg(suite).arg("list").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut scenarios = Vec::new();
    for line in text.lines().take_while(|l| !l.starts_with("Client")) {
        let Some(entry) = line.trim().strip_prefix("- ") else { continue };
        let Some((name, versions)) = entry.split_once(' ') else { continue };
        for version in ["2025-11-25", "2026-07-28"] {
            if versions.contains(version) {
                scenarios.push((name.to_owned(), version.to_owned()));
            }
        }
    }
    scenarios
}

/// Every check of every scenario against `url`: `(scenario@version, check id)` → (status,
/// message, the check's details as JSON text).
fn run_suite(
    node: &Path,
    suite: &Path,
    url: &str,
    scenarios: &[(String, String)],
) -> BTreeMap<(String, String), (String, String, String)> {
    let mut checks = BTreeMap::new();
    for (scenario, version) in scenarios {
        let out = tempfile::tempdir().unwrap();
        let _ = Command::new(node)
            .arg(suite)
            .args(["server", "--url", url, "--scenario", scenario, "--spec-version", version, "-o"])
            .arg(out.path())
            .output()
            .unwrap();
        let Some(dir) = std::fs::read_dir(out.path()).unwrap().flatten().next() else { continue };
        let Ok(text) = std::fs::read_to_string(dir.path().join("checks.json")) else { continue };
        let listed: Vec<Value> = serde_json::from_str(&text).unwrap_or_default();
        for check in listed {
            let key = (format!("{scenario}@{version}"), check["id"].as_str().unwrap_or("?").to_owned());
            let status = check["status"].as_str().unwrap_or("?").to_owned();
            let message = check["errorMessage"].as_str().unwrap_or("").to_owned();
            checks.insert(key, (status, message, check["details"].to_string()));
        }
    }
    checks
}

#[test]
fn every_check_the_reference_server_passes_directly_passes_through_jp() {
    let repo = repo();
    let node = repo.join("node_modules/node/bin/node");
    let suite = repo.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let everything = repo.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(node.is_file() && suite.is_file() && everything.is_file(), "run `npm install` first (./tests/run does)");
    let scenarios = all_scenarios(&node, &suite);
    assert!(scenarios.len() >= 60, "the suite lists {} scenarios", scenarios.len());

    // The server directly, over its own Streamable HTTP.
    let direct_port = free_port();
    let _direct = Killed(
        Command::new(&node)
            .arg(&everything)
            .arg("streamableHttp")
            .env("PORT", direct_port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // The same server wrapped by jp (stdio, under the OS sandbox), its tools, prompts and
    // resources under their own names, every kind of request forwarded.
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    let config = format!(
        "[mcp.servers.everything]\ncommand = {node:?}\nargs = [{everything:?}, \"stdio\"]\nread_paths = [{modules:?}]\ntools = \"*\"\nprefix = \"\"\nforward = [\"elicitation\", \"sampling\", \"roots\"]\n",
        node = node.display().to_string(),
        everything = everything.display().to_string(),
        modules = repo.join("node_modules").display().to_string(),
    );
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    support::approve_config(ws.path());
    let (_jp, _proxy, proxy_port) = jp_behind_proxy(&node, ws.path());
    wait_for(direct_port);

    let (direct, through) = std::thread::scope(|s| {
        let direct = s.spawn(|| run_suite(&node, &suite, &format!("http://localhost:{direct_port}/mcp"), &scenarios));
        let through = s.spawn(|| run_suite(&node, &suite, &format!("http://localhost:{proxy_port}/mcp"), &scenarios));
        (direct.join().unwrap(), through.join().unwrap())
    });
    let passed = |m: &BTreeMap<_, (String, String, String)>| m.values().filter(|(s, _, _)| s == "SUCCESS").count();
    println!(
        "conformance, server-everything: {} checks pass directly, {} through jp",
        passed(&direct),
        passed(&through)
    );
    let mut lost = Vec::new();
    for (key, (status, _, details)) in &direct {
        if status != "SUCCESS" {
            continue;
        }
        // The suite counts an `isError` result "Tool test_… not found" as a pass; jp answers a
        // call of an unknown tool with JSON-RPC -32602, as MCP asks (SEP-1303 keeps it a
        // protocol error). The reference server has none of the suite's `test_*` tools.
        if details.contains("not found\"") && details.contains("\"isError\":true") {
            continue;
        }
        match through.get(key) {
            Some((s, _, _)) if s == "SUCCESS" => {}
            Some((s, message, _)) => lost.push(format!("{} {}: {s}: {message}", key.0, key.1)),
            None => lost.push(format!("{} {}: not run through jp", key.0, key.1)),
        }
    }
    assert!(lost.is_empty(), "checks that pass directly but not through jp:\n{}", lost.join("\n"));
    assert!(passed(&direct) >= 40, "only {} checks passed directly", passed(&direct));
}
