//! The egress proxy: the only way out of a direct-access process (a stdio tool, an MCP server, a
//! `process.run` child, `run`) whose policy allows some URLs.
//!
//! Such a process runs in a network namespace of its own with nothing but loopback
//! (`sandbox/netns.rs`); the socket listening on `127.0.0.1:`[`EGRESS_PORT`] there is handed to
//! jp, and [`serve`] answers it here, one proxy per process, with the process's
//! [`EgressGate`] (its policy, inquirer and trace). `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY`
//! point at it ([`proxy_env`]). It speaks what proxy-aware clients send:
//!
//! - `CONNECT host:port` — a tunnel (TLS passes through uninspected), decided by
//!   `check_connect` per host and port; jp resolves the name (the process has no DNS) and connects;
//! - `METHOD http://host:port/path` (absolute URI) — one plain-HTTP request, decided by
//!   `check_request` on its method, URL and headers as the process wrote them, sent upstream in
//!   origin form with `Host` set from the URL and `Connection: close`; its body must have a
//!   `Content-Length` (exactly that many bytes go upstream, so a second request cannot follow
//!   the first unchecked), and the connection ends with the response.
//!
//! A refusal is a `403` with the reason as its body; an inquiry is asked like any request. Bounds:
//! the request head ([`EgressLimits::max_head`], 64 headers), connections open at once per
//! process, time to send the head, idle time of a tunnel or response (nothing in either
//! direction), time to connect. Dropping the [`EgressProxy`] ends every connection it serves.

mod secrets;
mod terminate;

use std::sync::Arc;
use std::time::Duration;

use jp_core::host::{EgressGate, Refused};
use jp_core::policy::HttpCheck;
pub use secrets::{CA_VARIABLES, NODE_CA_VARIABLE, SecretBroker, upstream_roots};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

pub use crate::sandbox::{EGRESS_PORT, proxy_url};

/// What one process's proxy allows itself to be given.
#[derive(Debug, Clone, Copy)]
pub struct EgressLimits {
    /// Largest request head (request line and headers), bytes; larger: `431`.
    pub max_head: usize,
    /// Connections open at once; more: `503`.
    pub max_connections: usize,
    /// Time to send a whole request head.
    pub head_timeout: Duration,
    /// A tunnel or response with nothing in either direction for this long is closed.
    pub idle_timeout: Duration,
    /// Time to resolve and connect upstream.
    pub connect_timeout: Duration,
}

impl Default for EgressLimits {
    fn default() -> Self {
        Self {
            max_head: 16 * 1024,
            max_connections: 64,
            head_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(15),
        }
    }
}

/// Most headers in one request head.
const MAX_HEADERS: usize = 64;
/// Bytes copied at a time, per direction.
const BUFFER: usize = 16 * 1024;

/// The environment that points a process at its proxy (upper and lower case, as clients differ);
/// `NO_PROXY` is removed by [`with_proxy_env`], since nothing is reachable without the proxy.
pub fn proxy_env() -> Vec<(String, String)> {
    let url = proxy_url();
    ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"]
        .into_iter()
        .flat_map(|k| [(k.to_owned(), url.clone()), (k.to_ascii_lowercase(), url.clone())])
        .collect()
}

/// `env` with the proxy variables set (and no `NO_PROXY`).
pub fn with_proxy_env(
    mut env: std::collections::BTreeMap<String, String>,
) -> std::collections::BTreeMap<String, String> {
    env.retain(|k, _| !k.eq_ignore_ascii_case("no_proxy"));
    env.extend(proxy_env());
    env
}

/// A running proxy; dropping it closes the listener and every connection it serves.
#[must_use = "the proxy stops when dropped"]
pub struct EgressProxy {
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for EgressProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EgressProxy").finish_non_exhaustive()
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serve `listener` (a process's egress listener) with `gate` deciding every connection, and
/// `broker` holding the process's bound secrets (`access.secrets`), if any.
pub fn serve(
    listener: TcpListener,
    gate: Arc<EgressGate>,
    limits: EgressLimits,
    broker: Option<Arc<SecretBroker>>,
) -> EgressProxy {
    let task = tokio::spawn(async move {
        // Connections live in the set, so aborting this task ends them all.
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((client, _)) = accepted else {
                        // Out of descriptors (EMFILE) and the like: the error repeats at once,
                        // so wait a little instead of spinning.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    };
                    if connections.len() >= limits.max_connections {
                        let body = format!(
                            "jp egress proxy: more than {} connections of this process are open; close some first\n",
                            limits.max_connections
                        );
                        // One non-blocking write: a client that does not read cannot stall the loop.
                        let _ = client.try_write(response(503, "Service Unavailable", &body).as_bytes());
                        continue;
                    }
                    let (gate, broker) = (gate.clone(), broker.clone());
                    connections.spawn(async move { handle(client, &gate, &limits, broker.as_ref()).await });
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
    });
    EgressProxy { task }
}

/// An answer of the proxy itself.
fn response(code: u16, status: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {code} {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Why a request was not served: the status and the body that says so.
struct Refusal(u16, &'static str, String);

impl Refusal {
    fn bad(why: impl Into<String>) -> Self {
        Self(400, "Bad Request", format!("jp egress proxy: {}\n", why.into()))
    }
}

async fn handle(mut client: TcpStream, gate: &EgressGate, limits: &EgressLimits, broker: Option<&Arc<SecretBroker>>) {
    if let Err(Refusal(code, status, body)) = serve_one(&mut client, gate, limits, broker).await {
        let _ =
            tokio::time::timeout(Duration::from_secs(5), client.write_all(response(code, status, &body).as_bytes()))
                .await;
    }
}

/// One request head, read up to its blank line: the head's length and every byte read so far.
async fn read_head(client: &mut TcpStream, max: usize) -> Result<(usize, Vec<u8>), Refusal> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk).await.map_err(|e| Refusal::bad(format!("reading the request: {e}")))?;
        if n == 0 {
            return Err(Refusal::bad("the connection closed before a whole request head arrived"));
        }
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = memchr::memmem::find(&buf[from..], b"\r\n\r\n") {
            let len = from + end + 4;
            if len > max {
                break;
            }
            return Ok((len, buf));
        }
        if buf.len() > max {
            break;
        }
    }
    Err(Refusal(
        431,
        "Request Header Fields Too Large",
        format!("jp egress proxy: the request head is over {max} bytes\n"),
    ))
}

async fn serve_one(
    client: &mut TcpStream,
    gate: &EgressGate,
    limits: &EgressLimits,
    broker: Option<&Arc<SecretBroker>>,
) -> Result<(), Refusal> {
    let (head_len, buf) = tokio::time::timeout(limits.head_timeout, read_head(client, limits.max_head))
        .await
        .map_err(|_| Refusal(408, "Request Timeout", "jp egress proxy: no whole request head in time\n".into()))??;
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(&buf[..head_len]) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(Refusal::bad("an incomplete request head")),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(Refusal(
                431,
                "Request Header Fields Too Large",
                format!("jp egress proxy: more than {MAX_HEADERS} headers\n"),
            ));
        }
        Err(e) => return Err(Refusal::bad(format!("a malformed request head ({e})"))),
    }
    let method = request.method.unwrap_or_default().to_owned();
    let target = request.path.unwrap_or_default().to_owned();
    let mut written = Vec::with_capacity(request.headers.len());
    for h in request.headers.iter() {
        let value = std::str::from_utf8(h.value)
            .map_err(|_| Refusal::bad(format!("header {} is not UTF-8", h.name)))?
            .to_owned();
        written.push((h.name.to_owned(), value));
    }
    let rest = &buf[head_len..];
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = authority(&target)?;
        let terminated = broker.filter(|b| b.terminates(&host, port));
        if terminated.is_none() && gate.policy().inspected(&host, port) {
            // The policy holds this origin per request, which only a terminated connection can.
            return Err(Refusal(
                403,
                "Forbidden",
                format!(
                    "jp egress proxy: {host}:{port} is held per request (access.secrets binds a secret to it), and this process's proxy cannot see its requests; it was not connected\n"
                ),
            ));
        }
        gate.connect(&host, port).await.map_err(denied)?;
        if let Some(broker) = terminated {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .map_err(|e| Refusal::bad(format!("writing to the process: {e}")))?;
            let host = jp_core::policy::canonical_host(host.trim_start_matches('[').trim_end_matches(']'));
            return terminate::serve(client, rest.to_vec(), host, port, gate, broker, limits).await;
        }
        let mut upstream = connect(&host, port, limits).await?;
        client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await
            .map_err(|e| Refusal::bad(format!("writing to the process: {e}")))?;
        if !rest.is_empty() && upstream.write_all(rest).await.is_err() {
            return Ok(());
        }
        splice(client, &mut upstream, None, limits.idle_timeout).await;
        return Ok(());
    }
    plain_http(client, gate, limits, &method, &target, written, rest, broker).await
}

/// A refusal of the policy (or the user), with its reason.
fn denied(why: Refused) -> Refusal {
    Refusal(403, "Forbidden", format!("{why}\n"))
}

/// `host:port` of a `CONNECT` (an IPv6 literal in brackets).
fn authority(target: &str) -> Result<(String, u16), Refusal> {
    let bad = || Refusal::bad(format!("CONNECT needs host:port, got {:?}", target.escape_debug().to_string()));
    let (host, port) = if let Some(rest) = target.strip_prefix('[') {
        let (h, p) = rest.split_once("]:").ok_or_else(bad)?;
        (h, p)
    } else {
        target.rsplit_once(':').ok_or_else(bad)?
    };
    let port: u16 = port.parse().map_err(|_| bad())?;
    let ok = |c: char| c.is_ascii_alphanumeric() || ".-_:".contains(c);
    if host.is_empty() || port == 0 || !host.chars().all(ok) {
        return Err(bad());
    }
    Ok((host.to_owned(), port))
}

/// jp resolves the name and connects (the process has no DNS of its own).
async fn connect(host: &str, port: u16, limits: &EgressLimits) -> Result<TcpStream, Refusal> {
    let fail =
        |why: String| Refusal(502, "Bad Gateway", format!("jp egress proxy: cannot reach {host}:{port}: {why}\n"));
    // The host as the policy compared it: lower case, without a fully qualified name's trailing
    // dot (`127.0.0.1.` is no IP literal to the resolver, which would be asked for it), an IP
    // literal connected to as itself.
    let host = jp_core::policy::canonical_host(host);
    let attempt = async {
        if let Ok(ip) = host.parse::<std::net::IpAddr>() {
            return TcpStream::connect((ip, port)).await.map_err(|e| fail(e.to_string()));
        }
        let addrs = tokio::net::lookup_host((host.as_str(), port)).await.map_err(|e| fail(e.to_string()))?;
        let mut last = fail("the name resolved to no address".into());
        for addr in addrs {
            match TcpStream::connect(addr).await {
                Ok(s) => return Ok(s),
                Err(e) => last = fail(e.to_string()),
            }
        }
        Err(last)
    };
    tokio::time::timeout(limits.connect_timeout, attempt)
        .await
        .map_err(|_| fail(format!("no connection within {} s", limits.connect_timeout.as_secs())))?
}

/// Headers that belong to one hop (and `Host`, set from the URL).
const HOP_BY_HOP: [&str; 10] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
];

#[allow(clippy::too_many_arguments)]
async fn plain_http(
    client: &mut TcpStream,
    gate: &EgressGate,
    limits: &EgressLimits,
    method: &str,
    target: &str,
    headers: Vec<(String, String)>,
    rest: &[u8],
    broker: Option<&Arc<SecretBroker>>,
) -> Result<(), Refusal> {
    let lower = target.to_ascii_lowercase();
    if lower.starts_with("https://") {
        return Err(Refusal::bad("an https:// URL goes through a tunnel: send CONNECT host:443 first"));
    }
    if !lower.starts_with("http://") {
        return Err(Refusal::bad(format!(
            "this is jp's egress proxy: send CONNECT host:port, or a request with an absolute http:// URL; got {:?}",
            target.escape_debug().to_string()
        )));
    }
    fn header<'h>(headers: &'h [(String, String)], name: &'static str) -> impl Iterator<Item = &'h String> {
        headers.iter().filter(move |(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v)
    }
    if header(&headers, "transfer-encoding").next().is_some() {
        return Err(Refusal(
            501,
            "Not Implemented",
            "jp egress proxy: a request body must have a Content-Length (Transfer-Encoding is not supported for plain HTTP; use https, which is tunnelled)\n".into(),
        ));
    }
    let lengths: Vec<&String> = header(&headers, "content-length").collect();
    let length: u64 = match lengths.as_slice() {
        [] => 0,
        [one] => one.trim().parse().map_err(|_| Refusal::bad(format!("Content-Length {one:?} is not a number")))?,
        _ => return Err(Refusal::bad("more than one Content-Length")),
    };
    gate.request(&HttpCheck { method, url: target, headers: &headers }).await.map_err(denied)?;
    let url = url::Url::parse(target).map_err(|e| Refusal::bad(format!("{target:?} is not a URL ({e})")))?;
    // A placeholder goes as it is (secrets are bound to https origins only), noted in the trace.
    if let Some(broker) = broker {
        let values: Vec<&str> = headers.iter().map(|(_, v)| v.as_str()).collect();
        let left = broker.placeholders_in(&values.join("\n"));
        if !left.is_empty() {
            gate.note_placeholder(target, &left);
        }
    }
    let host = url.host_str().ok_or_else(|| Refusal::bad("the URL has no host"))?;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let port = url.port_or_known_default().unwrap_or(80);
    let mut upstream = connect(bare, port, limits).await?;
    // The request as decided: origin form of the parsed URL (dot segments resolved, as the
    // policy saw it), `Host` from the URL, one request per connection.
    let mut head = format!("{method} {}", url.path());
    if let Some(q) = url.query() {
        head.push('?');
        head.push_str(q);
    }
    head.push_str(" HTTP/1.1\r\nHost: ");
    head.push_str(&url[url::Position::BeforeHost..url::Position::AfterPort]);
    head.push_str("\r\n");
    for (name, value) in &headers {
        if !HOP_BY_HOP.iter().any(|h| name.eq_ignore_ascii_case(h)) {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    head.push_str("Connection: close\r\n\r\n");
    let early = &rest[..rest.len().min(usize::try_from(length).unwrap_or(usize::MAX))];
    if upstream.write_all(head.as_bytes()).await.is_err() || upstream.write_all(early).await.is_err() {
        return Err(Refusal(502, "Bad Gateway", "jp egress proxy: the server closed the connection\n".into()));
    }
    splice(client, &mut upstream, Some(length - early.len() as u64), limits.idle_timeout).await;
    Ok(())
}

/// Copy both ways until both sides are done, nothing moves for `idle`, or an error. With
/// `client_limit`, only that many more bytes go from the client upstream (a request body), and
/// the exchange ends when the server is done.
async fn splice(client: &mut TcpStream, upstream: &mut TcpStream, client_limit: Option<u64>, idle: Duration) {
    let (mut cr, mut cw) = client.split();
    let (mut ur, mut uw) = upstream.split();
    let mut to_up = vec![0u8; BUFFER];
    let mut to_client = vec![0u8; BUFFER];
    let mut left = client_limit.unwrap_or(u64::MAX);
    let mut client_open = left > 0;
    let mut upstream_open = true;
    // A tunnel lasts while either side sends; a plain request until the server is done.
    while upstream_open || (client_limit.is_none() && client_open) {
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(BUFFER);
        tokio::select! {
            r = cr.read(&mut to_up[..want]), if client_open => match r {
                Ok(0) | Err(_) => {
                    client_open = false;
                    if client_limit.is_none() {
                        let _ = uw.shutdown().await;
                    }
                }
                Ok(n) => {
                    // A side that stops reading is idle too: the write is bounded by the same time.
                    if !matches!(tokio::time::timeout(idle, uw.write_all(&to_up[..n])).await, Ok(Ok(()))) { break; }
                    left -= n as u64;
                    if left == 0 { client_open = false; }
                }
            },
            r = ur.read(&mut to_client), if upstream_open => match r {
                Ok(0) | Err(_) => {
                    upstream_open = false;
                    let _ = cw.shutdown().await;
                }
                Ok(n) => if !matches!(tokio::time::timeout(idle, cw.write_all(&to_client[..n])).await, Ok(Ok(()))) { break; },
            },
            () = tokio::time::sleep(idle) => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_targets_are_host_and_port() {
        assert_eq!(authority("example.com:443").ok(), Some(("example.com".into(), 443)));
        assert_eq!(authority("[::1]:8080").ok(), Some(("::1".into(), 8080)));
        for bad in ["example.com", "example.com:0", ":80", "a b:80", "host:99999", "x/y:80", "[::1]"] {
            assert!(authority(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_environment_names_the_proxy_and_no_exceptions() {
        let mut env = std::collections::BTreeMap::new();
        env.insert("NO_PROXY".to_owned(), "*".to_owned());
        env.insert("no_proxy".to_owned(), "localhost".to_owned());
        let env = with_proxy_env(env);
        assert!(!env.keys().any(|k| k.eq_ignore_ascii_case("no_proxy")));
        for k in ["HTTP_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"] {
            assert_eq!(env.get(k).map(String::as_str), Some(proxy_url().as_str()), "{k}");
        }
    }
}
