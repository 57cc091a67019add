//! What a tool produces: results, errors, questions and the RFD 009 state machine.
//!
//! Two wire formats exist for a tool's final word. The legacy [`LegacyOutcome`] (`success` / `error` /
//! `needs_input`) is what existing stdio tools print; [`ToolState`] (`running` / `waiting` /
//! `stopped`) is RFD 009's. [`ToolState`]'s `Deserialize` accepts both, converting an `Outcome` with
//! `From<Outcome> for ToolState`, so every runtime parses tool output the same way.
//!
//! Content blocks follow RFD 058 (the MCP `CallToolResult` shape, typed after MCP 2025-11-25)
//! plus a `question` block: [`ContentBlock`], [`ToolResult`] (in `content.rs`). A component's
//! `jp:tool/content` result becomes one in [`component`], for every engine.

pub mod component;
mod content;

pub use content::{ContentBlock, Printed, ResourceContents, ResourceLink, ToolResult, encode_base64};

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A structured tool failure (RFD 009 `ToolError`, D11 `error` notification params).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolError {
    /// Human-readable message.
    pub message: String,
    /// Error chain, outermost first.
    #[serde(default)]
    pub trace: Vec<String>,
    /// Whether retrying the same call may succeed.
    #[serde(default)]
    pub transient: bool,
}

impl ToolError {
    /// A permanent error with no trace.
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), trace: Vec::new(), transient: false }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        for cause in &self.trace {
            write!(f, ": {cause}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ToolError {}

/// The kind of answer a [`Question`] expects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerType {
    /// Yes or no.
    Boolean,
    /// Free-form text.
    Text,
    /// One of a fixed set of options.
    Select {
        /// The options to choose from.
        options: Vec<String>,
    },
}

impl AnswerType {
    /// Parse the string form used by the `jp:tool` WIT (`"boolean"`, `"text"` or a JSON object
    /// `{"select":{"options":[…]}}`).
    pub fn from_wit(text: &str) -> Result<Self, serde_json::Error> {
        match text {
            "boolean" => Ok(Self::Boolean),
            "text" => Ok(Self::Text),
            other => serde_json::from_str(other),
        }
    }

    /// The string form used by the `jp:tool` WIT.
    pub fn to_wit(&self) -> String {
        match self {
            Self::Boolean => "boolean".into(),
            Self::Text => "text".into(),
            Self::Select { .. } => serde_json::to_string(self).unwrap_or_default(),
        }
    }
}

/// A question a tool needs answered before it can continue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// Unique id; the answer comes back under this key in `answers`.
    pub id: String,
    /// The text to present.
    pub text: String,
    /// What kind of answer is expected.
    pub answer_type: AnswerType,
    /// Optional default answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

/// The legacy result of a one-shot tool (what `jp_tool::Outcome` prints).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LegacyOutcome {
    /// The tool succeeded.
    Success {
        /// Output for the assistant.
        content: String,
    },
    /// The tool failed.
    Error {
        /// Human-readable message.
        message: String,
        /// Error chain.
        #[serde(default)]
        trace: Vec<String>,
        /// Whether retrying may help.
        #[serde(default)]
        transient: bool,
    },
    /// The tool needs an answer and will be run again with it.
    NeedsInput {
        /// The question to answer.
        question: Question,
    },
}

/// The state of a tool at any point of its life (RFD 009).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolState {
    /// Active, with output produced so far.
    Running {
        /// Output so far.
        content: Option<String>,
    },
    /// Paused until a question is answered (delivered with `apply`).
    Waiting {
        /// Output so far.
        content: Option<String>,
        /// The pending question.
        question: Question,
    },
    /// Terminal: the tool finished or failed.
    Stopped {
        /// The final output or the error.
        result: Result<String, ToolError>,
    },
}

impl ToolState {
    /// Whether this is the terminal state.
    pub fn is_stopped(&self) -> bool {
        matches!(self, Self::Stopped { .. })
    }

    /// The short state name used on the wire (`running`, `waiting`, `stopped`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Running { .. } => "running",
            Self::Waiting { .. } => "waiting",
            Self::Stopped { .. } => "stopped",
        }
    }

    /// The response an assistant sees for a stateful call on handle `id` (RFD 009):
    /// `{"id":"h_1","state":"running","content":"…"}`.
    pub fn to_handle_response(&self, id: &str) -> Value {
        let mut out = Map::new();
        out.insert("id".into(), Value::String(id.into()));
        out.insert("state".into(), Value::String(self.name().into()));
        match self {
            Self::Running { content } => {
                if let Some(c) = content {
                    out.insert("content".into(), Value::String(c.clone()));
                }
            }
            Self::Waiting { content, question } => {
                if let Some(c) = content {
                    out.insert("content".into(), Value::String(c.clone()));
                }
                out.insert("question".into(), serde_json::to_value(question).unwrap_or_default());
            }
            Self::Stopped { result: Ok(r) } => {
                out.insert("result".into(), Value::String(r.clone()));
            }
            Self::Stopped { result: Err(e) } => {
                out.insert("error".into(), serde_json::to_value(e).unwrap_or_default());
            }
        }
        Value::Object(out)
    }
}

impl From<LegacyOutcome> for ToolState {
    fn from(outcome: LegacyOutcome) -> Self {
        match outcome {
            LegacyOutcome::Success { content } => ToolState::Stopped { result: Ok(content) },
            LegacyOutcome::Error { message, trace, transient } => {
                ToolState::Stopped { result: Err(ToolError { message, trace, transient }) }
            }
            LegacyOutcome::NeedsInput { question } => ToolState::Waiting { content: None, question },
        }
    }
}

/// The wire form of [`ToolState`]: `{"type":"stopped","result":"…"}` or
/// `{"type":"stopped","error":{…}}` (D11 `state` notification).
#[derive(Serialize, Deserialize)]
struct StateWire {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    question: Option<Question>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<ToolError>,
}

impl Serialize for ToolState {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let wire = match self.clone() {
            ToolState::Running { content } => {
                StateWire { kind: "running".into(), content, question: None, result: None, error: None }
            }
            ToolState::Waiting { content, question } => {
                StateWire { kind: "waiting".into(), content, question: Some(question), result: None, error: None }
            }
            ToolState::Stopped { result } => {
                let (result, error) = match result {
                    Ok(r) => (Some(r), None),
                    Err(e) => (None, Some(e)),
                };
                StateWire { kind: "stopped".into(), content: None, question: None, result, error }
            }
        };
        wire.serialize(serializer)
    }
}

/// The `type` values that identify the RFD 009 format.
const STATE_TYPES: &[&str] = &["spawned", "running", "waiting", "stopped"];
/// The `type` values that identify the legacy `Outcome` format.
const OUTCOME_TYPES: &[&str] = &["success", "error", "needs_input"];

impl<'de> Deserialize<'de> for ToolState {
    /// Accepts both formats (RFD 009, "Backward compatibility of ToolState serialization").
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| D::Error::custom("tool state must be an object with a string \"type\" field"))?;
        if OUTCOME_TYPES.contains(&kind) {
            let outcome: LegacyOutcome = serde_json::from_value(value).map_err(D::Error::custom)?;
            return Ok(outcome.into());
        }
        if !STATE_TYPES.contains(&kind) {
            return Err(D::Error::custom(format!(
                "unknown tool state type '{kind}': expected one of running, waiting, stopped \
                 (RFD 009) or success, error, needs_input (legacy Outcome)"
            )));
        }
        let wire: StateWire = serde_json::from_value(value).map_err(D::Error::custom)?;
        match wire.kind.as_str() {
            "spawned" | "running" => Ok(ToolState::Running { content: wire.content }),
            "waiting" => {
                let question = wire.question.ok_or_else(|| D::Error::custom("a waiting state needs a \"question\""))?;
                Ok(ToolState::Waiting { content: wire.content, question })
            }
            _ => match (wire.result, wire.error) {
                (_, Some(error)) => Ok(ToolState::Stopped { result: Err(error) }),
                (result, None) => Ok(ToolState::Stopped { result: Ok(result.or(wire.content).unwrap_or_default()) }),
            },
        }
    }
}

/// What the host does with a tool call (RFD 009 `ToolCommand`).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCommand {
    /// Start the tool with these arguments (without `action`).
    Spawn {
        /// The tool's own arguments.
        args: Map<String, Value>,
    },
    /// Read the current state of handle `id`.
    Fetch {
        /// Handle id (`h_1`, …).
        id: String,
    },
    /// Send input to handle `id`.
    Apply {
        /// Handle id.
        id: String,
        /// The input or answer.
        input: Value,
    },
    /// Stop handle `id`.
    Abort {
        /// Handle id.
        id: String,
    },
}

/// Why tool arguments are not a valid [`ToolCommand`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidCommand(pub String);

impl ToolCommand {
    /// Parse the stateful form of tool arguments. Returns `Ok(None)` when there is no `action`
    /// field: the call is one-shot (RFD 009, "Detecting stateful vs. one-shot tools").
    pub fn from_arguments(args: &Map<String, Value>) -> Result<Option<Self>, InvalidCommand> {
        let Some(action) = args.get("action") else { return Ok(None) };
        let action = action
            .as_str()
            .ok_or_else(|| InvalidCommand("'action' must be a string: one of spawn, fetch, apply, abort".into()))?;
        let id = || -> Result<String, InvalidCommand> {
            args.get("id").and_then(Value::as_str).map(str::to_owned).ok_or_else(|| {
                InvalidCommand(format!("action '{action}' needs an 'id' string naming the handle (e.g. \"h_1\")"))
            })
        };
        Ok(Some(match action {
            "spawn" => {
                let mut rest = args.clone();
                rest.remove("action");
                ToolCommand::Spawn { args: rest }
            }
            "fetch" => ToolCommand::Fetch { id: id()? },
            "abort" => ToolCommand::Abort { id: id()? },
            "apply" => ToolCommand::Apply {
                id: id()?,
                input: args
                    .get("input")
                    .cloned()
                    .ok_or_else(|| InvalidCommand("action 'apply' needs an 'input' value".into()))?,
            },
            other => {
                return Err(InvalidCommand(format!(
                    "unknown action '{other}': expected one of spawn, fetch, apply, abort"
                )));
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q() -> Question {
        Question {
            id: "overwrite".into(),
            text: "Overwrite?".into(),
            answer_type: AnswerType::Boolean,
            default: Some(json!(false)),
        }
    }

    #[test]
    fn both_formats_deserialize() {
        let cases = [
            (json!({"type":"success","content":"ok"}), ToolState::Stopped { result: Ok("ok".into()) }),
            (
                json!({"type":"error","message":"boom","trace":["io"],"transient":true}),
                ToolState::Stopped {
                    result: Err(ToolError { message: "boom".into(), trace: vec!["io".into()], transient: true }),
                },
            ),
            (
                json!({"type":"needs_input","question":{"id":"overwrite","text":"Overwrite?","answer_type":"boolean","default":false}}),
                ToolState::Waiting { content: None, question: q() },
            ),
            (json!({"type":"running","content":"diff"}), ToolState::Running { content: Some("diff".into()) }),
            (json!({"type":"spawned"}), ToolState::Running { content: None }),
            (
                json!({"type":"waiting","content":"Confirm?","question":{"id":"overwrite","text":"Overwrite?","answer_type":"boolean","default":false}}),
                ToolState::Waiting { content: Some("Confirm?".into()), question: q() },
            ),
            (
                json!({"type":"stopped","result":"Staged 3 hunks."}),
                ToolState::Stopped { result: Ok("Staged 3 hunks.".into()) },
            ),
            (
                json!({"type":"stopped","error":{"message":"nope"}}),
                ToolState::Stopped { result: Err(ToolError::new("nope")) },
            ),
        ];
        for (input, expected) in cases {
            let got: ToolState = serde_json::from_value(input.clone()).unwrap();
            assert_eq!(got, expected, "{input}");
        }
    }

    #[test]
    fn unknown_state_type_names_both_formats() {
        let err = serde_json::from_value::<ToolState>(json!({"type":"done"})).unwrap_err();
        assert!(err.to_string().contains("running, waiting, stopped"), "{err}");
        assert!(err.to_string().contains("success, error, needs_input"), "{err}");
        let err = serde_json::from_value::<ToolState>(json!({"type":"waiting"})).unwrap_err();
        assert!(err.to_string().contains("question"), "{err}");
    }

    #[test]
    fn tool_state_round_trips() {
        for state in [
            ToolState::Running { content: None },
            ToolState::Waiting { content: Some("c".into()), question: q() },
            ToolState::Stopped { result: Ok("x".into()) },
            ToolState::Stopped { result: Err(ToolError::new("y")) },
        ] {
            let text = serde_json::to_string(&state).unwrap();
            assert_eq!(serde_json::from_str::<ToolState>(&text).unwrap(), state, "{text}");
        }
    }

    #[test]
    fn answer_type_wit_forms() {
        for (text, at) in [
            ("boolean", AnswerType::Boolean),
            ("text", AnswerType::Text),
            (r#"{"select":{"options":["a","b"]}}"#, AnswerType::Select { options: vec!["a".into(), "b".into()] }),
        ] {
            assert_eq!(AnswerType::from_wit(text).unwrap(), at);
            assert_eq!(at.to_wit(), text);
        }
        assert!(AnswerType::from_wit("number").is_err());
    }

    #[test]
    fn commands_from_arguments() {
        let args = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(ToolCommand::from_arguments(&args(json!({"package":"x"}))).unwrap(), None);
        assert_eq!(
            ToolCommand::from_arguments(&args(json!({"action":"spawn","command":"stage"}))).unwrap(),
            Some(ToolCommand::Spawn { args: args(json!({"command":"stage"})) })
        );
        assert_eq!(
            ToolCommand::from_arguments(&args(json!({"action":"apply","id":"h_1","input":"y"}))).unwrap(),
            Some(ToolCommand::Apply { id: "h_1".into(), input: json!("y") })
        );
        assert_eq!(
            ToolCommand::from_arguments(&args(json!({"action":"abort","id":"h_2"}))).unwrap(),
            Some(ToolCommand::Abort { id: "h_2".into() })
        );
        let err = ToolCommand::from_arguments(&args(json!({"action":"fetch"}))).unwrap_err();
        assert!(err.0.contains("'id'"));
        let err = ToolCommand::from_arguments(&args(json!({"action":"apply","id":"h_1"}))).unwrap_err();
        assert!(err.0.contains("'input'"));
        let err = ToolCommand::from_arguments(&args(json!({"action":"pause"}))).unwrap_err();
        assert!(err.0.contains("spawn, fetch, apply, abort"));
    }

    #[test]
    fn handle_response_shape() {
        let s = ToolState::Running { content: Some("Stage this hunk?".into()) };
        assert_eq!(s.to_handle_response("h_1"), json!({"id":"h_1","state":"running","content":"Stage this hunk?"}));
        let s = ToolState::Stopped { result: Ok("Staged 3 hunks.".into()) };
        assert_eq!(s.to_handle_response("h_1"), json!({"id":"h_1","state":"stopped","result":"Staged 3 hunks."}));
    }
}
