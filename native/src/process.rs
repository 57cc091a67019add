//! [`TokioProcessRunner`]: the native [`ProcessRunner`] behind `process.run`, and the process-group
//! helpers every runtime uses to leave nothing behind.
//!
//! A program runs with exactly the environment the dispatcher computed (clean: base variables plus
//! what the policy forwards), in the materialised project root, in its own process group, under
//! the OS sandbox (see [`crate::sandbox`]): the system directories and the program read+execute,
//! the workspace as the policy's [`ProcessGrant`](jp_core::policy::ProcessGrant) says, a private
//! `HOME`/`TMPDIR`, no network unless the policy allows some URL — then a network namespace of
//! its own whose only way out is jp's egress proxy ([`crate::egress`]), each connection decided
//! per host and port by the request's [`EgressGate`](jp_core::host::EgressGate). A policy the
//! kernel cannot hold it to is refused, unless the user opted out of the OS sandbox. Its output is read concurrently and capped; however the call ends (exit,
//! timeout, over-long output, cancellation) the whole group is killed, so grandchildren cannot
//! outlive the call or hold its pipes open — and the sandbox forbids leaving the group.

use std::path::{Path, PathBuf};
use std::time::Duration;

use jp_core::BoxFuture;
use jp_core::host::{BackendError, ProcessOutput, ProcessRequest, ProcessRunner};
use rustix::process::{Pid, Signal};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::sandbox::{ChildCommand, OPT_OUT_FLAG, PreparedSandbox, SandboxMode, SandboxSpec};

/// Default time a `process.run` program may take.
pub const DEFAULT_PROCESS_TIMEOUT: Duration = Duration::from_secs(60);

/// Send `signal` to every process of group `pgid`. Errors (the group is already gone) are ignored.
pub fn signal_group(pgid: u32, signal: Signal) {
    if let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}

/// Whether any process of group `pgid` is still alive.
pub fn group_alive(pgid: u32) -> bool {
    i32::try_from(pgid)
        .ok()
        .and_then(Pid::from_raw)
        .is_some_and(|pid| rustix::process::test_kill_process_group(pid).is_ok())
}

/// Read a stream to its end, keeping at most `max` bytes; `Err(total)` when it had more.
///
/// Reads straight into the result's spare room: no zeroed scratch buffer to fault in and copy
/// from (one was 64 KiB, 16 page faults of every stdio call, even for a tool that prints
/// nothing). The room doubles from 8 KiB and never reaches past `max + 1` bytes: a stream that
/// has more is told apart with one byte over, and never held beyond it.
pub async fn read_capped<R: AsyncRead + Unpin>(mut reader: R, max: usize) -> std::io::Result<Result<Vec<u8>, usize>> {
    let mut out = Vec::new();
    loop {
        if out.len() == out.capacity() {
            // `out.len() <= max` here: the loop returns as soon as it is over.
            out.reserve_exact(out.len().max(8 * 1024).min((max - out.len()).saturating_add(1)));
        }
        if reader.read_buf(&mut out).await? == 0 {
            return Ok(Ok(out));
        }
        if out.len() > max {
            return Ok(Err(out.len()));
        }
    }
}

/// The environment of a process that touches files directly (a stdio tool, an MCP server): the
/// base variables and those `keep` admits from the host's `env`, with `HOME` and `TMPDIR` set to
/// its private directory `home`.
pub fn private_env(
    env: &std::collections::BTreeMap<String, String>,
    keep: impl Fn(&str) -> bool,
    home: &Path,
) -> std::collections::BTreeMap<String, String> {
    let mut out: std::collections::BTreeMap<String, String> = env
        .iter()
        .filter(|(k, _)| jp_core::policy::is_base_env(k) || keep(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let home = home.to_string_lossy().into_owned();
    out.insert("HOME".into(), home.clone());
    out.insert("TMPDIR".into(), home);
    out
}

/// Find `program` the way a shell would: a path with `/` relative to `cwd`, otherwise on `PATH`.
pub fn find_program(program: &str, path_var: Option<&str>, cwd: &Path) -> Option<PathBuf> {
    if program.contains('/') {
        let p = cwd.join(program);
        return p.is_file().then_some(p);
    }
    which::which_in(program, path_var, cwd).ok()
}

/// Runs host programs on tokio, under the OS sandbox unless the user opted out.
#[derive(Debug, Clone)]
pub struct TokioProcessRunner {
    timeout: Duration,
    sandbox: SandboxMode,
}

impl Default for TokioProcessRunner {
    fn default() -> Self {
        Self::new(DEFAULT_PROCESS_TIMEOUT)
    }
}

impl TokioProcessRunner {
    /// A runner with this timeout per program, enforcing the OS sandbox.
    pub fn new(timeout: Duration) -> Self {
        Self { timeout, sandbox: SandboxMode::Enforce }
    }

    /// Enforce the OS sandbox (default) or run programs without it (`--no-os-sandbox`).
    pub fn sandbox(mut self, mode: SandboxMode) -> Self {
        self.sandbox = mode;
        self
    }

    /// The sandbox `grant` allows: workspace per the grant, a private `HOME`/`TMPDIR` (returned
    /// and set in `command`; removed when dropped), network only if granted. `None` when the user
    /// opted out of the OS sandbox.
    fn confine(
        &self,
        command: &mut ChildCommand,
        request: &ProcessRequest,
        program: &Path,
        cwd: &Path,
    ) -> Result<Option<(PreparedSandbox, tempfile::TempDir)>, BackendError> {
        if self.sandbox == SandboxMode::Disabled {
            return Ok(None);
        }
        let grant = request.grant.as_ref().map_err(|why| {
            BackendError::Unavailable(format!(
                "'{}' was not started: a process.run child runs under the OS sandbox, which can grant it only the whole workspace (read-only or read-write) and the network per host and port (through jp's egress proxy), and this tool's policy cannot be held that way: {why}. Give the tool a policy without that rule, or pass {OPT_OUT_FLAG} to run programs without the OS sandbox",
                request.program
            ))
        })?;
        let scratch = tempfile::Builder::new().prefix("jp-process-").tempdir().map_err(|e| {
            BackendError::Failed(format!("cannot create a temporary directory for '{}': {e}", request.program))
        })?;
        let workspace = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        // A program named by a path inside the workspace is reached through the workspace grant
        // only: a rule for it would follow a symlink planted there to any file outside.
        let inside = program.starts_with(cwd) || program.starts_with(&workspace);
        // What it may not see: the tool's sensitive paths (the built-in set without a gate).
        let fallback;
        let policy = match &request.egress {
            Some(gate) => gate.policy(),
            None => {
                fallback = jp_core::policy::AccessPolicy::default();
                &fallback
            }
        };
        let spec = SandboxSpec::for_process((!inside).then_some(program), &workspace, grant, scratch.path(), policy);
        let prepared = spec.prepare().map_err(|e| BackendError::Unavailable(e.to_string()))?;
        command.envs([("HOME", scratch.path()), ("TMPDIR", scratch.path())]);
        if grant.network {
            command.envs(crate::egress::proxy_env());
        }
        Ok(Some((prepared, scratch)))
    }
}

/// A program started under the sandbox, with the private `HOME`/`TMPDIR` it was given (removed
/// when dropped: drop it after the program's group is dead).
pub struct Started {
    /// The program, in its own process group.
    pub child: crate::sandbox::SandboxedChild,
    /// Its private `HOME`/`TMPDIR`, when sandboxed.
    pub scratch: Option<tempfile::TempDir>,
    /// The egress proxy of a program whose policy allows some URLs (drop it with the group).
    pub egress: Option<crate::egress::EgressProxy>,
}

impl TokioProcessRunner {
    /// Start the program `request` describes (as the dispatcher authorized it), under the OS
    /// sandbox unless the user opted out; stdin is a pipe when `stdin` is set, `/dev/null`
    /// otherwise. The caller owns the process group from here on.
    pub fn start(&self, request: &ProcessRequest, stdin: bool) -> Result<Started, BackendError> {
        let cwd = request.cwd.clone().ok_or_else(|| {
            BackendError::Unavailable(
                "process.run needs the project as a real directory, and this project backend has none".into(),
            )
        })?;
        let cwd = PathBuf::from(cwd);
        let path_var = request.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_str());
        let program = find_program(&request.program, path_var, &cwd)
            .ok_or_else(|| BackendError::NotFound(format!("program '{}' not found on PATH", request.program)))?;
        let mut command = ChildCommand::new(&program);
        // No proxy variables of the host's: the sandbox sets its own (or there is no network).
        let proxy_var =
            |k: &str| ["http_proxy", "https_proxy", "all_proxy", "no_proxy"].iter().any(|p| k.eq_ignore_ascii_case(p));
        command
            .args(&request.args)
            .envs(request.env.iter().filter(|(k, _)| !proxy_var(k)).map(|(k, v)| (k, v)))
            .current_dir(&cwd);
        if !stdin {
            command.stdin_null();
        }
        let (sandbox, scratch) = match self.confine(&mut command, request, &program, &cwd)? {
            Some((sandbox, scratch)) => (Some(sandbox), Some(scratch)),
            None => (None, None),
        };
        // In its own process group, without fork (see `sandbox`).
        let mut child = command
            .spawn(sandbox)
            .map_err(|e| BackendError::Failed(format!("cannot start '{}': {e}", request.program)))?;
        // Without a gate nobody serves the listener: the program reaches nothing.
        let egress =
            child.egress.take().zip(request.egress.clone()).map(|(listener, gate)| {
                crate::egress::serve(listener, gate, crate::egress::EgressLimits::default(), None)
            });
        Ok(Started { child, scratch, egress })
    }
}

impl ProcessRunner for TokioProcessRunner {
    fn run(&self, request: ProcessRequest) -> BoxFuture<'_, Result<ProcessOutput, BackendError>> {
        Box::pin(async move {
            let Started { mut child, scratch: _scratch, egress: _egress } = self.start(&request, false)?;
            let pgid = child.id();
            // However the call ends — done, timed out, over the cap, or this future dropped
            // because the tool's call was cancelled — nothing the program started survives it.
            let _guard = GroupGuard(pgid);
            let stdout = child.stdout.take();
            let stderr = child.stderr.take();
            let max = request.max_output;
            let work = async {
                let read_out = async {
                    match stdout {
                        Some(s) => read_capped(s, max).await,
                        None => Ok(Ok(Vec::new())),
                    }
                };
                let read_err = async {
                    match stderr {
                        Some(s) => read_capped(s, max).await,
                        None => Ok(Ok(Vec::new())),
                    }
                };
                let wait = async {
                    let status = child.wait().await;
                    // Whatever the program left running in its group dies with it (and its
                    // pipes close, so the reads above end).
                    signal_group(pgid, Signal::KILL);
                    status
                };
                tokio::join!(read_out, read_err, wait)
            };
            let (out, err, status) = match tokio::time::timeout(self.timeout, work).await {
                Ok(r) => r,
                Err(_) => {
                    return Err(BackendError::Timeout(format!(
                        "'{}' did not finish within {} s and was killed",
                        request.program,
                        self.timeout.as_secs()
                    )));
                }
            };
            let io = |e: std::io::Error| BackendError::Failed(format!("'{}': {e}", request.program));
            let status = status.map_err(io)?;
            let over = |which: &str, n: usize| {
                BackendError::TooLarge(format!(
                    "'{}' wrote {n} bytes or more to {which}, over the {max}-byte limit; have it write less, or write a large output to a file and read that in pieces",
                    request.program
                ))
            };
            let stdout = out.map_err(io)?.map_err(|n| over("stdout", n))?;
            let stderr = err.map_err(io)?.map_err(|n| over("stderr", n))?;
            Ok(ProcessOutput { stdout, stderr, exit_code: status.code() })
        })
    }
}

/// Kills a tool's process group however a call ends (including a dropped future).
pub(crate) struct GroupGuard(pub(crate) u32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        signal_group(self.0, Signal::KILL);
    }
}

#[cfg(test)]
mod tests {
    use super::read_capped;
    use tokio::io::AsyncReadExt;

    fn run<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime").block_on(f)
    }

    #[test]
    fn read_capped_keeps_what_fits_and_holds_no_more_than_one_byte_over() {
        // Empty, exactly the limit, and more than one round of room (the room grows from 8 KiB).
        let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(run(read_capped(&b""[..], 10)).expect("read"), Ok(Vec::new()));
        assert_eq!(run(read_capped(&b"0123456789"[..], 10)).expect("read"), Ok(b"0123456789".to_vec()));
        assert_eq!(run(read_capped(&big[..], big.len())).expect("read"), Ok(big.clone()));
        // One byte over the limit is over; a stream that never ends is read only to one byte past it.
        assert_eq!(run(read_capped(&b"0123456789"[..], 9)).expect("read"), Err(10));
        assert_eq!(run(read_capped(&big[..], 100_000)).expect("read"), Err(100_001));
        assert_eq!(run(read_capped(tokio::io::repeat(b'x'), 1 << 20)).expect("read"), Err((1 << 20) + 1));
        // A reader that hands out a few bytes at a time.
        let (mut w, r) = tokio::io::duplex(7);
        let sent = big[..50_000].to_vec();
        let got = run(async move {
            let writer = tokio::spawn(async move {
                use tokio::io::AsyncWriteExt;
                w.write_all(&sent).await.expect("write");
            });
            let got = read_capped(r.take(u64::MAX), 60_000).await.expect("read");
            writer.await.expect("writer");
            got
        });
        assert_eq!(got, Ok(big[..50_000].to_vec()));
    }

    #[test]
    fn a_program_that_never_stops_writing_is_cut_past_the_limit_and_told_what_to_do() {
        use super::TokioProcessRunner;
        use jp_core::host::{BackendError, ProcessRequest, ProcessRunner};
        use jp_core::policy::{ProcessGrant, WorkspaceGrant};
        let dir = tempfile::tempdir().expect("temp dir");
        let request = ProcessRequest {
            program: "yes".into(),
            args: Vec::new(),
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            cwd: Some(dir.path().to_string_lossy().into_owned()),
            max_output: 1000,
            grant: Ok(ProcessGrant { workspace: WorkspaceGrant { read: true, write: false }, network: false }),
            egress: None,
        };
        // Under the real OS sandbox, as `process.run` runs it.
        let got = run(TokioProcessRunner::default().run(request));
        let Err(BackendError::TooLarge(message)) = got else { panic!("{got:?}") };
        assert_eq!(
            message,
            "'yes' wrote 1001 bytes or more to stdout, over the 1000-byte limit; have it write less, or write a large output to a file and read that in pieces"
        );
    }
}
