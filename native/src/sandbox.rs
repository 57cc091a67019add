//! The OS sandbox: everything of crate `jp-sandbox` (Landlock, seccomp, namespaces, the mount
//! view, the child set-up — every `unsafe` of jp's native side lives there), and the resolution
//! of a tool's `read_paths`, which needs no `unsafe`.

pub use jp_sandbox::*;

use std::path::PathBuf;

/// A tool's `read_paths` (relative to the workspace), resolved: read-only host paths for the
/// tool's own files. None may be, or contain, the project directory — a tool reaches project
/// files only as its policy and runtime allow.
pub fn configured_read_paths(
    workspace: &std::path::Path,
    config: &jp_core::runtime::ToolConfig,
) -> Result<Vec<PathBuf>, jp_core::runtime::RuntimeError> {
    read_paths(workspace, &config.read_paths)
}

/// [`configured_read_paths`] for a list of entries (an MCP server's `read_paths`).
pub fn read_paths(
    workspace: &std::path::Path,
    entries: &[String],
) -> Result<Vec<PathBuf>, jp_core::runtime::RuntimeError> {
    use jp_core::runtime::ReadPathsError;
    let ws = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let mut out = Vec::new();
    for p in entries {
        let path = std::fs::canonicalize(workspace.join(p))
            .map_err(|e| ReadPathsError::Unresolvable { entry: p.clone(), why: e.to_string() })?;
        if ws.starts_with(&path) || path.starts_with(&ws) {
            return Err(ReadPathsError::HoldsWorkspace { entry: p.clone() }.into());
        }
        out.push(path);
    }
    Ok(out)
}
