//! [`VfsRuntime`]: RFD D11's runtime. A tool is an ordinary program started under the OS sandbox;
//! everything it needs from the host it asks for on stdout, and the core [`Dispatcher`](jp_core::host::Dispatcher) answers on
//! its stdin.
//!
//! Reading the tool's stdout, serving its requests and writing to its stdin run concurrently (the
//! reader loop, a dispatch task and a writer task), so neither side can block the other at any
//! message size up to the cap, even when the tool is slow to read. The host gives up on a tool
//! that sends nothing for the request timeout (default 60 s, not counted while a request of the
//! tool is being served), that floods it with malformed messages, or that stops reading its
//! stdin. At most a few requests wait to be served: beyond that the host stops reading the
//! tool's stdout, so a tool that pipelines large requests is held back by its own pipe instead
//! of filling the host's memory. Cancellation sends `cancel`, then `SIGTERM` after 5 s, then
//! `SIGKILL`; at the end the tool's whole process group is killed, so nothing it started
//! survives the call.

mod conversation;
mod handle;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use jp_core::files::ProjectFiles;
use jp_core::host::{DispatchEvents, HttpClient, Inquirer, ProcessRunner};
use jp_core::policy::AccessPolicy;
use jp_core::protocol::{DEFAULT_MAX_LINE, InitParams, InitTool, PROTOCOL_VERSION, ProtocolNotification};
use jp_core::runtime::{CommandError, Execution, ExecutionOutcome, RuntimeError, ToolCall, ToolConfig, ToolRuntime};
use jp_core::state::ToolState;

use self::conversation::{Halt, Spawned, VfsConversation, stopped};
pub use self::handle::VfsHandle;
use crate::process::{GroupGuard, find_program};
use crate::runtime::services::HostServices;
use crate::sandbox::{ChildCommand, SandboxMode, SandboxSpec, configured_read_paths};

/// Timing and size limits of a VFS call.
#[derive(Debug, Clone, Copy)]
pub struct VfsOptions {
    /// How long the tool may stay silent (no request, no result) before it is killed.
    pub request_timeout: Duration,
    /// How long a cancelled tool has to exit before `SIGTERM`, and again before `SIGKILL`.
    pub cancel_grace: Duration,
    /// How much of the tool's stderr is kept (the tail).
    pub max_stderr: usize,
    /// Largest protocol line.
    pub max_line: usize,
    /// Malformed messages tolerated before the tool is considered not to speak the protocol.
    pub max_malformed: usize,
}

impl Default for VfsOptions {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(60),
            cancel_grace: Duration::from_secs(5),
            max_stderr: 64 * 1024,
            max_line: DEFAULT_MAX_LINE,
            max_malformed: 100,
        }
    }
}

/// How a tool program is started: the resolved program, its arguments and the files named in
/// the command that the sandbox must let it read (scripts of interpreted tools).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramLine {
    /// Absolute path of the program.
    pub program: PathBuf,
    /// Arguments.
    pub args: Vec<String>,
    /// Existing files among the arguments (read + execute in the sandbox).
    pub script_files: Vec<PathBuf>,
}

impl ProgramLine {
    /// Parse a `command` string (shell words) relative to `base` (the workspace root), finding
    /// the program on `path_var` when it has no `/`.
    pub fn parse(command: &str, base: &Path, path_var: Option<&str>) -> Result<Self, RuntimeError> {
        let words = shlex::split(command).ok_or_else(|| CommandError::UnbalancedQuotes { command: command.into() })?;
        let (first, rest) = words.split_first().ok_or(CommandError::Empty)?;
        let program = find_program(first, path_var, base)
            .ok_or_else(|| CommandError::ProgramNotFound { program: first.clone(), base: base.to_owned() })?;
        let program = std::fs::canonicalize(&program).unwrap_or(program);
        // Arguments naming existing files (`python3 tools/x.py`) become absolute: the tool does
        // not start in the workspace, and the sandbox must let it read them.
        let mut args = Vec::with_capacity(rest.len());
        let mut script_files = Vec::new();
        for arg in rest {
            let path = base.join(arg);
            if !arg.starts_with('-') && path.is_file() {
                let path = std::fs::canonicalize(&path).unwrap_or(path);
                args.push(path.to_string_lossy().into_owned());
                script_files.push(path);
            } else {
                args.push(arg.clone());
            }
        }
        Ok(Self { program, args, script_files })
    }
}

/// Runs `runtime = "vfs"` tools.
pub struct VfsRuntime {
    services: HostServices,
    sandbox: SandboxMode,
    options: VfsOptions,
}

impl std::fmt::Debug for VfsRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VfsRuntime")
            .field("workspace", &self.services.workspace)
            .field("sandbox", &self.sandbox)
            .finish_non_exhaustive()
    }
}

impl VfsRuntime {
    /// A runtime serving `files`, whose real root (for relative commands and the home check) is
    /// `workspace`. HTTP and processes are unavailable and inquiries denied until configured.
    pub fn new(files: Arc<dyn ProjectFiles>, workspace: impl Into<PathBuf>) -> Self {
        Self::with_services(HostServices::new(files, workspace))
    }
    /// A runtime over these services.
    pub fn with_services(services: HostServices) -> Self {
        Self { services, sandbox: SandboxMode::Enforce, options: VfsOptions::default() }
    }
    /// The services behind its tools' requests.
    pub fn services(&self) -> &HostServices {
        &self.services
    }
    /// The HTTP client behind `http.*`.
    pub fn http(mut self, http: Arc<dyn HttpClient>) -> Self {
        self.services = self.services.http(http);
        self
    }
    /// The runner behind `process.run`.
    pub fn process(mut self, process: Arc<dyn ProcessRunner>) -> Self {
        self.services = self.services.process(process);
        self
    }
    /// Who answers inquiries.
    pub fn inquirer(mut self, inquirer: Arc<dyn Inquirer>) -> Self {
        self.services = self.services.inquirer(inquirer);
        self
    }
    /// The host environment (filtered by each tool's policy).
    pub fn env(mut self, env: BTreeMap<String, String>) -> Self {
        self.services = self.services.env(env);
        self
    }
    /// The home directory, so `~/…` sensitive paths apply when the workspace contains it.
    pub fn home(mut self, home: Option<PathBuf>) -> Self {
        self.services = self.services.home(home);
        self
    }
    /// Enforce the OS sandbox (default) or run without it.
    pub fn sandbox(mut self, mode: SandboxMode) -> Self {
        self.sandbox = mode;
        self
    }
    /// Limits.
    pub fn options(mut self, options: VfsOptions) -> Self {
        self.services.max_line = options.max_line;
        self.options = options;
        self
    }
    /// Where every policy decision is reported (`--trace`, logs).
    pub fn trace(mut self, events: Arc<dyn DispatchEvents>) -> Self {
        self.services.trace = Some(events);
        self
    }

    /// Run the tool once with `init` and serve it until it ends. Without a `sandbox` or `access`
    /// table the tool gets the D11 default policy (workspace read-only).
    pub async fn run(
        &self,
        call: ToolCall,
        config: &ToolConfig,
        action: Option<&str>,
    ) -> Result<ExecutionOutcome, RuntimeError> {
        self.run_with_default(call, config, action, AccessPolicy::vfs_default()).await
    }

    /// [`run`](Self::run) with another policy for a tool without a `sandbox` or `access` table
    /// (builtin tools that write have a writable default).
    pub async fn run_with_default(
        &self,
        call: ToolCall,
        config: &ToolConfig,
        action: Option<&str>,
        default_policy: AccessPolicy,
    ) -> Result<ExecutionOutcome, RuntimeError> {
        let mut conversation = self.start(&call, config, action, default_policy)?;
        let cancel = call.cancel.clone();
        // Served on a runtime worker rather than on the caller's thread (`jp` drives its main
        // future with `block_on`): the pipe's readiness then wakes the serving task on the
        // worker that saw it, instead of a hop to the caller's thread for every line. Dropping
        // this future aborts the task, and the conversation's group guard kills the tool.
        let mut task = AbortOnDrop(tokio::spawn(async move {
            let step = conversation.serve(&cancel, false).await;
            conversation.end(step).await
        }));
        match (&mut task.0).await {
            Ok(outcome) => outcome,
            Err(e) => Err(RuntimeError::Protocol {
                tool: call.name.clone(),
                message: format!("serving the tool failed: {e}"),
            }),
        }
    }

    /// Start a stateful tool (RFD 009 / D11 "stateful VFS tools"): the process stays alive,
    /// served in the background, until it stops or the handle is aborted or dropped. Returns the
    /// tool's first state and, unless that state is `stopped`, a handle for the registry whose
    /// `fetch` and `apply` wait up to `wait` for the next state.
    pub async fn spawn_stateful(
        &self,
        call: ToolCall,
        config: &ToolConfig,
        default_policy: AccessPolicy,
        wait: Duration,
    ) -> Result<(ToolState, Option<VfsHandle>), RuntimeError> {
        let mut conversation = self.start(&call, config, Some("spawn"), default_policy)?;
        match conversation.serve(&call.cancel, true).await {
            Halt::State(state) => Ok((state.clone(), Some(VfsHandle::start(conversation, state, wait)))),
            step => Ok((stopped(conversation.end(step).await), None)),
        }
    }

    /// Spawn the tool under the sandbox, send `init`, and start serving its requests.
    fn start(
        &self,
        call: &ToolCall,
        config: &ToolConfig,
        action: Option<&str>,
        default_policy: AccessPolicy,
    ) -> Result<VfsConversation, RuntimeError> {
        let name = call.name.clone();
        let command = config.command.as_deref().ok_or_else(|| RuntimeError::NoCommand { tool: name.clone() })?;
        let ws = &self.services.workspace;
        let cmd = ProgramLine::parse(command, ws, self.services.env.get("PATH").map(String::as_str))?;
        let policy = self.services.policy(call, config, default_policy)?;
        let sandbox = match self.sandbox {
            SandboxMode::Enforce => {
                let spec = SandboxSpec::for_tool(&cmd.program, &cmd.script_files, &configured_read_paths(ws, config)?);
                Some(spec.prepare().map_err(|e| RuntimeError::Sandbox(e.to_string()))?)
            }
            SandboxMode::Disabled => None,
        };
        // An empty environment, in `/`, in its own process group; without fork (see `sandbox`).
        let mut child = ChildCommand::new(&cmd.program).args(&cmd.args).spawn(sandbox).map_err(|e| {
            RuntimeError::Spawn { tool: name.clone(), message: format!("{}: {e}", cmd.program.display()) }
        })?;
        let pgid = child.id();
        let guard = GroupGuard(pgid);

        let (stdin, stdout, stderr) = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(i), Some(o), Some(e)) => (i, o, e),
            _ => return Err(RuntimeError::Spawn { tool: name, message: "pipes were not created".into() }),
        };

        let init = ProtocolNotification::Init(InitParams {
            tool: InitTool {
                name: name.clone(),
                arguments: call.arguments.clone(),
                answers: call.answers.clone(),
                options: config.options.clone(),
                action: action.map(str::to_owned),
            },
            protocol_version: PROTOCOL_VERSION.into(),
        });
        let dispatcher = Arc::new(self.services.dispatcher(call, policy));
        Ok(VfsConversation::start(Spawned {
            name,
            call_id: call.id.clone(),
            opts: self.options,
            child,
            pgid,
            guard,
            stdin,
            stdout,
            stderr,
            init,
            dispatcher,
            trace: self.services.trace.clone(),
        }))
    }
}

impl ToolRuntime for VfsRuntime {
    fn execute<'a>(&'a self, call: ToolCall, config: &'a ToolConfig) -> Execution<'a> {
        Box::pin(self.run(call, config, None))
    }
}

/// A spawned task that is aborted when its handle is dropped (the caller gave up on it).
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
