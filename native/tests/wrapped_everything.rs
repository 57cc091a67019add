//! `jp mcp` wrapping the reference server `@modelcontextprotocol/server-everything` (pinned in
//! package.json; started by jp under the OS sandbox with the pinned Node ≥ 22 it needs), driven
//! by the official npm SDK (`tests/mcp/wrapped_everything.mjs`): what the server offers comes
//! through jp as it is — content blocks, progress, logging, prompts, resources, templates,
//! completions, elicitation.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Command;

mod support;
use support::approve_config;

const JP: &str = env!("CARGO_BIN_EXE_jp");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The pinned Node (server-everything's dependencies need Node ≥ 22).
fn node() -> PathBuf {
    let node = repo().join("node_modules/node/bin/node");
    assert!(node.is_file(), "{} is missing: run `npm install` (./tests/run does)", node.display());
    node
}

/// A workspace whose `.jp/config.toml` wraps server-everything as `everything`, plus `extra`.
fn everything_workspace(extra: &str) -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    let node_modules = repo().join("node_modules");
    let server = node_modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    assert!(server.is_file(), "{} is missing: run `npm install` (./tests/run does)", server.display());
    let config = format!(
        "[mcp.servers.everything]\ncommand = {node:?}\nargs = [{server:?}, \"stdio\"]\nread_paths = [{node_modules:?}]\ntools = \"*\"\n{extra}",
        node = node(),
    );
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    approve_config(ws.path());
    ws
}

#[test]
fn the_reference_everything_server_comes_through_jp_mcp_as_it_is() {
    let ws = everything_workspace("");
    let out = Command::new(node())
        .arg(repo().join("tests/mcp/wrapped_everything.mjs"))
        .arg(JP)
        .arg(ws.path())
        .current_dir(repo())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    for check in ["an image block", "progress:", "logging:", "prompts:", "resources:", "completion:", "elicitation:"] {
        assert!(stdout.contains(&format!("ok {check}")), "{check} missing:\n{stdout}");
    }
}
