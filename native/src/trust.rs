//! Which configuration `jp` trusts (issue 23; the direnv model).
//!
//! A workspace's `.jp/config.toml` can come from anyone who could write the workspace — a cloned
//! repository, or a tool that was allowed to write there — and it decides what tools may do,
//! which programs run and where the user's API key is sent. So it is used only when the user
//! approved that exact content: its SHA-256 is recorded in the user's own state directory
//! (`$XDG_STATE_HOME/jp-host/trust`, else `~/.local/state/jp-host/trust`), never in the
//! workspace. A new or changed file stops `jp` with exit code 2 and a summary of what it grants
//! ([`jp_core::runtime::review`]) until `jp trust` approves it. An approved file that is gone
//! (removed, renamed, `.jp` replaced) stops `jp` too (issue 33): what it narrowed would silently
//! be lost; `jp trust` then records that the workspace has no configuration.
//!
//! Trusted without approval: the user's own configuration (`$XDG_CONFIG_HOME/jp-host/config.toml`,
//! else `~/.config/jp-host/config.toml`) and a file named with `--config`.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use jp_core::runtime::review;
use jp_core::runtime::{Config, ConfigError};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// Where a workspace's configuration is looked for, relative to the workspace.
pub const CONFIG_PATH: &str = ".jp/config.toml";

/// The largest configuration file read (a larger one is refused, not truncated).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// `<base>/jp-host`, where `base` is `$<xdg>` when it is an absolute path, else `$HOME/<fallback>`
/// (the XDG base directory rules).
fn user_dir(env: &BTreeMap<String, String>, xdg: &str, fallback: &str) -> Option<PathBuf> {
    let base = env
        .get(xdg)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| env.get("HOME").map(PathBuf::from).filter(|p| p.is_absolute()).map(|h| h.join(fallback)))?;
    Some(base.join("jp-host"))
}

/// The user's own configuration file (trusted): `$XDG_CONFIG_HOME/jp-host/config.toml`.
pub fn user_config_file(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    user_dir(env, "XDG_CONFIG_HOME", ".config").map(|d| d.join("config.toml"))
}

/// jp's cache directory (`$XDG_CACHE_HOME/jp-host`, else `~/.cache/jp-host`; a relative
/// `$XDG_CACHE_HOME` is ignored, as the XDG rules say): schemas and compiled components, which
/// `jp` loads as its own, so never a path a tool could write (see [`App::load`]).
///
/// [`App::load`]: crate::app::App::load
pub fn cache_dir(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    user_dir(env, "XDG_CACHE_HOME", ".cache")
}

/// [`cache_dir`] of this process's environment.
pub fn process_cache_dir() -> Option<PathBuf> {
    cache_dir(&std::env::vars().collect())
}

/// jp's state directory: approvals, conversation history (`$XDG_STATE_HOME/jp-host`).
pub fn state_dir(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    user_dir(env, "XDG_STATE_HOME", ".local/state")
}

/// The workspace's configuration file as read once: the bytes that were hashed are the bytes
/// that are used.
#[derive(Debug, Clone)]
pub struct WorkspaceConfig {
    /// `<workspace>/.jp/config.toml`.
    pub path: PathBuf,
    /// Its content.
    pub text: String,
    /// SHA-256 of the content, hex.
    pub sha256: String,
}

/// Why a workspace's configuration or its approval could not be read or written. Each says
/// which file and what to do; `NotPrivate` and the file-kind checks are refusals, the rest I/O.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// A file or directory could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// What was read.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The configuration is not a regular file (a FIFO or device planted there is not opened).
    #[error("{} is not a regular file; remove it or pass --config FILE", path.display())]
    NotRegular {
        /// The configuration file.
        path: PathBuf,
    },
    /// The configuration is larger than [`MAX_CONFIG_BYTES`].
    #[error("{} is larger than {} KiB; a configuration file is small", path.display(), MAX_CONFIG_BYTES >> 10)]
    TooLarge {
        /// The configuration file.
        path: PathBuf,
    },
    /// The configuration is not UTF-8.
    #[error("{} is not UTF-8 text", path.display())]
    NotUtf8 {
        /// The configuration file.
        path: PathBuf,
    },
    /// The state directory could not be created.
    #[error("cannot create {}{}", dir.display(), source.as_ref().map(|e| format!(": {e}")).unwrap_or_default())]
    CreateDir {
        /// The state directory.
        dir: PathBuf,
        /// Why, when the system said.
        source: Option<std::io::Error>,
    },
    /// The state directory is someone else's or writable by others: its approvals would be theirs.
    #[error(
        "{} is not private to you (owned by someone else or writable by others); fix its owner and mode (chmod 700)",
        dir.display()
    )]
    NotPrivate {
        /// The state directory.
        dir: PathBuf,
    },
    /// The approval could not be written.
    #[error("{0}")]
    Write(String),
}

/// Read `<workspace>/.jp/config.toml` if there is one: a regular file (a FIFO or device planted
/// there cannot hang `jp`), at most [`MAX_CONFIG_BYTES`], UTF-8. None when it is not there (nor
/// `.jp/`, or `.jp` is not a directory): whether that is allowed is [`TrustStore::verdict`]'s.
pub fn read_workspace_config(workspace: &Path) -> Result<Option<WorkspaceConfig>, TrustError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let path = workspace.join(CONFIG_PATH);
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
            return Ok(None);
        }
        Err(source) => return Err(TrustError::Read { path, source }),
    };
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(source) => return Err(TrustError::Read { path, source }),
    };
    if !meta.is_file() {
        return Err(TrustError::NotRegular { path });
    }
    let mut bytes = Vec::new();
    if let Err(source) = file.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes) {
        return Err(TrustError::Read { path, source });
    }
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(TrustError::TooLarge { path });
    }
    let sha256 = hex(&Sha256::digest(&bytes));
    let Ok(text) = String::from_utf8(bytes) else { return Err(TrustError::NotUtf8 { path }) };
    Ok(Some(WorkspaceConfig { path, text, sha256 }))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One approval: the workspace, the content's hash and the content itself (to show a diff when
/// it changes, and what is lost when it is gone).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Approval {
    /// The canonical workspace path.
    pub workspace: PathBuf,
    /// SHA-256 of the approved content, hex; `None`: the user approved running the workspace
    /// without a configuration (after the approved one was gone).
    pub sha256: Option<String>,
    /// The approved content (empty with no configuration).
    pub text: String,
    /// When (seconds since the Unix epoch).
    pub approved_at: u64,
}

/// The approvals, one file per workspace in `<state>/trust/` (named by the hash of the
/// workspace's path), private to the user.
#[derive(Debug, Clone)]
pub struct TrustStore {
    dir: PathBuf,
}

/// How a workspace configuration stands.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// Approved exactly as it is (or there is none, and none was approved).
    Approved,
    /// Never approved (or the user approved running without one, and one appeared).
    New,
    /// Approved once, changed since.
    Changed(Box<Approval>),
    /// Approved once, gone since (removed, renamed, `.jp` replaced): what it set no longer
    /// applies, so jp does not run until the user says so.
    Removed(Box<Approval>),
}

impl TrustStore {
    /// The store under `state_dir` (see [`state_dir`]).
    pub fn new(state_dir: &Path) -> Self {
        Self { dir: state_dir.join("trust") }
    }

    fn record(&self, workspace: &Path) -> PathBuf {
        let key = hex(&Sha256::digest(workspace.as_os_str().as_encoded_bytes()));
        self.dir.join(format!("{key}.json"))
    }

    /// The directory, created private to the user; one that someone else owns or could write to
    /// is not used (its approvals would be theirs).
    fn checked_dir(&self, create: bool) -> Result<Option<&Path>, TrustError> {
        use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
        if create {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.dir)
                .map_err(|e| TrustError::CreateDir { dir: self.dir.clone(), source: Some(e) })?;
        }
        let meta = match std::fs::metadata(&self.dir) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(TrustError::Read { path: self.dir.clone(), source }),
        };
        if meta.uid() != rustix::process::getuid().as_raw() || meta.mode() & 0o022 != 0 {
            return Err(TrustError::NotPrivate { dir: self.dir.clone() });
        }
        Ok(Some(&self.dir))
    }

    /// The approval recorded for `workspace`, if any.
    pub fn approval(&self, workspace: &Path) -> Result<Option<Approval>, TrustError> {
        if self.checked_dir(false)?.is_none() {
            return Ok(None);
        }
        let path = self.record(workspace);
        match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<Approval>(&bytes) {
                Ok(a) if a.workspace == workspace => Ok(Some(a)),
                _ => Ok(None),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(TrustError::Read { path, source }),
        }
    }

    /// How `config` of `workspace` stands (`None`: it has none).
    pub fn verdict(&self, workspace: &Path, config: Option<&WorkspaceConfig>) -> Result<Verdict, TrustError> {
        let approval = self.approval(workspace)?;
        Ok(match (approval, config) {
            (None, None) => Verdict::Approved,
            (None, Some(_)) => Verdict::New,
            (Some(a), None) if a.sha256.is_none() => Verdict::Approved,
            (Some(a), None) => Verdict::Removed(Box::new(a)),
            (Some(a), Some(c)) if a.sha256.as_deref() == Some(c.sha256.as_str()) => Verdict::Approved,
            (Some(a), Some(_)) if a.sha256.is_none() => Verdict::New,
            (Some(a), Some(_)) => Verdict::Changed(Box::new(a)),
        })
    }

    /// Record `config` as approved for `workspace` (atomically) — `None`: that the workspace
    /// has no configuration —, and forget the approvals of workspaces that no longer exist.
    pub fn approve(&self, workspace: &Path, config: Option<&WorkspaceConfig>) -> Result<(), TrustError> {
        let dir =
            self.checked_dir(true)?.ok_or_else(|| TrustError::CreateDir { dir: self.dir.clone(), source: None })?;
        let approved_at =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let approval = Approval {
            workspace: workspace.to_path_buf(),
            sha256: config.map(|c| c.sha256.clone()),
            text: config.map(|c| c.text.clone()).unwrap_or_default(),
            approved_at,
        };
        let write = |e: &dyn std::fmt::Display| TrustError::Write(e.to_string());
        let bytes = serde_json::to_vec_pretty(&approval).map_err(|e| write(&e))?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)
            .map_err(|e| TrustError::Write(format!("cannot write in {}: {e}", dir.display())))?;
        std::io::Write::write_all(&mut tmp, &bytes).map_err(|e| write(&e))?;
        tmp.as_file().sync_all().map_err(|e| write(&e))?;
        tmp.persist(self.record(workspace))
            .map_err(|e| TrustError::Write(format!("cannot record the approval: {e}")))?;
        self.forget_gone();
        Ok(())
    }

    /// Remove the approval of `workspace`; `true` when there was one.
    pub fn revoke(&self, workspace: &Path) -> Result<bool, TrustError> {
        if self.checked_dir(false)?.is_none() {
            return Ok(false);
        }
        match std::fs::remove_file(self.record(workspace)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(TrustError::Write(format!("cannot remove the approval: {e}"))),
        }
    }

    fn forget_gone(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        for entry in entries.flatten() {
            let Ok(bytes) = std::fs::read(entry.path()) else { continue };
            if let Ok(a) = serde_json::from_slice::<Approval>(&bytes)
                && !a.workspace.is_dir()
            {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// What a workspace configuration (`text`, read from `file`) grants beyond jp's defaults, as
/// indented lines — decided on the configuration jp would enforce: layered over the user's own
/// (`user`: its text and file), so a table that refers to one of the user's (an MCP server, say)
/// is shown as it would run. Only the tables the workspace's file defines are listed (the user's
/// own are not in question), then each of the user's tables it replaces whole, with what of it
/// no longer applies ([`review::replaced`]). An error when it cannot be used as it is: then there
/// is nothing that could be approved.
pub fn summary(text: &str, file: &str, user: Option<(&str, &str)>) -> Result<String, ConfigError> {
    let (mut shown, own) = grants(text, file, user)?;
    if let Some((user_text, user_file)) = user
        && let Ok(theirs) = user_text.parse::<toml::Table>()
    {
        shown.extend(review::replaced(&theirs, &own, user_file));
    }
    Ok(review::render(&shown))
}

/// What the tables of a workspace configuration grant (see [`summary`]), and its parsed text.
fn grants(
    text: &str,
    file: &str,
    user: Option<(&str, &str)>,
) -> Result<(Vec<review::Grant>, toml::Table), ConfigError> {
    let layers: Vec<(&str, &str)> = user.into_iter().chain([(text, file)]).collect();
    let mut merged = Config::from_layers(&layers)?;
    let own: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        ConfigError::new(file, ".", format!("not valid TOML: {}", e.to_string().trim()))
    })?;
    let names = |path: &[&str]| -> Vec<String> {
        let mut t = Some(&own);
        for key in path {
            t = t.and_then(|t| t.get(*key)).and_then(toml::Value::as_table);
        }
        t.map(|t| t.keys().cloned().collect()).unwrap_or_default()
    };
    let (tools, servers, providers) =
        (names(&["conversation", "tools"]), names(&["mcp", "servers"]), names(&["providers"]));
    merged.conversation.tools.retain(|k, _| tools.contains(k));
    merged.mcp.servers.retain(|k, _| servers.contains(k));
    merged.providers.retain(|k, _| providers.contains(k));
    Ok((review::grants(&merged), own))
}

/// [`summary`], or the reason it cannot be shown, as lines.
fn summary_lines(text: &str, file: &str, user: Option<(&str, &str)>) -> String {
    summary(text, file, user).unwrap_or_else(|e| unusable(&e))
}

fn unusable(e: &ConfigError) -> String {
    format!("  (it cannot be used as it is: {})\n", review::quote(&e.to_string()))
}

/// What is at `<workspace>/.jp` now that its `config.toml` is gone, in a few words: gone, not a
/// directory, a symbolic link (to where), or the names it holds (a renamed file among them).
pub fn absence(workspace: &Path) -> String {
    let dir = workspace.join(".jp");
    let quoted = |p: &Path| review::quote(&p.display().to_string());
    match std::fs::symlink_metadata(&dir) {
        Err(_) => ".jp/ is gone".into(),
        Ok(m) if m.file_type().is_symlink() => match std::fs::read_link(&dir) {
            Ok(target) => format!(".jp is a symbolic link to {}, where there is no config.toml", quoted(&target)),
            Err(_) => ".jp is a symbolic link".into(),
        },
        Ok(m) if !m.is_dir() => ".jp is not a directory".into(),
        Ok(_) => {
            let mut names: Vec<String> = std::fs::read_dir(&dir)
                .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
                .unwrap_or_default();
            names.sort();
            const SHOWN: usize = 8;
            let more = names.len().saturating_sub(SHOWN);
            let listed: Vec<String> = names.iter().take(SHOWN).map(|n| review::quote(n)).collect();
            match (listed.is_empty(), more) {
                (true, _) => ".jp/ is empty".into(),
                (false, 0) => format!(".jp/ now holds: {}", listed.join(", ")),
                (false, more) => format!(".jp/ now holds: {} and {more} more", listed.join(", ")),
            }
        }
    }
}

/// What a gone configuration (`previous`, approved) set and the user would lose, as shown by
/// the refusal and by `jp trust`: its summary and its content, every line removed.
pub fn removal(workspace: &Path, previous: &Approval, user: Option<(&str, &str)>) -> String {
    let path = workspace.join(CONFIG_PATH);
    let path = jp_core::display::escape(&path.display().to_string());
    format!(
        "{path} was removed or moved since you approved it ({now}).\n\
         What it set no longer applies without it:\n{summary}\
         The approved content, now gone:\n{diff}",
        now = absence(workspace),
        // Without it, the user's own tables it replaced apply again: only its own are lost.
        summary = grants(&previous.text, &path, user).map_or_else(|e| unusable(&e), |(g, _)| review::render(&g)),
        diff = diff(&previous.text, ""),
    )
}

/// The lines that changed from `old` to `new` (unified, 2 lines of context), control
/// characters escaped.
pub fn diff(old: &str, new: &str) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut out = String::new();
    for hunk in diff.unified_diff().context_radius(2).iter_hunks() {
        out.push_str(&format!("{}\n", hunk.header()));
        for change in hunk.iter_changes() {
            let sign = match change.tag() {
                similar::ChangeTag::Delete => '-',
                similar::ChangeTag::Insert => '+',
                similar::ChangeTag::Equal => ' ',
            };
            let line = change.value().trim_end_matches('\n');
            out.push(sign);
            out.push_str(&jp_core::display::escape(line));
            out.push('\n');
        }
    }
    out
}

/// The message of a workspace configuration jp cannot use as it is — the same from every
/// command (`jp tool list`, `jp trust`, …): the file, the key, what is wrong on as many lines as
/// it takes (control characters escaped), and the one way on: fix it, then approve it.
pub fn unusable_message(workspace: &Path, e: &ConfigError) -> String {
    let ws = jp_core::display::escape(&workspace.display().to_string());
    let key = if e.key == "." { String::new() } else { format!(" at {}", jp_core::display::escape(&e.key)) };
    let line = e.line.map(|l| format!(" (line {l})")).unwrap_or_default();
    let lines: Vec<String> = e.message.trim_end().lines().map(jp_core::display::escape).collect();
    format!(
        "{file} cannot be used as it is{key}{line}:\n  {problem}\nFix the file, then approve it with: jp trust --workspace {ws}",
        file = jp_core::display::escape(&e.file),
        problem = lines.join("\n  "),
    )
}

/// The message of a refused workspace configuration: what it grants, and how to approve it.
pub fn refusal(workspace: &Path, config: &WorkspaceConfig, verdict: &Verdict, user: Option<(&str, &str)>) -> String {
    let path = config.path.display().to_string();
    // One that cannot be used: nothing to review, only to fix (as `jp trust` says too).
    if let Err(e) = summary(&config.text, &path, user) {
        let changed = match verdict {
            Verdict::Changed(previous) => {
                format!("\nIt changed since you approved it. What changed:\n{}", diff(&previous.text, &config.text))
            }
            _ => String::new(),
        };
        return format!("{}{changed}", unusable_message(workspace, &e));
    }
    let (why, changes) = match verdict {
        Verdict::Changed(previous) => {
            ("it changed since you approved it", format!("What changed:\n{}", diff(&previous.text, &config.text)))
        }
        _ => ("you have not approved it", String::new()),
    };
    let ws = jp_core::display::escape(&workspace.display().to_string());
    format!(
        "{shown} is not used: {why}.\n\
         A workspace's configuration can be written by anyone who could write the workspace (a cloned repository, a tool), \
         so jp uses it only once you have approved its exact content.\n\
         It grants, beyond jp's defaults:\n{summary}{changes}\
         Review it, then approve it with: jp trust --workspace {ws}\n\
         (or put your own settings in {user} or pass --config FILE)",
        shown = jp_core::display::escape(&path),
        summary = summary_lines(&config.text, &path, user),
        user = "~/.config/jp-host/config.toml",
    )
}

/// The message of a workspace whose approved configuration (`previous`) is gone: what no longer
/// applies, and how to go on.
pub fn removed_refusal(workspace: &Path, previous: &Approval, user: Option<(&str, &str)>) -> String {
    let ws = jp_core::display::escape(&workspace.display().to_string());
    format!(
        "{removal}\
         jp does not fall back to its defaults on its own: the approved file may have narrowed what tools may do, \
         and anyone who can write the workspace (a tool) can remove it.\n\
         Restore it, or approve running this workspace without it (your own configuration and jp's defaults) with: \
         jp trust --workspace {ws}",
        removal = removal(workspace, previous, user),
    )
}
