//! How tools execute (RFD D10) and how they are configured.
//!
//! [`ToolRuntime`] is the one interface every runtime implements — `StdioRuntime` and
//! `VfsRuntime` (subprocesses), `WasmRuntime` (components) natively, the component host in the
//! browser. A runtime captures its dependencies when it is built; callers pass only the call.
//!
//! Configuration is the `[conversation.tools.<name>]` table of `.jp/config.toml`;
//! [`Config::from_toml`] parses it and every error names the file, the key and the fix.
//! [`resolve_runtime`] applies D10's order: explicit `runtime` > `.wasm` (suffix of `command`, or
//! the `wasm` key) > `stdio`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::cancel::CancellationToken;
use crate::host::Inquirer;
use crate::maybe::{BoxFuture, MaybeSend, MaybeSync};
use crate::policy::{AccessConfig, AccessPolicy, SandboxConfig};
use crate::schema::{ParameterConfig, StatefulAction};
use crate::state::{Question, ToolError, ToolResult};

/// How a local tool executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolRuntimeKind {
    /// A subprocess printing its result (legacy), under the OS sandbox.
    Stdio,
    /// A subprocess speaking the D11 protocol, under the OS sandbox.
    Vfs,
    /// A WASI p2 component.
    Wasm,
}

impl ToolRuntimeKind {
    /// The configuration name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Vfs => "vfs",
            Self::Wasm => "wasm",
        }
    }
}

/// Where a tool's definition comes from (unchanged by D10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolSource {
    /// Configured locally (`command` or `wasm`).
    Local,
    /// Shipped with the host.
    Builtin,
    /// A tool of an MCP server (`mcp.<server>.<tool>`).
    Mcp {
        /// Server name.
        server: String,
        /// Tool name on the server.
        tool: String,
    },
}

impl ToolSource {
    /// Parse `local`, `builtin` or `mcp.<server>.<tool>`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "local" => Ok(Self::Local),
            "builtin" => Ok(Self::Builtin),
            other => match other.strip_prefix("mcp.").and_then(|r| r.split_once('.')) {
                Some((server, tool)) if !server.is_empty() && !tool.is_empty() => {
                    Ok(Self::Mcp { server: server.into(), tool: tool.into() })
                }
                _ => Err(format!("unknown source {other:?}: use \"local\", \"builtin\" or \"mcp.<server>.<tool>\"")),
            },
        }
    }
}

impl<'de> Deserialize<'de> for ToolSource {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl Serialize for ToolSource {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Local => s.serialize_str("local"),
            Self::Builtin => s.serialize_str("builtin"),
            Self::Mcp { server, tool } => s.serialize_str(&format!("mcp.{server}.{tool}")),
        }
    }
}

/// `stateful = true` (all actions) or a list of actions (RFD 009 "Per-tool action sets").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StatefulConfig {
    /// `true`: spawn, fetch, apply, abort; `false`: one-shot.
    All(bool),
    /// Exactly these actions.
    Actions(Vec<StatefulAction>),
}

impl StatefulConfig {
    /// The declared actions (empty for a one-shot tool).
    pub fn actions(&self) -> Vec<StatefulAction> {
        match self {
            Self::All(true) => StatefulAction::ALL.to_vec(),
            Self::All(false) => Vec::new(),
            Self::Actions(a) => a.clone(),
        }
    }
}

/// One `[conversation.tools.<name>]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolConfig {
    /// Where the definition comes from (default `builtin`: a table that only sets `run` for a
    /// first-party tool needs nothing else).
    #[serde(default = "builtin_source")]
    pub source: ToolSource,
    /// The program (and arguments) to run, for local tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Explicit runtime for local tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<ToolRuntimeKind>,
    /// A component file, relative to the workspace (seed 002).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wasm: Option<String>,
    /// One-line summary for the assistant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Longer description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Parameters; absent asks a local tool to describe itself (D06).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<BTreeMap<String, ParameterConfig>>,
    /// RFD 016 / D11 sandbox table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxConfig>,
    /// RFD 076 access rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<AccessConfig>,
    /// Stateful actions (RFD 009).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stateful: Option<StatefulConfig>,
    /// Tool options passed in the context (`init.tool.options`).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub options: Map<String, Value>,
    /// Read-only host paths a sandboxed tool needs for its own files (never the project).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_paths: Vec<String>,
    /// The name of this tool in its binary's schema answer, when the binary serves several
    /// tools under other names (D06); default: the table's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Whether an agent turn (`jp query`) asks before calling it (RFD 009's permission rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunMode>,
}

fn builtin_source() -> ToolSource {
    ToolSource::Builtin
}

/// `run = …` of a tool: what an agent turn does before calling it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunMode {
    /// Ask the user each time.
    Ask,
    /// Call it without asking.
    Unattended,
    /// Never call it: the model is told it is not available.
    Skip,
}

/// `[providers.<name>]`: a model endpoint for agent turns (`jp query --provider NAME`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// The wire format.
    pub kind: ProviderKind,
    /// The endpoint (default: OpenAI's or Anthropic's own); e.g. `http://127.0.0.1:8080/v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The model's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The environment variable holding the API key (none: no key is sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Ask for a server-sent event stream.
    #[serde(default = "yes")]
    pub stream: bool,
    /// Most tokens in one answer (Anthropic requires it; default 4096).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Used when `--provider` is not given.
    #[serde(default)]
    pub default: bool,
    /// `scripted`: the recording to replay, relative to the workspace (none: the shipped demo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

fn yes() -> bool {
    true
}

/// A provider's wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions (OpenAI, llama.cpp, Ollama, vLLM, …).
    Openai,
    /// The Anthropic Messages API.
    Anthropic,
    /// A recording replayed offline.
    Scripted,
}

impl ToolConfig {
    /// A local tool running `command`.
    pub fn local(command: impl Into<String>) -> Self {
        Self {
            source: ToolSource::Local,
            command: Some(command.into()),
            runtime: None,
            wasm: None,
            summary: None,
            description: None,
            parameters: None,
            sandbox: None,
            access: None,
            stateful: None,
            options: Map::new(),
            read_paths: Vec::new(),
            tool: None,
            run: None,
        }
    }

    /// The tool's compiled access policy; `default` is used when neither `sandbox` nor `access`
    /// is configured (the VFS default, or RFD 075's stdio default). Keys in errors are relative
    /// to the tool table.
    pub fn policy(&self, default: AccessPolicy) -> Result<AccessPolicy, crate::policy::PolicyConfigError> {
        if self.sandbox.is_none() && self.access.is_none() {
            return Ok(default);
        }
        AccessPolicy::from_config(self.sandbox.as_ref(), self.access.as_ref())
    }
}

/// `[conversation]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationConfig {
    /// Tools by name.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolConfig>,
}

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
    /// Import tools as `<server>.<tool>` without a table each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<McpToolsImport>,
}

impl McpServerConfig {
    /// The server process's policy: its `access`/`sandbox` table, or the workspace read-only with
    /// no network.
    pub fn policy(&self) -> Result<AccessPolicy, crate::policy::PolicyConfigError> {
        if self.sandbox.is_none() && self.access.is_none() {
            return Ok(AccessPolicy::vfs_default());
        }
        AccessPolicy::from_config(self.sandbox.as_ref(), self.access.as_ref())
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

/// A `.jp/config.toml` file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The conversation table.
    #[serde(default)]
    pub conversation: ConversationConfig,
    /// MCP servers whose tools are offered (sandboxed).
    #[serde(default)]
    pub mcp: McpConfig,
    /// Model endpoints for agent turns (`jp query`).
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
}

/// A configuration error: the file, the key and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {key}: {message}")]
pub struct ConfigError {
    /// The configuration file.
    pub file: String,
    /// The dotted key (`conversation.tools.x.runtime`), or `.` for the whole file.
    pub key: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl Config {
    /// Parse and validate a configuration file's text. `file` is used in errors only.
    pub fn from_toml(text: &str, file: &str) -> Result<Self, ConfigError> {
        let de = toml::Deserializer::parse(text).map_err(|e| ConfigError {
            file: file.into(),
            key: ".".into(),
            message: format!("not valid TOML: {}", e.to_string().trim()),
        })?;
        let config: Config = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = e.path().to_string();
            let inner = e.into_inner();
            let message = inner.message().trim().to_owned();
            ConfigError { file: file.into(), key, message: with_fix(&message) }
        })?;
        validate_providers(&config.providers).map_err(|(key, message)| ConfigError {
            file: file.into(),
            key,
            message,
        })?;
        for (name, tool) in &config.conversation.tools {
            validate_tool(name, tool).map_err(|(key, message)| ConfigError { file: file.into(), key, message })?;
            if let ToolSource::Mcp { server, .. } = &tool.source
                && !config.mcp.servers.contains_key(server)
            {
                return Err(ConfigError {
                    file: file.into(),
                    key: format!("conversation.tools.{name}.source"),
                    message: format!(
                        "no MCP server '{server}': add an [mcp.servers.{server}] table with its `command`"
                    ),
                });
            }
        }
        for (name, server) in &config.mcp.servers {
            let key = |k: &str| format!("mcp.servers.{name}.{k}");
            let err = |key: String, message: String| ConfigError { file: file.into(), key, message };
            match (&server.command, &server.url) {
                (None, None) => {
                    return Err(err(
                        key("command"),
                        "an MCP server needs `command` (a program to start) or `url`".into(),
                    ));
                }
                (Some(_), Some(_)) => {
                    return Err(err(key("url"), "give `command` or `url`, not both".into()));
                }
                (None, Some(url)) => {
                    let policy = server.policy().map_err(|e| err(key(&e.key), e.message))?;
                    if !policy.check_http(url).is_allow() {
                        return Err(err(
                            key("url"),
                            format!(
                                "{url} is not allowed by the server's network rules; add it, e.g. [mcp.servers.{name}.access] network = {{ allow = [\"{url}\"] }}"
                            ),
                        ));
                    }
                }
                (Some(_), None) => {}
            }
            if name.contains('.') || name.is_empty() {
                return Err(err(format!("mcp.servers.{name}"), "a server name cannot be empty or contain '.'".into()));
            }
            server.policy().map_err(|e| err(key(&e.key), e.message))?;
            if let Some(McpToolsImport::All(s)) = &server.tools
                && s != "*"
            {
                return Err(err(key("tools"), format!("{s:?}: use \"*\" for every tool, or a list of names")));
            }
        }
        Ok(config)
    }
}

fn with_fix(message: &str) -> String {
    if message.starts_with("unknown field") {
        format!("{message}; remove it or check its spelling")
    } else if message.starts_with("unknown variant") {
        format!("{message}; use one of the listed values")
    } else {
        message.to_owned()
    }
}

fn validate_providers(providers: &BTreeMap<String, ProviderConfig>) -> Result<(), (String, String)> {
    let defaults: Vec<&String> = providers.iter().filter(|(_, p)| p.default).map(|(n, _)| n).collect();
    if defaults.len() > 1 {
        return Err((
            format!("providers.{}.default", defaults[1]),
            format!(
                "more than one provider has default = true ({}); keep it on one",
                defaults.iter().map(|d| d.as_str()).collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    for (name, p) in providers {
        let key = |k: &str| format!("providers.{name}.{k}");
        match p.kind {
            ProviderKind::Openai | ProviderKind::Anthropic => {
                if p.model.as_deref().is_none_or(|m| m.trim().is_empty()) {
                    return Err((
                        key("model"),
                        "name the model, e.g. model = \"gpt-4.1\" or \"claude-sonnet-4-5\"".into(),
                    ));
                }
                if let Some(url) = &p.base_url
                    && !(url.starts_with("http://") || url.starts_with("https://"))
                {
                    return Err((
                        key("base_url"),
                        format!("{url:?} is not an http(s) URL, e.g. \"http://127.0.0.1:8080/v1\""),
                    ));
                }
                if p.file.is_some() {
                    return Err((key("file"), "only a scripted provider replays a file; remove the key".into()));
                }
            }
            ProviderKind::Scripted => {
                if p.base_url.is_some() || p.api_key_env.is_some() {
                    return Err((
                        key("kind"),
                        "a scripted provider replays `file` and calls no endpoint: remove base_url and api_key_env"
                            .into(),
                    ));
                }
            }
        }
        if let Some(var) = &p.api_key_env
            && (var.is_empty() || var.contains('='))
        {
            return Err((key("api_key_env"), "name an environment variable, e.g. \"OPENAI_API_KEY\"".into()));
        }
    }
    Ok(())
}

fn validate_tool(name: &str, tool: &ToolConfig) -> Result<(), (String, String)> {
    let key = |k: &str| format!("conversation.tools.{name}.{k}");
    if tool.source == ToolSource::Local && tool.command.is_none() && tool.wasm.is_none() {
        return Err((
            key("command"),
            "a local tool needs `command` (a program to run) or `wasm` (a component file)".into(),
        ));
    }
    if tool.command.as_deref().is_some_and(|c| c.trim().is_empty()) {
        return Err((key("command"), "`command` is empty; name the program to run".into()));
    }
    tool.policy(AccessPolicy::vfs_default()).map_err(|e| (key(&e.key), e.message))?;
    if let Some(params) = &tool.parameters {
        for (pname, p) in params {
            if let Some(k) = p.unknown_keys().first() {
                return Err((
                    key(&format!("parameters.{pname}.{k}")),
                    format!(
                        "unknown key; a parameter takes type, summary, description, required, default, enum, items, properties and the JSON Schema keywords {}",
                        crate::schema::SCHEMA_KEYWORDS.join(", ")
                    ),
                ));
            }
            if let Some(t) = &p.kind {
                const TYPES: [&str; 7] = ["string", "number", "integer", "boolean", "array", "object", "null"];
                if !TYPES.contains(&t.as_str()) {
                    return Err((
                        key(&format!("parameters.{pname}.type")),
                        format!("unknown type {t:?}; use one of {}", TYPES.join(", ")),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Which runtime a tool resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeChoice {
    /// A local tool with this runtime.
    Local(ToolRuntimeKind),
    /// A builtin tool (one runtime, chosen by the host).
    Builtin,
    /// An MCP tool.
    Mcp {
        /// Server.
        server: String,
        /// Tool.
        tool: String,
    },
}

/// The result of [`resolve_runtime`]: the choice and any warnings for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The runtime.
    pub choice: RuntimeChoice,
    /// Things the user should know (e.g. an ignored `runtime` key).
    pub warnings: Vec<String>,
}

/// D10 runtime resolution: explicit `runtime` > `.wasm` (`wasm` key or a `command` ending in
/// `.wasm`) > `stdio`. `runtime` on builtin and MCP tools is ignored with a warning.
pub fn resolve_runtime(name: &str, config: &ToolConfig) -> Resolution {
    let mut warnings = Vec::new();
    let choice = match &config.source {
        ToolSource::Builtin | ToolSource::Mcp { .. } => {
            if let Some(r) = config.runtime {
                warnings.push(format!(
                    "conversation.tools.{name}.runtime = \"{}\" is ignored: {} tools have exactly one runtime; remove the key",
                    r.name(),
                    if config.source == ToolSource::Builtin { "builtin" } else { "MCP" }
                ));
            }
            match &config.source {
                ToolSource::Mcp { server, tool } => RuntimeChoice::Mcp { server: server.clone(), tool: tool.clone() },
                _ => RuntimeChoice::Builtin,
            }
        }
        ToolSource::Local => {
            let wasm_like = config.wasm.is_some()
                || config
                    .command
                    .as_deref()
                    .is_some_and(|c| c.split_whitespace().next().is_some_and(|p| p.ends_with(".wasm")));
            RuntimeChoice::Local(match config.runtime {
                Some(kind) => kind,
                None if wasm_like => ToolRuntimeKind::Wasm,
                None => ToolRuntimeKind::Stdio,
            })
        }
    };
    Resolution { choice, warnings }
}

/// What one execution ended with (D10 `ExecutionOutcome`).
#[derive(Debug, Clone, PartialEq)]
pub enum ExecutionOutcome {
    /// The tool finished, successfully or not.
    Completed {
        /// The call id.
        id: String,
        /// The content or the tool's error.
        result: Result<ToolResult, ToolError>,
    },
    /// The tool needs an answer; it will be run again with it.
    NeedsInput {
        /// The call id.
        id: String,
        /// The question.
        question: Question,
    },
    /// The call was cancelled.
    Cancelled {
        /// The call id.
        id: String,
    },
}

/// One tool call as a runtime receives it.
#[derive(Clone)]
pub struct ToolCall {
    /// Tool name.
    pub name: String,
    /// Call id.
    pub id: String,
    /// Arguments.
    pub arguments: Map<String, Value>,
    /// Answers to earlier questions, by question id.
    pub answers: Map<String, Value>,
    /// Cancelled when the user or host gives up.
    pub cancel: CancellationToken,
    /// Who answers this call's inquiries, instead of the runtime's own inquirer (an MCP client
    /// asked through elicitation, per call).
    pub inquirer: Option<Arc<dyn Inquirer>>,
}

impl ToolCall {
    /// A call with no answers, a fresh cancellation token and the runtime's inquirer.
    pub fn new(name: impl Into<String>, id: impl Into<String>, arguments: Map<String, Value>) -> Self {
        Self {
            name: name.into(),
            id: id.into(),
            arguments,
            answers: Map::new(),
            cancel: CancellationToken::new(),
            inquirer: None,
        }
    }
}

impl std::fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCall")
            .field("name", &self.name)
            .field("id", &self.id)
            .field("arguments", &self.arguments)
            .field("answers", &self.answers)
            .field("own_inquirer", &self.inquirer.is_some())
            .finish()
    }
}

/// An infrastructure failure (as opposed to a tool's own error, which is an outcome).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
    /// The runtime is not available on this host.
    #[error("tool '{tool}' uses runtime '{runtime}', which is not available here: {why}")]
    UnsupportedRuntime {
        /// Tool name.
        tool: String,
        /// Runtime name.
        runtime: String,
        /// Why, and what to do.
        why: String,
    },
    /// The configuration does not allow running the tool.
    #[error("{0}")]
    Config(String),
    /// The tool could not be started.
    #[error("could not start tool '{tool}': {message}")]
    Spawn {
        /// Tool name.
        tool: String,
        /// What failed.
        message: String,
    },
    /// The OS sandbox cannot be enforced.
    #[error("{0}")]
    Sandbox(String),
    /// The tool broke the protocol or died.
    #[error("tool '{tool}' failed: {message}")]
    Protocol {
        /// Tool name.
        tool: String,
        /// What happened (with the stderr tail when there is one).
        message: String,
    },
    /// The tool exceeded its time.
    #[error("tool '{tool}' timed out after {seconds} s")]
    Timeout {
        /// Tool name.
        tool: String,
        /// The limit.
        seconds: u64,
    },
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

/// Executes tool calls (RFD D10). Implementations capture their dependencies at construction.
pub trait ToolRuntime: MaybeSend + MaybeSync {
    /// Which runtime this is, for listings and traces.
    fn kind(&self) -> &'static str;

    /// Execute one call with the tool's configuration.
    fn execute<'a>(
        &'a self,
        call: ToolCall,
        config: &'a ToolConfig,
    ) -> BoxFuture<'a, Result<ExecutionOutcome, RuntimeError>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(extra: &str) -> ToolConfig {
        let text = format!("[conversation.tools.t]\n{extra}");
        Config::from_toml(&text, "c.toml").unwrap().conversation.tools.remove("t").unwrap()
    }

    #[test]
    fn resolution_order() {
        let cases = [
            ("source = \"local\"\ncommand = \"x\"", RuntimeChoice::Local(ToolRuntimeKind::Stdio)),
            ("source = \"local\"\ncommand = \"x.wasm\"", RuntimeChoice::Local(ToolRuntimeKind::Wasm)),
            ("source = \"local\"\ncommand = \"./p/x.wasm --flag\"", RuntimeChoice::Local(ToolRuntimeKind::Wasm)),
            ("source = \"local\"\nwasm = \".jp/tools/t.wasm\"", RuntimeChoice::Local(ToolRuntimeKind::Wasm)),
            ("source = \"local\"\ncommand = \"x.wasm\"\nruntime = \"vfs\"", RuntimeChoice::Local(ToolRuntimeKind::Vfs)),
            ("source = \"local\"\ncommand = \"x\"\nruntime = \"wasm\"", RuntimeChoice::Local(ToolRuntimeKind::Wasm)),
            ("source = \"builtin\"", RuntimeChoice::Builtin),
            (
                "source = \"mcp.github.list_issues\"\n[mcp.servers.github]\ncommand = \"github-mcp\"",
                RuntimeChoice::Mcp { server: "github".into(), tool: "list_issues".into() },
            ),
        ];
        for (text, expected) in cases {
            let r = resolve_runtime("t", &tool(text));
            assert_eq!(r.choice, expected, "{text}");
            assert!(r.warnings.is_empty());
        }
        let r = resolve_runtime("t", &tool("source = \"builtin\"\nruntime = \"vfs\""));
        assert_eq!(r.choice, RuntimeChoice::Builtin);
        assert!(r.warnings[0].contains("conversation.tools.t.runtime"), "{:?}", r.warnings);
    }

    #[test]
    fn config_errors_name_file_key_and_fix() {
        let cases = [
            (
                "[conversation.tools.t]\nsource = \"local\"\ncommand = \"x\"\nruntime = \"vsf\"",
                "conversation.tools.t.runtime",
                "unknown variant",
            ),
            (
                "[conversation.tools.t]\nsource = \"local\"\ncomand = \"x\"",
                "conversation.tools.t.comand",
                "remove it or check its spelling",
            ),
            ("[conversation.tools.t]\nsource = \"remote\"", "conversation.tools.t.source", "mcp.<server>.<tool>"),
            ("[conversation.tools.t]\nsource = \"local\"", "conversation.tools.t.command", "needs `command`"),
            (
                "[conversation.tools.t]\nsource = \"local\"\ncommand = \"x\"\n[conversation.tools.t.sandbox]\nfilesystem.allow = [\"/etc\"]",
                "conversation.tools.t.sandbox.filesystem.allow[0]",
                "absolute",
            ),
            (
                "[conversation.tools.t]\nsource = \"local\"\ncommand = \"x\"\n[conversation.tools.t.parameters.p]\ntype = \"str\"",
                "conversation.tools.t.parameters.p.type",
                "unknown type",
            ),
            ("[conversation.tools.t\n", ".", "not valid TOML"),
            (
                "[conversation.tools.t]\nsource = \"mcp.gh.x\"",
                "conversation.tools.t.source",
                "add an [mcp.servers.gh] table",
            ),
            ("[mcp.servers.gh]\nargs = []", "mcp.servers.gh.command", "needs `command`"),
            (
                "[mcp.servers.gh]\nurl = \"http://127.0.0.1:1/mcp\"",
                "mcp.servers.gh.url",
                "not allowed by the server's network rules",
            ),
            ("[mcp.servers.gh]\ncommand = \"x\"\ntools = \"all\"", "mcp.servers.gh.tools", "use \"*\""),
        ];
        for (text, key, needle) in cases {
            let e = Config::from_toml(text, ".jp/config.toml").unwrap_err();
            assert_eq!(e.file, ".jp/config.toml");
            assert_eq!(e.key, key, "{text}: {e}");
            assert!(e.message.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn d11_example_parses() {
        let text = r#"
            [conversation.tools.smart_editor]
            source = "local"
            command = "./tools/smart_editor"
            runtime = "vfs"
            stateful = ["spawn", "fetch", "abort"]
            [conversation.tools.smart_editor.sandbox]
            filesystem.allow = ["."]
            filesystem.writable = true
        "#;
        let c = Config::from_toml(text, "c.toml").unwrap();
        let t = &c.conversation.tools["smart_editor"];
        assert_eq!(t.runtime, Some(ToolRuntimeKind::Vfs));
        assert_eq!(t.stateful.as_ref().unwrap().actions().len(), 3);
        let p = t.policy(AccessPolicy::vfs_default()).unwrap();
        assert!(p.check_fs_str(crate::policy::Capability::Create, "src/new.rs").is_allow());
    }
}
