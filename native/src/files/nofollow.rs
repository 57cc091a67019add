//! Opening paths beneath the project root without following any symbolic link.
//!
//! Policy decides on a path with its links resolved ([`super::FsProjectFiles::resolve_sync`]);
//! the operation must then touch that very object. Following a link again here would let a link
//! swapped in between (by an allowed `process.run`, or any other process) redirect the operation
//! to a path the policy denied, so every open here refuses a link in any component: one
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`, or, on kernels without
//! it (before Linux 5.6), a walk that opens one component at a time with `O_NOFOLLOW`. Both are
//! race-free: each step holds the directory it found, so a later rename cannot redirect it.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// Flags to open a path only to look at it (`fstat`): `O_PATH` needs no permission on the file
/// and, with `O_NOFOLLOW`, opens a link in the last component as the link itself.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(super) const STAT: OFlags = OFlags::PATH;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(super) const STAT: OFlags = OFlags::RDONLY.union(OFlags::NONBLOCK);

/// Whether an error means "a symbolic link was met and not followed".
pub(super) fn is_link(e: &io::Error) -> bool {
    e.raw_os_error() == Some(Errno::LOOP.raw_os_error())
}

/// The `ELOOP` a link in the path is reported as, whichever way it was found.
fn link_error() -> io::Error {
    Errno::LOOP.into()
}

/// Open `rel` (a workspace path's text, `""` for the root) beneath `root`, refusing symbolic links
/// in every component with `ELOOP` (except a last component opened with `STAT`, which opens the
/// link itself: callers check the file type).
pub(super) fn open(root: BorrowedFd<'_>, rel: &str, flags: OFlags) -> io::Result<OwnedFd> {
    match open_once(root, rel, flags) {
        // `O_DIRECTORY | O_NOFOLLOW` on a link in the last component says ENOTDIR; say what it
        // really is.
        Err(e) if flags.contains(OFlags::DIRECTORY) && e.raw_os_error() == Some(Errno::NOTDIR.raw_os_error()) => {
            match open_once(root, rel, STAT).map(file_type) {
                Ok(Ok((FileType::Symlink, _))) => Err(link_error()),
                _ => Err(e),
            }
        }
        other => other,
    }
}

fn open_once(root: BorrowedFd<'_>, rel: &str, flags: OFlags) -> io::Result<OwnedFd> {
    let flags = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use std::sync::atomic::{AtomicBool, Ordering};
        static NO_OPENAT2: AtomicBool = AtomicBool::new(false);
        if !NO_OPENAT2.load(Ordering::Relaxed) {
            let how = rustix::fs::ResolveFlags::BENEATH
                | rustix::fs::ResolveFlags::NO_SYMLINKS
                | rustix::fs::ResolveFlags::NO_MAGICLINKS;
            let path = if rel.is_empty() { "." } else { rel };
            // EAGAIN: a concurrent rename somewhere on the system; the kernel asks to retry.
            for _ in 0..16 {
                match rustix::fs::openat2(root, path, flags, Mode::empty(), how) {
                    Err(Errno::AGAIN) => continue,
                    Err(Errno::NOSYS) => {
                        NO_OPENAT2.store(true, Ordering::Relaxed);
                        break;
                    }
                    other => return other.map_err(Into::into),
                }
            }
        }
    }
    walk(root, rel, flags)
}

/// The fallback for kernels without `openat2`: one component at a time.
fn walk(root: BorrowedFd<'_>, rel: &str, flags: OFlags) -> io::Result<OwnedFd> {
    let comps: Vec<&str> = rel.split('/').filter(|c| !c.is_empty()).collect();
    let Some((last, dirs)) = comps.split_last() else {
        return Ok(rustix::fs::openat(root, ".", flags, Mode::empty())?);
    };
    let parent = open_dirs(root, dirs, false).map_err(|(_, e)| e)?;
    Ok(rustix::fs::openat(&parent, *last, flags, Mode::empty())?)
}

fn is_link_at(dir: BorrowedFd<'_>, name: &str) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink)
}

/// Open the directory `comps` beneath `root` one component at a time, never following a link
/// (`ELOOP`), and creating missing directories when `create` is set. On failure, the index of the
/// component that failed and why.
pub(super) fn open_dirs(root: BorrowedFd<'_>, comps: &[&str], create: bool) -> Result<OwnedFd, (usize, io::Error)> {
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut cur = rustix::fs::openat(root, ".", dir_flags, Mode::empty()).map_err(|e| (0, e.into()))?;
    for (i, comp) in comps.iter().enumerate() {
        let mut created = false;
        let next = loop {
            match rustix::fs::openat(&cur, *comp, dir_flags, Mode::empty()) {
                Ok(fd) => break fd,
                // Create, then open what is there now (which may be another process's directory,
                // or a link it put there: opened without following, like any other).
                Err(Errno::NOENT) if create && !created => {
                    created = true;
                    match rustix::fs::mkdirat(&cur, *comp, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err((i, e.into())),
                    }
                }
                Err(Errno::NOTDIR) if is_link_at(cur.as_fd(), comp) => return Err((i, link_error())),
                Err(e) => return Err((i, e.into())),
            }
        };
        cur = next;
    }
    Ok(cur)
}

/// The type of what `fd` refers to.
pub(super) fn file_type<Fd: AsFd>(fd: Fd) -> rustix::io::Result<(FileType, rustix::fs::Stat)> {
    let st = rustix::fs::fstat(fd)?;
    Ok((FileType::from_raw_mode(st.st_mode), st))
}

/// `lstat` of `name` in `dir`: never follows a link in the name.
pub(super) fn lstat_at(dir: BorrowedFd<'_>, name: &str) -> rustix::io::Result<(FileType, rustix::fs::Stat)> {
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    Ok((FileType::from_raw_mode(st.st_mode), st))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk (used where `openat2` is missing) refuses links exactly like `openat2` does.
    #[test]
    fn the_fallback_walk_follows_no_link() {
        let ws = tempfile::tempdir().unwrap();
        let w = ws.path();
        std::fs::create_dir(w.join("d")).unwrap();
        std::fs::write(w.join("d/f"), "x").unwrap();
        std::os::unix::fs::symlink("d", w.join("dl")).unwrap();
        std::os::unix::fs::symlink("d/f", w.join("fl")).unwrap();
        let root = std::fs::File::open(w).unwrap();
        let root = root.as_fd();
        let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        for opener in [walk, open_once] {
            assert!(opener(root, "d/f", flags).is_ok());
            assert!(is_link(&opener(root, "dl/f", flags).unwrap_err()));
            assert!(is_link(&opener(root, "fl", flags).unwrap_err()));
            let link = opener(root, "fl", STAT | OFlags::NOFOLLOW).unwrap();
            assert_eq!(file_type(&link).unwrap().0, FileType::Symlink);
            assert_eq!(opener(root, "d/f/x", flags).unwrap_err().kind(), io::ErrorKind::NotADirectory);
            assert_eq!(opener(root, "nope", flags).unwrap_err().kind(), io::ErrorKind::NotFound);
        }
        let (i, e) = open_dirs(root, &["d", "f", "new"], true).unwrap_err();
        assert_eq!((i, e.kind()), (1, io::ErrorKind::NotADirectory));
        let (i, e) = open_dirs(root, &["dl", "new"], true).unwrap_err();
        assert_eq!(i, 0);
        assert!(is_link(&e));
        assert!(open_dirs(root, &["d", "new", "deeper"], true).is_ok());
        assert!(w.join("d/new/deeper").is_dir());
    }
}
