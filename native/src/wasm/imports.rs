//! The `jp:host` imports of a component, each one a request to the core dispatcher — the same
//! decision, inquiry, trace and scrubbing a VFS tool's request gets.

use std::sync::Arc;

use jp_core::host::{DispatchEvents, Dispatcher, HostError};
use jp_core::protocol::{
    Encoding, FsExistsResult, FsGrepParams, FsGrepResult, FsListDirResult, FsMetadataResult, FsReadResult, HostRequest,
    HttpResult, Id, ProcessRunResult, decode_content, encode_content,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::bindings::jp::host::{filesystem, http, process, types};

/// Serves one call's `jp:host` imports.
pub(super) struct HostImports {
    dispatcher: Option<Arc<Dispatcher>>,
    events: Arc<dyn DispatchEvents>,
    requests: i64,
}

impl HostImports {
    /// Imports served by `dispatcher`; `None` answers every import "not available" (the
    /// builtin `learn` tool has no project).
    pub(super) fn new(dispatcher: Option<Arc<Dispatcher>>, events: Arc<dyn DispatchEvents>) -> Self {
        Self { dispatcher, events, requests: 0 }
    }

    async fn call<T: DeserializeOwned>(&mut self, method: &str, params: Value) -> Result<T, types::HostError> {
        let fail = |e: HostError| {
            let rpc = e.to_rpc();
            types::HostError { code: rpc.code, message: rpc.message }
        };
        let Some(d) = &self.dispatcher else {
            return Err(fail(HostError::Unavailable(format!(
                "{method} is not available to this tool: it has no project"
            ))));
        };
        self.requests += 1;
        let req = HostRequest::parse(method, params).map_err(|e| fail(HostError::from_rpc(&e)))?;
        let value = d.handle(&req, &Id::Number(self.requests), self.events.as_ref()).await.map_err(fail)?;
        serde_json::from_value(value).map_err(|e| fail(HostError::Internal(e.to_string())))
    }
}

fn with_content(mut params: Value, key: &str, bytes: Vec<u8>) -> Value {
    let (text, encoding) = encode_content(bytes);
    params[key] = json!(text);
    if encoding == Some(Encoding::Base64) {
        params["encoding"] = json!("base64");
    }
    params
}

fn bytes(text: &str, encoding: Option<Encoding>) -> Result<Vec<u8>, types::HostError> {
    decode_content(text, encoding).map_err(|e| types::HostError { code: -32603, message: e })
}

fn kind(k: jp_core::protocol::EntryKind) -> filesystem::EntryKind {
    match k {
        jp_core::protocol::EntryKind::File => filesystem::EntryKind::File,
        jp_core::protocol::EntryKind::Dir => filesystem::EntryKind::Dir,
    }
}

impl types::Host for HostImports {}

impl filesystem::Host for HostImports {
    async fn read(&mut self, path: String) -> Result<Vec<u8>, types::HostError> {
        let r: FsReadResult = self.call("fs.read", json!({ "path": path })).await?;
        bytes(&r.content, r.encoding)
    }
    async fn write(&mut self, path: String, content: Vec<u8>) -> Result<(), types::HostError> {
        self.call::<Value>("fs.write", with_content(json!({ "path": path }), "content", content)).await.map(|_| ())
    }
    async fn exists(&mut self, path: String) -> Result<bool, types::HostError> {
        self.call::<FsExistsResult>("fs.exists", json!({ "path": path })).await.map(|r| r.exists)
    }
    async fn list_dir(&mut self, path: String) -> Result<Vec<filesystem::DirEntry>, types::HostError> {
        let r: FsListDirResult = self.call("fs.list_dir", json!({ "path": path })).await?;
        Ok(r.entries.into_iter().map(|e| filesystem::DirEntry { path: e.path, kind: kind(e.kind) }).collect())
    }
    async fn metadata(&mut self, path: String) -> Result<filesystem::FileMetadata, types::HostError> {
        let r: FsMetadataResult = self.call("fs.metadata", json!({ "path": path })).await?;
        Ok(filesystem::FileMetadata { kind: kind(r.kind), size: r.size })
    }
    async fn delete(&mut self, path: String) -> Result<(), types::HostError> {
        self.call::<Value>("fs.delete", json!({ "path": path })).await.map(|_| ())
    }
    async fn rename(&mut self, from: String, to: String) -> Result<(), types::HostError> {
        self.call::<Value>("fs.rename", json!({ "from": from, "to": to })).await.map(|_| ())
    }
    async fn grep(
        &mut self,
        pattern: String,
        options: filesystem::GrepOptions,
    ) -> Result<Vec<filesystem::GrepFile>, types::HostError> {
        let params = FsGrepParams {
            pattern,
            paths: (!options.paths.is_empty()).then_some(options.paths),
            extensions: (!options.extensions.is_empty()).then_some(options.extensions),
            context: (options.context > 0).then_some(options.context),
        };
        let params = serde_json::to_value(params).unwrap_or_default();
        let r: FsGrepResult = self.call("fs.grep", params).await?;
        Ok(r.matches
            .into_iter()
            .map(|m| filesystem::GrepFile {
                path: m.path,
                lines: m
                    .lines
                    .into_iter()
                    .map(|l| filesystem::GrepLine {
                        line_number: l.line_number,
                        content: l.content,
                        is_match: l.is_match,
                    })
                    .collect(),
            })
            .collect())
    }
}

fn response(r: HttpResult) -> Result<http::Response, types::HostError> {
    Ok(http::Response {
        status: r.status,
        headers: r.headers.into_iter().map(|h| http::Header { name: h.name, value: h.value }).collect(),
        body: bytes(&r.body, r.encoding)?,
    })
}

fn header_json(headers: &[http::Header]) -> Value {
    Value::Array(headers.iter().map(|h| json!({ "name": h.name, "value": h.value })).collect())
}

impl http::Host for HostImports {
    async fn get(&mut self, url: String, headers: Vec<http::Header>) -> Result<http::Response, types::HostError> {
        response(self.call("http.get", json!({ "url": url, "headers": header_json(&headers) })).await?)
    }
    async fn post(
        &mut self,
        url: String,
        headers: Vec<http::Header>,
        body: Vec<u8>,
    ) -> Result<http::Response, types::HostError> {
        let params = with_content(json!({ "url": url, "headers": header_json(&headers) }), "body", body);
        response(self.call("http.post", params).await?)
    }
}

impl process::Host for HostImports {
    async fn run(
        &mut self,
        program: String,
        args: Vec<String>,
        envs: Vec<String>,
    ) -> Result<process::Output, types::HostError> {
        let r: ProcessRunResult =
            self.call("process.run", json!({ "program": program, "args": args, "envs": envs })).await?;
        Ok(process::Output { stdout: r.stdout.into_bytes(), stderr: r.stderr.into_bytes(), exit_code: r.exit_code })
    }
}
