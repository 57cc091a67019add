//! [`CallSession`]: one component call's view of the project, serving its `jp:host` imports
//! (filesystem, http, process) through the core dispatcher over the call's in-memory snapshot —
//! each import a promise the component waits for (JSPI) — and `JsEvents`, the policy decisions
//! reported to the page.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use jp_core::cancel::{CancelReason, CancellationToken};
use jp_core::host::{DispatchEvents, Dispatcher, TraceEvent};
use jp_core::protocol::{
    EntryKind, FsGrepParams, FsReadParams, FsRenameParams, FsWriteParams, Header, HostRequest, HostResponse,
    HttpGetParams, HttpPostParams, Id, PathParams, ProcessRunParams,
};
use js_sys::{Array, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;

use crate::js::{err, obj};
use crate::store::{Changes, Records, Snapshot, Store};

/// Policy decisions reported to a JS callback.
pub(crate) struct JsEvents {
    pub(crate) tool: String,
    pub(crate) callback: Option<js_sys::Function>,
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

/// The most `http.get`/`http.post` requests one call may make (each redirect hop included in
/// its request): a component looping over requests is stopped with a clear error, not left to
/// run up the deadline against someone's server.
pub const MAX_HTTP_PER_CALL: u32 = 64;

/// One tool call's view of the project; serves a component's `jp:host` imports. Every import
/// returns a promise (the component is suspended through JSPI while it waits): files come from
/// the call's snapshot, HTTP through `fetch`, and questions go to the host's inquirer.
#[wasm_bindgen]
#[derive(Clone)]
pub struct CallSession(Rc<Session>);

impl std::ops::Deref for CallSession {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.0
    }
}

/// What a [`CallSession`] holds; shared by the handle a component's runner gets and the host
/// that finishes the call.
pub struct Session {
    dispatcher: Dispatcher,
    events: JsEvents,
    /// Taken by `finish`.
    snapshot: RefCell<Option<Snapshot>>,
    /// The caller's own files (`beginCall`'s `files`), committed with the tool's changes.
    seeded: RefCell<Changes>,
    store: Store,
    next_id: Cell<i64>,
    http_requests: Cell<u32>,
    /// Cancelled by `abort` (the Stop button, an `AbortSignal`) or `expire` (the deadline): every
    /// pending and later request ends at once with the reason (`Dispatcher::handle_until`).
    cancel: CancellationToken,
    /// Aborts the call's `fetch`es in flight.
    fetches: Option<web_sys::AbortController>,
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
    /// A call served by `dispatcher` over `snapshot`; `seeded` (the caller's files) is committed
    /// with the tool's changes into `store`, or not at all. `fetches` aborts its HTTP requests.
    pub(crate) fn new(
        dispatcher: Dispatcher,
        events: JsEvents,
        snapshot: Snapshot,
        seeded: Changes,
        store: Store,
        cancel: CancellationToken,
        fetches: Option<web_sys::AbortController>,
    ) -> Self {
        Self(Rc::new(Session {
            dispatcher,
            events,
            snapshot: RefCell::new(Some(snapshot)),
            seeded: RefCell::new(seeded),
            store,
            next_id: Cell::new(0),
            http_requests: Cell::new(0),
            cancel,
            fetches,
        }))
    }

    /// One typed request through the dispatcher; its typed answer comes back as is.
    async fn call(&self, request: HostRequest) -> Result<HostResponse, JsValue> {
        let id = Id::Number(self.next_id.get() + 1);
        self.next_id.set(self.next_id.get() + 1);
        self.dispatcher.handle_until(&request, &id, &self.events, &self.cancel).await.map_err(|e| {
            let rpc = e.to_rpc();
            host_error(rpc.code, &rpc.message)
        })
    }

    /// Stop the call for `reason` (the first one given is kept) and abort its fetches.
    fn stop(&self, reason: CancelReason) {
        if self.cancel.is_cancelled() {
            return;
        }
        self.cancel.cancel_with(reason);
        if let Some(fetches) = &self.fetches {
            fetches.abort();
        }
    }

    async fn done(&self, request: HostRequest) -> Result<(), JsValue> {
        match self.call(request).await? {
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
    pub async fn read(&self, path: String) -> Result<Uint8Array, JsValue> {
        match self.call(HostRequest::FsRead(FsReadParams { path })).await? {
            HostResponse::FsRead(r) => Ok(Uint8Array::from(r.content.as_slice())),
            other => Err(unexpected(&other)),
        }
    }

    /// `jp:host/filesystem.write`.
    pub async fn write(&self, path: String, content: Vec<u8>) -> Result<(), JsValue> {
        self.done(HostRequest::FsWrite(FsWriteParams { path, content })).await
    }

    /// `jp:host/filesystem.exists`.
    pub async fn exists(&self, path: String) -> Result<bool, JsValue> {
        match self.call(HostRequest::FsExists(at(path))).await? {
            HostResponse::FsExists(r) => Ok(r.exists),
            other => Err(unexpected(&other)),
        }
    }

    /// `jp:host/filesystem.list-dir`.
    #[wasm_bindgen(js_name = listDir)]
    pub async fn list_dir(&self, path: String) -> Result<Array, JsValue> {
        let HostResponse::FsListDir(r) = self.call(HostRequest::FsListDir(at(path))).await? else {
            return Err(host_error(-32603, "unexpected answer to fs.list_dir"));
        };
        Ok(r.entries
            .into_iter()
            .map(|e| obj(&[("path", JsValue::from_str(&e.path)), ("kind", kind(e.kind))]))
            .collect())
    }

    /// `jp:host/filesystem.metadata`.
    pub async fn metadata(&self, path: String) -> Result<JsValue, JsValue> {
        match self.call(HostRequest::FsMetadata(at(path))).await? {
            HostResponse::FsMetadata(r) => {
                Ok(obj(&[("kind", kind(r.kind)), ("size", js_sys::BigInt::from(r.size).into())]))
            }
            other => Err(unexpected(&other)),
        }
    }

    /// `jp:host/filesystem.delete`.
    pub async fn delete(&self, path: String) -> Result<(), JsValue> {
        self.done(HostRequest::FsDelete(at(path))).await
    }

    /// `jp:host/filesystem.rename`.
    pub async fn rename(&self, from: String, to: String) -> Result<(), JsValue> {
        self.done(HostRequest::FsRename(FsRenameParams { from, to })).await
    }

    /// `jp:host/filesystem.grep`; `options` is the WIT record `{ paths, extensions, context }`.
    pub async fn grep(&self, pattern: String, options: JsValue) -> Result<Array, JsValue> {
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
        let HostResponse::FsGrep(r) = self.call(HostRequest::FsGrep(params)).await? else {
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
    pub async fn http(
        &self,
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
        let n = self.http_requests.get() + 1;
        self.http_requests.set(n);
        if n > MAX_HTTP_PER_CALL {
            return Err(host_error(
                -32602,
                &format!(
                    "{method} {url}: this call already made {MAX_HTTP_PER_CALL} HTTP requests, the most one call may make here; make fewer requests per call"
                ),
            ));
        }
        let request = match method.as_str() {
            "http.get" => HostRequest::HttpGet(HttpGetParams { url, headers }),
            "http.post" => HostRequest::HttpPost(HttpPostParams { url, headers, body: body.unwrap_or_default() }),
            other => {
                return Err(host_error(-32601, &format!("Method not found: \"{other}\"; use http.get or http.post")));
            }
        };
        match self.call(request).await? {
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
    pub async fn process_run(&self, program: String, args: Vec<String>) -> Result<JsValue, JsValue> {
        match self.call(HostRequest::ProcessRun(ProcessRunParams { program, args, envs: Vec::new() })).await? {
            HostResponse::ProcessRun(r) => Ok(obj(&[
                ("stdout", Uint8Array::from(r.stdout.as_slice()).into()),
                ("stderr", Uint8Array::from(r.stderr.as_slice()).into()),
                ("exitCode", r.exit_code.map_or(JsValue::UNDEFINED, JsValue::from)),
            ])),
            other => Err(unexpected(&other)),
        }
    }

    /// Cancel the call: every request it is waiting for (a fetch, a question) and every later
    /// one ends at once with -32005 "the call was cancelled: `reason`". The component goes on
    /// only to its next import or loop check; `finish(false)` then writes nothing.
    pub fn abort(&self, reason: String) {
        self.stop(CancelReason::Cancelled(reason));
    }

    /// Stop the call at its deadline: like `abort`, but its requests end with -32004, "the call
    /// ran out of time while waiting for an answer to …: `reason`".
    pub fn expire(&self, reason: String) {
        self.stop(CancelReason::TimedOut(reason));
    }

    /// Whether `abort` or `expire` was called.
    #[wasm_bindgen(getter)]
    pub fn aborted(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// End the call. With `commit`, every change (the caller's `files` and the tool's) is
    /// written back in one transaction and the paths the tool changed are returned; without,
    /// nothing is written. A cancelled call never commits. Its requests still pending end.
    ///
    /// A versioned storage that another writer changed since the snapshot was read refuses
    /// the commit: the error's `name` is then "ProjectChanged" and nothing is written.
    pub async fn finish(&self, commit: bool) -> Result<Vec<String>, JsValue> {
        self.finish_with(commit, Vec::new()).await
    }
}

impl CallSession {
    /// [`finish`](CallSession::finish), writing the host's `records` too: in the same batch
    /// as the call's changes when it commits, alone when it does not (see [`Store::settle`]).
    pub async fn finish_with(&self, commit: bool, records: Records) -> Result<Vec<String>, JsValue> {
        let commit = commit && !self.cancel.is_cancelled();
        self.abort("the call ended".into());
        let Some(snapshot) = self.snapshot.borrow_mut().take() else {
            return Err(err("this call was already finished").into());
        };
        let seeded = std::mem::take(&mut *self.seeded.borrow_mut());
        self.store.settle(snapshot, seeded, records, commit).await
    }
}
