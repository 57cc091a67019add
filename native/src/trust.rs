//! Which configuration `jp` trusts (issue 23; the direnv model).
//!
//! A workspace's `.jp/config.toml` can come from anyone who could write the workspace — a cloned
//! repository, or a tool that was allowed to write there — and it decides what tools may do,
//! which programs run and where the user's API key is sent. So it is used only when the user
//! approved that exact content: its SHA-256 is recorded in the user's own state directory
//! (`$XDG_STATE_HOME/jp-host/trust`, else `~/.local/state/jp-host/trust`), never in the
//! workspace. A new or changed file stops `jp` with exit code 2 and a summary of what it grants
//! ([`jp_core::runtime::review`]) until `jp trust` approves it.
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
/// there cannot hang `jp`), at most [`MAX_CONFIG_BYTES`], UTF-8.
pub fn read_workspace_config(workspace: &Path) -> Result<Option<WorkspaceConfig>, TrustError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let path = workspace.join(CONFIG_PATH);
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY).bits() as i32)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
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
/// it changes).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Approval {
    /// The canonical workspace path.
    pub workspace: PathBuf,
    /// SHA-256 of the approved content, hex.
    pub sha256: String,
    /// The approved content.
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
    /// Approved exactly as it is.
    Approved,
    /// Never approved.
    New,
    /// Approved once, changed since.
    Changed(Box<Approval>),
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

    /// How `config` of `workspace` stands.
    pub fn verdict(&self, workspace: &Path, config: &WorkspaceConfig) -> Result<Verdict, TrustError> {
        Ok(match self.approval(workspace)? {
            Some(a) if a.sha256 == config.sha256 => Verdict::Approved,
            Some(a) => Verdict::Changed(Box::new(a)),
            None => Verdict::New,
        })
    }

    /// Record `config` as approved for `workspace` (atomically), and forget the approvals of
    /// workspaces that no longer exist.
    pub fn approve(&self, workspace: &Path, config: &WorkspaceConfig) -> Result<(), TrustError> {
        let dir =
            self.checked_dir(true)?.ok_or_else(|| TrustError::CreateDir { dir: self.dir.clone(), source: None })?;
        let approved_at =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let approval = Approval {
            workspace: workspace.to_path_buf(),
            sha256: config.sha256.clone(),
            text: config.text.clone(),
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

/// What `config` grants beyond jp's defaults, as indented lines — decided on the configuration
/// jp would enforce: layered over the user's own (`user`: its text and file), so a table that
/// refers to one of the user's (an MCP server, say) is shown as it would run. Only the tables
/// the workspace's file defines are listed (the user's own are not in question). An error when
/// it cannot be used as it is: then there is nothing that could be approved.
pub fn summary(config: &WorkspaceConfig, user: Option<(&str, &str)>) -> Result<String, ConfigError> {
    let file = config.path.display().to_string();
    let layers: Vec<(&str, &str)> = user.into_iter().chain([(config.text.as_str(), file.as_str())]).collect();
    let mut merged = Config::from_layers(&layers)?;
    let own: toml::Table = config.text.parse().map_err(|e: toml::de::Error| ConfigError {
        file: file.clone(),
        key: ".".into(),
        message: format!("not valid TOML: {}", e.to_string().trim()),
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
    Ok(review::render(&review::grants(&merged)))
}

/// [`summary`], or the reason it cannot be shown, as lines.
fn summary_lines(config: &WorkspaceConfig, user: Option<(&str, &str)>) -> String {
    summary(config, user)
        .unwrap_or_else(|e| format!("  (it cannot be used as it is: {})\n", review::quote(&e.to_string())))
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

/// The message of a refused workspace configuration: what it grants, and how to approve it.
pub fn refusal(workspace: &Path, config: &WorkspaceConfig, verdict: &Verdict, user: Option<(&str, &str)>) -> String {
    let (why, changes) = match verdict {
        Verdict::Changed(previous) => {
            ("it changed since you approved it", format!("What changed:\n{}", diff(&previous.text, &config.text)))
        }
        _ => ("you have not approved it", String::new()),
    };
    let ws = jp_core::display::escape(&workspace.display().to_string());
    format!(
        "{path} is not used: {why}.\n\
         A workspace's configuration can be written by anyone who could write the workspace (a cloned repository, a tool), \
         so jp uses it only once you have approved its exact content.\n\
         It grants, beyond jp's defaults:\n{summary}{changes}\
         Review it, then approve it with: jp trust --workspace {ws}\n\
         (or put your own settings in {user} or pass --config FILE)",
        path = jp_core::display::escape(&config.path.display().to_string()),
        summary = summary_lines(config, user),
        user = "~/.config/jp-host/config.toml",
    )
}
