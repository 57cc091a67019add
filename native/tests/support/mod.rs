//! Helpers shared by the `jp` command's integration tests.

#[allow(dead_code)]
pub(crate) mod cli;
#[allow(dead_code)]
pub(crate) mod mcp;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Approve the workspace's configuration as its user would (`jp trust --yes`): jp uses a
/// workspace's `.jp/config.toml` only once approved.
#[allow(dead_code)]
pub(crate) fn approve_config(ws: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_jp")).args(["trust", "--yes", "--workspace"]).arg(ws).output().unwrap();
    assert!(out.status.success(), "jp trust: {}", String::from_utf8_lossy(&out.stderr));
}

/// [`approve_config`] for a test that also writes configurations jp cannot use (to see their
/// errors): `jp trust` refuses those ("cannot be used as it is"), and jp then reports the error
/// itself. Whether it was approved.
#[allow(dead_code)]
pub(crate) fn try_approve_config(ws: &Path) -> bool {
    let out = Command::new(env!("CARGO_BIN_EXE_jp")).args(["trust", "--yes", "--workspace"]).arg(ws).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() || stderr.contains("cannot be used as it is"), "jp trust: {stderr}");
    out.status.success()
}

/// A workspace whose `run` may start `sh` and `sleep`, with a sensitive `.env`; its
/// configuration approved.
#[allow(dead_code)]
pub(crate) fn run_workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join(".env"), "TOKEN=hunter2\n").unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    let config = r#"[conversation.tools.run]
source = "builtin"
[conversation.tools.run.access]
filesystem = [{ path = ".", allow = ["read", "write"] }]
commands = { sh = { args = [["**"]] }, sleep = { args = [["**"]] } }
"#;
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    approve_config(ws.path());
    ws
}

/// The Python SDK version the tests pin.
#[allow(dead_code)]
pub(crate) const PYTHON_MCP: &str = "mcp==2.3.0";

/// A venv with the pinned Python SDK (`~/.cache/jp-host/venv-mcp-2.3.0`), made when missing
/// (idempotent); returns the venv's directory.
#[allow(dead_code)]
pub(crate) fn python_sdk_venv() -> PathBuf {
    let home = std::env::var("HOME").unwrap();
    let venv = Path::new(&home).join(".cache/jp-host/venv-mcp-2.3.0");
    let py = venv.join("bin/python");
    let has = |py: &Path| {
        Command::new(py)
            .args(["-c", "import mcp, importlib.metadata as m; assert m.version('mcp') == '2.3.0'"])
            .status()
            .is_ok_and(|s| s.success())
    };
    if !has(&py) {
        let s = Command::new("/usr/bin/python3").args(["-m", "venv"]).arg(&venv).status().unwrap();
        assert!(s.success(), "python3 -m venv failed (install the python3-venv package)");
        let s = Command::new(venv.join("bin/pip")).args(["install", "-q", PYTHON_MCP]).status().unwrap();
        assert!(s.success(), "pip install {PYTHON_MCP} failed");
    }
    venv
}
