//! The browser's and the edge's host services: [`FetchHttpClient`] (the platform `fetch`, no
//! redirects followed — the dispatcher follows them, each hop re-checked by the policy) and
//! [`JsInquirer`] (inquiries answered by a JS callback).

use jp_core::BoxFuture;
use jp_core::host::{
    BackendError, HttpClient, HttpMethod, HttpRequest, HttpResponse, Inquirer, Inquiry, InquiryAnswer,
};
use jp_core::maybe::OnBytes;
use jp_core::protocol::Header;
use js_sys::{Promise, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Request, RequestInit, RequestRedirect, Response};

#[wasm_bindgen]
extern "C" {
    /// The global `fetch` (window, worker or Node).
    #[wasm_bindgen(js_name = fetch)]
    fn global_fetch(request: &Request) -> Promise;
}

/// HTTP over `fetch`; `signal` (a call's) aborts its requests in flight.
#[derive(Debug, Default, Clone)]
pub struct FetchHttpClient {
    /// Aborts every request of this client (the call was cancelled or ran out of time).
    pub signal: Option<web_sys::AbortSignal>,
}

/// Whether this runs in a page or a page's Worker (where `fetch` obeys CORS), not at the edge.
fn in_a_page() -> bool {
    let global = js_sys::global();
    js_sys::Reflect::has(&global, &JsValue::from_str("document")).unwrap_or(false)
        || global.constructor().name() == "DedicatedWorkerGlobalScope"
}

fn message(e: &JsValue) -> String {
    js_sys::Reflect::get(e, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}

fn failed(e: JsValue) -> BackendError {
    BackendError::Failed(format!("fetch failed: {}", message(&e)))
}

/// A `fetch` that never answered: aborted (the call's end), or refused before any response —
/// in a page, most often by CORS, which scripts are not told about beyond "failed".
fn not_sent(url: &str, e: JsValue, signal: Option<&web_sys::AbortSignal>) -> BackendError {
    if signal.is_some_and(web_sys::AbortSignal::aborted) {
        return BackendError::Failed(format!(
            "{url}: the request was stopped: the call was cancelled or ran out of time"
        ));
    }
    if in_a_page() {
        return BackendError::Failed(format!(
            "{url}: the browser refused the request before any answer ({}). In a page a tool's request is a cross-origin fetch: the server must allow this page's origin (Access-Control-Allow-Origin), and for a header such as Authorization or a POST body also answer the CORS preflight (OPTIONS with Access-Control-Allow-Headers / -Methods). The server refused it, or is not reachable; run the tool at the edge or natively (jp), where CORS does not apply",
            message(&e)
        ));
    }
    failed(e)
}

async fn exchange(
    request: HttpRequest,
    on_chunk: Option<OnBytes<'_>>,
    signal: Option<&web_sys::AbortSignal>,
) -> Result<HttpResponse, BackendError> {
    let init = RequestInit::new();
    init.set_method(match request.method {
        HttpMethod::Get => "GET",
        HttpMethod::Post => "POST",
    });
    // `manual`: a redirect comes back as a response for the dispatcher to check. (In a page,
    // a cross-origin redirect is opaque: status 0, which the dispatcher reports.)
    init.set_redirect(RequestRedirect::Manual);
    if let Some(signal) = signal {
        init.set_signal(Some(signal));
    }
    if request.method == HttpMethod::Post {
        init.set_body(&Uint8Array::from(request.body.as_slice()).into());
    }
    let headers = web_sys::Headers::new().map_err(failed)?;
    for h in &request.headers {
        // The engine's words would quote the value, which may be a substituted secret.
        headers
            .append(&h.name, &h.value)
            .map_err(|_| BackendError::Failed(format!("header {:?}: the engine refused its name or value", h.name)))?;
    }
    init.set_headers(&headers.into());
    let req = Request::new_with_str_and_init(&request.url, &init).map_err(failed)?;
    let response: Response = JsFuture::from(global_fetch(&req))
        .await
        .map_err(|e| not_sent(&request.url, e, signal))?
        .dyn_into()
        .map_err(failed)?;
    if response.type_() == web_sys::ResponseType::Opaqueredirect {
        return Err(BackendError::Failed(format!(
            "{}: the server answered with a redirect, and a page is not shown where it leads (browsers hide a redirect's Location from scripts), so it cannot be decided against the policy and is not followed; request the final URL itself",
            request.url
        )));
    }
    let mut out_headers = Vec::new();
    if let Ok(Some(iter)) = js_sys::try_iter(&response.headers()) {
        for pair in iter.flatten() {
            let pair = js_sys::Array::from(&pair);
            out_headers.push(Header {
                name: pair.get(0).as_string().unwrap_or_default(),
                value: pair.get(1).as_string().unwrap_or_default(),
            });
        }
    }
    let too_large = |n: usize| {
        BackendError::TooLarge(format!("the response body is {n} bytes, over the {}-byte limit", request.max_body))
    };
    // Read as it arrives and stopped at the cap (an endless or oversized body is never held
    // whole), each piece handed on when asked (a model's streamed reply shown while written).
    let mut body = Vec::new();
    if let Some(stream) = response.body() {
        let reader: web_sys::ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
        loop {
            let step = JsFuture::from(reader.read()).await.map_err(|e| not_sent(&request.url, e, signal))?;
            if js_sys::Reflect::get(&step, &JsValue::from_str("done")).ok().and_then(|d| d.as_bool()) == Some(true) {
                break;
            }
            let value = js_sys::Reflect::get(&step, &JsValue::from_str("value")).map_err(failed)?;
            let chunk = Uint8Array::new(&value).to_vec();
            if body.len() + chunk.len() > request.max_body {
                let _ = reader.cancel();
                return Err(too_large(body.len() + chunk.len()));
            }
            if let Some(on_chunk) = on_chunk.as_ref() {
                on_chunk(&chunk);
            }
            body.extend_from_slice(&chunk);
        }
    }
    Ok(HttpResponse { status: response.status(), headers: out_headers, body })
}

impl HttpClient for FetchHttpClient {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, BackendError>> {
        Box::pin(exchange(request, None, self.signal.as_ref()))
    }

    fn send_streaming<'a>(
        &'a self,
        request: HttpRequest,
        on_chunk: OnBytes<'a>,
    ) -> BoxFuture<'a, Result<HttpResponse, BackendError>> {
        Box::pin(exchange(request, Some(on_chunk), self.signal.as_ref()))
    }
}

/// The most questions one call may ask; later ones are denied with the reason, so a tool
/// cannot bury the person under questions.
pub const MAX_QUESTIONS_PER_CALL: u32 = 16;

/// Inquiries answered by `callback({tool, method, target, reason})`, which returns (a promise
/// of) `true`/`"once"` to allow, `"all"` to allow the rest of the call, another non-empty string
/// to deny with that reason, anything else (a rejection too) to deny.
pub struct JsInquirer {
    callback: js_sys::Function,
    asked: std::cell::Cell<u32>,
}

impl JsInquirer {
    /// Questions to `callback`.
    pub fn new(callback: js_sys::Function) -> Self {
        Self { callback, asked: std::cell::Cell::new(0) }
    }
}

impl Inquirer for JsInquirer {
    fn ask<'a>(&'a self, inquiry: &'a Inquiry) -> BoxFuture<'a, InquiryAnswer> {
        Box::pin(async move {
            self.asked.set(self.asked.get() + 1);
            if self.asked.get() > MAX_QUESTIONS_PER_CALL {
                return InquiryAnswer::Deny(format!(
                    "{} {}: this call already asked {MAX_QUESTIONS_PER_CALL} questions, the most one call may ask; ask for less, or grant it in the policy",
                    inquiry.method, inquiry.target
                ));
            }
            let question = js_sys::Object::new();
            for (k, v) in [
                ("tool", &inquiry.tool),
                ("method", &inquiry.method),
                ("target", &inquiry.target),
                ("reason", &inquiry.reason),
            ] {
                let _ = js_sys::Reflect::set(&question, &JsValue::from_str(k), &JsValue::from_str(v));
            }
            let answer = match self.callback.call1(&JsValue::NULL, &question) {
                Ok(v) => match v.dyn_into::<Promise>() {
                    Ok(p) => JsFuture::from(p).await.unwrap_or(JsValue::FALSE),
                    Err(v) => v,
                },
                Err(_) => JsValue::FALSE,
            };
            match (answer.as_bool(), answer.as_string().as_deref()) {
                (Some(true), _) | (_, Some("once")) => InquiryAnswer::Allow,
                (_, Some("all")) => InquiryAnswer::AllowAll,
                // A reason of the inquirer's own (a question that timed out, a session that ended).
                (_, Some(reason)) if !reason.is_empty() && reason != "deny" => InquiryAnswer::Deny(reason.to_owned()),
                _ => InquiryAnswer::Deny(format!("the user denied {} {}", inquiry.method, inquiry.target)),
            }
        })
    }
}
