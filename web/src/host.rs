//! [`JpHost`], the JS API: project files (IndexedDB in the page, memory at the edge), one
//! access policy, and call sessions that serve a component's `jp:host` imports through the
//! core dispatcher.
//!
//! jco-transpiled components call their imports synchronously, while IndexedDB is
//! asynchronous. A call therefore runs on a snapshot: [`JpHost::begin_call`] copies the project
//! into memory, the component's requests are decided by the core `Dispatcher` and served from the
//! copy (every future completes at once, so it is polled to completion without blocking), and
//! [`CallSession::finish`] writes what changed back in ONE IndexedDB transaction — or nothing,
//! when the call failed. A tool's files are therefore as they were or fully written.

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use jp_core::files::{InMemoryProjectFiles, ProjectFiles};
use jp_core::host::{DenyInquirer, DispatchEvents, Dispatcher, TraceEvent, Unavailable};
use jp_core::policy::{AccessConfig, AccessPolicy, Capability, Decision, SandboxConfig, WorkspacePath};
use jp_core::protocol::{
    EntryKind, FsGrepParams, FsReadParams, FsRenameParams, FsWriteParams, Header, HostRequest, HostResponse,
    HttpGetParams, HttpPostParams, Id, PathParams, ProcessRunParams,
};
use jp_core::schema::{ArgumentSchema, ToolDefinition};
use js_sys::{Array, Object, Reflect, Uint8Array};
use serde::Deserialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::files::IndexedDbProjectFiles;
use crate::http::{FetchHttpClient, JsInquirer};
use crate::store::{Changes, JsStore, ProjectStorage, Snapshot, Store};

fn err(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

/// The policy text a host is given: TOML or JSON with optional `access` (RFD 076) and
/// `sandbox` (RFD 016 / D11) tables. Empty: the workspace read-write, no network, no processes.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct PolicyText {
    access: Option<AccessConfig>,
    sandbox: Option<SandboxConfig>,
}

fn parse_policy(text: &str) -> Result<AccessPolicy, JsError> {
    policy_from_text(text).map_err(err)
}

fn policy_from_text(text: &str) -> Result<AccessPolicy, String> {
    Ok(policy_tables(text)?.unwrap_or_else(AccessPolicy::stdio_default))
}

/// The policy `text` configures, or `None` when it has no `access` or `sandbox` table (empty
/// text included): the default, or at the edge the operator's policy as it is.
fn policy_tables(text: &str) -> Result<Option<AccessPolicy>, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(None);
    }
    let parsed: PolicyText = if trimmed.starts_with('{') {
        serde_json::from_str(trimmed).map_err(|e| format!("the policy is not valid JSON: {e}"))?
    } else {
        toml::from_str(trimmed).map_err(|e| format!("the policy is not valid TOML: {e}"))?
    };
    if parsed.access.is_none() && parsed.sandbox.is_none() {
        return Ok(None);
    }
    AccessPolicy::from_config(parsed.sandbox.as_ref(), parsed.access.as_ref())
        .map(Some)
        .map_err(|e| format!("the policy is invalid: {e}"))
}

/// `policy` bounded by `ceiling` (issue 24: the operator's policy at the edge): a `policy` with
/// no table of its own is the ceiling itself; one that grants more is refused with every such
/// right named.
fn bounded_policy(policy: &str, ceiling: &str) -> Result<AccessPolicy, JsError> {
    let ceiling = policy_from_text(ceiling).map_err(|e| err(format!("the operator's policy: {e}")))?;
    match policy_tables(policy).map_err(err)? {
        None => Ok(ceiling),
        Some(own) => own.within(ceiling).map_err(|refused| {
            err(format!("the policy grants more than the operator's policy allows: {}", refused.join("; ")))
        }),
    }
}

/// What `policy` grants beyond `ceiling`, one line per right (empty: it only narrows it); an
/// error when either does not parse. The edge answers 403 naming these.
#[wasm_bindgen(js_name = policyExceeds)]
pub fn policy_exceeds(policy: &str, ceiling: &str) -> Result<Vec<String>, JsError> {
    let ceiling = policy_from_text(ceiling).map_err(|e| err(format!("the operator's policy: {e}")))?;
    Ok(match policy_tables(policy).map_err(err)? {
        None => Vec::new(),
        Some(own) => own.within(ceiling).err().unwrap_or_default(),
    })
}

/// Policy decisions reported to a JS callback.
struct JsEvents {
    tool: String,
    callback: Option<js_sys::Function>,
}

impl DispatchEvents for JsEvents {
    fn decided(&self, event: &TraceEvent) {
        if let Some(f) = &self.callback {
            let o = obj(&[
                ("tool", JsValue::from_str(&self.tool)),
                ("method", JsValue::from_str(&event.method)),
                ("target", JsValue::from_str(&event.target)),
                ("decision", JsValue::from_str(event.decision)),
                ("reason", JsValue::from_str(&event.reason)),
                ("allowed", JsValue::from_bool(event.allowed)),
            ]);
            let _ = f.call1(&JsValue::NULL, &o);
        }
    }
}

fn obj(fields: &[(&str, JsValue)]) -> JsValue {
    let o = Object::new();
    for (k, v) in fields {
        let _ = Reflect::set(&o, &JsValue::from_str(k), v);
    }
    o.into()
}

/// Poll a future that cannot wait (the dispatcher over an in-memory snapshot) to completion.
fn now<F: Future>(f: F) -> Option<F::Output> {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => Some(v),
        Poll::Pending => None,
    }
}

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
pub struct JpHost {
    store: Store,
    policy: Rc<RefCell<Arc<AccessPolicy>>>,
    events: Rc<RefCell<Option<js_sys::Function>>>,
    inquirer: Rc<RefCell<Option<js_sys::Function>>>,
    requests: Rc<RefCell<i64>>,
}

const NO_PROCESSES: &str = "process.run is not available in the browser: there are no processes";

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
            policy: Rc::new(RefCell::new(Arc::new(policy))),
            events: Rc::default(),
            inquirer: Rc::default(),
            requests: Rc::default(),
        })
    }

    /// Replace the policy: TOML or JSON with `access` and/or `sandbox` tables (the shapes of
    /// `.jp/config.toml`); empty text is the default (workspace read-write, nothing else).
    #[wasm_bindgen(js_name = setPolicy)]
    pub fn set_policy(&self, policy: &str) -> Result<(), JsError> {
        *self.policy.borrow_mut() = Arc::new(parse_policy(policy)?);
        Ok(())
    }

    /// Replace the policy with `policy` bounded by `ceiling` (the operator's policy at the
    /// edge): every decision is the stricter of the two; empty `policy` is the ceiling itself;
    /// a `policy` that grants more than `ceiling` is refused with every such right named (and
    /// the policy in force is left as it was).
    #[wasm_bindgen(js_name = setPolicyWithin)]
    pub fn set_policy_within(&self, policy: &str, ceiling: &str) -> Result<(), JsError> {
        *self.policy.borrow_mut() = Arc::new(bounded_policy(policy, ceiling)?);
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
            ("commands", JsValue::from_bool(h.commands)),
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
        let mut builder = Dispatcher::builder(tool.clone(), self.policy.borrow().clone(), files)
            .http(Arc::new(FetchHttpClient))
            .process(Arc::new(Unavailable::new(NO_PROCESSES)));
        if let Some(callback) = self.inquirer.borrow().clone() {
            builder = builder.inquirer(Arc::new(JsInquirer { callback }));
        }
        let dispatcher = builder.build();
        let events = JsEvents { tool, callback: self.events.borrow().clone() };
        let id = {
            let mut n = self.requests.borrow_mut();
            *n += 1;
            *n
        };
        let request = HostRequest::parse(&method, params);
        let line = dispatcher.respond(&Id::Number(id), &method, request, &events).await;
        if let Some(snapshot) = snapshot {
            self.store.settle(snapshot, Vec::new(), true).await?;
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
    /// transaction or batch. Returns the paths.
    #[wasm_bindgen(js_name = commitChanges)]
    pub async fn commit_changes(&self, changes: Object) -> Result<Vec<String>, JsValue> {
        let mut list = Vec::new();
        for entry in Object::entries(&changes).iter() {
            let entry = Array::from(&entry);
            let path = entry.get(0).as_string().unwrap_or_default();
            let p = WorkspacePath::parse(&path).map_err(|e| err(format!("changed path '{path}': {e}")))?;
            let value = entry.get(1);
            let bytes = if value.is_null() { None } else { Some(content_bytes(&value)?) };
            list.push((p, bytes));
        }
        if !list.is_empty() {
            self.store.apply(&list).await?;
        }
        Ok(list.into_iter().map(|(p, _)| p.as_str().to_owned()).collect())
    }

    /// Start one call of `tool`: its requests are served from a snapshot of the project until
    /// `finish` writes the changes back. `files` (path → text or bytes), when given, are written
    /// into the snapshot first and committed with the call's own changes — or not at all. Into
    /// a kept project (a storage or IndexedDB), each is a write decided by the policy (create or update, `.jp/` protected, the ceiling; a
    /// sensitive path is not asked about: the caller writes what it has); one refusal
    /// refuses the call before anything is written, with an error named `FilesRefused`.
    #[wasm_bindgen(js_name = beginCall)]
    pub async fn begin_call(&self, tool: String, files: Option<Object>) -> Result<CallSession, JsValue> {
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
        let policy = self.policy.borrow().clone();
        // A component cannot wait for an answer (its imports are synchronous): inquiries are
        // denied at once with the reason, as under `--no-interaction`.
        let dispatcher = Dispatcher::builder(tool.clone(), policy, snapshot.files.clone())
            .inquirer(Arc::new(DenyInquirer))
            .http(Arc::new(Unavailable::new(
                "http.get and http.post are not available to a component in the browser (its imports are synchronous; fetch is not)",
            )))
            .process(Arc::new(Unavailable::new(NO_PROCESSES)))
            .build();
        let events = JsEvents { tool, callback: self.events.borrow().clone() };
        Ok(CallSession { dispatcher, events, snapshot, seeded, store: self.store.clone(), next_id: 0 })
    }
}

impl JpHost {
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
        self.store.settle(snapshot, Vec::new(), out.is_ok()).await?;
        Ok(out.map_err(err)?)
    }
}

/// A tool's argument schema compiled once (`new ArgumentSchema(inputSchema)`): the core's
/// check of a call's arguments against the whole JSON Schema, the same as `jp` makes.
/// `Host.registerComponent` keeps one per tool and `Host.callTool` checks every call with it.
#[wasm_bindgen(js_name = ArgumentSchema)]
pub struct JsArgumentSchema(ArgumentSchema);

#[wasm_bindgen(js_class = ArgumentSchema)]
impl JsArgumentSchema {
    /// Compile `schema` (a JSON Schema object); throws when it is not one the core can check with.
    #[wasm_bindgen(constructor)]
    pub fn new(schema: JsValue) -> Result<JsArgumentSchema, JsError> {
        let text = js_sys::JSON::stringify(&schema).map_err(|_| err("the schema is not JSON"))?;
        let schema: Value =
            serde_json::from_str(&String::from(text)).map_err(|e| err(format!("the schema is not JSON: {e}")))?;
        ArgumentSchema::compile(&schema).map(JsArgumentSchema).map_err(err)
    }

    /// `undefined` when `args` fit, else the message naming each argument and the fix (e.g.
    /// "argument 'path' must be a string, got 3; see the tool's schema").
    pub fn check(&self, args: JsValue) -> Option<String> {
        let value = js_sys::JSON::stringify(&args)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&String::from(t)).ok())
            .unwrap_or(Value::Null);
        self.0.check_value(&value).err().map(|e| e.to_string())
    }
}

/// The JSON Schema of a tool's arguments from its D06 description (`{name, summary,
/// description, parameters}`, as a component's `jp:tool/describe` gives it) — the schema every
/// other jp-host surface shows for it.
#[wasm_bindgen(js_name = toolInputSchema)]
pub fn tool_input_schema(tool: JsValue) -> Result<JsValue, JsError> {
    let text = js_sys::JSON::stringify(&tool).map_err(|_| err("the tool is not JSON"))?;
    let schema: jp_core::schema::ToolSchema = serde_json::from_str(&String::from(text))
        .map_err(|e| err(format!("the tool description is not D06-shaped: {e}")))?;
    let definition = ToolDefinition {
        name: schema.name,
        summary: schema.summary,
        description: schema.description,
        parameters: schema.parameters,
        input_schema: None,
    };
    js_sys::JSON::parse(&definition.to_json_schema().to_string()).map_err(|_| err("schema is not JSON"))
}

/// One tool call's view of the project; serves the `jp:host/filesystem` imports.
#[wasm_bindgen]
pub struct CallSession {
    dispatcher: Dispatcher,
    events: JsEvents,
    snapshot: Snapshot,
    /// The caller's own files (`beginCall`'s `files`), committed with the tool's changes.
    seeded: Changes,
    store: Store,
    next_id: i64,
}

/// A WIT `err(host-error)` for jco: thrown as `{ payload: { code, message } }`.
fn host_error(code: i32, message: &str) -> JsValue {
    obj(&[("payload", obj(&[("code", JsValue::from(code)), ("message", JsValue::from_str(message))]))])
}

fn kind(k: EntryKind) -> JsValue {
    JsValue::from_str(match k {
        EntryKind::File => "file",
        EntryKind::Dir => "dir",
    })
}

impl CallSession {
    /// One typed request through the dispatcher; its typed answer comes back as is.
    fn call(&mut self, request: HostRequest) -> Result<HostResponse, JsValue> {
        let method = request.method();
        self.next_id += 1;
        let id = Id::Number(self.next_id);
        now(self.dispatcher.handle(&request, &id, &self.events))
            .ok_or_else(|| host_error(-32603, &format!("{method} cannot complete synchronously in the browser")))?
            .map_err(|e| {
                let rpc = e.to_rpc();
                host_error(rpc.code, &rpc.message)
            })
    }

    fn done(&mut self, request: HostRequest) -> Result<(), JsValue> {
        match self.call(request)? {
            HostResponse::Done => Ok(()),
            other => Err(unexpected(&other)),
        }
    }
}

/// An answer of the wrong kind: a dispatcher bug, reported rather than trusted.
fn unexpected(got: &HostResponse) -> JsValue {
    host_error(-32603, &format!("unexpected answer from the host: {got:?}"))
}

fn at(path: String) -> PathParams {
    PathParams { path }
}

#[wasm_bindgen]
impl CallSession {
    /// `jp:host/filesystem.read`.
    pub fn read(&mut self, path: String) -> Result<Uint8Array, JsValue> {
        match self.call(HostRequest::FsRead(FsReadParams { path }))? {
            HostResponse::FsRead(r) => Ok(Uint8Array::from(r.content.as_slice())),
            other => Err(unexpected(&other)),
        }
    }

    /// `jp:host/filesystem.write`.
    pub fn write(&mut self, path: String, content: Vec<u8>) -> Result<(), JsValue> {
        self.done(HostRequest::FsWrite(FsWriteParams { path, content }))
    }

    /// `jp:host/filesystem.exists`.
    pub fn exists(&mut self, path: String) -> Result<bool, JsValue> {
        match self.call(HostRequest::FsExists(at(path)))? {
            HostResponse::FsExists(r) => Ok(r.exists),
            other => Err(unexpected(&other)),
        }
    }

    /// `jp:host/filesystem.list-dir`.
    #[wasm_bindgen(js_name = listDir)]
    pub fn list_dir(&mut self, path: String) -> Result<Array, JsValue> {
        let HostResponse::FsListDir(r) = self.call(HostRequest::FsListDir(at(path)))? else {
            return Err(host_error(-32603, "unexpected answer to fs.list_dir"));
        };
        Ok(r.entries
            .into_iter()
            .map(|e| obj(&[("path", JsValue::from_str(&e.path)), ("kind", kind(e.kind))]))
            .collect())
    }

    /// `jp:host/filesystem.metadata`.
    pub fn metadata(&mut self, path: String) -> Result<JsValue, JsValue> {
        match self.call(HostRequest::FsMetadata(at(path)))? {
            HostResponse::FsMetadata(r) => {
                Ok(obj(&[("kind", kind(r.kind)), ("size", js_sys::BigInt::from(r.size).into())]))
            }
            other => Err(unexpected(&other)),
        }
    }

    /// `jp:host/filesystem.delete`.
    pub fn delete(&mut self, path: String) -> Result<(), JsValue> {
        self.done(HostRequest::FsDelete(at(path)))
    }

    /// `jp:host/filesystem.rename`.
    pub fn rename(&mut self, from: String, to: String) -> Result<(), JsValue> {
        self.done(HostRequest::FsRename(FsRenameParams { from, to }))
    }

    /// `jp:host/filesystem.grep`; `options` is the WIT record `{ paths, extensions, context }`.
    pub fn grep(&mut self, pattern: String, options: JsValue) -> Result<Array, JsValue> {
        let list = |key: &str| -> Vec<String> {
            Reflect::get(&options, &JsValue::from_str(key))
                .ok()
                .map(|v| Array::from(&v).iter().filter_map(|s| s.as_string()).collect())
                .unwrap_or_default()
        };
        let context =
            Reflect::get(&options, &JsValue::from_str("context")).ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
        let (paths, extensions) = (list("paths"), list("extensions"));
        let params = FsGrepParams {
            pattern,
            paths: (!paths.is_empty()).then_some(paths),
            extensions: (!extensions.is_empty()).then_some(extensions),
            context: (context >= 1.0).then_some(context as u32),
        };
        let HostResponse::FsGrep(r) = self.call(HostRequest::FsGrep(params))? else {
            return Err(host_error(-32603, "unexpected answer to fs.grep"));
        };
        Ok(r.matches
            .into_iter()
            .map(|m| {
                let lines: Array = m
                    .lines
                    .into_iter()
                    .map(|l| {
                        obj(&[
                            ("lineNumber", js_sys::BigInt::from(l.line_number).into()),
                            ("content", JsValue::from_str(&l.content)),
                            ("isMatch", JsValue::from_bool(l.is_match)),
                        ])
                    })
                    .collect();
                obj(&[("path", JsValue::from_str(&m.path)), ("lines", lines.into())])
            })
            .collect())
    }

    /// `jp:host/http.get` and `.post` (`method` is `http.get` or `http.post`): decided by the
    /// policy like any request; a component's synchronous call cannot wait for `fetch`, so an
    /// allowed one answers that HTTP is not available to components in the browser. The answer
    /// is the WIT `response` record (`{ status, headers, body: Uint8Array }`).
    pub fn http(
        &mut self,
        method: String,
        url: String,
        headers: JsValue,
        body: Option<Vec<u8>>,
    ) -> Result<JsValue, JsValue> {
        let headers: Vec<Header> = Array::from(&headers)
            .iter()
            .map(|h| {
                let field = |k: &str| {
                    Reflect::get(&h, &JsValue::from_str(k)).ok().and_then(|v| v.as_string()).unwrap_or_default()
                };
                Header { name: field("name"), value: field("value") }
            })
            .collect();
        let request = match method.as_str() {
            "http.get" => HostRequest::HttpGet(HttpGetParams { url, headers }),
            "http.post" => HostRequest::HttpPost(HttpPostParams { url, headers, body: body.unwrap_or_default() }),
            other => {
                return Err(host_error(-32601, &format!("Method not found: \"{other}\"; use http.get or http.post")));
            }
        };
        match self.call(request)? {
            HostResponse::Http(r) => {
                let headers: Array = r
                    .headers
                    .iter()
                    .map(|h| obj(&[("name", JsValue::from_str(&h.name)), ("value", JsValue::from_str(&h.value))]))
                    .collect();
                Ok(obj(&[
                    ("status", JsValue::from(r.status)),
                    ("headers", headers.into()),
                    ("body", Uint8Array::from(r.body.as_slice()).into()),
                ]))
            }
            other => Err(unexpected(&other)),
        }
    }

    /// `jp:host/process.run`: decided by the policy; an allowed one answers that processes do
    /// not exist in the browser. The answer is the WIT `output` record.
    #[wasm_bindgen(js_name = processRun)]
    pub fn process_run(&mut self, program: String, args: Vec<String>) -> Result<JsValue, JsValue> {
        match self.call(HostRequest::ProcessRun(ProcessRunParams { program, args, envs: Vec::new() }))? {
            HostResponse::ProcessRun(r) => Ok(obj(&[
                ("stdout", Uint8Array::from(r.stdout.as_slice()).into()),
                ("stderr", Uint8Array::from(r.stderr.as_slice()).into()),
                ("exitCode", r.exit_code.map_or(JsValue::UNDEFINED, JsValue::from)),
            ])),
            other => Err(unexpected(&other)),
        }
    }

    /// End the call. With `commit`, every change (the caller's `files` and the tool's) is
    /// written back in one transaction and the paths the tool changed are returned; without,
    /// nothing is written.
    ///
    /// A versioned storage that another writer changed since the snapshot was read refuses
    /// the commit: the error's `name` is then "ProjectChanged" and nothing is written.
    pub async fn finish(self, commit: bool) -> Result<Vec<String>, JsValue> {
        self.store.settle(self.snapshot, self.seeded, commit).await
    }
}
