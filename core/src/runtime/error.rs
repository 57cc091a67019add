//! Why a tool could not be run: [`RuntimeError`] and the typed errors it carries, each with
//! variants a caller can match and words that say what to fix.

use std::path::PathBuf;

/// Why an MCP server (`[mcp.servers.<server>]`) cannot be started or reached: each says what
/// to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpServerError {
    /// No server of that name.
    #[error("no MCP server '{server}' is configured")]
    NotConfigured {
        /// The name asked for.
        server: String,
    },
    /// A server table with neither way in.
    #[error("MCP server '{server}' has neither `command` nor `url`")]
    NoCommandOrUrl {
        /// Server name.
        server: String,
    },
    /// Its `command` is not a program on `PATH` (or in the workspace).
    #[error("MCP server '{server}': program {program:?} was not found on PATH")]
    ProgramNotFound {
        /// Server name.
        server: String,
        /// The `command`.
        program: String,
    },
    /// An `exec` entry is not a program on `PATH`.
    #[error("MCP server '{server}': `exec` entry {entry:?} was not found on PATH")]
    ExecNotFound {
        /// Server name.
        server: String,
        /// The entry.
        entry: String,
    },
    /// Its access table does not compile.
    #[error("[mcp.servers.{server}] {source}")]
    Policy {
        /// Server name.
        server: String,
        /// What is wrong with the table.
        source: crate::policy::PolicyConfigError,
    },
    /// Its `url` is not allowed by its own network rules.
    #[error("MCP server '{server}': {url} is not allowed by its network rules")]
    UrlNotAllowed {
        /// Server name.
        server: String,
        /// The URL.
        url: String,
    },
    /// A configured tool the server does not offer.
    #[error("MCP server '{server}' has no tool '{tool}'; it offers: {offered}")]
    NoSuchTool {
        /// Server name.
        server: String,
        /// The tool asked for.
        tool: String,
        /// What it offers, comma-separated.
        offered: String,
    },
    /// Its `token_env` variable is unset or empty.
    #[error("MCP server '{server}': token_env {var} is not set in the environment; export it")]
    TokenUnset {
        /// Server name.
        server: String,
        /// The variable.
        var: String,
    },
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
    /// A local tool's `command` cannot be run.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// A tool's component file cannot be used.
    #[error(transparent)]
    Component(#[from] ComponentError),
    /// The builtin `learn` tool's knowledge base cannot be used.
    #[error(transparent)]
    KnowledgeBase(#[from] KnowledgeBaseError),
    /// A tool's (or MCP server's) `read_paths` entry cannot be granted.
    #[error(transparent)]
    ReadPaths(#[from] ReadPathsError),
    /// A call reached a runtime that does not run its tool (a routing mistake in the host).
    #[error("tool '{tool}' does not run on the {runtime} runtime")]
    Misrouted {
        /// Tool name.
        tool: String,
        /// The runtime it reached.
        runtime: &'static str,
    },
    /// An MCP server of the configuration cannot be started or reached.
    #[error(transparent)]
    McpServer(#[from] McpServerError),
    /// No tool of that name.
    #[error("no tool named '{name}'; available tools: {available}")]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The names there are, comma-separated.
        available: String,
    },
    /// A local tool's table names no program.
    #[error("tool '{tool}' has no `command`")]
    NoCommand {
        /// Tool name.
        tool: String,
    },
    /// The tool's `sandbox` or `access` table does not compile.
    #[error(transparent)]
    Policy(#[from] crate::policy::PolicyConfigError),
    /// The tool's D06 self-description could not be read.
    #[error(transparent)]
    Schema(#[from] crate::schema::SchemaError),
    /// The caller's input does not fit: arguments against the tool's schema
    /// ([`ArgumentSchema`](crate::schema::ArgumentSchema)), an unknown or stopped handle, an
    /// action the tool does not support. A tool error the caller reads and fixes (MCP
    /// SEP-1303), never a protocol error; the text says what to fix.
    #[error("{0}")]
    Input(String),
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

/// Why a local tool's `command` (shell words) cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// A quote is not closed.
    #[error("`command` {command:?} has unbalanced quotes")]
    UnbalancedQuotes {
        /// The `command`.
        command: String,
    },
    /// No words.
    #[error("`command` is empty; name the program to run")]
    Empty,
    /// Its first word is not a program on `PATH` or in the workspace.
    #[error("program {program:?} of `command` was not found (looked on PATH and relative to {})", .base.display())]
    ProgramNotFound {
        /// The first word.
        program: String,
        /// The workspace it was looked for in.
        base: PathBuf,
    },
}

/// Why a tool's component file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ComponentError {
    /// The tool's table names no component.
    #[error("tool '{tool}' has neither `wasm` nor `command`; name its component file")]
    NoFile {
        /// Tool name.
        tool: String,
    },
    /// There is no file at the path.
    #[error(
        "Wasm binary not found: {} (check the tool's `wasm` or `command`, relative to the workspace)",
        .path.display()
    )]
    NotFound {
        /// The path.
        path: PathBuf,
    },
    /// The file cannot be read.
    #[error("cannot read Wasm binary {}: {why}", .path.display())]
    Unreadable {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        why: String,
    },
    /// Asked to describe itself, the component has no `jp:tool/describe` export.
    #[error("the component does not export jp:tool/describe")]
    NoDescribe,
    /// The WebAssembly engine cannot be built.
    #[error("cannot start the WebAssembly engine: {0}")]
    Engine(String),
    /// The file is not a component wasmtime can compile.
    #[error("Failed to compile Wasm component {what}: {why}")]
    Compile {
        /// The component (its file or name).
        what: String,
        /// wasmtime's words.
        why: String,
    },
    /// The component's imports cannot be satisfied, or its start failed.
    #[error("Failed to instantiate Wasm component {what}: {why}")]
    Instantiate {
        /// The component (`for 'tool'`, or its file).
        what: String,
        /// wasmtime's words.
        why: String,
    },
    /// The component does not export `jp:tool`'s `run`.
    #[error("Wasm component {what} does not export the jp:tool `run` function: {why}")]
    NoRun {
        /// The component.
        what: String,
        /// wasmtime's words.
        why: String,
    },
    /// An optional export (`jp:tool/content`, `jp:tool/describe`) has other types than jp's.
    #[error("Wasm component {what} exports {interface} with the wrong types: {why}")]
    WrongTypes {
        /// The component.
        what: String,
        /// The interface.
        interface: &'static str,
        /// wasmtime's words.
        why: String,
    },
}

impl ComponentError {
    /// Whether the tool's configuration is what is wrong (no file, or not one that can be read):
    /// exit code 2 in the CLI, like other configuration errors; the rest are the component's.
    pub fn is_config(&self) -> bool {
        matches!(self, Self::NoFile { .. } | Self::NotFound { .. } | Self::Unreadable { .. })
    }
}

/// Why the builtin `learn` tool cannot use its knowledge base (`options.kb`, default `.jp/kb`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KnowledgeBaseError {
    /// `options.kb` is not a string.
    #[error(
        "learn: `options.kb` must be a directory relative to the workspace (a string such as \"{default}\"), got {got}"
    )]
    NotAString {
        /// What it is, as JSON.
        got: String,
        /// The default.
        default: &'static str,
    },
    /// `options.kb` is not a path inside the workspace.
    #[error(
        "learn: `options.kb` = {kb:?} is not a directory inside the workspace: {why}; set it to a path relative to the workspace such as \"{default}\""
    )]
    NotInside {
        /// The option.
        kb: String,
        /// Why the path is refused.
        why: String,
        /// The default.
        default: &'static str,
    },
    /// The knowledge base does not exist.
    #[error(
        "learn has no knowledge base: {kb}/ does not exist; create {kb}/<topic>/<subject>.md (or set `options.kb` of the learn tool)"
    )]
    Missing {
        /// The knowledge base, relative to the workspace.
        kb: String,
    },
    /// A symbolic link on the way leads out of the workspace.
    #[error(
        "learn: {place} {shown} leads outside the workspace (a symbolic link on that path resolves to {target}); learn reads only files inside the workspace {}: replace the link with the directory itself{}",
        .workspace.display(),
        .place.hint()
    )]
    LeadsOutside {
        /// The knowledge base itself, or a topic in it.
        place: KbPlace,
        /// The path, relative to the workspace.
        shown: String,
        /// Where the link points, in words.
        target: String,
        /// The workspace.
        workspace: PathBuf,
    },
    /// The topic's directory cannot be opened.
    #[error("learn: the topic {shown} cannot be opened: {why}")]
    Unopenable {
        /// The topic, relative to the workspace.
        shown: String,
        /// The I/O error.
        why: String,
    },
}

/// Which path of a knowledge base [`KnowledgeBaseError::LeadsOutside`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KbPlace {
    /// The knowledge base directory itself (`options.kb`).
    KnowledgeBase,
    /// A topic directory in it.
    Topic,
}

impl KbPlace {
    /// The knowledge base (not a topic) can also be moved with `options.kb`.
    fn hint(self) -> &'static str {
        match self {
            Self::KnowledgeBase => ", or set `options.kb` of the learn tool to a directory in the workspace",
            Self::Topic => "",
        }
    }
}

impl std::fmt::Display for KbPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::KnowledgeBase => "the knowledge base",
            Self::Topic => "the topic",
        })
    }
}

/// Why a `read_paths` entry (read-only paths a tool or MCP server gets outside the workspace)
/// cannot be granted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadPathsError {
    /// The path does not resolve.
    #[error("read_paths entry {entry:?}: {why}")]
    Unresolvable {
        /// The entry.
        entry: String,
        /// The I/O error.
        why: String,
    },
    /// The path is, holds or lies in the workspace.
    #[error(
        "read_paths entry {entry:?} is or contains the project directory; a tool reaches project files only through its runtime's policy"
    )]
    HoldsWorkspace {
        /// The entry.
        entry: String,
    },
}
