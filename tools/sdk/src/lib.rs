//! The SDK for jp-host tools.
//!
//! A tool is written once against the [`Host`] trait — read and write project files, search them,
//! make HTTP requests, run programs — and returns a [`Reply`]. [`VfsHost`] implements `Host` over
//! the VFS protocol (RFD D11) on stdin/stdout, for tools that run as sandboxed subprocesses; the
//! component binding implements the same trait over the `jp:host` imports, so the same source
//! also builds as a WASI component.
//!
//! ```no_run
//! use jp_tool::{Call, Host, Reply, ToolSpec};
//!
//! fn count_lines(host: &dyn Host, call: &Call) -> Reply {
//!     let path = call.str_arg("path").unwrap_or("README.md");
//!     match host.read_to_string(path) {
//!         Ok(text) => Reply::text(format!("{} lines", text.lines().count())),
//!         Err(e) => Reply::error(e.to_string()),
//!     }
//! }
//!
//! const TOOLS: &[ToolSpec] = &[ToolSpec {
//!     name: "count_lines",
//!     summary: "Count the lines of a file.",
//!     description: "",
//!     parameters: r#"{"path":{"type":"string","summary":"File to count","required":true}}"#,
//!     run: count_lines,
//! }];
//!
//! fn main() -> std::process::ExitCode {
//!     jp_tool::serve(TOOLS)
//! }
//! ```

#[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
pub mod component;
mod direct;

pub use direct::DirectHost;

use std::io::{BufRead, BufReader, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

pub use jp_core::host::HostError;
use jp_core::protocol::{
    DEFAULT_MAX_LINE, EmptyResult, FsExistsResult, FsGrepResult, FsListDirResult, FsMetadataResult, FsReadResult,
    FsWriteParams, HttpPostParams, HttpResult, Id, InitParams, ProcessRunResult, ProtocolNotification, Request,
    RpcMessage, encode_message,
};
pub use jp_core::protocol::{DirEntry, EntryKind, FsGrepParams, GrepFileMatch, GrepLine, Header, InitTool};
pub use jp_core::state::{AnswerType, ContentBlock, Question, ToolError, ToolResult};
use serde_json::{Map, Value, json};

/// Kind and size of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metadata {
    /// File or directory.
    pub kind: EntryKind,
    /// Size in bytes.
    pub size: u64,
}

/// An HTTP response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// Headers.
    pub headers: Vec<Header>,
    /// Body bytes.
    pub body: Vec<u8>,
}

/// What a program run through the host produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Standard error.
    pub stderr: Vec<u8>,
    /// Exit code (`None` when killed by a signal).
    pub exit_code: Option<i32>,
}

/// Everything a tool can ask of its host. Paths are relative to the project root.
pub trait Host {
    /// Read a file.
    fn read(&self, path: &str) -> Result<Vec<u8>, HostError>;
    /// Write a file (atomically; parents are created).
    fn write(&self, path: &str, content: &[u8]) -> Result<(), HostError>;
    /// Whether a path exists.
    fn exists(&self, path: &str) -> Result<bool, HostError>;
    /// Entries of a directory, sorted by name.
    fn list_dir(&self, path: &str) -> Result<Vec<DirEntry>, HostError>;
    /// Kind and size of a path.
    fn metadata(&self, path: &str) -> Result<Metadata, HostError>;
    /// Delete a file.
    fn delete(&self, path: &str) -> Result<(), HostError>;
    /// Rename a file or directory.
    fn rename(&self, from: &str, to: &str) -> Result<(), HostError>;
    /// Search file contents.
    fn grep(&self, params: &FsGrepParams) -> Result<Vec<GrepFileMatch>, HostError>;
    /// HTTP GET (`${VAR}` in header values is substituted by the host).
    fn http_get(&self, url: &str, headers: &[Header]) -> Result<HttpResponse, HostError>;
    /// HTTP POST.
    fn http_post(&self, url: &str, headers: &[Header], body: &[u8]) -> Result<HttpResponse, HostError>;
    /// Run a program on the host (clean environment plus `envs`, cwd = project root).
    fn run(&self, program: &str, args: &[String], envs: &[String]) -> Result<Output, HostError>;

    /// Read a file as UTF-8 text.
    fn read_to_string(&self, path: &str) -> Result<String, HostError> {
        String::from_utf8(self.read(path)?)
            .map_err(|_| HostError::InvalidParams(format!("'{path}' is not UTF-8 text; read it as bytes")))
    }
}

/// One call of a tool: its name, arguments, earlier answers and configured options.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Call {
    /// Tool name (multi-tool binaries dispatch on it).
    pub name: String,
    /// Arguments.
    pub arguments: Map<String, Value>,
    /// Answers to earlier questions, by question id.
    pub answers: Map<String, Value>,
    /// Options from the tool's configuration.
    pub options: Map<String, Value>,
}

impl Call {
    /// A string argument.
    pub fn str_arg(&self, name: &str) -> Option<&str> {
        self.arguments.get(name).and_then(Value::as_str)
    }

    /// A string argument that must be present.
    pub fn required_str(&self, name: &str) -> Result<&str, Reply> {
        self.str_arg(name).ok_or_else(|| Reply::error(format!("missing required string argument '{name}'")))
    }

    /// A boolean argument, with a default.
    pub fn bool_arg(&self, name: &str, default: bool) -> bool {
        self.arguments.get(name).and_then(Value::as_bool).unwrap_or(default)
    }

    /// An unsigned integer argument.
    pub fn u64_arg(&self, name: &str) -> Option<u64> {
        self.arguments.get(name).and_then(Value::as_u64)
    }

    /// A list of strings (a single string counts as a list of one).
    pub fn str_list(&self, name: &str) -> Option<Vec<String>> {
        match self.arguments.get(name)? {
            Value::String(s) => Some(vec![s.clone()]),
            Value::Array(a) => Some(a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()),
            _ => None,
        }
    }
}

/// How a tool call ends.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Success, with content blocks.
    Result(ToolResult),
    /// Failure.
    Error(ToolError),
    /// The tool needs an answer and will be run again with it.
    NeedsInput(Question),
}

impl Reply {
    /// Success with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Reply::Result(ToolResult::text(text))
    }

    /// A permanent failure.
    pub fn error(message: impl Into<String>) -> Self {
        Reply::Error(ToolError::new(message))
    }
}

impl From<HostError> for Reply {
    fn from(e: HostError) -> Self {
        Reply::error(e.to_string())
    }
}

/// A tool a binary (or component) serves, with its self-description (RFD D06).
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// Tool name.
    pub name: &'static str,
    /// One-line summary for the assistant.
    pub summary: &'static str,
    /// Longer description.
    pub description: &'static str,
    /// Parameters as a JSON object in the D06 / TOML shape (`{"path":{"type":"string",…}}`).
    pub parameters: &'static str,
    /// The tool itself.
    pub run: fn(&dyn Host, &Call) -> Reply,
}

/// The D06 schema response for these tools: `{"tools":[…]}`.
pub fn schema_response(tools: &[ToolSpec]) -> Value {
    let tools: Vec<Value> = tools
        .iter()
        .map(|t| {
            let params: Value = serde_json::from_str(t.parameters).unwrap_or_else(|_| json!({}));
            let mut v = json!({ "name": t.name, "summary": t.summary, "parameters": params });
            if !t.description.is_empty() {
                v["description"] = json!(t.description);
            }
            v
        })
        .collect();
    json!({ "tools": tools })
}

/// Run the tool `call.name` among `tools`; an unknown name is an error naming the known ones.
pub fn dispatch(tools: &[ToolSpec], host: &dyn Host, call: &Call) -> Reply {
    match tools.iter().find(|t| t.name == call.name) {
        Some(t) => (t.run)(host, call),
        None => {
            let names: Vec<&str> = tools.iter().map(|t| t.name).collect();
            Reply::error(format!("this binary has no tool '{}'; it serves: {}", call.name, names.join(", ")))
        }
    }
}

/// Why the connection to the host failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// Reading or writing the pipes failed.
    #[error("VFS connection: {0}")]
    Io(#[from] std::io::Error),
    /// The first message was not a valid `init`.
    #[error(
        "VFS connection: expected an init notification first ({0}); is this tool run by jp with runtime = \"vfs\"?"
    )]
    BadInit(String),
}

struct Conn {
    reader: Box<dyn BufRead + Send>,
    writer: Box<dyn Write + Send>,
    next_id: i64,
}

/// The client side of the VFS protocol: a [`Host`] over stdin/stdout (or any pair of streams).
pub struct VfsHost {
    conn: Mutex<Conn>,
    init: InitParams,
    cancelled: AtomicBool,
}

impl std::fmt::Debug for VfsHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VfsHost").field("tool", &self.init.tool.name).finish_non_exhaustive()
    }
}

/// Connect over stdin/stdout: reads the `init` notification.
pub fn connect() -> Result<VfsHost, ConnectError> {
    VfsHost::from_streams(BufReader::new(std::io::stdin()), std::io::stdout())
}

fn read_message(reader: &mut (dyn BufRead + Send)) -> Result<Option<RpcMessage>, ConnectError> {
    loop {
        let mut line = Vec::new();
        let n = std::io::Read::take(&mut *reader, DEFAULT_MAX_LINE as u64 + 1).read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(None);
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value: Value = serde_json::from_slice(&line)
            .map_err(|e| ConnectError::BadInit(format!("invalid JSON from the host: {e}")))?;
        return RpcMessage::from_value(value).map(Some).map_err(|(_, e)| ConnectError::BadInit(e.message));
    }
}

fn host_err(e: &ConnectError) -> HostError {
    HostError::Internal(format!("lost the connection to the host: {e}"))
}

impl VfsHost {
    /// Connect over any reader/writer pair (tests, other transports).
    pub fn from_streams(
        reader: impl BufRead + Send + 'static,
        writer: impl Write + Send + 'static,
    ) -> Result<Self, ConnectError> {
        let mut reader: Box<dyn BufRead + Send> = Box::new(reader);
        let init = match read_message(reader.as_mut())? {
            Some(RpcMessage::Notification(n)) if n.method == "init" => {
                serde_json::from_value::<InitParams>(n.params).map_err(|e| ConnectError::BadInit(e.to_string()))?
            }
            Some(_) => return Err(ConnectError::BadInit("the first message was not init".into())),
            None => return Err(ConnectError::BadInit("stdin closed before init".into())),
        };
        Ok(Self {
            conn: Mutex::new(Conn { reader, writer: Box::new(writer), next_id: 0 }),
            init,
            cancelled: AtomicBool::new(false),
        })
    }

    /// The `init` the host sent.
    pub fn init(&self) -> &InitParams {
        &self.init
    }

    /// This call, from `init`.
    pub fn call(&self) -> Call {
        let t = &self.init.tool;
        Call {
            name: t.name.clone(),
            arguments: t.arguments.clone(),
            answers: t.answers.clone(),
            options: t.options.clone(),
        }
    }

    /// Whether the host sent `cancel` (checked while waiting for responses).
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Send one request and wait for its response. `pending` notifications are noted on stderr;
    /// `cancel` is remembered.
    pub fn request(&self, method: &str, params: Value) -> Result<Value, HostError> {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        conn.next_id += 1;
        let id = Id::Number(conn.next_id);
        let line = encode_message(&RpcMessage::Request(Request { id: id.clone(), method: method.into(), params }));
        conn.writer.write_all(&line).and_then(|()| conn.writer.flush()).map_err(|e| host_err(&e.into()))?;
        loop {
            match read_message(conn.reader.as_mut()).map_err(|e| host_err(&e))? {
                None => return Err(HostError::Internal("the host closed the connection".into())),
                Some(RpcMessage::Response(r)) if r.id.as_ref() == Some(&id) => {
                    return r.outcome.map_err(HostError::from);
                }
                Some(RpcMessage::Response(_)) => {}
                Some(RpcMessage::Notification(n)) => match ProtocolNotification::parse(&n.method, n.params) {
                    Ok(ProtocolNotification::Cancel) => self.cancelled.store(true, Ordering::SeqCst),
                    Ok(ProtocolNotification::Pending(p)) => {
                        eprintln!("jp: request {} is waiting: {}", p.request_id, p.reason)
                    }
                    _ => {}
                },
                Some(RpcMessage::Request(_)) => {}
            }
        }
    }

    fn typed<T: serde::de::DeserializeOwned>(&self, method: &str, params: Value) -> Result<T, HostError> {
        let v = self.request(method, params)?;
        serde_json::from_value(v)
            .map_err(|e| HostError::Internal(format!("unexpected {method} result from the host: {e}")))
    }

    fn notify(&self, n: ProtocolNotification) {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let line = encode_message(&n.to_message());
        let _ = conn.writer.write_all(&line).and_then(|()| conn.writer.flush());
    }

    /// Send the final word of the call.
    pub fn finish(&self, reply: Reply) {
        self.notify(match reply {
            Reply::Result(r) => ProtocolNotification::Result(r),
            Reply::Error(e) => ProtocolNotification::Error(e),
            Reply::NeedsInput(question) => {
                ProtocolNotification::State(jp_core::state::ToolState::Waiting { content: None, question })
            }
        });
    }
}

fn http(v: HttpResult) -> Result<HttpResponse, HostError> {
    Ok(HttpResponse { status: v.status, headers: v.headers, body: v.body })
}

fn params<T: serde::Serialize>(p: &T) -> Result<Value, HostError> {
    serde_json::to_value(p).map_err(|e| HostError::Internal(e.to_string()))
}

impl Host for VfsHost {
    fn read(&self, path: &str) -> Result<Vec<u8>, HostError> {
        self.typed::<FsReadResult>("fs.read", json!({ "path": path })).map(|r| r.content)
    }
    fn write(&self, path: &str, content: &[u8]) -> Result<(), HostError> {
        let p = params(&FsWriteParams { path: path.into(), content: content.to_vec() })?;
        self.typed::<EmptyResult>("fs.write", p).map(|_| ())
    }
    fn exists(&self, path: &str) -> Result<bool, HostError> {
        self.typed::<FsExistsResult>("fs.exists", json!({ "path": path })).map(|r| r.exists)
    }
    fn list_dir(&self, path: &str) -> Result<Vec<DirEntry>, HostError> {
        self.typed::<FsListDirResult>("fs.list_dir", json!({ "path": path })).map(|r| r.entries)
    }
    fn metadata(&self, path: &str) -> Result<Metadata, HostError> {
        self.typed::<FsMetadataResult>("fs.metadata", json!({ "path": path }))
            .map(|r| Metadata { kind: r.kind, size: r.size })
    }
    fn delete(&self, path: &str) -> Result<(), HostError> {
        self.typed::<EmptyResult>("fs.delete", json!({ "path": path })).map(|_| ())
    }
    fn rename(&self, from: &str, to: &str) -> Result<(), HostError> {
        self.typed::<EmptyResult>("fs.rename", json!({ "from": from, "to": to })).map(|_| ())
    }
    fn grep(&self, params: &FsGrepParams) -> Result<Vec<GrepFileMatch>, HostError> {
        let p = serde_json::to_value(params).map_err(|e| HostError::Internal(e.to_string()))?;
        self.typed::<FsGrepResult>("fs.grep", p).map(|r| r.matches)
    }
    fn http_get(&self, url: &str, headers: &[Header]) -> Result<HttpResponse, HostError> {
        http(self.typed("http.get", json!({ "url": url, "headers": headers }))?)
    }
    fn http_post(&self, url: &str, headers: &[Header], body: &[u8]) -> Result<HttpResponse, HostError> {
        let p = params(&HttpPostParams { url: url.into(), headers: headers.to_vec(), body: body.to_vec() })?;
        http(self.typed("http.post", p)?)
    }
    fn run(&self, program: &str, args: &[String], envs: &[String]) -> Result<Output, HostError> {
        let r: ProcessRunResult =
            self.typed("process.run", json!({ "program": program, "args": args, "envs": envs }))?;
        Ok(Output { stdout: r.stdout, stderr: r.stderr, exit_code: r.exit_code })
    }
}

/// The `main` of a VFS tool binary: connect, answer the schema action (D06) or run the named
/// tool, send the reply. Exit code 0 when the reply was sent, 2 when the host could not be
/// reached.
pub fn serve(tools: &[ToolSpec]) -> std::process::ExitCode {
    let host = match connect() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("{e}");
            return std::process::ExitCode::from(2);
        }
    };
    if host.init().tool.action.as_deref() == Some("schema") {
        host.finish(Reply::text(schema_response(tools).to_string()));
        return std::process::ExitCode::SUCCESS;
    }
    let call = host.call();
    let reply = dispatch(tools, &host, &call);
    host.finish(reply);
    std::process::ExitCode::SUCCESS
}
