//! A tool process started without fork ([`spawn_raw`](super::spawn::spawn_raw)), its stdio as
//! tokio pipes, its exit awaited through a pidfd: what every runtime spawns, sandboxed or not.
//!
//! The pipes are made with `O_CLOEXEC` (only the child's copies dup'd onto 0–2 survive its exec,
//! and no other spawn in the host inherits them); the host's ends are non-blocking and registered
//! with tokio. The exit is awaited by polling the pidfd (readable once the child has exited) and
//! reaped with `waitid(P_PIDFD)`: no `SIGCHLD` handler, no `waitpid` on a pid that could be reused.
//! A child dropped before it was reaped is killed (through its pidfd) and reaped off the caller's
//! thread, as tokio's `kill_on_drop` does.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::ExitStatusExt as _;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};

use rustix::fs::OFlags;
use rustix::pipe::PipeFlags;
use rustix::process::{Pid, PidfdFlags, Signal, WaitId, WaitIdOptions, WaitIdStatus};
use tokio::io::unix::AsyncFd;
use tokio::net::unix::pipe;

use super::SandboxSteps;
use super::linux::PreparedSandbox;
use super::spawn::spawn_raw;

/// A program to start: an absolute path, its arguments, exactly this environment, in `cwd`, its
/// stdout and stderr piped, its stdin piped or `/dev/null`.
#[derive(Debug, Clone)]
pub struct ChildCommand {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    cwd: PathBuf,
    stdin: bool,
}

impl ChildCommand {
    /// `program` with no arguments, an empty environment, in `/`, its stdin piped.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self { program: program.into(), args: Vec::new(), env: Vec::new(), cwd: "/".into(), stdin: true }
    }
    /// Add arguments.
    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(&mut self, args: I) -> &mut Self {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }
    /// Set environment variables (the child gets these and nothing else). A variable set again
    /// gets the new value in place of the old, so the child sees each name once, the last value
    /// set (as with `std::process::Command`): with two `HOME` entries, C's `getenv` would read
    /// the first and a shell's `env` list both.
    pub fn envs<I: IntoIterator<Item = (K, V)>, K: AsRef<OsStr>, V: AsRef<OsStr>>(&mut self, vars: I) -> &mut Self {
        for (k, v) in vars {
            let (k, v) = (k.as_ref(), v.as_ref().to_owned());
            match self.env.iter_mut().find(|(name, _)| name == k) {
                Some((_, value)) => *value = v,
                None => self.env.push((k.to_owned(), v)),
            }
        }
        self
    }
    /// The working directory.
    pub fn current_dir(&mut self, cwd: impl Into<PathBuf>) -> &mut Self {
        self.cwd = cwd.into();
        self
    }
    /// Give the child `/dev/null` as stdin instead of a pipe.
    pub fn stdin_null(&mut self) -> &mut Self {
        self.stdin = false;
        self
    }

    /// Start it in its own process group, under `sandbox` (`None`: the user opted out of the OS
    /// sandbox), without fork. Must be called within a tokio runtime. The error of a step
    /// before exec (the sandbox, a program that is missing or not executable) is returned as
    /// the child's errno would be by `std::process::Command`.
    pub fn spawn(&self, sandbox: Option<PreparedSandbox>) -> io::Result<SandboxedChild> {
        let null = || -> io::Result<OwnedFd> { above_stdio(std::fs::File::open("/dev/null")?.into()) };
        let (child_in, host_in) = if self.stdin { pipe()? } else { (null()?, null()?) };
        let (host_out, child_out) = pipe()?;
        let (host_err, child_err) = pipe()?;
        let args: Vec<&OsStr> = self.args.iter().map(OsString::as_os_str).collect();
        let env: Vec<(&OsStr, &OsStr)> = self.env.iter().map(|(k, v)| (k.as_os_str(), v.as_os_str())).collect();
        let stdio: [BorrowedFd<'_>; 3] = [child_in.as_fd(), child_out.as_fd(), child_err.as_fd()];
        let (raw, egress) = spawn_raw(
            sandbox.as_ref(),
            self.program.as_os_str(),
            &args,
            &env,
            self.cwd.as_os_str(),
            stdio,
            SandboxSteps::ALL,
        )?;
        // The host's copies of the child's ends close now, so EOF comes when the child's do.
        drop((child_in, child_out, child_err, sandbox));
        let mut child = SandboxedChild::adopt(raw)?;
        if let Some(listener) = egress {
            let listener = std::net::TcpListener::from(listener);
            listener.set_nonblocking(true)?;
            child.egress = Some(tokio::net::TcpListener::from_std(listener)?);
        }
        if self.stdin {
            child.stdin = Some(pipe::Sender::from_owned_fd_unchecked(nonblocking(host_in)?)?);
        }
        child.stdout = Some(pipe::Receiver::from_owned_fd_unchecked(nonblocking(host_out)?)?);
        child.stderr = Some(pipe::Receiver::from_owned_fd_unchecked(nonblocking(host_err)?)?);
        Ok(child)
    }
}

/// A pipe, both ends close-on-exec and above the stdio numbers (a host started with a closed
/// stdin would otherwise get fd 0, which the child's `dup2` could not move). `(read, write)`.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC)?;
    Ok((above_stdio(read)?, above_stdio(write)?))
}

fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 { Ok(fd) } else { Ok(rustix::io::fcntl_dupfd_cloexec(&fd, 3)?) }
}

fn nonblocking(fd: OwnedFd) -> io::Result<OwnedFd> {
    let flags = rustix::fs::fcntl_getfl(&fd)?;
    rustix::fs::fcntl_setfl(&fd, flags | OFlags::NONBLOCK)?;
    Ok(fd)
}

/// How the exit is awaited: a pidfd, or (kernels before 5.3, only reachable without the OS
/// sandbox, whose Landlock ABI 4 needs 6.7) a thread blocked in `waitid`.
enum Waiter {
    Pidfd(AsyncFd<OwnedFd>),
    Thread(Arc<ThreadWait>),
    /// Handed over to be reaped (being dropped).
    Gone,
}

/// The status a waiting thread reaped, set under the lock so that a kill on drop never reaches a
/// reaped (and perhaps reused) pid.
struct ThreadWait {
    status: Mutex<Option<ExitStatus>>,
    done: tokio::sync::Notify,
}

/// A child started by [`ChildCommand::spawn`]. Killed (the child, not its group: see
/// `GroupGuard`) when dropped before it was reaped.
pub struct SandboxedChild {
    pid: u32,
    waiter: Waiter,
    status: Option<ExitStatus>,
    /// Its stdin, unless `/dev/null` (or taken).
    pub stdin: Option<pipe::Sender>,
    /// Its stdout (until taken).
    pub stdout: Option<pipe::Receiver>,
    /// Its stderr (until taken).
    pub stderr: Option<pipe::Receiver>,
    /// With an egress sandbox: the socket listening on `127.0.0.1:EGRESS_PORT` in the child's
    /// own network namespace, for jp's egress proxy to serve (until taken).
    pub egress: Option<tokio::net::TcpListener>,
}

impl std::fmt::Debug for SandboxedChild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxedChild").field("pid", &self.pid).field("status", &self.status).finish_non_exhaustive()
    }
}

/// The wait status `std` expects, from what `waitid` says.
fn exit_status(s: &WaitIdStatus) -> ExitStatus {
    let raw = match (s.exit_status(), s.terminating_signal()) {
        (Some(code), _) => (code & 0xff) << 8,
        (None, Some(signal)) => signal | if s.dumped() { 0x80 } else { 0 },
        (None, None) => 0,
    };
    ExitStatus::from_raw(raw)
}

impl SandboxedChild {
    /// Take charge of our child `pid` (just spawned, not reaped).
    fn adopt(raw: libc::pid_t) -> io::Result<Self> {
        let pid = Pid::from_raw(raw).ok_or_else(|| io::Error::other("spawn returned pid 0"))?;
        // Blocking (a non-blocking pidfd makes `waitid` without WNOHANG fail with EAGAIN): the
        // reaper on drop blocks in it; everything else polls readiness and passes WNOHANG.
        let waiter = match rustix::process::pidfd_open(pid, PidfdFlags::empty()) {
            // SAFETY: the `OwnedFd` is moved in; nothing else can close or replace it.
            #[allow(unsafe_code)]
            Ok(fd) => match unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) } {
                Ok(fd) => Waiter::Pidfd(fd),
                Err(e) => {
                    let e = io::Error::from(e);
                    // Not registered (no runtime with IO): do not leave the child behind.
                    let _ = rustix::process::kill_process(pid, Signal::KILL);
                    let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
                    return Err(e);
                }
            },
            // Kernels before 5.3, or a container profile that refuses unknown calls with EPERM.
            Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => Waiter::Thread(thread_wait(pid)),
            Err(e) => {
                let _ = rustix::process::kill_process(pid, Signal::KILL);
                let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
                return Err(e.into());
            }
        };
        Ok(Self { pid: raw as u32, waiter, status: None, stdin: None, stdout: None, stderr: None, egress: None })
    }

    /// Its pid, which is also its process group id.
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// Its exit status if it has exited (reaping it), without waiting.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.status.is_none() {
            self.status = match &self.waiter {
                Waiter::Pidfd(fd) => {
                    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG;
                    rustix::process::waitid(WaitId::PidFd(fd.get_ref().as_fd()), options)?.map(|s| exit_status(&s))
                }
                Waiter::Thread(t) => *t.status.lock().unwrap_or_else(std::sync::PoisonError::into_inner),
                Waiter::Gone => None,
            };
        }
        Ok(self.status)
    }

    /// Wait for it to exit and reap it. Cancel-safe: dropping the future loses nothing.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(status);
            }
            match &self.waiter {
                Waiter::Pidfd(fd) => fd.readable().await?.clear_ready(),
                Waiter::Thread(t) => t.done.notified().await,
                Waiter::Gone => return Err(io::Error::other("the child was handed over")),
            }
        }
    }
}

/// Wait for `pid` on a thread of its own (no pidfd on this kernel).
fn thread_wait(pid: Pid) -> Arc<ThreadWait> {
    let shared = Arc::new(ThreadWait { status: Mutex::new(None), done: tokio::sync::Notify::new() });
    let theirs = shared.clone();
    std::thread::spawn(move || {
        // Wait without reaping, then reap under the lock (see `ThreadWait`).
        let exited = WaitIdOptions::EXITED;
        let _ = rustix::process::waitid(WaitId::Pid(pid), exited | WaitIdOptions::NOWAIT);
        let mut status = theirs.status.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Ok(Some(s)) = rustix::process::waitid(WaitId::Pid(pid), exited) {
            *status = Some(exit_status(&s));
        } else {
            *status = Some(ExitStatus::from_raw(libc::SIGKILL));
        }
        drop(status);
        theirs.done.notify_one();
    });
    shared
}

impl Drop for SandboxedChild {
    fn drop(&mut self) {
        if self.status.is_some() {
            return;
        }
        match std::mem::replace(&mut self.waiter, Waiter::Gone) {
            Waiter::Pidfd(fd) => {
                let fd = fd.into_inner();
                let _ = rustix::process::pidfd_send_signal(&fd, Signal::KILL);
                let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG;
                if let Ok(Some(_)) = rustix::process::waitid(WaitId::PidFd(fd.as_fd()), options) {
                    return;
                }
                // Dying takes a moment: reap it off this thread.
                std::thread::spawn(move || {
                    let _ = rustix::process::waitid(WaitId::PidFd(fd.as_fd()), WaitIdOptions::EXITED);
                });
            }
            Waiter::Thread(t) => {
                let status = t.status.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if status.is_none()
                    && let Some(pid) = Pid::from_raw(self.pid as i32)
                {
                    let _ = rustix::process::kill_process(pid, Signal::KILL);
                }
            }
            Waiter::Gone => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ChildCommand;

    #[test]
    fn a_variable_set_again_takes_its_place_with_the_last_value() {
        let mut command = ChildCommand::new("/bin/true");
        command.envs([("HOME", "/home/u"), ("PATH", "/bin")]).envs([("HOME", "/tmp/scratch"), ("TMPDIR", "/tmp/s")]);
        let env: Vec<(&str, &str)> =
            command.env.iter().map(|(k, v)| (k.to_str().unwrap(), v.to_str().unwrap())).collect();
        assert_eq!(env, [("HOME", "/tmp/scratch"), ("PATH", "/bin"), ("TMPDIR", "/tmp/s")]);
    }
}
