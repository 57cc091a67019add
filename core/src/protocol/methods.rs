//! Typed params and results of every D11 method and notification.
//!
//! Names follow the wire: `fs.read` takes [`FsReadParams`] and answers [`FsReadResult`]. Unknown
//! fields are ignored (forward compatibility, D11 "Protocol versioning").

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::envelope::{ErrorCode, RpcError};
use crate::state::{ToolError, ToolResult, ToolState};

/// `fs.read` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FsReadParams {
    /// Path relative to the project root.
    pub path: String,
}

/// `fs.read` result. On the wire `content` is text, or base64 with `"encoding":"base64"`.
#[derive(Debug, Clone, PartialEq)]
pub struct FsReadResult {
    /// The file's bytes.
    pub content: Vec<u8>,
    /// Size in bytes of the file.
    pub size: u64,
}

/// `fs.write` params. On the wire `content` is text, or base64 with `"encoding":"base64"`.
#[derive(Debug, Clone, PartialEq)]
pub struct FsWriteParams {
    /// Path relative to the project root; parents are created.
    pub path: String,
    /// The bytes to write.
    pub content: Vec<u8>,
}

/// Params of the methods that take one path (`fs.exists`, `fs.list_dir`, `fs.metadata`,
/// `fs.delete`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathParams {
    /// Path relative to the project root.
    pub path: String,
}

/// `fs.exists` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FsExistsResult {
    /// Whether the path exists.
    pub exists: bool,
}

/// What a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
}

/// One entry of `fs.list_dir`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct DirEntry {
    /// Name relative to the listed directory.
    pub path: String,
    /// File or directory.
    pub kind: EntryKind,
}

/// `fs.list_dir` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FsListDirResult {
    /// Entries, sorted by name.
    pub entries: Vec<DirEntry>,
}

/// `fs.metadata` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FsMetadataResult {
    /// File or directory.
    pub kind: EntryKind,
    /// Size in bytes (0 for directories).
    pub size: u64,
}

/// `fs.rename` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FsRenameParams {
    /// Existing path.
    pub from: String,
    /// New path; parents are created.
    pub to: String,
}

/// `fs.grep` params. All but `pattern` are optional.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FsGrepParams {
    /// A regular expression (Rust `regex` syntax).
    pub pattern: String,
    /// Files or directories to search; the whole project when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    /// File extensions to search, without the dot; all files when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<String>>,
    /// Lines of context before and after each match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<u32>,
}

/// One line of a grep hit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrepLine {
    /// 1-based line number.
    pub line_number: u64,
    /// The line without its terminator.
    pub content: String,
    /// Whether the line matched (false for context lines).
    pub is_match: bool,
}

/// The hits of `fs.grep` in one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrepFileMatch {
    /// File path relative to the project root.
    pub path: String,
    /// Matching and context lines in order.
    pub lines: Vec<GrepLine>,
}

/// `fs.grep` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FsGrepResult {
    /// Files with hits, sorted by path.
    pub matches: Vec<GrepFileMatch>,
    /// The search stopped at the host's size cap: more files may match. Narrow the pattern or
    /// the paths to see them. Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// An HTTP header; values may contain `${VAR}` (D11).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Header name.
    pub name: String,
    /// Header value.
    pub value: String,
}

/// `http.get` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpGetParams {
    /// Absolute http(s) URL.
    pub url: String,
    /// Request headers.
    #[serde(default)]
    pub headers: Vec<Header>,
}

/// `http.post` params. On the wire `body` is text, or base64 with `"encoding":"base64"`.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpPostParams {
    /// Absolute http(s) URL.
    pub url: String,
    /// Request headers.
    pub headers: Vec<Header>,
    /// Request body.
    pub body: Vec<u8>,
}

/// `http.get` / `http.post` result. On the wire `body` is text, or base64 with
/// `"encoding":"base64"`.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpResult {
    /// HTTP status code.
    pub status: u16,
    /// Response body.
    pub body: Vec<u8>,
    /// Response headers.
    pub headers: Vec<Header>,
}

/// `process.run` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessRunParams {
    /// Program name (looked up on the host's `PATH`).
    pub program: String,
    /// Arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Host environment variables to forward (must be allowed by the policy).
    #[serde(default)]
    pub envs: Vec<String>,
}

/// `process.run` result. On the wire output that is not UTF-8 is converted lossily.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessRunResult {
    /// Standard output (scrubbed).
    pub stdout: Vec<u8>,
    /// Standard error (scrubbed).
    pub stderr: Vec<u8>,
    /// Exit code; `null` when killed by a signal.
    pub exit_code: Option<i32>,
}

/// An empty result object (`{}`), for `fs.write`, `fs.delete`, `fs.rename`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EmptyResult {}

/// The answer to a [`HostRequest`], typed: file bytes as bytes, entries as structs. Its JSON
/// (`Serialize`) is the wire `result` of the method.
#[derive(Debug, Clone, PartialEq)]
pub enum HostResponse {
    /// `fs.read`
    FsRead(FsReadResult),
    /// `fs.exists`
    FsExists(FsExistsResult),
    /// `fs.list_dir`
    FsListDir(FsListDirResult),
    /// `fs.metadata`
    FsMetadata(FsMetadataResult),
    /// `fs.grep`
    FsGrep(FsGrepResult),
    /// `http.get` / `http.post`
    Http(HttpResult),
    /// `process.run`
    ProcessRun(ProcessRunResult),
    /// `fs.write`, `fs.delete`, `fs.rename`: `{}`.
    Done,
}

/// A request from a tool to the host, parsed and typed.
#[derive(Debug, Clone, PartialEq)]
pub enum HostRequest {
    /// `fs.read`
    FsRead(FsReadParams),
    /// `fs.write`
    FsWrite(FsWriteParams),
    /// `fs.exists`
    FsExists(PathParams),
    /// `fs.list_dir`
    FsListDir(PathParams),
    /// `fs.metadata`
    FsMetadata(PathParams),
    /// `fs.delete`
    FsDelete(PathParams),
    /// `fs.rename`
    FsRename(FsRenameParams),
    /// `fs.grep`
    FsGrep(FsGrepParams),
    /// `http.get`
    HttpGet(HttpGetParams),
    /// `http.post`
    HttpPost(HttpPostParams),
    /// `process.run`
    ProcessRun(ProcessRunParams),
}

/// Every request method name, in D11 order.
pub const METHODS: [&str; 11] = [
    "fs.read",
    "fs.write",
    "fs.exists",
    "fs.list_dir",
    "fs.metadata",
    "fs.delete",
    "fs.rename",
    "fs.grep",
    "http.get",
    "http.post",
    "process.run",
];

fn params<T: DeserializeOwned>(method: &str, params: Value) -> Result<T, RpcError> {
    let params = if params.is_null() { Value::Object(Map::new()) } else { params };
    serde_json::from_value(params)
        .map_err(|e| RpcError::new(ErrorCode::InvalidParams, format!("Invalid params for {method}: {e}")))
}

/// Where a request's params come from.
enum RawParams<'a> {
    Value(Value),
    Json(Option<&'a str>),
}

impl RawParams<'_> {
    fn typed<T: DeserializeOwned>(self, method: &str) -> Result<T, RpcError> {
        match self {
            Self::Value(v) => params(method, v),
            Self::Json(None) => params(method, Value::Null),
            // On failure, the `Value` route gives the error its usual wording (no positions).
            Self::Json(Some(text)) => serde_json::from_str(text).or_else(|_| {
                params(
                    method,
                    serde_json::from_str(text).map_err(|e| {
                        RpcError::new(ErrorCode::InvalidParams, format!("Invalid params for {method}: {e}"))
                    })?,
                )
            }),
        }
    }
}

impl HostRequest {
    /// Type a request's method and params: -32601 for an unknown method, -32602 for bad params.
    pub fn parse(method: &str, raw: Value) -> Result<Self, RpcError> {
        Self::parse_raw(method, RawParams::Value(raw))
    }

    /// Type a request straight from the JSON text of its params (`None`: absent), without an
    /// intermediate `Value` (the VFS codec's path). Errors are those of [`parse`](Self::parse).
    pub fn parse_json(method: &str, params: Option<&str>) -> Result<Self, RpcError> {
        Self::parse_raw(method, RawParams::Json(params))
    }

    fn parse_raw(method: &str, raw: RawParams<'_>) -> Result<Self, RpcError> {
        Ok(match method {
            "fs.read" => Self::FsRead(raw.typed(method)?),
            "fs.write" => Self::FsWrite(raw.typed(method)?),
            "fs.exists" => Self::FsExists(raw.typed(method)?),
            "fs.list_dir" => Self::FsListDir(raw.typed(method)?),
            "fs.metadata" => Self::FsMetadata(raw.typed(method)?),
            "fs.delete" => Self::FsDelete(raw.typed(method)?),
            "fs.rename" => Self::FsRename(raw.typed(method)?),
            "fs.grep" => Self::FsGrep(raw.typed(method)?),
            "http.get" => Self::HttpGet(raw.typed(method)?),
            "http.post" => Self::HttpPost(raw.typed(method)?),
            "process.run" => Self::ProcessRun(raw.typed(method)?),
            other => {
                let hint = METHODS
                    .iter()
                    .find(|m| m.split_once('.').is_some_and(|(_, op)| op == other))
                    .map(|m| format!(" (did you mean \"{m}\"?)"))
                    .unwrap_or_default();
                return Err(RpcError::new(
                    ErrorCode::MethodNotFound,
                    format!("Method not found: \"{other}\"{hint}; methods are {}", METHODS.join(", ")),
                ));
            }
        })
    }

    /// The wire method name.
    pub fn method(&self) -> &'static str {
        match self {
            Self::FsRead(_) => "fs.read",
            Self::FsWrite(_) => "fs.write",
            Self::FsExists(_) => "fs.exists",
            Self::FsListDir(_) => "fs.list_dir",
            Self::FsMetadata(_) => "fs.metadata",
            Self::FsDelete(_) => "fs.delete",
            Self::FsRename(_) => "fs.rename",
            Self::FsGrep(_) => "fs.grep",
            Self::HttpGet(_) => "http.get",
            Self::HttpPost(_) => "http.post",
            Self::ProcessRun(_) => "process.run",
        }
    }

    /// The wire params.
    pub fn to_params(&self) -> Value {
        let v = match self {
            Self::FsRead(p) => serde_json::to_value(p),
            Self::FsWrite(p) => serde_json::to_value(p),
            Self::FsExists(p) | Self::FsListDir(p) | Self::FsMetadata(p) | Self::FsDelete(p) => serde_json::to_value(p),
            Self::FsRename(p) => serde_json::to_value(p),
            Self::FsGrep(p) => serde_json::to_value(p),
            Self::HttpGet(p) => serde_json::to_value(p),
            Self::HttpPost(p) => serde_json::to_value(p),
            Self::ProcessRun(p) => serde_json::to_value(p),
        };
        v.unwrap_or(Value::Null)
    }
}

/// The `tool` object of `init`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InitTool {
    /// Tool name (multi-tool binaries dispatch on it).
    pub name: String,
    /// The call's arguments.
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// Answers to earlier questions, by question id.
    #[serde(default)]
    pub answers: Map<String, Value>,
    /// Tool options from configuration.
    #[serde(default)]
    pub options: Map<String, Value>,
    /// The action: `run` (default) or `schema` (RFD D06 self-description).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

/// `init` params (host → tool, first message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InitParams {
    /// What to run.
    pub tool: InitTool,
    /// The host's protocol version ([`PROTOCOL_VERSION`](super::PROTOCOL_VERSION)).
    pub protocol_version: String,
}

/// `apply` params (host → tool, stateful tools).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApplyParams {
    /// Input or answer.
    pub input: Value,
}

/// `pending` params (host → tool): a request is held while the user is asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingParams {
    /// The id of the held request.
    pub request_id: super::Id,
    /// Why it is held.
    pub reason: String,
}

/// A notification of the protocol, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum ProtocolNotification {
    /// host → tool: the call to perform.
    Init(InitParams),
    /// tool → host: final result (a string `content` is one text block; `structuredContent` and
    /// `isError` as in MCP).
    Result(ToolResult),
    /// tool → host: the tool failed.
    Error(ToolError),
    /// either way: stop (host → tool) or abandon the pending request (tool → host).
    Cancel,
    /// host → tool: input for a stateful tool.
    Apply(ApplyParams),
    /// tool → host: a stateful tool's new state.
    State(ToolState),
    /// host → tool: a request is held for an inquiry.
    Pending(PendingParams),
}

impl ProtocolNotification {
    /// Type a notification; unknown names are -32601, bad params -32602.
    pub fn parse(method: &str, raw: Value) -> Result<Self, RpcError> {
        Ok(match method {
            "init" => Self::Init(params(method, raw)?),
            "result" => {
                let object = match raw {
                    Value::Object(m) => m,
                    Value::Null => serde_json::Map::new(),
                    _ => {
                        return Err(RpcError::new(
                            ErrorCode::InvalidParams,
                            "Invalid params for result: expected an object with \"content\"",
                        ));
                    }
                };
                Self::Result(ToolResult::from_object(object).map_err(|e| {
                    RpcError::new(
                        ErrorCode::InvalidParams,
                        format!(
                            "Invalid params for result: content must be a string or a list of content blocks ({e})"
                        ),
                    )
                })?)
            }
            "error" => Self::Error(params(method, raw)?),
            "cancel" => Self::Cancel,
            "apply" => Self::Apply(params(method, raw)?),
            "state" => Self::State(params(method, raw)?),
            "pending" => Self::Pending(params(method, raw)?),
            other => {
                return Err(RpcError::new(
                    ErrorCode::MethodNotFound,
                    format!(
                        "Method not found: notification \"{other}\"; notifications are init, result, error, cancel, apply, state, pending"
                    ),
                ));
            }
        })
    }

    /// The wire method name.
    pub fn method(&self) -> &'static str {
        match self {
            Self::Init(_) => "init",
            Self::Result(_) => "result",
            Self::Error(_) => "error",
            Self::Cancel => "cancel",
            Self::Apply(_) => "apply",
            Self::State(_) => "state",
            Self::Pending(_) => "pending",
        }
    }

    /// The wire params (`null` for `cancel`).
    pub fn to_params(&self) -> Value {
        let v = match self {
            Self::Init(p) => serde_json::to_value(p),
            Self::Result(r) => serde_json::to_value(r),
            Self::Error(e) => serde_json::to_value(e),
            Self::Cancel => Ok(Value::Null),
            Self::Apply(p) => serde_json::to_value(p),
            Self::State(s) => serde_json::to_value(s),
            Self::Pending(p) => serde_json::to_value(p),
        };
        v.unwrap_or(Value::Null)
    }

    /// As an envelope, ready for [`encode_message`](super::encode_message).
    pub fn to_message(&self) -> super::RpcMessage {
        super::RpcMessage::Notification(super::Notification { method: self.method().into(), params: self.to_params() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_method_parses_and_round_trips() {
        let samples = [
            ("fs.read", json!({"path":"src/main.rs"})),
            ("fs.write", json!({"path":"a.png","content":"iVBORw0KGgo=","encoding":"base64"})),
            ("fs.exists", json!({"path":"a"})),
            ("fs.list_dir", json!({"path":"src"})),
            ("fs.metadata", json!({"path":"src/main.rs"})),
            ("fs.delete", json!({"path":"tmp/scratch.txt"})),
            ("fs.rename", json!({"from":"old.rs","to":"new.rs"})),
            ("fs.grep", json!({"pattern":"fn main","paths":["src"],"extensions":["rs"],"context":2})),
            (
                "http.get",
                json!({"url":"https://api.github.com/x","headers":[{"name":"Authorization","value":"Bearer ${GITHUB_TOKEN}"}]}),
            ),
            ("http.post", json!({"url":"https://api.example.com/data","headers":[],"body":"{}"})),
            ("process.run", json!({"program":"cargo","args":["check"],"envs":["CARGO_TERM_COLOR"]})),
        ];
        assert_eq!(samples.len(), METHODS.len());
        for (method, p) in samples {
            let req = HostRequest::parse(method, p.clone()).unwrap();
            assert_eq!(req.method(), method);
            assert_eq!(HostRequest::parse(method, req.to_params()).unwrap(), req);
        }
    }

    #[test]
    fn unknown_method_hints_and_bad_params() {
        let e = HostRequest::parse("read", json!({})).unwrap_err();
        assert_eq!(e.code, -32601);
        assert!(e.message.contains("did you mean \"fs.read\""), "{}", e.message);
        let e = HostRequest::parse("fs.read", json!({"pth":"x"})).unwrap_err();
        assert_eq!(e.code, -32602);
        assert!(e.message.contains("missing field `path`"), "{}", e.message);
        let e = HostRequest::parse("fs.read", Value::Null).unwrap_err();
        assert_eq!(e.code, -32602);
    }

    #[test]
    fn notifications_parse() {
        let n = ProtocolNotification::parse("result", json!({"content":"Modified 2 files."})).unwrap();
        assert_eq!(n, ProtocolNotification::Result(ToolResult::text("Modified 2 files.")));
        let n =
            ProtocolNotification::parse("error", json!({"message":"Failed","trace":["x"],"transient":false})).unwrap();
        assert_eq!(
            n,
            ProtocolNotification::Error(ToolError {
                message: "Failed".into(),
                trace: vec!["x".into()],
                transient: false
            })
        );
        assert_eq!(ProtocolNotification::parse("cancel", Value::Null).unwrap(), ProtocolNotification::Cancel);
        let n = ProtocolNotification::parse("state", json!({"type":"stopped","result":"Staged 3 hunks."})).unwrap();
        assert_eq!(n, ProtocolNotification::State(ToolState::Stopped { result: Ok("Staged 3 hunks.".into()) }));
        let init = json!({"tool":{"name":"fs_modify_file","arguments":{"path":"src/main.rs"},"answers":{},"options":{"confirmation_mode":true}},"protocol_version":"0.1.0"});
        let n = ProtocolNotification::parse("init", init.clone()).unwrap();
        assert_eq!(n.to_params(), init);
        let n =
            ProtocolNotification::parse("pending", json!({"request_id":1,"reason":"awaiting user approval"})).unwrap();
        assert_eq!(n.method(), "pending");
        assert_eq!(
            ProtocolNotification::parse("apply", json!({"input":"y"})).unwrap().to_params(),
            json!({"input":"y"})
        );
        assert_eq!(ProtocolNotification::parse("bogus", Value::Null).unwrap_err().code, -32601);
    }
}
