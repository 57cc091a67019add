//! The Anthropic Messages API (`{base_url}/v1/messages`): `tool_use` blocks in, `tool_result`
//! blocks back. Answers are read whole, as JSON or as a server-sent event stream.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Message, ModelReply, ModelTool, ProviderError, Role, ToolCallRequest};
use crate::host::HttpClient;
use crate::protocol::Header;

/// The API version sent.
const VERSION: &str = "2023-06-01";

/// A Messages API endpoint.
pub struct Anthropic {
    /// e.g. `https://api.anthropic.com`.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// The API key (a secret: sent only in the `x-api-key` header).
    pub api_key: Option<String>,
    /// Most tokens in an answer.
    pub max_tokens: u32,
    /// Ask for a server-sent event stream.
    pub stream: bool,
    /// The client the requests go through.
    pub http: Arc<dyn HttpClient>,
}

impl std::fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Anthropic")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

/// The request body: system messages become `system`; tool results are `tool_result` blocks of
/// a user message (consecutive ones merged, as the API wants).
pub fn request_body(model: &str, max_tokens: u32, messages: &[Message], tools: &[ModelTool], stream: bool) -> Value {
    let system: Vec<&str> = messages.iter().filter(|m| m.role == Role::System).map(|m| m.content.as_str()).collect();
    let mut out: Vec<Value> = Vec::new();
    for m in messages.iter().filter(|m| m.role != Role::System) {
        let (role, blocks) = match m.role {
            Role::Assistant => {
                let mut blocks = Vec::new();
                if !m.content.is_empty() {
                    blocks.push(json!({"type": "text", "text": m.content}));
                }
                for c in &m.tool_calls {
                    blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}));
                }
                ("assistant", blocks)
            }
            Role::Tool => (
                "user",
                vec![
                    json!({"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content, "is_error": m.is_error}),
                ],
            ),
            _ => ("user", vec![json!({"type": "text", "text": m.content})]),
        };
        match out.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(list) = last["content"].as_array_mut() {
                    list.extend(blocks);
                }
            }
            _ => out.push(json!({"role": role, "content": blocks})),
        }
    }
    let mut body = json!({"model": model, "max_tokens": max_tokens, "messages": out, "stream": stream});
    if !system.is_empty() {
        body["system"] = json!(system.join("\n\n"));
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(
            tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
                .collect(),
        );
    }
    body
}

/// A non-streamed answer.
pub fn parse_response(body: &[u8]) -> Result<ModelReply, ProviderError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| ProviderError::Malformed(format!("not JSON: {e}")))?;
    let blocks = v["content"].as_array().ok_or_else(|| ProviderError::Malformed("no `content` array".into()))?;
    let mut reply = ModelReply::default();
    for b in blocks {
        match b["type"].as_str() {
            Some("text") => reply.text.push_str(b["text"].as_str().unwrap_or_default()),
            Some("tool_use") => reply.tool_calls.push(ToolCallRequest {
                id: b["id"].as_str().unwrap_or_default().to_owned(),
                name: b["name"].as_str().unwrap_or_default().to_owned(),
                arguments: b["input"].clone(),
            }),
            _ => {}
        }
    }
    Ok(reply)
}

/// A streamed answer: `content_block_start`/`content_block_delta` events (text deltas and
/// `input_json_delta` fragments of tool inputs) up to `message_stop`; an `error` event or a
/// stream without `message_stop` is an error.
pub fn parse_stream(body: &[u8]) -> Result<ModelReply, ProviderError> {
    let text = std::str::from_utf8(body).map_err(|_| ProviderError::Malformed("the stream is not UTF-8".into()))?;
    let mut reply = ModelReply::default();
    let mut blocks: Vec<(Option<(String, String)>, String)> = Vec::new(); // tool (id, name), json text
    let mut stopped = false;
    for line in text.lines() {
        let Some(data) = line.strip_prefix("data:") else { continue };
        let v: Value = serde_json::from_str(data.trim())
            .map_err(|e| ProviderError::Malformed(format!("a stream event is not JSON: {e}")))?;
        let index = v["index"].as_u64().unwrap_or(0) as usize;
        match v["type"].as_str() {
            Some("content_block_start") => {
                while blocks.len() <= index {
                    blocks.push((None, String::new()));
                }
                let b = &v["content_block"];
                if b["type"] == "tool_use" {
                    blocks[index].0 = Some((
                        b["id"].as_str().unwrap_or_default().into(),
                        b["name"].as_str().unwrap_or_default().into(),
                    ));
                } else if let Some(t) = b["text"].as_str() {
                    reply.text.push_str(t);
                }
            }
            Some("content_block_delta") => {
                let d = &v["delta"];
                if let Some(t) = d["text"].as_str() {
                    reply.text.push_str(t);
                }
                if let (Some(part), Some(block)) = (d["partial_json"].as_str(), blocks.get_mut(index)) {
                    block.1.push_str(part);
                }
            }
            Some("message_stop") => {
                stopped = true;
                break;
            }
            Some("error") => {
                let message = v.pointer("/error/message").and_then(Value::as_str).unwrap_or("unknown error").to_owned();
                return Err(ProviderError::Server { status: 200, message });
            }
            _ => {}
        }
    }
    if !stopped {
        return Err(ProviderError::Malformed("the stream ended before `message_stop`".into()));
    }
    for (tool, json_text) in blocks {
        let Some((id, name)) = tool else { continue };
        let arguments = if json_text.trim().is_empty() {
            json!({})
        } else {
            serde_json::from_str(&json_text)
                .map_err(|e| ProviderError::Malformed(format!("the input of the call of '{name}' is not JSON: {e}")))?
        };
        reply.tool_calls.push(ToolCallRequest { id, name, arguments });
    }
    Ok(reply)
}

/// The text of one Messages stream event (a `text_delta`).
fn delta_text(v: &Value) -> Option<&str> {
    (v.get("type").and_then(Value::as_str) == Some("content_block_delta"))
        .then(|| v.pointer("/delta/text").and_then(Value::as_str))
        .flatten()
}

impl super::Endpoint for Anthropic {
    const READING: super::Reading = super::Reading { whole: parse_response, stream: parse_stream, delta: delta_text };

    fn http(&self) -> &dyn HttpClient {
        &*self.http
    }

    fn streams(&self) -> bool {
        self.stream
    }

    fn request(&self, messages: &[Message], tools: &[ModelTool]) -> (String, Vec<Header>, Value) {
        let mut headers = vec![Header { name: "anthropic-version".into(), value: VERSION.into() }];
        if let Some(key) = &self.api_key {
            headers.push(Header { name: "x-api-key".into(), value: key.clone() });
        }
        let url = format!("{}/v1/messages", self.base_url.trim_end_matches('/'));
        (url, headers, request_body(&self.model, self.max_tokens, messages, tools, self.stream))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_results_become_user_blocks_merged_and_system_is_separate() {
        let messages = vec![
            Message::text(Role::System, "be brief"),
            Message::text(Role::User, "go"),
            Message {
                tool_calls: vec![
                    ToolCallRequest { id: "t1".into(), name: "a".into(), arguments: json!({"x": 1}) },
                    ToolCallRequest { id: "t2".into(), name: "b".into(), arguments: json!({}) },
                ],
                ..Message::text(Role::Assistant, "calling")
            },
            Message::tool_result("t1", "one", false),
            Message::tool_result("t2", "denied", true),
        ];
        let body = request_body("m", 1024, &messages, &[], false);
        assert_eq!(body["system"], "be brief");
        let m = body["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[1]["content"][1]["type"], "tool_use");
        assert_eq!(m[1]["content"][1]["input"], json!({"x": 1}));
        assert_eq!(m[2]["role"], "user");
        assert_eq!(m[2]["content"][1]["tool_use_id"], "t2");
        assert_eq!(m[2]["content"][1]["is_error"], true);
    }

    #[test]
    fn answers_whole_and_streamed() {
        let whole = br#"{"content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"u1","name":"fs_read_file","input":{"path":"a"}}]}"#;
        let r = parse_response(whole).unwrap();
        assert_eq!(r.text, "hi");
        assert_eq!(r.tool_calls[0].arguments, json!({"path": "a"}));
        let stream = concat!(
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"u2\",\"name\":\"fs_grep_files\",\"input\":{}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"pattern\\\":\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"x\\\"}\"}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        let r = parse_stream(stream.as_bytes()).unwrap();
        assert_eq!(r.text, "Hi");
        assert_eq!(r.tool_calls[0].id, "u2");
        assert_eq!(r.tool_calls[0].arguments, json!({"pattern": "x"}));
        assert!(
            matches!(parse_stream(b"data: {\"type\":\"message_start\"}\n"), Err(ProviderError::Malformed(m)) if m.contains("message_stop"))
        );
        assert!(matches!(
            parse_stream(
                b"data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n"
            ),
            Err(ProviderError::Server { .. })
        ));
    }
}
