//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! package.json; it needs Node ≥ 22, which the pinned `node` package provides) against
//! `jp mcp --http` on jp's own tools, for protocol 2025-11-25 and 2026-07-28.
//!
//! The suite's client sends no `Authorization`, and `jp mcp --http` takes none without it, so a
//! small proxy (`tests/mcp/conformance_proxy.mjs`) adds the bearer token and names jp's own
//! address in `Host`/`Origin` where the client named the proxy's. A scenario passes when every
//! check succeeds or is skipped; a check the suite marks "Not testable" (it needs the reference
//! server's diagnostic tools, e.g. `test_missing_capability`) does not apply to jp's tools.

#![cfg(target_os = "linux")]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const JP: &str = env!("CARGO_BIN_EXE_jp");
const TOKEN: &str = "conformance-token-5a1c93e0";

/// `(scenario, protocol version)` that apply to a server with jp's tools (scenarios about the
/// reference server's own tools, prompts, resources and logging do not).
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
];

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

#[test]
fn the_official_conformance_suite_passes_every_applicable_scenario() {
    let node = repo().join("node_modules/node/bin/node");
    let suite = repo().join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(node.is_file() && suite.is_file(), "run `npm install` first (./tests/run does)");
    let ws = tempfile::tempdir().unwrap();
    let (jp_port, proxy_port) = (free_port(), free_port());
    let _jp = Killed(
        Command::new(JP)
            .args(["mcp", "--http", &format!("127.0.0.1:{jp_port}"), "--token-env", "JP_CONFORMANCE_TOKEN"])
            .current_dir(ws.path())
            .env("JP_CONFORMANCE_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let _proxy = Killed(
        Command::new(&node)
            .arg(repo().join("tests/mcp/conformance_proxy.mjs"))
            .args([proxy_port.to_string(), jp_port.to_string(), TOKEN.to_string()])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for(jp_port);
    wait_for(proxy_port);
    let mut failures = Vec::new();
    let mut passed = 0;
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
                Some("SUCCESS") => passed += 1,
                Some("SKIPPED") => {}
                Some("FAILURE") if message.starts_with("Not testable") => {}
                other => failures.push(format!("{scenario} {version}: {} {other:?}: {message}", check["id"])),
            }
        }
    }
    println!("conformance: {passed} checks passed over {} scenarios", SCENARIOS.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(passed >= 40, "only {passed} checks ran");
}
