//! The agent turn loop in the page: `runAgentTurn` runs the core's [`run_turn`] — the same loop
//! as `jp query` — with the model reached through `fetch` ([`FetchHttpClient`]) and the tool
//! calls handed to a JS callback (the page's host runs them on its components, asking the user
//! first when its rules say so). Nothing here decides a tool's access: the host's policy does.

use std::sync::Arc;
use std::time::Duration;

use jp_core::BoxFuture;
use jp_core::agent::anthropic::Anthropic;
use jp_core::agent::openai::OpenAi;
use jp_core::agent::prompt::describe_call;
use jp_core::agent::scripted::Scripted;
use jp_core::agent::turn::{Sleep, ToolOutput, Turn, TurnEvent, TurnOptions, TurnTools, run_turn};
use jp_core::agent::{Message, Model, ModelTool, ToolCallRequest};
use jp_core::cancel::CancellationToken;
use jp_core::policy::{Scrubber, StreamScrubber};
use jp_core::state::ToolResult;
use js_sys::{Function, Promise, Reflect};
use serde::Deserialize;
use serde_json::{Value, json};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::http::FetchHttpClient;
use crate::js::{from_js, to_js};
use crate::surface::PageTool;

#[wasm_bindgen(typescript_custom_section)]
const AGENT_TYPES: &str = r#"
/** Where the model is: an OpenAI-compatible Chat Completions endpoint, the Anthropic Messages
 * API, or a recording replayed offline (`scripted`). */
export interface ProviderOptions {
  kind: "openai" | "anthropic" | "scripted";
  baseUrl?: string;
  model?: string;
  /** A secret: sent only in the request's header, never to a tool, never in an event. */
  apiKey?: string;
  stream?: boolean;
  maxTokens?: number;
  /** `scripted`: the recording (`{"replies": [...]}`, as `jp query --provider scripted` reads);
   * without one, the demo recording shipped with jp-host. */
  recording?: unknown;
}
/** What happens during a turn. */
export type TurnEventJs =
  | { type: "text_delta"; text: string }
  | { type: "text"; text: string }
  | { type: "tool_call"; id: string; name: string; arguments: Record<string, unknown> }
  | { type: "tool_result"; id: string; content: string; isError: boolean }
  | { type: "retry"; error: string; afterMs: number }
  | { type: "turn_end"; rounds: number };
/** What a permission question shows of a call (`describeCall`): safe to show as text. */
export interface CallSummaryJs {
  /** The tool's name, quoted unless it is one plain word. */
  name: string;
  /** `key: value` per field shown: paths, commands, URLs first and in full, then the rest. */
  lines: string[];
  /** The fields cut (`shown` characters of `characters`) or left out (`shown` 0). */
  cut: { key: string; characters: number; shown: number }[];
  /** One note per cut field: `(content cut: 5000 characters; shown: first 200)`. */
  notes: string[];
}
"#;

/// The page's provider settings.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ProviderOptions {
    kind: String,
    #[serde(default)]
    base_url: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    api_key: Option<String>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    recording: Option<Value>,
}

fn err(e: impl std::fmt::Display) -> JsValue {
    JsError::new(&e.to_string()).into()
}

fn model(options: ProviderOptions) -> Result<Box<dyn Model>, JsValue> {
    let need = |v: Option<String>, key: &str| {
        v.filter(|s| !s.trim().is_empty()).ok_or_else(|| err(format!("the {} provider needs `{key}`", options.kind)))
    };
    let api_key = options.api_key.clone().filter(|k| !k.is_empty());
    match options.kind.as_str() {
        "openai" => Ok(Box::new(OpenAi {
            base_url: need(options.base_url.clone(), "baseUrl")?,
            model: need(options.model.clone(), "model")?,
            api_key,
            stream: options.stream,
            http: Arc::new(FetchHttpClient::default()),
        })),
        "anthropic" => Ok(Box::new(Anthropic {
            base_url: need(options.base_url.clone(), "baseUrl")?,
            model: need(options.model.clone(), "model")?,
            api_key,
            max_tokens: options.max_tokens.unwrap_or(4096),
            stream: options.stream,
            http: Arc::new(FetchHttpClient::default()),
        })),
        "scripted" => match options.recording {
            Some(recording) => Ok(Box::new(Scripted::from_json(&recording.to_string()).map_err(err)?)),
            None => Ok(Box::new(Scripted::demo().map_err(err)?)),
        },
        other => Err(err(format!("unknown provider kind '{other}': use openai, anthropic or scripted"))),
    }
}

/// An event for the page (`None`: not shown).
fn event_json(event: &TurnEvent) -> Option<Value> {
    Some(match event {
        // Pieces go through the turn's `StreamScrubber` first (see `run_agent_turn`).
        TurnEvent::TextDelta(text) => json!({ "type": "text_delta", "text": text }),
        TurnEvent::Text(text) => json!({ "type": "text", "text": text }),
        TurnEvent::ToolCall(c) => json!({ "type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments }),
        TurnEvent::ToolResult { id, output } => {
            json!({ "type": "tool_result", "id": id, "content": output.content, "isError": output.is_error })
        }
        TurnEvent::Retry { error, after } => {
            json!({ "type": "retry", "error": error.to_string(), "afterMs": after.as_millis() as u64 })
        }
        TurnEvent::End { rounds } => json!({ "type": "turn_end", "rounds": rounds }),
    })
}

/// The tools of a turn in the page: their specs, and a JS callback that runs one call.
struct JsTools {
    specs: Vec<ModelTool>,
    call: Function,
}

fn message_of(e: &JsValue) -> String {
    Reflect::get(e, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}

impl TurnTools for JsTools {
    fn specs(&self) -> Vec<ModelTool> {
        self.specs.clone()
    }

    fn call<'a>(&'a self, call: &'a ToolCallRequest, _cancel: &'a CancellationToken) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let failed = |content: String| ToolOutput { content, is_error: true };
            let promise = match self.call.call3(
                &JsValue::NULL,
                &JsValue::from_str(&call.name),
                &to_js(&call.arguments),
                &JsValue::from_str(&call.id),
            ) {
                Ok(p) => p,
                Err(e) => return failed(format!("tool '{}' could not be called: {}", call.name, message_of(&e))),
            };
            let value = match JsFuture::from(Promise::resolve(&promise)).await {
                Ok(v) => v,
                Err(e) => return failed(format!("tool '{}' failed: {}", call.name, message_of(&e))),
            };
            // `{content, isError}`: `content` a text, or MCP's blocks (`agentResult`), which the
            // model reads as text (an image as its one-line summary).
            let result: Value = match from_js("the tool's result", &value) {
                Ok(v) => v,
                Err(e) => return failed(format!("tool '{}': {}", call.name, message_of(&e))),
            };
            let is_error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
            match result.get("content") {
                Some(Value::String(content)) => ToolOutput { content: content.clone(), is_error },
                Some(Value::Array(_)) => match serde_json::from_value::<ToolResult>(result) {
                    Ok(r) => ToolOutput { content: r.to_text(), is_error },
                    Err(e) => failed(format!("tool '{}': its content blocks are not MCP's: {e}", call.name)),
                },
                _ => failed(format!("tool '{}': the page's callTool must resolve to {{content, isError}}", call.name)),
            }
        })
    }

    fn end_turn(&self) -> BoxFuture<'_, ()> {
        // The page's tools are one-shot component calls: a turn leaves no handle open.
        Box::pin(async {})
    }
}

/// Waiting between retries: `setTimeout`.
struct JsSleep;

impl Sleep for JsSleep {
    fn sleep(&self, d: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let promise = Promise::new(&mut |resolve, _| {
                let set_timeout = Reflect::get(&js_sys::global(), &JsValue::from_str("setTimeout"))
                    .ok()
                    .and_then(|f| f.dyn_into::<Function>().ok());
                match set_timeout {
                    Some(f) => {
                        let _ = f.call2(&JsValue::NULL, &resolve, &JsValue::from_f64(d.as_millis() as f64));
                    }
                    None => {
                        let _ = resolve.call0(&JsValue::NULL);
                    }
                }
            });
            let _ = JsFuture::from(promise).await;
        })
    }
}

/// What the page's permission question shows of a call of `name` with `args` — the same as
/// `jp query`'s question ([`describe_call`]): `{name, lines, cut: [{key, characters, shown}],
/// notes}`. `lines` first hold the fields that say what the call touches (paths, commands, URLs),
/// in full; the other fields are cut, and `notes` name each one cut or left out.
#[wasm_bindgen(js_name = describeCall, unchecked_return_type = "CallSummaryJs")]
pub fn describe_call_js(name: &str, args: JsValue) -> Result<JsValue, JsValue> {
    let args: Value = from_js("the arguments", &args)?;
    let summary = describe_call(name, &args);
    let cut: Vec<Value> =
        summary.cut.iter().map(|c| json!({ "key": c.key, "characters": c.characters, "shown": c.shown })).collect();
    let notes: Vec<String> = summary.cut.iter().map(|c| c.note()).collect();
    Ok(to_js(&json!({ "name": summary.name, "lines": summary.lines, "cut": cut, "notes": notes })))
}

/// Run one agent turn in the page. `provider`: see `ProviderOptions`. `messages`: the
/// conversation so far (`[{role, content, …}]`, as a previous turn returned it), ending with
/// the user's message. `tools`: `[{name, summary, description, inputSchema}]`. `callTool(name,
/// args, id)` runs one call and resolves to `{content, isError}`. `onEvent(event)` sees every
/// `TurnEventJs`. `signal` (an `AbortSignal`) ends the turn after the running step. Resolves to
/// `{messages, text}` — the conversation with the turn appended and the final answer — or
/// rejects with the reason the turn ended without one (the messages so far are its `messages`).
#[wasm_bindgen(js_name = runAgentTurn)]
pub async fn run_agent_turn(
    provider: JsValue,
    messages: JsValue,
    tools: JsValue,
    call_tool: Function,
    on_event: Function,
    signal: Option<web_sys::AbortSignal>,
) -> Result<JsValue, JsValue> {
    let provider: ProviderOptions = from_js("the provider options", &provider)?;
    // The key never reaches an event: scrubbed from anything the endpoint echoed back.
    let scrubber = Scrubber::new(provider.api_key.iter().filter(|k| !k.is_empty()));
    let mut messages: Vec<Message> = from_js("the messages", &messages)?;
    let tools: Vec<PageTool> = from_js("the tools", &tools)?;
    let model = model(provider)?;
    let specs = tools.into_iter().map(PageTool::spec).collect();
    let tools = JsTools { specs, call: call_tool };

    let scrub = |v: Value| {
        let text = v.to_string();
        match scrubber.scrub_str(&text) {
            std::borrow::Cow::Borrowed(_) => v,
            std::borrow::Cow::Owned(clean) => serde_json::from_str(&clean).unwrap_or(Value::Null),
        }
    };
    // Streamed text is shown piece by piece, with an end that may begin the key held back.
    let pieces = std::cell::RefCell::new(StreamScrubber::default());
    let on_event = |e: &TurnEvent| {
        let event = match e {
            TurnEvent::TextDelta(text) => {
                let shown = pieces.borrow_mut().piece(&scrubber, text);
                if shown.is_empty() {
                    return;
                }
                Some(json!({ "type": "text_delta", "text": shown }))
            }
            TurnEvent::Text(_) => {
                let rest = pieces.borrow_mut().finish();
                if !rest.is_empty() {
                    let _ = on_event.call1(&JsValue::NULL, &to_js(&json!({ "type": "text_delta", "text": rest })));
                }
                event_json(e)
            }
            _ => event_json(e),
        };
        if let Some(event) = event {
            let _ = on_event.call1(&JsValue::NULL, &to_js(&scrub(event)));
        }
    };
    let cancel = CancellationToken::new();
    let _abort = signal.map(|s| AbortHook::new(s, cancel.clone()));
    let options = TurnOptions::default();
    let turn = Turn {
        model: model.as_ref(),
        tools: &tools,
        options: &options,
        sleep: &JsSleep,
        cancel: &cancel,
        on_event: &on_event,
    };
    let result = run_turn(&turn, &mut messages).await;
    let history = scrub(serde_json::to_value(&messages).map_err(err)?);
    match result {
        Ok(text) => Ok(to_js(&json!({ "messages": history, "text": scrub(Value::String(text)) }))),
        Err(e) => {
            let error: JsValue = err(scrub(Value::String(e.to_string())).as_str().unwrap_or("the turn failed"));
            let _ = Reflect::set(&error, &JsValue::from_str("messages"), &to_js(&history));
            Err(error)
        }
    }
}

/// Cancels a token when an `AbortSignal` aborts; the listener is removed on drop.
pub(crate) struct AbortHook {
    signal: web_sys::AbortSignal,
    listener: Closure<dyn FnMut()>,
}

impl AbortHook {
    pub(crate) fn new(signal: web_sys::AbortSignal, cancel: CancellationToken) -> Self {
        if signal.aborted() {
            cancel.cancel();
        }
        let listener = Closure::<dyn FnMut()>::new(move || cancel.cancel());
        let _ = signal.add_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
        Self { signal, listener }
    }
}

impl Drop for AbortHook {
    fn drop(&mut self) {
        let _ = self.signal.remove_event_listener_with_callback("abort", self.listener.as_ref().unchecked_ref());
    }
}
