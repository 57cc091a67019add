//! [`DirectHost`]: a [`Host`] answered in-process, without a protocol in between (D10's
//! `BuiltinRuntime`): each call becomes a typed [`HostRequest`] handed to a function — in `jp`,
//! the core `Dispatcher` — and the typed [`HostResponse`] comes straight back.

use jp_core::host::HostError;
use jp_core::protocol::{
    DirEntry, FsGrepParams, FsReadParams, FsRenameParams, FsWriteParams, GrepFileMatch, Header, HostRequest,
    HostResponse, HttpGetParams, HttpPostParams, PathParams, ProcessRunParams,
};

use crate::{Host, HttpResponse, Metadata, Output};

/// A [`Host`] whose requests are served by `serve`, on the calling thread.
pub struct DirectHost<F> {
    serve: F,
}

impl<F> std::fmt::Debug for DirectHost<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectHost").finish_non_exhaustive()
    }
}

impl<F: Fn(HostRequest) -> Result<HostResponse, HostError>> DirectHost<F> {
    /// A host whose every request is answered by `serve`.
    pub fn new(serve: F) -> Self {
        Self { serve }
    }

    fn ask(&self, request: HostRequest) -> Result<HostResponse, HostError> {
        (self.serve)(request)
    }
}

fn unexpected(method: &str, got: &HostResponse) -> HostError {
    HostError::Internal(format!("the host answered {method} with a {got:?}-shaped result"))
}

macro_rules! expect {
    ($self:ident, $req:expr, $method:literal, $pat:pat => $out:expr) => {
        match $self.ask($req)? {
            $pat => Ok($out),
            other => Err(unexpected($method, &other)),
        }
    };
}

impl<F: Fn(HostRequest) -> Result<HostResponse, HostError>> Host for DirectHost<F> {
    fn read(&self, path: &str) -> Result<Vec<u8>, HostError> {
        expect!(self, HostRequest::FsRead(FsReadParams { path: path.into() }), "fs.read", HostResponse::FsRead(r) => r.content)
    }
    fn write(&self, path: &str, content: &[u8]) -> Result<(), HostError> {
        let req = HostRequest::FsWrite(FsWriteParams { path: path.into(), content: content.to_vec() });
        expect!(self, req, "fs.write", HostResponse::Done => ())
    }
    fn exists(&self, path: &str) -> Result<bool, HostError> {
        expect!(self, HostRequest::FsExists(PathParams { path: path.into() }), "fs.exists", HostResponse::FsExists(r) => r.exists)
    }
    fn list_dir(&self, path: &str) -> Result<Vec<DirEntry>, HostError> {
        expect!(self, HostRequest::FsListDir(PathParams { path: path.into() }), "fs.list_dir", HostResponse::FsListDir(r) => r.entries)
    }
    fn metadata(&self, path: &str) -> Result<Metadata, HostError> {
        expect!(self, HostRequest::FsMetadata(PathParams { path: path.into() }), "fs.metadata",
            HostResponse::FsMetadata(r) => Metadata { kind: r.kind, size: r.size })
    }
    fn delete(&self, path: &str) -> Result<(), HostError> {
        expect!(self, HostRequest::FsDelete(PathParams { path: path.into() }), "fs.delete", HostResponse::Done => ())
    }
    fn rename(&self, from: &str, to: &str) -> Result<(), HostError> {
        let req = HostRequest::FsRename(FsRenameParams { from: from.into(), to: to.into() });
        expect!(self, req, "fs.rename", HostResponse::Done => ())
    }
    fn grep(&self, params: &FsGrepParams) -> Result<Vec<GrepFileMatch>, HostError> {
        expect!(self, HostRequest::FsGrep(params.clone()), "fs.grep", HostResponse::FsGrep(r) => r.matches)
    }
    fn http_get(&self, url: &str, headers: &[Header]) -> Result<HttpResponse, HostError> {
        let req = HostRequest::HttpGet(HttpGetParams { url: url.into(), headers: headers.to_vec() });
        expect!(self, req, "http.get", HostResponse::Http(r) => HttpResponse { status: r.status, headers: r.headers, body: r.body })
    }
    fn http_post(&self, url: &str, headers: &[Header], body: &[u8]) -> Result<HttpResponse, HostError> {
        let req =
            HostRequest::HttpPost(HttpPostParams { url: url.into(), headers: headers.to_vec(), body: body.to_vec() });
        expect!(self, req, "http.post", HostResponse::Http(r) => HttpResponse { status: r.status, headers: r.headers, body: r.body })
    }
    fn run(&self, program: &str, args: &[String], envs: &[String]) -> Result<Output, HostError> {
        let req = HostRequest::ProcessRun(ProcessRunParams {
            program: program.into(),
            args: args.to_vec(),
            envs: envs.to_vec(),
        });
        expect!(self, req, "process.run",
            HostResponse::ProcessRun(r) => Output { stdout: r.stdout, stderr: r.stderr, exit_code: r.exit_code })
    }
}
