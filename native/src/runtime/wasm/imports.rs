//! The `jp:host` imports of a component, each one a request to the core dispatcher — the same
//! decision, inquiry, trace and scrubbing a VFS tool's request gets.

use std::sync::Arc;

use jp_core::host::{DispatchEvents, Dispatcher, HostError};
use jp_core::protocol::{
    FsGrepParams, FsRenameParams, FsWriteParams, Header, HostRequest, HostResponse, HttpGetParams, HttpPostParams,
    HttpResult, Id, PathParams, ProcessRunParams,
};

use super::bindings::jp::host::{filesystem, http, process, types};

/// Serves one call's `jp:host` imports: each import is a typed request to the dispatcher and
/// its typed answer is handed back as is (bytes stay bytes; no JSON on the way).
pub(super) struct HostImports {
    dispatcher: Option<Arc<Dispatcher>>,
    events: Arc<dyn DispatchEvents>,
    requests: i64,
}

fn fail(e: HostError) -> types::HostError {
    let rpc = e.to_rpc();
    types::HostError { code: rpc.code, message: rpc.message }
}

/// An answer of the wrong kind: a bug in the dispatcher, reported rather than trusted.
fn unexpected(method: &str, got: &HostResponse) -> types::HostError {
    fail(HostError::Internal(format!("{method} was answered with {got:?}")))
}

impl HostImports {
    /// Imports served by `dispatcher`; `None` answers every import "not available" (the
    /// builtin `learn` tool has no project).
    pub(super) fn new(dispatcher: Option<Arc<Dispatcher>>, events: Arc<dyn DispatchEvents>) -> Self {
        Self { dispatcher, events, requests: 0 }
    }

    async fn call(&mut self, request: HostRequest) -> Result<HostResponse, types::HostError> {
        let Some(d) = &self.dispatcher else {
            return Err(fail(HostError::Unavailable(format!(
                "{} is not available to this tool: it has no project",
                request.method()
            ))));
        };
        self.requests += 1;
        d.handle(&request, &Id::Number(self.requests), self.events.as_ref()).await.map_err(fail)
    }

    async fn done(&mut self, request: HostRequest) -> Result<(), types::HostError> {
        let method = request.method();
        match self.call(request).await? {
            HostResponse::Done => Ok(()),
            other => Err(unexpected(method, &other)),
        }
    }
}

fn kind(k: jp_core::protocol::EntryKind) -> filesystem::EntryKind {
    match k {
        jp_core::protocol::EntryKind::File => filesystem::EntryKind::File,
        jp_core::protocol::EntryKind::Dir => filesystem::EntryKind::Dir,
    }
}

fn path(path: String) -> PathParams {
    PathParams { path }
}

impl types::Host for HostImports {}

impl filesystem::Host for HostImports {
    async fn read(&mut self, p: String) -> Result<Vec<u8>, types::HostError> {
        match self.call(HostRequest::FsRead(jp_core::protocol::FsReadParams { path: p })).await? {
            HostResponse::FsRead(r) => Ok(r.content),
            other => Err(unexpected("fs.read", &other)),
        }
    }
    async fn write(&mut self, path: String, content: Vec<u8>) -> Result<(), types::HostError> {
        self.done(HostRequest::FsWrite(FsWriteParams { path, content })).await
    }
    async fn exists(&mut self, p: String) -> Result<bool, types::HostError> {
        match self.call(HostRequest::FsExists(path(p))).await? {
            HostResponse::FsExists(r) => Ok(r.exists),
            other => Err(unexpected("fs.exists", &other)),
        }
    }
    async fn list_dir(&mut self, p: String) -> Result<Vec<filesystem::DirEntry>, types::HostError> {
        match self.call(HostRequest::FsListDir(path(p))).await? {
            HostResponse::FsListDir(r) => {
                Ok(r.entries.into_iter().map(|e| filesystem::DirEntry { path: e.path, kind: kind(e.kind) }).collect())
            }
            other => Err(unexpected("fs.list_dir", &other)),
        }
    }
    async fn metadata(&mut self, p: String) -> Result<filesystem::FileMetadata, types::HostError> {
        match self.call(HostRequest::FsMetadata(path(p))).await? {
            HostResponse::FsMetadata(r) => Ok(filesystem::FileMetadata { kind: kind(r.kind), size: r.size }),
            other => Err(unexpected("fs.metadata", &other)),
        }
    }
    async fn delete(&mut self, p: String) -> Result<(), types::HostError> {
        self.done(HostRequest::FsDelete(path(p))).await
    }
    async fn rename(&mut self, from: String, to: String) -> Result<(), types::HostError> {
        self.done(HostRequest::FsRename(FsRenameParams { from, to })).await
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
        let r = match self.call(HostRequest::FsGrep(params)).await? {
            HostResponse::FsGrep(r) => r,
            other => return Err(unexpected("fs.grep", &other)),
        };
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

fn response(method: &str, r: HostResponse) -> Result<http::Response, types::HostError> {
    match r {
        HostResponse::Http(HttpResult { status, body, headers }) => Ok(http::Response {
            status,
            headers: headers.into_iter().map(|h| http::Header { name: h.name, value: h.value }).collect(),
            body,
        }),
        other => Err(unexpected(method, &other)),
    }
}

fn headers(headers: Vec<http::Header>) -> Vec<Header> {
    headers.into_iter().map(|h| Header { name: h.name, value: h.value }).collect()
}

impl http::Host for HostImports {
    async fn get(&mut self, url: String, h: Vec<http::Header>) -> Result<http::Response, types::HostError> {
        response("http.get", self.call(HostRequest::HttpGet(HttpGetParams { url, headers: headers(h) })).await?)
    }
    async fn post(
        &mut self,
        url: String,
        h: Vec<http::Header>,
        body: Vec<u8>,
    ) -> Result<http::Response, types::HostError> {
        let request = HostRequest::HttpPost(HttpPostParams { url, headers: headers(h), body });
        response("http.post", self.call(request).await?)
    }
}

impl process::Host for HostImports {
    async fn run(
        &mut self,
        program: String,
        args: Vec<String>,
        envs: Vec<String>,
    ) -> Result<process::Output, types::HostError> {
        match self.call(HostRequest::ProcessRun(ProcessRunParams { program, args, envs })).await? {
            HostResponse::ProcessRun(r) => {
                Ok(process::Output { stdout: r.stdout, stderr: r.stderr, exit_code: r.exit_code })
            }
            other => Err(unexpected("process.run", &other)),
        }
    }
}
