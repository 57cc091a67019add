//! Which configuration files are in force (issue 23): the user's own, then `--config` or the
//! workspace's approved `.jp/config.toml` — and the directories that must stay apart from the
//! workspace.

use std::path::{Path, PathBuf};

use super::{AppError, AppOptions};
use crate::trust;

/// The configuration files in force, the user's own first: `(text, file)`. A workspace's
/// `.jp/config.toml` only when the user approved exactly this content ([`trust`]), and none
/// only when none was approved (an approved file that is gone is refused); `--config` instead
/// of it, without asking. A workspace that contains jp's own state or configuration directory is
/// refused: a tool allowed to write the workspace could approve configurations there.
pub(super) fn config_layers(options: &AppOptions, workspace: &Path) -> Result<Vec<(String, String)>, AppError> {
    // jp's own directories and the workspace must not hold one another: a tool allowed to write
    // the workspace could change what jp trusts or loads (approvals, configuration, compiled
    // components), and tools would write into jp's own state.
    let user_file = options.user_config.as_ref().map(|f| std::fs::canonicalize(f).unwrap_or_else(|_| f.clone()));
    for (what, dir) in [
        ("state", options.state_dir.clone()),
        ("configuration", options.user_config.as_ref().and_then(|f| f.parent().map(Path::to_path_buf))),
        ("configuration file's real", user_file.as_ref().and_then(|f| f.parent().map(Path::to_path_buf))),
        ("cache", trust::cache_dir(&options.env)),
    ] {
        let Some(dir) = dir else { continue };
        let dir = canonical_or_nearest(&dir);
        if dir.starts_with(workspace) || workspace.starts_with(&dir) {
            return Err(AppError::OwnDirInWorkspace { workspace: workspace.to_owned(), what, dir });
        }
    }
    if let Some(path) = &options.config_file {
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        if real.starts_with(workspace) {
            return Err(AppError::ConfigInWorkspace { path: path.clone() });
        }
    }
    let read = |path: &Path| {
        std::fs::read_to_string(path)
            .map(|text| (text, path.display().to_string()))
            .map_err(|e| AppError::Unreadable { path: path.to_owned(), why: e.to_string() })
    };
    let mut layers = Vec::new();
    if let Some(user) = options.user_config.as_deref().filter(|p| p.is_file()) {
        layers.push(read(user)?);
    }
    if let Some(path) = &options.config_file {
        layers.push(read(path)?);
        return Ok(layers);
    }
    let config = trust::read_workspace_config(workspace)?;
    let Some(state) = &options.state_dir else {
        // Nowhere to keep approvals: no configuration is used, and none can have been approved.
        return match config {
            Some(config) => Err(AppError::NoStateDir { config: config.path }),
            None => Ok(layers),
        };
    };
    // Asked with no file too: an approved file that is gone (removed, renamed, `.jp` replaced)
    // is refused like a changed one, or what it narrowed would silently be lost.
    let verdict = trust::TrustStore::new(state).verdict(workspace, config.as_ref())?;
    let user = layers.first().map(|(t, f)| (t.as_str(), f.as_str()));
    match (verdict, config) {
        (trust::Verdict::Approved, Some(config)) => layers.push((config.text, config.path.display().to_string())),
        (trust::Verdict::Approved, None) => {}
        (trust::Verdict::Removed(previous), _) => {
            return Err(AppError::Untrusted(trust::removed_refusal(workspace, &previous, user)));
        }
        (verdict, Some(config)) => return Err(AppError::Untrusted(trust::refusal(workspace, &config, &verdict, user))),
        (_, None) => {}
    }
    Ok(layers)
}

/// `dir` canonical, or — when it does not exist yet — its nearest existing ancestor canonical with
/// the rest appended (so a directory to be made later is compared by where it will be).
fn canonical_or_nearest(dir: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = dir.to_path_buf();
    loop {
        if let Ok(real) = std::fs::canonicalize(&at) {
            return rest.iter().rev().fold(real, |p, c: &std::ffi::OsString| p.join(c));
        }
        match (at.file_name().map(ToOwned::to_owned), at.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                at = parent.to_path_buf();
            }
            _ => return dir.to_path_buf(),
        }
    }
}
