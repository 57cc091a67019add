//! The network of a direct-access process whose policy allows some URLs: a user and network
//! namespace of its own, where only loopback exists and `127.0.0.1:`[`EGRESS_PORT`] is jp's
//! egress proxy.
//!
//! The namespaces are made by the `clone` that starts the tool (`CLONE_NEWUSER | CLONE_NEWNET`:
//! no `unshare`/`setns` later, whose credential change would mark the host — whose memory the
//! child shares until `execve` — as not dumpable). Before anything else, the child maps its own
//! uid and gid (one line each, as `unshare -Urn` does), brings `lo` up, binds a listening socket
//! on `127.0.0.1:EGRESS_PORT` *inside its namespace* and hands it to `jp` over a socket pair
//! (`SCM_RIGHTS`); then it applies the rest of the sandbox and execs. `jp` accepts on that
//! socket from its own namespace (a socket stays in the namespace it was made in), so there is
//! no relay process and no path on the host the tool could reach: its only way out is the proxy.
//! UDP, DNS and every other address reach nothing (there is no other interface); Landlock also
//! lets it connect to [`EGRESS_PORT`] only. Everything in the child is system calls on data
//! prepared here (see `spawn.rs`).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::OnceLock;

/// The loopback port of the egress proxy inside a tool's network namespace (the namespace is
/// fresh, so any port is free; this one is the conventional proxy port).
pub const EGRESS_PORT: u16 = 3128;

/// The proxy URL a tool's environment names (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`).
pub fn proxy_url() -> String {
    format!("http://127.0.0.1:{EGRESS_PORT}")
}

/// The id maps of a child's own user namespace (made by its `clone`), prepared in the parent.
/// The child's own ids, the same inside: files keep their owner, and a non-root id has no
/// capabilities left after `execve` (root's are dropped by the sandbox).
pub(super) struct IdMaps {
    uid_map: CString,
    gid_map: CString,
}

impl IdMaps {
    pub(super) fn new() -> io::Result<Self> {
        let (uid, gid) = (rustix::process::geteuid().as_raw(), rustix::process::getegid().as_raw());
        let map = |id: u32| CString::new(format!("{id} {id} 1\n")).map_err(io::Error::other);
        Ok(Self { uid_map: map(uid)?, gid_map: map(gid)? })
    }

    /// In the child, first of all. Only system calls, no allocation.
    pub(super) fn write_in_child(&self) -> Result<(), i32> {
        write_file(SETGROUPS, b"deny")?;
        write_file(UID_MAP, self.uid_map.as_bytes())?;
        write_file(GID_MAP, self.gid_map.as_bytes())
    }
}

/// What the child needs, prepared in the parent (it must not allocate).
pub(super) struct EgressChild {
    /// The child's end of the socket pair the listener is handed over on.
    child_end: OwnedFd,
    /// jp's end.
    host_end: OwnedFd,
}

impl std::fmt::Debug for EgressChild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EgressChild").finish_non_exhaustive()
    }
}

const SETGROUPS: &std::ffi::CStr = c"/proc/self/setgroups";
const UID_MAP: &std::ffi::CStr = c"/proc/self/uid_map";
const GID_MAP: &std::ffi::CStr = c"/proc/self/gid_map";

impl EgressChild {
    pub(super) fn new() -> io::Result<Self> {
        let (a, b) = rustix::net::socketpair(
            rustix::net::AddressFamily::UNIX,
            rustix::net::SocketType::SEQPACKET,
            rustix::net::SocketFlags::CLOEXEC,
            None,
        )?;
        Ok(Self { child_end: a, host_end: b })
    }

    /// The `clone` flags that make the namespaces.
    pub(super) const CLONE_FLAGS: libc::c_int = libc::CLONE_NEWUSER | libc::CLONE_NEWNET;

    /// In the child, right after the clone and its id maps: `lo` up, the listener made and
    /// handed over. Only system calls, no allocation.
    pub(super) fn setup_in_child(&self) -> Result<(), i32> {
        loopback_up()?;
        let listener = listen_loopback(EGRESS_PORT)?;
        let sent = send_fd(self.child_end.as_raw_fd(), listener);
        // SAFETY: closes the descriptor this function made (jp holds its own copy now).
        #[allow(unsafe_code)]
        unsafe {
            libc::close(listener);
        }
        sent
    }

    /// In jp, once the child has exec'd: the listener it handed over.
    pub(super) fn receive(&self) -> io::Result<OwnedFd> {
        recv_fd(self.host_end.as_raw_fd())
    }
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL)
}

fn write_file(path: &std::ffi::CStr, content: &[u8]) -> Result<(), i32> {
    #[allow(unsafe_code)]
    // SAFETY: plain system calls on a valid C string and buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(errno());
        }
        let n = libc::write(fd, content.as_ptr().cast(), content.len());
        let e = errno();
        libc::close(fd);
        if n != content.len() as isize {
            return Err(if n < 0 { e } else { libc::EIO });
        }
    }
    Ok(())
}

/// `ip link set lo up`, as a system call.
fn loopback_up() -> Result<(), i32> {
    #[allow(unsafe_code)]
    // SAFETY: plain system calls; `req` is a zeroed C struct this function owns.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(errno());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo\0".iter().enumerate() {
            req.ifr_name[i] = *b as libc::c_char;
        }
        let mut rc = libc::ioctl(s, libc::SIOCGIFFLAGS, &mut req);
        if rc == 0 {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            rc = libc::ioctl(s, libc::SIOCSIFFLAGS, &req);
        }
        let e = errno();
        libc::close(s);
        if rc != 0 {
            return Err(e);
        }
    }
    Ok(())
}

/// A TCP socket listening on `127.0.0.1:port`.
fn listen_loopback(port: u16) -> Result<libc::c_int, i32> {
    #[allow(unsafe_code)]
    // SAFETY: plain system calls; `addr` is a C struct this function owns.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(errno());
        }
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_port = port.to_be();
        addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        if libc::bind(s, (&addr as *const libc::sockaddr_in).cast(), len) != 0 || libc::listen(s, 128) != 0 {
            let e = errno();
            libc::close(s);
            return Err(e);
        }
        Ok(s)
    }
}

/// Room for one descriptor's control message (`CMSG_SPACE(sizeof(int))` on 64-bit Linux).
#[repr(C, align(8))]
struct FdControl([u8; 24]);

fn send_fd(socket: libc::c_int, fd: libc::c_int) -> Result<(), i32> {
    #[allow(unsafe_code)]
    // SAFETY: the message and its control buffer are C structs on this stack frame, sized by
    // CMSG_SPACE; the kernel copies them.
    unsafe {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
        let mut control = FdControl([0; 24]);
        let space = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as usize;
        if space > control.0.len() {
            return Err(libc::EINVAL);
        }
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.0.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd);
        if libc::sendmsg(socket, &msg, libc::MSG_NOSIGNAL) != 1 {
            return Err(errno());
        }
    }
    Ok(())
}

fn recv_fd(socket: libc::c_int) -> io::Result<OwnedFd> {
    #[allow(unsafe_code)]
    // SAFETY: as in `send_fd`; the descriptor received is new and owned by the returned value.
    unsafe {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
        let mut control = FdControl([0; 24]);
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.0.as_mut_ptr().cast();
        msg.msg_controllen = control.0.len() as _;
        if libc::recvmsg(socket, &mut msg, libc::MSG_CMSG_CLOEXEC | libc::MSG_DONTWAIT) != 1 {
            return Err(io::Error::last_os_error());
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() || (*cmsg).cmsg_level != libc::SOL_SOCKET || (*cmsg).cmsg_type != libc::SCM_RIGHTS {
            return Err(io::Error::other("the egress listener was not handed over"));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// Why an unprivileged process cannot make a user and network namespace with loopback up here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamespaceError {
    /// The socket pair the namespace's listener is handed over on cannot be made.
    #[error("cannot make a socket pair: {0}")]
    SocketPair(String),
    /// The kernel refuses the clone for a known cause.
    #[error("{why}: {error}")]
    Refused {
        /// The likely cause: a sysctl, a limit, a kernel without namespaces.
        why: &'static str,
        /// The OS error.
        error: String,
    },
    /// The clone failed otherwise.
    #[error("clone(CLONE_NEWUSER | CLONE_NEWNET) failed: {0}")]
    CloneFailed(String),
    /// The namespace was made, but setting it up failed.
    #[error(
        "a new user and network namespace could not be set up (mapping the ids, bringing lo up, listening on 127.0.0.1:{EGRESS_PORT}): {0}"
    )]
    Setup(String),
    /// The listener made inside did not arrive.
    #[error("the namespace's listener was not handed over: {0}")]
    NotHandedOver(String),
    /// The probe child died.
    #[error("the namespace probe ended abnormally (status {0:#x})")]
    Abnormal(i32),
}

/// Whether this kernel lets an unprivileged process make a user and network namespace with
/// loopback up (what an egress sandbox needs): `Err` with why not. Probed once per process, in a
/// throwaway child.
pub fn user_namespaces() -> Result<(), NamespaceError> {
    PROBE.get_or_init(probe).clone()
}

static PROBE: OnceLock<Result<(), NamespaceError>> = OnceLock::new();

/// Set when a child's own clone found unprivileged user namespaces missing (`spawn_raw`).
static MISSING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this process has already found unprivileged user namespaces missing — by the probe,
/// or by a clone that asked for one and was refused. Nothing is probed here.
pub(super) fn known_missing() -> bool {
    MISSING.load(std::sync::atomic::Ordering::Relaxed) || PROBE.get().is_some_and(Result::is_err)
}

/// Remember that a clone asking for a user namespace was refused for a known cause.
pub(super) fn note_missing() {
    MISSING.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether a `clone` asking for a user namespace failed because this kernel or its
/// configuration refuses them (a sysctl, an exhausted limit, a container's seccomp profile, a
/// kernel without them) — not for lack of memory or processes.
pub(super) fn refused(errno: i32) -> bool {
    matches!(errno, libc::EPERM | libc::EACCES | libc::ENOSPC | libc::EUSERS | libc::EINVAL)
}

/// What the probe child reads, and where it leaves its errno.
struct Probe<'a> {
    ids: &'a IdMaps,
    egress: &'a EgressChild,
    errno: std::sync::atomic::AtomicI32,
}

fn probe() -> Result<(), NamespaceError> {
    let egress = EgressChild::new().map_err(|e| NamespaceError::SocketPair(e.to_string()))?;
    let ids = IdMaps::new().map_err(|e| NamespaceError::SocketPair(e.to_string()))?;
    let stack = super::spawn::Stack::new().map_err(|e| NamespaceError::CloneFailed(e.to_string()))?;
    let probe = Probe { ids: &ids, egress: &egress, errno: std::sync::atomic::AtomicI32::new(0) };
    /// The probe child: only system calls, no allocation; its errno is left in `Probe::errno`.
    extern "C" fn probe_main(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the `Probe` the parent keeps alive until this child has exited
        // (CLONE_VFORK suspends the parent until then).
        #[allow(unsafe_code)]
        let probe = unsafe { &*(arg as *const Probe<'_>) };
        if let Err(e) = probe.ids.write_in_child().and_then(|()| probe.egress.setup_in_child()) {
            probe.errno.store(e.max(1), std::sync::atomic::Ordering::Relaxed);
        }
        // SAFETY: leaves without running anything of the parent's.
        #[allow(unsafe_code)]
        unsafe {
            libc::_exit(0)
        }
    }
    #[allow(unsafe_code)]
    // SAFETY: a vfork-like clone (CLONE_VM | CLONE_VFORK, as `spawn_raw` starts a tool): the
    // child runs `probe_main` on its own stack, borrows this memory without copying it (a copy
    // of a large process's page tables, and the copy-on-write faults after it, cost more than
    // the probe) and only makes system calls; this thread waits until it has exited.
    let pid = match unsafe {
        let flags = EgressChild::CLONE_FLAGS | libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD;
        super::spawn::vfork_clone(probe_main, &stack, flags, (&probe as *const Probe<'_>).cast_mut().cast())
    } {
        Ok(pid) => pid,
        Err(e) => {
            let why = match e.raw_os_error() {
                Some(libc::EPERM) | Some(libc::EACCES) => {
                    "the kernel refuses unprivileged user namespaces (a sysctl such as kernel.unprivileged_userns_clone=0 or kernel.apparmor_restrict_unprivileged_userns=1, or a container's seccomp profile)"
                }
                Some(libc::ENOSPC) => {
                    "the limit on user namespaces is reached (user.max_user_namespaces is 0 or used up)"
                }
                Some(libc::EINVAL) => "the kernel was built without user or network namespaces",
                _ => "",
            };
            return Err(if why.is_empty() {
                NamespaceError::CloneFailed(e.to_string())
            } else {
                NamespaceError::Refused { why, error: e.to_string() }
            });
        }
    };
    let mut status = 0;
    #[allow(unsafe_code)]
    // SAFETY: reaps our own child.
    unsafe {
        libc::waitpid(pid as libc::pid_t, &mut status, 0);
    }
    drop(stack);
    match (libc::WIFEXITED(status), probe.errno.load(std::sync::atomic::Ordering::Relaxed)) {
        (true, 0) => egress.receive().map(drop).map_err(|e| NamespaceError::NotHandedOver(e.to_string())),
        (true, errno) => Err(NamespaceError::Setup(io::Error::from_raw_os_error(errno).to_string())),
        _ => Err(NamespaceError::Abnormal(status)),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_kernel_is_probed_for_user_namespaces() {
        // TOOLCHAIN.md: `unshare -Urn` works here; elsewhere the reason must say why.
        match super::user_namespaces() {
            Ok(()) => println!("user namespaces: available"),
            Err(why) => assert!(!why.to_string().is_empty()),
        }
    }
}
