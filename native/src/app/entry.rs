//! A tool the host knows, resolved once when it is loaded: its configuration, where it was
//! defined, and its policy (the one listings, annotations, the ask gate and the runtime share).

use std::sync::Arc;

use jp_core::policy::AccessPolicy;
use jp_core::runtime::{McpServerConfig, RuntimeChoice, ToolConfig, ToolSource, resolve_runtime};

use super::AppError;

/// A tool the host knows.
#[derive(Debug, Clone)]
pub struct ToolEntry {
    /// Name.
    pub name: String,
    /// Its configuration (synthesised for builtin tools).
    pub config: ToolConfig,
    /// Shipped with `jp`.
    pub builtin: bool,
    /// Where it was defined: `built in` or the config file.
    pub origin: String,
    /// Its policy, resolved once when the tool was loaded: what listings, MCP annotations and the
    /// ask gate show, and what the runtime enforces ([`ToolCall::policy`]).
    resolved_policy: Arc<AccessPolicy>,
}

/// What a tool's policy is resolved against: the workspace and the home directory (so the
/// `~/…` sensitive paths apply when the workspace contains home).
#[derive(Debug, Clone)]
pub(super) struct PolicyContext {
    pub(super) workspace: String,
    pub(super) home: Option<String>,
}

impl ToolEntry {
    /// A tool and its policy, resolved once: its table compiled, or
    /// [`jp_core::runtime::default_policy`] without one.
    pub(super) fn new(
        name: String,
        config: ToolConfig,
        builtin: bool,
        origin: String,
        context: &PolicyContext,
    ) -> Result<Self, AppError> {
        let default = jp_core::runtime::default_policy(&name, &config, builtin && builtin_writes(&name));
        let mut policy = config.policy(default).map_err(|e| AppError::Policy {
            origin: origin.clone(),
            name: name.clone(),
            source: e,
        })?;
        if let Some(home) = &context.home {
            policy.set_home(&context.workspace, home);
        }
        Ok(Self { name, config, builtin, origin, resolved_policy: Arc::new(policy) })
    }

    /// A builtin tool no configuration names: its policy is the default of its kind (reading,
    /// or reading and writing), the same for every such tool, so it is compiled once per kind
    /// and shared (`kept`): a one-shot `jp` loads every builtin and calls one tool at most.
    pub(super) fn builtin(
        name: &str,
        context: &PolicyContext,
        kept: &mut [Option<Arc<AccessPolicy>>; 2],
    ) -> Result<Self, AppError> {
        let mut config = ToolConfig::local("");
        config.source = ToolSource::Builtin;
        config.command = None;
        let kind = usize::from(builtin_writes(name));
        if let Some(policy) = &kept[kind] {
            return Ok(Self {
                name: name.into(),
                config,
                builtin: true,
                origin: "built in".into(),
                resolved_policy: policy.clone(),
            });
        }
        let entry = Self::new(name.into(), config, true, "built in".into(), context)?;
        kept[kind] = Some(entry.resolved_policy.clone());
        Ok(entry)
    }

    /// The runtime a tool that is not builtin runs on, for listings (`vfs`, `stdio`,
    /// `wasm`, `mcp`); `App::runtime_label` answers for every tool.
    pub(super) fn configured_runtime_label(&self) -> String {
        match resolve_runtime(&self.name, &self.config).choice {
            RuntimeChoice::Local(kind) => kind.name().into(),
            RuntimeChoice::Builtin => "builtin".into(),
            RuntimeChoice::Mcp { .. } => "mcp".into(),
        }
    }

    /// The name the tool's binary knows it by (`tool` in its table, else its own name).
    pub fn binary_name(&self) -> &str {
        self.config.tool.as_deref().unwrap_or(&self.name)
    }

    /// `local`, `builtin` or `mcp.<server>.<tool>`.
    pub fn source_label(&self) -> String {
        match &self.config.source {
            ToolSource::Local => "local".into(),
            ToolSource::Builtin => "builtin".into(),
            ToolSource::Mcp { server, tool } => format!("mcp.{server}.{tool}"),
        }
    }

    /// One line: what its policy allows. What a listing shows is `App::policy_summary`, which
    /// the tool's runtime may narrow (`learn`).
    pub fn policy_summary(&self) -> String {
        self.resolved_policy.summary()
    }

    /// The tool's policy, resolved when it was loaded (the one its runtime enforces).
    pub fn policy(&self) -> Arc<AccessPolicy> {
        self.resolved_policy.clone()
    }
}

/// Whether `name` is a builtin fs tool that writes (its default policy is a writable
/// workspace; the read tools' is read-only).
pub(super) fn builtin_writes(name: &str) -> bool {
    jp_fs_tools::TOOLS.iter().any(|t| t.name == name) && !jp_fs_tools::READ_ONLY_TOOLS.contains(&name)
}

/// What a tool is, for a clash message: `jp's builtin tool`, `tool 'x' of MCP server 's'`, ….
pub(super) fn describe_entry(entry: &ToolEntry) -> String {
    match &entry.config.source {
        _ if entry.builtin => format!("jp's builtin tool '{}'", entry.name),
        ToolSource::Mcp { server, tool } => format!("tool '{tool}' of MCP server '{server}'"),
        _ => format!("the tool '{}' of {}", entry.name, entry.origin),
    }
}

/// The entry of tool `tool` of MCP server `server`: named `<prefix><tool>` (`<server>.<tool>` by default) unless a table names
/// it; its policy is the server's (the server process is what the sandbox holds).
pub(super) fn mcp_entry(
    server: &str,
    tool: &str,
    sc: &McpServerConfig,
    table: Option<ToolConfig>,
    origin: &str,
    context: &PolicyContext,
) -> Result<ToolEntry, AppError> {
    let mut config = table.unwrap_or_else(|| {
        let mut c = ToolConfig::local("");
        c.command = None;
        c
    });
    config.source = ToolSource::Mcp { server: server.into(), tool: tool.into() };
    config.runtime = None;
    config.access = sc.access.clone();
    config.sandbox = sc.sandbox.clone();
    ToolEntry::new(sc.offered_name(server, tool), config, false, origin.into(), context)
}
