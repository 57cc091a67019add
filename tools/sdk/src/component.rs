//! The [`Host`] trait over the `jp:host` imports, for tools built as `wasm32-wasip2` components.
//!
//! Every call is one import, which the host serves through the same dispatcher and policy as a
//! VFS request; errors come back with the same code and message, so a tool sees exactly what it
//! would see as a subprocess. A component crate exports the `jp:tool` world itself (with
//! `wit_bindgen::generate!`) and calls [`run`] and [`schema`] from its exports.

use jp_core::protocol::RpcError;
use serde_json::{Map, Value};

use crate::{
    Call, DirEntry, EntryKind, FsGrepParams, GrepFileMatch, GrepLine, Header, Host, HostError, HttpResponse, Metadata,
    Output, Reply, ToolSpec, dispatch, schema_response,
};

#[allow(missing_docs, unreachable_pub, clippy::all)]
mod bindings {
    wit_bindgen::generate!({
        world: "imports",
        path: "../../wit/host",
    });
}

use bindings::jp::host::{filesystem, http, process, types};

fn host_error(e: types::HostError) -> HostError {
    HostError::from_rpc(&RpcError { code: e.code, message: e.message, data: None })
}

fn kind(k: filesystem::EntryKind) -> EntryKind {
    match k {
        filesystem::EntryKind::File => EntryKind::File,
        filesystem::EntryKind::Dir => EntryKind::Dir,
    }
}

fn headers(h: &[Header]) -> Vec<http::Header> {
    h.iter().map(|h| http::Header { name: h.name.clone(), value: h.value.clone() }).collect()
}

fn response(r: http::Response) -> HttpResponse {
    HttpResponse {
        status: r.status,
        headers: r.headers.into_iter().map(|h| Header { name: h.name, value: h.value }).collect(),
        body: r.body,
    }
}

/// The host as a component sees it: each method is one `jp:host` import.
#[derive(Debug, Default, Clone, Copy)]
pub struct ComponentHost;

impl Host for ComponentHost {
    fn read(&self, path: &str) -> Result<Vec<u8>, HostError> {
        filesystem::read(path).map_err(host_error)
    }
    fn write(&self, path: &str, content: &[u8]) -> Result<(), HostError> {
        filesystem::write(path, content).map_err(host_error)
    }
    fn exists(&self, path: &str) -> Result<bool, HostError> {
        filesystem::exists(path).map_err(host_error)
    }
    fn list_dir(&self, path: &str) -> Result<Vec<DirEntry>, HostError> {
        let entries = filesystem::list_dir(path).map_err(host_error)?;
        Ok(entries.into_iter().map(|e| DirEntry { path: e.path, kind: kind(e.kind) }).collect())
    }
    fn metadata(&self, path: &str) -> Result<Metadata, HostError> {
        let m = filesystem::metadata(path).map_err(host_error)?;
        Ok(Metadata { kind: kind(m.kind), size: m.size })
    }
    fn delete(&self, path: &str) -> Result<(), HostError> {
        filesystem::delete(path).map_err(host_error)
    }
    fn rename(&self, from: &str, to: &str) -> Result<(), HostError> {
        filesystem::rename(from, to).map_err(host_error)
    }
    fn grep(&self, params: &FsGrepParams) -> Result<Vec<GrepFileMatch>, HostError> {
        let options = filesystem::GrepOptions {
            paths: params.paths.clone().unwrap_or_default(),
            extensions: params.extensions.clone().unwrap_or_default(),
            context: params.context.unwrap_or(0),
        };
        let files = filesystem::grep(&params.pattern, &options).map_err(host_error)?;
        Ok(files
            .into_iter()
            .map(|f| GrepFileMatch {
                path: f.path,
                lines: f
                    .lines
                    .into_iter()
                    .map(|l| GrepLine { line_number: l.line_number, content: l.content, is_match: l.is_match })
                    .collect(),
            })
            .collect())
    }
    fn http_get(&self, url: &str, h: &[Header]) -> Result<HttpResponse, HostError> {
        http::get(url, &headers(h)).map(response).map_err(host_error)
    }
    fn http_post(&self, url: &str, h: &[Header], body: &[u8]) -> Result<HttpResponse, HostError> {
        http::post(url, &headers(h), body).map(response).map_err(host_error)
    }
    fn run(&self, program: &str, args: &[String], envs: &[String]) -> Result<Output, HostError> {
        let o = process::run(program, args, envs).map_err(host_error)?;
        Ok(Output { stdout: o.stdout, stderr: o.stderr, exit_code: o.exit_code })
    }
}

fn object(text: &str, what: &str) -> Result<Map<String, Value>, Reply> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(Reply::error(format!("{what} must be a JSON object"))),
        Err(e) => Err(Reply::error(format!("Invalid {what}: {e}"))),
    }
}

/// Run tool `name` of `tools` with JSON `arguments` and `answers` (the `jp:tool` `run` export).
pub fn run(tools: &[ToolSpec], name: &str, arguments: &str, answers: &str) -> Reply {
    let arguments = match object(arguments, "arguments") {
        Ok(a) => a,
        Err(r) => return r,
    };
    let answers = match object(answers, "answers") {
        Ok(a) => a,
        Err(r) => return r,
    };
    let call = Call { name: name.to_owned(), arguments, answers, options: Map::new() };
    dispatch(tools, &ComponentHost, &call)
}

/// The D06 schema response (the optional `describe` export).
pub fn schema(tools: &[ToolSpec]) -> String {
    schema_response(tools).to_string()
}
