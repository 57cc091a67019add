//! Conformance vectors: data files that hold every platform to the same answers.
//!
//! `vectors/policy/*.json` give a policy, an operation and a target, and the decision.
//! `vectors/protocol/*.json` give a file set, a policy and backends, then requests (or raw lines)
//! and the exact response each must get, plus the files afterwards. `vectors/state/*.json` give
//! scripted RFD 009 stateful tools, then agent calls and the exact reply each must get (the
//! session, the handle registry, argument parsing and the handle JSON of jp-core; see the
//! `state` module for the format); they need no backend, so every backend's run holds them too. The files are embedded at
//! build time, so the native run (`cargo test -p jp-tests`) and the wasm32 run
//! (`wasm-bindgen-test` under Node) execute byte-for-byte the same cases, and both check that
//! they ran [`VECTOR_COUNT`] of them.
//!
//! A case may give a loose `expect` instead of an exact `response` while it is written; the
//! native `bless` run (`JP_BLESS=1`) replaces it with the exact response once the loose
//! expectation holds. The committed files only hold exact responses.
//!
//! Inquiries: a group's `inquiry` answers every question at once (`allow`, `allow_all`, `deny`),
//! or is `pending`: each question then stays pending until the harness acts, and each case lists
//! what it does to the questions its requests ask, in order, in `pending` — answer `allow`,
//! `allow_all` or `deny` (`{"deny": why}`), or stop the call: `cancel` (`{"cancel": why}`) or
//! `timeout` (`{"timeout": why}`), which fire the case's [`CancellationToken`] as a host's
//! Stop button or deadline would. `asked` gives the questions the case must ask
//! (`{method, target, reason}`, checked exactly) and `http_sent` the requests
//! (`"GET https://…"`) the HTTP client must receive during the case. Each case is one call as far
//! as stopping goes (its own token); the group's "allow for the rest of this call" lasts across
//! its cases. The pending question and the request are polled together by a hand-written join
//! on one task — no runtime — so the wasm32 run does exactly what the native one does.

mod state;

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;

use event_listener::Event;
use jp_core::BoxFuture;
use jp_core::cancel::{CancelReason, CancellationToken};
use jp_core::files::{InMemoryProjectFiles, ProjectFiles};
use jp_core::host::testing::{StaticHttpClient, StaticInquirer, StaticProcessRunner, StaticRoute};
use jp_core::host::{
    BackendError, DispatchEvents, Dispatcher, HttpMethod, HttpResponse, Inquirer, Inquiry, InquiryAnswer,
    ProcessOutput, TraceEvent,
};
use jp_core::policy::{AccessConfig, AccessPolicy, Capability, Decision, SandboxConfig, WorkspacePath};
use jp_core::protocol::{Frame, Header, LineDecoder};
use serde_json::{Value, json};

/// Every vector file: (path under `vectors/`, contents).
pub const FILES: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/vector_files.rs"));

/// The number of cases in all vector files, counted at build time.
pub const VECTOR_COUNT: usize = include!(concat!(env!("OUT_DIR"), "/vector_count.rs"));

/// The outcome of a run.
#[derive(Debug, Default)]
pub struct Report {
    /// Cases run per area (`policy/filesystem`, `protocol/fs.read`, …).
    pub areas: BTreeMap<String, usize>,
    /// Cases run in total.
    pub ran: usize,
    /// One line per failed case.
    pub failures: Vec<String>,
    /// Cases whose exact response was filled in (bless mode only): file → new document.
    pub blessed: BTreeMap<String, Value>,
}

impl Report {
    /// A table of cases per area.
    pub fn table(&self) -> String {
        let mut out = String::new();
        for (area, n) in &self.areas {
            out.push_str(&format!("{area:<32} {n:>4}\n"));
        }
        out.push_str(&format!("{:<32} {:>4}\n", "total", self.ran));
        out
    }
}

/// A project backend the protocol vectors run against, with a way to read back its files.
/// Asynchronous, because some backends (IndexedDB) are.
pub trait Backend {
    /// A project holding `files` (path → bytes) and the empty directories `dirs`.
    fn create(&self, files: Vec<(String, Vec<u8>)>, dirs: Vec<String>) -> BoxFuture<'_, Result<Project, String>>;
}

/// Every file of a project and its content.
pub type Snapshot = BTreeMap<String, Vec<u8>>;

/// A project made by a [`Backend`].
pub struct Project {
    /// The files, as the dispatcher sees them.
    pub files: Arc<dyn ProjectFiles>,
    /// Every file and its content, read back from the backend.
    pub snapshot: Box<dyn Fn() -> BoxFuture<'static, Snapshot>>,
}

/// The in-memory backend of jp-core.
pub struct InMemory;

impl Backend for InMemory {
    fn create(&self, files: Vec<(String, Vec<u8>)>, dirs: Vec<String>) -> BoxFuture<'_, Result<Project, String>> {
        Box::pin(async move {
            let project = Arc::new(InMemoryProjectFiles::with_files(files).map_err(|e| e.to_string())?);
            for d in dirs {
                let p = WorkspacePath::parse(&d).map_err(|e| e.to_string())?;
                project.create_dir(&p).map_err(|e| e.to_string())?;
            }
            let snap = project.clone();
            Ok(Project {
                files: project,
                snapshot: Box::new(move || {
                    let files = snap.snapshot();
                    Box::pin(async move { files })
                }),
            })
        })
    }
}

/// Run every vector against the in-memory backend. With `bless`, loose `expect` cases that hold
/// get their exact `response` written into [`Report::blessed`].
pub async fn run_all(bless: bool) -> Report {
    run_all_with(bless, &InMemory).await
}

/// Run every vector, the protocol ones against `backend`.
pub async fn run_all_with(bless: bool, backend: &dyn Backend) -> Report {
    let mut report = Report::default();
    for (file, text) in FILES {
        let mut doc: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                report.failures.push(format!("{file}: invalid JSON: {e}"));
                continue;
            }
        };
        let area = format!("{}/{}", file.split('/').next().unwrap_or(""), doc["area"].as_str().unwrap_or(file));
        let mut changed = false;
        let groups = doc["groups"].as_array_mut().map(std::mem::take).unwrap_or_default();
        let mut new_groups = Vec::new();
        for mut group in groups {
            let name = group["name"].as_str().unwrap_or("?").to_owned();
            let result = if file.starts_with("policy/") {
                run_policy_group(&group).map(|_| None)
            } else if file.starts_with("state/") {
                state::run_group(&group).await.map(|_| None)
            } else {
                run_protocol_group(&mut group, bless, backend).await
            };
            let n = group["cases"].as_array().map_or(0, Vec::len);
            *report.areas.entry(area.clone()).or_default() += n;
            report.ran += n;
            match result {
                Ok(Some(())) => changed = true,
                Ok(None) => {}
                Err(errors) => report.failures.extend(errors.into_iter().map(|e| format!("{file} [{name}] {e}"))),
            }
            new_groups.push(group);
        }
        doc["groups"] = Value::Array(new_groups);
        if changed {
            report.blessed.insert((*file).to_owned(), doc);
        }
    }
    report
}

fn build_policy(spec: &Value, home: &Value) -> Result<AccessPolicy, String> {
    let mut policy = match spec.get("default").and_then(Value::as_str) {
        Some("stdio") => AccessPolicy::stdio_default(),
        Some("allow_all") => AccessPolicy::allow_all(),
        Some(other) => return Err(format!("unknown default policy {other:?}")),
        None => {
            let sandbox: Option<SandboxConfig> = match spec.get("sandbox") {
                Some(v) => Some(serde_json::from_value(v.clone()).map_err(|e| format!("sandbox: {e}"))?),
                None => None,
            };
            let access: Option<AccessConfig> = match spec.get("access") {
                Some(v) => Some(serde_json::from_value(v.clone()).map_err(|e| format!("access: {e}"))?),
                None => None,
            };
            AccessPolicy::from_config(sandbox.as_ref(), access.as_ref()).map_err(|e| format!("compile error: {e}"))?
        }
    };
    if let (Some(ws), Some(h)) = (home["workspace"].as_str(), home["home"].as_str()) {
        policy.set_home(ws, h);
    }
    Ok(policy)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

fn run_policy_group(group: &Value) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    let policy_spec = group.get("policy").cloned().unwrap_or(json!({}));
    let policy = match build_policy(&policy_spec, group.get("home").unwrap_or(&Value::Null)) {
        Ok(p) => p,
        Err(e) => return Err(vec![e]),
    };
    // A group with a `ceiling`: the policy bounded by it (issue 24), or the rights it refused.
    let (policy, refused) = match group.get("ceiling") {
        None => (policy, None),
        Some(spec) => match build_policy(spec, &Value::Null) {
            Err(e) => return Err(vec![format!("ceiling: {e}")]),
            Ok(ceiling) => match policy.clone().within(ceiling) {
                Ok(bounded) => (bounded, None),
                Err(refused) => (policy, Some(refused)),
            },
        },
    };
    for (i, case) in group["cases"].as_array().into_iter().flatten().enumerate() {
        let op = case["op"].as_str().unwrap_or("");
        let target = case["target"].as_str().unwrap_or("");
        let label = format!("case {i} ({op} {target:?})");
        if op == "compile" {
            let want_key = case["key"].as_str().unwrap_or("");
            let want = case["contains"].as_str().unwrap_or("");
            match build_policy(&case["policy"], &Value::Null) {
                Ok(_) => errors.push(format!("{label}: expected a compile error at {want_key}, got a policy")),
                Err(e) if !e.contains(want_key) || !e.contains(want) => {
                    errors.push(format!("{label}: compile error {e:?} lacks key {want_key:?} or {want:?}"))
                }
                Err(_) => {}
            }
            continue;
        }
        if op == "within" {
            // `expect`: "accepted", or "refused" with every right in `refused` named.
            let want = case["expect"].as_str().unwrap_or("?");
            match (&refused, want) {
                (None, "accepted") => {}
                (Some(r), "refused") => {
                    let wanted = strings(&case["refused"]);
                    if r.len() != wanted.len() || wanted.iter().any(|w| !r.iter().any(|got| got == w)) {
                        errors.push(format!("{label}: refused {r:?}, expected exactly {wanted:?}"));
                    }
                }
                (got, _) => errors.push(format!("{label}: expected {want}, got {got:?}")),
            }
            continue;
        }
        if refused.is_some() {
            errors.push(format!("{label}: the policy was refused by its ceiling: {refused:?}"));
            continue;
        }
        if op == "normalize" {
            let got = match WorkspacePath::parse(target) {
                Ok(p) => json!({ "path": p.as_str() }),
                Err(e) => json!({ "error": e.to_string() }),
            };
            let ok = match (&case["expect"], &got) {
                (Value::String(want), _) => got["path"] == *want,
                (Value::Object(want), _) => want
                    .get("error")
                    .and_then(Value::as_str)
                    .is_some_and(|w| got["error"].as_str().is_some_and(|g| g.contains(w))),
                _ => false,
            };
            if !ok {
                errors.push(format!("{label}: expected {}, got {got}", case["expect"]));
            }
            continue;
        }
        let decision = match op {
            "http" => {
                // `method` (default GET) and `headers` ({name: value}, as the tool wrote them).
                let headers: Vec<(String, String)> = case["headers"]
                    .as_object()
                    .map(|h| h.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_owned())).collect())
                    .unwrap_or_default();
                let method = case["method"].as_str().unwrap_or("GET");
                policy.check_request(&jp_core::policy::HttpCheck { method, url: target, headers: &headers })
            }
            "connect" => {
                // `target` is `host:port` (an IPv6 host in brackets).
                let (host, port) = target.rsplit_once(':').unwrap_or((target, "0"));
                policy.check_connect(host, port.parse().unwrap_or(0))
            }
            // `target` is the variable; `url` where the request goes (none: a URL of no origin).
            "header_env" => policy.check_header_env_for(target, case["url"].as_str().unwrap_or("")),
            "env" => policy.check_env(target),
            "process" => policy.check_process(
                case["program"].as_str().unwrap_or(""),
                &strings(&case["args"]),
                &strings(&case["envs"]),
            ),
            cap => match Capability::from_name(cap) {
                Some(cap) => policy.check_fs_str(cap, target),
                None => {
                    errors.push(format!("{label}: unknown op"));
                    continue;
                }
            },
        };
        check_decision(&label, &decision, case, &mut errors);
    }
    if errors.is_empty() { Ok(()) } else { Err(errors) }
}

fn check_decision(label: &str, decision: &Decision, case: &Value, errors: &mut Vec<String>) {
    let want = case["expect"].as_str().unwrap_or("?");
    if decision.kind() != want {
        errors.push(format!("{label}: expected {want}, got {} ({})", decision.kind(), decision.reason()));
    }
    if let Some(needle) = case["reason"].as_str()
        && !decision.reason().contains(needle)
    {
        errors.push(format!("{label}: reason {:?} lacks {needle:?}", decision.reason()));
    }
}

#[derive(Default)]
struct Recorder(Mutex<Vec<TraceEvent>>);

impl DispatchEvents for Recorder {
    fn decided(&self, event: &TraceEvent) {
        if let Ok(mut v) = self.0.lock() {
            v.push(event.clone());
        }
    }
}

fn file_bytes(v: &Value) -> Result<Vec<u8>, String> {
    match v {
        Value::String(s) => Ok(s.as_bytes().to_vec()),
        Value::Object(o) => {
            let b64 = o.get("base64").and_then(Value::as_str).ok_or("file object needs \"base64\"")?;
            jp_core::protocol::decode_content(b64, Some(jp_core::protocol::Encoding::Base64))
        }
        _ => Err("file content must be a string or {\"base64\":…}".into()),
    }
}

/// A backend failure as written in a vector: `{"error": "timeout", "message": "…"}`.
fn backend_error(kind: &Value, message: &Value) -> Result<BackendError, String> {
    let m = message.as_str().unwrap_or("").to_owned();
    Ok(match kind.as_str() {
        Some("timeout") => BackendError::Timeout(m),
        Some("cancelled") => BackendError::Cancelled(m),
        Some("not_found") => BackendError::NotFound(m),
        Some("too_large") => BackendError::TooLarge(m),
        Some("failed") => BackendError::Failed(m),
        Some("unavailable") => BackendError::Unavailable(m),
        other => return Err(format!("unknown backend error {other:?}")),
    })
}

/// An inquirer whose questions stay pending until the harness answers them ([`Self::answer`]):
/// the async path of a host whose user takes their time, or never answers.
#[derive(Default)]
struct PendingInquirer {
    state: Mutex<Questions>,
    /// Notified when a question is asked and when one is answered.
    changed: Event,
}

#[derive(Default)]
struct Questions {
    asked: Vec<Inquiry>,
    /// The answer to each question of `asked`, until its asker takes it.
    answers: Vec<Option<InquiryAnswer>>,
}

impl PendingInquirer {
    fn asked(&self) -> Vec<Inquiry> {
        self.state.lock().map(|s| s.asked.clone()).unwrap_or_default()
    }

    fn answer(&self, index: usize, answer: InquiryAnswer) {
        if let Ok(mut s) = self.state.lock()
            && let Some(slot) = s.answers.get_mut(index)
        {
            *slot = Some(answer);
        }
        self.changed.notify(usize::MAX);
    }

    fn take(&self, index: usize) -> Option<InquiryAnswer> {
        self.state.lock().ok()?.answers.get_mut(index)?.take()
    }

    /// Completes once more than `n` questions were asked.
    async fn asked_more_than(&self, n: usize) {
        loop {
            let more = || self.state.lock().is_ok_and(|s| s.asked.len() > n);
            if more() {
                return;
            }
            let listener = self.changed.listen();
            if more() {
                return;
            }
            listener.await;
        }
    }
}

impl Inquirer for PendingInquirer {
    fn ask<'a>(&'a self, inquiry: &'a Inquiry) -> BoxFuture<'a, InquiryAnswer> {
        Box::pin(async move {
            let index = match self.state.lock() {
                Ok(mut s) => {
                    s.asked.push(inquiry.clone());
                    s.answers.push(None);
                    s.asked.len() - 1
                }
                Err(_) => return InquiryAnswer::Deny("the harness's inquirer is poisoned".into()),
            };
            self.changed.notify(usize::MAX);
            loop {
                if let Some(answer) = self.take(index) {
                    return answer;
                }
                let listener = self.changed.listen();
                if let Some(answer) = self.take(index) {
                    return answer;
                }
                listener.await;
            }
        })
    }
}

/// What the harness does to one pending question (a case's `pending`).
#[derive(Debug, Clone)]
enum Act {
    Answer(InquiryAnswer),
    Stop(CancelReason),
}

fn acts(v: &Value) -> Result<VecDeque<Act>, String> {
    let mut out = VecDeque::new();
    for act in v.as_array().into_iter().flatten() {
        let (kind, why) = match act {
            Value::String(s) => (s.as_str(), None),
            Value::Object(o) if o.len() == 1 => {
                let (k, v) = o.iter().next().expect("one entry");
                (k.as_str(), Some(v.as_str().ok_or_else(|| format!("pending: {act}: the reason must be a string"))?))
            }
            _ => return Err(format!("pending: {act} is not an action")),
        };
        let why = |default: &str| why.unwrap_or(default).to_owned();
        out.push_back(match kind {
            "allow" => Act::Answer(InquiryAnswer::Allow),
            "allow_all" => Act::Answer(InquiryAnswer::AllowAll),
            "deny" => Act::Answer(InquiryAnswer::Deny(why("the user said no"))),
            "cancel" => Act::Stop(CancelReason::Cancelled(why("the user stopped the call"))),
            "timeout" => Act::Stop(CancelReason::TimedOut(why(
                "tool 'vector_tool' ran past its deadline of 1000 ms and was stopped; nothing it did was written",
            ))),
            other => return Err(format!("pending: unknown action {other:?}")),
        });
    }
    Ok(out)
}

/// The harness's side of a case with pending questions: it acts on each question as it is asked.
struct Acting<'a> {
    inquirer: &'a PendingInquirer,
    token: &'a CancellationToken,
    acts: VecDeque<Act>,
    /// The index of the next question to act on.
    next: usize,
    /// Questions the case did not expect (answered "deny" so that the request ends).
    unexpected: usize,
}

impl Acting<'_> {
    /// Act on every question as it comes; never completes (the request does).
    async fn run(&mut self) {
        loop {
            self.inquirer.asked_more_than(self.next).await;
            match self.acts.pop_front() {
                Some(Act::Answer(answer)) => self.inquirer.answer(self.next, answer),
                Some(Act::Stop(reason)) => self.token.cancel_with(reason),
                None => {
                    self.unexpected += 1;
                    self.inquirer
                        .answer(self.next, InquiryAnswer::Deny("the vector gives no answer to this question".into()));
                }
            }
            self.next += 1;
        }
    }
}

/// Poll `request` and the harness `acting` on one task until the request is answered.
async fn until_answered<T>(request: impl Future<Output = T>, acting: impl Future<Output = ()>) -> T {
    let mut request = pin!(request);
    let mut acting = pin!(acting);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(v) = request.as_mut().poll(cx) {
            return Poll::Ready(v);
        }
        // Acting wakes the request (an answer, the token), so it is polled again.
        let _ = acting.as_mut().poll(cx);
        Poll::Pending
    })
    .await
}

/// A group's dispatcher and what the harness keeps to drive and check it.
struct Setup {
    dispatcher: Dispatcher,
    project: Project,
    http: Arc<StaticHttpClient>,
    /// With `"inquiry": "pending"`.
    pending: Option<Arc<PendingInquirer>>,
}

async fn build_dispatcher(group: &Value, backend: &dyn Backend) -> Result<Setup, String> {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    for (path, content) in group["files"].as_object().into_iter().flatten() {
        if content.is_null() {
            dirs.push(path.clone());
        } else {
            files.push((path.clone(), file_bytes(content)?));
        }
    }
    let project = backend.create(files, dirs).await?;
    let policy = build_policy(group.get("policy").unwrap_or(&json!({})), group.get("home").unwrap_or(&Value::Null))?;
    let mut routes = BTreeMap::new();
    for (url, spec) in group["http"].as_object().into_iter().flatten() {
        let route = if spec == "echo" {
            StaticRoute::Echo
        } else if let Some(kind) = spec.get("error") {
            StaticRoute::Fail(backend_error(kind, &spec["message"])?)
        } else {
            let headers = spec["headers"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|h| Header {
                    name: h["name"].as_str().unwrap_or("").into(),
                    value: h["value"].as_str().unwrap_or("").into(),
                })
                .collect();
            StaticRoute::Respond(HttpResponse {
                status: spec["status"].as_u64().unwrap_or(200) as u16,
                headers,
                body: file_bytes(spec.get("body").unwrap_or(&json!("")))?,
            })
        };
        routes.insert(url.clone(), route);
    }
    let mut programs = BTreeMap::new();
    for (program, spec) in group["processes"].as_object().into_iter().flatten() {
        let outcome = match spec.get("error") {
            Some(kind) => Err(backend_error(kind, &spec["message"])?),
            None => Ok(ProcessOutput {
                stdout: spec["stdout"].as_str().unwrap_or("").as_bytes().to_vec(),
                stderr: spec["stderr"].as_str().unwrap_or("").as_bytes().to_vec(),
                exit_code: spec["exit_code"].as_i64().map(|c| c as i32),
            }),
        };
        programs.insert(program.clone(), outcome);
    }
    let env: BTreeMap<String, String> = group["env"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_owned()))
        .collect();
    let http = Arc::new(StaticHttpClient::new(routes));
    let mut builder =
        Dispatcher::builder("vector_tool", Arc::new(policy), project.files.clone()).http(http.clone()).env(env);
    if group.get("processes").is_some() {
        // On wasm32 (single-threaded) the runner is not Send: the requests it logs carry an
        // egress gate whose inquirer need not be.
        #[allow(clippy::arc_with_non_send_sync, reason = "wasm32 is single-threaded")]
        let runner = Arc::new(StaticProcessRunner::new(programs));
        builder = builder.process(runner);
    }
    let mut pending = None;
    match group["inquiry"].as_str() {
        Some("allow") => builder = builder.inquirer(Arc::new(StaticInquirer(InquiryAnswer::Allow))),
        Some("allow_all") => builder = builder.inquirer(Arc::new(StaticInquirer(InquiryAnswer::AllowAll))),
        Some("deny") => {
            builder = builder.inquirer(Arc::new(StaticInquirer(InquiryAnswer::Deny("the user said no".into()))))
        }
        Some("pending") => {
            let inquirer = Arc::new(PendingInquirer::default());
            builder = builder.inquirer(inquirer.clone());
            pending = Some(inquirer);
        }
        Some(other) => return Err(format!("unknown inquiry {other:?}")),
        None => {}
    }
    if let Some(n) = group["max_content"].as_u64() {
        builder = builder.max_content(n as usize);
    }
    if let Some(n) = group["max_line"].as_u64() {
        builder = builder.max_line(n as usize);
    }
    Ok(Setup { dispatcher: builder.build(), project, http, pending })
}

/// Loose expectation used while writing a case: `{"code": -32001, "contains": "…"}` for an
/// error, `{"result_contains": {…}}` for a result whose given fields must match.
fn loose_holds(expect: &Value, responses: &[Value]) -> Result<(), String> {
    let Some(resp) = responses.first() else { return Err("no response".into()) };
    if let Some(code) = expect.get("code") {
        if resp["error"]["code"] != *code {
            return Err(format!("expected code {code}, got {resp}"));
        }
        if let Some(needle) = expect["contains"].as_str()
            && !resp["error"]["message"].as_str().unwrap_or("").contains(needle)
        {
            return Err(format!("message lacks {needle:?}: {resp}"));
        }
        return Ok(());
    }
    if let Some(fields) = expect["result_contains"].as_object() {
        for (k, v) in fields {
            if resp["result"][k] != *v {
                return Err(format!("result.{k}: expected {v}, got {resp}"));
            }
        }
        return Ok(());
    }
    Err(format!("unknown expectation {expect}"))
}

async fn run_protocol_group(group: &mut Value, bless: bool, backend: &dyn Backend) -> Result<Option<()>, Vec<String>> {
    let Setup { dispatcher, project, http, pending } =
        build_dispatcher(group, backend).await.map_err(|e| vec![format!("setup: {e}")])?;
    let max_line = group["max_line"].as_u64().map_or(jp_core::protocol::DEFAULT_MAX_LINE, |n| n as usize);
    let mut errors = Vec::new();
    let mut blessed = false;
    let cases = group["cases"].as_array_mut().map(std::mem::take).unwrap_or_default();
    let mut new_cases = Vec::new();
    for (i, mut case) in cases.into_iter().enumerate() {
        let label = format!("case {i} ({})", case["name"].as_str().unwrap_or(""));
        let raw: Vec<u8> = match (&case["request"], &case["raw"]) {
            (Value::Object(_), _) => {
                let mut line = serde_json::to_vec(&case["request"]).unwrap_or_default();
                line.push(b'\n');
                line
            }
            (_, Value::String(s)) => s.as_bytes().to_vec(),
            _ => {
                errors.push(format!("{label}: needs \"request\" or \"raw\""));
                new_cases.push(case);
                continue;
            }
        };
        let recorder = Recorder::default();
        let mut decoder = LineDecoder::new(max_line);
        let mut frames: Vec<Frame> = decoder.push(&raw);
        frames.extend(decoder.finish());
        let script = match (acts(&case["pending"]), &pending) {
            (Err(e), _) => {
                errors.push(format!("{label}: {e}"));
                new_cases.push(case);
                continue;
            }
            (Ok(script), None) if !script.is_empty() => {
                errors.push(format!("{label}: \"pending\" needs the group's \"inquiry\": \"pending\""));
                new_cases.push(case);
                continue;
            }
            (Ok(script), _) => script,
        };
        let asked_before = pending.as_ref().map_or(0, |p| p.asked().len());
        let sent_before = http.requests().len();
        let token = CancellationToken::new();
        let mut acting = pending.as_deref().map(|inquirer| Acting {
            inquirer,
            token: &token,
            acts: script,
            next: asked_before,
            unexpected: 0,
        });
        let mut responses = Vec::new();
        for frame in &frames {
            let serve = dispatcher.handle_frame_until(frame, &recorder, &token);
            let line = match acting.as_mut() {
                Some(acting) => until_answered(serve, acting.run()).await,
                None => serve.await,
            };
            if let Some(line) = line {
                match serde_json::from_slice::<Value>(&line) {
                    Ok(v) => responses.push(v),
                    Err(e) => errors.push(format!("{label}: response is not JSON: {e}")),
                }
            }
        }
        if let Some(acting) = &acting {
            if acting.unexpected > 0 {
                errors
                    .push(format!("{label}: {} question(s) asked that \"pending\" does not answer", acting.unexpected));
            }
            if !acting.acts.is_empty() {
                errors.push(format!(
                    "{label}: {} action(s) of \"pending\" left for questions never asked",
                    acting.acts.len()
                ));
            }
        }
        if let Some(inquirer) = &pending {
            let asked: Vec<Value> = inquirer.asked()[asked_before..]
                .iter()
                .map(|q| json!({ "method": q.method, "target": q.target, "reason": q.reason }))
                .collect();
            let want = case.get("asked").cloned().unwrap_or(json!([]));
            if want != Value::Array(asked.clone()) {
                errors.push(format!("{label}: asked {want}, got {}", Value::Array(asked)));
            }
        }
        if let Some(want) = case.get("http_sent") {
            let sent: Vec<Value> = http.requests()[sent_before..]
                .iter()
                .map(|r| {
                    let method = match r.method {
                        HttpMethod::Get => "GET",
                        HttpMethod::Post => "POST",
                    };
                    json!(format!("{method} {}", r.url))
                })
                .collect();
            if *want != Value::Array(sent.clone()) {
                errors.push(format!("{label}: http_sent {want}, got {}", Value::Array(sent)));
            }
        }
        let got = Value::Array(responses.clone());
        if let Some(expect) = case.get("expect").cloned() {
            match loose_holds(&expect, &responses) {
                Ok(()) if bless => {
                    let obj = case.as_object_mut().expect("case is an object");
                    obj.remove("expect");
                    obj.insert("responses".into(), got.clone());
                    blessed = true;
                }
                Ok(()) => {
                    errors.push(format!("{label}: has a loose expectation; run with JP_BLESS=1 to make it exact"))
                }
                Err(e) => errors.push(format!("{label}: {e}")),
            }
        } else if case["responses"] != got {
            errors.push(format!("{label}: expected {}, got {got}", case["responses"]));
        }
        if let Some(kinds) = case.get("decisions") {
            let seen: Vec<Value> =
                recorder.0.lock().map(|v| v.iter().map(|e| json!(e.decision)).collect()).unwrap_or_default();
            if *kinds != Value::Array(seen.clone()) {
                errors.push(format!("{label}: decisions {kinds}, got {seen:?}"));
            }
        }
        let snapshot = (project.snapshot)().await;
        for (path, want) in case["files_after"].as_object().into_iter().flatten() {
            let have = snapshot.get(path);
            let ok = match (want, have) {
                (Value::Null, None) => true,
                (Value::Null, Some(_)) | (_, None) => false,
                (want, Some(have)) => file_bytes(want).is_ok_and(|w| &w == have),
            };
            if !ok {
                errors.push(format!(
                    "{label}: file {path}: expected {want}, have {:?}",
                    have.map(|h| String::from_utf8_lossy(h).into_owned())
                ));
            }
        }
        new_cases.push(case);
    }
    group["cases"] = Value::Array(new_cases);
    if errors.is_empty() { Ok(blessed.then_some(())) } else { Err(errors) }
}
