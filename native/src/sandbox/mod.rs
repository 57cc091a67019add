//! The OS sandbox for tool subprocesses: the backstop that makes the protocol the only way out.
//!
//! A [`SandboxSpec`] says what a child may touch; [`SandboxSpec::prepare`] builds everything in the
//! parent (the Landlock ruleset, the seccomp BPF program) and fails closed when the kernel cannot
//! enforce it; [`ChildCommand::spawn`] starts a tool under it without `fork`
//! (`clone(CLONE_VM | CLONE_VFORK)`, the sandbox applied between clone and exec, see `spawn.rs`:
//! a fork's cost grows with the host's memory) and returns a [`SandboxedChild`] (tokio pipes, the
//! exit awaited through a pidfd, see `child.rs`). Every runtime spawns through it, also without
//! the sandbox. [`PreparedSandbox::install`] (`fork` + `pre_exec`) remains for tests and the
//! cold-start benchmark's breakdown. The `jp` process itself is never restricted.
//!
//! In the child, in order: parent-death `SIGKILL`, rlimits (address space, open files, processes,
//! core dumps), Landlock (`no_new_privs`; read/execute only on what the program needs to start;
//! TCP bind and connect denied — connect to the egress proxy's port allowed for a process whose
//! policy allows some URL, which runs in a network namespace of its own (`netns.rs`); abstract
//! Unix sockets and signals scoped to the sandbox where the kernel has ABI 6),
//! then seccomp — one BPF program, a binary search over syscall numbers (`bpf.rs`) — (no sockets — only unnamed Unix socket pairs, plus Internet sockets with the
//! egress —, no `listen`/`accept`, no ptrace, no namespaces, mounts, keyrings, BPF, io_uring or
//! file-handle tricks, no leaving the process group, no x32 syscalls on x86_64; below ABI 6, no
//! signals outside the process group). The child runs in its own process group with an
//! environment that holds only what the policy forwards.

#[cfg(target_os = "linux")]
mod bpf;
#[cfg(target_os = "linux")]
mod child;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod netns;
#[cfg(target_os = "linux")]
mod spawn;
#[cfg(target_os = "linux")]
pub use child::{ChildCommand, SandboxedChild};
#[cfg(target_os = "linux")]
pub use linux::*;
#[cfg(target_os = "linux")]
pub use netns::{EGRESS_PORT, proxy_url, user_namespaces};

#[cfg(not(target_os = "linux"))]
mod unsupported;
#[cfg(not(target_os = "linux"))]
pub use unsupported::*;

use std::path::PathBuf;

/// Whether tools run under the OS sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// Enforce it, or refuse to run the tool (the default).
    #[default]
    Enforce,
    /// The user explicitly opted out: run without it. The protocol policy still applies.
    Disabled,
}

/// The flag that opts out of the OS sandbox; error messages name it.
pub const OPT_OUT_FLAG: &str = "--no-os-sandbox";

/// Why a tool cannot run sandboxed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the OS sandbox cannot be enforced: {0}. The tool was not started. Pass {OPT_OUT_FLAG} to run tools without the OS sandbox (the access policy still applies to every request)"
)]
pub struct SandboxError(pub String);

/// Resource limits applied in the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `RLIMIT_AS`, bytes.
    pub address_space: u64,
    /// `RLIMIT_NOFILE`.
    pub open_files: u64,
    /// `RLIMIT_NPROC` (not enforced for root).
    pub processes: u64,
    /// `RLIMIT_FSIZE`, bytes.
    pub file_size: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self { address_space: 8 << 30, open_files: 1024, processes: 512, file_size: 1 << 30 }
    }
}

/// Which parts of the sandbox a child applies: all of them for every tool. The cold-start
/// benchmark times each part alone with [`PreparedSandbox::install_steps`].
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxSteps {
    /// Parent-death `SIGKILL`.
    pub pdeathsig: bool,
    /// The resource limits.
    pub rlimits: bool,
    /// `no_new_privs` alone (Landlock and seccomp set it too).
    pub no_new_privs: bool,
    /// The Landlock ruleset.
    pub landlock: bool,
    /// The seccomp filter (and the signal filter where there is one).
    pub seccomp: bool,
}

impl SandboxSteps {
    /// Everything: what every sandboxed child applies.
    pub const ALL: Self = Self { pdeathsig: true, rlimits: true, no_new_privs: true, landlock: true, seccomp: true };
    /// Nothing (a fork with an empty `pre_exec`).
    pub const NONE: Self =
        Self { pdeathsig: false, rlimits: false, no_new_privs: false, landlock: false, seccomp: false };
}

/// What a sandboxed child may reach.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxSpec {
    /// Read and execute (programs, interpreters, system libraries).
    pub read_exec: Vec<PathBuf>,
    /// Read only (a tool's own data files, configured with `read_paths`).
    pub read_only: Vec<PathBuf>,
    /// Read and write (for stdio tools whose policy makes the workspace writable).
    pub read_write: Vec<PathBuf>,
    /// Resource limits.
    pub limits: Limits,
    /// Reach the network through jp's egress proxy only: a user and network namespace of its
    /// own with nothing but loopback, where `127.0.0.1:`[`EGRESS_PORT`] is the proxy (the
    /// listener is handed to jp, [`SandboxedChild::egress`]). For a direct-access process whose
    /// policy allows some URL. Default: no network at all.
    pub egress: bool,
    /// For tests: behave as on a kernel without Landlock signal scoping (ABI < 6) — no Landlock
    /// signal scope, the seccomp signal filter instead — so that filter can be tested anywhere.
    pub force_signal_filter: bool,
}

/// System locations a dynamically linked program (and an interpreter) needs to start.
pub const SYSTEM_READ_EXEC: [&str; 8] =
    ["/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc/ld.so.cache", "/etc/ld.so.conf"];

/// System files that common programs (`git`, `make`, `node`, shells) read and fail without, none
/// of it secret; granted read-only to `process.run` children. Not the rest of `/etc`.
pub const PROCESS_CONFIG_READ: [&str; 11] = [
    "/etc/gitconfig",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/os-release",
    "/etc/ssl/openssl.cnf",
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
];

/// Configuration a networked program reads to resolve names and verify certificates.
pub const NETWORK_READ: [&str; 11] = [
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/ssl/certs",
    "/etc/ca-certificates",
    "/etc/pki/tls/certs",
    "/etc/pki/ca-trust",
];

impl SandboxSpec {
    /// The spec for a tool: the system locations, the program and any script files it names
    /// (read + execute), and the configured `read_paths` (read only). Nothing else — not the
    /// project, not home.
    pub fn for_tool(program: &std::path::Path, script_files: &[PathBuf], read_paths: &[PathBuf]) -> Self {
        let mut read_exec: Vec<PathBuf> = SYSTEM_READ_EXEC.iter().map(PathBuf::from).filter(|p| p.exists()).collect();
        read_exec.push(program.to_path_buf());
        read_exec.extend(script_files.iter().cloned());
        Self {
            read_exec,
            read_only: read_paths.to_vec(),
            read_write: vec![PathBuf::from("/dev/null")],
            limits: Limits::default(),
            egress: false,
            force_signal_filter: false,
        }
    }

    /// The spec for a `process.run` child: the system locations and `program` (read + execute;
    /// `None` for a program inside the workspace, which the workspace grant covers — or not),
    /// [`PROCESS_CONFIG_READ`] (read-only), the workspace as `grant` says (read-only also lets it
    /// run what it reads — it can run `sh` on it anyway), `scratch` read-write (its private `HOME`
    /// and `TMPDIR`), and the network — through the egress proxy — only when the grant allows it.
    pub fn for_process(
        program: Option<&std::path::Path>,
        workspace: &std::path::Path,
        grant: &jp_core::policy::ProcessGrant,
        scratch: &std::path::Path,
    ) -> Self {
        let existing = |list: &[&str]| list.iter().map(PathBuf::from).filter(|p| p.exists()).collect::<Vec<_>>();
        let mut spec = Self {
            read_exec: existing(&SYSTEM_READ_EXEC),
            read_only: existing(&PROCESS_CONFIG_READ),
            read_write: vec![PathBuf::from("/dev/null"), scratch.to_path_buf()],
            ..Self::default()
        };
        spec.read_exec.extend(program.map(std::path::Path::to_path_buf));
        if grant.workspace.write {
            spec.read_write.push(workspace.to_path_buf());
        } else if grant.workspace.read {
            spec.read_exec.push(workspace.to_path_buf());
        }
        if grant.network {
            spec.egress = true;
            spec.read_only.extend(existing(&NETWORK_READ));
        }
        spec
    }
}

/// A tool's `read_paths` (relative to the workspace), resolved: read-only host paths for the
/// tool's own files. None may be, or contain, the project directory — a tool reaches project
/// files only as its policy and runtime allow.
pub fn configured_read_paths(
    workspace: &std::path::Path,
    config: &jp_core::runtime::ToolConfig,
) -> Result<Vec<PathBuf>, jp_core::runtime::RuntimeError> {
    read_paths(workspace, &config.read_paths)
}

/// [`configured_read_paths`] for a list of entries (an MCP server's `read_paths`).
pub fn read_paths(
    workspace: &std::path::Path,
    entries: &[String],
) -> Result<Vec<PathBuf>, jp_core::runtime::RuntimeError> {
    use jp_core::runtime::RuntimeError;
    let ws = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let mut out = Vec::new();
    for p in entries {
        let path = std::fs::canonicalize(workspace.join(p))
            .map_err(|e| RuntimeError::Config(format!("read_paths entry {p:?}: {e}")))?;
        if ws.starts_with(&path) || path.starts_with(&ws) {
            return Err(RuntimeError::Config(format!(
                "read_paths entry {p:?} is or contains the project directory; a tool reaches project files only through its runtime's policy"
            )));
        }
        out.push(path);
    }
    Ok(out)
}

/// What this kernel can enforce (`jp sandbox status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxProbe {
    /// The Landlock ABI, or `None` when Landlock is not available.
    pub landlock_abi: Option<i32>,
    /// Why Landlock is unavailable, when it is.
    pub landlock_note: Option<String>,
    /// Whether seccomp filters are available.
    pub seccomp: bool,
    /// Why unprivileged user and network namespaces are unavailable (`None`: they are), which a
    /// direct-access process whose policy allows URLs needs (per-host egress).
    pub user_namespaces_note: Option<String>,
}

impl SandboxProbe {
    /// Filesystem restriction (Landlock ABI ≥ 1).
    pub fn filesystem(&self) -> bool {
        self.landlock_abi.is_some_and(|v| v >= 1)
    }
    /// TCP bind/connect restriction (Landlock ABI ≥ 4).
    pub fn network(&self) -> bool {
        self.landlock_abi.is_some_and(|v| v >= 4)
    }
    /// Signal and abstract Unix socket scoping (Landlock ABI ≥ 6).
    pub fn scoping(&self) -> bool {
        self.landlock_abi.is_some_and(|v| v >= 6)
    }
    /// Per-host egress for direct-access processes (a network namespace of their own).
    pub fn egress(&self) -> bool {
        self.user_namespaces_note.is_none()
    }
    /// Whether tools can run sandboxed at all.
    pub fn can_enforce(&self) -> bool {
        self.filesystem() && self.network() && self.seccomp
    }
    /// The first missing requirement, as a sentence for errors.
    pub fn missing(&self) -> Option<String> {
        match self.landlock_abi {
            None => Some(format!(
                "Landlock is not available on this kernel ({})",
                self.landlock_note.as_deref().unwrap_or("unknown reason")
            )),
            Some(v) if v < 4 => {
                Some(format!("Landlock ABI 4 (TCP bind/connect restriction) is required, this kernel offers ABI {v}"))
            }
            _ if !self.seccomp => Some("seccomp filters are not available on this kernel".into()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fails_closed_naming_the_missing_feature_and_the_opt_out() {
        let old =
            SandboxProbe { landlock_abi: Some(3), landlock_note: None, seccomp: true, user_namespaces_note: None };
        assert!(!old.can_enforce());
        let why = old.missing().unwrap();
        assert!(why.contains("ABI 4") && why.contains("ABI 3"), "{why}");
        let message = SandboxError(why).to_string();
        assert!(message.contains(OPT_OUT_FLAG) && message.contains("was not started"), "{message}");
        let none = SandboxProbe {
            landlock_abi: None,
            landlock_note: Some("disabled at boot".into()),
            seccomp: true,
            user_namespaces_note: None,
        };
        assert!(none.missing().unwrap().contains("disabled at boot"));
        let no_seccomp =
            SandboxProbe { landlock_abi: Some(7), landlock_note: None, seccomp: false, user_namespaces_note: None };
        assert!(no_seccomp.missing().unwrap().contains("seccomp"));
        let full =
            SandboxProbe { landlock_abi: Some(7), landlock_note: None, seccomp: true, user_namespaces_note: None };
        assert!(full.can_enforce() && full.scoping() && full.missing().is_none());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_kernel_is_probed() {
        let p = probe();
        println!("sandbox probe: {p:?}");
        assert_eq!(p.landlock_abi.is_some(), p.landlock_note.is_none());
    }
}
