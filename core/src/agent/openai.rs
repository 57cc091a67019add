//! OpenAI-compatible Chat Completions (`{base_url}/chat/completions`): OpenAI itself and local
//! servers such as llama.cpp, Ollama and vLLM. Answers are read whole, as JSON or as a
//! server-sent event stream (`stream: true`).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{Message, ModelReply, ModelTool, ProviderError, Role, ToolCallRequest};
use crate::host::HttpClient;
use crate::protocol::Header;

/// A Chat Completions endpoint.
pub struct OpenAi {
    /// e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// The API key (a secret: sent only in the Authorization header).
    pub api_key: Option<String>,
    /// Ask for a server-sent event stream.
    pub stream: bool,
    /// The client the requests go through.
    pub http: Arc<dyn HttpClient>,
}

impl std::fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAi").field("base_url", &self.base_url).field("model", &self.model).finish_non_exhaustive()
    }
}

/// The request body for `messages` and `tools`.
pub fn request_body(model: &str, messages: &[Message], tools: &[ModelTool], stream: bool) -> Value {
    let messages: Vec<Value> = messages
        .iter()
        .map(|m| {
            let role = match m.role {
                Role::System => "system",
                Role::User => "user",
                Role::Assistant => "assistant",
                Role::Tool => "tool",
            };
            let mut o = Map::new();
            o.insert("role".into(), json!(role));
            o.insert("content".into(), json!(m.content));
            if !m.tool_calls.is_empty() {
                let calls: Vec<Value> = m
                    .tool_calls
                    .iter()
                    .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments.to_string()}}))
                    .collect();
                o.insert("tool_calls".into(), Value::Array(calls));
            }
            if let Some(id) = &m.tool_call_id {
                o.insert("tool_call_id".into(), json!(id));
            }
            Value::Object(o)
        })
        .collect();
    let mut body = json!({ "model": model, "messages": messages, "stream": stream });
    if !tools.is_empty() {
        body["tools"] = Value::Array(
            tools
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}))
                .collect(),
        );
    }
    body
}

fn arguments(name: &str, text: &str) -> Result<Value, ProviderError> {
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(text)
        .map_err(|e| ProviderError::Malformed(format!("the arguments of the call of '{name}' are not JSON: {e}")))
}

/// A non-streamed answer.
pub fn parse_response(body: &[u8]) -> Result<ModelReply, ProviderError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| ProviderError::Malformed(format!("not JSON: {e}")))?;
    let message =
        v.pointer("/choices/0/message").ok_or_else(|| ProviderError::Malformed("no choices[0].message".into()))?;
    let mut reply =
        ModelReply { text: message["content"].as_str().unwrap_or_default().to_owned(), ..Default::default() };
    for c in message["tool_calls"].as_array().into_iter().flatten() {
        let name = c.pointer("/function/name").and_then(Value::as_str).unwrap_or_default().to_owned();
        let args = arguments(&name, c.pointer("/function/arguments").and_then(Value::as_str).unwrap_or_default())?;
        reply.tool_calls.push(ToolCallRequest {
            id: c["id"].as_str().unwrap_or_default().to_owned(),
            name,
            arguments: args,
        });
    }
    Ok(reply)
}

/// A streamed answer (server-sent events, `data: {…}` lines ending with `data: [DONE]`): the
/// text deltas joined, the tool calls assembled from their fragments. A stream that ends
/// without `[DONE]` is malformed.
pub fn parse_stream(body: &[u8]) -> Result<ModelReply, ProviderError> {
    let text = std::str::from_utf8(body).map_err(|_| ProviderError::Malformed("the stream is not UTF-8".into()))?;
    let mut reply = ModelReply::default();
    let mut calls: Vec<(String, String, String)> = Vec::new(); // id, name, arguments text
    let mut done = false;
    for line in text.lines() {
        let Some(data) = line.strip_prefix("data:") else { continue };
        let data = data.trim();
        if data == "[DONE]" {
            done = true;
            break;
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            ProviderError::Malformed(format!(
                "a stream event is not JSON ({e}): {}",
                data.chars().take(200).collect::<String>()
            ))
        })?;
        if let Some(message) = v.pointer("/error/message").and_then(Value::as_str) {
            return Err(ProviderError::Server { status: 200, message: message.to_owned() });
        }
        let Some(delta) = v.pointer("/choices/0/delta") else { continue };
        if let Some(t) = delta["content"].as_str() {
            reply.text.push_str(t);
        }
        for c in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = c["index"].as_u64().unwrap_or(calls.len() as u64) as usize;
            while calls.len() <= index {
                calls.push(Default::default());
            }
            let slot = &mut calls[index];
            if let Some(id) = c["id"].as_str() {
                slot.0 = id.to_owned();
            }
            if let Some(n) = c.pointer("/function/name").and_then(Value::as_str) {
                slot.1.push_str(n);
            }
            if let Some(a) = c.pointer("/function/arguments").and_then(Value::as_str) {
                slot.2.push_str(a);
            }
        }
    }
    if !done {
        return Err(ProviderError::Malformed("the stream ended before `data: [DONE]`".into()));
    }
    for (id, name, args) in calls {
        let arguments = arguments(&name, &args)?;
        reply.tool_calls.push(ToolCallRequest { id, name, arguments });
    }
    Ok(reply)
}

/// The text of one Chat Completions stream event (`choices[0].delta.content`).
fn delta_text(v: &Value) -> Option<&str> {
    v.pointer("/choices/0/delta/content").and_then(Value::as_str)
}

impl super::Endpoint for OpenAi {
    const READING: super::Reading = super::Reading { whole: parse_response, stream: parse_stream, delta: delta_text };

    fn http(&self) -> &dyn HttpClient {
        &*self.http
    }

    fn streams(&self) -> bool {
        self.stream
    }

    fn request(&self, messages: &[Message], tools: &[ModelTool]) -> (String, Vec<Header>, Value) {
        let headers = match &self.api_key {
            Some(key) => vec![Header { name: "authorization".into(), value: format!("Bearer {key}") }],
            None => Vec::new(),
        };
        let url = format!("{}/chat/completions", self.base_url.trim_end_matches('/'));
        (url, headers, request_body(&self.model, messages, tools, self.stream))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_carries_the_conversation_the_tools_and_tool_results() {
        let messages = vec![
            Message::text(Role::User, "read it"),
            Message {
                tool_calls: vec![ToolCallRequest {
                    id: "c1".into(),
                    name: "fs_read_file".into(),
                    arguments: json!({"path": "a"}),
                }],
                ..Message::text(Role::Assistant, "")
            },
            Message::tool_result("c1", "content", false),
        ];
        let tools = vec![ModelTool {
            name: "fs_read_file".into(),
            description: "read".into(),
            input_schema: json!({"type": "object"}),
        }];
        let body = request_body("m", &messages, &tools, true);
        assert_eq!(body["model"], "m");
        assert_eq!(body["stream"], true);
        assert_eq!(body["messages"][1]["tool_calls"][0]["function"]["arguments"], "{\"path\":\"a\"}");
        assert_eq!(body["messages"][2]["role"], "tool");
        assert_eq!(body["messages"][2]["tool_call_id"], "c1");
        assert_eq!(body["tools"][0]["function"]["parameters"]["type"], "object");
    }

    #[test]
    fn answers_whole_and_streamed() {
        let whole = br#"{"choices":[{"message":{"content":"hi","tool_calls":[{"id":"c1","type":"function","function":{"name":"fs_grep_files","arguments":"{\"pattern\":\"x\"}"}}]}}]}"#;
        let r = parse_response(whole).unwrap();
        assert_eq!(r.text, "hi");
        assert_eq!(r.tool_calls[0].arguments, json!({"pattern": "x"}));

        let stream = "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\"lo\",\"tool_calls\":[{\"index\":0,\"id\":\"c9\",\"function\":{\"name\":\"fs_read\",\"arguments\":\"{\\\"pa\"}}]}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"_file\",\"arguments\":\"th\\\":\\\"a\\\"}\"}}]}}]}\n\n\
data: [DONE]\n\n";
        let r = parse_stream(stream.as_bytes()).unwrap();
        assert_eq!(r.text, "Hello");
        assert_eq!(r.tool_calls[0].name, "fs_read_file");
        assert_eq!(r.tool_calls[0].id, "c9");
        assert_eq!(r.tool_calls[0].arguments, json!({"path": "a"}));
    }

    #[test]
    fn malformed_answers_and_error_statuses_are_named() {
        assert!(
            matches!(parse_stream(b"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n"), Err(ProviderError::Malformed(m)) if m.contains("[DONE]"))
        );
        assert!(matches!(parse_stream(b"data: {not json\n"), Err(ProviderError::Malformed(_))));
        assert!(matches!(parse_response(b"{}"), Err(ProviderError::Malformed(_))));
        let retry = [Header { name: "Retry-After".into(), value: "3".into() }];
        assert_eq!(
            ProviderError::from_status(429, &retry, br#"{"error":{"message":"slow"}}"#),
            ProviderError::RateLimited { retry_after: Some(3), message: "slow".into() }
        );
        assert!(matches!(ProviderError::from_status(401, &[], b"no"), ProviderError::Unauthorized { .. }));
        assert!(matches!(
            ProviderError::from_status(400, &[], br#"{"error":{"message":"maximum context length is 8192 tokens"}}"#),
            ProviderError::ContextTooLong(_)
        ));
        assert!(ProviderError::from_status(502, &[], b"").is_retryable());
    }
}
