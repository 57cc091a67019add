//! The file operations of [`FsProjectFiles`], each acting on exactly the path it is given: every
//! open goes through `nofollow`, so no symbolic link in any component is followed.
//!
//! A link in the *last* component: `read`, `write`, `metadata` and `list_dir` refuse it (the
//! dispatcher passes resolved paths, which hold no links, so one there was swapped in);
//! `delete` and `rename` act on the link itself, never on its target; `exists` reports that
//! something is there.

use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::os::fd::{AsFd as _, OwnedFd};

use cap_std::fs::Dir;
use jp_core::files::{FilesError, FilesResult, Metadata};
use jp_core::policy::WorkspacePath;
use jp_core::protocol::{DirEntry, EntryKind};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use super::{FsProjectFiles, LINK_REFUSED, map_err, nofollow, rel};

fn link_refused(path: &WorkspacePath) -> FilesError {
    FilesError::Io { path: path.display().into(), message: LINK_REFUSED.into() }
}

/// The workspace path made of the first `n` components of `comps`.
fn prefix(comps: &[&str], n: usize) -> WorkspacePath {
    WorkspacePath::parse(&comps[..n].join("/")).unwrap_or_default()
}

/// Read at most `max` + 1 bytes of an open file whose size was `len` when opened (one more than
/// the cap shows the file grew past it).
pub(super) fn read_open(path: &WorkspacePath, file: File, len: u64, max: usize) -> FilesResult<Vec<u8>> {
    let limit = (max as u64).saturating_add(1);
    let mut bytes = Vec::with_capacity(len.min(limit) as usize);
    file.take(limit).read_to_end(&mut bytes).map_err(|e| map_err(path, e))?;
    Ok(bytes)
}

impl FsProjectFiles {
    /// Open `path` beneath the root without following links.
    pub(super) fn open_nofollow(&self, path: &WorkspacePath, flags: OFlags) -> io::Result<OwnedFd> {
        nofollow::open(self.fd(), path.as_str(), flags)
    }

    /// The directory holding `path` and the last component's name (`path` is not the root).
    fn open_parent<'p>(&self, path: &'p WorkspacePath) -> FilesResult<(OwnedFd, &'p str)> {
        let parent = path.parent().unwrap_or_default();
        let fd = self.open_nofollow(&parent, OFlags::RDONLY | OFlags::DIRECTORY).map_err(|e| map_err(path, e))?;
        Ok((fd, path.file_name().unwrap_or_default()))
    }

    /// Open a regular file for reading. `O_NONBLOCK`, so a FIFO put in the project cannot hang
    /// the host: only regular files are read.
    pub(super) fn open_regular(&self, path: &WorkspacePath) -> FilesResult<(File, u64)> {
        let fd = self.open_nofollow(path, OFlags::RDONLY | OFlags::NONBLOCK).map_err(|e| map_err(path, e))?;
        let (kind, st) = nofollow::file_type(&fd).map_err(|e| map_err(path, e.into()))?;
        match kind {
            FileType::RegularFile => Ok((File::from(fd), st.st_size as u64)),
            FileType::Directory => Err(FilesError::IsADirectory(path.display().into())),
            _ => Err(FilesError::Io {
                path: path.display().into(),
                message: "not a regular file (a device, pipe or socket); only regular files can be read".into(),
            }),
        }
    }

    pub(super) fn read_sync(&self, path: &WorkspacePath, max: usize) -> FilesResult<Vec<u8>> {
        let (file, len) = self.open_regular(path)?;
        read_open(path, file, len, max)
    }

    pub(super) fn write_sync(&self, path: &WorkspacePath, content: &[u8]) -> FilesResult<()> {
        if path.is_root() {
            return Err(FilesError::IsADirectory(".".into()));
        }
        // Create the parents, reporting a file in the way like the in-memory backend does.
        let parent = path.parent().unwrap_or_default();
        let comps: Vec<&str> = parent.components().collect();
        let parent_fd = nofollow::open_dirs(self.fd(), &comps, true).map_err(|(i, e)| {
            let at = prefix(&comps, i + 1);
            if e.kind() == io::ErrorKind::NotADirectory {
                FilesError::NotADirectory(at.display().into())
            } else {
                map_err(&at, e)
            }
        })?;
        let name = path.file_name().unwrap_or_default();
        let keep_mode = match nofollow::lstat_at(parent_fd.as_fd(), name) {
            Ok((FileType::Directory, _)) => return Err(FilesError::IsADirectory(path.display().into())),
            Ok((FileType::Symlink, _)) => return Err(link_refused(path)),
            Ok((_, st)) => Some(Mode::from_raw_mode(st.st_mode & 0o7777)),
            Err(Errno::NOENT) => None,
            Err(e) => return Err(map_err(path, e.into())),
        };
        let parent_dir = Dir::from_std_file(File::from(parent_fd));
        let mut tmp = cap_tempfile::TempFile::new(&parent_dir).map_err(|e| map_err(path, e))?;
        tmp.write_all(content).map_err(|e| map_err(path, e))?;
        tmp.as_file().sync_all().map_err(|e| map_err(path, e))?;
        if let Some(mode) = keep_mode {
            rustix::fs::fchmod(tmp.as_file(), mode).map_err(|e| map_err(path, e.into()))?;
        }
        // A rename replaces whatever is at `name` now (a link swapped in included) without
        // following it.
        tmp.replace(name).map_err(|e| map_err(path, e))
    }

    pub(super) fn exists_sync(&self, path: &WorkspacePath) -> FilesResult<bool> {
        match self.open_nofollow(path, nofollow::STAT) {
            Ok(_) => Ok(true),
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => Ok(false),
            Err(e) => Err(map_err(path, e)),
        }
    }

    /// The entries of a directory. With `all`, every entry as stored — a symbolic link or an
    /// entry of unknown type as a file of its own, whatever it points to — for decisions that
    /// must see everything an operation moves; without, links are shown as what they point to
    /// inside the project and left out otherwise.
    pub(super) fn list_sync(&self, path: &WorkspacePath, all: bool) -> FilesResult<Vec<DirEntry>> {
        let fd = self.open_nofollow(path, OFlags::RDONLY | OFlags::DIRECTORY).map_err(|e| map_err(path, e))?;
        let dir = Dir::from_std_file(File::from(fd));
        let mut entries = Vec::new();
        for entry in dir.entries().map_err(|e| map_err(path, e))? {
            let entry = entry.map_err(|e| map_err(path, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = entry.file_type() else {
                if all {
                    entries.push(DirEntry { path: name, kind: EntryKind::File });
                }
                continue;
            };
            let kind = if kind.is_dir() {
                EntryKind::Dir
            } else if kind.is_symlink() && all {
                EntryKind::File
            } else if kind.is_symlink() {
                // Information only: a link is listed as what it points to when that is inside the
                // project (following it beneath the root), and left out otherwise.
                let child = path.join(&name).map_err(FilesError::InvalidPath)?;
                match self.dir.metadata(rel(&child)) {
                    Ok(m) if m.is_dir() => EntryKind::Dir,
                    Ok(_) => EntryKind::File,
                    Err(_) => continue,
                }
            } else {
                EntryKind::File
            };
            entries.push(DirEntry { path: name, kind });
        }
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(entries)
    }

    pub(super) fn metadata_sync(&self, path: &WorkspacePath) -> FilesResult<Metadata> {
        let fd = self.open_nofollow(path, nofollow::STAT).map_err(|e| map_err(path, e))?;
        match nofollow::file_type(&fd).map_err(|e| map_err(path, e.into()))? {
            (FileType::Directory, _) => Ok(Metadata { kind: EntryKind::Dir, size: 0 }),
            (FileType::Symlink, _) => Err(link_refused(path)),
            (_, st) => Ok(Metadata { kind: EntryKind::File, size: st.st_size as u64 }),
        }
    }

    pub(super) fn delete_sync(&self, path: &WorkspacePath) -> FilesResult<()> {
        if path.is_root() {
            return Err(FilesError::IsADirectory(".".into()));
        }
        let (parent, name) = self.open_parent(path)?;
        // A link is deleted itself; `unlinkat` never follows the last component.
        if let (FileType::Directory, _) =
            nofollow::lstat_at(parent.as_fd(), name).map_err(|e| map_err(path, e.into()))?
        {
            return Err(FilesError::IsADirectory(path.display().into()));
        }
        rustix::fs::unlinkat(&parent, name, AtFlags::empty()).map_err(|e| map_err(path, e.into()))
    }

    pub(super) fn rename_sync(&self, from: &WorkspacePath, to: &WorkspacePath) -> FilesResult<()> {
        if from.is_root() || to.is_root() {
            return Err(FilesError::IsADirectory(".".into()));
        }
        let (from_dir, from_name) = self.open_parent(from)?;
        nofollow::lstat_at(from_dir.as_fd(), from_name).map_err(|e| map_err(from, e.into()))?;
        if self.exists_sync(to)? {
            return Err(FilesError::AlreadyExists(to.display().into()));
        }
        if to.starts_with(from) {
            return Err(FilesError::Io {
                path: to.display().into(),
                message: "cannot move a directory into itself".into(),
            });
        }
        let parent = to.parent().unwrap_or_default();
        let comps: Vec<&str> = parent.components().collect();
        let to_dir = nofollow::open_dirs(self.fd(), &comps, true).map_err(|(_, e)| {
            if e.kind() == io::ErrorKind::NotADirectory {
                FilesError::NotADirectory(parent.display().into())
            } else {
                map_err(&parent, e)
            }
        })?;
        let to_name = to.file_name().unwrap_or_default();
        // NOREPLACE makes "the target must not exist" atomic; file systems without it get the
        // check above.
        match rustix::fs::renameat_with(&from_dir, from_name, &to_dir, to_name, RenameFlags::NOREPLACE) {
            Ok(()) => Ok(()),
            Err(Errno::EXIST) => Err(FilesError::AlreadyExists(to.display().into())),
            Err(Errno::INVAL | Errno::NOSYS) => {
                rustix::fs::renameat(&from_dir, from_name, &to_dir, to_name).map_err(|e| map_err(from, e.into()))
            }
            Err(e) => Err(map_err(from, e.into())),
        }
    }

    pub(super) fn create_dir_sync(&self, path: &WorkspacePath) -> FilesResult<()> {
        let comps: Vec<&str> = path.components().collect();
        nofollow::open_dirs(self.fd(), &comps, true).map(drop).map_err(|(i, e)| {
            let at = prefix(&comps, i + 1);
            match e.kind() {
                io::ErrorKind::NotADirectory if i + 1 == comps.len() => {
                    FilesError::AlreadyExists(path.display().into())
                }
                io::ErrorKind::NotADirectory => FilesError::NotADirectory(at.display().into()),
                _ => map_err(&at, e),
            }
        })
    }
}
