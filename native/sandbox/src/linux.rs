//! Linux: Landlock + seccomp + rlimits.

use std::io;
use std::os::unix::process::CommandExt as _;
use std::sync::{Arc, Mutex, OnceLock};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};
use libc::sock_filter;
use rustix::process::{Resource, Rlimit, Signal};

use super::caps::drop_capabilities;
use super::mounts::MountPlan;
use super::netns::{EGRESS_PORT, EgressChild, IdMaps};
use super::seccomp::{attach, patch_pgid, seccomp_program};
use super::{Limits, SandboxError, SandboxProbe, SandboxSpec, SandboxSteps};

/// Ask the kernel what it enforces, without restricting anything (`jp sandbox status`): Landlock,
/// seccomp, and — in a throwaway child — unprivileged user and network namespaces.
pub fn probe() -> SandboxProbe {
    let user_namespaces_note = super::netns::user_namespaces().err().map(|e| e.to_string());
    SandboxProbe { user_namespaces_note, ..probe_kernel() }
}

/// Landlock and seccomp only: two system calls, no child. What every sandboxed start needs to
/// know; the namespaces are probed only for a process that needs a network namespace (egress),
/// and a mount view's are found out by its own clone (see `spawn_raw`). `user_namespaces_note`
/// is `None`: not probed.
fn probe_kernel() -> SandboxProbe {
    // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) returns the ABI version.
    #[allow(unsafe_code)]
    let v = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
    let (landlock_abi, landlock_note) = if v > 0 {
        (Some(v as i32), None)
    } else {
        let err = io::Error::last_os_error();
        let note = match err.raw_os_error() {
            Some(libc::EOPNOTSUPP) => {
                "Landlock is built in but disabled at boot (add it to the lsm= kernel parameter)".to_owned()
            }
            Some(libc::ENOSYS) => {
                "the kernel was built without Landlock (Linux 5.13+ with CONFIG_SECURITY_LANDLOCK)".to_owned()
            }
            _ => err.to_string(),
        };
        (None, Some(note))
    };
    // PR_GET_SECCOMP succeeds (returning the current mode) wherever seccomp is built in.
    #[allow(unsafe_code)]
    let seccomp = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) } >= 0;
    SandboxProbe { landlock_abi, landlock_note, seccomp, user_namespaces_note: None }
}

fn landlock_ruleset(spec: &SandboxSpec, abi: i32) -> Result<RulesetCreated, SandboxError> {
    let fail = |e: &dyn std::fmt::Display| SandboxError(format!("Landlock: {e}"));
    let known = ABI::V6;
    let mut ruleset = Ruleset::default()
        // What we need, or nothing: filesystem (ABI 1) and TCP (ABI 4).
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .map_err(|e| fail(&e))?
        // No TCP bind, no connect — but to the egress proxy's port in the child's own network
        // namespace (its only interface is loopback).
        .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
        .map_err(|e| fail(&e))?
        // What newer kernels add, where present: refer/truncate/ioctl rights and scoping.
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(known))
        .map_err(|e| fail(&e))?;
    if abi >= 6 {
        // (A test asking for the seccomp signal filter gets it instead of the signal scope.)
        let scope = if spec.force_signal_filter {
            Scope::AbstractUnixSocket.into()
        } else {
            Scope::AbstractUnixSocket | Scope::Signal
        };
        ruleset = ruleset.scope(scope).map_err(|e| fail(&e))?;
    }
    let mut created = ruleset.create().map_err(|e| fail(&e))?;
    if spec.egress {
        created = created.add_rule(NetPort::new(EGRESS_PORT, AccessNet::ConnectTcp)).map_err(|e| fail(&e))?;
    }
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let no_exec = if spec.may_exec.is_some() { AccessFs::Execute.into() } else { landlock::BitFlags::empty() };
    let groups: [(&[std::path::PathBuf], landlock::BitFlags<AccessFs>); 3] = [
        (&spec.read_exec, AccessFs::from_read(known)),
        (&spec.read_only, read),
        // Everything but device nodes — and running what was written, for a process with an
        // exec list.
        (&spec.read_write, AccessFs::from_all(known) & !(AccessFs::MakeChar | AccessFs::MakeBlock) & !no_exec),
    ];
    for (paths, access) in groups {
        for path in paths {
            // A path that does not exist cannot be reached anyway.
            let Ok(fd) = PathFd::new(path) else { continue };
            let access = if path.is_dir() { access } else { access & AccessFs::from_file(known) };
            created = created.add_rule(PathBeneath::new(fd, access)).map_err(|e| fail(&e))?;
        }
    }
    Ok(created)
}

/// A child's seccomp program: shared, or its own copy to patch with its process group id.
enum Seccomp {
    Shared(&'static [sock_filter]),
    Patched(Mutex<Vec<sock_filter>>),
}

/// A sandbox built in the parent, applied in one child.
pub struct PreparedSandbox {
    ruleset: Mutex<Option<RulesetCreated>>,
    seccomp: Seccomp,
    limits: Limits,
    /// The namespaces of a child that reaches the network through the egress proxy.
    pub(super) egress: Option<EgressChild>,
    /// The id maps of a child in a user namespace of its own (egress, mount view).
    pub(super) ids: Option<IdMaps>,
    /// The private mount view of a direct-access process, where user namespaces exist.
    pub(super) view: Option<MountPlan>,
}

impl std::fmt::Debug for PreparedSandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedSandbox").field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl SandboxSpec {
    /// Build the sandbox in the parent. Fails closed, naming what the kernel lacks.
    pub fn prepare(&self) -> Result<PreparedSandbox, SandboxError> {
        // What the kernel offers and the seccomp programs do not change while we run: find and
        // build them once per process. The Landlock ruleset holds file descriptors and is
        // used by one child, so it is built per child.
        type Program = OnceLock<Result<Vec<sock_filter>, SandboxError>>;
        static PROBE: OnceLock<SandboxProbe> = OnceLock::new();
        // [network][signals]
        static SECCOMP: [[Program; 2]; 2] = [[OnceLock::new(), OnceLock::new()], [OnceLock::new(), OnceLock::new()]];
        let probe = PROBE.get_or_init(probe_kernel);
        if let Some(missing) = probe.missing() {
            return Err(SandboxError(missing));
        }
        if self.egress
            && let Err(why) = super::netns::user_namespaces()
        {
            return Err(SandboxError(format!(
                "its policy allows some URLs, and holding a process that reaches the network itself to them needs a network namespace of its own (unprivileged user namespaces), which is not available: {why}. Without it the process could reach any host, so it was not started; enable unprivileged user namespaces, or remove the tool's network rules"
            )));
        }
        let abi = probe.landlock_abi.unwrap_or(0);
        let signals = abi < 6 || self.force_signal_filter;
        // Without unprivileged user namespaces, Landlock alone (`jp sandbox status` says so): a
        // view is planned unless an earlier clone found them missing, and its own clone falls
        // back to none if they are (`spawn_raw`).
        let view = match &self.view {
            Some(view) if !super::netns::known_missing() => Some({
                let granted: Vec<&std::path::Path> = [&self.read_exec, &self.read_only, &self.read_write]
                    .into_iter()
                    .flatten()
                    .map(std::path::PathBuf::as_path)
                    .collect();
                MountPlan::new(view, &granted).map_err(|e| SandboxError(format!("the private mount view: {e}")))?
            }),
            _ => None,
        };
        let program = SECCOMP[usize::from(self.egress)][usize::from(signals)]
            .get_or_init(|| seccomp_program(self.egress, signals))
            .as_ref()
            .map_err(Clone::clone)?;
        Ok(PreparedSandbox {
            ruleset: Mutex::new(Some(landlock_ruleset(self, abi)?)),
            seccomp: if signals { Seccomp::Patched(Mutex::new(program.clone())) } else { Seccomp::Shared(program) },
            limits: self.limits,
            egress: if self.egress {
                Some(EgressChild::new().map_err(|e| SandboxError(format!("egress: cannot make a socket pair: {e}")))?)
            } else {
                None
            },
            ids: if self.egress || view.is_some() {
                Some(IdMaps::new().map_err(|e| SandboxError(format!("user namespace: {e}")))?)
            } else {
                None
            },
            view,
        })
    }
}

impl PreparedSandbox {
    /// Apply in the current process. Only ever called in a child before `exec`.
    fn apply_in_child(&self, steps: SandboxSteps) -> io::Result<()> {
        if self.egress.is_some() || self.view.is_some() {
            // The namespaces are made by the clone of `ChildCommand::spawn`.
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "an egress sandbox is started by ChildCommand::spawn",
            ));
        }
        self.apply_raw(steps).map_err(io::Error::from_raw_os_error)
    }

    /// [`apply_in_child`](Self::apply_in_child) without allocating, the error an errno: also
    /// safe in a child that shares the host's memory (`spawn`). (std passes only the errno of a
    /// `pre_exec` failure to the parent anyway.)
    pub(super) fn apply_raw(&self, steps: SandboxSteps) -> Result<(), i32> {
        let errno = |e: rustix::io::Errno| e.raw_os_error();
        // The ruleset is duplicated before the open-files limit is lowered: with that many fds
        // already open (inherited from a host with a higher limit) the duplicate would fail.
        let landlock = if steps.landlock { Some(self.landlock_ruleset()?) } else { None };
        if steps.pdeathsig {
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL)).map_err(errno)?;
        }
        if steps.rlimits {
            let l = &self.limits;
            for (resource, value) in [
                (Resource::As, l.address_space),
                (Resource::Nofile, l.open_files),
                (Resource::Nproc, l.processes),
                (Resource::Fsize, l.file_size),
                (Resource::Core, 0),
            ] {
                rustix::process::setrlimit(resource, Rlimit { current: Some(value), maximum: Some(value) })
                    .map_err(errno)?;
            }
        }
        if steps.no_new_privs {
            rustix::thread::set_no_new_privs(true).map_err(errno)?;
        }
        if steps.capabilities {
            drop_capabilities()?;
        }
        if let Some(ruleset) = landlock {
            Self::apply_landlock(ruleset)?;
        }
        if steps.seccomp {
            self.apply_seccomp()?;
        }
        Ok(())
    }

    /// A duplicate of the ruleset to restrict with: the host keeps (and closes) its own, also
    /// when the child shares its memory.
    fn landlock_ruleset(&self) -> Result<RulesetCreated, i32> {
        let ruleset = self.ruleset.try_lock().map_err(|_| libc::EBUSY)?;
        ruleset.as_ref().ok_or(libc::EBUSY)?.try_clone().map_err(|e| e.raw_os_error().unwrap_or(libc::EBADF))
    }

    fn apply_landlock(ruleset: RulesetCreated) -> Result<(), i32> {
        let last = || io::Error::last_os_error().raw_os_error().unwrap_or(libc::EPERM);
        let status = ruleset.restrict_self().map_err(|_| last())?;
        if status.ruleset == RulesetStatus::NotEnforced || !status.no_new_privs {
            return Err(libc::EPERM);
        }
        Ok(())
    }

    fn apply_seccomp(&self) -> Result<(), i32> {
        match &self.seccomp {
            Seccomp::Shared(program) => attach(program),
            Seccomp::Patched(program) => {
                let mut program = program.try_lock().map_err(|_| libc::EBUSY)?;
                // The child leads its own process group (set before this runs, and setpgid/setsid
                // are denied), so its pid is the group every descendant stays in.
                let pgid = rustix::process::getpgrp().as_raw_nonzero().get();
                if pgid != rustix::process::getpid().as_raw_nonzero().get() {
                    return Err(libc::EPERM);
                }
                patch_pgid(&mut program, pgid as u32);
                attach(&program)
            }
        }
    }

    /// Make `command`'s child apply this sandbox before `exec` (in its own process group).
    pub fn install(self: Arc<Self>, command: &mut tokio::process::Command) {
        self.install_steps(command.as_std_mut(), SandboxSteps::ALL);
    }

    /// [`install`](Self::install) applying only `steps`, for the cold-start benchmark's breakdown.
    /// A tool must never run with less than [`SandboxSteps::ALL`].
    #[doc(hidden)]
    pub fn install_steps(self: Arc<Self>, command: &mut std::process::Command, steps: SandboxSteps) {
        command.process_group(0);
        // SAFETY: the closure runs in the forked child before exec. It only makes system calls
        // (prctl, setrlimit, landlock, seccomp) on data prepared in the parent; it takes a lock that
        // no other code in the child can hold.
        #[allow(unsafe_code)]
        unsafe {
            command.pre_exec(move || self.apply_in_child(steps));
        }
    }
}
