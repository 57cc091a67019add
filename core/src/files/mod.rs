//! Project files (RFD D09): the [`ProjectFiles`] trait and its platform-neutral backends.
//!
//! Every backend — the real directory (native), IndexedDB (browser), memory (edge, tests) — takes
//! [`WorkspacePath`]s, which cannot name anything outside the project: absolute paths and `..`
//! escapes were rejected when the path was parsed. [`grep`] is the backend-independent search
//! that in-memory and browser backends share; the native backend uses ripgrep's crates instead
//! and is held to the same answers by the conformance vectors.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use regex::Regex;

use crate::maybe::{BoxFuture, MaybeSend, MaybeSync};
use crate::policy::{PathError, WorkspacePath};
use crate::protocol::{DirEntry, EntryKind, GrepFileMatch, GrepLine};

mod memory;
pub use memory::InMemoryProjectFiles;

/// Why a project file operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilesError {
    /// The path does not exist.
    #[error("'{0}' does not exist")]
    NotFound(String),
    /// The target exists and the operation would replace it.
    #[error("'{0}' already exists; delete it first or choose another name")]
    AlreadyExists(String),
    /// A file was expected but this is a directory.
    #[error("'{0}' is a directory, not a file")]
    IsADirectory(String),
    /// A directory was expected (or a parent component is a file).
    #[error("'{0}' is not a directory")]
    NotADirectory(String),
    /// The path is invalid.
    #[error(transparent)]
    InvalidPath(#[from] PathError),
    /// The grep pattern is not a valid regular expression.
    #[error("invalid pattern: {0}")]
    InvalidPattern(String),
    /// The backend cannot do this at all.
    #[error("not available: {0}")]
    Unsupported(String),
    /// A failure of the underlying storage.
    #[error("storage error on '{path}': {message}")]
    Io {
        /// The path involved.
        path: String,
        /// What the storage said.
        message: String,
    },
}

/// Result of a project file operation.
pub type FilesResult<T> = Result<T, FilesError>;

/// Kind and size of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metadata {
    /// File or directory.
    pub kind: EntryKind,
    /// Size in bytes (0 for directories).
    pub size: u64,
}

/// A real directory holding the project, for subprocess tools (D09 `materialize`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Materialized {
    /// Absolute host path of the directory.
    pub root: String,
}

/// A compiled `fs.grep` query.
#[derive(Debug, Clone)]
pub struct GrepQuery {
    /// The compiled pattern.
    pub regex: Regex,
    /// Where to search; empty means the whole project.
    pub paths: Vec<WorkspacePath>,
    /// Extensions (without the dot) of walked files to search; empty means all.
    pub extensions: Vec<String>,
    /// Context lines before and after each match.
    pub context: u32,
    /// Which files the search may look into at all (the dispatcher sets it from the policy):
    /// others are neither searched nor counted against `max_bytes`, so what comes back — and
    /// whether it was cut — says nothing about them. `None`: every file.
    pub filter: Option<GrepFilter>,
    /// Stop once the matched and context lines collected hold more than this many bytes
    /// (the dispatcher sets it to its size cap, so a hostile search cannot grow host memory
    /// without bound). The file whose lines crossed the limit is still returned; the caller
    /// trims it and marks the result truncated.
    pub max_bytes: usize,
}

/// A predicate over workspace paths deciding which files a grep may search ([`GrepQuery::filter`]).
#[derive(Clone)]
pub struct GrepFilter(Arc<dyn Fn(&WorkspacePath) -> bool + Send + Sync>);

impl GrepFilter {
    /// A filter from a predicate.
    pub fn new(f: impl Fn(&WorkspacePath) -> bool + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }
}

impl std::fmt::Debug for GrepFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GrepFilter(..)")
    }
}

/// Largest compiled regex accepted, so a pattern cannot exhaust memory.
const REGEX_SIZE_LIMIT: usize = 10 * 1024 * 1024;

impl GrepQuery {
    /// Compile a query; an invalid pattern or path is an error saying which.
    pub fn new(pattern: &str, paths: &[String], extensions: &[String], context: u32) -> FilesResult<Self> {
        let regex = regex::RegexBuilder::new(pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|e| FilesError::InvalidPattern(e.to_string()))?;
        let paths = paths.iter().map(|p| WorkspacePath::parse(p)).collect::<Result<Vec<_>, _>>()?;
        let extensions = extensions.iter().map(|e| e.trim_start_matches('.').to_owned()).collect();
        Ok(Self { regex, paths, extensions, context, filter: None, max_bytes: usize::MAX })
    }

    /// Whether the search may look into `path` ([`GrepQuery::filter`]).
    pub fn searchable(&self, path: &WorkspacePath) -> bool {
        self.filter.as_ref().is_none_or(|f| (f.0)(path))
    }

    /// Whether a walked file passes the extension filter.
    pub fn extension_ok(&self, path: &WorkspacePath) -> bool {
        self.extensions.is_empty()
            || path
                .file_name()
                .and_then(|n| n.rsplit_once('.'))
                .is_some_and(|(_, ext)| self.extensions.iter().any(|e| e == ext))
    }
}

/// The user's project files (RFD D09). Paths are relative to the project root.
pub trait ProjectFiles: MaybeSend + MaybeSync {
    /// Read a file.
    fn read<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Vec<u8>>>;
    /// Read at most `max + 1` bytes of a file, so a caller holding a size cap never holds more
    /// than one byte over it, even when the file grows after its size was checked. Default:
    /// [`read`](Self::read) (backends that already hold the file in memory).
    fn read_at_most<'a>(&'a self, path: &'a WorkspacePath, max: usize) -> BoxFuture<'a, FilesResult<Vec<u8>>> {
        let _ = max;
        self.read(path)
    }
    /// Write a file atomically, creating parent directories.
    fn write<'a>(&'a self, path: &'a WorkspacePath, content: &'a [u8]) -> BoxFuture<'a, FilesResult<()>>;
    /// Whether a path exists.
    fn exists<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<bool>>;
    /// The entries of a directory, sorted by name (non-recursive).
    fn list_dir<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Vec<DirEntry>>>;
    /// Every entry of a directory as stored, for decisions that must see everything an
    /// operation moves (a directory rename): a symbolic link is an entry of its own (kind
    /// file) whatever it points to, and nothing is left out. Default: [`list_dir`](Self::list_dir)
    /// (backends without links).
    fn entries<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Vec<DirEntry>>> {
        self.list_dir(path)
    }
    /// Kind and size of a path.
    fn metadata<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Metadata>>;
    /// Delete a file.
    fn delete<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<()>>;
    /// Rename a file or directory; the target must not exist; its parents are created.
    fn rename<'a>(&'a self, from: &'a WorkspacePath, to: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<()>>;
    /// Search file contents; results sorted by path.
    fn grep<'a>(&'a self, query: &'a GrepQuery) -> BoxFuture<'a, FilesResult<Vec<GrepFileMatch>>>;
    /// Create a directory and its parents (for hosts whose tools can make empty directories,
    /// e.g. a component's `mkdir`). Default: unsupported.
    fn create_dir<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<()>> {
        Box::pin(async move {
            Err(FilesError::Unsupported(format!("this backend cannot create the empty directory '{}'", path.display())))
        })
    }
    /// The path policy rules are checked against: with symlinks resolved for backends that have
    /// them. A path that resolves outside the project is an error. Default: the path itself.
    fn resolve<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<WorkspacePath>> {
        Box::pin(async move { Ok(path.clone()) })
    }
    /// A real directory with the project's files, for subprocess tools.
    fn materialize(&self) -> BoxFuture<'_, FilesResult<Materialized>> {
        Box::pin(async { Err(FilesError::Unsupported("this backend cannot provide a real directory".into())) })
    }
    /// A human-readable name of the project root.
    fn display_root(&self) -> String;
}

/// How many bytes one file's matches count against [`GrepQuery::max_bytes`]: its path and the
/// text of every line returned (matched and context).
pub fn match_bytes(m: &GrepFileMatch) -> usize {
    m.path.len() + m.lines.iter().map(|l| l.content.len() + 16).sum::<usize>()
}

/// Search one file's bytes. Files with a NUL byte are binary and skipped (as ripgrep does);
/// other invalid UTF-8 is read lossily.
pub fn grep_one(path: &WorkspacePath, bytes: &[u8], regex: &Regex, context: u32) -> Option<GrepFileMatch> {
    if bytes.contains(&0) {
        return None;
    }
    let text = String::from_utf8_lossy(bytes);
    let mut lines: Vec<&str> = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    if text.ends_with('\n') {
        lines.pop();
    }
    let matched: Vec<usize> = lines.iter().enumerate().filter(|(_, l)| regex.is_match(l)).map(|(i, _)| i).collect();
    if matched.is_empty() {
        return None;
    }
    let ctx = context as usize;
    let mut shown = BTreeSet::new();
    for &i in &matched {
        shown.extend(i.saturating_sub(ctx)..=(i + ctx).min(lines.len() - 1));
    }
    let matched: BTreeSet<usize> = matched.into_iter().collect();
    Some(GrepFileMatch {
        path: path.as_str().to_owned(),
        lines: shown
            .into_iter()
            .map(|i| GrepLine {
                line_number: i as u64 + 1,
                content: lines[i].to_owned(),
                is_match: matched.contains(&i),
            })
            .collect(),
    })
}

fn is_hidden_below(path: &WorkspacePath, root: &WorkspacePath) -> bool {
    path.components().skip(root.depth()).any(|c| c.starts_with('.'))
}

/// Backend-independent grep over `(path, bytes)` pairs of every file in a project.
///
/// Search roots are `query.paths` (the whole project when empty). Like ripgrep, files and
/// directories starting with `.` are skipped while walking below a root, and explicitly named files
/// are searched whatever their extension. A root that does not exist is an error.
pub fn grep<'a, I>(query: &GrepQuery, files: I) -> FilesResult<Vec<GrepFileMatch>>
where
    I: IntoIterator<Item = (&'a WorkspacePath, &'a [u8])> + Clone,
{
    let roots = if query.paths.is_empty() { vec![WorkspacePath::root()] } else { query.paths.clone() };
    let mut out: BTreeMap<String, GrepFileMatch> = BTreeMap::new();
    let mut total = 0usize;
    for root in &roots {
        let mut seen = false;
        for (path, bytes) in files.clone() {
            if !path.starts_with(root) {
                continue;
            }
            seen = true;
            let explicit = path == root;
            if total > query.max_bytes
                || !query.searchable(path)
                || (!explicit && (is_hidden_below(path, root) || !query.extension_ok(path)))
            {
                continue;
            }
            if let Some(m) = grep_one(path, bytes, &query.regex, query.context)
                && !out.contains_key(&m.path)
            {
                total += match_bytes(&m);
                out.insert(m.path.clone(), m);
            }
        }
        if !seen && !root.is_root() {
            return Err(FilesError::NotFound(root.display().to_owned()));
        }
    }
    Ok(out.into_values().collect())
}

/// A project with no files: reads find nothing, writes are refused. For hosts with no project.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullProjectFiles;

impl NullProjectFiles {
    fn refuse<T>() -> FilesResult<T> {
        Err(FilesError::Unsupported("this host has no project files (NullProjectFiles); nothing can be written".into()))
    }
}

impl ProjectFiles for NullProjectFiles {
    fn read<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Vec<u8>>> {
        Box::pin(async move { Err(FilesError::NotFound(path.display().to_owned())) })
    }
    fn write<'a>(&'a self, _: &'a WorkspacePath, _: &'a [u8]) -> BoxFuture<'a, FilesResult<()>> {
        Box::pin(async { Self::refuse() })
    }
    fn exists<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<bool>> {
        Box::pin(async move { Ok(path.is_root()) })
    }
    fn list_dir<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Vec<DirEntry>>> {
        Box::pin(async move {
            if path.is_root() { Ok(Vec::new()) } else { Err(FilesError::NotFound(path.display().to_owned())) }
        })
    }
    fn metadata<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Metadata>> {
        Box::pin(async move {
            if path.is_root() {
                Ok(Metadata { kind: EntryKind::Dir, size: 0 })
            } else {
                Err(FilesError::NotFound(path.display().to_owned()))
            }
        })
    }
    fn delete<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<()>> {
        Box::pin(async move { Err(FilesError::NotFound(path.display().to_owned())) })
    }
    fn rename<'a>(&'a self, from: &'a WorkspacePath, _: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<()>> {
        Box::pin(async move { Err(FilesError::NotFound(from.display().to_owned())) })
    }
    fn grep<'a>(&'a self, query: &'a GrepQuery) -> BoxFuture<'a, FilesResult<Vec<GrepFileMatch>>> {
        Box::pin(async move { grep(query, std::iter::empty()) })
    }
    fn display_root(&self) -> String {
        "null:".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_executor::block_on;

    fn p(s: &str) -> WorkspacePath {
        WorkspacePath::parse(s).unwrap()
    }

    #[test]
    fn grep_context_and_numbers() {
        let re = Regex::new("b").unwrap();
        let m = grep_one(&p("f"), b"a\nb\nc\nd\nb\n", &re, 1).unwrap();
        let got: Vec<(u64, bool)> = m.lines.iter().map(|l| (l.line_number, l.is_match)).collect();
        assert_eq!(got, [(1, false), (2, true), (3, false), (4, false), (5, true)]);
        assert!(grep_one(&p("f"), b"b\0", &re, 0).is_none());
        assert!(grep_one(&p("f"), b"x\r\ny", &re, 0).is_none());
    }

    #[test]
    fn null_backend() {
        block_on(async {
            let n = NullProjectFiles;
            assert!(n.list_dir(&WorkspacePath::root()).await.unwrap().is_empty());
            assert!(matches!(n.write(&p("x"), b"").await, Err(FilesError::Unsupported(_))));
            assert!(matches!(n.read(&p("x")).await, Err(FilesError::NotFound(_))));
        });
    }
}
