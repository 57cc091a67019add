//! Backends answering from fixed tables, for tests, conformance vectors and offline demos. Not
//! for production hosts: they do no I/O and record every request.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::Value;

use crate::maybe::BoxFuture;

use super::{BackendError, HttpClient, HttpMethod, HttpRequest, HttpResponse, Inquirer, Inquiry, InquiryAnswer};
use super::{ProcessOutput, ProcessRequest, ProcessRunner};

/// An HTTP client answering from a fixed table — for tests, vectors and offline demos. A route
/// with `echo` answers with a JSON description of the request it received.
#[derive(Debug, Default)]
pub struct StaticHttpClient {
    routes: BTreeMap<String, StaticRoute>,
    log: Mutex<Vec<HttpRequest>>,
}

/// One route of a [`StaticHttpClient`].
#[derive(Debug, Clone)]
pub enum StaticRoute {
    /// Answer with this response.
    Respond(HttpResponse),
    /// Answer 200 with `{"method","url","headers","body"}` of the request.
    Echo,
    /// Fail as a client would (timeout, cancellation, connection error).
    Fail(BackendError),
}

impl StaticHttpClient {
    /// A client with these routes, keyed by exact URL.
    pub fn new(routes: BTreeMap<String, StaticRoute>) -> Self {
        Self { routes, log: Mutex::default() }
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<HttpRequest> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl HttpClient for StaticHttpClient {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, BackendError>> {
        Box::pin(async move {
            if let Ok(mut log) = self.log.lock() {
                log.push(request.clone());
            }
            match self.routes.get(&request.url) {
                Some(StaticRoute::Respond(r)) => Ok(r.clone()),
                Some(StaticRoute::Echo) => {
                    let headers: Vec<Value> =
                        request.headers.iter().map(|h| serde_json::json!({"name": h.name, "value": h.value})).collect();
                    let body = serde_json::json!({
                        "method": match request.method { HttpMethod::Get => "GET", HttpMethod::Post => "POST" },
                        "url": request.url,
                        "headers": headers,
                        "body": String::from_utf8_lossy(&request.body),
                    });
                    Ok(HttpResponse { status: 200, headers: Vec::new(), body: body.to_string().into_bytes() })
                }
                Some(StaticRoute::Fail(e)) => Err(e.clone()),
                None => Err(BackendError::Failed(format!("connection refused: {}", request.url))),
            }
        })
    }
}

/// A process runner answering from a fixed table keyed by program name — for tests and vectors.
#[derive(Debug, Default)]
pub struct StaticProcessRunner {
    programs: BTreeMap<String, Result<ProcessOutput, BackendError>>,
    log: Mutex<Vec<ProcessRequest>>,
}

impl StaticProcessRunner {
    /// A runner with these canned outputs (or failures), by program name.
    pub fn new(programs: BTreeMap<String, Result<ProcessOutput, BackendError>>) -> Self {
        Self { programs, log: Mutex::default() }
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<ProcessRequest> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl ProcessRunner for StaticProcessRunner {
    fn run(&self, request: ProcessRequest) -> BoxFuture<'_, Result<ProcessOutput, BackendError>> {
        Box::pin(async move {
            if let Ok(mut log) = self.log.lock() {
                log.push(request.clone());
            }
            self.programs.get(&request.program).cloned().unwrap_or_else(|| {
                Err(BackendError::NotFound(format!("program '{}' not found on PATH", request.program)))
            })
        })
    }
}

/// An inquirer that gives the same answer every time (tests, scripted runs).
#[derive(Debug, Clone)]
pub struct StaticInquirer(pub InquiryAnswer);

impl Inquirer for StaticInquirer {
    fn ask<'a>(&'a self, _: &'a Inquiry) -> BoxFuture<'a, InquiryAnswer> {
        Box::pin(async move { self.0.clone() })
    }
}
