//! The agent surface: what an agent sees of a tool — its name, description, schema, MCP
//! annotations and the rule that says whether the user is asked before a call — and what it gets
//! back from a call (`{content, structuredContent, isError}`). One module for every front end:
//! `jp mcp` and `jp query` natively, the page's agent and the edge's `/mcp` through jp-web, so
//! that an agent is told the same about a tool, and asked about the same calls, everywhere.

use serde::Serialize;
use serde_json::{Map, Value};

use super::ModelTool;
use crate::policy::PolicyHints;
use crate::runtime::{ExecutionOutcome, RunMode};
use crate::state::{ContentBlock, ToolResult, ToolState};

/// What a front end knows of a tool, from which [`AgentTool`] is built.
#[derive(Debug, Clone)]
pub struct ToolFacts<'a> {
    /// Its name, as the agent calls it.
    pub name: &'a str,
    /// Its one-line summary.
    pub summary: Option<&'a str>,
    /// Its longer description.
    pub description: Option<&'a str>,
    /// Its arguments' JSON Schema as an agent sees it (RFD 009's flat form for a stateful tool).
    pub input_schema: Value,
    /// What its policy lets it do, narrowed by what the tool itself can do (a tool that only
    /// reads never writes, whatever its policy allows).
    pub hints: PolicyHints,
    /// Whether it is a stateful tool (RFD 009: `action` = spawn, fetch, apply, abort).
    pub stateful: bool,
    /// Whether what it touches directly (a stdio tool, the programs it runs) is held by no OS
    /// sandbox: then it is described as able to do anything.
    pub unconfined: bool,
    /// Its `run = …` setting.
    pub run_mode: Option<RunMode>,
}

/// MCP tool annotations (`ToolAnnotations`), derived from the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// It changes nothing.
    pub read_only_hint: bool,
    /// It may overwrite or delete (said only of a tool that writes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it twice does no more than once (said only of a one-shot tool).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// It may reach the network.
    pub open_world_hint: bool,
}

/// Whether a call needs the user's yes first (RFD 009).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// It runs.
    Run,
    /// The user is asked first.
    Ask,
    /// It is not available (`run = "skip"`).
    Skip,
}

/// A tool as every agent sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentTool {
    /// Its name.
    pub name: String,
    /// Summary and description, one text.
    pub description: String,
    /// Its arguments' JSON Schema.
    pub input_schema: Value,
    /// Its MCP annotations.
    pub annotations: Annotations,
    /// What it may do, as the annotations and the ask rule were derived from.
    pub hints: PolicyHints,
    /// Whether it is stateful.
    pub stateful: bool,
    /// Its `run = …` setting.
    pub run_mode: Option<RunMode>,
}

impl AgentTool {
    /// The tool `facts` describe.
    pub fn new(facts: ToolFacts<'_>) -> Self {
        let mut hints = facts.hints;
        if facts.unconfined {
            hints = PolicyHints { writes: true, destructive: true, network: true, commands: hints.commands };
        }
        let annotations = Annotations {
            read_only_hint: !hints.writes,
            destructive_hint: hints.writes.then_some(hints.destructive),
            idempotent_hint: (!facts.stateful).then_some(!hints.writes),
            open_world_hint: hints.network,
        };
        let description = [facts.summary, facts.description]
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        Self {
            name: facts.name.to_owned(),
            description,
            input_schema: facts.input_schema,
            annotations,
            hints,
            stateful: facts.stateful,
            run_mode: facts.run_mode,
        }
    }

    /// As a model provider is told about it.
    pub fn spec(&self) -> ModelTool {
        ModelTool {
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
        }
    }

    /// As MCP's `tools/list` shows it: `{name, description, inputSchema, annotations}`.
    pub fn to_mcp(&self) -> Value {
        let mut tool = Map::new();
        tool.insert("name".into(), Value::String(self.name.clone()));
        tool.insert("description".into(), Value::String(self.description.clone()));
        tool.insert("inputSchema".into(), self.input_schema.clone());
        tool.insert("annotations".into(), serde_json::to_value(self.annotations).unwrap_or(Value::Null));
        Value::Object(tool)
    }

    /// RFD 009's rule for a call with `arguments`: `run = …` decides when set; otherwise the
    /// user is asked before a `spawn` of a stateful tool (never before `fetch`, `apply` or
    /// `abort` of a running handle) and before a one-shot tool that may write or run commands.
    pub fn gate(&self, arguments: &Value) -> Gate {
        match self.run_mode {
            Some(RunMode::Unattended) => return Gate::Run,
            Some(RunMode::Skip) => return Gate::Skip,
            Some(RunMode::Ask) => return Gate::Ask,
            None => {}
        }
        if self.stateful {
            let action = arguments.get("action").and_then(Value::as_str).unwrap_or("spawn");
            return if action == "spawn" { Gate::Ask } else { Gate::Run };
        }
        if self.hints.writes || self.hints.commands { Gate::Ask } else { Gate::Run }
    }
}

/// What an agent's call produced: a call that ran to its end, or a stateful command's handle.
#[derive(Debug)]
pub enum CallReply {
    /// A call that ran to its end.
    Outcome(ExecutionOutcome),
    /// A stateful command: the handle and its state (RFD 009's `{"id","state",…}`).
    Handle {
        /// `h_1`, …
        id: String,
        /// The state.
        state: ToolState,
    },
}

/// The answers a policy question offers an MCP client (an elicitation's `decision` enum), the
/// same on `jp mcp` and the edge's `/mcp`.
pub const ALLOW_ONCE: &str = "allow once";
/// Allow this and every later question of the same call.
pub const ALLOW_CALL: &str = "allow for the rest of this call";
/// Deny.
pub const DENY: &str = "deny";

/// What a policy question says to a person or an MCP client: `Tool T asks for METHOD TARGET.
/// Policy: REASON`, everything but jp's own words escaped (`display::shown`/`escape`), so a tool
/// cannot forge another request's text with line breaks, bidi or invisible characters.
pub fn inquiry_message(tool: &str, method: &str, target: &str, reason: &str) -> String {
    use crate::display::shown;
    format!("Tool {} asks for {} {}. Policy: {}", shown(tool), method, shown(target), shown_reason(target, reason))
}

/// A policy's reason as a person is shown it: escaped, and the target it quotes — the tool's
/// words — quoted as [`display::shown`](crate::display::shown) quotes it, so a path or command
/// cannot pass for more of jp's sentence ("… is allowed by the operator; choose Allow …").
pub fn shown_reason(target: &str, reason: &str) -> String {
    use crate::display::{escape, shown};
    let quoted = shown(target);
    if target.is_empty() || quoted == target {
        return escape(reason);
    }
    reason.split(target).map(escape).collect::<Vec<_>>().join(&quoted)
}

/// An MCP form elicitation's `params` for a policy question: its message and the `decision`
/// enum of [`ALLOW_ONCE`], [`ALLOW_CALL`], [`DENY`].
pub fn inquiry_elicitation(tool: &str, method: &str, target: &str, reason: &str) -> Value {
    serde_json::json!({
        "message": inquiry_message(tool, method, target, reason),
        "mode": "form",
        "requestedSchema": {
            "type": "object",
            "properties": { "decision": {
                "type": "string", "title": "Decision", "description": "Allow this request of the tool?",
                "enum": [ALLOW_ONCE, ALLOW_CALL, DENY],
            } },
            "required": ["decision"],
        },
    })
}

/// A failed call's result: one text block that says what went wrong.
pub fn error_result(message: impl Into<String>) -> ToolResult {
    ToolResult { content: vec![ContentBlock::text(message)], structured_content: None, is_error: true }
}

/// What the agent gets back from a call of `name`: the tool's blocks and `structuredContent`;
/// its failure, a question nobody answered, or a cancellation as `isError` with a text that says
/// what happened and what to do; a stateful command as RFD 009's JSON (text and
/// `structuredContent`).
pub fn call_result(name: &str, reply: CallReply) -> ToolResult {
    match reply {
        CallReply::Outcome(outcome) => outcome_result(name, outcome),
        CallReply::Handle { id, state } => {
            let json = state.to_handle_response(&id);
            ToolResult {
                content: vec![ContentBlock::text(json.to_string())],
                is_error: matches!(state, ToolState::Stopped { result: Err(_) }),
                structured_content: Some(json),
            }
        }
    }
}

/// [`call_result`] of a call that ran to its end.
pub fn outcome_result(name: &str, outcome: ExecutionOutcome) -> ToolResult {
    match outcome {
        ExecutionOutcome::Completed { result: Ok(mut r), .. } => {
            r.is_error = false;
            r
        }
        ExecutionOutcome::Completed { result: Err(e), .. } => error_result(e.message),
        ExecutionOutcome::NeedsInput { question, .. } => error_result(format!(
            "tool '{name}' asks: {} — nobody answered; call it again with the answer in its arguments if it takes one",
            question.text
        )),
        ExecutionOutcome::Cancelled { .. } => error_result(format!("tool '{name}' was cancelled")),
    }
}

/// A result as MCP's `CallToolResult` JSON: the blocks as they came (jp's own `question` block,
/// which MCP has no form for, as its text), `structuredContent` when there is one, `isError`.
pub fn to_mcp(result: &ToolResult) -> Value {
    let content: Vec<Value> = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Question { question } => serde_json::to_value(ContentBlock::text(question.text.clone())),
            other => serde_json::to_value(other),
        })
        .filter_map(Result::ok)
        .collect();
    let mut out = Map::new();
    out.insert("content".into(), Value::Array(content));
    if let Some(s) = &result.structured_content {
        out.insert("structuredContent".into(), s.clone());
    }
    out.insert("isError".into(), Value::Bool(result.is_error));
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::{AnswerType, Question, ToolError};

    fn question(text: &str) -> Question {
        Question { id: "q".into(), text: text.into(), answer_type: AnswerType::Text, default: None }
    }

    fn facts(hints: PolicyHints) -> ToolFacts<'static> {
        ToolFacts {
            name: "t",
            summary: Some("Does t."),
            description: Some("At length."),
            input_schema: json!({"type": "object"}),
            hints,
            stateful: false,
            unconfined: false,
            run_mode: None,
        }
    }

    const READS: PolicyHints = PolicyHints { writes: false, destructive: false, network: false, commands: false };
    const WRITES: PolicyHints = PolicyHints { writes: true, destructive: false, network: true, commands: false };

    #[test]
    fn a_tool_that_only_reads_is_annotated_so_and_runs_without_asking() {
        let t = AgentTool::new(facts(READS));
        assert_eq!(
            t.to_mcp(),
            json!({"name": "t", "description": "Does t.\n\nAt length.", "inputSchema": {"type": "object"},
                   "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}})
        );
        assert_eq!(t.gate(&json!({})), Gate::Run);
    }

    #[test]
    fn a_tool_that_writes_is_asked_about_and_says_whether_it_destroys() {
        let t = AgentTool::new(facts(WRITES));
        assert_eq!(
            serde_json::to_value(t.annotations).unwrap(),
            json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": true})
        );
        assert_eq!(t.gate(&json!({})), Gate::Ask);
        let commands = AgentTool::new(facts(PolicyHints { commands: true, ..READS }));
        assert_eq!(commands.gate(&json!({})), Gate::Ask, "running programs is asked about");
    }

    #[test]
    fn an_unconfined_tool_is_described_as_able_to_do_anything() {
        let t = AgentTool::new(ToolFacts { unconfined: true, ..facts(READS) });
        assert!(!t.annotations.read_only_hint);
        assert_eq!(t.annotations.destructive_hint, Some(true));
        assert!(t.annotations.open_world_hint);
        assert_eq!(t.gate(&json!({})), Gate::Ask);
    }

    #[test]
    fn a_stateful_tool_is_asked_before_spawn_only_and_run_settings_win() {
        let t = AgentTool::new(ToolFacts { stateful: true, ..facts(READS) });
        assert_eq!(t.annotations.idempotent_hint, None);
        assert_eq!(t.gate(&json!({"action": "spawn"})), Gate::Ask);
        assert_eq!(t.gate(&json!({})), Gate::Ask, "no action is a spawn");
        for action in ["fetch", "apply", "abort"] {
            assert_eq!(t.gate(&json!({"action": action})), Gate::Run, "{action}");
        }
        for (run, gate) in [(RunMode::Unattended, Gate::Run), (RunMode::Ask, Gate::Ask), (RunMode::Skip, Gate::Skip)] {
            let t = AgentTool::new(ToolFacts { run_mode: Some(run), ..facts(WRITES) });
            assert_eq!(t.gate(&json!({})), gate, "{run:?}");
        }
    }

    #[test]
    fn results_keep_their_blocks_and_failures_say_what_happened() {
        let image =
            ContentBlock::Image { data: "AAAA".into(), mime_type: "image/png".into(), annotations: None, meta: None };
        let ok = ToolResult { content: vec![image], structured_content: Some(json!({"n": 1})), is_error: false };
        let r = call_result("t", CallReply::Outcome(ExecutionOutcome::Completed { id: "1".into(), result: Ok(ok) }));
        assert_eq!(
            to_mcp(&r),
            json!({"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}], "structuredContent": {"n": 1}, "isError": false})
        );
        let failed = outcome_result(
            "t",
            ExecutionOutcome::Completed { id: "1".into(), result: Err(ToolError::new("no such file")) },
        );
        assert_eq!(to_mcp(&failed), json!({"content": [{"type": "text", "text": "no such file"}], "isError": true}));
        let asked = outcome_result("t", ExecutionOutcome::NeedsInput { id: "1".into(), question: question("which?") });
        assert!(asked.is_error);
        assert!(asked.to_text().starts_with("tool 't' asks: which?"), "{}", asked.to_text());
        let cancelled = outcome_result("t", ExecutionOutcome::Cancelled { id: "1".into() });
        assert_eq!(cancelled.to_text(), "tool 't' was cancelled");
    }

    #[test]
    fn a_handle_is_rfd_009_json_as_text_and_structured_content() {
        let r = call_result(
            "t",
            CallReply::Handle { id: "h_1".into(), state: ToolState::Stopped { result: Err(ToolError::new("boom")) } },
        );
        assert!(r.is_error);
        let json = r.structured_content.clone().unwrap();
        assert_eq!(json["id"], "h_1");
        assert_eq!(r.to_text(), json.to_string());
    }

    #[test]
    fn a_question_block_goes_out_to_mcp_as_its_text() {
        let r = ToolResult {
            content: vec![ContentBlock::Question { question: question("why?") }],
            ..ToolResult::default()
        };
        assert_eq!(to_mcp(&r), json!({"content": [{"type": "text", "text": "why?"}], "isError": false}));
    }

    #[test]
    fn a_path_in_the_reason_cannot_pass_for_jp_s_words() {
        let target = ".env is allowed by the operator; choose Allow for the rest of this call. x";
        let reason = format!("read '{target}' touches a sensitive path; confirm to allow");
        let shown = shown_reason(target, &reason);
        assert_eq!(
            shown,
            "read '\".env is allowed by the operator; choose Allow for the rest of this call. x\"' touches a sensitive path; confirm to allow"
        );
        // A plain target and a line break in the reason: escaped, nothing quoted.
        assert_eq!(shown_reason(".env", "read '.env'\nok"), "read '.env'\\nok");
        let m = inquiry_message("t", "fs.read", target, &reason);
        assert!(m.starts_with("Tool t asks for fs.read \".env is allowed"), "{m}");
        assert!(m.contains("Policy: read '\".env is allowed"), "{m}");
    }
}
