//! The two configuration shapes that compile into one [`AccessPolicy`](super::AccessPolicy).
//!
//! - [`SandboxConfig`] — the RFD 016 / D11 shape (`sandbox` table): an allowlist.
//!   ```toml
//!   [conversation.tools.smart_editor.sandbox]
//!   filesystem = { allow = ["."], writable = true }
//!   network = { allow = ["https://api.github.com"], envs = ["GITHUB_TOKEN"] }
//!   commands.cargo = { args = [["check", "**"]], envs = ["CARGO_TERM_COLOR"] }
//!   ```
//! - [`AccessConfig`] — the RFD 076 fine-grained shape (`access` table): explicit rules.
//!   ```toml
//!   [conversation.tools.editor.access]
//!   filesystem = [
//!     { path = ".", allow = ["read"] },
//!     { path = "src", allow = ["read", "write"] },
//!     { path = "secrets", allow = [] },
//!   ]
//!   network = { allow = ["https://api.example.com/v1"], deny = ["https://api.example.com/v1/admin"], envs = ["API_TOKEN"] }
//!   commands.git = { args = [["status"], ["diff", "**"]] }
//!   env = ["CARGO_TERM_COLOR"]
//!   sensitive_paths = ["**/*.pem"]
//!   secrets = { API_TOKEN = ["https://api.example.com"] }
//!   ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::network::NetRuleConfig;

/// RFD 016 / D11 `sandbox` table.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Workspace access; absent means the D11 default (read-only workspace).
    #[serde(default)]
    pub filesystem: Option<SandboxFilesystem>,
    /// Network access; absent means none.
    #[serde(default)]
    pub network: Option<SandboxNetwork>,
    /// Programs the tool may run through `process.run`, by name.
    #[serde(default)]
    pub commands: Option<BTreeMap<String, CommandRule>>,
    /// Paths to add to the built-in sensitive list (globs, workspace-relative).
    #[serde(default)]
    pub sensitive_paths: Vec<String>,
}

/// `sandbox.filesystem`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxFilesystem {
    /// Workspace-relative path prefixes the tool may reach.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Whether those paths may also be created, updated and deleted.
    #[serde(default)]
    pub writable: bool,
}

/// `sandbox.network`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxNetwork {
    /// URL prefixes (`https://api.example.com`; the prefix pins scheme and host) or rule tables
    /// (see [`NetRuleConfig`]).
    #[serde(default)]
    pub allow: Vec<NetRuleConfig>,
    /// Host environment variables that `${VAR}` in header values may substitute.
    #[serde(default)]
    pub envs: Vec<String>,
}

/// Which invocations of one program are allowed (RFD 075 `CommandRule`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandRule {
    /// Allowed argument lists, sudo-style: each is matched exactly, `*` matches one argument and
    /// a final `**` matches anything after. Absent means any arguments.
    #[serde(default)]
    pub args: Option<Vec<Vec<String>>>,
    /// Host environment variables this program may receive.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub envs: Vec<String>,
}

/// RFD 076 `access` table.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessConfig {
    /// Path rules; the most specific wins in full, ties go to the last.
    #[serde(default)]
    pub filesystem: Option<Vec<FsRuleConfig>>,
    /// URL-prefix rules.
    #[serde(default)]
    pub network: Option<NetworkRulesConfig>,
    /// Programs, by name.
    #[serde(default)]
    pub commands: Option<BTreeMap<String, CommandRule>>,
    /// Host environment variables subprocesses may receive (beyond PATH, HOME, USER, LANG, LC_*).
    #[serde(default)]
    pub env: Option<Vec<String>>,
    /// Paths to add to the built-in sensitive list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sensitive_paths: Vec<String>,
    /// Host environment variables bound to the origins their values may be sent to
    /// (`GITHUB_TOKEN = ["https://api.github.com"]`, see `secrets.rs`).
    #[serde(default)]
    pub secrets: Option<BTreeMap<String, Vec<String>>>,
}

/// One `access.filesystem` rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsRuleConfig {
    /// Workspace-relative path prefix (`.` for everything).
    pub path: String,
    /// Capabilities granted; an empty list denies everything under `path`.
    #[serde(default)]
    pub allow: Vec<CapabilityName>,
}

/// A capability as written in configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CapabilityName {
    /// Read files and list directories.
    Read,
    /// Create files that do not exist.
    Create,
    /// Overwrite existing files.
    Update,
    /// Delete files.
    Delete,
    /// Run a program that lives in the workspace.
    Execute,
    /// Alias for create + update + delete.
    Write,
}

/// `access.network`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkRulesConfig {
    /// Allowed URL prefixes or rule tables (see [`NetRuleConfig`]).
    #[serde(default)]
    pub allow: Vec<NetRuleConfig>,
    /// Denied URL prefixes or rule tables (the longest matching prefix wins; a tie denies).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<NetRuleConfig>,
    /// Host environment variables that `${VAR}` in header values may substitute.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub envs: Vec<String>,
}
