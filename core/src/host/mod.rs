//! The one request dispatcher.
//!
//! A tool's request — from a VFS subprocess (native), a `jp:host` import of a wasmtime component
//! (native) or of a jco component (browser) — arrives here as a [`HostRequest`]. The
//! [`Dispatcher`] checks it against the tool's [`AccessPolicy`], asks the user through the
//! [`Inquirer`] when the policy says so, resolves it through [`ProjectFiles`], [`HttpClient`] or
//! [`ProcessRunner`], scrubs secrets from everything it returns, enforces the size cap and answers.
//! Every failure becomes a [`HostError`], and [`HostError::code`] is the one place where failures
//! map to D11 error codes. A call that can be stopped (its deadline, the user's cancel) serves its
//! requests through [`Dispatcher::handle_until`], so that a request still waiting when it stops
//! ends the same way on every platform.

mod backends;
mod egress;
mod error;
mod fs;
mod http;
pub mod testing;

pub use backends::*;
use egress::Settler;
pub use egress::{CONNECT_METHOD, EgressGate, HTTP_METHOD, PLACEHOLDER_METHOD, Refused};
pub use error::{BackendError, HostError};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde_json::Value;

use crate::cancel::CancellationToken;
use crate::files::ProjectFiles;
use crate::policy::{AccessPolicy, Capability, Decision, Scrubber, WorkspacePath, is_base_env};
use crate::protocol::{
    DEFAULT_MAX_CONTENT, DEFAULT_MAX_LINE, Frame, HostRequest, HostResponse, Id, Incoming, ProcessRunParams,
    ProcessRunResult, Response, RpcError, RpcMessage, decode_incoming, encode_message,
};

/// How many redirects the dispatcher follows, each re-checked against the policy.
pub const MAX_REDIRECTS: usize = 10;

/// Serves the requests of one tool call. Cheap to build: it holds `Arc`s and per-call state (the
/// "allow all for this call" answer).
pub struct Dispatcher {
    tool: String,
    policy: Arc<AccessPolicy>,
    files: Arc<dyn ProjectFiles>,
    http: Arc<dyn HttpClient>,
    process: Arc<dyn ProcessRunner>,
    inquirer: Arc<dyn Inquirer>,
    env: BTreeMap<String, String>,
    scrubber: Scrubber,
    max_content: usize,
    max_line: usize,
    /// "Allow for the rest of this call": shared with the egress gate of its processes.
    approve_all: Arc<AtomicBool>,
    /// Where the egress decisions of its processes are reported (see [`EgressGate`]).
    trace: Option<Arc<dyn DispatchEvents>>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("tool", &self.tool)
            .field("files", &self.files.display_root())
            .finish_non_exhaustive()
    }
}

/// Builds a [`Dispatcher`]; backends default to "unavailable" and inquiries to [`DenyInquirer`].
pub struct DispatcherBuilder {
    inner: Dispatcher,
    secret_names: Vec<String>,
}

impl DispatcherBuilder {
    /// The HTTP client.
    pub fn http(mut self, http: Arc<dyn HttpClient>) -> Self {
        self.inner.http = http;
        self
    }

    /// The process runner.
    pub fn process(mut self, process: Arc<dyn ProcessRunner>) -> Self {
        self.inner.process = process;
        self
    }

    /// Who answers inquiries.
    pub fn inquirer(mut self, inquirer: Arc<dyn Inquirer>) -> Self {
        self.inner.inquirer = inquirer;
        self
    }

    /// Where the connections of the processes it starts are reported: a `process.run` child
    /// reaches the network through jp's egress proxy, which outlives the request that started
    /// it, so it needs an observer of its own (the runtime's trace).
    pub fn trace(mut self, events: Arc<dyn DispatchEvents>) -> Self {
        self.inner.trace = Some(events);
        self
    }

    /// The host environment. Only the base variables (PATH, HOME, USER, LANG, LC_*) and those
    /// the policy names are kept; the values of the latter are the secrets that get scrubbed, so
    /// passing the whole process environment is safe.
    pub fn env(mut self, env: BTreeMap<String, String>) -> Self {
        let names: std::collections::BTreeSet<&str> = self.inner.policy.resolvable_env().collect();
        self.inner.env = env.into_iter().filter(|(k, _)| is_base_env(k) || names.contains(k.as_str())).collect();
        self
    }

    /// Extra secret values to scrub (besides the environment's).
    pub fn secrets(mut self, names_or_values: Vec<String>) -> Self {
        self.secret_names = names_or_values;
        self
    }

    /// The size cap for one file, body or output (default 10 MiB).
    pub fn max_content(mut self, bytes: usize) -> Self {
        self.inner.max_content = bytes;
        self
    }

    /// The largest response line (default [`DEFAULT_MAX_LINE`]).
    pub fn max_line(mut self, bytes: usize) -> Self {
        self.inner.max_line = bytes;
        self
    }

    /// Finish.
    pub fn build(mut self) -> Dispatcher {
        // Every value a `${VAR}` may carry is a secret, a base variable's too when the policy
        // names it (`network.envs = ["LC_TOKEN"]`); the base variables it does not name are not.
        let named: std::collections::BTreeSet<&str> = self.inner.policy.resolvable_env().collect();
        let mut secrets: Vec<String> = self
            .inner
            .env
            .iter()
            .filter(|(k, _)| !is_base_env(k) || named.contains(k.as_str()))
            .map(|(_, v)| v.clone())
            .collect();
        secrets.append(&mut self.secret_names);
        self.inner.scrubber = Scrubber::new(secrets);
        self.inner
    }
}

/// The argument vector as one unambiguous line for inquiries and traces: a plain word as is,
/// anything else (spaces, quotes, controls, empty) as a JSON string, so `rm "a b"` and
/// `rm a b` cannot look alike.
pub fn command_line(program: &str, args: &[String]) -> String {
    let plain = |a: &str| !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c));
    std::iter::once(program)
        .chain(args.iter().map(String::as_str))
        .map(|a| if plain(a) { a.to_owned() } else { Value::String(a.to_owned()).to_string() })
        .collect::<Vec<_>>()
        .join(" ")
}

impl Dispatcher {
    /// Start building a dispatcher for `tool` with its policy and project files.
    pub fn builder(
        tool: impl Into<String>,
        policy: Arc<AccessPolicy>,
        files: Arc<dyn ProjectFiles>,
    ) -> DispatcherBuilder {
        DispatcherBuilder {
            inner: Dispatcher {
                tool: tool.into(),
                policy,
                files,
                http: Arc::new(Unavailable::no_http()),
                process: Arc::new(Unavailable::no_process()),
                inquirer: Arc::new(DenyInquirer),
                env: BTreeMap::new(),
                scrubber: Scrubber::default(),
                max_content: DEFAULT_MAX_CONTENT,
                max_line: DEFAULT_MAX_LINE,
                approve_all: Arc::new(AtomicBool::new(false)),
                trace: None,
            },
            secret_names: Vec::new(),
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> &AccessPolicy {
        &self.policy
    }

    /// The project files.
    pub fn files(&self) -> &Arc<dyn ProjectFiles> {
        &self.files
    }

    /// The scrubber built from the environment's secrets.
    pub fn scrubber(&self) -> &Scrubber {
        &self.scrubber
    }

    /// The largest file, body or output served.
    pub fn max_content(&self) -> usize {
        self.max_content
    }

    /// Decide one filesystem capability on `path` (and on what it resolves to) exactly as a
    /// request would be decided — policy, inquiry, trace — without doing the operation. For
    /// hosts whose file access does not arrive as protocol requests (a component's
    /// `wasi:filesystem`), so it obeys the same rules. Returns the resolved path (symlinks
    /// followed beneath the root) that was decided: act on *that* path, never on `path` again,
    /// so that a symlink swapped in after the decision cannot redirect the operation
    /// (backends do not follow symlinks in the paths they are given).
    pub async fn authorize(
        &self,
        method: &str,
        cap: Capability,
        path: &WorkspacePath,
        events: &dyn DispatchEvents,
    ) -> Result<WorkspacePath, HostError> {
        self.authorize_fs(method, cap, path, &Id::String(format!("{method}:{}", path.as_str())), events).await
    }

    /// Serve one NDJSON frame: a request gets a response line; notifications and responses are
    /// not for the dispatcher and get `None`; malformed input gets a -32600 response.
    pub async fn handle_frame(&self, frame: &Frame, events: &dyn DispatchEvents) -> Option<Vec<u8>> {
        self.frame(frame, events, None).await
    }

    /// [`handle_frame`](Self::handle_frame) for a call that can be stopped: a request still
    /// pending when `token` fires is answered as [`handle_until`](Self::handle_until) says.
    pub async fn handle_frame_until(
        &self,
        frame: &Frame,
        events: &dyn DispatchEvents,
        token: &CancellationToken,
    ) -> Option<Vec<u8>> {
        self.frame(frame, events, Some(token)).await
    }

    async fn frame(
        &self,
        frame: &Frame,
        events: &dyn DispatchEvents,
        token: Option<&CancellationToken>,
    ) -> Option<Vec<u8>> {
        match decode_incoming(frame, self.max_line) {
            Err((id, e)) => Some(encode_message(&RpcMessage::Response(Response { id, outcome: Err(e) }))),
            Ok(Incoming::Request { id, method, request }) => {
                Some(self.respond_to(&id, &method, request, events, token).await)
            }
            Ok(Incoming::Other(_) | Incoming::TooDeep { .. }) => None,
        }
    }

    /// Serve one typed request and encode its JSON-RPC response as one NDJSON line — the only
    /// place a response becomes JSON. The typed answer is already scrubbed
    /// ([`handle`](Self::handle)); as a backstop the encoded line is scanned once more (a secret
    /// could hide in JSON escaping). If it still holds a secret it is scrubbed as text, and when
    /// that breaks the JSON (a secret spanning JSON syntax) the answer is withheld: never sent
    /// unscrubbed. A line over the message limit becomes a -32602-style "too large" error.
    pub async fn respond(
        &self,
        id: &Id,
        method: &str,
        request: Result<HostRequest, RpcError>,
        events: &dyn DispatchEvents,
    ) -> Vec<u8> {
        self.respond_to(id, method, request, events, None).await
    }

    /// [`respond`](Self::respond) for a call that can be stopped: a request still pending when
    /// `token` fires is answered as [`handle_until`](Self::handle_until) says.
    pub async fn respond_until(
        &self,
        id: &Id,
        method: &str,
        request: Result<HostRequest, RpcError>,
        events: &dyn DispatchEvents,
        token: &CancellationToken,
    ) -> Vec<u8> {
        self.respond_to(id, method, request, events, Some(token)).await
    }

    async fn respond_to(
        &self,
        id: &Id,
        method: &str,
        request: Result<HostRequest, RpcError>,
        events: &dyn DispatchEvents,
        token: Option<&CancellationToken>,
    ) -> Vec<u8> {
        let outcome = match (request, token) {
            (Err(e), _) => Err(e),
            (Ok(typed), None) => self.handle(&typed, id, events).await.map_err(|e| e.to_rpc()),
            (Ok(typed), Some(token)) => self.handle_until(&typed, id, events, token).await.map_err(|e| e.to_rpc()),
        };
        let fail = |e: RpcError| {
            let mut e = e;
            e.message = self.scrubber.scrub_str(&e.message).into_owned();
            encode_message(&RpcMessage::Response(Response { id: Some(id.clone()), outcome: Err(e) }))
        };
        let response = match outcome {
            Err(e) => return fail(e),
            Ok(r) => r,
        };
        #[derive(serde::Serialize)]
        struct Envelope<'a> {
            jsonrpc: &'static str,
            id: &'a Id,
            result: &'a HostResponse,
        }
        let mut line = Vec::with_capacity(response.json_len_hint());
        if let Err(e) = serde_json::to_writer(&mut line, &Envelope { jsonrpc: "2.0", id, result: &response }) {
            return fail(HostError::Internal(format!("could not encode the result: {e}")).to_rpc());
        }
        drop(response);
        if let std::borrow::Cow::Owned(scrubbed) = self.scrubber.scrub_bytes(&line) {
            match serde_json::from_slice::<Value>(&scrubbed) {
                Ok(_) => line = scrubbed,
                Err(_) => {
                    return fail(HostError::Internal(format!(
                        "the answer to {method} contained a secret that could not be removed without corrupting it, so it was withheld"
                    ))
                    .to_rpc());
                }
            }
        }
        line.push(b'\n');
        if line.len() > self.max_line {
            return fail(HostError::TooLarge(format!(
                "the response to {method} would be {} bytes, over the {}-byte message limit; narrow the request (fewer paths, a more specific pattern)",
                line.len(), self.max_line
            ))
            .to_rpc());
        }
        line
    }

    async fn enforce(
        &self,
        method: &str,
        target: &str,
        decision: Decision,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<(), HostError> {
        let settler = Settler { tool: &self.tool, inquirer: self.inquirer.as_ref(), approve_all: &self.approve_all };
        settler
            .settle(method, target, decision, Some(id), events)
            .await
            .map(drop)
            .map_err(|e| HostError::AccessDenied(e.to_string()))
    }

    fn too_large(&self, what: &str, size: usize) -> HostError {
        HostError::TooLarge(format!(
            "{what} is {size} bytes, over the {}-byte limit; process it in pieces or through process.run",
            self.max_content
        ))
    }

    /// Serve one typed request: decided, performed, and its answer scrubbed of every secret
    /// (each text and byte field of the typed value, see [`HostResponse`]) — and so is a
    /// failure's message, which may quote what a backend was given (a header value) or told.
    pub async fn handle(
        &self,
        request: &HostRequest,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<HostResponse, HostError> {
        let mut response = self
            .serve(request, id, events)
            .await
            .map_err(|e| e.map_message(|m| self.scrubber.scrub_str(m).into_owned()))?;
        self.scrub(&mut response);
        Ok(response)
    }

    /// [`handle`](Self::handle), unless `token` fires first — the one race every host runs for
    /// a call that can be stopped (the deadline, the Stop button, the client's cancel). A request
    /// still pending then (a question not yet answered, a server or file not yet heard from) is
    /// dropped where it stood, so nothing it would have done next is done, and answers
    /// [`HostError::stopped`]: -32004 when the call ran out of time, -32005 when it was
    /// cancelled. A request made after the token fired is not started at all.
    pub async fn handle_until(
        &self,
        request: &HostRequest,
        id: &Id,
        events: &dyn DispatchEvents,
        token: &CancellationToken,
    ) -> Result<HostResponse, HostError> {
        if let Some(reason) = token.reason() {
            return Err(HostError::stopped(request.method(), reason, false));
        }
        crate::cancel::or_cancelled(self.handle(request, id, events), token)
            .await
            .unwrap_or_else(|reason| Err(HostError::stopped(request.method(), reason, true)))
    }

    /// Scrub every field of an answer that can carry text a tool reads.
    fn scrub(&self, response: &mut HostResponse) {
        if self.scrubber.is_empty() {
            return;
        }
        let bytes = |b: &mut Vec<u8>| {
            if let std::borrow::Cow::Owned(s) = self.scrubber.scrub_bytes(b) {
                *b = s;
            }
        };
        let text = |t: &mut String| {
            if let std::borrow::Cow::Owned(s) = self.scrubber.scrub_str(t) {
                *t = s;
            }
        };
        match response {
            HostResponse::FsRead(r) => bytes(&mut r.content),
            HostResponse::FsListDir(r) => r.entries.iter_mut().for_each(|e| text(&mut e.path)),
            HostResponse::FsGrep(r) => {
                for m in &mut r.matches {
                    text(&mut m.path);
                    m.lines.iter_mut().for_each(|l| text(&mut l.content));
                }
            }
            HostResponse::Http(r) => {
                bytes(&mut r.body);
                for h in &mut r.headers {
                    text(&mut h.name);
                    text(&mut h.value);
                }
            }
            HostResponse::ProcessRun(r) => {
                bytes(&mut r.stdout);
                bytes(&mut r.stderr);
            }
            HostResponse::FsExists(_) | HostResponse::FsMetadata(_) | HostResponse::Done => {}
        }
    }

    /// Decide a `process.run` exactly as a request would be decided — policy, inquiry, trace —
    /// and build what a runner needs to start it: the clean environment plus the variables the
    /// policy forwards, the project root as working directory, the grant an OS sandbox must
    /// give it. For hosts that start a program some other way than through the
    /// [`ProcessRunner`] (a long-running command whose output is read while it runs).
    pub async fn authorize_process(
        &self,
        p: &ProcessRunParams,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<crate::host::ProcessRequest, HostError> {
        let line = command_line(&p.program, &p.args);
        self.enforce("process.run", &line, self.policy.check_process(&p.program, &p.args, &p.envs), id, events).await?;
        let cwd = self.files.materialize().await.ok().map(|m| m.root);
        let mut env: Vec<(String, String)> =
            self.env.iter().filter(|(k, _)| is_base_env(k)).map(|(k, v)| (k.clone(), v.clone())).collect();
        for name in &p.envs {
            if is_base_env(name) {
                continue;
            }
            let value = self.env.get(name).ok_or_else(|| {
                HostError::InvalidParams(format!("environment variable {name} is not set on the host"))
            })?;
            env.push((name.clone(), value.clone()));
        }
        // (On wasm32 nothing is `Send`, as everywhere in core: `MaybeSend`.)
        #[allow(clippy::arc_with_non_send_sync)]
        let egress = Some(Arc::new(self.egress_gate()));
        Ok(crate::host::ProcessRequest {
            program: p.program.clone(),
            args: p.args.clone(),
            env,
            cwd,
            max_output: self.max_content,
            grant: self.policy.process_grant(),
            egress,
        })
    }

    /// The gate of the processes this dispatcher starts: its tool, policy, inquirer and trace,
    /// and its "allow for the rest of this call".
    pub fn egress_gate(&self) -> EgressGate {
        EgressGate::new(
            self.tool.clone(),
            self.policy.clone(),
            self.inquirer.clone(),
            self.trace.clone(),
            self.approve_all.clone(),
        )
    }

    async fn serve(
        &self,
        request: &HostRequest,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<HostResponse, HostError> {
        match request {
            HostRequest::FsRead(p) => self.fs_read(&p.path, id, events).await,
            HostRequest::FsWrite(p) => self.fs_write(p, id, events).await,
            HostRequest::FsExists(p) => self.fs_exists(&p.path, id, events).await,
            HostRequest::FsListDir(p) => self.fs_list_dir(&p.path, id, events).await,
            HostRequest::FsMetadata(p) => self.fs_metadata(&p.path, id, events).await,
            HostRequest::FsDelete(p) => self.fs_delete(&p.path, id, events).await,
            HostRequest::FsRename(p) => self.fs_rename(&p.from, &p.to, id, events).await,
            HostRequest::FsGrep(p) => self.fs_grep(p, id, events).await,
            HostRequest::HttpGet(p) => self.http(HttpMethod::Get, &p.url, &p.headers, Vec::new(), id, events).await,
            HostRequest::HttpPost(p) => {
                if p.body.len() > self.max_content {
                    return Err(self.too_large("the request body", p.body.len()));
                }
                self.http(HttpMethod::Post, &p.url, &p.headers, p.body.clone(), id, events).await
            }
            HostRequest::ProcessRun(p) => {
                let request = self.authorize_process(p, id, events).await?;
                let out = self.process.run(request).await?;
                Ok(HostResponse::ProcessRun(ProcessRunResult {
                    stdout: out.stdout,
                    stderr: out.stderr,
                    exit_code: out.exit_code,
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{StaticHttpClient, StaticRoute};
    use super::*;
    use crate::files::InMemoryProjectFiles;
    use crate::maybe::BoxFuture;
    use crate::policy::SandboxConfig;
    use crate::protocol::{ErrorCode, Header};
    use futures_executor::block_on;
    use serde_json::json;
    use std::sync::Mutex;

    #[test]
    fn every_host_error_has_a_code() {
        let all = [
            HostError::InvalidRequest(String::new()),
            HostError::MethodNotFound(String::new()),
            HostError::InvalidParams(String::new()),
            HostError::TooLarge(String::new()),
            HostError::AccessDenied(String::new()),
            HostError::NotFound(String::new()),
            HostError::AlreadyExists(String::new()),
            HostError::Timeout(String::new()),
            HostError::Cancelled(String::new()),
            HostError::Unavailable(String::new()),
            HostError::Internal(String::new()),
        ];
        let codes: std::collections::BTreeSet<i32> = all.iter().map(|e| e.code().code()).collect();
        assert_eq!(codes.len(), 9, "every D11 code is reachable");
    }

    #[test]
    fn redirects_are_rechecked_against_the_policy() {
        let sb: SandboxConfig = toml::from_str(r#"network = { allow = ["https://ok.example"] }"#).unwrap();
        let policy = AccessPolicy::from_config(Some(&sb), None).unwrap();
        let routes = BTreeMap::from([
            (
                "https://ok.example/go".to_owned(),
                StaticRoute::Respond(HttpResponse {
                    status: 302,
                    headers: vec![Header { name: "Location".into(), value: "https://evil.example/x".into() }],
                    body: vec![],
                }),
            ),
            ("https://evil.example/x".to_owned(), StaticRoute::Echo),
        ]);
        let http = Arc::new(StaticHttpClient::new(routes));
        let d = Dispatcher::builder("t", Arc::new(policy), Arc::new(InMemoryProjectFiles::new()))
            .http(http.clone())
            .build();
        let req = HostRequest::parse("http.get", json!({"url":"https://ok.example/go"})).unwrap();
        let err = block_on(d.handle(&req, &Id::Number(1), &NoEvents)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::AccessDenied);
        assert!(err.to_string().contains("evil.example"), "{err}");
        assert_eq!(http.requests().len(), 1, "the redirect target was never contacted");
    }

    #[test]
    fn an_answer_that_cannot_be_scrubbed_is_withheld_not_sent_unscrubbed() {
        // The secret spans JSON syntax (`"size` is how every fs.read answer spells a key), so
        // scrubbing the text breaks it; the raw answer must not go out instead.
        let files = Arc::new(InMemoryProjectFiles::with_files([("a.txt", "hello")]).unwrap());
        let d = Dispatcher::builder("t", Arc::new(AccessPolicy::vfs_default()), files)
            .secrets(vec!["\"size".into()])
            .build();
        let req = HostRequest::parse("fs.read", json!({ "path": "a.txt" }));
        let line = block_on(d.respond(&Id::Number(1), "fs.read", req, &NoEvents));
        let text = String::from_utf8(line).unwrap();
        assert!(!text.contains("\"size"), "{text}");
        let response: Value = serde_json::from_str(&text).unwrap();
        let message = response["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("withheld"), "{message}");
    }

    #[test]
    fn typed_answers_are_scrubbed_in_every_field_that_carries_text() {
        // Binary content (base64 on the wire), a file name and text content: the typed value a
        // component gets holds no secret, and neither does the wire line built from it.
        let mut binary = vec![0xff, 0xfe];
        binary.extend_from_slice(b"key=s3cr3t-value;");
        let files = InMemoryProjectFiles::with_files([("dir/s3cr3t-value.txt", "x")]).unwrap();
        block_on(files.write(&WorkspacePath::parse("bin.dat").unwrap(), &binary)).unwrap();
        let d = Dispatcher::builder("t", Arc::new(AccessPolicy::vfs_default()), Arc::new(files))
            .secrets(vec!["s3cr3t-value".into()])
            .build();
        let ask = |method: &str, params: Value| {
            let req = HostRequest::parse(method, params).unwrap();
            block_on(d.handle(&req, &Id::Number(1), &NoEvents)).unwrap()
        };
        let HostResponse::FsRead(r) = ask("fs.read", json!({"path": "bin.dat"})) else { panic!() };
        assert_eq!(&r.content[2..], b"key=[REDACTED];");
        let HostResponse::FsListDir(l) = ask("fs.list_dir", json!({"path": "dir"})) else { panic!() };
        assert_eq!(l.entries[0].path, "[REDACTED].txt");
        let line = block_on(d.respond(
            &Id::Number(2),
            "fs.read",
            HostRequest::parse("fs.read", json!({"path": "bin.dat"})),
            &NoEvents,
        ));
        let text = String::from_utf8(line).unwrap();
        assert!(text.contains("\"encoding\":\"base64\"") && !text.contains("s3cr3t"), "{text}");
    }

    #[test]
    fn a_base_variable_the_policy_names_is_a_secret() {
        // `network.envs` naming LC_TOKEN (a base variable's name): its value is scrubbed; PATH,
        // which the policy does not name, is not a secret.
        let sb: SandboxConfig =
            toml::from_str(r#"network = { allow = ["https://api.example.com"], envs = ["LC_TOKEN"] }"#).unwrap();
        let policy = Arc::new(AccessPolicy::from_config(Some(&sb), None).unwrap());
        let env = [("LC_TOKEN", "lc-secret-1"), ("PATH", "/usr/bin")].map(|(k, v)| (k.to_owned(), v.to_owned()));
        let d = Dispatcher::builder("t", policy, Arc::new(InMemoryProjectFiles::new())).env(env.into()).build();
        assert_eq!(d.scrubber().scrub_str("a lc-secret-1 b /usr/bin"), "a [REDACTED] b /usr/bin");
    }

    #[test]
    fn a_command_line_shows_each_argument_unambiguously() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(command_line("git", &args(&["status", "-s"])), "git status -s");
        assert_eq!(command_line("rm", &args(&["a b"])), r#"rm "a b""#);
        assert_ne!(command_line("rm", &args(&["a b"])), command_line("rm", &args(&["a", "b"])));
        assert_eq!(command_line("echo", &args(&["", "x\ny\u{1b}"])), r#"echo "" "x\ny\u001b""#);
    }

    #[test]
    fn a_request_waiting_for_an_answer_ends_when_the_call_is_stopped() {
        // Nobody answers: the question stays pending until the token fires.
        struct Silent;
        impl Inquirer for Silent {
            fn ask<'a>(&'a self, _: &'a Inquiry) -> BoxFuture<'a, InquiryAnswer> {
                Box::pin(std::future::pending())
            }
        }
        use crate::cancel::{CancelReason, CancellationToken};
        use std::task::{Context, Poll, Waker};
        let sb: SandboxConfig = toml::from_str(r#"filesystem = { allow = ["src"], writable = true }"#).unwrap();
        let files = Arc::new(InMemoryProjectFiles::new());
        let d = Dispatcher::builder("t", Arc::new(AccessPolicy::from_config(Some(&sb), None).unwrap()), files.clone())
            .inquirer(Arc::new(Silent))
            .build();
        let write = HostRequest::parse("fs.write", json!({"path": "notes.md", "content": "x"})).unwrap();
        let mut cx = Context::from_waker(Waker::noop());
        for (reason, code, message) in [
            (
                CancelReason::TimedOut("past the deadline".into()),
                ErrorCode::Timeout,
                "the call ran out of time while waiting for an answer to fs.write: past the deadline",
            ),
            (CancelReason::Cancelled("Stop".into()), ErrorCode::Cancelled, "the call was cancelled: Stop"),
        ] {
            let token = CancellationToken::new();
            let mut call = std::pin::pin!(d.handle_until(&write, &Id::Number(1), &NoEvents, &token));
            assert!(call.as_mut().poll(&mut cx).is_pending(), "waits for the answer");
            token.cancel_with(reason.clone());
            let Poll::Ready(Err(e)) = call.as_mut().poll(&mut cx) else { panic!("still pending") };
            assert_eq!((e.code(), e.to_string().as_str()), (code, message));
            // Made after the call stopped: not started, and says so.
            let later = block_on(d.handle_until(&write, &Id::Number(2), &NoEvents, &token)).unwrap_err();
            assert_eq!(later.code(), code, "{later}");
        }
        let later = HostError::stopped("fs.write", CancelReason::TimedOut("late".into()), false);
        assert_eq!(later.to_string(), "the call had run out of time before fs.write was sent: late");
        assert!(files.snapshot().is_empty(), "nothing was written");
    }

    #[test]
    fn allow_all_answer_lasts_for_the_call() {
        struct Counting(Mutex<u32>);
        impl Inquirer for Counting {
            fn ask<'a>(&'a self, _: &'a Inquiry) -> BoxFuture<'a, InquiryAnswer> {
                *self.0.lock().unwrap() += 1;
                Box::pin(async { InquiryAnswer::AllowAll })
            }
        }
        let files = Arc::new(InMemoryProjectFiles::with_files([(".env", "A=1"), ("x/.env", "B=2")]).unwrap());
        let asker = Arc::new(Counting(Mutex::new(0)));
        let d = Dispatcher::builder("t", Arc::new(AccessPolicy::vfs_default()), files).inquirer(asker.clone()).build();
        for path in [".env", "x/.env"] {
            let req = HostRequest::parse("fs.read", json!({ "path": path })).unwrap();
            block_on(d.handle(&req, &Id::Number(1), &NoEvents)).unwrap();
        }
        assert_eq!(*asker.0.lock().unwrap(), 1);
    }
}
