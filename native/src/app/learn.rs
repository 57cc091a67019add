//! The builtin `learn` tool's knowledge base: topics under `.jp/kb/` (or `options.kb`), the
//! chosen one mounted read-only at `/subjects`.
//!
//! The knowledge base is part of the workspace, and a cloned repository can contain symbolic
//! links. So every path here is parsed as a [`WorkspacePath`] (no absolute paths, no `..`) and
//! resolved through the workspace's capability handle
//! ([`FsProjectFiles`](crate::files::FsProjectFiles)), which refuses links
//! that lead out of it; the topic is mounted at its resolved place, and inside the mount the same
//! beneath-only resolution refuses links that leave the topic.

use std::path::Path;
use std::sync::Arc;

use jp_core::files::{FilesError, ProjectFiles};
use jp_core::policy::WorkspacePath;
use jp_core::protocol::EntryKind;
use jp_core::runtime::{KbPlace, KnowledgeBaseError, RuntimeError, ToolCall, ToolConfig};
use serde_json::Value;

use super::{DEFAULT_KB, LEARN};
use crate::files::FsProjectFiles;
use crate::runtime::wasm::{ComponentSource, LEARN_WASM};

/// Why `shown` (a knowledge-base path) cannot be used: it leads out of the workspace.
fn leads_outside(workspace: &Path, shown: &str, place: KbPlace) -> RuntimeError {
    // Only for the message: where the link really points.
    let target = std::fs::canonicalize(workspace.join(shown))
        .map_or_else(|_| "a place outside it".to_owned(), |p| p.display().to_string());
    KnowledgeBaseError::LeadsOutside { place, shown: shown.to_owned(), target, workspace: workspace.to_owned() }.into()
}

/// `learn`: pick the topic (`topic` argument, or the only one there is) under the knowledge
/// base, mount it read-only at `/subjects`, and inject its metadata as `_topic` (seed 002).
pub(super) async fn learn_call(
    kb_files: &Arc<FsProjectFiles>,
    workspace: &Path,
    mut call: ToolCall,
    config: &ToolConfig,
) -> Result<(ToolCall, ComponentSource), RuntimeError> {
    let kb_rel = match config.options.get("kb") {
        None => DEFAULT_KB.to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(KnowledgeBaseError::NotAString { got: other.to_string(), default: DEFAULT_KB }.into());
        }
    };
    let kb = WorkspacePath::parse(&kb_rel).map_err(|e| KnowledgeBaseError::NotInside {
        kb: kb_rel.clone(),
        why: e.to_string(),
        default: DEFAULT_KB,
    })?;
    let files = &kb_files;
    let missing = || RuntimeError::from(KnowledgeBaseError::Missing { kb: kb_rel.clone() });
    let kb = match files.resolve_sync(&kb) {
        Ok(resolved) => resolved,
        Err(FilesError::InvalidPath(_)) => {
            return Err(leads_outside(workspace, &kb_rel, KbPlace::KnowledgeBase));
        }
        Err(_) => return Err(missing()),
    };
    let entries = files.list_dir(&kb).await.map_err(|e| match e {
        FilesError::InvalidPath(_) => leads_outside(workspace, &kb_rel, KbPlace::KnowledgeBase),
        _ => missing(),
    })?;
    // Entries that lead out of the workspace are not listed by the backend at all.
    let mut topics: Vec<String> =
        entries.into_iter().filter(|e| e.kind == EntryKind::Dir && !e.path.starts_with('.')).map(|e| e.path).collect();
    topics.sort();
    let topic = match call.arguments.remove("topic") {
        Some(Value::String(t)) => t,
        Some(other) => return Err(RuntimeError::Input(format!("learn: `topic` must be a string, got {other}"))),
        None if topics.len() == 1 => topics[0].clone(),
        None => {
            return Err(RuntimeError::Input(format!(
                "learn needs a `topic`; topics in {kb_rel}/: {}",
                if topics.is_empty() { "none".to_owned() } else { topics.join(", ") }
            )));
        }
    };
    let shown = format!("{kb_rel}/{topic}");
    let resolved = match kb.join(&topic).map(|p| files.resolve_sync(&p)) {
        Ok(Ok(resolved)) if topics.contains(&topic) => resolved,
        Ok(Err(FilesError::InvalidPath(_))) => return Err(leads_outside(workspace, &shown, KbPlace::Topic)),
        _ => {
            return Err(RuntimeError::Input(format!(
                "learn: no topic '{topic}' in {kb_rel}/; topics: {}",
                topics.join(", ")
            )));
        }
    };
    let option_list = |key: &str| config.options.get(key).cloned().unwrap_or_else(|| Value::Array(Vec::new()));
    call.arguments.insert(
        "_topic".into(),
        serde_json::json!({
            "title": topic,
            "description": config.description,
            "disabled": option_list("disabled"),
            "learned": option_list("learned"),
        }),
    );
    // The topic's place with every link resolved (beneath the workspace, as checked above),
    // opened through the workspace's handle without following links: what was checked is
    // what is mounted.
    let subjects = files
        .subtree(&resolved)
        .map_err(|e| KnowledgeBaseError::Unopenable { shown: shown.clone(), why: e.to_string() })?;
    let source = ComponentSource::Builtin { name: LEARN, bytes: LEARN_WASM, subjects: Some(Arc::new(subjects)) };
    Ok((call, source))
}
