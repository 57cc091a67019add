//! [`StdioRuntime`]: legacy local tools (RFD D10's default runtime) under the OS sandbox.
//!
//! The tool gets a JSON context on stdin —
//! `{"tool":{"name","arguments","answers","options"},"action":"run"|"schema","root":"/abs/workspace"}`
//! — runs with the workspace as its working directory, and answers on stdout with an `Outcome` /
//! `ToolState` JSON, a `{"content":[…]}` object (RFD 058), or plain text. Unlike a VFS tool it
//! touches the workspace directly, so the OS sandbox grants it the workspace as a whole per its
//! policy (RFD 075 default: read-write), a private temporary directory (`HOME` and `TMPDIR`), the
//! system directories and its own program — and no network, unless its policy allows some URLs:
//! then a network namespace of its own whose only way out is jp's egress proxy
//! ([`crate::egress`]), each connection decided per host and port and traced. A policy the kernel
//! cannot hold a direct-access tool to (rules below the workspace root, network rules finer than
//! their origin) fails closed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use jp_core::host::EgressGate;
use jp_core::runtime::{Execution, ExecutionOutcome, RuntimeError, ToolCall, ToolConfig, ToolRuntime};
use jp_core::state::{Printed, ToolResult, ToolState};
use rustix::process::Signal;
use serde_json::json;
use tokio::io::AsyncWriteExt;

use crate::process::{GroupGuard, private_env, read_capped, signal_group};
use crate::runtime::services::{HostServices, NoFiles};
use crate::runtime::tail::StderrTail;
use crate::runtime::vfs::ProgramLine;
use crate::sandbox::{ChildCommand, DirectAccess, SandboxMode, SandboxSpec, configured_read_paths};

/// Runs `runtime = "stdio"` tools (the default for local tools).
#[derive(Clone)]
pub struct StdioRuntime {
    /// The workspace, the host environment, who answers the inquiries of a tool's connections
    /// (unless the call brings its own) and where their decisions are reported. A stdio tool
    /// makes no protocol requests, so the files behind them are never asked.
    services: HostServices,
    sandbox: SandboxMode,
    timeout: Duration,
    cancel_grace: Duration,
    max_output: usize,
    max_stderr: usize,
}

impl StdioRuntime {
    /// A runtime whose tools work in `workspace`, with no environment and every inquiry denied.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self::with_services(HostServices::new(Arc::new(NoFiles::DIRECT), workspace))
    }
    /// A runtime built from the host's services.
    pub fn with_services(services: HostServices) -> Self {
        Self {
            services,
            sandbox: SandboxMode::Enforce,
            timeout: Duration::from_secs(60),
            cancel_grace: Duration::from_secs(5),
            max_output: jp_core::protocol::DEFAULT_MAX_CONTENT,
            max_stderr: 64 * 1024,
        }
    }
    /// Enforce the OS sandbox (default) or run without it.
    pub fn sandbox(mut self, mode: SandboxMode) -> Self {
        self.sandbox = mode;
        self
    }
    /// How long one call may take (default 60 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Run the tool once. `action` is `None` for a call, `Some("schema")` to ask it to describe
    /// itself (D06; the raw stdout is the result).
    pub async fn run(
        &self,
        call: ToolCall,
        config: &ToolConfig,
        action: Option<&str>,
    ) -> Result<ExecutionOutcome, RuntimeError> {
        let name = call.name.clone();
        let command = config.command.as_deref().ok_or_else(|| RuntimeError::NoCommand { tool: name.clone() })?;
        let services = &self.services;
        let cmd = ProgramLine::parse(command, &services.workspace, services.env.get("PATH").map(String::as_str))?;
        let policy = services.policy(&call, config, jp_core::runtime::default_policy(&name, config, false))?;
        let workspace = std::fs::canonicalize(&services.workspace).map_err(|e| RuntimeError::Spawn {
            tool: name.clone(),
            message: format!("workspace {}: {e}", services.workspace.display()),
        })?;
        let scratch = tempfile::Builder::new().prefix("jp-stdio-").tempdir().map_err(|e| RuntimeError::Spawn {
            tool: name.clone(),
            message: format!("cannot create the tool's temporary directory: {e}"),
        })?;

        let mut env = private_env(&services.env, |k| policy.check_env(k).is_allow(), scratch.path());
        // A bound secret is never in its environment: a placeholder is (see `egress::secrets`).
        let who = format!("stdio tool '{name}'");
        let os_sandbox = !matches!(self.sandbox, SandboxMode::Disabled);
        let broker = crate::egress::SecretBroker::for_process(
            &policy,
            &services.env,
            &who,
            os_sandbox,
            scratch.path(),
            &mut env,
        )
        .map_err(RuntimeError::Sandbox)?;

        let mut network = false;
        let sandbox = match self.sandbox {
            SandboxMode::Enforce => {
                let grant = policy.workspace_grant().map_err(|why| {
                    RuntimeError::Sandbox(format!(
                        "stdio tool '{name}' was not started: the OS sandbox grants a direct-access tool the whole workspace or nothing, and its policy cannot be held that way: {why}. Give the tool `runtime = \"vfs\"` (every request is then checked against the rules) or make its policy cover the whole workspace"
                    ))
                })?;
                network = policy.network_grant().map_err(|why| {
                    RuntimeError::Sandbox(format!(
                        "stdio tool '{name}' was not started: a tool that reaches the network itself is held per host and port (through jp's egress proxy), and its network rules cannot be held that way: {why}"
                    ))
                })? || crate::learning::network_seen();
                let spec = SandboxSpec::for_tool(
                    &cmd.program,
                    &cmd.script_files,
                    &configured_read_paths(&services.workspace, config)?,
                )
                .direct_access(&DirectAccess {
                    workspace: &workspace,
                    grant,
                    exec_workspace: false,
                    scratch: scratch.path(),
                    system_config: false,
                    network,
                    policy: &policy,
                });
                if network {
                    env = crate::egress::with_proxy_env(env);
                }
                Some(spec.prepare().map_err(|e| RuntimeError::Sandbox(format!("stdio tool '{name}': {e}")))?)
            }
            SandboxMode::Disabled => None,
        };
        // In its own process group, without fork (see `sandbox`).
        let mut child =
            ChildCommand::new(&cmd.program).args(&cmd.args).envs(&env).current_dir(&workspace).spawn(sandbox).map_err(
                |e| RuntimeError::Spawn { tool: name.clone(), message: format!("{}: {e}", cmd.program.display()) },
            )?;
        let pgid = child.id();
        // Dropped after the group is killed (declared before its guard).
        let _egress = child.egress.take().filter(|_| network).map(|listener| {
            let inquirer = crate::learning::inquirer_for(call.inquirer.as_ref(), &services.inquirer);
            let gate = EgressGate::new(name.clone(), policy.clone(), inquirer, services.trace.clone(), Arc::default());
            crate::egress::serve(listener, Arc::new(gate), crate::egress::EgressLimits::default(), broker.clone())
        });
        let _guard = GroupGuard(pgid);
        let (mut stdin, stdout, stderr) = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(i), Some(o), Some(e)) => (i, o, e),
            _ => return Err(RuntimeError::Spawn { tool: name, message: "pipes were not created".into() }),
        };

        let context = json!({
            "tool": {
                "name": name,
                "arguments": call.arguments,
                "answers": call.answers,
                "options": config.options,
            },
            "action": action.unwrap_or("run"),
            "root": workspace.to_string_lossy(),
        });
        let input = format!("{context}\n").into_bytes();
        let writer = tokio::spawn(async move {
            // A tool that does not read its context just gets a closed pipe.
            let _ = stdin.write_all(&input).await;
        });
        let max_output = self.max_output;
        let out_task = tokio::spawn(read_capped(stdout, max_output));
        let tail = StderrTail::new(self.max_stderr);
        let err_task = {
            let tail = tail.clone();
            tokio::spawn(async move {
                tail.read_from(stderr).await;
                tail.text()
            })
        };

        let status = tokio::select! {
            s = child.wait() => s.ok(),
            () = call.cancel.cancelled() => {
                signal_group(pgid, Signal::TERM);
                if tokio::time::timeout(self.cancel_grace, child.wait()).await.is_err() {
                    signal_group(pgid, Signal::KILL);
                }
                writer.abort();
                return Ok(ExecutionOutcome::Cancelled { id: call.id });
            }
            () = tokio::time::sleep(self.timeout) => {
                signal_group(pgid, Signal::KILL);
                writer.abort();
                return Err(RuntimeError::Timeout { tool: name, seconds: self.timeout.as_secs() });
            }
        };
        // Whatever the tool left running dies with it, so its pipes close.
        signal_group(pgid, Signal::KILL);
        writer.abort();
        let stdout = match tokio::time::timeout(Duration::from_secs(5), out_task).await {
            Ok(Ok(Ok(Ok(bytes)))) => bytes,
            Ok(Ok(Ok(Err(total)))) => {
                return Ok(ExecutionOutcome::failed(
                    &call.id,
                    format!(
                        "tool '{name}' wrote {total} bytes or more to stdout, over the {max_output}-byte limit; have it write less, or put a large result in a file of the workspace"
                    ),
                ));
            }
            _ => Vec::new(),
        };
        let stderr = tokio::time::timeout(Duration::from_secs(2), err_task).await.ok().and_then(Result::ok);
        let stderr = stderr.unwrap_or_default();
        let stdout = String::from_utf8_lossy(&stdout).into_owned();
        let code = status.and_then(|s| s.code());
        if code != Some(0) {
            let how = code.map_or_else(|| "was killed by a signal".to_owned(), |c| format!("exited with status {c}"));
            let mut message = format!("tool '{name}' {how}");
            for (label, text) in [("stdout", stdout.trim()), ("stderr", stderr.as_str())] {
                if !text.is_empty() {
                    message.push_str(&format!("; {label}:\n{text}"));
                }
            }
            return Ok(ExecutionOutcome::failed(&call.id, message));
        }
        if action.is_some() {
            return Ok(ExecutionOutcome::Completed { id: call.id, result: Ok(ToolResult::text(stdout)) });
        }
        Ok(match ToolResult::parse_stdout(&stdout) {
            Printed::Result(result) => ExecutionOutcome::Completed { id: call.id, result },
            Printed::State(ToolState::Stopped { result }) => {
                ExecutionOutcome::Completed { id: call.id, result: result.map(ToolResult::text) }
            }
            Printed::State(ToolState::Waiting { question, .. }) => {
                ExecutionOutcome::NeedsInput { id: call.id, question }
            }
            Printed::State(ToolState::Running { content }) => {
                ExecutionOutcome::Completed { id: call.id, result: Ok(ToolResult::text(content.unwrap_or_default())) }
            }
        })
    }
}

impl std::fmt::Debug for StdioRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioRuntime").field("workspace", &self.services.workspace).finish_non_exhaustive()
    }
}

impl ToolRuntime for StdioRuntime {
    fn execute<'a>(&'a self, call: ToolCall, config: &'a ToolConfig) -> Execution<'a> {
        Box::pin(self.run(call, config, None))
    }
}
