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

/// [`approve_config`] for a test that also writes configurations jp cannot use (to see their
/// errors): `jp trust` refuses those ("nothing to approve"), and jp then reports the error
/// itself. Whether it was approved.
#[allow(dead_code)]
pub(crate) fn try_approve_config(ws: &Path) -> bool {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_jp"))
        .args(["trust", "--yes", "--workspace"])
        .arg(ws)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() || stderr.contains("nothing to approve"), "jp trust: {stderr}");
    out.status.success()
}
