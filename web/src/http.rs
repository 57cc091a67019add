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

/// HTTP over `fetch`.
#[derive(Debug, Default, Clone, Copy)]
pub struct FetchHttpClient;

fn failed(e: JsValue) -> BackendError {
    let text = js_sys::Reflect::get(&e, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"));
    BackendError::Failed(format!("fetch failed: {text}"))
}

async fn exchange(request: HttpRequest, on_chunk: Option<OnBytes<'_>>) -> Result<HttpResponse, BackendError> {
    let init = RequestInit::new();
    init.set_method(match request.method {
        HttpMethod::Get => "GET",
        HttpMethod::Post => "POST",
    });
    // `manual`: a redirect comes back as a response for the dispatcher to check. (In a page,
    // a cross-origin redirect is opaque: status 0, which the dispatcher reports.)
    init.set_redirect(RequestRedirect::Manual);
    if request.method == HttpMethod::Post {
        init.set_body(&Uint8Array::from(request.body.as_slice()).into());
    }
    let headers = web_sys::Headers::new().map_err(failed)?;
    for h in &request.headers {
        headers.append(&h.name, &h.value).map_err(failed)?;
    }
    init.set_headers(&headers.into());
    let req = Request::new_with_str_and_init(&request.url, &init).map_err(failed)?;
    let response: Response = JsFuture::from(global_fetch(&req)).await.map_err(failed)?.dyn_into().map_err(failed)?;
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
    let body = match (on_chunk, response.body()) {
        // Read as it arrives, each piece handed on (a model's streamed reply shown while written).
        (Some(on_chunk), Some(stream)) => {
            let reader: web_sys::ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
            let mut body = Vec::new();
            loop {
                let step = JsFuture::from(reader.read()).await.map_err(failed)?;
                if js_sys::Reflect::get(&step, &JsValue::from_str("done")).ok().and_then(|d| d.as_bool()) == Some(true)
                {
                    break;
                }
                let value = js_sys::Reflect::get(&step, &JsValue::from_str("value")).map_err(failed)?;
                let chunk = Uint8Array::new(&value).to_vec();
                if body.len() + chunk.len() > request.max_body {
                    let _ = reader.cancel();
                    return Err(too_large(body.len() + chunk.len()));
                }
                on_chunk(&chunk);
                body.extend_from_slice(&chunk);
            }
            body
        }
        _ => {
            let body = JsFuture::from(response.array_buffer().map_err(failed)?).await.map_err(failed)?;
            let body = Uint8Array::new(&body).to_vec();
            if body.len() > request.max_body {
                return Err(too_large(body.len()));
            }
            if let Some(on_chunk) = on_chunk {
                on_chunk(&body);
            }
            body
        }
    };
    Ok(HttpResponse { status: response.status(), headers: out_headers, body })
}

impl HttpClient for FetchHttpClient {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, BackendError>> {
        Box::pin(exchange(request, None))
    }

    fn send_streaming<'a>(
        &'a self,
        request: HttpRequest,
        on_chunk: OnBytes<'a>,
    ) -> BoxFuture<'a, Result<HttpResponse, BackendError>> {
        Box::pin(exchange(request, Some(on_chunk)))
    }
}

/// Inquiries answered by `callback({tool, method, target, reason})`, which returns (a promise
/// of) `true`/`"once"` to allow, `"all"` to allow the rest of the call, anything else to deny.
pub struct JsInquirer {
    /// The callback.
    pub callback: js_sys::Function,
}

impl Inquirer for JsInquirer {
    fn ask<'a>(&'a self, inquiry: &'a Inquiry) -> BoxFuture<'a, InquiryAnswer> {
        Box::pin(async move {
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
            if answer.as_bool() == Some(true) || answer.as_string().as_deref() == Some("once") {
                InquiryAnswer::Allow
            } else if answer.as_string().as_deref() == Some("all") {
                InquiryAnswer::AllowAll
            } else {
                InquiryAnswer::Deny(format!("the user denied {} {}", inquiry.method, inquiry.target))
            }
        })
    }
}
