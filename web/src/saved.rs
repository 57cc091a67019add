//! Saved sessions of stateful components, for a host whose project lives in the embedder's
//! storage (the edge: a Durable Object, Deno KV): after each command on a handle, the
//! component's `save` is kept as a record beside the project's files, in the same `batch` as
//! the files the command changed. A host that lost the live instance (the engine restarted, the
//! isolate or the project's kept host was evicted) rebuilds it with `restore` when its owner
//! next names the handle; a tool that cannot save — or whose restore fails — is reported
//! `stopped` with a transient error that says so. `abort`, a stop and idle expiry delete the
//! record.
//!
//! Records live under keys starting with [`RECORDS`], never a workspace
//! path, so no tool can read or plant one; they are keyed by the owner (a digest of the caller's
//! token, the project being the storage, and the caller's scope), so another owner's id finds
//! nothing — the same answer as an unknown id.

use std::time::Duration;

use jp_core::handles::SessionLimits;
use jp_core::state::{ToolError, ToolState};
use serde::{Deserialize, Serialize};

use crate::store::RECORDS;

/// The largest saved session kept; a larger one is not kept (the handle then cannot survive
/// the loss of its instance, and is reported so).
pub const MAX_SAVED: usize = 256 * 1024;

/// How long an owner's count of issued ids is kept after its last spawn.
const ISSUED_KEPT: Duration = Duration::from_secs(24 * 60 * 60);

/// A handle as kept in storage.
#[derive(Serialize, Deserialize)]
pub struct SavedHandle {
    /// Its tool.
    pub tool: String,
    /// Its state after the last command (the registry routes an answer by it).
    pub state: ToolState,
    /// What the component's `save` returned; none when it cannot be kept.
    pub saved: Option<String>,
    /// Why `saved` is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsaved: Option<String>,
    /// When the last command ended (ms since the epoch).
    pub at: f64,
}

impl SavedHandle {
    /// The record of a handle in `state`, `saved` as its tool's `save` answered (`Err`: why
    /// nothing was kept).
    pub fn new(tool: &str, state: &ToolState, saved: Result<String, String>, now_ms: f64) -> Self {
        let (saved, unsaved) = match saved {
            Ok(s) if s.len() > MAX_SAVED => {
                (None, Some(format!("its saved session was larger than {} KiB", MAX_SAVED / 1024)))
            }
            Ok(s) => (Some(s), None),
            Err(why) => (None, Some(why)),
        };
        Self { tool: tool.to_owned(), state: state.clone(), saved, unsaved, at: now_ms }
    }

    /// The record's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// A record read back; `None` when it is not one (then it is dropped).
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice(bytes).ok()
    }

    /// Whether the handle sat unused past `max_idle` at `now_ms`: it would have been aborted.
    pub fn expired(&self, now_ms: f64, max_idle: Duration) -> bool {
        now_ms - self.at >= max_idle.as_secs_f64() * 1000.0
    }

    /// The stopped state a command on this handle gets when it cannot be rebuilt (`why`): a
    /// transient error — spawning the tool again works.
    pub fn lost(id: &str, tool: &str, why: &str) -> ToolState {
        let message = format!(
            "handle '{id}' of tool '{tool}' was lost: the live instance behind it ended with this host (the engine restarted, or evicted the project), and {why}; spawn the tool again"
        );
        ToolState::Stopped { result: Err(ToolError { message, trace: Vec::new(), transient: true }) }
    }
}

/// The key of handle `id` of `owner`.
pub fn handle_key(owner: &str, id: &str) -> String {
    format!("{RECORDS}handle/{id}/{owner}")
}

/// The key of how many ids `owner` was issued.
pub fn issued_key(owner: &str) -> String {
    format!("{RECORDS}issued/{owner}")
}

/// An owner's count of issued ids, as kept.
#[derive(Serialize, Deserialize)]
pub struct Issued {
    /// How many ids it was issued.
    pub issued: u64,
    /// When (ms since the epoch).
    pub at: f64,
}

/// Whether the record at `key` is past use at the time now: a handle idle past the default
/// limit (its owner's session would have aborted it), a count of ids unused for a day, or
/// anything unreadable. Swept with the next commit.
pub fn is_stale(key: &str, bytes: &[u8]) -> bool {
    let now = js_sys::Date::now();
    let rest = &key[RECORDS.len().min(key.len())..];
    if rest.starts_with("handle/") {
        SavedHandle::parse(bytes).is_none_or(|h| h.expired(now, SessionLimits::default().max_idle))
    } else if rest.starts_with("issued/") {
        serde_json::from_slice::<Issued>(bytes).map_or(true, |i| now - i.at >= ISSUED_KEPT.as_secs_f64() * 1000.0)
    } else {
        false
    }
}
