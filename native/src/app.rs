//! The native host as the `jp` command assembles it: the workspace, the configured and builtin
//! tools, their definitions (self-described per D06, cached), and one call routed to the runtime
//! that D10 resolution picks.
//!
//! Builtin tools (`fs_read_file`, …) need no configuration: they run in-process on the
//! [`BuiltinRuntime`], every host call served by the core dispatcher; with `runtime = "vfs"` in
//! their table they are the `jp` binary itself re-executed in tool mode ([`TOOL_MODE_ARG`]) as a
//! VFS tool under the OS sandbox. Read tools default to a read-only workspace, write tools to a
//! writable one; neither gets network or processes. A `[conversation.tools.<name>]` table with `source = "builtin"` can override their
//! policy, summary or parameters.
//!
//! A tool asked for its schema gets no host access and [`SCHEMA_TIMEOUT`] (`app/describe.rs`);
//! `learn`'s knowledge base is resolved beneath the workspace (`app/learn.rs`).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use jp_core::host::{DenyInquirer, DispatchEvents, Inquirer};
use jp_core::policy::PolicyConfigError;
use jp_core::runtime::{
    Config, ConfigError, ExecutionOutcome, McpToolsImport, RuntimeChoice, RuntimeError, ToolCall, ToolConfig,
    ToolRuntime, ToolRuntimeKind, ToolSource, resolve_runtime,
};
use jp_core::schema::{ArgumentSchema, SchemaError, ToolDefinition};
use tokio::sync::Mutex;

use crate::files::FsProjectFiles;
use crate::http::ReqwestHttpClient;
use crate::process::TokioProcessRunner;
use crate::runtime::builtin::BuiltinRuntime;
use crate::runtime::mcp::client::McpRuntime;
use crate::runtime::run_tool::{RUN, RunRuntime};
use crate::runtime::services::HostServices;
use crate::runtime::stdio::StdioRuntime;
use crate::runtime::vfs::{VfsOptions, VfsRuntime};
use crate::runtime::wasm::WasmLimits;
use crate::sandbox::SandboxMode;
use crate::trust;

mod calls;
mod definitions;
mod describe;
mod entry;
mod layers;
mod learn;
mod runtimes;
mod schema_cache;

pub use calls::{Answerer, CallReply, Handles, NoAnswerer};
pub use entry::ToolEntry;
use entry::{PolicyContext, builtin_writes, describe_entry, mcp_entry};
use layers::config_layers;

pub use describe::{NOT_WHILE_DESCRIBING, SCHEMA_TIMEOUT};

/// The hidden first argument that makes `jp` serve one builtin tool over the VFS protocol.
pub const TOOL_MODE_ARG: &str = "__tool";

/// The builtin `learn` tool (a component compiled into `jp`).
pub const LEARN: &str = "learn";

/// Where `learn` finds its topics (one directory per topic), relative to the workspace, unless
/// the tool's `options.kb` says otherwise.
pub const DEFAULT_KB: &str = ".jp/kb";

/// Why the host could not be set up (exit code 2 in the CLI); each says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The workspace directory does not resolve.
    #[error("workspace {}: {why}; pass an existing directory with --workspace", .path.display())]
    NoWorkspace {
        /// As given.
        path: PathBuf,
        /// The I/O error.
        why: String,
    },
    /// The workspace is not a directory.
    #[error("workspace {} is not a directory", .path.display())]
    NotADirectory {
        /// The workspace.
        path: PathBuf,
    },
    /// The workspace cannot be opened as a directory handle.
    #[error("cannot open workspace {}: {why}", .path.display())]
    Unopenable {
        /// The workspace.
        path: PathBuf,
        /// The I/O error.
        why: String,
    },
    /// The HTTP client cannot be built.
    #[error("HTTP client: {0}")]
    Http(String),
    /// jp's own state, configuration or cache directory and the workspace lie in one another.
    #[error(
        "the workspace {} and jp's own {what} directory {} lie in one another: a tool allowed to write the workspace could change what jp trusts or loads; use a project directory as the workspace (--workspace DIR), or point XDG_STATE_HOME / XDG_CONFIG_HOME / XDG_CACHE_HOME elsewhere",
        .workspace.display(),
        .dir.display()
    )]
    OwnDirInWorkspace {
        /// The workspace.
        workspace: PathBuf,
        /// `state`, `configuration`, `cache`.
        what: &'static str,
        /// The directory.
        dir: PathBuf,
    },
    /// `--config FILE` lies in the workspace.
    #[error(
        "--config {}: the file lies in the workspace, where tools may write it; put it outside the workspace, or use .jp/config.toml and approve it with `jp trust`",
        .path.display()
    )]
    ConfigInWorkspace {
        /// The file as given.
        path: PathBuf,
    },
    /// A configuration file cannot be read.
    #[error("cannot read config file {}: {why}", .path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        why: String,
    },
    /// A configuration layer does not parse or merge.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The workspace's configuration or jp's approvals cannot be read.
    #[error(transparent)]
    Trust(#[from] crate::trust::TrustError),
    /// Two tools would have one name.
    #[error("{shown}: [{table}] {what}")]
    NameTaken {
        /// The configuration files.
        shown: String,
        /// The table that names it (`mcp.servers.S`, `conversation.tools.T`).
        table: String,
        /// What clashes, and what to do.
        what: String,
    },
    /// `source = "builtin"` on a name jp has no builtin tool of.
    #[error(
        "{shown}: [conversation.tools.{name}] has source = \"builtin\", but jp has no builtin tool named '{name}' (builtin tools: {builtins}); use source = \"local\" with a `command`"
    )]
    NoSuchBuiltin {
        /// The configuration files.
        shown: String,
        /// The table's name.
        name: String,
        /// The builtin tools, comma-separated.
        builtins: String,
    },
    /// A tool's `sandbox` or `access` table does not compile.
    #[error("{origin}: [conversation.tools.{name}] {source}")]
    Policy {
        /// Where the tool is configured.
        origin: String,
        /// Tool name.
        name: String,
        /// What is wrong with the table.
        source: PolicyConfigError,
    },
    /// The workspace has a configuration, but jp has nowhere to keep approvals.
    #[error(
        "{} is not used: jp keeps approvals in $XDG_STATE_HOME or $HOME, and neither is set; set one, or pass --config FILE",
        .config.display()
    )]
    NoStateDir {
        /// The workspace's configuration file.
        config: PathBuf,
    },
    /// The workspace's configuration is new or changed and not approved, or approved and gone
    /// (`jp trust`): the refusal, with what it grants or set and how to go on.
    #[error("{0}")]
    Untrusted(String),
}

/// Print a warning on stderr as one line, every control character escaped: it may carry what an
/// MCP server sent (its tool names, its errors, its stderr tail), which must not draw on the
/// terminal.
pub fn warn(line: std::fmt::Arguments<'_>) {
    eprintln!("{}", jp_core::display::escape(&line.to_string()));
}

/// How the host is set up.
#[derive(Clone)]
pub struct AppOptions {
    /// The project directory.
    pub workspace: PathBuf,
    /// An explicit configuration file (otherwise `<workspace>/.jp/config.toml` when present).
    pub config_file: Option<PathBuf>,
    /// OS sandbox on (default) or explicitly off.
    pub sandbox: SandboxMode,
    /// Who answers inquiries.
    pub inquirer: Arc<dyn Inquirer>,
    /// Where policy decisions go (`--trace`).
    pub trace: Option<Arc<dyn DispatchEvents>>,
    /// Per-call time limit.
    pub timeout: Duration,
    /// The program that serves builtin tools (normally the running `jp`).
    pub self_exe: PathBuf,
    /// The host environment tools' policies pick from.
    pub env: BTreeMap<String, String>,
    /// How long a stateful `fetch` or `apply` waits for the tool's state to change.
    pub fetch_wait: Duration,
    /// The user's own configuration file (trusted; used when it exists), see
    /// [`trust::user_config_file`].
    pub user_config: Option<PathBuf>,
    /// jp's state directory (approvals, history), see [`trust::state_dir`]; without one no
    /// workspace configuration can be approved.
    pub state_dir: Option<PathBuf>,
}

impl AppOptions {
    /// Defaults for `workspace`: no config override, sandbox on, inquiries denied, 60 s, the
    /// current executable, the process environment.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        Self {
            user_config: trust::user_config_file(&env),
            state_dir: trust::state_dir(&env),
            workspace: workspace.into(),
            config_file: None,
            sandbox: SandboxMode::Enforce,
            inquirer: Arc::new(DenyInquirer),
            trace: None,
            timeout: Duration::from_secs(60),
            self_exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("jp")),
            env,
            fetch_wait: Duration::from_secs(1),
        }
    }
}

/// The host: tools, runtimes, and a per-process schema cache.
pub struct App {
    workspace: PathBuf,
    tools: std::sync::RwLock<BTreeMap<String, ToolEntry>>,
    /// The configured MCP servers, started on first use.
    mcp: Arc<McpRuntime>,
    /// Servers whose `tools = "*"` were listed.
    discovered: tokio::sync::Mutex<std::collections::BTreeSet<String>>,
    /// `[providers.*]`: model endpoints for agent turns.
    providers: BTreeMap<String, jp_core::runtime::ProviderConfig>,
    /// The VFS runtime (stateful tools are spawned on it directly).
    vfs: Arc<VfsRuntime>,
    /// D10: every runtime, built once; a call goes to `runtimes.resolve(..).execute(..)`.
    runtimes: runtimes::Runtimes,
    self_exe: PathBuf,
    timeout: Duration,
    schemas: Mutex<HashMap<String, Result<String, SchemaError>>>,
    /// The runtimes that ask tools for their schema (no host access, a short deadline).
    describers: describe::Describers,
    sandbox: SandboxMode,
    fetch_wait: Duration,
    /// Definitions by tool name (the configuration does not change while `jp` runs).
    definitions: std::sync::Mutex<HashMap<String, ToolDefinition>>,
    /// Each definition's argument schema, compiled once (by tool name, like `definitions`).
    argument_schemas: std::sync::Mutex<HashMap<String, Arc<ArgumentSchema>>>,
    /// jp's state directory (approvals, conversation history), outside every workspace.
    state_dir: Option<PathBuf>,
    /// What tools discovered later resolve their policy against.
    policy_context: PolicyContext,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App").field("workspace", &self.workspace).finish_non_exhaustive()
    }
}

impl App {
    /// Open the workspace and read the configuration.
    pub fn load(options: AppOptions) -> Result<Self, AppError> {
        let options = crate::learning::apply(options);
        let workspace = std::fs::canonicalize(&options.workspace)
            .map_err(|e| AppError::NoWorkspace { path: options.workspace.clone(), why: e.to_string() })?;
        if !workspace.is_dir() {
            return Err(AppError::NotADirectory { path: workspace });
        }
        let home = options.env.get("HOME").map(PathBuf::from).and_then(|h| std::fs::canonicalize(h).ok());
        let context = PolicyContext {
            workspace: workspace.to_string_lossy().into_owned(),
            home: home.as_ref().map(|h| h.to_string_lossy().into_owned()),
        };
        let mut tools: BTreeMap<String, ToolEntry> = BTreeMap::new();
        let mut defaults = [None, None];
        for name in jp_fs_tools::TOOLS.iter().map(|t| t.name).chain([LEARN, RUN]) {
            tools.insert(name.into(), ToolEntry::builtin(name, &context, &mut defaults)?);
        }
        let layers = config_layers(&options, &workspace)?;
        let mut mcp_servers = BTreeMap::new();
        let mut providers = BTreeMap::new();
        if !layers.is_empty() {
            let shown = layers.iter().map(|(_, f)| f.as_str()).collect::<Vec<_>>().join(" + ");
            let borrowed: Vec<(&str, &str)> = layers.iter().map(|(t, f)| (t.as_str(), f.as_str())).collect();
            let config = Config::from_layers(&borrowed)?;
            mcp_servers = config.mcp.servers.clone();
            providers = config.providers.clone();
            // Tools imported by name (`tools = [..]`) are known now; `tools = "*"` waits for
            // `discover`, which asks the server.
            for (server, sc) in &config.mcp.servers {
                if let Some(McpToolsImport::Some(names)) = &sc.tools {
                    for tool in names {
                        let entry = mcp_entry(server, tool, sc, None, &shown, &context)?;
                        if let Some(other) = tools.get(&entry.name) {
                            return Err(AppError::NameTaken {
                                shown,
                                table: format!("mcp.servers.{server}"),
                                what: format!(
                                    "offers '{}', which is already {}; give the server a `prefix` (e.g. prefix = \"{server}.\")",
                                    entry.name,
                                    describe_entry(other)
                                ),
                            });
                        }
                        tools.insert(entry.name.clone(), entry);
                    }
                }
            }
            for (name, config) in config.conversation.tools {
                if let ToolSource::Mcp { server, tool } = config.source.clone() {
                    let (server, tool) = (server.as_str(), tool.as_str());
                    let sc = &mcp_servers[server];
                    if config.runtime.is_some() {
                        eprintln!(
                            "warning: {shown}: conversation.tools.{name}.runtime is ignored: an MCP tool runs on its server; remove the key"
                        );
                    }
                    let mut entry = mcp_entry(server, tool, sc, Some(config), &shown, &context)?;
                    entry.name = name.clone();
                    tools.insert(name, entry);
                    continue;
                }
                if let Some(other) = tools.get(&name).filter(|t| matches!(t.config.source, ToolSource::Mcp { .. })) {
                    return Err(AppError::NameTaken {
                        shown,
                        table: format!("conversation.tools.{name}"),
                        what: format!(
                            "has the name of {}; rename the table or give the server a `prefix`",
                            describe_entry(other)
                        ),
                    });
                }
                let builtin = config.source == ToolSource::Builtin && tools.get(&name).is_some_and(|t| t.builtin);
                if config.source == ToolSource::Builtin && !builtin {
                    return Err(AppError::NoSuchBuiltin {
                        shown,
                        name,
                        builtins: jp_fs_tools::TOOLS
                            .iter()
                            .map(|t| t.name)
                            .chain([LEARN, RUN])
                            .collect::<Vec<_>>()
                            .join(", "),
                    });
                }
                let entry = ToolEntry::new(name.clone(), config, builtin, shown.clone(), &context)?;
                tools.insert(name, entry);
            }
        }
        let files = Arc::new(
            FsProjectFiles::open(&workspace)
                .map_err(|e| AppError::Unopenable { path: workspace.clone(), why: e.to_string() })?,
        );
        let http: Arc<dyn jp_core::host::HttpClient> =
            Arc::new(ReqwestHttpClient::new(options.timeout).map_err(|e| AppError::Http(e.to_string()))?);
        let kb_files = files.clone();
        let describers = describe::Describers::new(
            workspace.clone(),
            options.sandbox,
            options.env.clone(),
            home.clone(),
            options.trace.clone(),
        );
        // What every runtime's tools are served by, built once.
        let services = HostServices::new(files, &workspace)
            .http(http)
            .process(Arc::new(TokioProcessRunner::new(options.timeout).sandbox(options.sandbox)))
            .inquirer(options.inquirer.clone())
            .env(options.env.clone())
            .home(home)
            .trace(options.trace.clone());
        let vfs = VfsRuntime::with_services(services.clone())
            .sandbox(options.sandbox)
            .options(VfsOptions { request_timeout: options.timeout, ..VfsOptions::default() });
        let wasm = Arc::new(runtimes::LazyWasm::new(runtimes::WasmSetup {
            services: services.clone(),
            limits: WasmLimits { deadline: options.timeout, ..WasmLimits::default() },
            sandbox: options.sandbox,
        }));
        let vfs = Arc::new(vfs);
        let builtin = BuiltinRuntime::new(vfs.services().clone(), jp_fs_tools::TOOLS);
        let mcp = Arc::new(McpRuntime::with_services(&services, mcp_servers, options.sandbox, options.timeout));
        let stdio = StdioRuntime::with_services(services.clone()).sandbox(options.sandbox).timeout(options.timeout);
        let learn = runtimes::Learn { wasm: wasm.clone(), kb_files, workspace: workspace.clone() };
        let run =
            RunRuntime::new(vfs.services().clone(), TokioProcessRunner::new(options.timeout).sandbox(options.sandbox));
        let runtimes = runtimes::Runtimes::new(stdio, vfs.clone(), wasm, builtin, mcp.clone(), learn, run);
        Ok(Self {
            workspace,
            tools: std::sync::RwLock::new(tools),
            mcp,
            discovered: tokio::sync::Mutex::new(std::collections::BTreeSet::new()),
            providers,
            vfs,
            runtimes,
            self_exe: options.self_exe,
            timeout: options.timeout,
            schemas: Mutex::new(HashMap::new()),
            describers,
            sandbox: options.sandbox,
            fetch_wait: options.fetch_wait,
            definitions: std::sync::Mutex::new(HashMap::new()),
            argument_schemas: std::sync::Mutex::new(HashMap::new()),
            state_dir: options.state_dir,
            policy_context: context,
        })
    }

    /// jp's state directory (see [`trust::state_dir`]), when there is one.
    pub fn state_dir(&self) -> Option<&Path> {
        self.state_dir.as_deref()
    }

    /// Whether tools run under the OS sandbox.
    pub fn sandbox_mode(&self) -> SandboxMode {
        self.sandbox
    }

    /// `[providers.*]` of the configuration: model endpoints for agent turns (`jp query`).
    pub fn providers(&self) -> &BTreeMap<String, jp_core::runtime::ProviderConfig> {
        &self.providers
    }

    /// The MCP servers of the configuration (the relay of `jp mcp` reaches their pipes).
    pub fn mcp(&self) -> &Arc<McpRuntime> {
        &self.mcp
    }

    /// The workspace root.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Every tool, by name.
    pub fn tools(&self) -> Vec<ToolEntry> {
        self.tools.read().unwrap_or_else(std::sync::PoisonError::into_inner).values().cloned().collect()
    }

    /// Ask every MCP server configured with `tools = "*"` which tools it has and offer them as
    /// `<server>.<tool>` (once per process; a server that fails is reported and asked again next
    /// time).
    pub async fn discover(&self) {
        let mut done = self.discovered.lock().await;
        for (server, sc) in self.mcp.servers() {
            // The server said its tools changed: its new tools are listed (one gone stays until
            // a call of it fails).
            if self.mcp.hub().take_tools_changed(server) {
                done.remove(server);
            }
            if !matches!(sc.tools, Some(McpToolsImport::All(_))) || done.contains(server) {
                continue;
            }
            match self.mcp.list_tools(server).await {
                Ok(listed) => {
                    let mut tools = self.tools.write().unwrap_or_else(std::sync::PoisonError::into_inner);
                    for t in listed {
                        match mcp_entry(server, &t.name, sc, None, "the configuration", &self.policy_context) {
                            Ok(entry) => match tools.get(&entry.name) {
                                // Listed again (its tools changed): the same tool, refreshed.
                                Some(other) if other.config.source != entry.config.source => warn(format_args!(
                                    "jp: tool '{}' of MCP server '{server}' is not offered: the name is already {}; give the server a `prefix`",
                                    entry.name,
                                    describe_entry(other)
                                )),
                                _ => {
                                    tools.insert(entry.name.clone(), entry);
                                }
                            },
                            Err(e) => {
                                warn(format_args!(
                                    "jp: tool '{}' of MCP server '{server}' is not offered: {e}",
                                    t.name
                                ));
                            }
                        }
                    }
                    done.insert(server.to_string());
                }
                Err(e) => warn(format_args!("jp: the tools of MCP server '{server}' are not offered: {e}")),
            }
        }
    }

    /// One tool.
    pub fn tool(&self, name: &str) -> Result<ToolEntry, RuntimeError> {
        let tools = self.tools.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        tools.get(name).cloned().ok_or_else(|| RuntimeError::UnknownTool {
            name: name.into(),
            available: tools.keys().cloned().collect::<Vec<_>>().join(", "),
        })
    }

    /// The runtime that answers for `entry` — its actions, its schema, whether it keeps a live
    /// process: a builtin tool's builtin executor (even when it runs as `jp __tool`), else
    /// the runtime its configuration resolves to.
    fn runtime_of(&self, entry: &ToolEntry) -> Arc<dyn ToolRuntime> {
        let builtin = entry.builtin.then(|| self.runtimes.builtin(&entry.name)).flatten();
        builtin.unwrap_or_else(|| self.runtimes.resolve(&resolve_runtime(&entry.name, &self.run_config(entry)).choice))
    }

    /// A builtin tool configured with `runtime = "vfs"` (and whose runtime is not fixed): the
    /// `jp` binary re-executed as a sandboxed VFS tool instead of running in-process.
    fn runs_as_vfs(&self, entry: &ToolEntry) -> bool {
        entry.builtin
            && entry.config.runtime == Some(ToolRuntimeKind::Vfs)
            && !self.runtimes.builtin(&entry.name).is_some_and(|r| r.fixed_runtime())
    }

    /// Whether `entry` runs on the stdio runtime: a process that touches files directly, held
    /// only by the OS sandbox.
    fn runs_direct(&self, entry: &ToolEntry) -> bool {
        !entry.builtin
            && resolve_runtime(&entry.name, &entry.config).choice == RuntimeChoice::Local(ToolRuntimeKind::Stdio)
    }

    /// The runtime a tool runs on, for listings (`vfs`, `stdio`, `wasm`, `mcp`, `builtin`).
    pub fn runtime_label(&self, entry: &ToolEntry) -> String {
        if !entry.builtin {
            return entry.configured_runtime_label();
        }
        if self.runs_as_vfs(entry) {
            "vfs".into()
        } else {
            self.runtime_of(entry).listed_as().unwrap_or("builtin").into()
        }
    }

    /// One line for listings: what the tool may touch (its policy, unless its runtime holds it
    /// to less).
    pub fn policy_summary(&self, entry: &ToolEntry) -> String {
        self.runtime_of(entry).policy_summary().unwrap_or_else(|| entry.policy_summary())
    }

    /// The configuration a builtin tool runs with: `jp` in tool mode, as a VFS tool.
    fn run_config(&self, entry: &ToolEntry) -> ToolConfig {
        let mut config = entry.config.clone();
        if self.runs_as_vfs(entry) {
            let exe = self.self_exe.to_string_lossy();
            let quoted = shlex::try_quote(&exe).map_or_else(|_| exe.to_string(), |q| q.into_owned());
            config.source = ToolSource::Local;
            config.command = Some(format!("{quoted} {TOOL_MODE_ARG}"));
            config.runtime = Some(ToolRuntimeKind::Vfs);
        }
        config
    }

    /// Run one call. Its arguments are checked against the definition first (missing required
    /// parameters are a [`RuntimeError::Input`]). The call is cancelled at the time limit.
    pub async fn call(&self, call: ToolCall) -> Result<ExecutionOutcome, RuntimeError> {
        let name = call.name.clone();
        let name = name.as_str();
        let entry = self.tool(name)?;
        self.check_arguments(name, &call.arguments).await?;
        let cancel = call.cancel.clone();
        let mut call = call;
        if let Some(t) = &entry.config.tool {
            // A multi-tool binary knows this tool by another name (D06 `tool`).
            call.name = t.clone();
        }
        // The runtime enforces the policy resolved at load: the one listings and annotations show.
        call.policy = Some(entry.policy());
        let config = self.run_config(&entry);
        let resolution = resolve_runtime(name, &config);
        for warning in &resolution.warnings {
            eprintln!("warning: {warning}");
        }
        // D10: the runtime resolved for the tool executes it; no runtime is special-cased here.
        let runtime = self.runtimes.resolve(&resolution.choice);
        let run = runtime.execute(call, &config);
        tokio::pin!(run);
        tokio::select! {
            r = &mut run => r,
            () = tokio::time::sleep(self.timeout + Duration::from_secs(1)) => {
                // The runtimes enforce their own limits; this is the backstop for a whole call.
                cancel.cancel();
                let _ = run.await;
                Err(RuntimeError::Timeout { tool: name.into(), seconds: self.timeout.as_secs() })
            }
        }
    }
}
