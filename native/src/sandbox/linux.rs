//! Linux: Landlock + seccomp + rlimits.

use std::io;
use std::os::unix::process::CommandExt as _;
use std::sync::{Arc, Mutex, OnceLock};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};
use rustix::process::{Resource, Rlimit, Signal};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
};

use super::{Limits, SandboxError, SandboxProbe, SandboxSpec};

/// Ask the kernel what it enforces, without restricting anything.
pub fn probe() -> SandboxProbe {
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
    SandboxProbe { landlock_abi, landlock_note, seccomp }
}

/// Syscalls a tool never needs and that could undo or bypass the sandbox.
const DENIED_SYSCALLS: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kcmp,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_kexec_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_syslog,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    // Leaving the process group would let a grandchild outlive the tool's cleanup.
    libc::SYS_setsid,
    libc::SYS_setpgid,
];

fn seccomp_programs() -> Result<Vec<BpfProgram>, SandboxError> {
    let fail = |e: &dyn std::fmt::Display| SandboxError(format!("cannot build the seccomp filter: {e}"));
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> =
        DENIED_SYSCALLS.iter().map(|nr| (*nr, Vec::new())).collect();
    // No sockets at all: UDP, raw and netlink sockets are outside Landlock's TCP rules, and
    // before Landlock ABI 9 a pathname Unix socket can be connected to whatever the filesystem
    // rules say. A tool talks to its host over its pipes. Unnamed Unix socket pairs (used by
    // some runtimes internally) reach nothing, so they stay.
    rules.insert(libc::SYS_socket, Vec::new());
    let non_unix = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, libc::AF_UNIX as u64)
        .map_err(|e| fail(&e))?;
    rules.insert(libc::SYS_socketpair, vec![SeccompRule::new(vec![non_unix]).map_err(|e| fail(&e))?]);
    // clone() with a namespace flag would let the tool build its own view of the system: match
    // each flag under its mask.
    let mut clone_rules = Vec::new();
    for flag in [
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWNS,
        libc::CLONE_NEWNET,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWCGROUP,
    ] {
        let c = SeccompCondition::new(0, SeccompCmpArgLen::Qword, SeccompCmpOp::MaskedEq(flag as u64), flag as u64)
            .map_err(|e| fail(&e))?;
        clone_rules.push(SeccompRule::new(vec![c]).map_err(|e| fail(&e))?);
    }
    rules.insert(libc::SYS_clone, clone_rules);
    let arch: seccompiler::TargetArch = std::env::consts::ARCH.try_into().map_err(|e| fail(&e))?;
    let deny = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)
        .map_err(|e| fail(&e))?;
    // clone3 passes its flags in memory where seccomp cannot look. Answer ENOSYS, on which libc
    // falls back to clone(), whose flags the rule above sees.
    let clone3 = SeccompFilter::new(
        [(libc::SYS_clone3, Vec::new())].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(|e| fail(&e))?;
    Ok(vec![
        deny.try_into().map_err(|e: seccompiler::BackendError| fail(&e))?,
        clone3.try_into().map_err(|e: seccompiler::BackendError| fail(&e))?,
    ])
}

fn landlock_ruleset(spec: &SandboxSpec, abi: i32) -> Result<RulesetCreated, SandboxError> {
    let fail = |e: &dyn std::fmt::Display| SandboxError(format!("Landlock: {e}"));
    let known = ABI::V6;
    let mut ruleset = Ruleset::default()
        // What we need, or nothing: filesystem (ABI 1) and TCP (ABI 4).
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .map_err(|e| fail(&e))?
        .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
        .map_err(|e| fail(&e))?
        // What newer kernels add, where present: refer/truncate/ioctl rights and scoping.
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(known))
        .map_err(|e| fail(&e))?;
    if abi >= 6 {
        ruleset = ruleset.scope(Scope::AbstractUnixSocket | Scope::Signal).map_err(|e| fail(&e))?;
    }
    let mut created = ruleset.create().map_err(|e| fail(&e))?;
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let groups: [(&[std::path::PathBuf], landlock::BitFlags<AccessFs>); 3] = [
        (&spec.read_exec, AccessFs::from_read(known)),
        (&spec.read_only, read),
        (&spec.read_write, AccessFs::from_all(known)),
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

/// A sandbox built in the parent, applied in one child.
pub struct PreparedSandbox {
    ruleset: Mutex<Option<RulesetCreated>>,
    seccomp: Arc<[BpfProgram]>,
    limits: Limits,
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
        // consumed by the child, so it is built per child.
        static PROBE: OnceLock<SandboxProbe> = OnceLock::new();
        static SECCOMP: OnceLock<Result<Arc<[BpfProgram]>, SandboxError>> = OnceLock::new();
        let probe = PROBE.get_or_init(probe);
        if let Some(missing) = probe.missing() {
            return Err(SandboxError(missing));
        }
        let abi = probe.landlock_abi.unwrap_or(0);
        Ok(PreparedSandbox {
            ruleset: Mutex::new(Some(landlock_ruleset(self, abi)?)),
            seccomp: SECCOMP.get_or_init(|| seccomp_programs().map(Arc::from)).clone()?,
            limits: self.limits,
        })
    }
}

fn set_limit(resource: Resource, value: u64) -> io::Result<()> {
    rustix::process::setrlimit(resource, Rlimit { current: Some(value), maximum: Some(value) }).map_err(io::Error::from)
}

impl PreparedSandbox {
    /// Apply in the current process. Only ever called in a forked child before `exec`.
    fn apply_in_child(&self) -> io::Result<()> {
        rustix::process::set_parent_process_death_signal(Some(Signal::KILL)).map_err(io::Error::from)?;
        set_limit(Resource::As, self.limits.address_space)?;
        set_limit(Resource::Nofile, self.limits.open_files)?;
        set_limit(Resource::Nproc, self.limits.processes)?;
        set_limit(Resource::Fsize, self.limits.file_size)?;
        set_limit(Resource::Core, 0)?;
        let ruleset = self
            .ruleset
            .try_lock()
            .ok()
            .and_then(|mut r| r.take())
            .ok_or_else(|| io::Error::other("sandbox already used"))?;
        let status = ruleset.restrict_self().map_err(io::Error::other)?;
        if status.ruleset == RulesetStatus::NotEnforced || !status.no_new_privs {
            return Err(io::Error::other("Landlock was not enforced"));
        }
        for program in self.seccomp.iter() {
            seccompiler::apply_filter(program).map_err(io::Error::other)?;
        }
        Ok(())
    }

    /// Make `command`'s child apply this sandbox before `exec` (in its own process group).
    pub fn install(self: Arc<Self>, command: &mut tokio::process::Command) {
        command.process_group(0);
        // SAFETY: the closure runs in the forked child before exec. It only makes system calls
        // (prctl, setrlimit, landlock, seccomp) on data prepared in the parent; it takes a lock that
        // no other code in the child can hold.
        #[allow(unsafe_code)]
        unsafe {
            command.as_std_mut().pre_exec(move || self.apply_in_child());
        }
    }
}
