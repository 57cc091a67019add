//! One agent turn: ask the model, run the tool calls it makes (those of one round concurrently),
//! give it the results, and repeat until it answers without tool calls or the round limit is
//! reached. Whatever way the turn ends — an answer, an error, the limit, cancellation — the
//! tools are told ([`TurnTools::end_turn`]) so that the handles the turn opened are aborted.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::{Message, Model, ModelTool, ProviderError, Role, ToolCallRequest};
use crate::cancel::CancellationToken;
use crate::maybe::{BoxFuture, MaybeSend, MaybeSync};

/// What a tool call produced, as the model will see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The result text (or the error's).
    pub content: String,
    /// Whether it failed (denied, refused, the tool's error).
    pub is_error: bool,
}

/// The tools a turn may call, and the rules around them (RFD 009's permission rules are the
/// embedder's: it asks before `spawn` and before one-shot tools that can write).
pub trait TurnTools: MaybeSend + MaybeSync {
    /// The tools the model is told about.
    fn specs(&self) -> Vec<ModelTool>;
    /// Run one call (after asking, when the rules say so; a refusal is an error output).
    fn call<'a>(&'a self, call: &'a ToolCallRequest, cancel: &'a CancellationToken) -> BoxFuture<'a, ToolOutput>;
    /// The turn is over: abort whatever it left running.
    fn end_turn(&self) -> BoxFuture<'_, ()>;
}

/// Waiting, for retries (the platform's timer).
pub trait Sleep: MaybeSend + MaybeSync {
    /// Resolve after `d`.
    fn sleep(&self, d: Duration) -> BoxFuture<'_, ()>;
}

/// What happens during a turn, for display (`jp query`'s terminal and `--json`, the page).
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    /// A piece of the model's text as it is written (streamed answers only); the whole text
    /// follows as [`TurnEvent::Text`].
    TextDelta(String),
    /// The model said this.
    Text(String),
    /// The model called a tool.
    ToolCall(ToolCallRequest),
    /// A tool call ended.
    ToolResult {
        /// The call's id.
        id: String,
        /// Its output.
        output: ToolOutput,
    },
    /// A model request failed and is tried again after `after`.
    Retry {
        /// Why.
        error: ProviderError,
        /// When.
        after: Duration,
    },
    /// The turn ended after this many model requests.
    End {
        /// Rounds (model requests that succeeded).
        rounds: usize,
    },
}

/// How a turn runs.
#[derive(Debug, Clone)]
pub struct TurnOptions {
    /// Most model requests in one turn.
    pub max_rounds: usize,
    /// Most retries of one failed model request (429, 5xx).
    pub max_retries: u32,
    /// The first retry's wait (doubled each time, or the endpoint's `Retry-After`).
    pub backoff: Duration,
}

impl Default for TurnOptions {
    fn default() -> Self {
        Self { max_rounds: 20, max_retries: 3, backoff: Duration::from_millis(500) }
    }
}

/// Why a turn ended without the model's final answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TurnError {
    /// The model request failed (after retries when retryable).
    #[error(transparent)]
    Model(#[from] ProviderError),
    /// The model kept calling tools.
    #[error("the turn reached its limit of {0} model requests; continue the conversation to go on")]
    RoundLimit(usize),
    /// Cancelled (Ctrl-C, the page's stop button).
    #[error("the turn was cancelled")]
    Cancelled,
}

/// Run all `futures` at once; their outputs in order.
struct JoinAll<'a, T> {
    futures: Vec<Option<BoxFuture<'a, T>>>,
    outputs: Vec<Option<T>>,
}

// The outputs are never pinned (only the boxed futures are polled), so moving it is fine.
impl<T> Unpin for JoinAll<'_, T> {}

impl<T> Future for JoinAll<'_, T> {
    type Output = Vec<T>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Vec<T>> {
        let this = self.get_mut();
        for (slot, out) in this.futures.iter_mut().zip(this.outputs.iter_mut()) {
            if let Some(f) = slot
                && let Poll::Ready(v) = f.as_mut().poll(cx)
            {
                *out = Some(v);
                *slot = None;
            }
        }
        if this.futures.iter().all(Option::is_none) {
            Poll::Ready(this.outputs.iter_mut().filter_map(Option::take).collect())
        } else {
            Poll::Pending
        }
    }
}

fn join_all<T>(futures: Vec<BoxFuture<'_, T>>) -> JoinAll<'_, T> {
    let n = futures.len();
    JoinAll { futures: futures.into_iter().map(Some).collect(), outputs: (0..n).map(|_| None).collect() }
}

/// What a turn runs with: the model, the tools, the platform's timer, the cancellation token
/// and where its events go.
pub struct Turn<'a> {
    /// The model asked.
    pub model: &'a dyn Model,
    /// The tools it may call.
    pub tools: &'a dyn TurnTools,
    /// Limits and retries.
    pub options: &'a TurnOptions,
    /// Waiting between retries.
    pub sleep: &'a dyn Sleep,
    /// Cancels the turn (and is handed to every tool call).
    pub cancel: &'a CancellationToken,
    /// Receives every [`TurnEvent`].
    pub on_event: &'a dyn OnTurnEvent,
}

/// Where a turn's events go: any `Fn(&TurnEvent)` — `Send + Sync` natively, anything on wasm32
/// (a page's JS callback is neither).
pub trait OnTurnEvent: Fn(&TurnEvent) + MaybeSend + MaybeSync {}

impl<F: Fn(&TurnEvent) + MaybeSend + MaybeSync> OnTurnEvent for F {}

/// Run one turn on `messages` (the conversation so far, ending with the user's message); the
/// model's messages and the tool results are appended to it. Returns the model's final text.
pub async fn run_turn(turn: &Turn<'_>, messages: &mut Vec<Message>) -> Result<String, TurnError> {
    let result = turn_rounds(turn, messages).await;
    turn.tools.end_turn().await;
    result
}

async fn turn_rounds(turn: &Turn<'_>, messages: &mut Vec<Message>) -> Result<String, TurnError> {
    let Turn { model, tools, options, sleep, cancel, on_event } = *turn;
    let specs = tools.specs();
    for round in 1..=options.max_rounds {
        let mut attempt = 0;
        let reply = loop {
            if cancel.is_cancelled() {
                return Err(TurnError::Cancelled);
            }
            let delta = |text: &str| on_event(&TurnEvent::TextDelta(text.to_owned()));
            match model.complete_streaming(messages, &specs, &delta).await {
                Ok(r) => break r,
                Err(e) if e.is_retryable() && attempt < options.max_retries => {
                    let after = match &e {
                        ProviderError::RateLimited { retry_after: Some(s), .. } => Duration::from_secs(*s),
                        _ => options.backoff * 2u32.pow(attempt),
                    };
                    on_event(&TurnEvent::Retry { error: e, after });
                    sleep.sleep(after).await;
                    attempt += 1;
                }
                Err(e) => return Err(e.into()),
            }
        };
        if !reply.text.is_empty() {
            on_event(&TurnEvent::Text(reply.text.clone()));
        }
        messages.push(Message {
            tool_calls: reply.tool_calls.clone(),
            ..Message::text(Role::Assistant, reply.text.clone())
        });
        if reply.tool_calls.is_empty() {
            on_event(&TurnEvent::End { rounds: round });
            return Ok(reply.text);
        }
        for c in &reply.tool_calls {
            on_event(&TurnEvent::ToolCall(c.clone()));
        }
        let runs: Vec<BoxFuture<'_, ToolOutput>> = reply.tool_calls.iter().map(|c| tools.call(c, cancel)).collect();
        let outputs = join_all(runs).await;
        for (c, output) in reply.tool_calls.iter().zip(outputs) {
            on_event(&TurnEvent::ToolResult { id: c.id.clone(), output: output.clone() });
            messages.push(Message::tool_result(c.id.clone(), output.content, output.is_error));
        }
        if cancel.is_cancelled() {
            return Err(TurnError::Cancelled);
        }
    }
    Err(TurnError::RoundLimit(options.max_rounds))
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use futures_executor::block_on;
    use serde_json::json;

    use super::super::ModelReply;
    use super::*;

    /// A model that answers from a script and records what it was sent.
    struct Scripted {
        replies: Mutex<Vec<Result<ModelReply, ProviderError>>>,
        seen: Mutex<Vec<Vec<Message>>>,
    }

    impl Scripted {
        fn new(mut replies: Vec<Result<ModelReply, ProviderError>>) -> Self {
            replies.reverse();
            Self { replies: Mutex::new(replies), seen: Mutex::default() }
        }
    }

    impl Model for Scripted {
        fn complete_streaming<'a>(
            &'a self,
            m: &'a [Message],
            _: &'a [ModelTool],
            _: crate::maybe::OnText<'a>,
        ) -> BoxFuture<'a, Result<ModelReply, ProviderError>> {
            self.seen.lock().unwrap().push(m.to_vec());
            let next = self.replies.lock().unwrap().pop().unwrap_or_else(|| Ok(ModelReply::default()));
            Box::pin(async move { next })
        }
    }

    #[derive(Default)]
    struct Tools {
        calls: Mutex<Vec<String>>,
        ended: Mutex<u32>,
    }

    impl TurnTools for Tools {
        fn specs(&self) -> Vec<ModelTool> {
            vec![ModelTool { name: "echo".into(), description: "echo".into(), input_schema: json!({"type": "object"}) }]
        }
        fn call<'a>(&'a self, call: &'a ToolCallRequest, _: &'a CancellationToken) -> BoxFuture<'a, ToolOutput> {
            self.calls.lock().unwrap().push(call.name.clone());
            Box::pin(async move {
                match call.name.as_str() {
                    "echo" => ToolOutput {
                        content: call.arguments["text"].as_str().unwrap_or_default().into(),
                        is_error: false,
                    },
                    other => ToolOutput { content: format!("no tool '{other}'"), is_error: true },
                }
            })
        }
        fn end_turn(&self) -> BoxFuture<'_, ()> {
            *self.ended.lock().unwrap() += 1;
            Box::pin(async {})
        }
    }

    struct NoSleep(Mutex<Vec<Duration>>);
    impl Sleep for NoSleep {
        fn sleep(&self, d: Duration) -> BoxFuture<'_, ()> {
            self.0.lock().unwrap().push(d);
            Box::pin(async {})
        }
    }

    fn call(id: &str, name: &str, text: &str) -> ToolCallRequest {
        ToolCallRequest { id: id.into(), name: name.into(), arguments: json!({ "text": text }) }
    }

    fn run(
        model: &Scripted,
        tools: &Tools,
        options: &TurnOptions,
    ) -> (Result<String, TurnError>, Vec<Message>, Vec<TurnEvent>, Vec<Duration>) {
        let mut messages = vec![Message::text(Role::User, "hi")];
        let events = Mutex::new(Vec::new());
        let sleep = NoSleep(Mutex::default());
        let on_event = |e: &TurnEvent| events.lock().unwrap().push(e.clone());
        let cancel = CancellationToken::new();
        let turn = Turn { model, tools, options, sleep: &sleep, cancel: &cancel, on_event: &on_event };
        let r = block_on(run_turn(&turn, &mut messages));
        (r, messages, events.into_inner().unwrap(), sleep.0.into_inner().unwrap())
    }

    #[test]
    fn two_calls_in_one_round_then_the_answer_and_the_results_reach_the_model() {
        let model = Scripted::new(vec![
            Ok(ModelReply {
                text: "looking".into(),
                tool_calls: vec![call("a", "echo", "one"), call("b", "nope", "")],
            }),
            Ok(ModelReply { text: "done".into(), tool_calls: vec![] }),
        ]);
        let tools = Tools::default();
        let (r, messages, events, _) = run(&model, &tools, &TurnOptions::default());
        assert_eq!(r.unwrap(), "done");
        assert_eq!(*tools.calls.lock().unwrap(), ["echo", "nope"]);
        // The second request carries both results, the failure marked as such.
        let second = &model.seen.lock().unwrap()[1];
        let results: Vec<_> = second.iter().filter(|m| m.role == Role::Tool).collect();
        assert_eq!(results[0].content, "one");
        assert_eq!(results[0].tool_call_id.as_deref(), Some("a"));
        assert!(results[1].is_error && results[1].content.contains("no tool 'nope'"));
        assert_eq!(messages.len(), 5);
        assert!(matches!(events.last(), Some(TurnEvent::End { rounds: 2 })));
        assert_eq!(*tools.ended.lock().unwrap(), 1);
    }

    #[test]
    fn retryable_errors_are_retried_with_backoff_or_retry_after_then_fail() {
        let limited = || ProviderError::RateLimited { retry_after: Some(7), message: "slow down".into() };
        let server = || ProviderError::Server { status: 503, message: "busy".into() };
        let model = Scripted::new(vec![
            Err(limited()),
            Err(server()),
            Ok(ModelReply { text: "ok".into(), tool_calls: vec![] }),
        ]);
        let tools = Tools::default();
        let (r, _, events, slept) = run(&model, &tools, &TurnOptions::default());
        assert_eq!(r.unwrap(), "ok");
        assert_eq!(slept, [Duration::from_secs(7), Duration::from_millis(1000)]);
        assert_eq!(events.iter().filter(|e| matches!(e, TurnEvent::Retry { .. })).count(), 2);

        let model = Scripted::new(vec![Err(server()), Err(server())]);
        let options = TurnOptions { max_retries: 1, ..TurnOptions::default() };
        let (r, _, _, _) = run(&model, &tools, &options);
        assert!(matches!(r, Err(TurnError::Model(ProviderError::Server { status: 503, .. }))));
        let model = Scripted::new(vec![Err(ProviderError::Unauthorized { status: 401, message: "bad key".into() })]);
        let (r, _, _, slept) = run(&model, &tools, &TurnOptions::default());
        assert!(matches!(r, Err(TurnError::Model(ProviderError::Unauthorized { .. }))));
        assert!(slept.is_empty(), "a 401 is not retried");
        assert_eq!(*tools.ended.lock().unwrap(), 3, "every turn ends its tools, however it ends");
    }

    #[test]
    fn a_model_that_keeps_calling_tools_hits_the_round_limit() {
        let again = || Ok(ModelReply { text: String::new(), tool_calls: vec![call("x", "echo", "again")] });
        let model = Scripted::new(vec![again(), again(), again()]);
        let tools = Tools::default();
        let (r, _, _, _) = run(&model, &tools, &TurnOptions { max_rounds: 2, ..TurnOptions::default() });
        assert_eq!(r.unwrap_err(), TurnError::RoundLimit(2));
        assert_eq!(tools.calls.lock().unwrap().len(), 2);
        assert_eq!(*tools.ended.lock().unwrap(), 1);
    }
}
