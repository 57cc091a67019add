//! [`VfsRuntime`]: RFD D11's runtime. A tool is an ordinary program started under the OS sandbox;
//! everything it needs from the host it asks for on stdout, and the core [`Dispatcher`] answers on
//! its stdin.
//!
//! Reading the tool's stdout, serving its requests and writing to its stdin run concurrently (the
//! reader loop, a dispatch task and a writer task), so neither side can block the other at any
//! message size up to the cap, even when the tool is slow to read. The host gives up on a tool
//! that sends nothing for the request timeout (default 60 s, not counted while a request of the
//! tool is being served), that floods it with malformed messages, or that stops reading its
//! stdin. Cancellation sends `cancel`, then `SIGTERM` after 5 s, then `SIGKILL`; at the end the
//! tool's whole process group is killed, so nothing it started survives the call.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jp_core::BoxFuture;
use jp_core::cancel::CancellationToken;
use jp_core::files::ProjectFiles;
use jp_core::handles::{AnyToolHandle, ApplyInput};
use jp_core::host::{
    DenyInquirer, DispatchEvents, Dispatcher, HostError, HttpClient, Inquirer, ProcessRunner, TraceEvent, Unavailable,
};
use jp_core::policy::AccessPolicy;
use jp_core::protocol::{
    ApplyParams, DEFAULT_MAX_LINE, Id, InitParams, InitTool, LineDecoder, Message, PROTOCOL_VERSION, PendingParams,
    ProtocolNotification, Response, decode_frame, encode_message,
};
use jp_core::runtime::{ExecutionOutcome, RuntimeError, ToolCall, ToolConfig, ToolRuntime};
use jp_core::state::{ToolError, ToolResult, ToolState};
use rustix::process::Signal;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{Notify, mpsc};

use crate::process::{GroupGuard, find_program, signal_group};
use crate::sandbox::{SandboxMode, SandboxSpec, configured_read_paths};

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
pub struct ToolCommand {
    /// Absolute path of the program.
    pub program: PathBuf,
    /// Arguments.
    pub args: Vec<String>,
    /// Existing files among the arguments (read + execute in the sandbox).
    pub script_files: Vec<PathBuf>,
}

impl ToolCommand {
    /// Parse a `command` string (shell words) relative to `base` (the workspace root), finding
    /// the program on `path_var` when it has no `/`.
    pub fn parse(command: &str, base: &Path, path_var: Option<&str>) -> Result<Self, RuntimeError> {
        let words = shlex::split(command)
            .ok_or_else(|| RuntimeError::Config(format!("`command` {command:?} has unbalanced quotes")))?;
        let (first, rest) = words
            .split_first()
            .ok_or_else(|| RuntimeError::Config("`command` is empty; name the program to run".into()))?;
        let program = find_program(first, path_var, base).ok_or_else(|| {
            RuntimeError::Config(format!(
                "program {first:?} of `command` was not found (looked on PATH and relative to {})",
                base.display()
            ))
        })?;
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
    files: Arc<dyn ProjectFiles>,
    workspace: PathBuf,
    http: Arc<dyn HttpClient>,
    process: Arc<dyn ProcessRunner>,
    inquirer: Arc<dyn Inquirer>,
    env: BTreeMap<String, String>,
    sandbox: SandboxMode,
    options: VfsOptions,
    trace: Option<Arc<dyn DispatchEvents>>,
    home: Option<PathBuf>,
}

impl std::fmt::Debug for VfsRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VfsRuntime")
            .field("workspace", &self.workspace)
            .field("sandbox", &self.sandbox)
            .finish_non_exhaustive()
    }
}

impl VfsRuntime {
    /// A runtime serving `files`, whose real root (for relative commands and the home check) is
    /// `workspace`. HTTP and processes are unavailable and inquiries denied until configured.
    pub fn new(files: Arc<dyn ProjectFiles>, workspace: impl Into<PathBuf>) -> Self {
        Self {
            files,
            workspace: workspace.into(),
            http: Arc::new(Unavailable::no_http()),
            process: Arc::new(Unavailable::no_process()),
            inquirer: Arc::new(DenyInquirer),
            env: BTreeMap::new(),
            sandbox: SandboxMode::Enforce,
            options: VfsOptions::default(),
            trace: None,
            home: None,
        }
    }
    /// The HTTP client behind `http.*`.
    pub fn http(mut self, http: Arc<dyn HttpClient>) -> Self {
        self.http = http;
        self
    }
    /// The runner behind `process.run`.
    pub fn process(mut self, process: Arc<dyn ProcessRunner>) -> Self {
        self.process = process;
        self
    }
    /// Who answers inquiries.
    pub fn inquirer(mut self, inquirer: Arc<dyn Inquirer>) -> Self {
        self.inquirer = inquirer;
        self
    }
    /// The host environment (filtered by each tool's policy).
    pub fn env(mut self, env: BTreeMap<String, String>) -> Self {
        self.env = env;
        self
    }
    /// The home directory, so `~/…` sensitive paths apply when the workspace contains it.
    pub fn home(mut self, home: Option<PathBuf>) -> Self {
        self.home = home;
        self
    }
    /// Enforce the OS sandbox (default) or run without it.
    pub fn sandbox(mut self, mode: SandboxMode) -> Self {
        self.sandbox = mode;
        self
    }
    /// Limits.
    pub fn options(mut self, options: VfsOptions) -> Self {
        self.options = options;
        self
    }
    /// Where every policy decision is reported (`--trace`, logs).
    pub fn trace(mut self, events: Arc<dyn DispatchEvents>) -> Self {
        self.trace = Some(events);
        self
    }

    fn policy(&self, config: &ToolConfig, default: AccessPolicy) -> Result<AccessPolicy, RuntimeError> {
        let mut policy = config.policy(default).map_err(|e| RuntimeError::Config(e.to_string()))?;
        if let (Some(home), Ok(ws)) = (&self.home, std::fs::canonicalize(&self.workspace)) {
            policy.set_home(&ws.to_string_lossy(), &home.to_string_lossy());
        }
        Ok(policy)
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
    /// (first-party tools that write have a writable default).
    pub async fn run_with_default(
        &self,
        call: ToolCall,
        config: &ToolConfig,
        action: Option<&str>,
        default_policy: AccessPolicy,
    ) -> Result<ExecutionOutcome, RuntimeError> {
        let mut session = self.start(&call, config, action, default_policy)?;
        let step = session.serve(&call.cancel, false).await;
        session.end(step).await
    }

    /// Start a stateful tool (RFD 009 / D11 "stateful VFS tools"): the process stays alive
    /// across `apply` cycles. Returns the tool's first state and, unless that state is
    /// `stopped`, a handle for the registry (`fetch`, `apply`, `abort`).
    pub async fn spawn_stateful(
        &self,
        call: ToolCall,
        config: &ToolConfig,
        default_policy: AccessPolicy,
    ) -> Result<(ToolState, Option<VfsHandle>), RuntimeError> {
        let mut session = self.start(&call, config, None, default_policy)?;
        match session.serve(&call.cancel, true).await {
            Step::State(state) => {
                Ok((state.clone(), Some(VfsHandle { session: Some(session), state, cancel: call.cancel })))
            }
            step => Ok((stopped(session.end(step).await), None)),
        }
    }

    /// Spawn the tool under the sandbox, send `init`, and start serving its requests.
    fn start(
        &self,
        call: &ToolCall,
        config: &ToolConfig,
        action: Option<&str>,
        default_policy: AccessPolicy,
    ) -> Result<Session, RuntimeError> {
        let name = call.name.clone();
        let command =
            config.command.as_deref().ok_or_else(|| RuntimeError::Config(format!("tool '{name}' has no `command`")))?;
        let cmd = ToolCommand::parse(command, &self.workspace, self.env.get("PATH").map(String::as_str))?;
        let policy = self.policy(config, default_policy)?;
        let mut child_cmd = tokio::process::Command::new(&cmd.program);
        child_cmd
            .args(&cmd.args)
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        match self.sandbox {
            SandboxMode::Enforce => {
                let spec = SandboxSpec::for_tool(
                    &cmd.program,
                    &cmd.script_files,
                    &configured_read_paths(&self.workspace, config)?,
                );
                let prepared = spec.prepare().map_err(|e| RuntimeError::Sandbox(e.to_string()))?;
                Arc::new(prepared).install(&mut child_cmd);
            }
            SandboxMode::Disabled => {
                child_cmd.process_group(0);
            }
        }
        let mut child = child_cmd.spawn().map_err(|e| RuntimeError::Spawn {
            tool: name.clone(),
            message: format!("{}: {e}", cmd.program.display()),
        })?;
        let pgid = child.id().unwrap_or(0);
        let guard = GroupGuard(pgid);

        let (stdin, stdout, stderr) = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(i), Some(o), Some(e)) => (i, o, e),
            _ => return Err(RuntimeError::Spawn { tool: name, message: "pipes were not created".into() }),
        };

        // Writer: one task owns the tool's stdin.
        let pending_bytes = Arc::new(AtomicUsize::new(0));
        let (write_tx, mut write_rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let writer_pending = pending_bytes.clone();
        let writer = tokio::spawn(async move {
            let mut stdin = stdin;
            while let Some(line) = write_rx.recv().await {
                let len = line.len();
                let ok = stdin.write_all(&line).await.is_ok() && stdin.flush().await.is_ok();
                writer_pending.fetch_sub(len, Ordering::SeqCst);
                if !ok {
                    break;
                }
            }
        });
        let out = Outbox { tx: write_tx, pending: pending_bytes.clone() };

        // Stderr: keep the tail.
        let max_stderr = self.options.max_stderr;
        let stderr_task = tokio::spawn(async move {
            let mut stderr = stderr;
            let mut tail: Vec<u8> = Vec::new();
            let mut buf = vec![0u8; 8192];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > max_stderr {
                    tail.drain(..tail.len() - max_stderr);
                }
            }
            String::from_utf8_lossy(&tail).into_owned()
        });

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
        out.send(encode_message(&init.to_message()));

        // Dispatch: requests are served in order, one at a time, on their own task.
        let dispatcher = Arc::new(
            Dispatcher::builder(name.clone(), Arc::new(policy), self.files.clone())
                .http(self.http.clone())
                .process(self.process.clone())
                .inquirer(self.inquirer.clone())
                .env(self.env.clone())
                .max_line(self.options.max_line)
                .build(),
        );
        let events = Arc::new(RuntimeEvents { out: out.clone(), trace: self.trace.clone() });
        let in_flight = Arc::new(AtomicUsize::new(0));
        let served = Arc::new(Notify::new());
        let abandon = Arc::new(Notify::new());
        let (req_tx, mut req_rx) = mpsc::unbounded_channel::<jp_core::protocol::Request>();
        let dispatch_task = {
            let (dispatcher, events, out, in_flight, served, abandon) =
                (dispatcher.clone(), events.clone(), out.clone(), in_flight.clone(), served.clone(), abandon.clone());
            tokio::spawn(async move {
                while let Some(req) = req_rx.recv().await {
                    let response = tokio::select! {
                        r = dispatcher.handle_request(&req, events.as_ref()) => r,
                        () = abandon.notified() => Response {
                            id: Some(req.id.clone()),
                            outcome: Err(HostError::Cancelled(format!("{} was abandoned by the tool", req.method)).to_rpc()),
                        },
                    };
                    out.send(encode_message(&Message::Response(response)));
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    served.notify_one();
                }
            })
        };

        Ok(Session {
            name,
            call_id: call.id.clone(),
            opts: self.options,
            child,
            pgid,
            guard,
            out,
            writer,
            stderr_task,
            dispatch_task,
            req_tx,
            pending_bytes,
            in_flight,
            served,
            abandon,
            decoder: LineDecoder::new(self.options.max_line),
            buf: vec![0u8; 256 * 1024],
            stdout,
            malformed: 0,
            exited: None,
            eof: false,
        })
    }
}

/// Where serving a tool stopped.
enum Step {
    /// The tool's last word.
    Final(Result<ExecutionOutcome, RuntimeError>),
    /// A stateful tool's new `running` or `waiting` state; it stays alive.
    State(ToolState),
    Eof,
    Cancelled,
    Timeout,
    Misbehaved(String),
}

/// A spawned tool being served.
struct Session {
    name: String,
    call_id: String,
    opts: VfsOptions,
    child: tokio::process::Child,
    pgid: u32,
    guard: GroupGuard,
    out: Outbox,
    writer: tokio::task::JoinHandle<()>,
    stderr_task: tokio::task::JoinHandle<String>,
    dispatch_task: tokio::task::JoinHandle<()>,
    req_tx: mpsc::UnboundedSender<jp_core::protocol::Request>,
    pending_bytes: Arc<AtomicUsize>,
    in_flight: Arc<AtomicUsize>,
    served: Arc<Notify>,
    abandon: Arc<Notify>,
    decoder: LineDecoder,
    buf: Vec<u8>,
    stdout: tokio::process::ChildStdout,
    malformed: usize,
    exited: Option<std::process::ExitStatus>,
    eof: bool,
}

impl Session {
    /// Serve the tool's requests until its last word, or — when `stateful` — its next
    /// `running`/`waiting` state.
    async fn serve(&mut self, cancel: &CancellationToken, stateful: bool) -> Step {
        let opts = self.opts;
        let mut deadline = tokio::time::Instant::now() + opts.request_timeout;
        loop {
            if self.eof {
                return Step::Eof;
            }
            let busy = self.in_flight.load(Ordering::SeqCst) > 0;
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Step::Cancelled,
                status = self.child.wait(), if self.exited.is_none() => {
                    self.exited = status.ok();
                    // Whatever the tool left behind dies now, so its pipes close and we reach EOF.
                    signal_group(self.pgid, Signal::KILL);
                }
                () = self.served.notified() => {
                    deadline = tokio::time::Instant::now() + opts.request_timeout;
                }
                () = tokio::time::sleep_until(deadline), if !busy => return Step::Timeout,
                read = self.stdout.read(&mut self.buf) => {
                    let n: usize = read.unwrap_or_default();
                    let mut frames = self.decoder.push(&self.buf[..n]);
                    if n == 0 {
                        frames.extend(self.decoder.finish());
                        self.eof = true;
                    }
                    for frame in frames {
                        if self.pending_bytes.load(Ordering::SeqCst) > opts.max_line.saturating_mul(4) {
                            return Step::Misbehaved("it stopped reading its stdin while sending requests".into());
                        }
                        match decode_frame(&frame, opts.max_line) {
                            Err((id, e)) => {
                                self.malformed += 1;
                                self.out.send(encode_message(&Message::Response(Response { id, outcome: Err(e) })));
                                if self.malformed >= opts.max_malformed {
                                    return Step::Misbehaved(format!("it sent {} malformed messages; it does not speak the VFS protocol", self.malformed));
                                }
                            }
                            Ok(Message::Request(req)) => {
                                deadline = tokio::time::Instant::now() + opts.request_timeout;
                                self.in_flight.fetch_add(1, Ordering::SeqCst);
                                let _ = self.req_tx.send(req);
                            }
                            Ok(Message::Notification(n)) => {
                                deadline = tokio::time::Instant::now() + opts.request_timeout;
                                let id = self.call_id.clone();
                                match ProtocolNotification::parse(&n.method, n.params) {
                                    Ok(ProtocolNotification::Result(r)) => {
                                        return Step::Final(Ok(ExecutionOutcome::Completed { id, result: Ok(r) }));
                                    }
                                    Ok(ProtocolNotification::Error(e)) => {
                                        return Step::Final(Ok(ExecutionOutcome::Completed { id, result: Err(e) }));
                                    }
                                    Ok(ProtocolNotification::State(ToolState::Stopped { result })) => {
                                        return Step::Final(Ok(ExecutionOutcome::Completed { id, result: result.map(ToolResult::text) }));
                                    }
                                    Ok(ProtocolNotification::State(state)) if stateful => return Step::State(state),
                                    Ok(ProtocolNotification::State(ToolState::Waiting { question, .. })) => {
                                        return Step::Final(Ok(ExecutionOutcome::NeedsInput { id, question }));
                                    }
                                    Ok(ProtocolNotification::Cancel) => self.abandon.notify_one(),
                                    // Progress of a stateful tool in a one-shot call, or
                                    // notifications that only the host sends: nothing to do.
                                    Ok(_) | Err(_) => {}
                                }
                            }
                            Ok(Message::Response(_)) => {}
                        }
                    }
                }
            }
        }
    }

    /// Wind down after `step`: stop serving, close stdin, make sure the group is gone, and say
    /// how the call ended.
    async fn end(mut self, step: Step) -> Result<ExecutionOutcome, RuntimeError> {
        self.dispatch_task.abort();
        let (name, pgid) = (self.name.clone(), self.pgid);
        let result = match step {
            Step::Final(outcome) => {
                // The tool said its last word; it should exit by itself.
                self.stop(false).await;
                outcome
            }
            Step::State(_) | Step::Cancelled => {
                self.stop(true).await;
                Ok(ExecutionOutcome::Cancelled { id: self.call_id.clone() })
            }
            Step::Timeout => {
                signal_group(pgid, Signal::KILL);
                Err(RuntimeError::Timeout { tool: name, seconds: self.opts.request_timeout.as_secs() })
            }
            Step::Misbehaved(why) => {
                signal_group(pgid, Signal::KILL);
                let tail = tail_of(self.stderr_task, pgid).await;
                return Err(RuntimeError::Protocol {
                    tool: name,
                    message: with_tail(format!("it was stopped because {why}"), &tail),
                });
            }
            Step::Eof => {
                let status = match self.exited {
                    Some(s) => Some(s),
                    None => {
                        tokio::time::timeout(self.opts.cancel_grace, self.child.wait()).await.ok().and_then(Result::ok)
                    }
                };
                signal_group(pgid, Signal::KILL);
                let tail = tail_of(self.stderr_task, pgid).await;
                let how = match status.and_then(|s| s.code()) {
                    Some(code) => format!("exited with status {code}"),
                    None => "was killed by a signal".to_owned(),
                };
                drop(self.guard);
                return Ok(ExecutionOutcome::Completed {
                    id: self.call_id,
                    result: Err(ToolError {
                        message: with_tail(format!("tool '{name}' {how} without sending a result or error"), &tail),
                        trace: Vec::new(),
                        transient: false,
                    }),
                });
            }
        };
        drop(self.out);
        drop(self.req_tx);
        self.writer.abort();
        drop(self.guard);
        let _ = tokio::time::timeout(Duration::from_secs(1), self.stderr_task).await;
        result
    }

    /// Stop a tool that is done or cancelled: wait for it to exit by itself (after sending
    /// `cancel` when cancelling), then `SIGTERM`, then `SIGKILL` — always ending with the group
    /// killed.
    async fn stop(&mut self, cancel: bool) {
        let grace = self.opts.cancel_grace;
        if cancel {
            self.out.send(encode_message(&ProtocolNotification::Cancel.to_message()));
        }
        if tokio::time::timeout(grace, self.child.wait()).await.is_err() {
            signal_group(self.pgid, Signal::TERM);
            if tokio::time::timeout(grace, self.child.wait()).await.is_err() {
                signal_group(self.pgid, Signal::KILL);
                let _ = self.child.wait().await;
            }
        }
        signal_group(self.pgid, Signal::KILL);
    }
}

/// The terminal state for how a stateful call ended.
fn stopped(outcome: Result<ExecutionOutcome, RuntimeError>) -> ToolState {
    let result = match outcome {
        Ok(ExecutionOutcome::Completed { result: Ok(r), .. }) => Ok(r.to_text()),
        Ok(ExecutionOutcome::Completed { result: Err(e), .. }) => Err(e),
        Ok(ExecutionOutcome::NeedsInput { question, .. }) => {
            Err(ToolError::new(format!("the tool stopped with an unanswered question: {}", question.text)))
        }
        Ok(ExecutionOutcome::Cancelled { .. }) => Err(ToolError::new("the tool was cancelled")),
        Err(e) => Err(ToolError::new(e.to_string())),
    };
    ToolState::Stopped { result }
}

/// A stateful VFS tool kept alive between `apply` calls (for the RFD 009 handle registry).
pub struct VfsHandle {
    session: Option<Session>,
    state: ToolState,
    cancel: CancellationToken,
}

impl std::fmt::Debug for VfsHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VfsHandle").field("state", &self.state).finish_non_exhaustive()
    }
}

impl VfsHandle {
    /// Whether the process is still alive (the last state was not `stopped`).
    pub fn is_live(&self) -> bool {
        self.session.is_some()
    }

    async fn apply_input(&mut self, input: ApplyInput) -> Result<ToolState, ToolError> {
        let Some(mut session) = self.session.take() else {
            return Err(ToolError::new("the tool has stopped; start it again to give it more input"));
        };
        let input = match input {
            ApplyInput::Data(v) => v,
            ApplyInput::Answer { value, .. } => value,
        };
        let apply = ProtocolNotification::Apply(ApplyParams { input });
        session.out.send(encode_message(&apply.to_message()));
        match session.serve(&self.cancel, true).await {
            Step::State(state) => {
                self.session = Some(session);
                self.state = state;
            }
            step => self.state = stopped(session.end(step).await),
        }
        Ok(self.state.clone())
    }
}

impl AnyToolHandle for VfsHandle {
    fn fetch(&mut self) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        Box::pin(async move { Ok(self.state.clone()) })
    }

    fn apply(&mut self, input: ApplyInput) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        Box::pin(self.apply_input(input))
    }

    fn abort(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(session) = self.session.take() {
                let _ = session.end(Step::Cancelled).await;
                self.state = ToolState::Stopped { result: Err(ToolError::new("the tool was aborted")) };
            }
        })
    }
}

async fn tail_of(task: tokio::task::JoinHandle<String>, pgid: u32) -> String {
    signal_group(pgid, Signal::KILL);
    tokio::time::timeout(Duration::from_secs(2), task).await.ok().and_then(Result::ok).unwrap_or_default()
}

fn with_tail(message: String, tail: &str) -> String {
    let tail = tail.trim();
    if tail.is_empty() { message } else { format!("{message}; stderr ends with:\n{tail}") }
}

/// Lines for the tool's stdin, with a count of bytes not yet written.
#[derive(Clone)]
struct Outbox {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    pending: Arc<AtomicUsize>,
}

impl Outbox {
    fn send(&self, line: Vec<u8>) {
        self.pending.fetch_add(line.len(), Ordering::SeqCst);
        if self.tx.send(line).is_err() {
            self.pending.store(0, Ordering::SeqCst);
        }
    }
}

/// Sends `pending` to the tool and forwards decisions to the trace.
struct RuntimeEvents {
    out: Outbox,
    trace: Option<Arc<dyn DispatchEvents>>,
}

impl DispatchEvents for RuntimeEvents {
    fn pending(&self, request_id: &Id, reason: &str) {
        let n =
            ProtocolNotification::Pending(PendingParams { request_id: request_id.clone(), reason: reason.to_owned() });
        self.out.send(encode_message(&n.to_message()));
        if let Some(t) = &self.trace {
            t.pending(request_id, reason);
        }
    }
    fn decided(&self, event: &TraceEvent) {
        if let Some(t) = &self.trace {
            t.decided(event);
        }
    }
}

impl ToolRuntime for VfsRuntime {
    fn kind(&self) -> &'static str {
        "vfs"
    }

    fn execute<'a>(
        &'a self,
        call: ToolCall,
        config: &'a ToolConfig,
    ) -> BoxFuture<'a, Result<ExecutionOutcome, RuntimeError>> {
        Box::pin(self.run(call, config, None))
    }
}
