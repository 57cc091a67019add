//! Platforms without an OS sandbox implementation: everything fails closed.

use super::{SandboxError, SandboxProbe, SandboxSpec, SandboxSteps};

/// Nothing is enforceable here.
pub fn probe() -> SandboxProbe {
    SandboxProbe {
        landlock_abi: None,
        landlock_note: Some(format!("jp-host has no OS sandbox for {}", std::env::consts::OS)),
        seccomp: false,
        user_namespaces_note: Some(format!("jp-host has no network namespaces for {}", std::env::consts::OS)),
    }
}

/// The egress proxy's port (no egress sandbox on this platform).
pub const EGRESS_PORT: u16 = 3128;

/// The proxy URL a tool's environment would name.
pub fn proxy_url() -> String {
    format!("http://127.0.0.1:{EGRESS_PORT}")
}

/// Why there are no network namespaces here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("jp-host has no network namespaces for {}", std::env::consts::OS)]
pub struct NamespaceError;

/// No network namespaces here.
pub fn user_namespaces() -> Result<(), NamespaceError> {
    Err(NamespaceError)
}

/// Never constructed on this platform.
#[derive(Debug)]
pub struct PreparedSandbox(());

impl SandboxSpec {
    /// Always fails: there is no OS sandbox on this platform.
    pub fn prepare(&self) -> Result<PreparedSandbox, SandboxError> {
        Err(SandboxError(format!("jp-host has no OS sandbox for {}", std::env::consts::OS)))
    }
}

impl PreparedSandbox {
    /// Unreachable: a `PreparedSandbox` cannot be built here.
    pub fn install(self: std::sync::Arc<Self>, _command: &mut tokio::process::Command) {}

    /// Unreachable: a `PreparedSandbox` cannot be built here.
    #[doc(hidden)]
    pub fn install_steps(self: std::sync::Arc<Self>, _command: &mut std::process::Command, _steps: SandboxSteps) {}

    /// Unreachable: a `PreparedSandbox` cannot be built here.
    #[doc(hidden)]
    pub fn spawn(
        self,
        _program: &std::ffi::OsStr,
        _args: &[&std::ffi::OsStr],
        _env: &[(&std::ffi::OsStr, &std::ffi::OsStr)],
        _cwd: &std::ffi::OsStr,
        _stdio: [std::os::fd::BorrowedFd<'_>; 3],
        _steps: SandboxSteps,
    ) -> std::io::Result<i32> {
        Err(std::io::Error::other("no OS sandbox on this platform"))
    }
}

/// A program to start; on this platform nothing can be started (tools need Linux).
#[derive(Debug, Clone, Default)]
pub struct ChildCommand(());

impl ChildCommand {
    /// Nothing to record here.
    pub fn new(_program: impl Into<std::path::PathBuf>) -> Self {
        Self(())
    }
    /// Nothing to record here.
    pub fn args<I: IntoIterator<Item = S>, S: AsRef<std::ffi::OsStr>>(&mut self, _args: I) -> &mut Self {
        self
    }
    /// Nothing to record here.
    pub fn envs<I, K, V>(&mut self, _vars: I) -> &mut Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<std::ffi::OsStr>,
        V: AsRef<std::ffi::OsStr>,
    {
        self
    }
    /// Nothing to record here.
    pub fn current_dir(&mut self, _cwd: impl Into<std::path::PathBuf>) -> &mut Self {
        self
    }
    /// Nothing to record here.
    pub fn stdin_null(&mut self) -> &mut Self {
        self
    }
    /// Always fails: tool processes are started with Linux system calls (`clone`, pidfds).
    pub fn spawn(&self, _sandbox: Option<PreparedSandbox>) -> std::io::Result<SandboxedChild> {
        Err(std::io::Error::other(format!("jp-host cannot start tool processes on {}", std::env::consts::OS)))
    }
}

/// Never constructed on this platform.
#[derive(Debug)]
pub struct SandboxedChild {
    /// Its stdin.
    pub stdin: Option<tokio::net::unix::pipe::Sender>,
    /// Its stdout.
    pub stdout: Option<tokio::net::unix::pipe::Receiver>,
    /// Its stderr.
    pub stderr: Option<tokio::net::unix::pipe::Receiver>,
    /// Never set here.
    pub egress: Option<tokio::net::TcpListener>,
}

impl SandboxedChild {
    /// Unreachable.
    pub fn id(&self) -> u32 {
        0
    }
    /// Unreachable.
    pub fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        Err(std::io::Error::other("no tool processes on this platform"))
    }
    /// Unreachable.
    pub async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        Err(std::io::Error::other("no tool processes on this platform"))
    }
}

/// No subreaper here: orphans go to init.
pub fn become_subreaper() -> std::io::Result<()> {
    Ok(())
}

/// Nothing to reap here (no subreaper).
pub fn reap_orphans() -> usize {
    0
}
