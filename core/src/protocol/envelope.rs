//! JSON-RPC 2.0 envelopes (no batches, D11) and the D11 error codes.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A request id: a number or a string (JSON-RPC 2.0).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    /// A numeric id.
    Number(i64),
    /// A string id.
    String(String),
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// The error codes of D11. This enum is the only place a code number is written down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// -32600: malformed JSON-RPC message.
    InvalidRequest,
    /// -32601: unknown method name (also: a capability this platform lacks).
    MethodNotFound,
    /// -32602: missing or invalid parameters.
    InvalidParams,
    /// -32603: the host failed for a reason of its own.
    InternalError,
    /// -32001: the access policy denied the request.
    AccessDenied,
    /// -32002: file or resource does not exist.
    NotFound,
    /// -32003: target already exists.
    AlreadyExists,
    /// -32004: the operation timed out.
    Timeout,
    /// -32005: cancelled by host or user.
    Cancelled,
}

impl ErrorCode {
    /// Every code, for tests and documentation.
    pub const ALL: [ErrorCode; 9] = [
        Self::InvalidRequest,
        Self::MethodNotFound,
        Self::InvalidParams,
        Self::InternalError,
        Self::AccessDenied,
        Self::NotFound,
        Self::AlreadyExists,
        Self::Timeout,
        Self::Cancelled,
    ];

    /// The JSON-RPC code number.
    pub const fn code(self) -> i32 {
        match self {
            Self::InvalidRequest => -32600,
            Self::MethodNotFound => -32601,
            Self::InvalidParams => -32602,
            Self::InternalError => -32603,
            Self::AccessDenied => -32001,
            Self::NotFound => -32002,
            Self::AlreadyExists => -32003,
            Self::Timeout => -32004,
            Self::Cancelled => -32005,
        }
    }

    /// The code for a number, if it is one of D11's.
    pub fn from_code(code: i32) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.code() == code)
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The code (see [`ErrorCode`]).
    pub code: i32,
    /// What went wrong and, where it helps, how to fix it.
    pub message: String,
    /// Optional structured detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with a D11 code.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code: code.code(), message: message.into(), data: None }
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}

/// A request (has an `id`; expects a response).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Correlates the response.
    pub id: Id,
    /// Method name, e.g. `fs.read`.
    pub method: String,
    /// Parameters (`{}` when absent).
    pub params: Value,
}

/// A notification (no `id`; no response).
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// Method name, e.g. `result`.
    pub method: String,
    /// Parameters (`null` when absent).
    pub params: Value,
}

/// A response to a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The request's id; `None` (`null` on the wire) when the request could not be read.
    pub id: Option<Id>,
    /// The result or the error.
    pub outcome: Result<Value, RpcError>,
}

/// Any one NDJSON line of the protocol.
#[derive(Debug, Clone, PartialEq)]
pub enum RpcMessage {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response.
    Response(Response),
}

impl RpcMessage {
    /// Classify a parsed JSON value. On failure returns the id (if one could be read) and a
    /// -32600 error saying what was wrong.
    pub fn from_value(value: Value) -> Result<Self, (Option<Id>, RpcError)> {
        let invalid = |id: Option<Id>, why: &str| {
            Err((id, RpcError::new(ErrorCode::InvalidRequest, format!("Invalid Request: {why}"))))
        };
        let mut obj = match value {
            Value::Object(obj) => obj,
            Value::Array(_) => return invalid(None, "batch requests are not supported; send one JSON object per line"),
            _ => return invalid(None, "a message must be a JSON object"),
        };
        let id = match obj.remove("id") {
            None => None,
            Some(Value::Null) => Some(None),
            Some(v) => match serde_json::from_value::<Id>(v) {
                Ok(id) => Some(Some(id)),
                Err(_) => return invalid(None, "\"id\" must be a number or a string"),
            },
        };
        let flat_id = id.clone().flatten();
        match obj.get("jsonrpc") {
            Some(Value::String(v)) if v == "2.0" => {}
            _ => return invalid(flat_id, "\"jsonrpc\" must be \"2.0\""),
        }
        if let Some(method) = obj.remove("method") {
            let Value::String(method) = method else {
                return invalid(flat_id, "\"method\" must be a string");
            };
            let params = obj.remove("params").unwrap_or(Value::Null);
            if !matches!(params, Value::Object(_) | Value::Array(_) | Value::Null) {
                return invalid(flat_id, "\"params\" must be an object or an array");
            }
            return match id {
                None => Ok(RpcMessage::Notification(Notification { method, params })),
                Some(Some(id)) => Ok(RpcMessage::Request(Request {
                    id,
                    method,
                    params: if params.is_null() { Value::Object(Map::new()) } else { params },
                })),
                Some(None) => invalid(None, "a request's \"id\" must not be null"),
            };
        }
        let Some(id) = id else {
            return invalid(
                None,
                "a message needs \"method\" (request or notification) or \"id\" with \"result\"/\"error\" (response)",
            );
        };
        match (obj.remove("result"), obj.remove("error")) {
            (Some(result), None) => Ok(RpcMessage::Response(Response { id, outcome: Ok(result) })),
            (None, Some(error)) => match serde_json::from_value::<RpcError>(error) {
                Ok(error) => Ok(RpcMessage::Response(Response { id, outcome: Err(error) })),
                Err(e) => invalid(id, &format!("malformed \"error\" object: {e}")),
            },
            _ => invalid(id, "a response needs exactly one of \"result\" and \"error\""),
        }
    }

    /// The JSON value of this message, with `"jsonrpc":"2.0"`.
    pub fn to_value(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("jsonrpc".into(), Value::String("2.0".into()));
        match self {
            RpcMessage::Request(r) => {
                obj.insert("id".into(), serde_json::to_value(&r.id).unwrap_or(Value::Null));
                obj.insert("method".into(), Value::String(r.method.clone()));
                obj.insert("params".into(), r.params.clone());
            }
            RpcMessage::Notification(n) => {
                obj.insert("method".into(), Value::String(n.method.clone()));
                if !n.params.is_null() {
                    obj.insert("params".into(), n.params.clone());
                }
            }
            RpcMessage::Response(r) => {
                obj.insert("id".into(), serde_json::to_value(&r.id).unwrap_or(Value::Null));
                match &r.outcome {
                    Ok(v) => obj.insert("result".into(), v.clone()),
                    Err(e) => obj.insert("error".into(), serde_json::to_value(e).unwrap_or(Value::Null)),
                };
            }
        }
        Value::Object(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn codes_are_d11() {
        let got: Vec<i32> = ErrorCode::ALL.iter().map(|c| c.code()).collect();
        assert_eq!(got, [-32600, -32601, -32602, -32603, -32001, -32002, -32003, -32004, -32005]);
        for c in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_code(c.code()), Some(c));
        }
        assert_eq!(ErrorCode::from_code(7), None);
    }

    #[test]
    fn classifies_and_round_trips() {
        let cases = [
            json!({"jsonrpc":"2.0","id":1,"method":"fs.read","params":{"path":"a"}}),
            json!({"jsonrpc":"2.0","method":"cancel"}),
            json!({"jsonrpc":"2.0","id":"x","result":{}}),
            json!({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"m"}}),
        ];
        for v in cases {
            let m = RpcMessage::from_value(v.clone()).unwrap();
            assert_eq!(m.to_value(), v);
        }
    }

    #[test]
    fn rejects_malformed_envelopes() {
        for (v, why) in [
            (json!([1]), "batch"),
            (json!("x"), "JSON object"),
            (json!({"id":1,"method":"fs.read"}), "jsonrpc"),
            (json!({"jsonrpc":"1.0","id":1,"method":"fs.read"}), "jsonrpc"),
            (json!({"jsonrpc":"2.0","id":1,"method":5}), "method"),
            (json!({"jsonrpc":"2.0","id":{},"method":"x"}), "id"),
            (json!({"jsonrpc":"2.0","id":1}), "exactly one"),
            (json!({"jsonrpc":"2.0"}), "needs"),
            (json!({"jsonrpc":"2.0","id":1,"method":"m","params":3}), "params"),
        ] {
            let (_, e) = RpcMessage::from_value(v.clone()).unwrap_err();
            assert_eq!(e.code, -32600, "{v}");
            assert!(e.message.contains(why), "{v}: {}", e.message);
        }
    }
}
