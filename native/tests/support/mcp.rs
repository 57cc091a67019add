//! A raw JSON-RPC session with `jp mcp` and `jp` runs that see the pinned Python SDK (the MCP
//! server tests' shared harness).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

const JP: &str = env!("CARGO_BIN_EXE_jp");

/// The venv with the pinned Python SDK.
pub(crate) fn venv() -> PathBuf {
    super::python_sdk_venv()
}

/// Where the venv's packages are (for `PYTHONPATH` of servers written with the SDK).
pub(crate) fn site_packages(venv: &Path) -> PathBuf {
    std::fs::read_dir(venv.join("lib")).unwrap().flatten().next().unwrap().path().join("site-packages")
}

/// `jp ARGS` in `ws`, the SDK on `PYTHONPATH`: exit code, stdout, stderr.
pub(crate) fn jp(ws: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(JP).args(args).current_dir(ws).env("PYTHONPATH", site_packages(&venv())).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// A raw JSON-RPC session with `jp mcp` in `ws`.
pub(crate) struct Session {
    pub(crate) child: std::process::Child,
    pub(crate) lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
    pub(crate) next: u64,
}

impl Session {
    pub(crate) fn start(ws: &Path) -> Self {
        Self::start_with(ws, &[])
    }
    /// `jp mcp ARGS`.
    pub(crate) fn start_with(ws: &Path, args: &[&str]) -> Self {
        let argv: Vec<&str> = std::iter::once("mcp").chain(args.iter().copied()).collect();
        Self::start_argv(ws, &argv)
    }
    /// `jp ARGV`, a command that serves MCP on stdio (`mcp …`, `policy suggest -- mcp`).
    pub(crate) fn start_argv(ws: &Path, argv: &[&str]) -> Self {
        let mut child = Command::new(JP)
            .args(argv)
            .current_dir(ws)
            .env("PYTHONPATH", site_packages(&venv()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut s = Self { child, lines, next: 0 };
        s.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
        );
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }
    pub(crate) fn send(&mut self, v: Value) {
        writeln!(self.child.stdin.as_mut().unwrap(), "{v}").unwrap();
    }
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let v: Value = serde_json::from_str(&self.lines.next().unwrap().unwrap()).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    }
    pub(crate) fn call(&mut self, name: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": args}))
    }
}
