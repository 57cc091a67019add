//! `jp-sandbox`: the OS sandbox for tool subprocesses — the backstop that makes the protocol the
//! only way out — and every `unsafe` of jp-host's native side, fenced in one crate.
//!
//! # Invariants
//!
//! - **Irreversible restrictions only in the child.** Nothing here restricts the calling
//!   process: Landlock, seccomp, the capability drop, namespaces and mounts are applied in a
//!   child between `clone` and `execve` (the subreaper flag, [`become_subreaper`], restricts
//!   nothing: it only changes who adopts orphans).
//! - **Between clone and exec, system calls only.** The child shares the parent's memory
//!   (`CLONE_VM | CLONE_VFORK`): it reads data prepared before the clone and allocates nothing,
//!   takes no lock another thread could hold, and never unwinds (`spawn.rs`, `netns.rs`,
//!   `mounts.rs`, the `apply_raw` path of `linux.rs`).
//! - **Fail closed.** [`SandboxSpec::prepare`] refuses, naming what the kernel lacks, when it
//!   cannot enforce the spec (the private mount view is the one addition that degrades: without
//!   user namespaces Landlock alone holds the process, and [`probe`] says so).
//! - **Every `unsafe` block states why it holds** (`// SAFETY:`); `jp-native` and the other
//!   crates forbid `unsafe` altogether. The one `unsafe` that is not the sandbox's is mapping a
//!   compiled component jp wrote itself ([`artifact`]), checked before it is trusted.
//!
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
//! In the child, in order: in the namespaces its `clone` made, the id maps, the egress listener
//! (`netns.rs`) and the private mount view (`mounts.rs`: `.jp/` read-only, sensitive files hidden,
//! `noexec` where it may not run programs); the default signal dispositions, its own process
//! group, stdio, cwd; parent-death `SIGKILL`, rlimits (address space, open files, processes, core
//! dumps), `no_new_privs`, every capability dropped (bounding set, securebits, ambient and the
//! rest), Landlock (read/execute only on what the program needs to start; no device nodes; TCP
//! bind and connect denied — connect to the egress proxy's port allowed for a process whose
//! policy allows some URL; abstract Unix sockets and signals scoped to the sandbox where the
//! kernel has ABI 6), then seccomp — one BPF program, a binary search over syscall numbers
//! (`bpf.rs`): no sockets but Unix stream/packet pairs (plus Internet sockets with the egress), no
//! `listen`/`accept`, no ptrace, no namespaces, mounts, keyrings, BPF, io_uring or file-handle
//! tricks, no `CLONE_PARENT`, no leaving the process group, no new parent-death signal, no
//! `TIOCSTI`, no device nodes, no x32 syscalls on x86_64; below ABI 6, no signals outside the
//! process group. The child runs with an environment that holds only what the policy forwards.

pub mod artifact;
#[cfg(target_os = "linux")]
mod bpf;
#[cfg(target_os = "linux")]
mod caps;
#[cfg(target_os = "linux")]
mod child;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod mounts;
#[cfg(target_os = "linux")]
mod netns;
#[cfg(target_os = "linux")]
mod reaper;
#[cfg(target_os = "linux")]
mod seccomp;
#[cfg(target_os = "linux")]
mod spawn;
#[cfg(target_os = "linux")]
pub use child::{ChildCommand, SandboxedChild};
#[cfg(target_os = "linux")]
pub use linux::*;
#[cfg(target_os = "linux")]
pub use netns::{EGRESS_PORT, NamespaceError, proxy_url, user_namespaces};
#[cfg(target_os = "linux")]
pub use reaper::{become_subreaper, reap_orphans};

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
    /// Every capability dropped, for good (bounding and ambient sets emptied, root's exec
    /// grants none): what matters when jp runs as root or in a user namespace.
    pub capabilities: bool,
    /// The Landlock ruleset.
    pub landlock: bool,
    /// The seccomp filter (and the signal filter where there is one).
    pub seccomp: bool,
}

impl SandboxSteps {
    /// Everything: what every sandboxed child applies.
    pub const ALL: Self =
        Self { pdeathsig: true, rlimits: true, no_new_privs: true, capabilities: true, landlock: true, seccomp: true };
    /// Nothing (a fork with an empty `pre_exec`).
    pub const NONE: Self = Self {
        pdeathsig: false,
        rlimits: false,
        no_new_privs: false,
        capabilities: false,
        landlock: false,
        seccomp: false,
    };
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
    /// Only these programs may be executed (an MCP server's own program and `exec` list):
    /// [`exec_only`](Self::exec_only). Nothing written may be executed either: the read-write
    /// locations lose Landlock's execute right.
    pub may_exec: Option<Vec<PathBuf>>,
    /// The private mount view of a direct-access process ([`MountView`]), built in the child in
    /// a user and mount namespace of its own — where unprivileged user namespaces exist;
    /// elsewhere Landlock alone holds it (`jp sandbox status` says which).
    pub view: Option<MountView>,
}

/// What a direct-access process sees of the file system beyond Landlock's rules, made in its own
/// mount namespace before `execve` (a second wall: Landlock grants whole trees, this takes parts
/// of them away again).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MountView {
    /// Bound read-only on top of a writable grant (the workspace's `.jp/`, which the user
    /// approves with `jp trust`: a tool must not rewrite, delete or move it).
    pub read_only: Vec<PathBuf>,
    /// Hidden: the sensitive files of the workspace (`.env`, keys — the set the policy asks
    /// about — but those a rule of their own grants: `AccessPolicy::sensitive_granted`), each covered by a read-only, unopenable node (a directory by an empty read-only
    /// file system). Reading one fails with "permission denied"; it cannot be written, deleted
    /// or moved.
    pub masked: Vec<PathBuf>,
    /// Bound `noexec` (with an exec list: the program directories, the workspace, the scratch
    /// directory): no program there runs, and the ELF loader cannot map one either.
    pub no_exec: Vec<PathBuf>,
    /// Programs bound back executable on top of a `noexec` directory (the exec list).
    pub exec: Vec<PathBuf>,
    /// Directories that must exist in the view whatever is granted (the working directory, the
    /// workspace): under the private `/tmp`, an empty directory where nothing is granted.
    pub places: Vec<PathBuf>,
}

/// Directories of programs, made `noexec` for a process with an exec list.
pub const PROGRAM_DIRS: [&str; 8] =
    ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/bin", "/sbin", "/usr/games", "/usr/libexec"];

/// Most workspace entries looked at for sensitive files to hide, per spawn.
pub const MASK_WALK_LIMIT: usize = 100_000;

/// The sensitive files and directories of `workspace` (canonical; what `sensitive` says is),
/// found by a walk that does not follow symlinks, skips `.git` and stops after
/// [`MASK_WALK_LIMIT`] entries (`true` in the second field when it stopped early). A sensitive
/// directory is listed whole; a sensitive link as what it leads to, when that is inside.
pub fn sensitive_in(
    workspace: &std::path::Path,
    names: Option<&jp_core::policy::SensitiveNames>,
    sensitive: &dyn Fn(&jp_core::policy::WorkspacePath) -> bool,
) -> (Vec<PathBuf>, bool) {
    let mut found = Vec::new();
    let mut seen = 0usize;
    let mut stack = vec![(workspace.to_path_buf(), String::new())];
    while let Some((dir, rel)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MASK_WALK_LIMIT {
                return (found, true);
            }
            let file_name = entry.file_name();
            let Some(name) = file_name.to_str() else { continue };
            let kind = entry.file_type();
            let is_dir = kind.as_ref().is_ok_and(std::fs::FileType::is_dir);
            // The name filter first: most entries are not worth a path of their own.
            let candidate = names.is_none_or(|n| n.may_be(name));
            if !candidate && !is_dir {
                continue;
            }
            let rel = if rel.is_empty() { name.to_owned() } else { format!("{rel}/{name}") };
            let sensitive = candidate && jp_core::policy::WorkspacePath::parse(&rel).is_ok_and(|p| sensitive(&p));
            if sensitive && kind.is_ok_and(|t| t.is_symlink()) {
                // A link is hidden where it leads, if that is in the workspace (a mount follows
                // it); one leading out is Landlock's to refuse, not the view's to cover.
                if let Ok(target) = std::fs::canonicalize(entry.path())
                    && target.starts_with(workspace)
                {
                    found.push(target);
                }
            } else if sensitive {
                found.push(entry.path());
            } else if is_dir && name != ".git" {
                stack.push((entry.path(), rel));
            }
        }
    }
    (found, false)
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

/// What a direct-access process — a stdio tool, an MCP server, a `process.run` child — is
/// granted beyond its program ([`SandboxSpec::direct_access`]): it touches files and the network
/// itself, so the kernel holds it to the whole workspace and per-host egress.
#[derive(Debug, Clone, Copy)]
pub struct DirectAccess<'a> {
    /// The workspace (canonical).
    pub workspace: &'a std::path::Path,
    /// What of the workspace it gets (`AccessPolicy::workspace_grant` / `process_grant`).
    pub grant: jp_core::policy::WorkspaceGrant,
    /// A read-only workspace may also be executed from (a `process.run` child: it can run `sh`
    /// on what it reads anyway); otherwise it is read only.
    pub exec_workspace: bool,
    /// Its private `HOME`/`TMPDIR`, read-write.
    pub scratch: &'a std::path::Path,
    /// [`PROCESS_CONFIG_READ`], read-only (programs that run other programs: MCP servers,
    /// `process.run` children).
    pub system_config: bool,
    /// The network through jp's egress proxy ([`SandboxSpec::egress`]) and [`NETWORK_READ`].
    pub network: bool,
    /// Which workspace paths are sensitive (hidden in its [`MountView`]): the tool's policy.
    pub policy: &'a jp_core::policy::AccessPolicy,
}

fn existing(list: &[&str]) -> Vec<PathBuf> {
    list.iter().map(PathBuf::from).filter(|p| p.exists()).collect()
}

impl SandboxSpec {
    /// The spec every sandboxed child starts from (the one constructor): the system locations
    /// and the program, when given, and any script files it names (read + execute), and the
    /// configured `read_paths` (read only). Nothing else — not the project, not home. A VFS tool
    /// gets exactly this; a direct-access process adds [`direct_access`](Self::direct_access).
    pub fn new(program: Option<&std::path::Path>, script_files: &[PathBuf], read_paths: &[PathBuf]) -> Self {
        let mut read_exec = existing(&SYSTEM_READ_EXEC);
        read_exec.extend(program.map(std::path::Path::to_path_buf));
        read_exec.extend(script_files.iter().cloned());
        Self {
            read_exec,
            read_only: read_paths.to_vec(),
            read_write: vec![PathBuf::from("/dev/null")],
            limits: Limits::default(),
            egress: false,
            force_signal_filter: false,
            may_exec: None,
            view: None,
        }
    }

    /// [`new`](Self::new) for a tool's program.
    pub fn for_tool(program: &std::path::Path, script_files: &[PathBuf], read_paths: &[PathBuf]) -> Self {
        Self::new(Some(program), script_files, read_paths)
    }

    /// This spec with what a direct-access process is granted: `scratch` read-write, the
    /// workspace as `access.grant` says, [`PROCESS_CONFIG_READ`] when asked, and the network —
    /// through the egress proxy — only when granted.
    pub fn direct_access(mut self, access: &DirectAccess<'_>) -> Self {
        self.read_write.push(access.scratch.to_path_buf());
        if access.system_config {
            self.read_only.extend(existing(&PROCESS_CONFIG_READ));
        }
        let workspace = access.workspace.to_path_buf();
        if access.grant.write {
            self.read_write.push(workspace);
        } else if access.grant.read {
            if access.exec_workspace { self.read_exec.push(workspace) } else { self.read_only.push(workspace) }
        }
        if access.network {
            self.egress = true;
            self.read_only.extend(existing(&NETWORK_READ));
        }
        self.view = Some(self.mount_view(access));
        self
    }

    /// The mount view of a direct-access process: `.jp/` read-only where the workspace is
    /// writable, the sensitive files hidden where it is readable, and with an exec list the
    /// program directories, the workspace and the scratch directory `noexec` but for the listed
    /// programs.
    fn mount_view(&self, access: &DirectAccess<'_>) -> MountView {
        let mut view = MountView { places: vec![access.workspace.to_path_buf()], ..MountView::default() };
        let protected = access.workspace.join(jp_core::policy::PROTECTED_DIR);
        // A real directory only: a symlink planted as `.jp` is the trust check's business, and
        // binding its target would leave the link itself replaceable.
        if access.grant.write && std::fs::symlink_metadata(&protected).is_ok_and(|m| m.is_dir()) {
            view.read_only.push(protected);
        }
        if access.grant.read {
            let policy = access.policy;
            // Hidden unless a rule of its own grants it (nobody can be asked for this process).
            let hidden = |p: &jp_core::policy::WorkspacePath| policy.is_sensitive(p) && !policy.sensitive_granted(p);
            let names = policy.sensitive_name_filter();
            let (masked, _incomplete) = sensitive_in(access.workspace, names.as_ref(), &hidden);
            view.masked = masked;
        }
        if let Some(may_exec) = &self.may_exec {
            let mut dirs: Vec<PathBuf> = Vec::new();
            for dir in PROGRAM_DIRS {
                // `/bin` is often a link to `usr/bin`: each real directory once.
                if let Ok(real) = std::fs::canonicalize(dir)
                    && real.is_dir()
                    && !dirs.contains(&real)
                {
                    dirs.push(real);
                }
            }
            dirs.push(access.workspace.to_path_buf());
            dirs.push(access.scratch.to_path_buf());
            view.exec =
                may_exec.iter().filter(|p| dirs.iter().any(|d| p.starts_with(d)) && p.is_file()).cloned().collect();
            view.no_exec = dirs;
        }
        view
    }

    /// Execution limited to `may_exec` (an MCP server runs its own program only): every other
    /// read+exec location stays readable but is no longer executable.
    pub fn exec_only(mut self, may_exec: Vec<PathBuf>) -> Self {
        let system: Vec<PathBuf> = std::mem::take(&mut self.read_exec);
        for p in system {
            if may_exec.contains(&p) {
                self.read_exec.push(p);
            } else {
                self.read_only.push(p);
            }
        }
        for p in &may_exec {
            if !self.read_exec.contains(p) {
                self.read_exec.push(p.clone());
            }
        }
        self.may_exec = Some(may_exec);
        self
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
        policy: &jp_core::policy::AccessPolicy,
    ) -> Self {
        Self::new(program, &[], &[]).direct_access(&DirectAccess {
            workspace,
            grant: grant.workspace,
            exec_workspace: true,
            scratch,
            system_config: true,
            network: grant.network,
            policy,
        })
    }
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
