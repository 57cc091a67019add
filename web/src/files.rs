//! [`IndexedDbProjectFiles`]: the project's files in an IndexedDB database (RFD D09 in the
//! browser).
//!
//! One object store, `files`, keyed by the normalised workspace path (`src/main.rs`; the root is
//! implicit). A file's value is a `Uint8Array` of its bytes; a directory's value is the string
//! `"dir"`. Every operation is one transaction: a write creates the file's missing parents in
//! the same transaction, and a rename moves a whole subtree in one — so a crash or a closed tab
//! leaves the old state or the new one, never a mix. Read-only operations use read-only
//! transactions. Semantics and error messages match `InMemoryProjectFiles` exactly (the
//! conformance vectors hold both to them).

use std::collections::BTreeMap;

use idb::{
    Database, DatabaseEvent, Factory, KeyRange, ObjectStore, ObjectStoreParams, Query, Transaction, TransactionMode,
};
use jp_core::BoxFuture;
use jp_core::files::{FilesError, FilesResult, GrepQuery, Metadata, ProjectFiles, grep};
use jp_core::policy::WorkspacePath;
use jp_core::protocol::{DirEntry, EntryKind, GrepFileMatch};
use js_sys::Uint8Array;
use wasm_bindgen::{JsCast, JsValue};

const STORE: &str = "files";
const DIR: &str = "dir";

enum Record {
    File(Vec<u8>),
    Dir,
}

/// Project files in IndexedDB; persistent across reloads of the page.
pub struct IndexedDbProjectFiles {
    db: Database,
    name: String,
}

impl std::fmt::Debug for IndexedDbProjectFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexedDbProjectFiles").field("name", &self.name).finish_non_exhaustive()
    }
}

fn storage(path: &str, e: impl std::fmt::Display) -> FilesError {
    FilesError::Io { path: if path.is_empty() { ".".into() } else { path.to_owned() }, message: e.to_string() }
}

fn key(path: &WorkspacePath) -> JsValue {
    JsValue::from_str(path.as_str())
}

/// The keys strictly below `path` (`a/` ≤ key < `a0`, since `0` follows `/`); everything for the
/// root.
fn below(path: &WorkspacePath) -> FilesResult<Option<Query>> {
    if path.is_root() {
        return Ok(None);
    }
    let lower = JsValue::from_str(&format!("{}/", path.as_str()));
    let upper = JsValue::from_str(&format!("{}0", path.as_str()));
    let range = KeyRange::bound(&lower, &upper, Some(false), Some(true)).map_err(|e| storage(path.as_str(), e))?;
    Ok(Some(Query::KeyRange(range)))
}

fn decode(value: JsValue) -> Record {
    match value.dyn_into::<Uint8Array>() {
        Ok(bytes) => Record::File(bytes.to_vec()),
        Err(_) => Record::Dir,
    }
}

async fn get(store: &ObjectStore, path: &WorkspacePath) -> FilesResult<Option<Record>> {
    if path.is_root() {
        return Ok(Some(Record::Dir));
    }
    let value =
        store.get(key(path)).map_err(|e| storage(path.as_str(), e))?.await.map_err(|e| storage(path.as_str(), e))?;
    Ok(value.map(decode))
}

async fn put(store: &ObjectStore, path: &WorkspacePath, record: &Record) -> FilesResult<()> {
    let value = match record {
        Record::File(bytes) => Uint8Array::from(bytes.as_slice()).into(),
        Record::Dir => JsValue::from_str(DIR),
    };
    store
        .put(&value, Some(&key(path)))
        .map_err(|e| storage(path.as_str(), e))?
        .await
        .map_err(|e| storage(path.as_str(), e))?;
    Ok(())
}

async fn remove(store: &ObjectStore, path: &WorkspacePath) -> FilesResult<()> {
    store.delete(key(path)).map_err(|e| storage(path.as_str(), e))?.await.map_err(|e| storage(path.as_str(), e))
}

/// Every record strictly below `path`, as (path, record), in key order.
async fn subtree(store: &ObjectStore, path: &WorkspacePath) -> FilesResult<Vec<(WorkspacePath, Record)>> {
    let err = |e: idb::Error| storage(path.as_str(), e);
    let keys = store.get_all_keys(below(path)?, None).map_err(err)?.await.map_err(err)?;
    let values = store.get_all(below(path)?, None).map_err(err)?.await.map_err(err)?;
    let mut out = Vec::with_capacity(keys.len());
    for (k, v) in keys.into_iter().zip(values) {
        let text = k.as_string().unwrap_or_default();
        let p = WorkspacePath::parse(&text).map_err(|e| storage(&text, e))?;
        out.push((p, decode(v)));
    }
    Ok(out)
}

/// The missing ancestors of `path`, nearest first; a file among them is an error (as
/// `InMemoryProjectFiles` says it).
async fn missing_parents(store: &ObjectStore, path: &WorkspacePath) -> FilesResult<Vec<WorkspacePath>> {
    let mut missing = Vec::new();
    let mut cur = path.parent();
    while let Some(p) = cur {
        if p.is_root() {
            break;
        }
        match get(store, &p).await? {
            Some(Record::File(_)) => return Err(FilesError::NotADirectory(p.display().to_owned())),
            Some(Record::Dir) => {}
            None => missing.push(p.clone()),
        }
        cur = p.parent();
    }
    Ok(missing)
}

async fn create_parents(store: &ObjectStore, path: &WorkspacePath) -> FilesResult<()> {
    for p in missing_parents(store, path).await? {
        put(store, &p, &Record::Dir).await?;
    }
    Ok(())
}

impl IndexedDbProjectFiles {
    /// Open (or create) the database `name`.
    pub async fn open(name: &str) -> FilesResult<Self> {
        let factory = Factory::new().map_err(|e| storage(".", format!("IndexedDB is not available here: {e}")))?;
        let mut request = factory.open(name, Some(1)).map_err(|e| storage(".", e))?;
        request.on_upgrade_needed(|event| {
            if let Ok(db) = event.database()
                && !db.store_names().iter().any(|s| s == STORE)
            {
                let _ = db.create_object_store(STORE, ObjectStoreParams::new());
            }
        });
        let db =
            request.await.map_err(|e| storage(".", format!("cannot open the IndexedDB database '{name}': {e}")))?;
        Ok(Self { db, name: name.to_owned() })
    }

    /// Delete the database `name` (closing this connection first if it is that database).
    pub async fn delete_database(name: &str) -> FilesResult<()> {
        let factory = Factory::new().map_err(|e| storage(".", e))?;
        factory.delete(name).map_err(|e| storage(".", e))?.await.map_err(|e| storage(".", e))
    }

    /// Close the connection.
    pub fn close(&self) {
        self.db.close();
    }

    /// The database name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn begin(&self, mode: TransactionMode) -> FilesResult<(Transaction, ObjectStore)> {
        let tx = self.db.transaction(&[STORE], mode).map_err(|e| storage(".", e))?;
        let store = tx.object_store(STORE).map_err(|e| storage(".", e))?;
        Ok((tx, store))
    }

    /// Run `body` in one transaction: committed (and awaited) when it succeeds, aborted when it
    /// fails — a failing operation changes nothing.
    async fn atomically<T>(
        &self,
        mode: TransactionMode,
        body: impl AsyncFnOnce(&ObjectStore) -> FilesResult<T>,
    ) -> FilesResult<T> {
        let (tx, store) = self.begin(mode)?;
        match body(&store).await {
            Ok(v) => {
                let done = tx.commit().map_err(|e| storage(".", e))?.await.map_err(|e| storage(".", e))?;
                if done.is_committed() {
                    Ok(v)
                } else {
                    Err(storage(".", "the IndexedDB transaction was aborted; nothing was changed"))
                }
            }
            Err(e) => {
                if let Ok(tx) = tx.abort() {
                    let _ = tx.await;
                }
                Err(e)
            }
        }
    }

    /// Write several files in one transaction (all or none) — how a component call's changes
    /// are written back.
    pub async fn write_all(&self, changes: &[(WorkspacePath, Option<Vec<u8>>)]) -> FilesResult<()> {
        self.atomically(TransactionMode::ReadWrite, async |store| {
            for (path, content) in changes {
                match content {
                    Some(bytes) => {
                        if matches!(get(store, path).await?, Some(Record::Dir)) {
                            return Err(FilesError::IsADirectory(path.display().to_owned()));
                        }
                        create_parents(store, path).await?;
                        put(store, path, &Record::File(bytes.clone())).await?;
                    }
                    None => remove(store, path).await?,
                }
            }
            Ok(())
        })
        .await
    }

    /// Every file and its content (for the page's file tree).
    pub async fn all_files(&self) -> FilesResult<BTreeMap<String, Vec<u8>>> {
        Ok(self.contents().await?.0)
    }

    /// Every file and its content, and every directory, read in one transaction (a consistent
    /// snapshot).
    pub async fn contents(&self) -> FilesResult<(BTreeMap<String, Vec<u8>>, Vec<String>)> {
        self.atomically(TransactionMode::ReadOnly, async |store| {
            let mut files = BTreeMap::new();
            let mut dirs = Vec::new();
            for (p, r) in subtree(store, &WorkspacePath::root()).await? {
                match r {
                    Record::File(bytes) => {
                        files.insert(p.as_str().to_owned(), bytes);
                    }
                    Record::Dir => dirs.push(p.as_str().to_owned()),
                }
            }
            Ok((files, dirs))
        })
        .await
    }
}

impl ProjectFiles for IndexedDbProjectFiles {
    fn read<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Vec<u8>>> {
        Box::pin(self.atomically(TransactionMode::ReadOnly, async |store| match get(store, path).await? {
            Some(Record::File(bytes)) => Ok(bytes),
            Some(Record::Dir) => Err(FilesError::IsADirectory(path.display().to_owned())),
            None => Err(FilesError::NotFound(path.display().to_owned())),
        }))
    }

    fn write<'a>(&'a self, path: &'a WorkspacePath, content: &'a [u8]) -> BoxFuture<'a, FilesResult<()>> {
        Box::pin(self.atomically(TransactionMode::ReadWrite, async |store| {
            if matches!(get(store, path).await?, Some(Record::Dir)) {
                return Err(FilesError::IsADirectory(path.display().to_owned()));
            }
            create_parents(store, path).await?;
            put(store, path, &Record::File(content.to_vec())).await
        }))
    }

    fn exists<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<bool>> {
        Box::pin(self.atomically(TransactionMode::ReadOnly, async |store| Ok(get(store, path).await?.is_some())))
    }

    fn list_dir<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Vec<DirEntry>>> {
        Box::pin(self.atomically(TransactionMode::ReadOnly, async |store| {
            match get(store, path).await? {
                Some(Record::File(_)) => return Err(FilesError::NotADirectory(path.display().to_owned())),
                None => return Err(FilesError::NotFound(path.display().to_owned())),
                Some(Record::Dir) => {}
            }
            let depth = path.depth();
            let mut entries: Vec<DirEntry> = subtree(store, path)
                .await?
                .into_iter()
                .filter(|(p, _)| p.depth() == depth + 1)
                .map(|(p, r)| DirEntry {
                    path: p.file_name().unwrap_or_default().to_owned(),
                    kind: match r {
                        Record::File(_) => EntryKind::File,
                        Record::Dir => EntryKind::Dir,
                    },
                })
                .collect();
            entries.sort_by(|a, b| a.path.cmp(&b.path));
            Ok(entries)
        }))
    }

    fn metadata<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<Metadata>> {
        Box::pin(self.atomically(TransactionMode::ReadOnly, async |store| match get(store, path).await? {
            Some(Record::File(bytes)) => Ok(Metadata { kind: EntryKind::File, size: bytes.len() as u64 }),
            Some(Record::Dir) => Ok(Metadata { kind: EntryKind::Dir, size: 0 }),
            None => Err(FilesError::NotFound(path.display().to_owned())),
        }))
    }

    fn delete<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<()>> {
        Box::pin(self.atomically(TransactionMode::ReadWrite, async |store| match get(store, path).await? {
            Some(Record::File(_)) => remove(store, path).await,
            Some(Record::Dir) => Err(FilesError::IsADirectory(path.display().to_owned())),
            None => Err(FilesError::NotFound(path.display().to_owned())),
        }))
    }

    fn rename<'a>(&'a self, from: &'a WorkspacePath, to: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<()>> {
        Box::pin(self.atomically(TransactionMode::ReadWrite, async |store| {
            if from.is_root() || to.is_root() {
                return Err(FilesError::IsADirectory(".".into()));
            }
            let Some(source) = get(store, from).await? else {
                return Err(FilesError::NotFound(from.display().to_owned()));
            };
            if get(store, to).await?.is_some() {
                return Err(FilesError::AlreadyExists(to.display().to_owned()));
            }
            if to.starts_with(from) {
                return Err(FilesError::Io {
                    path: to.display().to_owned(),
                    message: "cannot move a directory into itself".into(),
                });
            }
            let parents = missing_parents(store, to).await?;
            let mut moved = vec![(from.clone(), source)];
            moved.extend(subtree(store, from).await?);
            for p in parents {
                put(store, &p, &Record::Dir).await?;
            }
            for (old, record) in moved {
                let rest = &old.as_str()[from.as_str().len()..];
                let new =
                    WorkspacePath::parse(&format!("{}{rest}", to.as_str())).map_err(|e| storage(to.as_str(), e))?;
                remove(store, &old).await?;
                put(store, &new, &record).await?;
            }
            Ok(())
        }))
    }

    fn grep<'a>(&'a self, query: &'a GrepQuery) -> BoxFuture<'a, FilesResult<Vec<GrepFileMatch>>> {
        Box::pin(async move {
            let records = self
                .atomically(TransactionMode::ReadOnly, async |store| subtree(store, &WorkspacePath::root()).await)
                .await?;
            let is_dir = |root: &WorkspacePath| {
                root.is_root() || records.iter().any(|(p, r)| p == root && matches!(r, Record::Dir))
            };
            let files: Vec<(&WorkspacePath, &[u8])> = records
                .iter()
                .filter_map(|(p, r)| match r {
                    Record::File(bytes) => Some((p, bytes.as_slice())),
                    Record::Dir => None,
                })
                .collect();
            // A directory that exists but holds no files is a valid, empty search root.
            for root in &query.paths {
                if is_dir(root) && !files.iter().any(|(p, _)| p.starts_with(root)) {
                    return Ok(Vec::new());
                }
            }
            grep(query, files)
        })
    }

    fn create_dir<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, FilesResult<()>> {
        Box::pin(self.atomically(TransactionMode::ReadWrite, async |store| {
            if matches!(get(store, path).await?, Some(Record::File(_))) {
                return Err(FilesError::AlreadyExists(path.display().to_owned()));
            }
            create_parents(store, path).await?;
            if !path.is_root() {
                put(store, path, &Record::Dir).await?;
            }
            Ok(())
        }))
    }

    fn display_root(&self) -> String {
        format!("indexeddb:{}", self.name)
    }
}
