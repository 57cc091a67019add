//! `vectors/state/*.json`: the platform-neutral RFD 009 layer of jp-core — how tool arguments
//! parse into a [`ToolCommand`], what an assistant sees for a [`ToolState`], and what a
//! [`HandleSession`] (through [`HandleOwners`]) answers to each call of a scripted stateful tool.
//!
//! A group configures its scripted tools and the session, and its cases run in order, each
//! against what the earlier ones left:
//!
//! - `tools`: `{name: {"actions": ["spawn", "fetch", …], "live": bool, "script": [state, …]}}`.
//!   A tool with no `actions` is one-shot. A `live` tool (the default) keeps an instance per
//!   handle: its `spawn` answers the script's first entry, each `fetch` or `apply` on it the
//!   next one (every instance starts the script afresh; `abort` takes none). Any other tool is
//!   run once per call (a one-shot run, or a stateful tool run again with its answers): each
//!   run takes the tool's next script entry, counted across all its runs. An entry is a tool
//!   state as a tool writes it (`{"type":"running","content":"…"}`, `waiting` with a
//!   `question`, `stopped` with `result` or `error`, or the legacy `success`/`error`/
//!   `needs_input`), or `{"fail": "why"}`: the command fails (a spawn or run cannot start, a
//!   command's tool error). A script that runs out fails the same way.
//! - `limits`: `{"max_handles": n, "max_idle": seconds}` per owner; `max_owners` (default 4).
//! - `answers`: `{question id: answer}` — what the answerer says to a question of a call run
//!   to its end (without: nobody answers).
//!
//! Cases:
//!
//! - `{"call": tool, "args": {…}, "owner": "a", "at": seconds}` — one agent call by `owner`
//!   (default `"a"`) with the clock set to `at` (default: unchanged, starting at 0). Exactly
//!   one of: `reply` — the RFD 009 handle JSON ([`ToolState::to_handle_response`]); `result` —
//!   the MCP `CallToolResult` JSON of a call run to its end; `error` — the error text, exactly.
//! - `{"end": owner}` — the owner's session ends (end of turn: every handle aborted).
//! - `{"parse": {…}, "command": …}` — [`ToolCommand::from_arguments`]: `null` (one-shot),
//!   `{"spawn": args}`, `{"fetch": id}`, `{"apply": {"id", "input"}}`, `{"abort": id}`, or
//!   `{"error": text}`.
//! - `{"state": {…}, "id": "h_1", "reply": {…}}` — a tool's state as written, as the assistant
//!   sees it (or `"error"`: the text of why it does not parse).
//!
//! Every call or end case may give `saw`, what the scripted tools saw during it, exactly and in
//! order (omitted: nothing): `#n spawn ARGS` (the n-th live instance of the group),
//! `#n fetch`, `#n data INPUT`, `#n answer QUESTION=ANSWER` (how the session routed `apply`),
//! `#n abort`, `run TOOL ARGS answers=ANSWERS` (a run), `ask QUESTION` (the answerer was
//! asked); and `live`, the ids the owner's session holds afterwards.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use jp_core::BoxFuture;
use jp_core::agent::surface::{CallReply, outcome_result, to_mcp};
use jp_core::handles::{AnyToolHandle, ApplyInput, HandleOwners, SessionLimits, StatefulTools};
use jp_core::runtime::call::Answerer;
use jp_core::runtime::{ExecutionOutcome, RuntimeError, SpawnResult, ToolCall};
use jp_core::schema::StatefulAction;
use jp_core::state::{Question, ToolCommand, ToolError, ToolResult, ToolState};
use serde_json::{Map, Value, json};

type Log = Arc<Mutex<Vec<String>>>;

/// `v` as JSON text with every object's keys sorted, whichever map serde_json was built with.
fn canonical(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let by_key: BTreeMap<&String, Value> = m.iter().map(|(k, v)| (k, sorted(v))).collect();
                Value::Object(by_key.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

fn push(log: &Log, event: String) {
    log.lock().unwrap_or_else(PoisonError::into_inner).push(event);
}

struct ToolSpec {
    actions: Vec<StatefulAction>,
    live: bool,
    script: Vec<Value>,
}

/// The group's tools, its clock and what they saw.
struct Scripted {
    tools: BTreeMap<String, ToolSpec>,
    now: Mutex<Duration>,
    log: Log,
    instances: Mutex<usize>,
    /// The next script entry of each tool's runs.
    runs: Mutex<BTreeMap<String, usize>>,
}

/// A script entry as the state it gives, or why the command fails.
fn entry(script: &[Value], at: usize) -> Result<ToolState, String> {
    let Some(v) = script.get(at) else { return Err(format!("the script has no entry {at}")) };
    if let Some(why) = v.get("fail") {
        return Err(why.as_str().unwrap_or("failed").to_owned());
    }
    serde_json::from_value(v.clone()).map_err(|e| format!("script entry {at}: {e}"))
}

/// A live instance of a scripted tool.
struct Instance {
    n: usize,
    script: Vec<Value>,
    next: usize,
    log: Log,
}

impl Instance {
    fn step(&mut self) -> Result<ToolState, ToolError> {
        let state = entry(&self.script, self.next).map_err(ToolError::new);
        self.next += 1;
        state
    }
}

impl AnyToolHandle for Instance {
    fn fetch(&mut self) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        Box::pin(async move {
            push(&self.log, format!("#{} fetch", self.n));
            self.step()
        })
    }
    fn apply(&mut self, input: ApplyInput) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        Box::pin(async move {
            let seen = match input {
                ApplyInput::Data(v) => format!("#{} data {}", self.n, canonical(&v)),
                ApplyInput::Answer { question_id, value } => {
                    format!("#{} answer {question_id}={}", self.n, canonical(&value))
                }
            };
            push(&self.log, seen);
            self.step()
        })
    }
    fn abort(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move { push(&self.log, format!("#{} abort", self.n)) })
    }
}

impl Scripted {
    fn spec(&self, tool: &str) -> Option<&ToolSpec> {
        self.tools.get(tool)
    }
}

impl StatefulTools for Scripted {
    fn actions(&self, tool: &str) -> Vec<StatefulAction> {
        self.spec(tool).map(|s| s.actions.clone()).unwrap_or_default()
    }
    fn live(&self, tool: &str) -> bool {
        self.spec(tool).is_some_and(|s| s.live)
    }
    fn spawn(&self, call: ToolCall) -> BoxFuture<'_, SpawnResult> {
        Box::pin(async move {
            let n = {
                let mut i = self.instances.lock().unwrap_or_else(PoisonError::into_inner);
                *i += 1;
                *i
            };
            push(&self.log, format!("#{n} spawn {}", canonical(&Value::Object(call.arguments.clone()))));
            let script = self.spec(&call.name).map(|s| s.script.clone()).unwrap_or_default();
            let state =
                entry(&script, 0).map_err(|message| RuntimeError::Spawn { tool: call.name.clone(), message })?;
            let handle = (!state.is_stopped())
                .then(|| Box::new(Instance { n, script, next: 1, log: self.log.clone() }) as Box<dyn AnyToolHandle>);
            Ok((state, handle))
        })
    }
    fn call(&self, call: ToolCall) -> BoxFuture<'_, Result<ExecutionOutcome, RuntimeError>> {
        Box::pin(async move {
            push(
                &self.log,
                format!(
                    "run {} {} answers={}",
                    call.name,
                    canonical(&Value::Object(call.arguments.clone())),
                    canonical(&Value::Object(call.answers.clone()))
                ),
            );
            let at = {
                let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
                let next = runs.entry(call.name.clone()).or_default();
                *next += 1;
                *next - 1
            };
            let script = self.spec(&call.name).map(|s| s.script.as_slice()).unwrap_or_default();
            let failed = |message| RuntimeError::Spawn { tool: call.name.clone(), message };
            Ok(match entry(script, at).map_err(failed)? {
                ToolState::Stopped { result } => {
                    ExecutionOutcome::Completed { id: call.id, result: result.map(ToolResult::text) }
                }
                ToolState::Waiting { question, .. } => ExecutionOutcome::NeedsInput { id: call.id, question },
                ToolState::Running { .. } => return Err(failed(format!("script entry {at}: a run cannot be running"))),
            })
        })
    }
    fn timeout(&self, _: &str) -> Duration {
        Duration::from_secs(60)
    }
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        // The pauses between fetches pass at once; a deadline never comes.
        if duration < Duration::from_secs(1) {
            Box::pin(std::future::ready(()))
        } else {
            Box::pin(std::future::pending())
        }
    }
    fn now(&self) -> Duration {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Answers from the group's `answers`, by question id.
struct ScriptedAnswerer {
    answers: Map<String, Value>,
    log: Log,
}

impl Answerer for ScriptedAnswerer {
    fn answer<'a>(&'a self, _: &'a str, question: &'a Question) -> BoxFuture<'a, Option<Value>> {
        Box::pin(async move {
            push(&self.log, format!("ask {}", question.id));
            self.answers.get(&question.id).cloned()
        })
    }
}

fn action(name: &str) -> Result<StatefulAction, String> {
    StatefulAction::ALL.into_iter().find(|a| a.name() == name).ok_or_else(|| format!("unknown action {name:?}"))
}

fn tools_of(group: &Value, log: &Log) -> Result<Scripted, String> {
    let mut tools = BTreeMap::new();
    for (name, spec) in group["tools"].as_object().into_iter().flatten() {
        let actions = spec["actions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| action(a.as_str().unwrap_or("")))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("tool {name}: {e}"))?;
        let live = spec.get("live").and_then(Value::as_bool).unwrap_or(true);
        let script = spec["script"].as_array().cloned().unwrap_or_default();
        tools.insert(name.clone(), ToolSpec { actions, live, script });
    }
    Ok(Scripted {
        tools,
        now: Mutex::new(Duration::ZERO),
        log: log.clone(),
        instances: Mutex::new(0),
        runs: Mutex::new(BTreeMap::new()),
    })
}

/// The parsed command as a vector writes it.
fn command_json(parsed: Result<Option<ToolCommand>, String>) -> Value {
    match parsed {
        Err(e) => json!({ "error": e }),
        Ok(None) => Value::Null,
        Ok(Some(ToolCommand::Spawn { args })) => json!({ "spawn": args }),
        Ok(Some(ToolCommand::Fetch { id })) => json!({ "fetch": id }),
        Ok(Some(ToolCommand::Apply { id, input })) => json!({ "apply": { "id": id, "input": input } }),
        Ok(Some(ToolCommand::Abort { id })) => json!({ "abort": id }),
    }
}

/// What a call answered, keyed as a vector writes it.
fn reply_json(tool: &str, reply: Result<CallReply, RuntimeError>) -> Value {
    match reply {
        Ok(CallReply::Handle { id, state }) => json!({ "reply": state.to_handle_response(&id) }),
        Ok(CallReply::Outcome(outcome)) => json!({ "result": to_mcp(&outcome_result(tool, outcome)) }),
        Err(e) => json!({ "error": e.to_string() }),
    }
}

/// The one of `keys` the case gives, as `{key: value}`.
fn expected(case: &Value, keys: &[&str]) -> Result<Value, String> {
    let given: Vec<&&str> = keys.iter().filter(|k| case.get(**k).is_some()).collect();
    match given.as_slice() {
        [k] => Ok(json!({ (k.to_string()): case[**k] })),
        _ => Err(format!("needs exactly one of {}", keys.join(", "))),
    }
}

/// Run one group of `state/` cases.
pub(crate) async fn run_group(group: &Value) -> Result<(), Vec<String>> {
    let log: Log = Arc::default();
    let scripted = match tools_of(group, &log) {
        Ok(t) => Arc::new(t),
        Err(e) => return Err(vec![e]),
    };
    let tools: Arc<dyn StatefulTools> = scripted.clone();
    let limits = &group["limits"];
    let mut session_limits = SessionLimits::default();
    if let Some(n) = limits["max_handles"].as_u64() {
        session_limits.max_handles = n as usize;
    }
    if let Some(s) = limits["max_idle"].as_u64() {
        session_limits.max_idle = Duration::from_secs(s);
    }
    let owners = HandleOwners::new(session_limits, group["max_owners"].as_u64().unwrap_or(4) as usize);
    let answerer =
        ScriptedAnswerer { answers: group["answers"].as_object().cloned().unwrap_or_default(), log: log.clone() };
    let mut errors = Vec::new();
    for (i, case) in group["cases"].as_array().into_iter().flatten().enumerate() {
        let owner = case["owner"].as_str().or(case["end"].as_str()).unwrap_or("a");
        if let Some(at) = case["at"].as_u64() {
            *scripted.now.lock().unwrap_or_else(PoisonError::into_inner) = Duration::from_secs(at);
        }
        log.lock().unwrap_or_else(PoisonError::into_inner).clear();
        let (label, got, want) = if let Some(args) = case.get("parse") {
            let label = format!("case {i} (parse {args})");
            let parsed = match args.as_object() {
                Some(args) => ToolCommand::from_arguments(args).map_err(|e| e.to_string()),
                None => Err("arguments are not an object".into()),
            };
            (label, command_json(parsed), case.get("command").cloned().unwrap_or(json!("(no command given)")))
        } else if let Some(wire) = case.get("state") {
            let label = format!("case {i} (state {wire})");
            let id = case["id"].as_str().unwrap_or("h_1");
            let got = match serde_json::from_value::<ToolState>(wire.clone()) {
                Ok(state) => json!({ "reply": state.to_handle_response(id) }),
                Err(e) => json!({ "error": e.to_string() }),
            };
            match expected(case, &["reply", "error"]) {
                Ok(want) => (label, got, want),
                Err(e) => {
                    errors.push(format!("{label}: {e}"));
                    continue;
                }
            }
        } else if let Some(tool) = case["call"].as_str() {
            let args = case.get("args").cloned().unwrap_or(json!({}));
            let label = format!("case {i} ({owner}: {tool} {args})");
            let Value::Object(args) = args else {
                errors.push(format!("{label}: args must be an object"));
                continue;
            };
            let want = match expected(case, &["reply", "result", "error"]) {
                Ok(want) => want,
                Err(e) => {
                    errors.push(format!("{label}: {e}"));
                    continue;
                }
            };
            let got = match owners.session(owner, tools.now()).await {
                Ok(session) => reply_json(
                    tool,
                    session.agent_call(&tools, ToolCall::new(tool, format!("c{i}"), args), &answerer).await,
                ),
                Err(e) => json!({ "error": e.to_string() }),
            };
            (label, got, want)
        } else if let Some(ended) = case["end"].as_str() {
            let label = format!("case {i} (end {ended})");
            match owners.session(ended, tools.now()).await {
                Ok(session) => session.close().await,
                Err(e) => errors.push(format!("{label}: {e}")),
            }
            (label, Value::Null, Value::Null)
        } else {
            errors.push(format!("case {i}: needs \"call\", \"end\", \"parse\" or \"state\""));
            continue;
        };
        if got != want {
            errors.push(format!("{label}: expected {want}, got {got}"));
        }
        let saw = std::mem::take(&mut *log.lock().unwrap_or_else(PoisonError::into_inner));
        let want_saw: Vec<String> = crate::strings(&case["saw"]);
        if saw != want_saw {
            errors.push(format!("{label}: the tools saw {saw:?}, expected {want_saw:?}"));
        }
        if let Some(live) = case.get("live") {
            let ids = match owners.session(owner, tools.now()).await {
                Ok(s) => s.ids(),
                Err(e) => vec![format!("({e})")],
            };
            if crate::strings(live) != ids {
                errors.push(format!("{label}: live handles {ids:?}, expected {live}"));
            }
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(errors) }
}
