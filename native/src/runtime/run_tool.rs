//! The builtin stateful tool `run` — RFD 009's long-running command. `spawn {program, args}`
//! starts a command the tool's `commands` policy allows (decided by the dispatcher, inquiries
//! included) under the same OS sandbox as `process.run`; `fetch` returns the output since the
//! last fetch (stdout and stderr interleaved as they arrive, secrets scrubbed, at most
//! [`MAX_FETCH`] bytes per fetch) and the state — `stopped` with the exit code once it has ended
//! and everything was read; `apply {input}` writes the input to its stdin (`null` closes stdin);
//! `abort` kills its process group. Its default policy allows no command: the user grants them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jp_core::BoxFuture;
use jp_core::cancel::CancellationToken;
use jp_core::handles::{AnyToolHandle, ApplyInput};
use jp_core::host::{DispatchEvents, NoEvents};
use jp_core::policy::Scrubber;
use jp_core::protocol::{Id, ProcessRunParams};
use jp_core::runtime::{Execution, RuntimeError, SpawnResult, ToolCall, ToolConfig, ToolRuntime};
use jp_core::schema::StatefulAction;
use jp_core::state::{ToolError, ToolState};
use rustix::process::Signal;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;

use crate::process::{GroupGuard, Started, TokioProcessRunner, signal_group};
use crate::runtime::services::HostServices;

/// The tool's name.
pub const RUN: &str = "run";

/// Most output returned by one `fetch`; the rest waits for the next.
pub const MAX_FETCH: usize = 64 * 1024;

/// Most output kept unread; beyond it the oldest is dropped (and the fetch says how much).
pub const MAX_UNREAD: usize = 4 * 1024 * 1024;

/// How long a command has after SIGTERM before SIGKILL, on abort.
const ABORT_GRACE: Duration = Duration::from_secs(2);

/// The D06 description of `run` (its spawn parameters).
pub const SUMMARY: &str = "Run a long-running command (build, tests, a server) and follow its output.";
/// Longer description.
pub const DESCRIPTION: &str = "spawn starts `program` with `args` in the project directory, under the OS sandbox, if the tool's policy allows that command; fetch returns the output printed since the last fetch and whether it has stopped (with its exit code); apply writes `input` to its stdin (null closes stdin); abort kills it.";
/// Parameters in the D06 / TOML shape.
pub const PARAMETERS: &str = r#"{
    "program": {"type": "string", "summary": "The program to run (allowed by the tool's `commands` policy).", "required": true},
    "args": {"type": "array", "items": {"type": "string"}, "summary": "Its arguments.", "required": false},
    "envs": {"type": "array", "items": {"type": "string"}, "summary": "Host environment variables it needs (allowed by the policy).", "required": false}
}"#;

struct Output {
    unread: Vec<u8>,
    /// Recognises the secrets in it: while the program runs, an end that could be the start of
    /// a secret is kept back, so that a secret split across two fetches is still replaced.
    scrubber: Scrubber,
    dropped: usize,
    /// The exit status once the program ended and both pipes are closed.
    ended: Option<Result<String, ToolError>>,
}

impl Output {
    /// How many unread bytes may be shown now: while the program runs, the tail that could be
    /// the start of a secret (or of a UTF-8 character) waits for the bytes that follow it.
    fn ready(&self) -> usize {
        if self.ended.is_some() {
            return self.unread.len();
        }
        let partial = self.scrubber.partial_at_end(&self.unread);
        utf8_boundary(&self.unread, self.unread.len() - partial)
    }
}

struct Shared {
    output: Mutex<Output>,
    changed: Notify,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Output> {
        self.output.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A running command.
pub struct RunHandle {
    shared: Arc<Shared>,
    stdin: Option<tokio::net::unix::pipe::Sender>,
    pgid: u32,
    stop: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
    scrubber: Scrubber,
    wait: Duration,
}

impl std::fmt::Debug for RunHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunHandle").field("pgid", &self.pgid).finish_non_exhaustive()
    }
}

/// The `run` tool as a runtime: a stateful tool whose every call is a live process
/// ([`spawn`]); a call without `action` is refused with the way to make it (`App::run_to_end`
/// runs it to its end through `spawn`).
#[derive(Debug)]
pub struct RunRuntime {
    services: HostServices,
    runner: TokioProcessRunner,
}

impl RunRuntime {
    /// `run` with its requests decided through `services`, its commands started by `runner`.
    pub fn new(services: HostServices, runner: TokioProcessRunner) -> Self {
        Self { services, runner }
    }
}

impl ToolRuntime for RunRuntime {
    fn execute<'a>(&'a self, _: ToolCall, _: &'a ToolConfig) -> Execution<'a> {
        Box::pin(async {
            Err(RuntimeError::Input(format!(
                "'{RUN}' is stateful: call it with action = \"spawn\" (then fetch, apply, abort), or run it to the end as a one-shot call"
            )))
        })
    }

    fn stateful_actions(&self, _: &str, _: &ToolConfig) -> Option<Vec<StatefulAction>> {
        Some(StatefulAction::ALL.to_vec())
    }

    fn live(&self, _: &str, _: &ToolConfig) -> bool {
        true
    }

    /// `run` starts its programs from `jp` itself (through the process runner, each under the OS
    /// sandbox), whatever `runtime` its table names: `jp __tool` does not serve it.
    fn fixed_runtime(&self) -> bool {
        true
    }

    fn spawn<'a>(&'a self, call: ToolCall, config: &'a ToolConfig, wait: Duration) -> BoxFuture<'a, SpawnResult> {
        Box::pin(async move {
            let (state, handle) = spawn(&self.services, &self.runner, &call, config, wait).await?;
            Ok((state, handle.map(|h| Box::new(h) as Box<dyn AnyToolHandle>)))
        })
    }

    fn own_schema(&self) -> Option<String> {
        let text = serde_json::json!({"tools": [{
            "name": RUN,
            "summary": SUMMARY,
            "description": DESCRIPTION,
            "parameters": serde_json::from_str::<Value>(PARAMETERS).unwrap_or_default(),
        }]});
        Some(text.to_string())
    }
}

/// Start the command `call` asks for. A command the policy refuses (or that cannot start) is a
/// `stopped` state with the reason and no handle.
pub async fn spawn(
    services: &HostServices,
    runner: &TokioProcessRunner,
    call: &ToolCall,
    config: &ToolConfig,
    wait: Duration,
) -> Result<(ToolState, Option<RunHandle>), RuntimeError> {
    let refused = |message: String| Ok((ToolState::Stopped { result: Err(ToolError::new(message)) }, None));
    let Some(program) = call.arguments.get("program").and_then(Value::as_str) else {
        return refused(
            "spawn needs `program`: the command to run, e.g. {\"program\": \"cargo\", \"args\": [\"check\"]}".into(),
        );
    };
    let strings = |key: &str| -> Vec<String> {
        call.arguments
            .get(key)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    };
    let params = ProcessRunParams { program: program.into(), args: strings("args"), envs: strings("envs") };
    let default = jp_core::runtime::default_policy(&call.name, config, false);
    let policy = services.policy(call, config, default)?;
    let dispatcher = services.dispatcher(call, policy);
    let events: &dyn DispatchEvents = match &services.trace {
        Some(t) => t.as_ref(),
        None => &NoEvents,
    };
    let request_id = Id::String(format!("{RUN}:spawn"));
    let decided = tokio::select! {
        r = dispatcher.authorize_process(&params, &request_id, events) => r,
        () = call.cancel.cancelled() => return refused("cancelled before it started".into()),
    };
    let request = match decided {
        Ok(r) => r,
        Err(e) => return refused(e.to_string()),
    };
    let Started { mut child, scratch, egress } = match runner.start(&request, true) {
        Ok(s) => s,
        Err(e) => return refused(e.to_string()),
    };
    let pgid = child.id();
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let shared = Arc::new(Shared {
        output: Mutex::new(Output {
            unread: Vec::new(),
            scrubber: dispatcher.scrubber().clone(),
            dropped: 0,
            ended: None,
        }),
        changed: Notify::new(),
    });
    let stop = CancellationToken::new();
    let task = {
        let (shared, stop) = (shared.clone(), stop.clone());
        tokio::spawn(async move {
            // Declared after the scratch directory and the proxy: the group dies before its HOME
            // is removed and its proxy stops.
            let _scratch = scratch;
            let _egress = egress;
            let guard = GroupGuard(pgid);
            let pump = |pipe: Option<tokio::net::unix::pipe::Receiver>| {
                let shared = shared.clone();
                async move {
                    let Some(mut pipe) = pipe else { return };
                    let mut buf = vec![0u8; 16 * 1024];
                    while let Ok(n) = pipe.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        let mut out = shared.lock();
                        out.unread.extend_from_slice(&buf[..n]);
                        if out.unread.len() > MAX_UNREAD {
                            // Past the cut, as many bytes again as the longest secret form: what
                            // stays never starts with the tail of a secret whose head was dropped.
                            let extra = out.scrubber.longest().saturating_sub(1);
                            let excess = (out.unread.len() - MAX_UNREAD + extra).min(out.unread.len());
                            out.unread.drain(..excess);
                            out.dropped += excess;
                        }
                        drop(out);
                        shared.changed.notify_waiters();
                    }
                }
            };
            let wait = async {
                let status = child.wait().await;
                // What it left running dies with it, so the pipes close.
                signal_group(pgid, Signal::KILL);
                status
            };
            let ran = async { tokio::join!(pump(stdout), pump(stderr), wait).2 };
            let ended = tokio::select! {
                status = ran => match status {
                    Ok(s) if s.success() => Ok("exited with code 0".to_owned()),
                    Ok(s) => Err(ToolError::new(match s.code() {
                        Some(code) => format!("exited with code {code}"),
                        None => "was killed by a signal".to_owned(),
                    })),
                    Err(e) => Err(ToolError::new(format!("waiting for it failed: {e}"))),
                },
                () = stop.cancelled() => {
                    signal_group(pgid, Signal::TERM);
                    if tokio::time::timeout(ABORT_GRACE, child.wait()).await.is_err() {
                        signal_group(pgid, Signal::KILL);
                        let _ = child.wait().await;
                    }
                    Err(ToolError::new("aborted"))
                }
            };
            drop(guard);
            shared.lock().ended = Some(ended);
            shared.changed.notify_waiters();
        })
    };
    let scrubber = dispatcher.scrubber().clone();
    let handle = RunHandle { shared, stdin, pgid, stop, task: Some(task), scrubber, wait };
    let started = format!("started {}\n", jp_core::host::command_line(program, &params.args));
    Ok((ToolState::Running { content: Some(started) }, Some(handle)))
}

impl RunHandle {
    /// Wait up to `wait` for output or the end, then take what there is.
    async fn next(&mut self) -> ToolState {
        let deadline = tokio::time::Instant::now() + self.wait;
        loop {
            let notified = self.shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let out = self.shared.lock();
                if out.ready() > 0 || out.dropped > 0 || out.ended.is_some() {
                    break;
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                break;
            }
        }
        let mut out = self.shared.lock();
        let ready = out.ready();
        if ready == 0 && out.dropped == 0 {
            return match &out.ended {
                Some(result) if out.unread.is_empty() => ToolState::Stopped { result: result.clone() },
                _ => ToolState::Running { content: None },
            };
        }
        let n = ready.min(MAX_FETCH);
        let n = if n < ready { utf8_boundary(&out.unread, n) } else { n };
        let chunk: Vec<u8> = out.unread.drain(..n).collect();
        let mut text = String::new();
        if out.dropped > 0 {
            text.push_str(&format!("[{} bytes of earlier output were dropped: fetch more often]\n", out.dropped));
            out.dropped = 0;
        }
        drop(out);
        text.push_str(&String::from_utf8_lossy(&self.scrubber.scrub_bytes(&chunk)));
        ToolState::Running { content: Some(text) }
    }
}

/// The largest `n' <= n` at which `bytes[..n']` does not end inside a UTF-8 character.
fn utf8_boundary(bytes: &[u8], n: usize) -> usize {
    let mut n = n.min(bytes.len());
    // Back up over continuation bytes to the start of the last character…
    let mut start = n;
    while start > 0 && n - start < 4 && (bytes[start - 1] & 0xC0) == 0x80 {
        start -= 1;
    }
    if start > 0 {
        let lead = bytes[start - 1];
        let width = if lead >= 0xF0 {
            4
        } else if lead >= 0xE0 {
            3
        } else if lead >= 0xC0 {
            2
        } else {
            1
        };
        // …and keep it out unless it is complete.
        if n - (start - 1) < width {
            n = start - 1;
        }
    }
    n
}

impl RunHandle {
    /// The state after a failed `apply`: the command goes on (or has ended), and the note says
    /// why the input did not reach it.
    async fn with_note(&mut self, note: &str) -> ToolState {
        match self.next().await {
            ToolState::Running { content } => {
                ToolState::Running { content: Some(format!("[{note}]\n{}", content.unwrap_or_default())) }
            }
            other => other,
        }
    }
}

impl AnyToolHandle for RunHandle {
    fn fetch(&mut self) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        Box::pin(async move { Ok(self.next().await) })
    }

    fn apply(&mut self, input: ApplyInput) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        Box::pin(async move {
            let input = match input {
                ApplyInput::Data(v) | ApplyInput::Answer { value: v, .. } => v,
            };
            match input {
                Value::Null => self.stdin = None,
                other => {
                    let bytes = match other {
                        Value::String(s) => s.into_bytes(),
                        v => v.to_string().into_bytes(),
                    };
                    let Some(stdin) = self.stdin.as_mut() else {
                        return Ok(self.with_note("its stdin is closed (an earlier apply sent null)").await);
                    };
                    // A program that does not read its input cannot hold the call: the write
                    // gives up after the fetch wait.
                    match tokio::time::timeout(self.wait, stdin.write_all(&bytes)).await {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => {
                            return Ok(self
                                .with_note(&format!("writing to its stdin failed: {e} (has it exited?)"))
                                .await);
                        }
                        Err(_) => {
                            return Ok(self.with_note("its stdin is full: the program is not reading its input; part of the input may have been written").await);
                        }
                    }
                }
            }
            Ok(self.next().await)
        })
    }

    fn abort(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.stdin = None;
            self.stop.cancel();
            if let Some(task) = self.task.take() {
                let _ = task.await;
            }
        })
    }
}

impl Drop for RunHandle {
    fn drop(&mut self) {
        self.stop.cancel();
        // Only while its task runs is the group ours: after that the id may be reused.
        if self.task.as_ref().is_some_and(|t| !t.is_finished()) {
            signal_group(self.pgid, Signal::KILL);
        }
    }
}
