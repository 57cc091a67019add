//! Helpers shared by the `jp` command's integration tests.

use std::path::Path;

/// Approve the workspace's configuration as its user would (`jp trust --yes`): jp uses a
/// workspace's `.jp/config.toml` only once approved.
pub(crate) fn approve_config(ws: &Path) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_jp"))
        .args(["trust", "--yes", "--workspace"])
        .arg(ws)
        .output()
        .unwrap();
    assert!(out.status.success(), "jp trust: {}", String::from_utf8_lossy(&out.stderr));
}
