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

use super::bpf::{self, Arg, Refusal};
use super::mounts::MountPlan;
use super::netns::{EGRESS_PORT, EgressChild, IdMaps};
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
    let user_namespaces_note = super::netns::user_namespaces().err().map(|e| e.to_string());
    SandboxProbe { landlock_abi, landlock_note, seccomp, user_namespaces_note }
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

/// The seccomp refusals of every sandboxed child: [`DENIED_SYSCALLS`], sockets and `clone` with
/// a namespace flag (EPERM), and `clone3` (ENOSYS).
fn refusals(network: bool) -> Vec<Refusal> {
    let mut out: Vec<Refusal> = DENIED_SYSCALLS.iter().map(|nr| Refusal::always(*nr, libc::EPERM)).collect();
    // No sockets at all: UDP, raw and netlink sockets are outside Landlock's TCP rules, and
    // before Landlock ABI 9 a pathname Unix socket can be connected to whatever the filesystem
    // rules say. A tool talks to its host over its pipes. Unnamed Unix socket pairs (used by
    // some runtimes internally) reach nothing, so they stay. A child granted the network gets
    // Internet sockets, nothing else (no netlink, raw packets or Unix sockets).
    out.push(if network {
        Refusal::when(
            libc::SYS_socket,
            libc::EPERM,
            vec![vec![Arg::Ne(0, libc::AF_INET as u32), Arg::Ne(0, libc::AF_INET6 as u32)]],
        )
    } else {
        Refusal::always(libc::SYS_socket, libc::EPERM)
    });
    // A Unix socket pair of streams or sequenced packets is connected to itself for good. A
    // datagram end is not: it can `connect`/`sendto` any pathname datagram socket it can write
    // (the system log, a user service) and pass descriptors there — refused.
    out.push(Refusal::when(
        libc::SYS_socketpair,
        libc::EPERM,
        vec![
            vec![Arg::Ne(0, libc::AF_UNIX as u32)],
            vec![
                Arg::MaskedNe(1, SOCK_TYPE_MASK, libc::SOCK_STREAM as u32),
                Arg::MaskedNe(1, SOCK_TYPE_MASK, libc::SOCK_SEQPACKET as u32),
            ],
        ],
    ));
    // clone() with a namespace flag would let the tool build its own view of the system;
    // CLONE_PARENT would make the new process jp's child, outside the tool's reach and its
    // reaping (one call left hundreds of zombies under `jp mcp`). (The flags are all in the low
    // 32 bits of clone's first argument.)
    let refused_flags = libc::CLONE_NEWUSER
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWNET
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS
        | libc::CLONE_NEWCGROUP
        | CLONE_NEWTIME
        | libc::CLONE_PARENT;
    out.push(Refusal::when(libc::SYS_clone, libc::EPERM, vec![vec![Arg::AnyBit(0, refused_flags as u32)]]));
    // The parent-death SIGKILL the child starts with ends it with jp; a process may set it (to
    // SIGKILL) for itself, never change or clear it.
    out.push(Refusal::when(
        libc::SYS_prctl,
        libc::EPERM,
        vec![vec![Arg::Eq(0, libc::PR_SET_PDEATHSIG as u32), Arg::Ne(1, libc::SIGKILL as u32)]],
    ));
    // Typing into a terminal (TIOCSTI; TIOCLINUX's selection paste): what a process that got
    // hold of jp's terminal would type runs in the user's shell after jp exits.
    out.push(Refusal::when(libc::SYS_ioctl, libc::EPERM, vec![vec![Arg::Eq(1, TIOCSTI)], vec![Arg::Eq(1, TIOCLINUX)]]));
    // No device nodes (a `/dev/tty` made in the workspace would open jp's terminal): Landlock
    // does not grant the rights either, and capabilities are dropped; this holds whoever runs jp.
    let device = |i| vec![vec![Arg::MaskedEq(i, S_IFMT, S_IFCHR)], vec![Arg::MaskedEq(i, S_IFMT, S_IFBLK)]];
    #[cfg(target_arch = "x86_64")]
    out.push(Refusal::when(libc::SYS_mknod, libc::EPERM, device(1)));
    out.push(Refusal::when(libc::SYS_mknodat, libc::EPERM, device(2)));
    // clone3 passes its flags in memory where seccomp cannot look. Answer ENOSYS, on which libc
    // falls back to clone(), whose flags the rule above sees.
    out.push(Refusal::always(libc::SYS_clone3, libc::ENOSYS));
    // A program runs only from a file Landlock lets the child execute. Landlock does not look at
    // files on the kernel's internal mounts, so an executable memfd (written, then run through
    // `execveat(fd, "", AT_EMPTY_PATH)` or `/proc/self/fd/N`) would run anything: a memfd must be
    // sealed non-executable (MFD_NOEXEC_SEAL, Linux 6.3+), and no program is run from a
    // descriptor.
    out.push(Refusal::when(
        libc::SYS_memfd_create,
        libc::EPERM,
        vec![vec![Arg::NoBit(1, MFD_NOEXEC_SEAL)], vec![Arg::AnyBit(1, MFD_EXEC)]],
    ));
    out.push(Refusal::when(libc::SYS_execveat, libc::EPERM, vec![vec![Arg::AnyBit(4, libc::AT_EMPTY_PATH as u32)]]));
    out
}

// Linux uapi values the libc crate does not define for glibc targets (or defines with other types).
const SOCK_TYPE_MASK: u32 = 0xf;
const CLONE_NEWTIME: libc::c_int = 0x80;
const TIOCSTI: u32 = 0x5412;
const TIOCLINUX: u32 = 0x541c;
const S_IFMT: u32 = 0o170_000;
const S_IFCHR: u32 = 0o020_000;
const S_IFBLK: u32 = 0o060_000;
const MFD_NOEXEC_SEAL: u32 = 0x0008;
const MFD_EXEC: u32 = 0x0010;
const F_SETOWN_EX: u32 = 15;
const FIOSETOWN: u32 = 0x8901;
const SIOCSPGRP: u32 = 0x8902;

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
fn signal_refusals() -> Vec<Refusal> {
    use Arg::{Eq, Ne};
    let pgid = PGID_PLACEHOLDER;
    let neg_pgid = PGID_PLACEHOLDER.wrapping_neg();
    let eperm = |nr, rules| Refusal::when(nr, libc::EPERM, rules);
    vec![
        eperm(libc::SYS_kill, vec![vec![Ne(0, 0), Ne(0, pgid), Ne(0, neg_pgid), Ne(1, 0)]]),
        eperm(libc::SYS_tkill, vec![vec![Ne(0, pgid), Ne(1, 0)]]),
        eperm(libc::SYS_tgkill, vec![vec![Ne(0, pgid), Ne(2, 0)]]),
        eperm(libc::SYS_rt_sigqueueinfo, vec![vec![Ne(0, pgid)]]),
        eperm(libc::SYS_rt_tgsigqueueinfo, vec![vec![Ne(0, pgid)]]),
        eperm(libc::SYS_pidfd_send_signal, vec![vec![Ne(1, 0)]]),
        eperm(
            libc::SYS_fcntl,
            vec![vec![Eq(1, libc::F_SETOWN as u32), Ne(2, 0), Ne(2, pgid), Ne(2, neg_pgid)], vec![Eq(1, F_SETOWN_EX)]],
        ),
        eperm(libc::SYS_ioctl, vec![vec![Eq(1, FIOSETOWN)], vec![Eq(1, SIOCSPGRP)]]),
    ]
}

/// The one seccomp program of a child: [`refusals`], plus [`signal_refusals`] (still holding
/// [`PGID_PLACEHOLDER`], see [`patch_pgid`]) when `signals`.
fn seccomp_program(network: bool, signals: bool) -> Result<Vec<sock_filter>, SandboxError> {
    let mut all = refusals(network);
    if signals {
        all.extend(signal_refusals());
    }
    let program = bpf::program(all)?;
    // The patch must find the placeholders, or the filter would compare with a constant no pid has.
    let count = |v: u32| program.iter().filter(|i| i.k == v).count();
    if signals && (count(PGID_PLACEHOLDER) == 0 || count(PGID_PLACEHOLDER.wrapping_neg()) == 0) {
        return Err(SandboxError("cannot build the seccomp signal filter: placeholder not found".into()));
    }
    Ok(program)
}

/// Put the real process group id where the placeholder (and its negation) stands. Runs in the
/// child: no allocation.
fn patch_pgid(program: &mut [sock_filter], pgid: u32) {
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
        let probe = PROBE.get_or_init(probe);
        if let Some(missing) = probe.missing() {
            return Err(SandboxError(missing));
        }
        if self.egress
            && let Some(why) = &probe.user_namespaces_note
        {
            return Err(SandboxError(format!(
                "its policy allows some URLs, and holding a process that reaches the network itself to them needs a network namespace of its own (unprivileged user namespaces), which is not available: {why}. Without it the process could reach any host, so it was not started; enable unprivileged user namespaces, or remove the tool's network rules"
            )));
        }
        let abi = probe.landlock_abi.unwrap_or(0);
        let signals = abi < 6 || self.force_signal_filter;
        // Without unprivileged user namespaces, Landlock alone (`jp sandbox status` says so).
        let view = match &self.view {
            Some(view) if probe.user_namespaces_note.is_none() => {
                Some(MountPlan::new(view).map_err(|e| SandboxError(format!("the private mount view: {e}")))?)
            }
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

/// Attach `program` to the calling thread (after `no_new_privs`, which an unprivileged filter
/// needs). Only system calls, no allocation: safe between clone and exec.
fn attach(program: &[sock_filter]) -> Result<(), i32> {
    rustix::thread::set_no_new_privs(true).map_err(|e| e.raw_os_error())?;
    let len = u16::try_from(program.len()).map_err(|_| libc::E2BIG)?;
    let fprog = libc::sock_fprog { len, filter: program.as_ptr().cast_mut() };
    // SAFETY: `fprog` points at `len` valid instructions for the duration of the call; the kernel
    // copies them.
    #[allow(unsafe_code)]
    let rc = unsafe {
        libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, &fprog as *const libc::sock_fprog)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL));
    }
    Ok(())
}

/// The highest capability number this code knows of is 40 (`CAP_CHECKPOINT_RESTORE`); the loop
/// goes past it until the kernel says there is no such capability.
const CAP_PROBE_LIMIT: libc::c_ulong = 64;
// securebits: root's exec grants no capabilities, no setuid fix-up, no ambient raise — each locked.
const SECURE_BITS: libc::c_ulong = 0b1111_1111 & !(1 << 4); // all but SECBIT_KEEP_CAPS itself

/// Every capability gone, for good: the bounding set emptied (so `execve` of anything, as root
/// too, grants none), the securebits locked so root gets nothing back, the ambient set cleared,
/// and the effective, permitted and inheritable sets emptied. Without `CAP_SETPCAP` (an
/// unprivileged jp, no user namespace) there is nothing to drop beyond the last two, and
/// `no_new_privs` keeps file capabilities from adding any. Only system calls, no allocation.
fn drop_capabilities() -> Result<(), i32> {
    let last = || io::Error::last_os_error().raw_os_error().unwrap_or(libc::EPERM);
    #[allow(unsafe_code)]
    // SAFETY: prctl and capset on integers and a C struct on this stack frame.
    unsafe {
        let mut header = CapHeader { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
        let mut data = [CapData::default(); 2];
        if libc::syscall(libc::SYS_capget, &mut header as *mut CapHeader, data.as_mut_ptr()) != 0 {
            return Err(last());
        }
        let setpcap = data[0].effective & (1 << CAP_SETPCAP) != 0;
        if setpcap {
            for cap in 0..CAP_PROBE_LIMIT {
                if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                    if last() == libc::EINVAL {
                        break;
                    }
                    return Err(last());
                }
            }
            if libc::prctl(libc::PR_SET_SECUREBITS, SECURE_BITS, 0, 0, 0) != 0 {
                return Err(last());
            }
        }
        // Fails with EINVAL only on kernels before 4.3, which have no ambient set.
        if libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && last() != libc::EINVAL {
            return Err(last());
        }
        let none = [CapData::default(); 2];
        if libc::syscall(libc::SYS_capset, &mut header as *mut CapHeader, none.as_ptr()) != 0 {
            return Err(last());
        }
    }
    Ok(())
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
const CAP_SETPCAP: u32 = 8;

/// `struct __user_cap_header_struct`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct` (two of them for 64 capabilities).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
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

#[cfg(test)]
mod tests {
    use super::*;

    const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
    const EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
    const ENOSYS: u32 = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;

    fn nr(n: i64) -> u32 {
        n as u32
    }

    fn decide(program: &[sock_filter], n: u32, args: [u64; 6]) -> u32 {
        bpf::run(program, bpf::TEST_ARCH, n, args).0
    }

    #[test]
    fn every_syscall_number_is_decided_as_the_rules_say_within_a_few_instructions() {
        for network in [false, true] {
            for signals in [false, true] {
                let program = seccomp_program(network, signals).unwrap();
                let mut longest = 0;
                for n in 0..1024u32 {
                    let (action, steps) = bpf::run(&program, bpf::TEST_ARCH, n, [0; 6]);
                    longest = longest.max(steps);
                    let expected = if DENIED_SYSCALLS.contains(&i64::from(n)) || (n == nr(libc::SYS_socket) && !network)
                    {
                        EPERM
                    } else if n == nr(libc::SYS_clone3) {
                        ENOSYS
                    } else if n == nr(libc::SYS_socket) || n == nr(libc::SYS_socketpair) {
                        // Domain 0 (AF_UNSPEC) is neither Unix nor Internet.
                        EPERM
                    } else if n == nr(libc::SYS_memfd_create) {
                        // Flags 0: not sealed non-executable.
                        EPERM
                    } else if signals
                        && [libc::SYS_rt_sigqueueinfo, libc::SYS_rt_tgsigqueueinfo].contains(&i64::from(n))
                    {
                        // Queued signals to pid 0: not the group (the placeholder is not patched).
                        EPERM
                    } else {
                        ALLOW
                    };
                    assert_eq!(action, expected, "syscall {n}, network {network}, signals {signals}");
                }
                // A search, not a list: what makes attaching the filter cheap (see `bpf`).
                assert!(longest <= 24, "{longest} instructions to decide a syscall number");
            }
        }
    }

    #[test]
    fn a_memfd_must_be_sealed_non_executable_and_no_descriptor_is_executed() {
        let program = seccomp_program(false, false).unwrap();
        let flags = |f: u32| [0, u64::from(f), 0, 0, 0, 0];
        let memfd = nr(libc::SYS_memfd_create);
        assert_eq!(decide(&program, memfd, flags(libc::MFD_CLOEXEC)), EPERM);
        assert_eq!(decide(&program, memfd, flags(MFD_EXEC | MFD_NOEXEC_SEAL)), EPERM);
        assert_eq!(decide(&program, memfd, flags(MFD_NOEXEC_SEAL | libc::MFD_CLOEXEC)), ALLOW);
        let execveat = nr(libc::SYS_execveat);
        let at = |f: i32| [3, 0, 0, 0, f as u32 as u64, 0];
        assert_eq!(decide(&program, execveat, at(libc::AT_EMPTY_PATH)), EPERM);
        assert_eq!(decide(&program, execveat, at(libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW)), EPERM);
        assert_eq!(decide(&program, execveat, at(0)), ALLOW, "a path relative to a directory descriptor");
    }

    #[test]
    fn arguments_are_tested_as_before() {
        let closed = seccomp_program(false, false).unwrap();
        let open = seccomp_program(true, false).unwrap();
        let socket = nr(libc::SYS_socket);
        let a = |first: i32| [first as u32 as u64, 0, 0, 0, 0, 0];
        for domain in [libc::AF_INET, libc::AF_INET6, libc::AF_UNIX, libc::AF_NETLINK, libc::AF_PACKET] {
            assert_eq!(decide(&closed, socket, a(domain)), EPERM, "no sockets without the network");
            let inet = domain == libc::AF_INET || domain == libc::AF_INET6;
            assert_eq!(decide(&open, socket, a(domain)), if inet { ALLOW } else { EPERM }, "domain {domain}");
            let stream = [domain as u32 as u64, libc::SOCK_STREAM as u64, 0, 0, 0, 0];
            let pair = decide(&closed, nr(libc::SYS_socketpair), stream);
            assert_eq!(pair, if domain == libc::AF_UNIX { ALLOW } else { EPERM }, "socketpair {domain}");
        }
        // A Unix pair of streams or packets, with any flags; never of datagrams (or raw).
        let pair = |kind: i32| {
            let args = [libc::AF_UNIX as u64, (kind | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK) as u64, 0, 0, 0, 0];
            decide(&closed, nr(libc::SYS_socketpair), args)
        };
        assert_eq!(pair(libc::SOCK_STREAM), ALLOW);
        assert_eq!(pair(libc::SOCK_SEQPACKET), ALLOW);
        assert_eq!(pair(libc::SOCK_DGRAM), EPERM);
        assert_eq!(pair(libc::SOCK_RAW), EPERM);
        // The parent-death signal: set to SIGKILL, never changed or cleared; other prctls pass.
        let prctl = |op: i32, arg: i32| decide(&open, nr(libc::SYS_prctl), [op as u64, arg as u64, 0, 0, 0, 0]);
        assert_eq!(prctl(libc::PR_SET_PDEATHSIG, 0), EPERM);
        assert_eq!(prctl(libc::PR_SET_PDEATHSIG, libc::SIGUSR1), EPERM);
        assert_eq!(prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL), ALLOW);
        assert_eq!(prctl(libc::PR_SET_NAME, 0), ALLOW);
        // Typing into a terminal, with and without the signal rules (merged on one syscall).
        let signals = seccomp_program(false, true).unwrap();
        for program in [&closed, &signals] {
            let ioctl = |cmd: u32| decide(program, nr(libc::SYS_ioctl), [0, u64::from(cmd), 0, 0, 0, 0]);
            assert_eq!(ioctl(TIOCSTI), EPERM);
            assert_eq!(ioctl(TIOCLINUX), EPERM);
            assert_eq!(ioctl(libc::TCGETS as u32), ALLOW);
        }
        assert_eq!(decide(&signals, nr(libc::SYS_ioctl), [3, u64::from(FIOSETOWN), 0, 0, 0, 0]), EPERM);
        // Device nodes, not FIFOs or files.
        let mknodat = |mode: u32| decide(&closed, nr(libc::SYS_mknodat), [0, 0, u64::from(mode | 0o600), 0, 0, 0]);
        assert_eq!(mknodat(S_IFCHR), EPERM);
        assert_eq!(mknodat(S_IFBLK), EPERM);
        assert_eq!(mknodat(libc::S_IFIFO), ALLOW);
        assert_eq!(mknodat(libc::S_IFREG), ALLOW);
        let clone = nr(libc::SYS_clone);
        let thread = libc::CLONE_VM | libc::CLONE_FS | libc::CLONE_FILES | libc::CLONE_SIGHAND | libc::CLONE_THREAD;
        assert_eq!(decide(&closed, clone, a(thread)), ALLOW);
        assert_eq!(decide(&closed, clone, a(libc::SIGCHLD)), ALLOW);
        for ns in [
            libc::CLONE_NEWUSER,
            libc::CLONE_NEWNS,
            libc::CLONE_NEWNET,
            libc::CLONE_NEWPID,
            libc::CLONE_NEWCGROUP,
            CLONE_NEWTIME,
            libc::CLONE_PARENT,
        ] {
            assert_eq!(decide(&closed, clone, a(ns | libc::SIGCHLD)), EPERM, "clone flag {ns:#x}");
        }
        // x32 numbers are refused, numbers from 2^31 left to the kernel, another ABI killed.
        assert_eq!(decide(&closed, 0x4000_0000 + nr(libc::SYS_getpid), [0; 6]), EPERM);
        assert_eq!(decide(&closed, u32::MAX, [0; 6]), ALLOW);
        assert_eq!(bpf::run(&closed, 0x4000_0003, 20, [0; 6]).0, libc::SECCOMP_RET_KILL_PROCESS);
    }

    #[test]
    fn the_signal_rules_hold_once_the_group_is_patched_in() {
        let mut program = seccomp_program(false, true).unwrap();
        let group = 4242u32;
        patch_pgid(&mut program, group);
        let own = u64::from(group);
        let own_neg = u64::from(group.wrapping_neg());
        let other = 777u64;
        let cases: [(i64, [u64; 6], u32); 16] = [
            (libc::SYS_kill, [0, 9, 0, 0, 0, 0], ALLOW),
            (libc::SYS_kill, [own, 9, 0, 0, 0, 0], ALLOW),
            (libc::SYS_kill, [own_neg, 9, 0, 0, 0, 0], ALLOW),
            (libc::SYS_kill, [other, 0, 0, 0, 0, 0], ALLOW),
            (libc::SYS_kill, [other, 9, 0, 0, 0, 0], EPERM),
            (libc::SYS_tkill, [own, 9, 0, 0, 0, 0], ALLOW),
            (libc::SYS_tkill, [other, 9, 0, 0, 0, 0], EPERM),
            (libc::SYS_tgkill, [other, other, 9, 0, 0, 0], EPERM),
            (libc::SYS_rt_sigqueueinfo, [other, 9, 0, 0, 0, 0], EPERM),
            (libc::SYS_pidfd_send_signal, [3, 9, 0, 0, 0, 0], EPERM),
            (libc::SYS_pidfd_send_signal, [3, 0, 0, 0, 0, 0], ALLOW),
            (libc::SYS_fcntl, [3, libc::F_SETOWN as u64, other, 0, 0, 0], EPERM),
            (libc::SYS_fcntl, [3, libc::F_SETOWN as u64, own, 0, 0, 0], ALLOW),
            (libc::SYS_fcntl, [3, u64::from(F_SETOWN_EX), 0, 0, 0, 0], EPERM),
            (libc::SYS_fcntl, [3, libc::F_GETFL as u64, 0, 0, 0, 0], ALLOW),
            (libc::SYS_ioctl, [3, u64::from(FIOSETOWN), 0, 0, 0, 0], EPERM),
        ];
        for (n, args, expected) in cases {
            assert_eq!(decide(&program, nr(n), args), expected, "syscall {n} {args:?}");
        }
        // Without the signal rules none of this is filtered.
        let plain = seccomp_program(false, false).unwrap();
        assert_eq!(decide(&plain, nr(libc::SYS_kill), [other, 9, 0, 0, 0, 0]), ALLOW);
    }
}
