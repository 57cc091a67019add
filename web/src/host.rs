//! [`JpHost`], the JS API: project files (IndexedDB in the page, memory at the edge), one
//! access policy, the secrets `${VAR}` headers may use, and call sessions that serve a
//! component's `jp:host` imports through the core dispatcher.
//!
//! A call runs on a snapshot: [`JpHost::begin_call`] copies the project into memory, the
//! component's requests are decided by the core `Dispatcher` and served from the copy, HTTP
//! through `fetch` and questions through the inquirer (the component is suspended while it waits,
//! through JSPI), and [`CallSession::finish`] writes what changed back in ONE IndexedDB
//! transaction — or nothing, when the call failed or was cancelled. A tool's files are therefore
//! as they were or fully written.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use jp_core::cancel::CancellationToken;
use jp_core::files::{InMemoryProjectFiles, ProjectFiles};
use jp_core::host::{Dispatcher, NoOneToAsk, Unavailable};
use jp_core::policy::{AccessPolicy, Capability, Decision, WorkspacePath};
use jp_core::protocol::{HostRequest, Id};
use js_sys::{Array, Object, Reflect, Uint8Array};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::call::{CallSession, JsEvents};
use crate::files::IndexedDbProjectFiles;
use crate::http::{FetchHttpClient, JsInquirer};
use crate::js::{err, obj};
use crate::policy::{bounded_policy, parse_policy};
use crate::store::{JsStore, ProjectStorage, Snapshot, Store};

fn content_bytes(value: &JsValue) -> Result<Vec<u8>, JsError> {
    if let Some(text) = value.as_string() {
        return Ok(text.into_bytes());
    }
    match value.dyn_ref::<Uint8Array>() {
        Some(bytes) => Ok(bytes.to_vec()),
        None => Err(err("file content must be a string or a Uint8Array")),
    }
}

/// A jp-host in a page or an edge function.
#[wasm_bindgen]
#[derive(Clone)]
pub struct JpHost {
    store: Store,
    policy: Rc<RefCell<Arc<AccessPolicy>>>,
    events: Rc<RefCell<Option<js_sys::Function>>>,
    inquirer: Rc<RefCell<Option<js_sys::Function>>>,
    secrets: Rc<RefCell<BTreeMap<String, String>>>,
    requests: Rc<RefCell<i64>>,
    pub(crate) tools: crate::run::Tools,
    /// The live handles of stateful tools, by owner (a page's turn, an edge caller's scope).
    pub(crate) owners: Rc<jp_core::handles::HandleOwners>,
    /// Paths the handle commands of this host changed, gathered for the reply of the call that
    /// ran them (see `handles`).
    pub(crate) handle_changes: Rc<RefCell<Vec<String>>>,
}

impl JpHost {
    /// Where this host keeps its project (and, for a JS storage, its records).
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }
}

const NO_PROCESSES: &str = "process.run is not available in the browser: there are no processes";

/// Why a question is denied where the host has no inquirer.
const NOBODY: &str = "no one can be asked here (this host has no inquirer: Host.setInquirer in a page; at the edge only /mcp on protocol 2026-07-28 asks, through input_required); allow it in the policy";

#[wasm_bindgen]
impl JpHost {
    /// A host whose files live in `storage` (the embedder's, e.g. a Durable Object at the
    /// edge), else in the IndexedDB database `db`, else in memory. `policy`: see `setPolicy`.
    pub async fn create(
        db: Option<String>,
        policy: String,
        storage: Option<ProjectStorage>,
    ) -> Result<JpHost, JsError> {
        let policy = parse_policy(&policy)?;
        // `Arc` because the core's traits take `Arc<dyn ProjectFiles>`; one thread here.
        #[allow(clippy::arc_with_non_send_sync)]
        let store = match (storage, db) {
            (Some(s), _) => Store::Js(Arc::new(JsStore::new(s))),
            (None, Some(name)) => Store::IndexedDb(Arc::new(IndexedDbProjectFiles::open(&name).await.map_err(err)?)),
            (None, None) => Store::Memory(Arc::new(InMemoryProjectFiles::new())),
        };
        Ok(JpHost {
            store,
            policy: Rc::new(RefCell::new(policy)),
            events: Rc::default(),
            inquirer: Rc::default(),
            secrets: Rc::default(),
            requests: Rc::default(),
            tools: Rc::default(),
            owners: Rc::new(jp_core::handles::HandleOwners::new(
                jp_core::handles::SessionLimits::default(),
                crate::handles::MAX_OWNERS,
            )),
            handle_changes: Rc::default(),
        })
    }

    /// Replace the policy: TOML or JSON with `access` and/or `sandbox` tables (the shapes of
    /// `.jp/config.toml`); empty text is the default (workspace read-write, nothing else).
    #[wasm_bindgen(js_name = setPolicy)]
    pub fn set_policy(&self, policy: &str) -> Result<(), JsError> {
        *self.policy.borrow_mut() = parse_policy(policy)?;
        Ok(())
    }

    /// Replace the policy with `policy` bounded by `ceiling` (the operator's policy at the
    /// edge): every decision is the stricter of the two; empty `policy` is the ceiling itself;
    /// a `policy` that grants more than `ceiling` is refused with every such right named (and
    /// the policy in force is left as it was).
    #[wasm_bindgen(js_name = setPolicyWithin)]
    pub fn set_policy_within(&self, policy: &str, ceiling: &str) -> Result<(), JsError> {
        *self.policy.borrow_mut() = bounded_policy(policy, ceiling)?;
        Ok(())
    }

    /// One line per kind: what the policy allows.
    #[wasm_bindgen(js_name = policySummary)]
    pub fn policy_summary(&self) -> String {
        self.policy.borrow().summary()
    }

    /// What the policy lets a tool do at most, as MCP tool hints want it:
    /// `{ writes, destructive, network, commands }`.
    #[wasm_bindgen(js_name = policyHints)]
    pub fn policy_hints(&self) -> JsValue {
        let h = self.policy.borrow().hints();
        obj(&[
            ("writes", JsValue::from_bool(h.writes)),
            ("destructive", JsValue::from_bool(h.destructive)),
            ("network", JsValue::from_bool(h.network)),
            // No process runs in a page or at the edge, whatever the policy would allow.
            ("commands", JsValue::FALSE),
        ])
    }

    /// Report every policy decision to `callback({tool, method, target, decision, reason, allowed})`.
    #[wasm_bindgen(js_name = onEvent)]
    pub fn on_event(&self, callback: Option<js_sys::Function>) {
        *self.events.borrow_mut() = callback;
    }

    /// Answer inquiries (a request no rule covers, a sensitive path) of `request` calls with
    /// `callback({tool, method, target, reason})` → `true`/`"once"`, `"all"`, or a denial.
    /// Without one, inquiries are denied at once with the reason.
    #[wasm_bindgen(js_name = setInquirer)]
    pub fn set_inquirer(&self, callback: Option<js_sys::Function>) {
        *self.inquirer.borrow_mut() = callback;
    }

    /// One D11 request on behalf of `tool` (`method` such as `fs.read` or `http.get`, `params`
    /// as JSON text), decided by the policy and served asynchronously — HTTP through `fetch`,
    /// inquiries through the `setInquirer` callback. Resolves to the JSON-RPC response text
    /// (`{"result":…}` or `{"error":{"code","message"}}`).
    pub async fn request(&self, tool: String, method: String, params: String) -> Result<String, JsValue> {
        let params: Value = serde_json::from_str(&params)
            .map_err(|e| err(format!("the params of {method} are not valid JSON: {e}")))?;
        let snapshot = match self.store.direct() {
            Some(_) => None,
            None => Some(self.store.snapshot().await?),
        };
        let files = self.files(snapshot.as_ref());
        let dispatcher = self.dispatcher(&tool, files, FetchHttpClient::default(), None);
        let events = JsEvents { tool, callback: self.events.borrow().clone() };
        let id = {
            let mut n = self.requests.borrow_mut();
            *n += 1;
            *n
        };
        let request = HostRequest::parse(&method, params);
        let line = dispatcher.respond(&Id::Number(id), &method, request, &events).await;
        if let Some(snapshot) = snapshot {
            self.store.settle(snapshot, Vec::new(), Vec::new(), true).await?;
        }
        // The response line minus the envelope: `{"result":…}` or `{"error":{"code","message"}}`.
        let mut v: Value = serde_json::from_slice(&line).map_err(err)?;
        let mut out = serde_json::Map::new();
        for key in ["result", "error"] {
            if let Some(x) = v.get_mut(key) {
                out.insert(key.into(), x.take());
            }
        }
        Ok(Value::Object(out).to_string())
    }

    /// Write a file (text or bytes), creating its parents. The host's own file operations are
    /// not a tool's: they are not subject to the policy.
    #[wasm_bindgen(js_name = writeFile)]
    pub async fn write_file(&self, path: String, content: JsValue) -> Result<(), JsValue> {
        let p = WorkspacePath::parse(&path).map_err(err)?;
        let bytes = content_bytes(&content)?;
        self.with_files(async |f| f.write(&p, &bytes).await).await
    }

    /// Read a file as text (invalid UTF-8 replaced).
    #[wasm_bindgen(js_name = readFile)]
    pub async fn read_file(&self, path: String) -> Result<String, JsValue> {
        let p = WorkspacePath::parse(&path).map_err(err)?;
        let bytes = self.with_files(async |f| f.read(&p).await).await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Read a file's bytes.
    #[wasm_bindgen(js_name = readFileBytes)]
    pub async fn read_file_bytes(&self, path: String) -> Result<Uint8Array, JsValue> {
        let p = WorkspacePath::parse(&path).map_err(err)?;
        let bytes = self.with_files(async |f| f.read(&p).await).await?;
        Ok(Uint8Array::from(bytes.as_slice()))
    }

    /// Delete a file.
    #[wasm_bindgen(js_name = deleteFile)]
    pub async fn delete_file(&self, path: String) -> Result<(), JsValue> {
        let p = WorkspacePath::parse(&path).map_err(err)?;
        self.with_files(async |f| f.delete(&p).await).await
    }

    /// Every file path, sorted.
    #[wasm_bindgen(js_name = listFiles)]
    pub async fn list_files(&self) -> Result<Vec<String>, JsError> {
        Ok(self.store.contents().await?.0.into_keys().collect())
    }

    /// Every file, as `{ path: Uint8Array }` (what a call in a Worker starts from).
    #[wasm_bindgen(js_name = exportFiles)]
    pub async fn export_files(&self) -> Result<Object, JsError> {
        let out = Object::new();
        for (path, bytes) in self.store.contents().await?.0 {
            let _ = Reflect::set(&out, &JsValue::from_str(&path), &Uint8Array::from(bytes.as_slice()));
        }
        Ok(out)
    }

    /// Write a call's changes, `{ path: Uint8Array | null }` (null deletes), all together: one
    /// transaction or batch. Returns the paths. With `tool` (the changes of that tool's call in a
    /// Worker), each is decided again by the policy here — create, update or delete, `.jp/`
    /// protected — and one the policy denies refuses them all (`ChangesRefused`): what a Worker
    /// hands back is not trusted to have been decided there.
    #[wasm_bindgen(js_name = commitChanges)]
    pub async fn commit_changes(&self, changes: Object, tool: Option<String>) -> Result<Vec<String>, JsValue> {
        let mut list = Vec::new();
        let mut refused = Vec::new();
        let policy = self.policy.borrow().clone();
        for entry in Object::entries(&changes).iter() {
            let entry = Array::from(&entry);
            let path = entry.get(0).as_string().unwrap_or_default();
            let p = WorkspacePath::parse(&path).map_err(|e| err(format!("changed path '{path}': {e}")))?;
            let value = entry.get(1);
            let bytes = if value.is_null() { None } else { Some(content_bytes(&value)?) };
            if tool.is_some() {
                let exists = self.with_files(async |f| f.exists(&p).await).await.unwrap_or(false);
                let cap = match (&bytes, exists) {
                    (None, _) => Capability::Delete,
                    (Some(_), true) => Capability::Update,
                    (Some(_), false) => Capability::Create,
                };
                // A question was the Worker's to ask (the page's inquirer answered it); a denial
                // stands whatever the Worker says.
                if let Decision::Deny(why) = policy.check_fs_by_caller(cap, &p) {
                    refused.push(format!("{path}: {why}"));
                }
            }
            list.push((p, bytes));
        }
        if !refused.is_empty() {
            let e = js_sys::Error::new(&format!(
                "the changes of tool '{}' may not be written under the policy: {}",
                tool.unwrap_or_default(),
                refused.join("; ")
            ));
            e.set_name("ChangesRefused");
            return Err(e.into());
        }
        if !list.is_empty() {
            self.store.apply(&list).await?;
        }
        Ok(list.into_iter().map(|(p, _)| p.as_str().to_owned()).collect())
    }

    /// Start one call of `tool`: its requests are served from a snapshot of the project until
    /// `finish` writes the changes back. `files` (path → text or bytes), when given, are written
    /// into the snapshot first and committed with the call's own changes — or not at all. Into
    /// a kept project (a storage or IndexedDB), each is a write decided by the policy (create or
    /// update, `.jp/` protected, the ceiling; a sensitive path is not asked about: the caller
    /// writes what it has); one refusal refuses the call before anything is written, with an
    /// error named `FilesRefused`. `inquirer` answers this call's questions (see
    /// `setInquirer`, which it overrides).
    #[wasm_bindgen(js_name = beginCall)]
    pub async fn begin_call(
        &self,
        tool: String,
        files: Option<Object>,
        inquirer: Option<js_sys::Function>,
    ) -> Result<CallSession, JsValue> {
        let snapshot = self.store.snapshot().await.map_err(JsValue::from)?;
        if let Some(files) = files {
            let policy = self.policy.borrow().clone();
            let persistent = !matches!(self.store, Store::Memory(_));
            let mut seeds = Vec::new();
            let mut refused = Vec::new();
            for entry in Object::entries(&files).iter() {
                let entry = Array::from(&entry);
                let path = entry.get(0).as_string().unwrap_or_default();
                let p = WorkspacePath::parse(&path).map_err(|e| JsValue::from(err(format!("file '{path}': {e}"))))?;
                let bytes = content_bytes(&entry.get(1)).map_err(|_| {
                    JsValue::from(err(format!("file '{path}': content must be a string or a Uint8Array")))
                })?;
                // Files that live only for this call (a host in memory) are the call's input, not
                // a write to anything kept.
                if persistent {
                    let exists = snapshot.files.exists(&p).await.unwrap_or(false);
                    let cap = if exists { Capability::Update } else { Capability::Create };
                    if let decision @ (Decision::Deny(_) | Decision::Ask(_)) = policy.check_fs_by_caller(cap, &p) {
                        refused.push(format!("{path}: {}", decision.reason()));
                        continue;
                    }
                }
                seeds.push((p, bytes));
            }
            if !refused.is_empty() {
                let e = js_sys::Error::new(&format!(
                    "the request's files may not be written under the policy: {}",
                    refused.join("; ")
                ));
                e.set_name("FilesRefused");
                return Err(e.into());
            }
            for (p, bytes) in seeds {
                snapshot
                    .files
                    .write(&p, &bytes)
                    .await
                    .map_err(|e| JsValue::from(err(format!("file '{}': {e}", p.as_str()))))?;
            }
        }
        // The caller's files, committed with the tool's changes (or not at all).
        let seeded = snapshot.take_changes();
        let cancel = CancellationToken::new();
        let fetches = web_sys::AbortController::new().ok();
        let http = FetchHttpClient { signal: fetches.as_ref().map(|c| c.signal()) };
        let dispatcher = self.dispatcher(&tool, snapshot.files.clone(), http, inquirer);
        let events = JsEvents { tool, callback: self.events.borrow().clone() };
        Ok(CallSession::new(dispatcher, events, snapshot, seeded, self.store.clone(), cancel, fetches))
    }

    /// The secrets a tool's `${VAR}` headers may use: `{ NAME: value }` (the page: what the
    /// user entered; the edge: the function's environment). Only the names the policy's
    /// `network.envs` lists are kept; their values are substituted by the host and scrubbed
    /// from everything a tool reads back. Replaces the previous set.
    #[wasm_bindgen(js_name = setSecrets)]
    pub fn set_secrets(&self, secrets: Object) -> Result<(), JsError> {
        let mut map = BTreeMap::new();
        for entry in Object::entries(&secrets).iter() {
            let entry = Array::from(&entry);
            let name = entry.get(0).as_string().unwrap_or_default();
            let Some(value) = entry.get(1).as_string() else {
                return Err(err(format!("secret {name}: its value must be a string")));
            };
            map.insert(name, value);
        }
        *self.secrets.borrow_mut() = map;
        Ok(())
    }

    /// The variable names the policy lets a tool's `${VAR}` headers use (`access.secrets`, each
    /// to the origins it binds; `network.envs`): the secrets a host should offer (`setSecrets`).
    #[wasm_bindgen(js_name = secretNames)]
    pub fn secret_names(&self) -> Vec<String> {
        self.policy.borrow().resolvable_env().map(str::to_owned).collect()
    }
}

impl JpHost {
    /// The dispatcher of `tool`'s requests over `files`: the policy in force, HTTP through `http`,
    /// no processes, the host's secrets, and questions to `inquirer`, else the host's; without
    /// either, inquiries are denied at once with the reason, as under `--no-interaction`.
    fn dispatcher(
        &self,
        tool: &str,
        files: Arc<dyn ProjectFiles>,
        http: FetchHttpClient,
        inquirer: Option<js_sys::Function>,
    ) -> Dispatcher {
        let mut builder = Dispatcher::builder(tool, self.policy.borrow().clone(), files)
            .http(Arc::new(http))
            .process(Arc::new(Unavailable::new(NO_PROCESSES)))
            .env(self.secrets.borrow().clone())
            .inquirer(Arc::new(NoOneToAsk(NOBODY.into())));
        if let Some(callback) = inquirer.or_else(|| self.inquirer.borrow().clone()) {
            // `Arc` because the core's traits take one; one thread here.
            #[allow(clippy::arc_with_non_send_sync)]
            let inquirer = Arc::new(JsInquirer::new(callback));
            builder = builder.inquirer(inquirer);
        }
        builder.build()
    }

    /// The files a host operation works on: the store's own, or `snapshot`'s copy.
    fn files(&self, snapshot: Option<&Snapshot>) -> Arc<dyn ProjectFiles> {
        match (self.store.direct(), snapshot) {
            (Some(f), _) => f,
            (None, Some(s)) => s.files.clone(),
            // Unreachable by construction (JS storage always comes with a snapshot); an empty
            // project is the harmless answer.
            (None, None) => Arc::new(InMemoryProjectFiles::new()),
        }
    }

    /// Run a host file operation: directly, or on a snapshot committed afterwards (JS storage).
    async fn with_files<T>(
        &self,
        op: impl AsyncFnOnce(Arc<dyn ProjectFiles>) -> jp_core::files::FilesResult<T>,
    ) -> Result<T, JsValue> {
        if let Some(files) = self.store.direct() {
            return Ok(op(files).await.map_err(err)?);
        }
        let snapshot = self.store.snapshot().await?;
        let out = op(snapshot.files.clone()).await;
        self.store.settle(snapshot, Vec::new(), Vec::new(), out.is_ok()).await?;
        Ok(out.map_err(err)?)
    }
}
