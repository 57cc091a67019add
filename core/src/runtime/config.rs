//! The configuration file, `.jp/config.toml`: `[conversation.tools.*]` (tools, their runtime,
//! parameters, policy and `run` mode), `[mcp.servers.*]` and `[providers.*]`.
//! [`Config::from_toml`] parses and validates it; every error names the file, the key and the fix.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::policy::{AccessConfig, AccessPolicy, SandboxConfig};
use crate::schema::{ParameterConfig, StatefulAction};

mod mcp;
pub use mcp::{McpConfig, McpForward, McpServerConfig, McpToolsImport};

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

/// A tool's `source` that is not `local`, `builtin` or `mcp.<server>.<tool>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown source {text:?}: use \"local\", \"builtin\" or \"mcp.<server>.<tool>\"")]
pub struct UnknownSource {
    /// The source as written.
    pub text: String,
}

impl ToolSource {
    /// Parse `local`, `builtin` or `mcp.<server>.<tool>`.
    pub fn parse(text: &str) -> Result<Self, UnknownSource> {
        match text {
            "local" => Ok(Self::Local),
            "builtin" => Ok(Self::Builtin),
            other => match other.strip_prefix("mcp.").and_then(|r| r.split_once('.')) {
                Some((server, tool)) if !server.is_empty() && !tool.is_empty() => {
                    Ok(Self::Mcp { server: server.into(), tool: tool.into() })
                }
                _ => Err(UnknownSource { text: other.into() }),
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
    /// builtin tool needs nothing else).
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
    /// Whether an agent turn (`jp query`) asks before calling it (RFD 009's permission rules):
    /// the table's `run` key (not the `run` tool, not `process.run`).
    #[serde(default, rename = "run", skip_serializing_if = "Option::is_none")]
    pub run_mode: Option<RunMode>,
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
            run_mode: None,
        }
    }

    /// The tool's compiled access policy; `default` is the runtime's (the VFS default, or RFD
    /// 075's stdio default): used as it is when neither `sandbox` nor `access` is configured, and
    /// for each of `filesystem`, `network` and `commands` an `access` table leaves out. Keys in
    /// errors are relative to the tool table.
    pub fn policy(&self, default: AccessPolicy) -> Result<AccessPolicy, crate::policy::PolicyConfigError> {
        if self.sandbox.is_none() && self.access.is_none() {
            return Ok(default);
        }
        let policy = AccessPolicy::from_config(self.sandbox.as_ref(), self.access.as_ref())?;
        Ok(match (&self.sandbox, &self.access) {
            // An `access` table adds to the runtime's default: the parts it leaves out are the
            // default's (a `sandbox` table is a whole policy of its own, as D11 writes it).
            (None, Some(access)) => policy.keeping_from(&default, access),
            _ => policy,
        })
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

/// Merge `from` into `into`: the tables that hold named tables are merged key by key, a named
/// table (or any other value) replaces what was there.
fn merge_tables(into: &mut toml::Table, from: toml::Table, path: &[&str]) {
    const MERGED: [&[&str]; 5] = [&[], &["conversation"], &["conversation", "tools"], &["mcp"], &["mcp", "servers"]];
    for (key, value) in from {
        let mut inner: Vec<&str> = path.to_vec();
        inner.push(&key);
        let merges = MERGED.contains(&inner.as_slice()) || inner == ["providers"];
        match (into.get_mut(&key), value) {
            (Some(toml::Value::Table(existing)), toml::Value::Table(table)) if merges => {
                merge_tables(existing, table, &inner);
            }
            (_, value) => {
                into.insert(key, value);
            }
        }
    }
}

/// A configuration error: the file, the line, the key and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {key}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ConfigError {
    /// The configuration file.
    pub file: String,
    /// The line (from 1) the key is written on, when it is known.
    pub line: Option<usize>,
    /// The dotted key (`conversation.tools.x.runtime`), or `.` for the whole file.
    pub key: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl ConfigError {
    /// An error about `key` of `file`, its line not yet known.
    pub fn new(file: &str, key: impl Into<String>, message: impl Into<String>) -> Self {
        Self { file: file.into(), line: None, key: key.into(), message: message.into() }
    }

    /// The same error, with the line `text` writes its key on (when it writes it).
    fn located(mut self, text: &str) -> Self {
        if self.line.is_none() && self.key != "." {
            self.line = line_of_key(text, &self.key);
        }
        self
    }
}

/// The line (from 1) where `text` writes the dotted `key`: the deepest part of the key the text
/// has. A name with a dot in it (`commands."/usr/bin/x.y"`) is matched whole.
pub fn line_of_key(text: &str, key: &str) -> Option<usize> {
    let doc = toml::de::DeTable::parse(text).ok()?;
    let parts: Vec<&str> = key.split('.').collect();
    let mut table = doc.get_ref();
    let mut found = None;
    let mut i = 0;
    'walk: while i < parts.len() {
        // The longest run of parts that names one key here (names may hold dots).
        for j in (i + 1..=parts.len()).rev() {
            let name = parts[i..j].join(".");
            if let Some((k, v)) = table.iter().find(|(k, _)| k.get_ref().as_ref() == name) {
                found = Some(k.span().start);
                i = j;
                match v.get_ref() {
                    toml::de::DeValue::Table(t) => {
                        table = t;
                        continue 'walk;
                    }
                    _ => break 'walk,
                }
            }
        }
        break;
    }
    found.map(|at| text[..at.min(text.len())].matches('\n').count() + 1)
}

impl Config {
    /// Parse and validate configuration layered from several files (`(text, file)`, the user's
    /// own first): a named table (`[conversation.tools.X]`, `[mcp.servers.X]`,
    /// `[providers.X]`) of a later file replaces the earlier file's table of the same name
    /// whole; everything is then validated as one configuration.
    pub fn from_layers(layers: &[(&str, &str)]) -> Result<Self, ConfigError> {
        match layers {
            [] => Ok(Self::default()),
            [(text, file)] => Self::from_toml(text, file),
            _ => {
                let mut merged = toml::Table::new();
                for (text, file) in layers {
                    let table: toml::Table =
                        text.parse().map_err(|e: toml::de::Error| ConfigError::new(file, ".", not_toml(&e)))?;
                    merge_tables(&mut merged, table, &[]);
                }
                let files = layers.iter().map(|(_, f)| *f).collect::<Vec<_>>().join(" + ");
                let text = toml::to_string(&merged).map_err(|e| ConfigError::new(&files, ".", e.to_string()))?;
                // An error of the merged text is about a key of the last file that writes it.
                Self::parse_toml(&text, &files).map_err(|mut e| {
                    let written = layers
                        .iter()
                        .rev()
                        .filter(|_| e.key != ".")
                        .find_map(|(text, file)| Some((file.to_string(), line_of_key(text, &e.key)?)));
                    if let Some((file, line)) = written {
                        e.file = file;
                        e.line = Some(line);
                    }
                    e
                })
            }
        }
    }

    /// Parse and validate a configuration file's text. `file` is used in errors only.
    pub fn from_toml(text: &str, file: &str) -> Result<Self, ConfigError> {
        Self::parse_toml(text, file).map_err(|e| e.located(text))
    }

    fn parse_toml(text: &str, file: &str) -> Result<Self, ConfigError> {
        let de = toml::Deserializer::parse(text).map_err(|e| ConfigError::new(file, ".", not_toml(&e)))?;
        let config: Config = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = e.path().to_string();
            let inner = e.into_inner();
            let mut error = ConfigError::new(file, key, with_fix(inner.message().trim()));
            // The value the error is about, when the parser says where it is.
            error.line = inner.span().map(|at| text[..at.start.min(text.len())].matches('\n').count() + 1);
            error
        })?;
        validate_providers(&config.providers).map_err(|(key, message)| ConfigError::new(file, key, message))?;
        for (name, tool) in &config.conversation.tools {
            validate_tool(name, tool).map_err(|(key, message)| ConfigError::new(file, key, message))?;
            if let ToolSource::Mcp { server, .. } = &tool.source
                && !config.mcp.servers.contains_key(server)
            {
                return Err(ConfigError::new(
                    file,
                    format!("conversation.tools.{name}.source"),
                    format!("no MCP server '{server}': add an [mcp.servers.{server}] table with its `command`"),
                ));
            }
        }
        for (name, server) in &config.mcp.servers {
            let key = |k: &str| format!("mcp.servers.{name}.{k}");
            let err = |key: String, message: String| ConfigError::new(file, key, message);
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
                    let policy = server.policy().map_err(|e| err(key(&e.key), e.problem.to_string()))?;
                    if !policy.check_request(&crate::policy::HttpCheck::new("POST", url)).is_allow() {
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
            server.policy().map_err(|e| err(key(&e.key), e.problem.to_string()))?;
            if let Some(McpToolsImport::All(s)) = &server.tools
                && s != "*"
            {
                return Err(err(key("tools"), format!("{s:?}: use \"*\" for every tool, or a list of names")));
            }
        }
        Ok(config)
    }
}

/// The message of text that is not TOML (the parser's own, which shows the line).
fn not_toml(e: &toml::de::Error) -> String {
    format!("not valid TOML: {}", e.to_string().trim())
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
    tool.policy(AccessPolicy::vfs_default()).map_err(|e| (key(&e.key), e.problem.to_string()))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_source_is_its_own_error_with_the_same_words() {
        assert_eq!(ToolSource::parse("mcp.gh.x"), Ok(ToolSource::Mcp { server: "gh".into(), tool: "x".into() }));
        let e = ToolSource::parse("mcp..x").unwrap_err();
        assert_eq!(e, UnknownSource { text: "mcp..x".into() });
        let text = r#"unknown source "mcp..x": use "local", "builtin" or "mcp.<server>.<tool>""#;
        assert_eq!(e.to_string(), text);
        let e = Config::from_toml("[conversation.tools.t]\nsource = \"mcp..x\"", ".jp/config.toml").unwrap_err();
        assert_eq!((e.key.as_str(), e.message.as_str()), ("conversation.tools.t.source", text));
    }

    #[test]
    fn an_error_names_the_line_of_its_key_in_the_file_that_writes_it() {
        let text = "[conversation.tools.t]\nruntime = \"stdio\"\ncommand = [\"x\"]\n\n[conversation.tools.t.access]\ncommands = { \"/usr/bin/a.b\" = 3 }\n";
        assert_eq!(line_of_key(text, "conversation.tools.t.access.commands./usr/bin/a.b"), Some(6));
        assert_eq!(line_of_key(text, "conversation.tools.t.command"), Some(3));
        // The deepest part the file has: the table of a key it leaves out.
        assert_eq!(line_of_key(text, "conversation.tools.t.wasm"), Some(1));
        assert_eq!(line_of_key(text, "mcp.servers.s"), None);
        let e = Config::from_toml(text, "w.toml").unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (Some(6), "conversation.tools.t.access.commands./usr/bin/a.b"), "{e}");
        // Layered: the error is about the workspace's file and its line, not the merged text.
        let user = "[providers.p]\nkind = \"scripted\"\n";
        let e = Config::from_layers(&[(user, "user.toml"), (text, "w.toml")]).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("w.toml", Some(6)), "{e}");
    }
}
