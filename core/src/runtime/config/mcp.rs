//! `[mcp.servers.<name>]`: the MCP servers jp-host starts (under the OS sandbox) or reaches by
//! URL, whose tools, prompts and resources it offers, and which of their requests of a client
//! (`forward`) reach the agent's MCP client through `jp mcp`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::policy::{AccessConfig, AccessPolicy, SandboxConfig};

/// `tools = "*"` (every tool of the server) or a list of names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum McpToolsImport {
    /// `"*"`.
    All(String),
    /// These tools.
    Some(Vec<String>),
}

impl McpToolsImport {
    /// Whether `tool` is imported.
    pub fn includes(&self, tool: &str) -> bool {
        match self {
            Self::All(star) => star == "*",
            Self::Some(names) => names.iter().any(|n| n == tool),
        }
    }
}

/// One `[mcp.servers.<name>]` table: an MCP server jp-host starts (under the OS sandbox) and
/// whose tools it offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program (on `PATH` or a path relative to the workspace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// A Streamable-HTTP server's URL (instead of `command`); its `access` network rules must
    /// allow it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Programs the server may start besides itself (by name on `PATH`, or a path); by default
    /// it may execute nothing but its own program (and, for a script, its interpreter).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exec: Vec<String>,
    /// The host variable holding a bearer token for a `url` server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
    /// Host environment variables forwarded to it (nothing else is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Read-only host paths for the server's own files (its package, its interpreter's libraries).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_paths: Vec<String>,
    /// What the server process may touch (RFD 076 shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<AccessConfig>,
    /// The same in the RFD 016 / D11 shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxConfig>,
    /// Import tools as `<prefix><tool>` without a table each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<McpToolsImport>,
    /// What the names of its imported tools start with (default `"<server>."`; `""` offers them
    /// under their own names — a clash with another tool is a configuration error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Which of the server's requests of a client reach the agent's MCP client through `jp mcp`
    /// (default `["elicitation"]`); the others are declined, with the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward: Option<Vec<McpForward>>,
}

/// A request an MCP server makes of its client that `jp mcp` may pass on to the agent's client
/// (`forward = [...]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpForward {
    /// `elicitation/create`: the server asks the user (the question says which server asks).
    Elicitation,
    /// `sampling/createMessage`: the server asks the agent's model for a completion.
    Sampling,
    /// `roots/list`: the server asks which directories the agent's client works in.
    Roots,
}

impl McpForward {
    /// The word of the configuration (`"elicitation"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Elicitation => "elicitation",
            Self::Sampling => "sampling",
            Self::Roots => "roots",
        }
    }
}

impl McpServerConfig {
    /// The name tool `tool` of server `server` is offered under: `<prefix><tool>`.
    pub fn offered_name(&self, server: &str, tool: &str) -> String {
        match &self.prefix {
            Some(prefix) => format!("{prefix}{tool}"),
            None => format!("{server}.{tool}"),
        }
    }

    /// Whether the server's requests of kind `what` reach the agent's client (`forward`, by
    /// default elicitation only).
    pub fn forwards(&self, what: McpForward) -> bool {
        match &self.forward {
            Some(list) => list.contains(&what),
            None => what == McpForward::Elicitation,
        }
    }

    /// The server process's policy: the workspace read-only with no network, each part its
    /// `access` table writes (`filesystem`, `network`, `commands`) replacing the default's; or its
    /// `sandbox` table, a whole policy.
    pub fn policy(&self) -> Result<AccessPolicy, crate::policy::PolicyConfigError> {
        let default = AccessPolicy::vfs_default();
        if self.sandbox.is_none() && self.access.is_none() {
            return Ok(default);
        }
        let policy = AccessPolicy::from_config(self.sandbox.as_ref(), self.access.as_ref())?;
        Ok(match (&self.sandbox, &self.access) {
            // As a tool's: an `access` table adds to the default (see `ToolConfig::policy`).
            (None, Some(access)) => policy.keeping_from(&default, access),
            _ => policy,
        })
    }
}

/// `[mcp]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// Servers by name.
    #[serde(default)]
    pub servers: BTreeMap<String, McpServerConfig>,
}
