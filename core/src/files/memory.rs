//! [`InMemoryProjectFiles`]: a project held in memory (edge functions, snapshots in the page,
//! tests and conformance vectors), which knows what was written to it since it was last asked
//! ([`InMemoryProjectFiles::take_touched`]) and whether anything changed at all
//! ([`InMemoryProjectFiles::generation`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use super::{FilesError, FilesResult, GrepQuery, Metadata, ProjectFiles, grep};
use crate::maybe::BoxFuture;
use crate::policy::WorkspacePath;
use crate::protocol::{DirEntry, EntryKind, GrepFileMatch};

/// Project files held in memory: for edge functions, tests and conformance vectors.
#[derive(Debug, Default)]
pub struct InMemoryProjectFiles {
    state: Mutex<MemState>,
    name: String,
}

#[derive(Debug, Default, Clone)]
struct MemState {
    files: BTreeMap<WorkspacePath, Vec<u8>>,
    /// Directories that exist (ancestors of files are added on write).
    dirs: BTreeSet<WorkspacePath>,
    /// Files written, deleted or moved (both ends) since the last `take_touched`.
    touched: BTreeSet<WorkspacePath>,
    /// Bumped by every change (files and directories): equal generations, equal contents.
    generation: u64,
}

impl MemState {
    fn is_dir(&self, path: &WorkspacePath) -> bool {
        path.is_root() || self.dirs.contains(path)
    }

    fn ensure_parents(&mut self, path: &WorkspacePath) -> FilesResult<()> {
        let mut ancestors = Vec::new();
        let mut cur = path.parent();
        while let Some(p) = cur {
            if p.is_root() {
                break;
            }
            if self.files.contains_key(&p) {
                return Err(FilesError::NotADirectory(p.display().to_owned()));
            }
            cur = p.parent();
            ancestors.push(p);
        }
        self.dirs.extend(ancestors);
        Ok(())
    }
}

impl InMemoryProjectFiles {
    /// An empty project.
    pub fn new() -> Self {
        Self { state: Mutex::default(), name: "memory:".into() }
    }

    /// A project with these files (path → content). Invalid paths are an error.
    pub fn with_files<I, P, C>(files: I) -> FilesResult<Self>
    where
        I: IntoIterator<Item = (P, C)>,
        P: AsRef<str>,
        C: Into<Vec<u8>>,
    {
        let me = Self::new();
        {
            let mut st = me.lock();
            for (path, content) in files {
                let path = WorkspacePath::parse(path.as_ref())?;
                if path.is_root() {
                    return Err(FilesError::IsADirectory(".".into()));
                }
                st.ensure_parents(&path)?;
                st.files.insert(path, content.into());
            }
        }
        Ok(me)
    }

    /// Add an (empty) directory and its parents.
    pub fn create_dir(&self, path: &WorkspacePath) -> FilesResult<()> {
        let mut st = self.lock();
        if st.files.contains_key(path) {
            return Err(FilesError::AlreadyExists(path.display().to_owned()));
        }
        st.ensure_parents(path)?;
        if !path.is_root() {
            st.dirs.insert(path.clone());
        }
        st.generation += 1;
        Ok(())
    }

    /// A number that every change (a write, deletion, rename or new directory) increases:
    /// whoever keeps a copy can tell, by comparing two readings, whether anything changed in
    /// between — even a change whose touched paths were already taken.
    pub fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// The files written, deleted or moved (both ends) since the last call, and forget them: what
    /// a snapshot must write back. A path may be listed although its content ended up as before.
    pub fn take_touched(&self) -> BTreeSet<WorkspacePath> {
        std::mem::take(&mut self.lock().touched)
    }

    /// A file's content, if it is a file.
    pub fn get(&self, path: &WorkspacePath) -> Option<Vec<u8>> {
        self.lock().files.get(path).cloned()
    }

    /// Every file and its content, sorted by path.
    pub fn snapshot(&self) -> BTreeMap<String, Vec<u8>> {
        self.lock().files.iter().map(|(p, c)| (p.as_str().to_owned(), c.clone())).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemState> {
        // A panic while holding the lock cannot leave a half-applied change (every mutation is a
        // single map operation after its checks), so a poisoned lock is safe to reuse.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn read_sync(&self, path: &WorkspacePath) -> FilesResult<Vec<u8>> {
        let st = self.lock();
        if let Some(c) = st.files.get(path) {
            return Ok(c.clone());
        }
        if st.is_dir(path) {
            return Err(FilesError::IsADirectory(path.display().to_owned()));
        }
        Err(FilesError::NotFound(path.display().to_owned()))
    }

    fn write_sync(&self, path: &WorkspacePath, content: &[u8]) -> FilesResult<()> {
        let mut st = self.lock();
        if st.is_dir(path) {
            return Err(FilesError::IsADirectory(path.display().to_owned()));
        }
        st.ensure_parents(path)?;
        st.files.insert(path.clone(), content.to_vec());
        st.touched.insert(path.clone());
        st.generation += 1;
        Ok(())
    }

    fn list_sync(&self, path: &WorkspacePath) -> FilesResult<Vec<DirEntry>> {
        let st = self.lock();
        if st.files.contains_key(path) {
            return Err(FilesError::NotADirectory(path.display().to_owned()));
        }
        if !st.is_dir(path) {
            return Err(FilesError::NotFound(path.display().to_owned()));
        }
        let depth = path.depth();
        let child = |p: &WorkspacePath| p.depth() == depth + 1 && p.starts_with(path);
        let mut entries: Vec<DirEntry> = st
            .files
            .keys()
            .filter(|p| child(p))
            .map(|p| DirEntry { path: p.file_name().unwrap_or_default().to_owned(), kind: EntryKind::File })
            .chain(
                st.dirs
                    .iter()
                    .filter(|p| child(p))
                    .map(|p| DirEntry { path: p.file_name().unwrap_or_default().to_owned(), kind: EntryKind::Dir }),
            )
            .collect();
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(entries)
    }

    fn metadata_sync(&self, path: &WorkspacePath) -> FilesResult<Metadata> {
        let st = self.lock();
        if let Some(c) = st.files.get(path) {
            return Ok(Metadata { kind: EntryKind::File, size: c.len() as u64 });
        }
        if st.is_dir(path) {
            return Ok(Metadata { kind: EntryKind::Dir, size: 0 });
        }
        Err(FilesError::NotFound(path.display().to_owned()))
    }

    fn delete_sync(&self, path: &WorkspacePath) -> FilesResult<()> {
        let mut st = self.lock();
        if st.files.remove(path).is_some() {
            st.touched.insert(path.clone());
            st.generation += 1;
            return Ok(());
        }
        if st.is_dir(path) {
            return Err(FilesError::IsADirectory(path.display().to_owned()));
        }
        Err(FilesError::NotFound(path.display().to_owned()))
    }

    fn rename_sync(&self, from: &WorkspacePath, to: &WorkspacePath) -> FilesResult<()> {
        let mut st = self.lock();
        if from.is_root() || to.is_root() {
            return Err(FilesError::IsADirectory(".".into()));
        }
        let is_file = st.files.contains_key(from);
        if !is_file && !st.is_dir(from) {
            return Err(FilesError::NotFound(from.display().to_owned()));
        }
        if st.files.contains_key(to) || st.is_dir(to) {
            return Err(FilesError::AlreadyExists(to.display().to_owned()));
        }
        if to.starts_with(from) {
            return Err(FilesError::Io {
                path: to.display().to_owned(),
                message: "cannot move a directory into itself".into(),
            });
        }
        // Apply to a copy, then swap: the change is all-or-nothing.
        let mut next = st.clone();
        next.ensure_parents(to)?;
        let rebase = |p: &WorkspacePath| -> WorkspacePath {
            let rest = &p.as_str()[from.as_str().len()..];
            WorkspacePath::parse(&format!("{}{rest}", to.as_str())).unwrap_or_else(|_| p.clone())
        };
        let moved_files: Vec<WorkspacePath> = next.files.keys().filter(|p| p.starts_with(from)).cloned().collect();
        for p in moved_files {
            if let Some(c) = next.files.remove(&p) {
                let to = rebase(&p);
                next.touched.insert(to.clone());
                next.files.insert(to, c);
                next.touched.insert(p);
            }
        }
        let moved_dirs: Vec<WorkspacePath> = next.dirs.iter().filter(|p| p.starts_with(from)).cloned().collect();
        for p in moved_dirs {
            next.dirs.remove(&p);
            next.dirs.insert(rebase(&p));
        }
        next.generation += 1;
        *st = next;
        Ok(())
    }
}

impl ProjectFiles for InMemoryProjectFiles {
    fn read<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Vec<u8>>> {
        Box::pin(async move { self.read_sync(path) })
    }
    fn write<'a>(&'a self, path: &'a WorkspacePath, content: &'a [u8]) -> BoxFuture<'a, FilesResult<()>> {
        Box::pin(async move { self.write_sync(path, content) })
    }
    fn exists<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<bool>> {
        Box::pin(async move {
            let st = self.lock();
            Ok(st.files.contains_key(path) || st.is_dir(path))
        })
    }
    fn list_dir<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Vec<DirEntry>>> {
        Box::pin(async move { self.list_sync(path) })
    }
    fn metadata<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Metadata>> {
        Box::pin(async move { self.metadata_sync(path) })
    }
    fn delete<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<()>> {
        Box::pin(async move { self.delete_sync(path) })
    }
    fn rename<'a>(&'a self, from: &'a WorkspacePath, to: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<()>> {
        Box::pin(async move { self.rename_sync(from, to) })
    }
    fn grep<'a>(&'a self, query: &'a GrepQuery) -> BoxFuture<'a, FilesResult<Vec<GrepFileMatch>>> {
        Box::pin(async move {
            let st = self.lock();
            let files: Vec<(&WorkspacePath, &[u8])> = st.files.iter().map(|(p, c)| (p, c.as_slice())).collect();
            // A directory that exists but holds no files is a valid, empty search root.
            for root in &query.paths {
                if st.is_dir(root) && !st.files.keys().any(|p| p.starts_with(root)) {
                    return Ok(Vec::new());
                }
            }
            grep(query, files)
        })
    }
    fn display_root(&self) -> String {
        self.name.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_executor::block_on;
    use regex::Regex;

    fn p(s: &str) -> WorkspacePath {
        WorkspacePath::parse(s).unwrap()
    }

    #[test]
    fn memory_backend_semantics() {
        let fs = InMemoryProjectFiles::with_files([("src/main.rs", "fn main() {}"), ("README.md", "# hi")]).unwrap();
        block_on(async {
            assert_eq!(fs.read(&p("src/main.rs")).await.unwrap(), b"fn main() {}");
            assert!(matches!(fs.read(&p("src")).await, Err(FilesError::IsADirectory(_))));
            fs.write(&p("a/b/c.txt"), b"x").await.unwrap();
            assert!(matches!(fs.write(&p("a/b/c.txt/d"), b"x").await, Err(FilesError::NotADirectory(_))));
            let names: Vec<String> =
                fs.list_dir(&WorkspacePath::root()).await.unwrap().into_iter().map(|e| e.path).collect();
            assert_eq!(names, ["README.md", "a", "src"]);
            fs.rename(&p("a"), &p("z/a")).await.unwrap();
            assert_eq!(fs.read(&p("z/a/b/c.txt")).await.unwrap(), b"x");
            assert!(!fs.exists(&p("a")).await.unwrap());
            assert!(matches!(fs.rename(&p("README.md"), &p("src/main.rs")).await, Err(FilesError::AlreadyExists(_))));
            assert!(matches!(fs.rename(&p("z"), &p("z/inner")).await, Err(FilesError::Io { .. })));
            fs.delete(&p("README.md")).await.unwrap();
            assert!(matches!(fs.delete(&p("README.md")).await, Err(FilesError::NotFound(_))));
            assert!(matches!(fs.delete(&p("src")).await, Err(FilesError::IsADirectory(_))));
        });
    }

    #[test]
    fn generation_counts_every_change_and_nothing_else() {
        block_on(async {
            let fs = InMemoryProjectFiles::with_files([("a/b.txt", "x")]).unwrap();
            let mut seen = fs.generation();
            let mut changed = |fs: &InMemoryProjectFiles| {
                let now = fs.generation();
                let moved = now > seen;
                seen = now;
                moved
            };
            // Reads, listings, failures and taking the touched paths change nothing.
            fs.read(&p("a/b.txt")).await.unwrap();
            fs.list_dir(&p("a")).await.unwrap();
            fs.metadata(&p("a")).await.unwrap();
            let query = GrepQuery {
                regex: Regex::new("x").unwrap(),
                paths: Vec::new(),
                extensions: Vec::new(),
                context: 0,
                filter: None,
                max_bytes: 1 << 20,
            };
            fs.grep(&query).await.unwrap();
            assert!(fs.delete(&p("nope")).await.is_err());
            assert!(fs.write(&p("a"), b"dir").await.is_err());
            assert!(fs.rename(&p("nope"), &p("z")).await.is_err());
            assert!(fs.create_dir(&p("a/b.txt")).is_err());
            fs.take_touched();
            assert!(!changed(&fs));
            // Every kind of change does, directories included (they are not "touched" paths).
            fs.write(&p("c.txt"), b"y").await.unwrap();
            assert!(changed(&fs));
            fs.create_dir(&p("empty")).unwrap();
            assert!(changed(&fs));
            fs.rename(&p("empty"), &p("moved")).await.unwrap();
            assert!(changed(&fs));
            fs.delete(&p("c.txt")).await.unwrap();
            assert!(changed(&fs));
        });
    }
}
