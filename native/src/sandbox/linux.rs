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

use super::{Limits, SandboxError, SandboxProbe, SandboxSpec, SandboxSteps};

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
    // A child granted the network may connect, never serve: `listen` on an unbound socket binds
    // an ephemeral port without the bind that Landlock checks.
    libc::SYS_listen,
    libc::SYS_accept,
    libc::SYS_accept4,
];

fn seccomp_fail(e: &dyn std::fmt::Display) -> SandboxError {
    SandboxError(format!("cannot build the seccomp filter: {e}"))
}

/// `arg` (its low 32 bits) compared with `value`.
fn arg(index: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, SandboxError> {
    SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value).map_err(|e| seccomp_fail(&e))
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, SandboxError> {
    SeccompRule::new(conditions).map_err(|e| seccomp_fail(&e))
}

fn compile(rules: std::collections::BTreeMap<i64, Vec<SeccompRule>>, errno: i32) -> Result<BpfProgram, SandboxError> {
    let arch: seccompiler::TargetArch = std::env::consts::ARCH.try_into().map_err(|e| seccomp_fail(&e))?;
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(errno as u32), arch)
        .map_err(|e| seccomp_fail(&e))?;
    filter.try_into().map_err(|e: seccompiler::BackendError| seccomp_fail(&e))
}

fn seccomp_programs(network: bool) -> Result<Vec<BpfProgram>, SandboxError> {
    let mut rules: std::collections::BTreeMap<i64, Vec<SeccompRule>> =
        DENIED_SYSCALLS.iter().map(|nr| (*nr, Vec::new())).collect();
    // No sockets at all: UDP, raw and netlink sockets are outside Landlock's TCP rules, and
    // before Landlock ABI 9 a pathname Unix socket can be connected to whatever the filesystem
    // rules say. A tool talks to its host over its pipes. Unnamed Unix socket pairs (used by
    // some runtimes internally) reach nothing, so they stay. A child granted the network gets
    // Internet sockets, nothing else (no netlink, raw packets or Unix sockets).
    let socket = if network {
        vec![rule(vec![
            arg(0, SeccompCmpOp::Ne, libc::AF_INET as u64)?,
            arg(0, SeccompCmpOp::Ne, libc::AF_INET6 as u64)?,
        ])?]
    } else {
        Vec::new()
    };
    rules.insert(libc::SYS_socket, socket);
    rules.insert(libc::SYS_socketpair, vec![rule(vec![arg(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?])?]);
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
            .map_err(|e| seccomp_fail(&e))?;
        clone_rules.push(rule(vec![c])?);
    }
    rules.insert(libc::SYS_clone, clone_rules);
    // clone3 passes its flags in memory where seccomp cannot look. Answer ENOSYS, on which libc
    // falls back to clone(), whose flags the rule above sees.
    let clone3 = [(libc::SYS_clone3, Vec::new())].into_iter().collect();
    let mut programs = vec![compile(rules, libc::EPERM)?, compile(clone3, libc::ENOSYS)?];
    #[cfg(target_arch = "x86_64")]
    programs.push(x32_program());
    Ok(programs)
}

/// seccompiler's filters match x86_64 syscall numbers and allow the rest, but an x86_64 process
/// may also issue x32 syscalls (the same number with bit 30 set, `__X32_SYSCALL_BIT`), which a
/// kernel built with x32 support runs: every rule above could be bypassed. Refuse any number in
/// the x32 range with EPERM (not ENOSYS, so a test tells the filter from a kernel without x32).
/// Numbers at or above 2^31 (`syscall(-1)`) run nothing, and the kernel answers ENOSYS itself.
#[cfg(target_arch = "x86_64")]
fn x32_program() -> BpfProgram {
    use seccompiler::sock_filter;
    const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    // Offsets in `struct seccomp_data`.
    const NR: u32 = 0;
    const ARCH: u32 = 4;
    let load = |k: u32| sock_filter { code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16, jt: 0, jf: 0, k };
    let jump_ge =
        |k: u32, jt: u8, jf: u8| sock_filter { code: (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16, jt, jf, k };
    let ret = |k: u32| sock_filter { code: (libc::BPF_RET | libc::BPF_K) as u16, jt: 0, jf: 0, k };
    vec![
        load(ARCH),
        sock_filter { code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16, jt: 1, jf: 0, k: AUDIT_ARCH_X86_64 },
        // Another ABI (i386 through int 0x80): what seccompiler's filters do too.
        ret(libc::SECCOMP_RET_KILL_PROCESS),
        load(NR),
        jump_ge(0x8000_0000, 2, 0),
        jump_ge(X32_SYSCALL_BIT, 0, 1),
        ret(libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
        ret(libc::SECCOMP_RET_ALLOW),
    ]
}

// Linux uapi values the libc crate does not define for glibc targets.
const F_SETOWN_EX: u64 = 15;
const FIOSETOWN: u64 = 0x8901;
const SIOCSPGRP: u64 = 0x8902;

/// Stands for the child's process group id in the signal filter until the child patches in the
/// real one: above the largest pid Linux allocates (2^22), so no real argument is mistaken for it.
const PGID_PLACEHOLDER: u32 = 0x3ead_beef;

/// Without Landlock signal scoping (ABI < 6), the signals a tool may send: to its own process
/// group (pid 0, -pgid, or the leader pgid), to the leader's threads (`raise` and `abort` in the
/// leader), and existence checks (signal 0). Everything else that can deliver a signal — `kill`
/// of another pid, `tkill`/`tgkill`/`rt_*sigqueueinfo` to another process, `pidfd_send_signal`
/// (its target is not visible), `F_SETOWN` of a file to another process (SIGIO), `F_SETOWN_EX`
/// and `FIOSETOWN`/`SIOCSPGRP` (pointer arguments) — is refused with EPERM. seccomp cannot
/// compare an argument with the caller's own pid, so a descendant of the leader cannot signal a
/// sibling by pid or its own threads (`raise` fails; glibc's `abort` then still ends the process,
/// by SIGSEGV). Built with [`PGID_PLACEHOLDER`]; see [`patch_pgid`].
fn signal_program() -> Result<BpfProgram, SandboxError> {
    use SeccompCmpOp::{Eq, Ne};
    let pgid = u64::from(PGID_PLACEHOLDER);
    let neg_pgid = u64::from(PGID_PLACEHOLDER.wrapping_neg());
    let not_ours = |i: u8| -> Result<Vec<SeccompCondition>, SandboxError> { Ok(vec![arg(i, Ne, pgid)?]) };
    let mut rules = std::collections::BTreeMap::new();
    rules.insert(
        libc::SYS_kill,
        vec![rule(vec![arg(0, Ne, 0)?, arg(0, Ne, pgid)?, arg(0, Ne, neg_pgid)?, arg(1, Ne, 0)?])?],
    );
    rules.insert(libc::SYS_tkill, vec![rule([not_ours(0)?, vec![arg(1, Ne, 0)?]].concat())?]);
    rules.insert(libc::SYS_tgkill, vec![rule([not_ours(0)?, vec![arg(2, Ne, 0)?]].concat())?]);
    rules.insert(libc::SYS_rt_sigqueueinfo, vec![rule(not_ours(0)?)?]);
    rules.insert(libc::SYS_rt_tgsigqueueinfo, vec![rule(not_ours(0)?)?]);
    rules.insert(libc::SYS_pidfd_send_signal, vec![rule(vec![arg(1, Ne, 0)?])?]);
    rules.insert(
        libc::SYS_fcntl,
        vec![
            rule(vec![arg(1, Eq, libc::F_SETOWN as u64)?, arg(2, Ne, 0)?, arg(2, Ne, pgid)?, arg(2, Ne, neg_pgid)?])?,
            rule(vec![arg(1, Eq, F_SETOWN_EX)?])?,
        ],
    );
    rules.insert(libc::SYS_ioctl, vec![rule(vec![arg(1, Eq, FIOSETOWN)?])?, rule(vec![arg(1, Eq, SIOCSPGRP)?])?]);
    let program = compile(rules, libc::EPERM)?;
    // The patch must find the placeholders, or the filter would compare with a constant no pid has.
    let count = |v: u32| program.iter().filter(|i| i.k == v).count();
    if count(PGID_PLACEHOLDER) == 0 || count(PGID_PLACEHOLDER.wrapping_neg()) == 0 {
        return Err(SandboxError("cannot build the seccomp signal filter: placeholder not found".into()));
    }
    Ok(program)
}

/// Put the real process group id where the placeholder (and its negation) stands. Runs in the
/// child: no allocation.
fn patch_pgid(program: &mut [seccompiler::sock_filter], pgid: u32) {
    for insn in program {
        if insn.k == PGID_PLACEHOLDER {
            insn.k = pgid;
        } else if insn.k == PGID_PLACEHOLDER.wrapping_neg() {
            insn.k = pgid.wrapping_neg();
        }
    }
}

fn landlock_ruleset(spec: &SandboxSpec, abi: i32) -> Result<RulesetCreated, SandboxError> {
    let fail = |e: &dyn std::fmt::Display| SandboxError(format!("Landlock: {e}"));
    let known = ABI::V6;
    let mut ruleset = Ruleset::default()
        // What we need, or nothing: filesystem (ABI 1) and TCP (ABI 4).
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .map_err(|e| fail(&e))?
        // A child granted the network may connect anywhere (the kernel cannot narrow by URL),
        // never listen.
        .handle_access(if spec.network {
            AccessNet::BindTcp.into()
        } else {
            AccessNet::BindTcp | AccessNet::ConnectTcp
        })
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
    /// The signal filter (kernels without Landlock signal scoping), patched in the child.
    signals: Mutex<Option<BpfProgram>>,
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
        static SECCOMP: [OnceLock<Result<Arc<[BpfProgram]>, SandboxError>>; 2] = [OnceLock::new(), OnceLock::new()];
        static SIGNALS: OnceLock<Result<BpfProgram, SandboxError>> = OnceLock::new();
        let probe = PROBE.get_or_init(probe);
        if let Some(missing) = probe.missing() {
            return Err(SandboxError(missing));
        }
        let abi = probe.landlock_abi.unwrap_or(0);
        let seccomp = SECCOMP[usize::from(self.network)].get_or_init(|| seccomp_programs(self.network).map(Arc::from));
        let signals =
            if abi < 6 || self.force_signal_filter { Some(SIGNALS.get_or_init(signal_program).clone()?) } else { None };
        Ok(PreparedSandbox {
            ruleset: Mutex::new(Some(landlock_ruleset(self, abi)?)),
            seccomp: seccomp.clone()?,
            signals: Mutex::new(signals),
            limits: self.limits,
        })
    }
}

fn set_limit(resource: Resource, value: u64) -> io::Result<()> {
    rustix::process::setrlimit(resource, Rlimit { current: Some(value), maximum: Some(value) }).map_err(io::Error::from)
}

impl PreparedSandbox {
    /// Apply in the current process. Only ever called in a forked child before `exec`.
    fn apply_in_child(&self, steps: SandboxSteps) -> io::Result<()> {
        if steps.pdeathsig {
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL)).map_err(io::Error::from)?;
        }
        if steps.rlimits {
            set_limit(Resource::As, self.limits.address_space)?;
            set_limit(Resource::Nofile, self.limits.open_files)?;
            set_limit(Resource::Nproc, self.limits.processes)?;
            set_limit(Resource::Fsize, self.limits.file_size)?;
            set_limit(Resource::Core, 0)?;
        }
        if steps.no_new_privs {
            rustix::thread::set_no_new_privs(true).map_err(io::Error::from)?;
        }
        if steps.landlock {
            self.apply_landlock()?;
        }
        if steps.seccomp {
            self.apply_seccomp()?;
        }
        Ok(())
    }

    fn apply_landlock(&self) -> io::Result<()> {
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
        Ok(())
    }

    fn apply_seccomp(&self) -> io::Result<()> {
        for program in self.seccomp.iter() {
            seccompiler::apply_filter(program).map_err(io::Error::other)?;
        }
        let mut signals = self.signals.try_lock().map_err(|_| io::Error::other("sandbox already used"))?;
        if let Some(program) = signals.as_mut() {
            // The child leads its own process group (set before this runs, and setpgid/setsid are
            // denied above), so its pid is the group every descendant stays in.
            let pgid = rustix::process::getpgrp().as_raw_nonzero().get();
            if pgid != rustix::process::getpid().as_raw_nonzero().get() {
                return Err(io::Error::other("the sandboxed child does not lead its process group"));
            }
            patch_pgid(program, pgid as u32);
            seccompiler::apply_filter(program).map_err(io::Error::other)?;
        }
        Ok(())
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
