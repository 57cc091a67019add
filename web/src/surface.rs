//! The core's agent surface ([`jp_core::agent::surface`]) for JS: what an agent sees of a tool
//! (`agentTool`), whether the user is asked before a call (`askBeforeCall`), and what a call's
//! outcome becomes (`agentResult`) — the same functions `jp mcp` and `jp query` use, so that the
//! page's agent and the edge's `/mcp` describe, gate and answer calls exactly as they do.

use jp_core::agent::ModelTool;
use jp_core::agent::surface::{self, AgentTool, Gate, ToolFacts};
use jp_core::policy::PolicyHints;
use jp_core::runtime::ExecutionOutcome;
use jp_core::state::{AnswerType, Question, ToolError, ToolResult};
use serde::Deserialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::js::{from_js, to_js};

/// A tool as the host lists it: `{name, summary?, description?, inputSchema}`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PageTool {
    pub name: String,
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub input_schema: Value,
    /// The RFD 009 actions of a stateful tool (its `inputSchema` is then the flat form).
    #[serde(default)]
    pub actions: Option<Vec<String>>,
}

/// `host.policyHints()`: `{writes, destructive, network, commands}`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Hints {
    writes: bool,
    destructive: bool,
    network: bool,
    commands: bool,
}

impl PageTool {
    /// As every agent sees it, under a policy with `hints`. The page's and the edge's tools share
    /// the project's policy; a builtin tool that only reads never writes, whatever it allows.
    pub(crate) fn agent_tool(self, hints: Option<PolicyHints>) -> AgentTool {
        let mut hints =
            hints.unwrap_or(PolicyHints { writes: false, destructive: false, network: false, commands: false });
        if jp_fs_tools::READ_ONLY_TOOLS.contains(&self.name.as_str()) {
            hints.writes = false;
            hints.destructive = false;
            hints.commands = false;
        }
        AgentTool::new(ToolFacts {
            name: &self.name,
            summary: self.summary.as_deref(),
            description: self.description.as_deref(),
            input_schema: self.input_schema,
            hints,
            stateful: self.actions.as_ref().is_some_and(|a| !a.is_empty()),
            unconfined: false,
            run_mode: None,
        })
    }

    /// As a model provider is told about it (its description and schema; no policy needed).
    pub(crate) fn spec(self) -> ModelTool {
        self.agent_tool(None).spec()
    }
}

fn agent_tool(tool: &JsValue, hints: &JsValue) -> Result<AgentTool, JsValue> {
    let tool: PageTool = from_js("the tool", tool)?;
    let h: Hints = from_js("the policy hints", hints)?;
    let hints = PolicyHints { writes: h.writes, destructive: h.destructive, network: h.network, commands: h.commands };
    Ok(tool.agent_tool(Some(hints)))
}

/// Tool `tool` (`{name, summary, description, inputSchema}`, as `host.listTools()` gives it) as
/// MCP's `tools/list` shows it under a policy with `hints` (`host.policyHints()`):
/// `{name, description, inputSchema, annotations}`.
#[wasm_bindgen(js_name = agentTool)]
pub fn agent_tool_js(tool: JsValue, hints: JsValue) -> Result<JsValue, JsValue> {
    Ok(to_js(&agent_tool(&tool, &hints)?.to_mcp()))
}

/// Whether the user is asked before a call of `tool` with `args` under a policy with `hints`
/// (RFD 009's rule, as `jp query` applies it): before a tool that may write or run commands.
#[wasm_bindgen(js_name = askBeforeCall)]
pub fn ask_before_call(tool: JsValue, hints: JsValue, args: JsValue) -> Result<bool, JsValue> {
    let args: Value = from_js("the arguments", &args)?;
    Ok(agent_tool(&tool, &hints)?.gate(&args) == Gate::Ask)
}

/// What a reader sees of a `CallToolResult` (`{content, structuredContent}`): text as text,
/// one line such as `[image/png, 73 B]` for every other block — as `jp tool call` prints it.
#[wasm_bindgen(js_name = resultText)]
pub fn result_text(result: JsValue) -> Result<String, JsValue> {
    let result: ToolResult = from_js("the result", &result)?;
    Ok(result.to_shown())
}

/// A component call's outcome (`host.callTool`: `{tag: 'success' | 'error' | 'needs-input',
/// val, result?}`) as the agent gets it: MCP's `{content, structuredContent?, isError}` (a
/// component's own blocks when it gave `result`), a question that nobody answered and a failure
/// as `isError` with a text that says what to do.
#[wasm_bindgen(js_name = agentResult)]
pub fn agent_result(name: &str, outcome: JsValue) -> Result<JsValue, JsValue> {
    let outcome: Value = from_js("the outcome", &outcome)?;
    let id = String::new();
    let val = outcome.get("val");
    let text = |key: &str| match val {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.get(key).and_then(Value::as_str).map_or_else(|| v.to_string(), str::to_owned),
        None => String::new(),
    };
    let outcome = match outcome.get("tag").and_then(Value::as_str) {
        // A stateful command (`agentCall`): its reply was made by the core's surface already.
        Some("handle") if outcome.get("result").is_some_and(Value::is_object) => {
            return Ok(to_js(&outcome["result"]));
        }
        // A component with `jp:tool/content` answered with blocks (`result`, MCP's shape).
        Some("success") if outcome.get("result").is_some_and(Value::is_object) => {
            let result = ToolResult::deserialize(&outcome["result"]).map_err(|e| {
                JsError::new(&format!("tool '{name}': the outcome's result is not a CallToolResult: {e}"))
            })?;
            ExecutionOutcome::Completed { id, result: Ok(result) }
        }
        Some("success") => ExecutionOutcome::Completed { id, result: Ok(ToolResult::text(text(""))) },
        Some("error") => ExecutionOutcome::Completed { id, result: Err(ToolError::new(text("message"))) },
        Some("needs-input") => ExecutionOutcome::NeedsInput {
            id,
            question: Question { id: String::new(), text: text("text"), answer_type: AnswerType::Text, default: None },
        },
        other => {
            return Err(JsError::new(&format!(
                "tool '{name}': an outcome's tag is success, error, needs-input or handle, not {other:?}"
            ))
            .into());
        }
    };
    Ok(to_js(&surface::to_mcp(&surface::outcome_result(name, outcome))))
}

/// A `jp:tool/content` call's outcome as jco gives it (`{tag: 'success', val: tool-result}`,
/// `error`, `needs-input`) as the page hands it on: a success keeps `val` as the text a reader
/// sees (`resultText`) and adds `result`, MCP's `CallToolResult` — the core's one mapping of a
/// component's blocks, the one `jp` uses natively (`jp_core::state::component`). A result that
/// breaks the interface's promises is an `error` naming what.
#[wasm_bindgen(js_name = componentOutcome)]
pub fn component_outcome(name: &str, outcome: JsValue) -> Result<JsValue, JsValue> {
    let tag = js_sys::Reflect::get(&outcome, &JsValue::from_str("tag")).ok().and_then(|t| t.as_string());
    if tag.as_deref() != Some("success") {
        return Ok(outcome);
    }
    let val = js_sys::Reflect::get(&outcome, &JsValue::from_str("val"))?;
    let failed = |message: String| {
        crate::js::obj(&[
            ("tag", JsValue::from_str("error")),
            (
                "val",
                crate::js::obj(&[
                    ("message", JsValue::from_str(&message)),
                    ("trace", js_sys::Array::new().into()),
                    ("transient", JsValue::FALSE),
                ]),
            ),
        ])
    };
    let plain: jp_core::state::component::WitToolResult = match serde_wasm_bindgen::from_value(val) {
        Ok(p) => p,
        Err(e) => return Ok(failed(format!("tool '{name}' returned a result jp cannot read: {e}"))),
    };
    let result = match plain.into_result() {
        Ok(r) => r,
        Err(e) => return Ok(failed(format!("tool '{name}' returned a result jp cannot use: {e}"))),
    };
    let serializer = serde_wasm_bindgen::Serializer::json_compatible();
    let js =
        serde::Serialize::serialize(&result, &serializer).map_err(|e| JsValue::from(JsError::new(&e.to_string())))?;
    Ok(crate::js::obj(&[
        ("tag", JsValue::from_str("success")),
        ("val", JsValue::from_str(&result.to_shown())),
        ("result", js),
    ]))
}

/// A tool-controlled text as jp shows it to a person (`jp_core::display::escape`: line breaks,
/// bidi and invisible characters written as escapes), for the page's question cards.
#[wasm_bindgen(js_name = shownText)]
pub fn shown_text(text: &str) -> String {
    jp_core::display::escape(text)
}

/// A policy question's reason as a person is shown it (`agent::surface::shown_reason`): escaped,
/// the tool's words in it quoted.
#[wasm_bindgen(js_name = shownReason)]
pub fn shown_reason(target: &str, reason: &str) -> String {
    surface::shown_reason(target, reason)
}

/// A policy question (`{tool, method, target, reason}`) as the params of an MCP form
/// elicitation — the words `jp mcp` uses (`agent::surface::inquiry_elicitation`).
#[wasm_bindgen(js_name = inquiryElicitation)]
pub fn inquiry_elicitation(question: JsValue) -> Result<JsValue, JsValue> {
    #[derive(Deserialize)]
    struct Asked {
        tool: String,
        method: String,
        target: String,
        reason: String,
    }
    let q: Asked = from_js("the question", &question)?;
    Ok(to_js(&surface::inquiry_elicitation(&q.tool, &q.method, &q.target, &q.reason)))
}
