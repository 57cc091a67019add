//! Starting a sandboxed child without `fork`: `clone(CLONE_VM | CLONE_VFORK)`, the sandbox applied
//! between clone and exec, as `posix_spawn` does for its own attributes.
//!
//! Why: any `pre_exec` makes std `fork`, which copies the host's page tables (and leaves the host
//! copy-on-write faults to take afterwards), so a sandboxed spawn costs more the more memory the
//! host holds — measured here +0.2 ms for a small host and +3.8 ms with 64 MiB more resident
//! (`tests/benches/vfs.rs`). With `CLONE_VM` the child borrows the host's memory until `execve`,
//! and the host thread waits meanwhile (`CLONE_VFORK`), so nothing is copied.
//!
//! The child shares the host's memory, so between clone and exec it only makes system calls on
//! data prepared before the clone: no allocation, no locks another thread could hold, no unwinding.
//! Every signal is blocked in the host thread across the clone so no handler of the host runs on
//! the child's stack; the child resets caught signals to their default, then unblocks every signal
//! (a new program starts with an empty mask). Its stack is a mapping of its own with a guard page.

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use super::SandboxSteps;
use super::linux::PreparedSandbox;

/// What the child runs, prepared before the clone.
struct Exec {
    program: CString,
    /// Null-terminated pointers into `_args` / `_env`.
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    cwd: CString,
    _args: Vec<CString>,
    _env: Vec<CString>,
}

fn cstring(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in an argument"))
}

impl Exec {
    fn new(program: &OsStr, args: &[&OsStr], env: &[(&OsStr, &OsStr)], cwd: &OsStr) -> io::Result<Self> {
        let program = cstring(program)?;
        let mut all_args = vec![program.clone()];
        for a in args {
            all_args.push(cstring(a)?);
        }
        let mut all_env = Vec::new();
        for (k, v) in env {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            all_env.push(cstring(OsStr::from_bytes(&kv))?);
        }
        let pointers = |v: &[CString]| v.iter().map(|c| c.as_ptr()).chain([std::ptr::null()]).collect();
        Ok(Self {
            argv: pointers(&all_args),
            envp: pointers(&all_env),
            program,
            cwd: cstring(cwd)?,
            _args: all_args,
            _env: all_env,
        })
    }
}

/// Everything the child reads, on the host thread's stack (shared with the child).
struct Child<'a> {
    /// `None`: the user opted out of the OS sandbox (the rest is the same).
    sandbox: Option<&'a PreparedSandbox>,
    steps: SandboxSteps,
    exec: &'a Exec,
    stdio: [libc::c_int; 3],
    /// Whether the clone made the sandbox's namespaces (a mount view's clone retried without
    /// them where user namespaces are missing: then no id maps and no view).
    namespaces: bool,
    /// The errno of the step that failed, 0 if the child reached `execve`.
    error: AtomicI32,
    /// Whether that step was writing the id maps of its new user namespace.
    in_id_maps: AtomicBool,
}

/// Runs in the child, on its own stack, in the host's memory.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `Child` the host thread keeps alive until this task has exec'd or
    // exited (CLONE_VFORK suspends it until then).
    #[allow(unsafe_code)]
    let child = unsafe { &*(arg as *const Child<'_>) };
    let errno = match child_steps(child) {
        Ok(()) => io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL),
        Err(e) => e,
    };
    child.error.store(if errno == 0 { libc::EINVAL } else { errno }, Ordering::Relaxed);
    // SAFETY: leaves without running anything of the host's (no atexit handlers, no flush).
    #[allow(unsafe_code)]
    unsafe {
        libc::_exit(127)
    }
}

/// Signals back to their default (those the host catches; an ignored SIGPIPE too, as std does),
/// an empty mask, own process group, stdio, cwd, the sandbox, then exec. Returns only on error.
fn child_steps(child: &Child<'_>) -> Result<(), i32> {
    // First, in the namespaces the clone made: ids, loopback, the proxy's listener (netns.rs),
    // the mount view (mounts.rs).
    if let Some(sandbox) = child.sandbox.filter(|_| child.namespaces) {
        if let Some(ids) = &sandbox.ids {
            ids.write_in_child().inspect_err(|_| child.in_id_maps.store(true, Ordering::Relaxed))?;
        }
        if let Some(egress) = &sandbox.egress {
            egress.setup_in_child()?;
        }
        if let Some(view) = &sandbox.view {
            view.apply_in_child()?;
        }
    }
    let os = |rc: libc::c_int| {
        if rc < 0 { Err(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL)) } else { Ok(rc) }
    };
    #[allow(unsafe_code)]
    // SAFETY: plain system calls on valid pointers to memory this function owns or borrows.
    unsafe {
        for sig in 1..=libc::SIGRTMAX() {
            if sig == libc::SIGKILL || sig == libc::SIGSTOP {
                continue;
            }
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
                continue;
            }
            if old.sa_sigaction != libc::SIG_DFL && (old.sa_sigaction != libc::SIG_IGN || sig == libc::SIGPIPE) {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                os(libc::sigaction(sig, &default, std::ptr::null_mut()))?;
            }
        }
        // A new program starts with no signal blocked (as std and posix_spawn give it), whatever
        // the spawning thread had blocked.
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        os(libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()))?;
        os(libc::setpgid(0, 0))?;
        for (target, fd) in child.stdio.iter().enumerate() {
            os(libc::dup2(*fd, target as libc::c_int))?;
        }
        only_stdio_across_exec()?;
        os(libc::chdir(child.exec.cwd.as_ptr()))?;
    }
    if let Some(sandbox) = child.sandbox {
        sandbox.apply_raw(child.steps)?;
    }
    // SAFETY: the pointers are null-terminated arrays of C strings that outlive the call.
    #[allow(unsafe_code)]
    unsafe {
        libc::execve(child.exec.program.as_ptr(), child.exec.argv.as_ptr(), child.exec.envp.as_ptr());
    }
    Ok(())
}

/// Every descriptor above 2 closes at `execve`: the program starts with only its stdin, stdout
/// and stderr, whatever `jp` inherited without close-on-exec (`jp … 7</outside/secret` would
/// otherwise hand a tool a file Landlock refuses to open). Close-on-exec rather than closed now:
/// the Landlock ruleset the child restricts itself with is still to be used. Runs in the child:
/// system calls only.
fn only_stdio_across_exec() -> Result<(), i32> {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    #[allow(unsafe_code)]
    // SAFETY: plain system calls on integers.
    unsafe {
        if libc::syscall(libc::SYS_close_range, 3 as libc::c_uint, libc::c_uint::MAX, CLOSE_RANGE_CLOEXEC) == 0 {
            return Ok(());
        }
        // Before Linux 5.11: every possible descriptor, one by one (EBADF for the unused ones).
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return Err(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL));
        }
        let top = libc::c_int::try_from(limit.rlim_cur.min(1 << 20)).unwrap_or(1 << 20);
        for fd in 3..top {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    Ok(())
}

/// The child's stack: enough for `child_steps` (a few system calls, no recursion).
const STACK: usize = 64 << 10;

/// The child's stack, mapped on its own with an inaccessible guard page below it: the child
/// shares the host's memory, so an overflow must fault, never write into the host's heap.
/// `clone(main, stack, flags, arg)` with every signal blocked around it: a child that shares
/// jp's memory (`CLONE_VM`) inherits the full mask, so no handler of jp's runs in it before it
/// has set its own mask or exited. The child's pid, or the clone's error.
///
/// # Safety
/// As `libc::clone`: `main` may only use `arg` and make system calls, and with `CLONE_VFORK`
/// this thread waits, so `arg` and `stack` outlive the child's use of them.
#[allow(unsafe_code)]
pub(super) unsafe fn vfork_clone(
    main: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    stack: &Stack,
    flags: libc::c_int,
    arg: *mut libc::c_void,
) -> io::Result<libc::pid_t> {
    // SAFETY: the masks are plain C structs filled by the calls; the clone is the caller's.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut mask);
        let pid = libc::clone(main, stack.top(), flags, arg);
        let clone_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &mask, std::ptr::null_mut());
        if pid < 0 { Err(clone_error) } else { Ok(pid) }
    }
}

pub(super) struct Stack {
    base: *mut libc::c_void,
    len: usize,
}

impl Stack {
    pub(super) fn new() -> io::Result<Self> {
        #[allow(unsafe_code)]
        // SAFETY: a fresh anonymous mapping, owned by the returned value.
        unsafe {
            let page = usize::try_from(libc::sysconf(libc::_SC_PAGESIZE)).unwrap_or(4096);
            let len = STACK + page;
            let base = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            let stack = Self { base, len };
            if libc::mprotect(base, page, libc::PROT_NONE) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(stack)
        }
    }

    /// The 16-byte-aligned top (the stack grows down).
    pub(super) fn top(&self) -> *mut libc::c_void {
        ((self.base as usize + self.len) & !15) as *mut libc::c_void
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        #[allow(unsafe_code)]
        // SAFETY: unmaps exactly the mapping `new` made; the child no longer runs on it.
        unsafe {
            libc::munmap(self.base, self.len);
        }
    }
}

impl PreparedSandbox {
    /// Start `program` (a path) with `args`, exactly `env`, in `cwd`, its stdin/stdout/stderr
    /// `stdio`, in its own process group, under this sandbox (only `steps` of it: the benchmark's
    /// breakdown; a tool always gets [`SandboxSteps::ALL`]) — without fork. Returns the pid once
    /// the child has exec'd; a failure before exec (the sandbox, a missing program) is the
    /// error, and the child is reaped. Consumes the sandbox: the child patched it in place.
    #[doc(hidden)]
    pub fn spawn(
        self,
        program: &OsStr,
        args: &[&OsStr],
        env: &[(&OsStr, &OsStr)],
        cwd: &OsStr,
        stdio: [BorrowedFd<'_>; 3],
        steps: SandboxSteps,
    ) -> io::Result<libc::pid_t> {
        spawn_raw(Some(&self), program, args, env, cwd, stdio, steps).map(|(pid, _)| pid)
    }
}

/// [`PreparedSandbox::spawn`], or the same start without any restriction (`sandbox` `None`:
/// the user opted out of the OS sandbox). With an egress sandbox, the clone also makes the
/// child's user and network namespaces, and the listener it made there comes back with its pid.
pub(super) fn spawn_raw(
    sandbox: Option<&PreparedSandbox>,
    program: &OsStr,
    args: &[&OsStr],
    env: &[(&OsStr, &OsStr)],
    cwd: &OsStr,
    stdio: [BorrowedFd<'_>; 3],
    steps: SandboxSteps,
) -> io::Result<(libc::pid_t, Option<std::os::fd::OwnedFd>)> {
    let egress = sandbox.and_then(|s| s.egress.as_ref());
    let view = sandbox.is_some_and(|s| s.view.is_some());
    let mut namespaces = if egress.is_some() { super::netns::EgressChild::CLONE_FLAGS } else { 0 };
    if view {
        namespaces |= libc::CLONE_NEWUSER | libc::CLONE_NEWNS;
    }
    let exec = Exec::new(program, args, env, cwd)?;
    let stdio = stdio.map(|fd| fd.as_raw_fd());
    if stdio.iter().any(|fd| *fd <= 2) {
        // dup2 onto itself would keep close-on-exec; the host's pipes are never 0–2 anyway.
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "stdio of a sandboxed child must not be fds 0-2"));
    }
    let stack = Stack::new()?;
    let mut child = Child {
        sandbox,
        steps,
        exec: &exec,
        stdio,
        namespaces: namespaces != 0,
        error: AtomicI32::new(0),
        in_id_maps: AtomicBool::new(false),
    };
    // No probe child first: a mount view's clone finds out itself whether this kernel lets it
    // make a user namespace. Where it does not (a known refusal of the clone, or of the id maps),
    // the view is an addition Landlock does not need: the child is started again without it, as
    // the probe would have had it (`jp sandbox status` says so). A process that needs a network
    // namespace (egress) was probed before it got here, and fails closed.
    let pid = loop {
        #[allow(unsafe_code)]
        // SAFETY: `child_main` only reads `child` and makes system calls (see the module doc);
        // CLONE_VFORK keeps this thread, `child` and `stack` where they are until the child has
        // exec'd or exited.
        let cloned = unsafe {
            let flags = if child.namespaces { namespaces } else { 0 };
            vfork_clone(
                child_main,
                &stack,
                libc::CLONE_VM | libc::CLONE_VFORK | flags | libc::SIGCHLD,
                (&mut child as *mut Child<'_>).cast(),
            )
        };
        let errno = match &cloned {
            Err(e) => e.raw_os_error().unwrap_or(0),
            Ok(_) if child.in_id_maps.load(Ordering::Relaxed) => child.error.load(Ordering::Relaxed),
            Ok(_) => 0,
        };
        let without_namespaces = view && egress.is_none() && child.namespaces && super::netns::refused(errno);
        if !without_namespaces {
            break cloned?;
        }
        if let Ok(pid) = cloned {
            #[allow(unsafe_code)]
            // SAFETY: reaps our own child, which has exited.
            unsafe {
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
        }
        super::netns::note_missing();
        child.namespaces = false;
        child.error.store(0, Ordering::Relaxed);
        child.in_id_maps.store(false, Ordering::Relaxed);
    };
    drop(stack);
    match child.error.load(Ordering::Relaxed) {
        0 => match egress.map(super::netns::EgressChild::receive).transpose() {
            Ok(listener) => Ok((pid, listener)),
            Err(e) => {
                #[allow(unsafe_code)]
                // SAFETY: kills and reaps our own child, which has exec'd.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, std::ptr::null_mut(), 0);
                }
                Err(e)
            }
        },
        errno => {
            let mut status = 0;
            #[allow(unsafe_code)]
            // SAFETY: reaps our own child, which has exited.
            unsafe {
                libc::waitpid(pid, &mut status, 0);
            }
            Err(io::Error::from_raw_os_error(errno))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;
    use std::os::fd::AsFd as _;
    use std::path::Path;

    use super::super::{SandboxSpec, SandboxSteps};

    /// Runs `program args…` sandboxed by `spec` through `spawn`; its exit code and stdout.
    fn run(spec: &SandboxSpec, program: &str, args: &[&str]) -> std::io::Result<(i32, String)> {
        let out = tempfile::tempfile().unwrap();
        let null = std::fs::File::open("/dev/null").unwrap();
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        let pid = spec.prepare().unwrap().spawn(
            OsStr::new(program),
            &args,
            &[(OsStr::new("PATH"), OsStr::new("/usr/bin:/bin"))],
            OsStr::new("/"),
            [null.as_fd(), out.as_fd(), out.as_fd()],
            SandboxSteps::ALL,
        )?;
        let mut status = 0;
        #[allow(unsafe_code)]
        // SAFETY: waits for our own child.
        unsafe {
            assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
        }
        assert!(libc::WIFEXITED(status), "status {status:#x}");
        let text = std::fs::read_to_string(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&out))).unwrap();
        Ok((libc::WEXITSTATUS(status), text))
    }

    #[test]
    fn a_child_spawned_without_fork_is_sandboxed() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret.txt");
        std::fs::write(&secret, "s3cret").unwrap();
        let script = format!(
            "echo start; cat {} && echo READ; python3 -c 'import socket; socket.socket()' 2>/dev/null && echo SOCKET; exit 3",
            secret.display()
        );
        let spec = SandboxSpec::for_tool(Path::new("/bin/sh"), &[], &[]);
        let (code, out) = run(&spec, "/bin/sh", &["-c", &script]).unwrap();
        assert_eq!(code, 3, "{out}");
        assert!(out.starts_with("start\n") && !out.contains("READ") && !out.contains("SOCKET"), "{out}");
        // The same file granted read-only is readable: the sandbox is the spec, not a failure.
        let spec = SandboxSpec { read_only: vec![dir.path().to_path_buf()], ..spec };
        let (code, out) = run(&spec, "/bin/sh", &["-c", &format!("cat {}", secret.display())]).unwrap();
        assert_eq!((code, out.as_str()), (0, "s3cret"));
    }

    #[test]
    fn the_child_starts_with_no_signal_blocked_whatever_the_host_thread_blocks() {
        // On a thread of its own: the blocked signal must not leak into the host's other tests.
        std::thread::spawn(|| {
            #[allow(unsafe_code)]
            // SAFETY: plain C structs filled by the calls; only this thread's mask changes.
            unsafe {
                let mut usr1: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut usr1);
                libc::sigaddset(&mut usr1, libc::SIGUSR1);
                libc::pthread_sigmask(libc::SIG_BLOCK, &usr1, std::ptr::null_mut());
            }
            // `cat` itself (a shell clears its mask at start, which would hide a leak).
            let spec = SandboxSpec::for_tool(Path::new("/bin/cat"), &[], &[]);
            let spec = SandboxSpec { read_only: vec!["/proc".into()], ..spec };
            let (code, out) = run(&spec, "/bin/cat", &["/proc/self/status"]).unwrap();
            assert_eq!(code, 0, "{out}");
            let blocked = out.lines().find_map(|l| l.strip_prefix("SigBlk:")).map(str::trim);
            assert_eq!(blocked, Some("0000000000000000"), "{out}");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_signal_filter_is_patched_in_the_child_that_shares_memory() {
        let spec = SandboxSpec { force_signal_filter: true, ..SandboxSpec::for_tool(Path::new("/bin/sh"), &[], &[]) };
        // The test process is outside the child's group: refused (SIGCHLD, harmless had it gone
        // through); the own group (0) is fine.
        let script = format!(
            "python3 -c 'import os, signal\ntry:\n os.kill({}, signal.SIGCHLD); print(\"SENT\")\nexcept PermissionError: print(\"refused\")\nos.kill(0, 0); print(\"own group\")'",
            std::process::id()
        );
        let (code, out) = run(&spec, "/bin/sh", &["-c", &script]).unwrap();
        assert_eq!((code, out.as_str()), (0, "refused\nown group\n"));
    }

    #[test]
    fn a_failure_before_exec_is_the_error_and_leaves_no_child() {
        let spec = SandboxSpec::for_tool(Path::new("/nonexistent/tool"), &[], &[]);
        let err = run(&spec, "/nonexistent/tool", &[]).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{err}");
        // A program the sandbox does not let it execute.
        let spec = SandboxSpec::for_tool(Path::new("/bin/sh"), &[], &[]);
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("tool");
        std::fs::copy("/bin/true", &tool).unwrap();
        let err = run(&spec, tool.to_str().unwrap(), &[]).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EACCES), "{err}");
    }
}
