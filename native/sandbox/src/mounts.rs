//! The private mount view of a direct-access process ([`MountView`]), prepared in the parent and
//! made in the child — in the user and mount namespace its `clone` created — before Landlock,
//! seccomp and `execve`.
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
    /// Bind `src` onto `dst` (with its submounts), then remount the bind with `add` set and
    /// `clear` cleared (of the flags it had). A `dst` gone since the plan was made is skipped.
    Bind { src: CString, dst: CString, add: libc::c_ulong, clear: libc::c_ulong },
    /// An empty, read-only file system on the directory `dst`.
    Empty { dst: CString },
}

/// The view, ready for the child.
pub(super) struct MountPlan {
    ops: Vec<Op>,
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

impl MountPlan {
    pub(super) fn new(view: &MountView) -> std::io::Result<Self> {
        let mut ops = Vec::new();
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
        Ok(Self { ops })
    }

    /// In the child, in its new mount namespace: nothing propagates back out, then each step.
    /// Only system calls, no allocation.
    pub(super) fn apply_in_child(&self) -> Result<(), i32> {
        mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None)?;
        for op in &self.ops {
            match op {
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
