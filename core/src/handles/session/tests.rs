//! The session as every platform uses it, against scripted tools and a clock the test moves.

use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use futures_executor::block_on;
use serde_json::{Value, json};

use super::*;
use crate::runtime::call::NoAnswerer;
use crate::state::{AnswerType, Question};

/// A counter tool: `spawn` starts at `from`, each `apply` adds its number, `fetch` reports;
/// at 10 it asks whether to stop. `oneshot` is a one-shot tool that asks once.
#[derive(Default)]
struct Tools {
    now: Mutex<Duration>,
    log: Arc<Mutex<Vec<String>>>,
    spawned: Mutex<usize>,
}

struct Counter {
    n: i64,
    log: Arc<Mutex<Vec<String>>>,
}

fn question() -> Question {
    Question { id: "stop".into(), text: "Stop at 10?".into(), answer_type: AnswerType::Boolean, default: None }
}

impl Counter {
    fn state(&self) -> ToolState {
        if self.n >= 10 {
            ToolState::Waiting { content: Some(format!("{}", self.n)), question: question() }
        } else {
            ToolState::Running { content: Some(format!("{}", self.n)) }
        }
    }
}

impl AnyToolHandle for Counter {
    fn fetch(&mut self) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        Box::pin(async move { Ok(self.state()) })
    }
    fn apply(&mut self, input: ApplyInput) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        Box::pin(async move {
            match input {
                ApplyInput::Data(v) => self.n += v.as_i64().unwrap_or(0),
                ApplyInput::Answer { question_id, value } => {
                    self.log.lock().unwrap().push(format!("answer {question_id}={value}"));
                    if value == json!(true) {
                        return Ok(ToolState::Stopped { result: Ok(format!("stopped at {}", self.n)) });
                    }
                    self.n = 0;
                }
            }
            Ok(self.state())
        })
    }
    fn abort(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.log.lock().unwrap().push(format!("abort at {}", self.n)) })
    }
}

impl StatefulTools for Tools {
    fn actions(&self, tool: &str) -> Vec<StatefulAction> {
        match tool {
            "counter" | "oneshot" => {
                vec![StatefulAction::Spawn, StatefulAction::Fetch, StatefulAction::Apply, StatefulAction::Abort]
            }
            "watch" => vec![StatefulAction::Spawn, StatefulAction::Fetch],
            _ => Vec::new(),
        }
    }
    fn live(&self, tool: &str) -> bool {
        tool != "oneshot"
    }
    fn spawn(&self, call: ToolCall) -> BoxFuture<'_, SpawnResult> {
        Box::pin(async move {
            *self.spawned.lock().unwrap() += 1;
            let from = call.arguments.get("from").and_then(Value::as_i64).unwrap_or(0);
            let counter = Counter { n: from, log: self.log.clone() };
            Ok((counter.state(), Some(Box::new(counter) as Box<dyn AnyToolHandle>)))
        })
    }
    fn call(&self, call: ToolCall) -> BoxFuture<'_, Result<ExecutionOutcome, RuntimeError>> {
        Box::pin(async move {
            self.log.lock().unwrap().push(format!("call answers={}", Value::Object(call.answers.clone())));
            Ok(match call.answers.get("stop") {
                Some(v) => {
                    ExecutionOutcome::Completed { id: call.id, result: Ok(ToolResult::text(format!("answered {v}"))) }
                }
                None => ExecutionOutcome::NeedsInput { id: call.id, question: question() },
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
        *self.now.lock().unwrap()
    }
}

fn call(tool: &str, args: Value) -> ToolCall {
    let Value::Object(args) = args else { panic!("arguments are an object") };
    ToolCall::new(tool, "c1", args)
}

fn tools() -> (Arc<Tools>, Arc<dyn StatefulTools>) {
    let t = Arc::new(Tools::default());
    (t.clone(), t)
}

fn handle(reply: CallReply) -> (String, ToolState) {
    match reply {
        CallReply::Handle { id, state } => (id, state),
        CallReply::Outcome(o) => panic!("a handle was expected, got {o:?}"),
    }
}

fn err(r: Result<CallReply, RuntimeError>) -> String {
    match r {
        Err(e) => e.to_string(),
        Ok(reply) => panic!("an error was expected, got {reply:?}"),
    }
}

#[test]
fn spawn_fetch_apply_answer_and_stop() {
    let (t, tools) = tools();
    let s = HandleSession::default();
    block_on(async {
        let (id, state) = handle(
            s.agent_call(&tools, call("counter", json!({"action":"spawn","from":7})), &NoAnswerer).await.unwrap(),
        );
        assert_eq!((id.as_str(), state.name()), ("h_1", "running"));
        let apply = |input: i64| call("counter", json!({"action":"apply","id":"h_1","input":input}));
        let (_, state) = handle(s.agent_call(&tools, apply(3), &NoAnswerer).await.unwrap());
        assert_eq!(state.name(), "waiting", "at 10 it asks");
        // Waiting: the input is the answer to its question, routed by the session.
        let (_, state) = handle(
            s.agent_call(&tools, call("counter", json!({"action":"apply","id":"h_1","input":true})), &NoAnswerer)
                .await
                .unwrap(),
        );
        assert_eq!(state, ToolState::Stopped { result: Ok("stopped at 10".into()) });
        assert!(s.ids().is_empty(), "a stopped handle is not kept");
        assert_eq!(*t.log.lock().unwrap(), ["answer stop=true"]);
        let e = err(s.agent_call(&tools, call("counter", json!({"action":"fetch","id":"h_1"})), &NoAnswerer).await);
        assert_eq!(e, "no live handle 'h_1'; no handles are live");
        // An action the tool does not offer.
        let e =
            err(s.agent_call(&tools, call("watch", json!({"action":"apply","id":"h_1","input":1})), &NoAnswerer).await);
        assert!(e.contains("does not support action 'apply'; it supports: spawn, fetch"), "{e}");
    });
}

#[test]
fn a_one_shot_tool_that_asks_is_run_again_with_the_answer() {
    let (t, tools) = tools();
    let s = HandleSession::default();
    block_on(async {
        let (id, state) =
            handle(s.agent_call(&tools, call("oneshot", json!({"action":"spawn"})), &NoAnswerer).await.unwrap());
        assert_eq!(state.name(), "waiting");
        // A fetch meanwhile: the question again, and the handle stays for the answer.
        let (_, fetched) = handle(
            s.agent_call(&tools, call("oneshot", json!({"action":"fetch","id":id})), &NoAnswerer).await.unwrap(),
        );
        assert_eq!(fetched, state);
        assert_eq!(s.ids(), [id.as_str()]);
        let reply = s.agent_call(&tools, call("oneshot", json!({"action":"apply","id":id,"input":"yes"})), &NoAnswerer);
        let (_, state) = handle(reply.await.unwrap());
        assert_eq!(state, ToolState::Stopped { result: Ok("answered \"yes\"".into()) });
        assert_eq!(*t.log.lock().unwrap(), ["call answers={}", "call answers={\"stop\":\"yes\"}"]);
    });
}

/// Answers every question with `true`.
struct Yes;

impl Answerer for Yes {
    fn answer<'a>(&'a self, _: &'a str, _: &'a Question) -> BoxFuture<'a, Option<Value>> {
        Box::pin(async { Some(json!(true)) })
    }
}

#[test]
fn without_action_a_live_tool_runs_to_its_end_and_its_question_goes_to_the_answerer() {
    let (_, tools) = tools();
    let s = HandleSession::default();
    block_on(async {
        let reply = s.agent_call(&tools, call("counter", json!({"from": 10})), &Yes).await.unwrap();
        let CallReply::Outcome(ExecutionOutcome::Completed { result: Ok(r), .. }) = reply else { panic!("{reply:?}") };
        assert_eq!(r.to_text(), "10\nstopped at 10", "gathered output, then the result");
        // Nobody to answer: the outcome is the question, and the live tool is aborted.
        let outcome = run_to_end(&tools, call("counter", json!({"from": 12})), &NoAnswerer).await.unwrap();
        assert!(matches!(outcome, ExecutionOutcome::NeedsInput { .. }), "{outcome:?}");
    });
    assert!(s.ids().is_empty());
}

#[test]
fn the_handle_limit_refuses_a_spawn_before_anything_starts() {
    let (t, tools) = tools();
    let s = HandleSession::new(SessionLimits { max_handles: 2, ..SessionLimits::default() });
    block_on(async {
        for _ in 0..2 {
            s.agent_call(&tools, call("counter", json!({"action":"spawn"})), &NoAnswerer).await.unwrap();
        }
        let e = err(s.agent_call(&tools, call("counter", json!({"action":"spawn"})), &NoAnswerer).await);
        assert!(e.contains("2 handles are live in this session, the most it may keep; abort one"), "{e}");
        assert_eq!(*t.spawned.lock().unwrap(), 2, "the third was never started");
        s.agent_call(&tools, call("counter", json!({"action":"abort","id":"h_1"})), &NoAnswerer).await.unwrap();
        let (id, _) =
            handle(s.agent_call(&tools, call("counter", json!({"action":"spawn"})), &NoAnswerer).await.unwrap());
        assert_eq!(id, "h_3", "room again after an abort; ids are not reused");
    });
}

#[test]
fn an_idle_handle_is_aborted_and_a_late_command_hears_why() {
    let (t, tools) = tools();
    let s = HandleSession::new(SessionLimits { max_idle: Duration::from_secs(600), ..SessionLimits::default() });
    block_on(async {
        s.agent_call(&tools, call("counter", json!({"action":"spawn","from":1})), &NoAnswerer).await.unwrap();
        *t.now.lock().unwrap() = Duration::from_secs(300);
        s.agent_call(&tools, call("counter", json!({"action":"spawn","from":2})), &NoAnswerer).await.unwrap();
        *t.now.lock().unwrap() = Duration::from_secs(650);
        // h_1 was last used at 0: idle 650 s > 600 s; h_2 at 300 s stays.
        let e = err(s.agent_call(&tools, call("counter", json!({"action":"fetch","id":"h_1"})), &NoAnswerer).await);
        assert_eq!(e, "handle 'h_1' is gone: stopped after 10 min idle (the most a handle may sit unused)");
        assert_eq!(s.ids(), ["h_2"]);
        assert_eq!(*t.log.lock().unwrap(), ["abort at 1"]);
        // Using it keeps it alive.
        let (_, state) = handle(
            s.agent_call(&tools, call("counter", json!({"action":"fetch","id":"h_2"})), &NoAnswerer).await.unwrap(),
        );
        assert_eq!(state.name(), "running");
        *t.now.lock().unwrap() = Duration::from_secs(1200);
        s.expire(t.now()).await;
        assert_eq!(s.ids(), ["h_2"], "last used at 650 s");
    });
}

#[test]
fn owners_are_kept_apart_and_another_owner_hears_what_an_unknown_id_gets() {
    let (_, tools) = tools();
    let owners = HandleOwners::new(SessionLimits::default(), 2);
    block_on(async {
        let a = owners.session("token-a/scope-1", tools.now()).await.unwrap();
        let (id, _) =
            handle(a.agent_call(&tools, call("counter", json!({"action":"spawn"})), &NoAnswerer).await.unwrap());
        drop(a);
        let b = owners.session("token-b/scope-1", tools.now()).await.unwrap();
        let theirs = err(b.agent_call(&tools, call("counter", json!({"action":"fetch","id":id})), &NoAnswerer).await);
        let unknown =
            err(b.agent_call(&tools, call("counter", json!({"action":"fetch","id":"h_9"})), &NoAnswerer).await);
        assert_eq!(theirs.replace("h_1", "h_9"), unknown, "no oracle: another owner's id is just unknown");
        let a = owners.session("token-a/scope-1", tools.now()).await.unwrap();
        let (_, state) = handle(
            a.agent_call(&tools, call("counter", json!({"action":"fetch","id":"h_1"})), &NoAnswerer).await.unwrap(),
        );
        assert_eq!(state.name(), "running", "the owner finds it in a later request");
        drop((a, b));
        // b holds no handle: it makes way for a third owner; a still has one.
        let c = owners.session("token-c/x", tools.now()).await.unwrap();
        let e = owners.session("token-d/x", tools.now()).await.unwrap_err().to_string();
        assert!(e.starts_with("2 scopes hold live handles on this server"), "{e}");
        drop(c);
        owners.session("token-d/x", tools.now()).await.expect("c held nothing and nobody holds it now");
        owners.close_owner("token-a/scope-1").await;
        let a = owners.session("token-a/scope-1", tools.now()).await.unwrap();
        assert!(a.ids().is_empty(), "closing aborted them");
        let (id, _) =
            handle(a.agent_call(&tools, call("counter", json!({"action":"spawn"})), &NoAnswerer).await.unwrap());
        assert_eq!(id, "h_2", "an owner's next session goes on from its last id: an old id never names a new handle");
        owners.close().await;
    });
}

/// A tool whose commands never end (a busy handle): the registry's.
use crate::handles::registry::tests::Stuck;

#[test]
fn close_preempts_a_command_in_progress_and_aborts_the_tool() {
    use std::future::Future;
    use std::task::{Context, Waker};
    let (t, tools) = tools();
    let s = HandleSession::default();
    let log = t.log.clone();
    block_on(async {
        let id = s.register(
            "counter",
            &ToolState::Running { content: None },
            Some(Box::new(Stuck { log: log.clone() })),
            t.now(),
        );
        assert_eq!(id.await.unwrap(), "h_1");
    });
    let fetch = call("counter", json!({"action":"fetch","id":"h_1"}));
    let mut pending = Box::pin(s.agent_call(&tools, fetch, &NoAnswerer));
    assert!(pending.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
    assert_eq!(s.list()[0].state, "busy");
    block_on(s.close());
    let reply = block_on(pending).unwrap();
    let (_, state) = handle(reply);
    assert!(state.is_stopped(), "{state:?}");
    assert_eq!(*log.lock().unwrap(), ["abort"], "aborted once, by the preempted command");
    let e = err(block_on(s.agent_call(&tools, call("counter", json!({"action":"spawn"})), &NoAnswerer)));
    assert_eq!(e, "the session has ended");
}

#[test]
fn a_rebuilt_handle_is_adopted_under_its_old_id_and_later_ids_follow_it() {
    let (t, tools) = tools();
    // A host that restarted: its new session knows nothing, its storage said h_4 was issued.
    let s = HandleSession::default();
    s.raise_issued(4);
    assert_eq!(s.next_id(), "h_5");
    block_on(async {
        let rebuilt = Box::new(Counter { n: 2, log: t.log.clone() });
        let state = ToolState::Running { content: Some("2".into()) };
        s.adopt("h_3", "counter", state.clone(), rebuilt, Duration::ZERO).await.unwrap();
        assert!(s.holds("h_3") && !s.holds("h_1"));
        let (_, state) = handle(
            s.agent_call(&tools, call("counter", json!({"action":"apply","id":"h_3","input":5})), &NoAnswerer)
                .await
                .unwrap(),
        );
        assert_eq!(state, ToolState::Running { content: Some("7".into()) }, "the rebuilt handle goes on");
        // Its id cannot be taken twice, nor a malformed one; the refused handle is aborted.
        let twice = Box::new(Counter { n: 9, log: t.log.clone() });
        let e = s.adopt("h_3", "counter", ToolState::Running { content: None }, twice, Duration::ZERO).await;
        assert!(e.unwrap_err().to_string().contains("busy"));
        let odd = Box::new(Counter { n: 8, log: t.log.clone() });
        assert!(s.adopt("h_03", "counter", ToolState::Running { content: None }, odd, Duration::ZERO).await.is_err());
        assert_eq!(*t.log.lock().unwrap(), ["abort at 9", "abort at 8"]);
        let (id, _) = handle(
            s.agent_call(&tools, call("counter", json!({"action":"spawn","from":1})), &NoAnswerer).await.unwrap(),
        );
        assert_eq!(id, "h_5", "ids go on after the stored count, never reissuing one");
    });
}
