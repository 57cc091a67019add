//! Where a [`JpHost`](crate::JpHost) keeps its project: IndexedDB (the page), memory, or a
//! [`ProjectStorage`] given by JS (edge functions: a Durable Object, Deno KV, a directory).
//!
//! Calls run on a [`Snapshot`]: the project copied into memory, served to the tool, and what
//! changed written back all together ([`Store::commit`]) — in ONE IndexedDB transaction, or ONE
//! `batch` of the JS storage, which must apply it atomically. A failed call commits nothing.

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

#[wasm_bindgen(typescript_custom_section)]
const PROJECT_STORAGE: &str = r#"
/** A project's files kept by the embedder: keys are workspace paths (`src/main.rs`), values a
 * file's bytes or the string "dir". `batch` must apply all its operations or none. */
export interface ProjectStorage {
  get(path: string): Promise<Uint8Array | "dir" | undefined>;
  put(path: string, value: Uint8Array | "dir"): Promise<void>;
  delete(path: string): Promise<void>;
  /** Every entry: [path, value] pairs. */
  list(): Promise<Iterable<[string, Uint8Array | "dir"]>>;
  /** Apply these writes (`value` set) and deletions (`value` null) atomically. */
  batch(ops: { path: string; value: Uint8Array | null }[]): Promise<void>;
}"#;

#[wasm_bindgen]
extern "C" {
    /// The embedder's storage for one project (see the TypeScript `ProjectStorage`).
    #[wasm_bindgen(typescript_type = "ProjectStorage")]
    pub type ProjectStorage;

    #[wasm_bindgen(method, catch)]
    async fn list(this: &ProjectStorage) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(method, catch)]
    async fn batch(this: &ProjectStorage, ops: Array) -> Result<JsValue, JsValue>;
}

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
    Js(Arc<ProjectStorage>),
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
                let listed = s.list().await.map_err(|e| js_err("list the project", &e))?;
                let iter = js_sys::try_iter(&listed)
                    .map_err(|e| js_err("list the project", &e))?
                    .ok_or_else(|| err("the project storage's list() did not return an iterable of [path, value]"))?;
                let (mut files, mut dirs) = (BTreeMap::new(), Vec::new());
                for entry in iter {
                    let entry = Array::from(&entry.map_err(|e| js_err("list the project", &e))?);
                    let (key, value) = (entry.get(0), entry.get(1));
                    let path = key.as_string().ok_or_else(|| err("a project storage key is not a string"))?;
                    WorkspacePath::parse(&path).map_err(|e| err(format!("stored path '{path}': {e}")))?;
                    if let Some(bytes) = value.dyn_ref::<Uint8Array>() {
                        files.insert(path, bytes.to_vec());
                    } else if value.as_string().as_deref() == Some(DIR) {
                        dirs.push(path);
                    } else {
                        return Err(err(format!("stored value of '{path}' is neither bytes nor \"dir\"")));
                    }
                }
                Ok((files, dirs))
            }
        }
    }

    /// Copy the project into memory.
    pub async fn snapshot(&self) -> Result<Snapshot, JsError> {
        let (files, dirs) = self.contents().await?;
        let existed = files.keys().cloned().collect();
        let copy = Arc::new(InMemoryProjectFiles::with_files(files).map_err(err)?);
        for d in &dirs {
            copy.create_dir(&WorkspacePath::parse(d).map_err(err)?).map_err(err)?;
        }
        Ok(Snapshot { files: copy, existed })
    }

    /// Write what changed in `snapshot` since its last changes were taken back, all together;
    /// returns the changed paths.
    pub async fn commit(&self, snapshot: &Snapshot) -> Result<Vec<String>, JsError> {
        self.commit_changes(snapshot.take_changes()).await
    }

    /// Write `changes` back, all together; returns their paths.
    pub async fn commit_changes(&self, changes: Changes) -> Result<Vec<String>, JsError> {
        if !changes.is_empty() {
            self.apply(&changes).await?;
        }
        Ok(changes.into_iter().map(|(p, _)| p.as_str().to_owned()).collect())
    }

    /// Apply changes (`None` deletes) all together.
    pub async fn apply(&self, changes: &[(WorkspacePath, Option<Vec<u8>>)]) -> Result<(), JsError> {
        match self {
            Store::IndexedDb(d) => d.write_all(changes).await.map_err(err),
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
            Store::Js(s) => {
                let ops: Array = changes
                    .iter()
                    .map(|(path, content)| {
                        let op = js_sys::Object::new();
                        let _ = js_sys::Reflect::set(&op, &"path".into(), &JsValue::from_str(path.as_str()));
                        let value = content.as_ref().map_or(JsValue::NULL, |b| Uint8Array::from(b.as_slice()).into());
                        let _ = js_sys::Reflect::set(&op, &"value".into(), &value);
                        JsValue::from(op)
                    })
                    .collect();
                s.batch(ops).await.map_err(|e| js_err("store the changes", &e))?;
                Ok(())
            }
        }
    }
}
