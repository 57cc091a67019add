//! How tools execute (RFD D10) and how they are configured ([`config`]).
//!
//! [`ToolRuntime`] is the one interface every runtime implements — `StdioRuntime` and
//! `VfsRuntime` (subprocesses), `WasmRuntime` (components) natively, the component host in the
//! browser. A runtime captures its dependencies when it is built; callers pass only the call.
//!
//! Configuration is the `[conversation.tools.<name>]` table of `.jp/config.toml`;
//! [`Config::from_toml`] parses it and every error names the file, the key and the fix.
//! [`resolve_runtime`] applies D10's order: explicit `runtime` > `.wasm` (suffix of `command`, or
//! the `wasm` key) > `stdio`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::cancel::CancellationToken;
use crate::host::Inquirer;
use crate::maybe::{BoxFuture, MaybeSend, MaybeSync};
pub mod call;
pub mod config;
mod definition;
mod error;
pub mod review;
use crate::handles::AnyToolHandle;
use crate::policy::AccessPolicy;
use crate::schema::StatefulAction;
use crate::state::{Question, ToolError, ToolResult, ToolState};
pub use config::*;
pub use error::*;

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

/// The one place a tool's default policy is chosen (used when its table has neither `sandbox`
/// nor `access`), for listings, annotations, the ask gate and every runtime alike:
/// - a stdio tool: the workspace read-write (RFD 075);
/// - a local component: `/workspace` read-write (seed 002);
/// - a builtin tool that writes (`builtin_writes`): the workspace read-write;
/// - everything else (VFS tools, read-only builtin tools, MCP servers): read-only (D11).
pub fn default_policy(name: &str, config: &ToolConfig, builtin_writes: bool) -> AccessPolicy {
    match resolve_runtime(name, config).choice {
        RuntimeChoice::Local(ToolRuntimeKind::Stdio | ToolRuntimeKind::Wasm) => AccessPolicy::stdio_default(),
        _ if builtin_writes => AccessPolicy::stdio_default(),
        _ => AccessPolicy::vfs_default(),
    }
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

impl ExecutionOutcome {
    /// A call `id` that ended with the tool's failure `message` (not transient, no trace).
    pub fn failed(id: &str, message: String) -> Self {
        Self::Completed { id: id.to_owned(), result: Err(crate::state::ToolError::new(message)) }
    }
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
    /// The policy the host resolved for this tool when it loaded it — the value its listing,
    /// MCP annotations and the ask gate show. A runtime enforces exactly this one; only without
    /// it (a runtime used on its own) does it compile the tool's table with [`default_policy`].
    pub policy: Option<Arc<AccessPolicy>>,
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
            policy: None,
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

/// Executes tool calls (RFD D10). Implementations capture their dependencies at construction.
///
/// Which runtime a tool runs on is known where the runtime is chosen (its [`RuntimeChoice`]),
/// so a runtime does not name itself; a builtin tool's listing asks [`listed_as`](Self::listed_as).
pub trait ToolRuntime: MaybeSend + MaybeSync {
    /// Execute one call with the tool's configuration.
    fn execute<'a>(&'a self, call: ToolCall, config: &'a ToolConfig) -> Execution<'a>;

    /// The runtime a listing names for a builtin tool running on it, when it is not `builtin`
    /// (`learn`: `wasm`, a component inside `jp`).
    fn listed_as(&self) -> Option<&'static str> {
        None
    }

    /// The RFD 009 actions tool `name` (configured by `config`) declares by itself, whatever
    /// its table says (`None`: the table's `stateful` actions, if any). The builtin `run`
    /// declares all four; a component that exports `jp:tool/stateful` answers for its tools.
    fn stateful_actions(&self, name: &str, config: &ToolConfig) -> Option<Vec<StatefulAction>> {
        let _ = (name, config);
        None
    }

    /// Whether stateful tool `name` keeps a live process between commands — started by
    /// [`spawn`](Self::spawn), then fetched and applied through its handle (VFS tools, `run`,
    /// components with live sessions). Otherwise a stateful tool is run again with the answers.
    fn live(&self, name: &str, config: &ToolConfig) -> bool {
        let _ = (name, config);
        false
    }

    /// Start a live stateful tool: its first state, and its handle unless it stopped at once;
    /// the handle's `fetch` and `apply` wait up to `wait` for a change.
    fn spawn<'a>(&'a self, call: ToolCall, config: &'a ToolConfig, wait: Duration) -> BoxFuture<'a, SpawnResult> {
        let _ = (config, wait);
        Box::pin(async move {
            Err(RuntimeError::Input(format!("tool '{}' keeps no live process; call it without `action`", call.name)))
        })
    }

    /// Its tool's D06 self-description when the runtime knows it without asking the tool (the
    /// builtin tools), as the JSON text of a schema response.
    fn own_schema(&self) -> Option<String> {
        None
    }

    /// What a listing says its tool may touch, when the runtime holds the tool to less than its
    /// policy (`learn`: its topic's subjects only); `None`: the policy's summary.
    fn policy_summary(&self) -> Option<String> {
        None
    }

    /// Whether its builtin tool runs on it whatever `runtime` the tool's table names (`learn`,
    /// a component inside `jp`); otherwise `runtime = "vfs"` runs a builtin tool as
    /// `jp __tool`, a sandboxed VFS tool.
    fn fixed_runtime(&self) -> bool {
        false
    }
}

/// What [`ToolRuntime::execute`] gives: the call's outcome, once it ends.
pub type Execution<'a> = BoxFuture<'a, Result<ExecutionOutcome, RuntimeError>>;

/// What [`ToolRuntime::spawn`] gives: the tool's first state, and its handle unless it stopped.
pub type SpawnResult = Result<(ToolState, Option<Box<dyn AnyToolHandle>>), RuntimeError>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::AccessPolicy;

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
                "[mcp.servers.s]\ncommand = \"x\"\nforward = [\"elicitation\", \"everything\"]",
                "mcp.servers.s.forward[1]",
                "expected one of `elicitation`, `sampling`, `roots`; use one of the listed values",
            ),
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
