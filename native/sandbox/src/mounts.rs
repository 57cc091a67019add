//! The private mount view of a direct-access process ([`MountView`]), prepared in the parent and
//! made in the child — in the user and mount namespace its `clone` created — before Landlock,
//! seccomp and `execve`: a private `/tmp` (an empty tmpfs, with the granted paths under the host's
//! `/tmp` — a workspace, its scratch directory, `read_paths` — bound back in place through
//! descriptors the child opened before covering it), then the binds of the view.
//!
//! Each bind is remounted with the flags it must add (`ro`, `noexec`, `nodev`…) *and* those the
//! mount already had, read back with `statfs`: in a user namespace the kernel refuses to clear a
//! flag the original mount was given (a locked `nosuid` on `/tmp`, say). Everything in the child
//! is system calls on data prepared here (see `spawn.rs`).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use super::MountView;

/// One step of the view.
enum Op {
    /// A private, empty `/tmp` (a tmpfs), made before anything else.
    PrivateTmp,
    /// A directory to make on the private `/tmp` (a mount point on the way to a granted path).
    Mkdir { path: CString },
    /// An empty file to make on the private `/tmp` (the mount point of a granted file).
    Touch { path: CString },
    /// Bind what descriptor `index` of the plan's held ones (opened by the child before `/tmp`
    /// was covered: a bind's source must be in the child's own mount namespace) names onto
    /// `dst`: a granted path under `/tmp`, back in its place.
    Rebind { index: usize, dst: CString },
    /// Bind `src` onto `dst` (with its submounts), then remount the bind with `add` set and
    /// `clear` cleared (of the flags it had). A `dst` gone since the plan was made is skipped.
    Bind { src: CString, dst: CString, add: libc::c_ulong, clear: libc::c_ulong },
    /// An empty, read-only file system on the directory `dst`.
    Empty { dst: CString },
}

/// The view, ready for the child.
pub(super) struct MountPlan {
    ops: Vec<Op>,
    /// The granted paths under `/tmp`, which the child opens (`O_PATH`) before covering it…
    held: Vec<CString>,
    /// …and the descriptors it got (written by the child, in memory it shares until `execve`).
    held_fds: Vec<std::sync::atomic::AtomicI32>,
}

impl std::fmt::Debug for MountPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MountPlan").field("steps", &self.ops.len()).finish()
    }
}

fn c(path: &Path) -> std::io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(std::io::Error::other)
}

const HIDDEN: libc::c_ulong = libc::MS_RDONLY | libc::MS_NODEV | libc::MS_NOSUID | libc::MS_NOEXEC;

/// The private `/tmp`: a tmpfs over it, then every granted path under it bound back in place
/// (outermost first; one beneath another already bound back comes with it).
fn private_tmp(
    granted: &[&Path],
    places: &[std::path::PathBuf],
    ops: &mut Vec<Op>,
    held: &mut Vec<CString>,
) -> std::io::Result<()> {
    let tmp = Path::new("/tmp");
    if !tmp.is_dir() {
        return Ok(());
    }
    let mut under: Vec<&Path> = granted.iter().copied().filter(|p| p.starts_with(tmp) && *p != tmp).collect();
    under.sort_by_key(|p| p.components().count());
    let mut bound: Vec<&Path> = Vec::new();
    let mut made: Vec<std::path::PathBuf> = Vec::new();
    ops.push(Op::PrivateTmp);
    for path in under {
        if bound.iter().any(|b| path.starts_with(b)) {
            continue;
        }
        let Ok(meta) = std::fs::metadata(path) else { continue };
        let index = held.len();
        held.push(c(path)?);
        // Every directory between /tmp and the path, then the mount point itself.
        let mut dirs: Vec<&Path> = path.ancestors().skip(1).take_while(|a| *a != tmp).collect();
        dirs.reverse();
        for dir in dirs {
            if !made.iter().any(|m| m == dir) {
                made.push(dir.to_path_buf());
                ops.push(Op::Mkdir { path: c(dir)? });
            }
        }
        if meta.is_dir() {
            made.push(path.to_path_buf());
            ops.push(Op::Mkdir { path: c(path)? });
        } else {
            ops.push(Op::Touch { path: c(path)? });
        }
        ops.push(Op::Rebind { index, dst: c(path)? });
        bound.push(path);
    }
    // The working directory exists even where nothing of it is granted (empty, then).
    for place in places.iter().filter(|p| p.starts_with(tmp) && p.as_path() != tmp) {
        if bound.iter().any(|b| place.starts_with(b)) {
            continue;
        }
        for dir in place.ancestors().collect::<Vec<_>>().into_iter().rev().filter(|a| a.starts_with(tmp) && *a != tmp) {
            if !made.iter().any(|m| m == dir) {
                made.push(dir.to_path_buf());
                ops.push(Op::Mkdir { path: c(dir)? });
            }
        }
    }
    Ok(())
}

impl MountPlan {
    /// The plan of `view` for a process granted `granted` (every path its Landlock rules name).
    pub(super) fn new(view: &MountView, granted: &[&Path]) -> std::io::Result<Self> {
        let mut ops = Vec::new();
        let mut held = Vec::new();
        private_tmp(granted, &view.places, &mut ops, &mut held)?;
        // Order matters: the program directories go `noexec` first, the listed programs are
        // bound back over them; `.jp/` and the hidden files come last, over whatever is below.
        for dir in &view.no_exec {
            let dst = c(dir)?;
            ops.push(Op::Bind { src: dst.clone(), dst, add: libc::MS_NOEXEC | libc::MS_NOSUID, clear: 0 });
        }
        for program in &view.exec {
            let dst = c(program)?;
            ops.push(Op::Bind { src: dst.clone(), dst, add: 0, clear: libc::MS_NOEXEC });
        }
        for dir in &view.read_only {
            let dst = c(dir)?;
            ops.push(Op::Bind { src: dst.clone(), dst, add: libc::MS_RDONLY | libc::MS_NOSUID, clear: 0 });
        }
        for path in &view.masked {
            let dst = c(path)?;
            // `symlink_metadata` would see a link; the mount follows it, as the tool would.
            if path.is_dir() {
                ops.push(Op::Empty { dst });
            } else {
                // /dev/null on a `nodev` mount: opening it fails with EACCES, as a file Landlock
                // refuses would.
                ops.push(Op::Bind { src: c(Path::new("/dev/null"))?, dst, add: HIDDEN, clear: 0 });
            }
        }
        let held_fds = held.iter().map(|_| std::sync::atomic::AtomicI32::new(-1)).collect();
        Ok(Self { ops, held, held_fds })
    }

    /// In the child, in its new mount namespace: nothing propagates back out, then each step.
    /// Only system calls, no allocation.
    pub(super) fn apply_in_child(&self) -> Result<(), i32> {
        mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None)?;
        for (path, slot) in self.held.iter().zip(&self.held_fds) {
            #[allow(unsafe_code)]
            // SAFETY: a C string that outlives the call.
            let fd = unsafe { libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
            slot.store(fd, std::sync::atomic::Ordering::Relaxed);
        }
        for op in &self.ops {
            match op {
                Op::PrivateTmp => {
                    mount(
                        Some(c"tmpfs"),
                        c"/tmp",
                        Some(c"tmpfs"),
                        libc::MS_NOSUID | libc::MS_NODEV,
                        Some(c"size=1m,mode=0755"),
                    )?;
                }
                Op::Mkdir { path } => {
                    #[allow(unsafe_code)]
                    // SAFETY: a C string that outlives the call.
                    let rc = unsafe { libc::mkdir(path.as_ptr(), 0o755) };
                    if rc != 0 && errno() != libc::EEXIST {
                        return Err(errno());
                    }
                }
                Op::Touch { path } => {
                    #[allow(unsafe_code)]
                    // SAFETY: a C string that outlives the call; the descriptor is closed at once.
                    unsafe {
                        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC, 0o644);
                        if fd < 0 {
                            return Err(errno());
                        }
                        libc::close(fd);
                    }
                }
                Op::Rebind { index, dst } => {
                    let fd = self.held_fds[*index].load(std::sync::atomic::Ordering::Relaxed);
                    if fd < 0 {
                        // Gone since the plan was made: nothing to bind back.
                        continue;
                    }
                    let mut buf = [0u8; 32];
                    mount(Some(fd_path(&mut buf, fd)), dst, None, libc::MS_BIND | libc::MS_REC, None)?;
                }
                Op::Bind { src, dst, add, clear } => {
                    match mount(Some(src), dst, None, libc::MS_BIND | libc::MS_REC, None) {
                        Err(libc::ENOENT) => continue,
                        r => r?,
                    }
                    let kept = flags_of(dst)?;
                    let flags = (kept | add) & !clear;
                    mount(None, dst, None, libc::MS_BIND | libc::MS_REMOUNT | flags, None)?;
                }
                Op::Empty { dst } => {
                    match mount(Some(c"tmpfs"), dst, Some(c"tmpfs"), HIDDEN, Some(c"size=4k,mode=000")) {
                        Err(libc::ENOENT) => continue,
                        r => r?,
                    }
                }
            }
        }
        Ok(())
    }
}

/// `/proc/self/fd/N` written into `buf`, without allocating.
fn fd_path(buf: &mut [u8; 32], fd: i32) -> &std::ffi::CStr {
    const PREFIX: &[u8] = b"/proc/self/fd/";
    buf[..PREFIX.len()].copy_from_slice(PREFIX);
    let mut digits = [0u8; 10];
    let (mut n, mut len) = (fd.unsigned_abs(), 0);
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        buf[PREFIX.len() + i] = digits[len - 1 - i];
    }
    buf[PREFIX.len() + len] = 0;
    std::ffi::CStr::from_bytes_until_nul(&buf[..]).unwrap_or(c"/")
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL)
}

fn mount(
    src: Option<&std::ffi::CStr>,
    dst: &std::ffi::CStr,
    fstype: Option<&std::ffi::CStr>,
    flags: libc::c_ulong,
    data: Option<&std::ffi::CStr>,
) -> Result<(), i32> {
    let ptr = |s: Option<&std::ffi::CStr>| s.map_or(std::ptr::null(), std::ffi::CStr::as_ptr);
    #[allow(unsafe_code)]
    // SAFETY: C strings (or null) that outlive the call.
    let rc = unsafe { libc::mount(ptr(src), dst.as_ptr(), ptr(fstype), flags, ptr(data).cast()) };
    if rc != 0 { Err(errno()) } else { Ok(()) }
}

/// The mount flags of the mount `path` is on, as `mount` takes them: the ones a remount in a
/// user namespace must keep.
fn flags_of(path: &std::ffi::CStr) -> Result<libc::c_ulong, i32> {
    #[allow(unsafe_code)]
    // SAFETY: a C struct filled by the call.
    // (glibc answers from the kernel's statfs flags, without reading /proc/mounts, on every
    // kernel since 2.6.36.)
    let st = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(path.as_ptr(), &mut st) != 0 {
            return Err(errno());
        }
        st
    };
    let f = st.f_flag as libc::c_ulong;
    let same = libc::MS_RDONLY
        | libc::MS_NOSUID
        | libc::MS_NODEV
        | libc::MS_NOEXEC
        | libc::MS_SYNCHRONOUS
        | libc::MS_MANDLOCK
        | libc::MS_NOATIME
        | libc::MS_NODIRATIME;
    // ST_RELATIME (4096) is MS_RELATIME (1 << 21) to `mount`.
    let relatime = if f & 4096 != 0 { libc::MS_RELATIME } else { 0 };
    Ok((f & same) | relatime)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_descriptors_path_is_written_without_allocating() {
        let mut buf = [0u8; 32];
        assert_eq!(super::fd_path(&mut buf, 7).to_str(), Ok("/proc/self/fd/7"));
        assert_eq!(super::fd_path(&mut buf, 1_048_575).to_str(), Ok("/proc/self/fd/1048575"));
        assert_eq!(super::fd_path(&mut buf, 0).to_str(), Ok("/proc/self/fd/0"));
    }
}
