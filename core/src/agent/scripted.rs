//! A model that replays a recording: the assistant's replies of a conversation, tool calls
//! included, given back in order whatever the conversation says. It drives the real turn loop —
//! tools, policy, sandbox, permission — without a model endpoint or a key: the offline demo
//! (`jp query --provider scripted`, the page's *demo* endpoint) and tests.
//!
//! A recording is JSON: `{"replies": [{"text": "…", "tool_calls": [{"name": "…", "arguments":
//! {…}}]}, …]}`. A reply without tool calls ends the turn; once the replies are used up, the
//! model says so (a turn never loops on a recording). A recording cannot adapt, so when a tool
//! call of a round failed or was refused the next reply ends the turn instead, saying so — with
//! its own words when it has `"if_failed": "…"` — rather than go on as if the call had worked.

use std::sync::Mutex;

use serde::Deserialize;
use serde_json::Value;

use super::{Message, Model, ModelReply, ModelTool, ProviderError, Role, ToolCallRequest};
use crate::maybe::BoxFuture;

/// The recording shipped with jp-host: it makes a small project (`jp-demo/`), greps it for its
/// TODO, reads the file and fixes it.
pub const DEMO_RECORDING: &str = include_str!("demo_recording.json");

/// One recorded reply.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordedReply {
    #[serde(default)]
    text: String,
    #[serde(default)]
    tool_calls: Vec<RecordedCall>,
    /// What the model says instead, ending the turn, when a tool call of the round before
    /// failed or was refused: a recording cannot adapt, so it stops rather than go on as if
    /// the call had worked.
    #[serde(default)]
    if_failed: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordedCall {
    name: String,
    #[serde(default = "empty_object")]
    arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Recording {
    replies: Vec<RecordedReply>,
}

/// Why a recording cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the recording is not valid: {0}; expected {{\"replies\": [{{\"text\": \"…\", \"tool_calls\": [{{\"name\": \"…\", \"arguments\": {{…}}}}]}}]}}"
)]
pub struct RecordingError(String);

/// A model that replays a recording.
#[derive(Debug)]
pub struct Scripted {
    replies: Vec<RecordedReply>,
    /// The next reply, and how many tool calls were handed out (for their ids).
    state: Mutex<(usize, usize)>,
}

impl Scripted {
    /// Read a recording (JSON text).
    pub fn from_json(text: &str) -> Result<Self, RecordingError> {
        let recording: Recording = serde_json::from_str(text).map_err(|e| RecordingError(e.to_string()))?;
        if recording.replies.is_empty() {
            return Err(RecordingError("it has no replies".into()));
        }
        for (i, reply) in recording.replies.iter().enumerate() {
            for call in &reply.tool_calls {
                if !call.arguments.is_object() {
                    return Err(RecordingError(format!(
                        "reply {}: the arguments of '{}' are not an object",
                        i + 1,
                        call.name
                    )));
                }
            }
        }
        Ok(Self { replies: recording.replies, state: Mutex::new((0, 0)) })
    }

    /// The recording shipped with jp-host ([`DEMO_RECORDING`]).
    pub fn demo() -> Result<Self, RecordingError> {
        Self::from_json(DEMO_RECORDING)
    }
}

impl Model for Scripted {
    /// A recording is not streamed: the whole reply at once.
    fn complete_streaming<'a>(
        &'a self,
        messages: &'a [Message],
        _tools: &'a [ModelTool],
        _on_text: crate::maybe::OnText<'a>,
    ) -> BoxFuture<'a, Result<ModelReply, ProviderError>> {
        Box::pin(async move {
            let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let Some(reply) = self.replies.get(state.0).cloned() else {
                return Ok(ModelReply { text: "(the recording has no more replies)".into(), tool_calls: Vec::new() });
            };
            // The results of the round before: the messages after the last assistant message.
            let last_round = messages.iter().rev().take_while(|m| m.role != Role::Assistant);
            let failed: Vec<&Message> = last_round.filter(|m| m.is_error).collect();
            if !failed.is_empty() {
                state.0 = self.replies.len();
                let text = reply.if_failed.unwrap_or_else(|| {
                    format!(
                        "Stopping here: {} tool call(s) above failed or were refused, and this recorded turn cannot adapt to that — none of its later steps ran.",
                        failed.len()
                    )
                });
                return Ok(ModelReply { text, tool_calls: Vec::new() });
            }
            state.0 += 1;
            let mut tool_calls = Vec::new();
            for call in reply.tool_calls {
                state.1 += 1;
                tool_calls.push(ToolCallRequest {
                    id: format!("call_{}", state.1),
                    name: call.name,
                    arguments: call.arguments,
                });
            }
            Ok(ModelReply { text: reply.text, tool_calls })
        })
    }
}

#[cfg(test)]
mod tests {
    use futures_executor::block_on;

    use super::*;

    #[test]
    fn replays_the_replies_in_order_then_says_it_has_no_more() {
        let m = Scripted::from_json(
            r#"{"replies": [{"text": "looking", "tool_calls": [{"name": "fs_read_file", "arguments": {"path": "a"}}, {"name": "fs_list_files"}]}, {"text": "done"}]}"#,
        )
        .unwrap();
        let first = block_on(m.complete(&[], &[])).unwrap();
        assert_eq!(first.text, "looking");
        let ids: Vec<&str> = first.tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["call_1", "call_2"]);
        assert_eq!(first.tool_calls[0].arguments["path"], "a");
        assert!(first.tool_calls[1].arguments.as_object().unwrap().is_empty());
        let second = block_on(m.complete(&[], &[])).unwrap();
        assert_eq!((second.text.as_str(), second.tool_calls.len()), ("done", 0));
        assert!(block_on(m.complete(&[], &[])).unwrap().text.contains("no more replies"));
    }

    #[test]
    fn a_bad_recording_says_what_is_wrong() {
        for (text, says) in [
            ("{}", "missing field `replies`"),
            (r#"{"replies": []}"#, "no replies"),
            (r#"{"replies": [{"tool_calls": [{"name": "x", "arguments": [1]}]}]}"#, "not an object"),
            (r#"{"replies": [{"txt": "typo"}]}"#, "unknown field `txt`"),
        ] {
            let e = Scripted::from_json(text).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("expected"), "{text}: {e}");
        }
    }

    #[test]
    fn the_demo_recording_reads_greps_and_edits() {
        let m = Scripted::demo().unwrap();
        let mut names = Vec::new();
        loop {
            let r = block_on(m.complete(&[], &[])).unwrap();
            if r.tool_calls.is_empty() {
                break;
            }
            names.extend(r.tool_calls.into_iter().map(|c| c.name));
        }
        for tool in ["fs_create_file", "fs_grep_files", "fs_read_file", "fs_modify_file"] {
            assert!(names.iter().any(|n| n == tool), "{tool} in {names:?}");
        }
    }
}
