//! [`FsProjectFiles`]: the project's real directory as [`ProjectFiles`].
//!
//! Every operation goes through a capability handle ([`cap_std::fs::Dir`]) opened once on the
//! project root: cap-std resolves each path component beneath that handle (with `openat2`'s
//! `RESOLVE_BENEATH` on Linux), so no spelling, symlink or rename race can reach outside the root,
//! whatever the string checks upstream missed. Writes go to a temporary file in the target's
//! directory and are renamed over the target: a reader sees the old or the new content, never a
//! torn file, and a hard link to an outside file is replaced rather than written through.
//! `grep` walks with `ignore` (parallel, `.gitignore`-aware, hidden files skipped) and searches with
//! `grep-searcher`, reading each file through the capability handle.

use std::io::{self, Write as _};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use jp_core::BoxFuture;
use jp_core::files::{FilesError, FilesResult, GrepQuery, Materialized, Metadata, ProjectFiles};
use jp_core::policy::{PathError, WorkspacePath};
use jp_core::protocol::{DirEntry, EntryKind, GrepFileMatch, GrepLine};

/// Largest file `grep` will search, so one huge file cannot stall a search.
const GREP_MAX_FILE: u64 = 64 * 1024 * 1024;

/// The project directory on disk.
#[derive(Debug, Clone)]
pub struct FsProjectFiles {
    dir: Arc<Dir>,
    root: PathBuf,
}

fn rel(path: &WorkspacePath) -> &Path {
    if path.is_root() { Path::new(".") } else { Path::new(path.as_str()) }
}

/// Map an I/O error on `path` to the backend-independent error, with the same messages as the
/// in-memory backend.
fn map_err(path: &WorkspacePath, e: io::Error) -> FilesError {
    let shown = path.display().to_owned();
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
        Ok(Self { dir: Arc::new(dir), root })
    }

    /// The absolute, canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&FsProjectFiles) -> FilesResult<T> + Send + 'static,
    ) -> BoxFuture<'static, FilesResult<T>> {
        let me = self.clone();
        Box::pin(async move {
            match tokio::runtime::Handle::try_current() {
                Ok(_) => tokio::task::spawn_blocking(move || f(&me)).await.unwrap_or_else(|e| {
                    Err(FilesError::Io { path: ".".into(), message: format!("worker failed: {e}") })
                }),
                Err(_) => f(&me),
            }
        })
    }

    /// Resolve symbolic links beneath the root: the canonical workspace path of `path`, or an
    /// error when it leads outside. A path that does not exist yet resolves through its deepest
    /// existing ancestor.
    pub fn resolve_sync(&self, path: &WorkspacePath) -> FilesResult<WorkspacePath> {
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

    fn read_sync(&self, path: &WorkspacePath) -> FilesResult<Vec<u8>> {
        let meta = self.dir.metadata(rel(path)).map_err(|e| map_err(path, e))?;
        if meta.is_dir() {
            return Err(FilesError::IsADirectory(path.display().into()));
        }
        self.dir.read(rel(path)).map_err(|e| map_err(path, e))
    }

    fn write_sync(&self, path: &WorkspacePath, content: &[u8]) -> FilesResult<()> {
        if path.is_root() {
            return Err(FilesError::IsADirectory(".".into()));
        }
        // Write where the path really points (a symlink inside the project is followed; one that
        // leads outside is refused by resolve).
        let target = self.resolve_sync(path)?;
        let parent = target.parent().unwrap_or_default();
        // Create the parents, reporting a file in the way like the in-memory backend does.
        let mut cur = WorkspacePath::root();
        for comp in parent.components() {
            cur = cur.join(comp).map_err(FilesError::InvalidPath)?;
            match self.dir.symlink_metadata(rel(&cur)) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(FilesError::NotADirectory(cur.display().into())),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    self.dir.create_dir(rel(&cur)).or_else(|e| {
                        if e.kind() == io::ErrorKind::AlreadyExists { Ok(()) } else { Err(map_err(&cur, e)) }
                    })?;
                }
                Err(e) => return Err(map_err(&cur, e)),
            }
        }
        if self.dir.symlink_metadata(rel(&target)).is_ok_and(|m| m.is_dir()) {
            return Err(FilesError::IsADirectory(path.display().into()));
        }
        let parent_dir = self.dir.open_dir(rel(&parent)).map_err(|e| map_err(&parent, e))?;
        let name = target.file_name().unwrap_or_default().to_owned();
        let keep_mode = parent_dir.metadata(&name).ok().map(|m| m.permissions());
        let mut tmp = cap_tempfile::TempFile::new(&parent_dir).map_err(|e| map_err(path, e))?;
        tmp.write_all(content).map_err(|e| map_err(path, e))?;
        tmp.as_file().sync_all().map_err(|e| map_err(path, e))?;
        if let Some(perm) = keep_mode {
            tmp.as_file().set_permissions(perm).map_err(|e| map_err(path, e))?;
        }
        tmp.replace(&name).map_err(|e| map_err(path, e))
    }

    fn list_sync(&self, path: &WorkspacePath) -> FilesResult<Vec<DirEntry>> {
        let meta = self.dir.metadata(rel(path)).map_err(|e| map_err(path, e))?;
        if !meta.is_dir() {
            return Err(FilesError::NotADirectory(path.display().into()));
        }
        let mut entries = Vec::new();
        for entry in self.dir.read_dir(rel(path)).map_err(|e| map_err(path, e))? {
            let entry = entry.map_err(|e| map_err(path, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let child = path.join(&name).map_err(FilesError::InvalidPath)?;
            // Symlinks are listed as what they point to when that is inside the project.
            let kind = match self.dir.metadata(rel(&child)) {
                Ok(m) if m.is_dir() => EntryKind::Dir,
                Ok(_) => EntryKind::File,
                Err(_) => continue,
            };
            entries.push(DirEntry { path: name, kind });
        }
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(entries)
    }

    fn metadata_sync(&self, path: &WorkspacePath) -> FilesResult<Metadata> {
        let m = self.dir.metadata(rel(path)).map_err(|e| map_err(path, e))?;
        Ok(if m.is_dir() {
            Metadata { kind: EntryKind::Dir, size: 0 }
        } else {
            Metadata { kind: EntryKind::File, size: m.len() }
        })
    }

    fn delete_sync(&self, path: &WorkspacePath) -> FilesResult<()> {
        let m = self.dir.symlink_metadata(rel(path)).map_err(|e| map_err(path, e))?;
        if m.is_dir() {
            return Err(FilesError::IsADirectory(path.display().into()));
        }
        self.dir.remove_file(rel(path)).map_err(|e| map_err(path, e))
    }

    fn rename_sync(&self, from: &WorkspacePath, to: &WorkspacePath) -> FilesResult<()> {
        if from.is_root() || to.is_root() {
            return Err(FilesError::IsADirectory(".".into()));
        }
        self.dir.symlink_metadata(rel(from)).map_err(|e| map_err(from, e))?;
        if self.dir.symlink_metadata(rel(to)).is_ok() {
            return Err(FilesError::AlreadyExists(to.display().into()));
        }
        if to.starts_with(from) {
            return Err(FilesError::Io {
                path: to.display().into(),
                message: "cannot move a directory into itself".into(),
            });
        }
        if let Some(parent) = to.parent().filter(|p| !p.is_root()) {
            match self.dir.symlink_metadata(rel(&parent)) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(FilesError::NotADirectory(parent.display().into())),
                Err(_) => self.dir.create_dir_all(rel(&parent)).map_err(|e| map_err(&parent, e))?,
            }
        }
        self.dir.rename(rel(from), &self.dir, rel(to)).map_err(|e| map_err(from, e))
    }

    /// Search one file (opened beneath the root, so a swapped-in symlink cannot lead out).
    fn grep_file(
        &self,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
        path: &WorkspacePath,
    ) -> Option<GrepFileMatch> {
        use std::io::Read as _;
        let mut file = self.dir.open(rel(path)).ok()?;
        let len = file.metadata().ok()?.len();
        if len > GREP_MAX_FILE {
            return None;
        }
        let mut bytes = Vec::with_capacity(len as usize);
        file.read_to_end(&mut bytes).ok()?;
        // Binary files (a NUL byte anywhere) are skipped, as in the in-memory grep.
        if bytes.contains(&0) {
            return None;
        }
        let mut sink = Collect { lines: Vec::new() };
        searcher.search_slice(matcher, &bytes, &mut sink).ok()?;
        (!sink.lines.is_empty()).then(|| GrepFileMatch { path: path.as_str().to_owned(), lines: sink.lines })
    }

    /// Walk and search in one parallel pass, as ripgrep does: each walker thread searches the
    /// files it finds with its own searcher.
    fn grep_sync(&self, query: &GrepQuery) -> FilesResult<Vec<GrepFileMatch>> {
        let roots = if query.paths.is_empty() { vec![WorkspacePath::root()] } else { query.paths.clone() };
        let matcher = RegexMatcherBuilder::new()
            .build(query.regex.as_str())
            .map_err(|e| FilesError::InvalidPattern(e.to_string()))?;
        let context = query.context as usize;
        let new_searcher =
            || SearcherBuilder::new().line_number(true).before_context(context).after_context(context).build();
        let results = Mutex::new(Vec::new());
        for root in &roots {
            let meta = self.dir.metadata(rel(root)).map_err(|e| map_err(root, e))?;
            if !meta.is_dir() {
                // An explicitly named file is searched whatever its extension or name.
                if let Some(m) = self.grep_file(&mut new_searcher(), &matcher, root) {
                    results
                        .lock()
                        .map_err(|_| FilesError::Io {
                            path: root.display().into(),
                            message: "grep worker panicked".into(),
                        })?
                        .push(m);
                }
                continue;
            }
            let walk_root = self.root.join(rel(root));
            ignore::WalkBuilder::new(&walk_root)
                .hidden(true)
                .git_ignore(true)
                .require_git(false)
                .follow_links(false)
                .threads(std::thread::available_parallelism().map_or(2, |n| n.get()).min(8))
                .build_parallel()
                .run(|| {
                    let mut searcher = new_searcher();
                    let (matcher, results) = (&matcher, &results);
                    Box::new(move |entry| {
                        if let Ok(entry) = entry
                            && entry.file_type().is_some_and(|t| t.is_file())
                            && let Ok(relative) = entry.path().strip_prefix(&self.root)
                            && let Some(p) = relative.to_str().and_then(|s| WorkspacePath::parse(s).ok())
                            && query.extension_ok(&p)
                            && let Some(m) = self.grep_file(&mut searcher, matcher, &p)
                            && let Ok(mut r) = results.lock()
                        {
                            r.push(m);
                        }
                        ignore::WalkState::Continue
                    })
                });
        }
        let mut results = results.into_inner().unwrap_or_default();
        results.sort_by(|a, b| a.path.cmp(&b.path));
        results.dedup_by(|a, b| a.path == b.path);
        Ok(results)
    }
}

/// Collects matched and context lines with 1-based numbers.
struct Collect {
    lines: Vec<GrepLine>,
}

fn line_text(bytes: &[u8]) -> String {
    let trimmed = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
    String::from_utf8_lossy(trimmed).into_owned()
}

impl Sink for Collect {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let first = mat.line_number().unwrap_or(0);
        for (i, line) in mat.lines().enumerate() {
            self.lines.push(GrepLine { line_number: first + i as u64, content: line_text(line), is_match: true });
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        self.lines.push(GrepLine {
            line_number: ctx.line_number().unwrap_or(0),
            content: line_text(ctx.bytes()),
            is_match: false,
        });
        Ok(true)
    }
}

impl ProjectFiles for FsProjectFiles {
    fn read<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Vec<u8>>> {
        let path = path.clone();
        self.run(move |me| me.read_sync(&path))
    }
    fn write<'a>(&'a self, path: &'a WorkspacePath, content: &'a [u8]) -> BoxFuture<'a, FilesResult<()>> {
        let (path, content) = (path.clone(), content.to_vec());
        self.run(move |me| me.write_sync(&path, &content))
    }
    fn exists<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<bool>> {
        let path = path.clone();
        self.run(move |me| match me.dir.metadata(rel(&path)) {
            Ok(_) => Ok(true),
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => Ok(false),
            Err(e) => Err(map_err(&path, e)),
        })
    }
    fn list_dir<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Vec<DirEntry>>> {
        let path = path.clone();
        self.run(move |me| me.list_sync(&path))
    }
    fn metadata<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Metadata>> {
        let path = path.clone();
        self.run(move |me| me.metadata_sync(&path))
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
        self.run(move |me| me.dir.create_dir_all(rel(&path)).map_err(|e| map_err(&path, e)))
    }
    fn resolve<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<WorkspacePath>> {
        let path = path.clone();
        self.run(move |me| me.resolve_sync(&path))
    }
    fn materialize(&self) -> BoxFuture<'_, FilesResult<Materialized>> {
        let root = self.root.to_string_lossy().into_owned();
        Box::pin(async move { Ok(Materialized { root }) })
    }
    fn display_root(&self) -> String {
        self.root.display().to_string()
    }
}
