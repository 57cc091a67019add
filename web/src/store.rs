//! Where a [`JpHost`](crate::JpHost) keeps its project: IndexedDB (the page), memory, or a
//! [`ProjectStorage`] given by JS (edge functions: a Durable Object, Deno KV, a directory).
//!
//! Calls run on a [`Snapshot`]: the project copied into memory, served to the tool, and what
//! changed written back all together ([`Store::settle`]) — in ONE IndexedDB transaction, or ONE
//! `batch` of the JS storage, which must apply it atomically. A failed call commits nothing.
//!
//! A JS storage with a `version()` is read once and then kept: the snapshot of a call that
//! changed nothing serves the next call as long as the storage's version has not moved (another
//! writer, another isolate) — copying a project out of storage is most of a small call's cost
//! at the edge. Its commits name the version they were made on, and the storage refuses a stale
//! one (`ProjectChanged`), so a writer in between is never silently overwritten.
//!
//! Beside the files a JS storage keeps the host's own records under keys starting with
//! [`RECORDS`] (absolute, so never a workspace path, never listed as a file, out of every
//! tool's reach): the saved sessions of stateful tools (`handles`), committed in the same
//! `batch` as the files of the command that produced them.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use jp_core::files::{InMemoryProjectFiles, ProjectFiles};
use jp_core::policy::WorkspacePath;
use jp_core::protocol::EntryKind;
use js_sys::{Array, Uint8Array};
use wasm_bindgen::prelude::*;

use crate::files::IndexedDbProjectFiles;

/// A directory's value in a [`ProjectStorage`] (a file's is its bytes).
pub const DIR: &str = "dir";

/// The start of the keys of the host's own records in a [`ProjectStorage`].
pub const RECORDS: &str = "/jp/";

/// The host's records to write (`Some`) or delete (`None`), keys starting with [`RECORDS`].
pub type Records = Vec<(String, Option<Vec<u8>>)>;

#[wasm_bindgen(typescript_custom_section)]
const PROJECT_STORAGE: &str = r#"
/** A project's files kept by the embedder: keys are workspace paths (`src/main.rs`), values a
 * file's bytes or the string "dir". `batch` must apply all its operations or none. Keys that
 * start with "/jp/" are the host's own records (saved sessions of stateful tools): keep them as
 * any key; they are not files. */
export interface ProjectStorage {
  get(path: string): Promise<Uint8Array | "dir" | undefined>;
  put(path: string, value: Uint8Array | "dir"): Promise<void>;
  delete(path: string): Promise<void>;
  /** Every entry: [path, value] pairs. */
  list(): Promise<Iterable<[string, Uint8Array | "dir"]>>;
  /** Apply these writes (`value` set) and deletions (`value` null) atomically. With `expected`
   * (a `version()` reading), apply them only if the version is still that, else apply nothing
   * and throw an error whose `name` is "ProjectChanged". */
  batch(ops: { path: string; value: Uint8Array | null }[], expected?: string | number): Promise<void>;
  /** Optional: a value that every change to the project (by anyone) moves. With it, a host
   * keeps its copy of the project between calls while the version holds, and its commits are
   * refused when somebody else wrote in between. */
  version?(): Promise<string | number>;
}"#;

#[wasm_bindgen]
extern "C" {
    /// The embedder's storage for one project (see the TypeScript `ProjectStorage`).
    #[wasm_bindgen(typescript_type = "ProjectStorage")]
    pub type ProjectStorage;

    #[wasm_bindgen(method, catch)]
    async fn list(this: &ProjectStorage) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(method, catch)]
    async fn get(this: &ProjectStorage, path: &str) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(method, catch)]
    async fn batch(this: &ProjectStorage, ops: Array, expected: &JsValue) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(method, catch)]
    async fn version(this: &ProjectStorage) -> Result<JsValue, JsValue>;
}

/// The `name` of the error a storage throws when a commit's expected version is stale.
pub const PROJECT_CHANGED: &str = "ProjectChanged";

fn err(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

fn js_err(what: &str, e: &JsValue) -> JsError {
    let message = js_sys::Reflect::get(e, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"));
    err(format!("the project storage failed to {what}: {message}"))
}

/// Changes to a project: paths with their new bytes, or `None` for a deletion.
pub type Changes = Vec<(WorkspacePath, Option<Vec<u8>>)>;

/// A copy of the project in memory, which knows what was written to it.
pub struct Snapshot {
    /// The copy a tool works on.
    pub files: Arc<InMemoryProjectFiles>,
    /// The files that existed when it was taken (a deletion of anything else is no change).
    existed: BTreeSet<String>,
    /// The storage's version it was read at (a versioned JS storage only).
    version: Option<JsValue>,
    /// `files.generation()` when it was read: while that holds, the copy equals the storage
    /// as of `version`.
    generation: u64,
}

impl Snapshot {
    /// What was written, deleted or moved since the last call (the first: since the copy was
    /// taken): paths with their bytes now, or `None` when deleted. Only the touched files are
    /// looked at, so this costs nothing for the files a tool left alone.
    pub fn take_changes(&self) -> Changes {
        self.files
            .take_touched()
            .into_iter()
            .filter_map(|p| match self.files.get(&p) {
                Some(bytes) => Some((p, Some(bytes))),
                None => self.existed.contains(p.as_str()).then_some((p, None)),
            })
            .collect()
    }
}

/// Where a host keeps its files.
#[derive(Clone)]
pub enum Store {
    /// The page's IndexedDB database.
    IndexedDb(Arc<IndexedDbProjectFiles>),
    /// Memory, for the life of the host.
    Memory(Arc<InMemoryProjectFiles>),
    /// The embedder's storage.
    Js(Arc<JsStore>),
}

/// The embedder's storage and, when it is versioned, the copy kept from the last call.
pub struct JsStore {
    storage: ProjectStorage,
    versioned: bool,
    kept: RefCell<Option<Snapshot>>,
    /// Records found stale when the project was last listed (see [`Store::contents`]), deleted
    /// with the next commit.
    stale: RefCell<Vec<String>>,
}

impl JsStore {
    /// Wrap `storage`; it is versioned when it has a `version` method.
    pub fn new(storage: ProjectStorage) -> Self {
        let versioned = js_sys::Reflect::get(&storage, &JsValue::from_str("version")).is_ok_and(|v| v.is_function());
        Self { storage, versioned, kept: RefCell::new(None), stale: RefCell::default() }
    }

    async fn version(&self) -> Result<Option<JsValue>, JsError> {
        if !self.versioned {
            return Ok(None);
        }
        self.storage.version().await.map(Some).map_err(|e| js_err("read the project's version", &e))
    }

    /// The kept copy, when the storage has not moved since it was read.
    async fn take_kept(&self) -> Result<Option<Snapshot>, JsError> {
        let Some(kept) = self.kept.borrow_mut().take() else { return Ok(None) };
        let now = self.version().await?;
        let same = matches!((&kept.version, &now), (Some(a), Some(b)) if js_sys::Object::is(a, b));
        Ok((same && kept.files.generation() == kept.generation).then_some(kept))
    }

    /// Keep `snapshot` for the next call if it still equals the storage as read.
    fn keep(&self, snapshot: Snapshot) {
        if self.versioned && snapshot.files.generation() == snapshot.generation {
            *self.kept.borrow_mut() = Some(snapshot);
        }
    }
}

impl Store {
    /// The files to serve a host operation from directly; `None` for JS storage, which is only
    /// reached through snapshots.
    pub fn direct(&self) -> Option<Arc<dyn ProjectFiles>> {
        match self {
            Store::IndexedDb(d) => Some(d.clone()),
            Store::Memory(m) => Some(m.clone()),
            Store::Js(_) => None,
        }
    }

    /// Every file (path → bytes) and every directory.
    pub async fn contents(&self) -> Result<(BTreeMap<String, Vec<u8>>, Vec<String>), JsError> {
        match self {
            Store::IndexedDb(d) => d.contents().await.map_err(err),
            Store::Memory(m) => {
                let mut dirs = Vec::new();
                let mut todo = vec![WorkspacePath::root()];
                while let Some(dir) = todo.pop() {
                    for entry in m.list_dir(&dir).await.map_err(err)? {
                        if entry.kind == EntryKind::Dir {
                            let p = dir.join(&entry.path).map_err(err)?;
                            dirs.push(p.as_str().to_owned());
                            todo.push(p);
                        }
                    }
                }
                Ok((m.snapshot(), dirs))
            }
            Store::Js(s) => {
                let listed = s.storage.list().await.map_err(|e| js_err("list the project", &e))?;
                let iter = js_sys::try_iter(&listed)
                    .map_err(|e| js_err("list the project", &e))?
                    .ok_or_else(|| err("the project storage's list() did not return an iterable of [path, value]"))?;
                let (mut files, mut dirs) = (BTreeMap::new(), Vec::new());
                let mut stale = Vec::new();
                for entry in iter {
                    let entry = Array::from(&entry.map_err(|e| js_err("list the project", &e))?);
                    let (key, value) = (entry.get(0), entry.get(1));
                    let path = key.as_string().ok_or_else(|| err("a project storage key is not a string"))?;
                    if path.starts_with(RECORDS) {
                        let bytes = value.dyn_ref::<Uint8Array>().map(Uint8Array::to_vec).unwrap_or_default();
                        if crate::saved::is_stale(&path, &bytes) {
                            stale.push(path);
                        }
                        continue;
                    }
                    WorkspacePath::parse(&path).map_err(|e| err(format!("stored path '{path}': {e}")))?;
                    if let Some(bytes) = value.dyn_ref::<Uint8Array>() {
                        files.insert(path, bytes.to_vec());
                    } else if value.as_string().as_deref() == Some(DIR) {
                        dirs.push(path);
                    } else {
                        return Err(err(format!("stored value of '{path}' is neither bytes nor \"dir\"")));
                    }
                }
                *s.stale.borrow_mut() = stale;
                Ok((files, dirs))
            }
        }
    }

    /// The project in memory: the copy kept from the last call while the storage has not moved,
    /// else a fresh one.
    pub async fn snapshot(&self) -> Result<Snapshot, JsError> {
        let version = match self {
            Store::Js(s) => {
                if let Some(kept) = s.take_kept().await? {
                    return Ok(kept);
                }
                s.version().await?
            }
            _ => None,
        };
        let (files, dirs) = self.contents().await?;
        let existed = files.keys().cloned().collect();
        let copy = Arc::new(InMemoryProjectFiles::with_files(files).map_err(err)?);
        for d in &dirs {
            copy.create_dir(&WorkspacePath::parse(d).map_err(err)?).map_err(err)?;
        }
        // What was read is not a change to write back.
        copy.take_touched();
        let generation = copy.generation();
        Ok(Snapshot { files: copy, existed, version, generation })
    }

    /// End the work on `snapshot`. With `commit`, `extra` (changes made before the work, such
    /// as a call's seeded files) and what the work changed are written back all together, on
    /// the version the snapshot was read at; without, nothing is written. Returns the paths the
    /// work changed. A snapshot that is still what was read is kept for the next call.
    ///
    /// The error is the storage's own when it refused a stale commit (`name` "ProjectChanged"),
    /// so that callers can tell it apart.
    ///
    /// `records` (the host's own, see [`RECORDS`]) are written in the same batch when the work
    /// commits, and alone when it does not; a storage that is not JS keeps none.
    pub async fn settle(
        &self,
        snapshot: Snapshot,
        extra: Changes,
        records: Records,
        commit: bool,
    ) -> Result<Vec<String>, JsValue> {
        let records = match self {
            Store::Js(s) => {
                let mut all = records;
                if commit {
                    all.extend(s.stale.take().into_iter().map(|key| (key, None)));
                }
                all
            }
            _ => Vec::new(),
        };
        if !commit {
            self.keep(snapshot);
            if !records.is_empty() {
                self.write(&records, None).await?;
            }
            return Ok(Vec::new());
        }
        let work = snapshot.take_changes();
        let changed: Vec<String> = work.iter().map(|(p, _)| p.as_str().to_owned()).collect();
        let mut all: BTreeMap<WorkspacePath, Option<Vec<u8>>> = extra.into_iter().collect();
        all.extend(work);
        if all.is_empty() && records.is_empty() {
            self.keep(snapshot);
        } else {
            // Not kept: the storage keeps no empty directories, so after a write a fresh read
            // may differ from this copy.
            let mut ops: Records = all.into_iter().map(|(p, v)| (p.as_str().to_owned(), v)).collect();
            ops.extend(records);
            self.write(&ops, snapshot.version.as_ref()).await?;
        }
        Ok(changed)
    }

    /// One of the host's records (a key starting with [`RECORDS`]); none on a storage that is
    /// not JS.
    pub async fn record(&self, key: &str) -> Result<Option<Vec<u8>>, JsValue> {
        let Store::Js(s) = self else { return Ok(None) };
        let value = s.storage.get(key).await.map_err(|e| js_err("read a record", &e))?;
        Ok(value.dyn_ref::<Uint8Array>().map(Uint8Array::to_vec))
    }

    /// Write or delete some of the host's records at once, whatever the storage's version.
    pub async fn put_records(&self, records: &Records) -> Result<(), JsValue> {
        if matches!(self, Store::Js(_)) && !records.is_empty() { self.write(records, None).await } else { Ok(()) }
    }

    /// Whether this store keeps the host's records (a JS storage: the edge's).
    pub fn keeps_records(&self) -> bool {
        matches!(self, Store::Js(_))
    }

    fn keep(&self, snapshot: Snapshot) {
        if let Store::Js(s) = self {
            s.keep(snapshot);
        }
    }

    /// Apply changes (`None` deletes) all together, whatever the storage's version.
    pub async fn apply(&self, changes: &[(WorkspacePath, Option<Vec<u8>>)]) -> Result<(), JsValue> {
        match self {
            Store::Js(_) => {
                let ops: Records = changes.iter().map(|(p, v)| (p.as_str().to_owned(), v.clone())).collect();
                self.write(&ops, None).await
            }
            _ => self.write_files(changes).await,
        }
    }

    /// Apply changes (`None` deletes) all together; on a JS storage only if its version is
    /// still `expected` (when given).
    async fn write(&self, changes: &Records, expected: Option<&JsValue>) -> Result<(), JsValue> {
        match self {
            Store::Js(s) => {
                let ops: Array = changes
                    .iter()
                    .map(|(path, content)| {
                        let op = js_sys::Object::new();
                        let _ = js_sys::Reflect::set(&op, &"path".into(), &JsValue::from_str(path));
                        let value = content.as_ref().map_or(JsValue::NULL, |b| Uint8Array::from(b.as_slice()).into());
                        let _ = js_sys::Reflect::set(&op, &"value".into(), &value);
                        JsValue::from(op)
                    })
                    .collect();
                s.storage.batch(ops, expected.unwrap_or(&JsValue::UNDEFINED)).await.map_err(|e| {
                    let name = js_sys::Reflect::get(&e, &JsValue::from_str("name")).ok().and_then(|n| n.as_string());
                    if name.as_deref() == Some(PROJECT_CHANGED) { e } else { js_err("store the changes", &e).into() }
                })?;
                Ok(())
            }
            _ => {
                // Only a JS storage keeps records; the rest are workspace paths.
                let files: Changes =
                    changes.iter().filter_map(|(p, v)| WorkspacePath::parse(p).ok().map(|p| (p, v.clone()))).collect();
                self.write_files(&files).await
            }
        }
    }

    /// Apply file changes to IndexedDB or memory.
    async fn write_files(&self, changes: &[(WorkspacePath, Option<Vec<u8>>)]) -> Result<(), JsValue> {
        match self {
            Store::IndexedDb(d) => Ok(d.write_all(changes).await.map_err(err)?),
            Store::Memory(m) => {
                // Single-threaded and every operation completes at once: nothing interleaves.
                for (path, content) in changes {
                    match content {
                        Some(bytes) => m.write(path, bytes).await.map_err(err)?,
                        None => m.delete(path).await.map_err(err)?,
                    }
                }
                Ok(())
            }
            Store::Js(_) => Err(err("a JS storage is written with its records, through `write`").into()),
        }
    }
}
