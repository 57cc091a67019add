//! `http.get` / `http.post`: `${VAR}` substitution in header values, and redirects followed by
//! the dispatcher so that every hop is checked against the policy — its method, URL and the
//! headers as the tool wrote them (a secret substituted by the host is never compared).

use std::collections::BTreeMap;

use crate::policy::{AccessPolicy, Decision, HttpCheck};
use crate::protocol::{Header, HostResponse, HttpResult, Id};

use super::{DispatchEvents, Dispatcher, HostError, HttpMethod, HttpRequest, MAX_REDIRECTS};

/// Headers a browser or curl never carries to another origin on a redirect.
const CREDENTIAL_HEADERS: [&str; 3] = ["authorization", "cookie", "proxy-authorization"];

/// A header as sent (secrets substituted), whether it carries a host secret, and its name and
/// value as the tool wrote them (what the policy's header conditions are checked against).
type SentHeader = (Header, bool, (String, String));

/// Substitute `${VAR}` in header values; each header comes back with whether it now carries a
/// host secret (it then never follows a redirect to another origin).
pub(super) fn substitute_headers(
    policy: &AccessPolicy,
    env: &BTreeMap<String, String>,
    url: &str,
    headers: &[Header],
) -> Result<Vec<(Header, bool)>, HostError> {
    let mut out = Vec::with_capacity(headers.len());
    for h in headers {
        // A value a header cannot carry is refused before anything is put into it: a backend
        // quoting it in its error would quote a substituted secret too.
        if let Some(c) = h.value.chars().chain(h.name.chars()).find(|c| matches!(c, '\r' | '\n' | '\0')) {
            return Err(HostError::InvalidParams(format!(
                "header {:?} holds {c:?}, which no header may carry; remove it",
                h.name
            )));
        }
        let mut value = String::new();
        let mut rest = h.value.as_str();
        let mut secret = false;
        while let Some(start) = rest.find("${") {
            let Some(len) = rest[start + 2..].find('}') else { break };
            let name = &rest[start + 2..start + 2 + len];
            value.push_str(&rest[..start]);
            match policy.check_header_env_for(name, url) {
                Decision::Allow(_) => {}
                other => return Err(HostError::AccessDenied(other.reason().to_owned())),
            }
            let resolved = env.get(name).ok_or_else(|| {
                HostError::InvalidParams(format!(
                    "header {} uses ${{{name}}}, which is not set in the host environment; set it before starting jp",
                    h.name
                ))
            })?;
            value.push_str(resolved);
            secret = true;
            rest = &rest[start + 3 + len..];
        }
        value.push_str(rest);
        out.push((Header { name: h.name.clone(), value }, secret));
    }
    Ok(out)
}

impl Dispatcher {
    pub(super) async fn http(
        &self,
        method: HttpMethod,
        url: &str,
        headers: &[Header],
        body: Vec<u8>,
        id: &Id,
        events: &dyn DispatchEvents,
    ) -> Result<HostResponse, HostError> {
        let name = match method {
            HttpMethod::Get => "http.get",
            HttpMethod::Post => "http.post",
        };
        // Decided, shown and sent in its parsed form: spaces and quotes percent-encoded, a
        // host in punycode — what a question shows is what is fetched, and a URL cannot spell
        // a sentence into it. (One that does not parse is refused by the policy as it is.)
        let parsed = url::Url::parse(url).map(|u| u.to_string());
        let url = parsed.as_deref().unwrap_or(url);
        // What is sent (secrets substituted), whether it carries a secret, and the header as the
        // tool wrote it (what the policy's header conditions are checked against).
        // The host is the URL's, which the policy decided: a `Host` of the tool's own would send
        // the request to another site behind the same address (virtual hosts, CDNs).
        if let Some(h) = headers.iter().find(|h| h.name.trim().eq_ignore_ascii_case("host")) {
            return Err(HostError::InvalidParams(format!(
                "header {} is set from the URL by the host; remove it and put the host in the URL",
                h.name
            )));
        }
        // A header that cannot be substituted (a variable the policy does not name, or that is
        // not set) is reported after the URL was decided: a refused URL is refused as such.
        let written = |h: &Header| (h.name.clone(), h.value.clone());
        let (mut headers, mut unusable): (Vec<SentHeader>, _) =
            match substitute_headers(&self.policy, &self.env, url, headers) {
                Ok(list) => (
                    list.into_iter().zip(headers).map(|((sent, secret), w)| (sent, secret, written(w))).collect(),
                    None,
                ),
                Err(e) => (headers.iter().map(|h| (h.clone(), h.value.contains("${"), written(h))).collect(), Some(e)),
            };
        let mut request = HttpRequest {
            method,
            url: url.to_owned(),
            headers: headers.iter().map(|(h, _, _)| h.clone()).collect(),
            body,
            max_body: self.max_content,
        };
        for _ in 0..=MAX_REDIRECTS {
            let written: Vec<(String, String)> = headers.iter().map(|(_, _, w)| w.clone()).collect();
            let method = match request.method {
                HttpMethod::Get => "GET",
                HttpMethod::Post => "POST",
            };
            let decision = self.policy.check_request(&HttpCheck { method, url: &request.url, headers: &written });
            // A host secret goes only where a rule sends it: a person allowing a URL no rule
            // covers is never asked to hand over a secret they are not shown.
            let decision = match decision {
                Decision::Ask(reason) if headers.iter().any(|(_, secret, _)| *secret) => Decision::Deny(format!(
                    "Access denied: {reason}; this request carries a host secret (a ${{VAR}} header), which goes only to a URL a network rule allows; add it to the tool's network allow list"
                )),
                decision => decision,
            };
            self.enforce(name, &request.url, decision, id, events).await?;
            if let Some(e) = unusable.take() {
                return Err(e);
            }
            let response = self.http.send(request.clone()).await?;
            let location =
                response.headers.iter().find(|h| h.name.eq_ignore_ascii_case("location")).map(|h| h.value.clone());
            match (response.status, location) {
                (301 | 302 | 303 | 307 | 308, Some(location)) => {
                    let next = url::Url::parse(&request.url).and_then(|base| base.join(&location)).map_err(|e| {
                        HostError::Internal(format!("redirect to an invalid location {location:?}: {e}"))
                    })?;
                    if response.status == 303
                        || (response.status != 307 && response.status != 308 && request.method == HttpMethod::Post)
                    {
                        request.method = HttpMethod::Get;
                        request.body.clear();
                    }
                    // Credentials and substituted secrets stay with the origin they were meant
                    // for: on a hop to another origin they are dropped (for the rest of the
                    // chain), as browsers and curl do.
                    let here = url::Url::parse(&request.url).map(|u| u.origin());
                    if here.ok() != Some(next.origin()) {
                        headers.retain(|(h, secret, _)| {
                            !secret && !CREDENTIAL_HEADERS.iter().any(|c| h.name.eq_ignore_ascii_case(c))
                        });
                        request.headers = headers.iter().map(|(h, _, _)| h.clone()).collect();
                    }
                    request.url = next.to_string();
                }
                _ => {
                    if response.body.len() > self.max_content {
                        return Err(self.too_large("the response body", response.body.len()));
                    }
                    return Ok(HostResponse::Http(HttpResult {
                        status: response.status,
                        body: response.body,
                        headers: response.headers,
                    }));
                }
            }
        }
        Err(HostError::Internal(format!("more than {MAX_REDIRECTS} redirects starting at {url}")))
    }
}
