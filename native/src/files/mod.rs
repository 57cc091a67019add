//! [`FsProjectFiles`]: the project's real directory as [`ProjectFiles`].
//!
//! Every operation goes through a capability handle ([`cap_std::fs::Dir`]) opened once on the
//! project root, and acts on exactly the path it is given: no symbolic link is followed in any
//! component (`nofollow`). The dispatcher decides on a path with its links resolved
//! ([`ProjectFiles::resolve`], the one place links are followed, beneath the root only) and hands
//! that path to the operation, so the object the policy decided is the object touched; a link
//! swapped in between makes the operation fail instead of redirecting it. Writes go to a
//! temporary file in the target's directory and are renamed over the target: a reader sees the
//! old or the new content, never a torn file, and a hard link to an outside file is replaced
//! rather than written through. `grep` walks with `ignore` (parallel, `.gitignore`-aware, hidden
//! files skipped) and searches with `grep-searcher`, opening each file the same way.

mod grep;
mod nofollow;
mod ops;

use std::io;
use std::os::fd::{AsFd as _, BorrowedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use jp_core::BoxFuture;
use jp_core::files::{FilesError, FilesResult, GrepQuery, Materialized, Metadata, ProjectFiles};
use jp_core::policy::{PathError, WorkspacePath};
use jp_core::protocol::{DirEntry, GrepFileMatch};

/// The project directory on disk.
#[derive(Debug, Clone)]
pub struct FsProjectFiles {
    dir: Arc<Dir>,
    root: PathBuf,
    /// One blocking operation at a time per project handle. A request a tool cancels is
    /// abandoned by the host, but its blocking work runs on: the permit travels with that work,
    /// so the next operation starts only once it is done — abandoned searches cannot pile up
    /// in memory, and an abandoned write cannot land in the middle of a later decision.
    busy: Arc<tokio::sync::Semaphore>,
}

fn rel(path: &WorkspacePath) -> &Path {
    if path.is_root() { Path::new(".") } else { Path::new(path.as_str()) }
}

/// Files up to this size are read on the calling task (see `FsProjectFiles::inline`).
pub const INLINE_READ: u64 = 256 * 1024;

/// What a symbolic link met by an operation is reported as.
const LINK_REFUSED: &str = "a component of this path is a symbolic link, which file operations do not follow \
     (the path changed while in use, or it was not resolved first); nothing was done: retry the request";

/// Map an I/O error on `path` to the backend-independent error, with the same messages as the
/// in-memory backend.
fn map_err(path: &WorkspacePath, e: io::Error) -> FilesError {
    let shown = path.display().to_owned();
    if nofollow::is_link(&e) {
        return FilesError::Io { path: shown, message: LINK_REFUSED.into() };
    }
    match e.kind() {
        io::ErrorKind::NotFound => FilesError::NotFound(shown),
        io::ErrorKind::AlreadyExists => FilesError::AlreadyExists(shown),
        io::ErrorKind::IsADirectory => FilesError::IsADirectory(shown),
        io::ErrorKind::NotADirectory => FilesError::NotADirectory(shown),
        _ if e.to_string().contains("outside of the filesystem") => {
            FilesError::InvalidPath(PathError::Escapes(format!("{shown} (through a symbolic link)")))
        }
        _ => FilesError::Io { path: shown, message: e.to_string() },
    }
}

impl FsProjectFiles {
    /// Open the project rooted at `root` (the only use of ambient authority).
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = std::fs::canonicalize(root.as_ref())?;
        let dir = Dir::open_ambient_dir(&root, ambient_authority())?;
        Ok(Self { dir: Arc::new(dir), root, busy: Arc::new(tokio::sync::Semaphore::new(1)) })
    }

    /// The directory at `path` (already resolved: no link in it is followed) as a project of its
    /// own, opened through this project's handle, so what was checked is what gets mounted: a
    /// link swapped in after the check makes this fail instead of leading elsewhere.
    pub fn subtree(&self, path: &WorkspacePath) -> FilesResult<FsProjectFiles> {
        let fd = self
            .open_nofollow(path, rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY)
            .map_err(|e| map_err(path, e))?;
        let dir = Dir::from_std_file(std::fs::File::from(fd));
        Ok(Self {
            dir: Arc::new(dir),
            root: self.root.join(path.as_str()),
            busy: Arc::new(tokio::sync::Semaphore::new(1)),
        })
    }

    /// The absolute, canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The root handle every operation starts from.
    fn fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&FsProjectFiles) -> FilesResult<T> + Send + 'static,
    ) -> BoxFuture<'static, FilesResult<T>> {
        let me = self.clone();
        Box::pin(async move {
            match tokio::runtime::Handle::try_current() {
                Ok(_) => {
                    let permit = me.busy.clone().acquire_owned().await.map_err(|e| FilesError::Io {
                        path: ".".into(),
                        message: format!("the project handle is closed: {e}"),
                    })?;
                    tokio::task::spawn_blocking(move || {
                        let _held_until_done = permit;
                        f(&me)
                    })
                    .await
                    .unwrap_or_else(|e| {
                        Err(FilesError::Io { path: ".".into(), message: format!("worker failed: {e}") })
                    })
                }
                Err(_) => f(&me),
            }
        })
    }

    /// Run a small, bounded operation (a stat, a walk of a path's components, a read under
    /// [`INLINE_READ`]) on the calling task: a hop to a blocking thread costs more than the
    /// operation. It still waits for the permit, so it never overtakes an abandoned blocking
    /// operation that is still running.
    fn inline<'a, T: 'a>(
        &'a self,
        f: impl FnOnce(&FsProjectFiles) -> FilesResult<T> + Send + 'a,
    ) -> BoxFuture<'a, FilesResult<T>> {
        Box::pin(async move {
            let _permit = match self.busy.try_acquire() {
                Ok(p) => p,
                Err(_) => self.busy.acquire().await.map_err(|e| FilesError::Io {
                    path: ".".into(),
                    message: format!("the project handle is closed: {e}"),
                })?,
            };
            f(self)
        })
    }

    /// Resolve symbolic links beneath the root: the canonical workspace path of `path`, or an
    /// error when it leads outside. A path that does not exist yet resolves through its deepest
    /// existing ancestor.
    pub fn resolve_sync(&self, path: &WorkspacePath) -> FilesResult<WorkspacePath> {
        // The common case in one `openat2`: an existing path with no link in any component is
        // its own resolution. Anything else (a link somewhere, a path not there yet) takes the
        // walk below.
        if let Ok(fd) = self.open_nofollow(path, nofollow::STAT)
            && nofollow::file_type(&fd).is_ok_and(|(kind, _)| kind != rustix::fs::FileType::Symlink)
        {
            return Ok(path.clone());
        }
        let mut existing = path.clone();
        let mut rest: Vec<String> = Vec::new();
        let mut hops = 0;
        loop {
            match self.dir.canonicalize(rel(&existing)) {
                Ok(canon) => {
                    let mut text = String::new();
                    for c in canon.components() {
                        match c {
                            Component::Normal(n) => {
                                if !text.is_empty() {
                                    text.push('/');
                                }
                                text.push_str(&n.to_string_lossy());
                            }
                            Component::CurDir => {}
                            _ => return Err(FilesError::InvalidPath(PathError::Escapes(path.display().into()))),
                        }
                    }
                    for r in rest.iter().rev() {
                        if !text.is_empty() {
                            text.push('/');
                        }
                        text.push_str(r);
                    }
                    return WorkspacePath::parse(&text).map_err(FilesError::InvalidPath);
                }
                Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
                    // A dangling symlink is not "missing": resolving through it would hide where
                    // it points. Refuse links that do not resolve inside the root.
                    if self.dir.symlink_metadata(rel(&existing)).is_ok_and(|m| m.file_type().is_symlink()) {
                        let target = self.dir.read_link_contents(rel(&existing)).map_err(|e| map_err(path, e))?;
                        let parent = existing.parent().unwrap_or_default();
                        let joined = if target.is_absolute() {
                            None
                        } else {
                            WorkspacePath::parse(
                                format!("{}/{}", parent.as_str(), target.to_string_lossy()).trim_start_matches('/'),
                            )
                            .ok()
                        };
                        match joined {
                            Some(inside) if hops < 40 => {
                                hops += 1;
                                existing = inside;
                                continue;
                            }
                            _ => {
                                return Err(FilesError::InvalidPath(PathError::Escapes(format!(
                                    "{} (a symbolic link to {})",
                                    path.display(),
                                    target.display()
                                ))));
                            }
                        }
                    }
                    match (existing.parent(), existing.file_name()) {
                        (Some(parent), Some(name)) => {
                            rest.push(name.to_owned());
                            existing = parent;
                        }
                        _ => return Err(FilesError::NotFound(path.display().into())),
                    }
                }
                Err(e) => return Err(map_err(path, e)),
            }
        }
    }
}

impl ProjectFiles for FsProjectFiles {
    fn read<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Vec<u8>>> {
        let path = path.clone();
        self.run(move |me| me.read_sync(&path, usize::MAX - 1))
    }
    fn read_at_most<'a>(&'a self, path: &'a WorkspacePath, max: usize) -> BoxFuture<'a, FilesResult<Vec<u8>>> {
        Box::pin(async move {
            // Small files (what tools mostly read) are read right here; a big one on a blocking
            // thread, so a slow read never holds up the runtime. Either way from the one open.
            let opened = self
                .inline(|me| {
                    let (file, len) = me.open_regular(path)?;
                    if len <= INLINE_READ { ops::read_open(path, file, len, max).map(Ok) } else { Ok(Err((file, len))) }
                })
                .await?;
            match opened {
                Ok(bytes) => Ok(bytes),
                Err((file, len)) => {
                    let path = path.clone();
                    self.run(move |_| ops::read_open(&path, file, len, max)).await
                }
            }
        })
    }
    fn write<'a>(&'a self, path: &'a WorkspacePath, content: &'a [u8]) -> BoxFuture<'a, FilesResult<()>> {
        let (path, content) = (path.clone(), content.to_vec());
        self.run(move |me| me.write_sync(&path, &content))
    }
    fn exists<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<bool>> {
        self.inline(move |me| me.exists_sync(path))
    }
    fn list_dir<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Vec<DirEntry>>> {
        let path = path.clone();
        self.run(move |me| me.list_sync(&path, false))
    }
    fn entries<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Vec<DirEntry>>> {
        let path = path.clone();
        self.run(move |me| me.list_sync(&path, true))
    }
    fn metadata<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Metadata>> {
        self.inline(move |me| me.metadata_sync(path))
    }
    fn delete<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<()>> {
        let path = path.clone();
        self.run(move |me| me.delete_sync(&path))
    }
    fn rename<'a>(&'a self, from: &'a WorkspacePath, to: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<()>> {
        let (from, to) = (from.clone(), to.clone());
        self.run(move |me| me.rename_sync(&from, &to))
    }
    fn grep<'a>(&'a self, query: &'a GrepQuery) -> BoxFuture<'a, FilesResult<Vec<GrepFileMatch>>> {
        let query = query.clone();
        self.run(move |me| me.grep_sync(&query))
    }
    fn create_dir<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<()>> {
        let path = path.clone();
        self.run(move |me| me.create_dir_sync(&path))
    }
    fn resolve<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<WorkspacePath>> {
        self.inline(move |me| me.resolve_sync(path))
    }
    fn materialize(&self) -> BoxFuture<'_, FilesResult<Materialized>> {
        let root = self.root.to_string_lossy().into_owned();
        Box::pin(async move { Ok(Materialized { root }) })
    }
    fn display_root(&self) -> String {
        self.root.display().to_string()
    }
}
