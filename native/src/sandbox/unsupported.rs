//! Platforms without an OS sandbox implementation: everything fails closed.

use super::{SandboxError, SandboxProbe, SandboxSpec, SandboxSteps};

/// Nothing is enforceable here.
pub fn probe() -> SandboxProbe {
    SandboxProbe {
        landlock_abi: None,
        landlock_note: Some(format!("jp-host has no OS sandbox for {}", std::env::consts::OS)),
        seccomp: false,
    }
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
