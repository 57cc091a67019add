//! A `CONNECT` to an origin a secret is bound to: jp terminates the process's TLS with the
//! process's own authority ([`SecretBroker`]), reads each HTTP/1.1 request, decides it as the
//! process wrote it (method, URL, headers with placeholders — what `--trace` shows), puts the
//! values in, and sends it on over one TLS connection of its own to the real origin, verified
//! against the system's roots. The response comes back with every secret taken out.
//!
//! One process connection is one upstream connection, request after request (keep-alive holds
//! on both sides); an upstream that fails ends the process's connection.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use jp_core::host::EgressGate;
use jp_core::policy::{HttpCheck, Origin};
use tokio::net::TcpStream;

use super::secrets::{Carry, SecretBroker};
use super::{EgressLimits, HOP_BY_HOP, Refusal, connect};

type Body = http_body_util::combinators::BoxBody<Bytes, hyper::Error>;

fn text(status: StatusCode, body: String) -> Response<Body> {
    let mut r = Response::new(http_body_util::Full::new(Bytes::from(body)).map_err(|e| match e {}).boxed());
    *r.status_mut() = status;
    r.headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

/// Serve the process's side of a terminated `CONNECT host:port` (already answered `200`).
pub(super) async fn serve(
    client: &mut TcpStream,
    early: Vec<u8>,
    host: String,
    port: u16,
    gate: &EgressGate,
    broker: &Arc<SecretBroker>,
    limits: &EgressLimits,
) -> Result<(), Refusal> {
    let bad_gateway = |why: String| Refusal(502, "Bad Gateway", format!("jp egress proxy: {why}\n"));
    let server = broker.server_config(&host).map_err(|e| bad_gateway(format!("no certificate for {host}: {e}")))?;
    // hyper writes a response's head and body apart: without TCP_NODELAY each small write
    // waits for the peer's delayed ACK (40 ms on Linux).
    let _ = client.set_nodelay(true);
    // What the process sent after its CONNECT head belongs to the TLS stream.
    let client = Prefixed { early, at: 0, io: client };
    let tls =
        match tokio::time::timeout(limits.head_timeout, tokio_rustls::TlsAcceptor::from(server).accept(client)).await {
            Ok(Ok(tls)) => tls,
            // A process that does not trust its authority (it pins another) fails here: nothing
            // was sent anywhere.
            Ok(Err(_)) | Err(_) => return Ok(()),
        };
    let upstream = connect(&host, port, limits).await?;
    let _ = upstream.set_nodelay(true);
    let name = rustls::pki_types::ServerName::try_from(host.clone())
        .map_err(|e| bad_gateway(format!("{host} is not a server name: {e}")))?;
    let upstream = tokio::time::timeout(
        limits.connect_timeout,
        tokio_rustls::TlsConnector::from(broker.upstream()).connect(name, upstream),
    )
    .await
    .map_err(|_| bad_gateway(format!("no TLS handshake with {host}:{port} in time")))?
    .map_err(|e| bad_gateway(format!("the TLS of {host}:{port} is not trusted or failed: {e}")))?;
    let (sender, connection) = hyper::client::conn::http1::handshake::<_, Body>(TokioIo::new(upstream))
        .await
        .map_err(|e| bad_gateway(format!("{host}:{port}: {e}")))?;
    let upstream_task = tokio::spawn(connection);
    let origin = Origin { scheme: "https".into(), host: host.clone(), port };
    let sender = tokio::sync::Mutex::new(sender);
    let service = hyper::service::service_fn(|request: Request<Incoming>| {
        let (origin, sender) = (&origin, &sender);
        async move { Ok::<_, std::convert::Infallible>(one(request, origin, gate, broker, sender).await) }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.idle_timeout)
        .serve_connection(TokioIo::new(tls), service)
        .await;
    drop(served);
    upstream_task.abort();
    Ok(())
}

/// One request of the process: decided, the values put in, sent on; the answer scrubbed.
async fn one(
    request: Request<Incoming>,
    origin: &Origin,
    gate: &EgressGate,
    broker: &Arc<SecretBroker>,
    sender: &tokio::sync::Mutex<hyper::client::conn::http1::SendRequest<Body>>,
) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    if !path.starts_with('/') {
        return text(
            StatusCode::BAD_REQUEST,
            format!(
                "jp egress proxy: inside a tunnel to {origin} a request names a path (origin form), not {path:?}\n"
            ),
        );
    }
    // Decided and sent in one form: the URL as the policy parses it (dot segments resolved,
    // `\\` read as `/`), so the upstream gets the very path that was decided.
    let Ok(parsed) = url::Url::parse(&format!("{origin}{path}")) else {
        return text(StatusCode::BAD_REQUEST, format!("jp egress proxy: {path:?} is not a path of {origin}\n"));
    };
    let url = parsed.to_string();
    let sent_path = match parsed.query() {
        Some(q) => format!("{}?{q}", parsed.path()),
        None => parsed.path().to_owned(),
    };
    let method = parts.method.as_str();
    if method.bytes().any(|b| b.is_ascii_lowercase()) {
        return text(
            StatusCode::BAD_REQUEST,
            format!("jp egress proxy: method {method:?} is not in upper case; methods are case-sensitive\n"),
        );
    }
    let mut headers = Vec::with_capacity(parts.headers.len());
    for (name, value) in &parts.headers {
        let Ok(value) = value.to_str() else {
            return text(StatusCode::BAD_REQUEST, format!("jp egress proxy: header {name} is not text\n"));
        };
        headers.push((name.as_str().to_owned(), value.to_owned()));
    }
    // Decided as the process wrote it: placeholders, never values, are compared and traced.
    let check = HttpCheck { method, url: &url, headers: &headers };
    let carries = broker.carries(origin, &headers);
    let decided = if carries { gate.request_carrying_secret(&check).await } else { gate.request(&check).await };
    if let Err(why) = decided {
        return text(StatusCode::FORBIDDEN, format!("{why}\n"));
    }
    let (_, left) = broker.put_in(origin, &mut headers);
    if !left.is_empty() {
        gate.note_placeholder(&url, &left);
    }
    let mut upstream = Request::builder().method(parts.method.clone()).uri(sent_path).version(hyper::Version::HTTP_11);
    for (name, value) in &headers {
        // A part of a response is never asked for: a secret echoed in slices would slip past
        // the masking.
        let partial = name.eq_ignore_ascii_case("range") || name.eq_ignore_ascii_case("if-range");
        if !partial && !HOP_BY_HOP.iter().any(|h| name.eq_ignore_ascii_case(h)) {
            upstream = upstream.header(name.as_str(), value.as_str());
        }
    }
    // The host is the origin's: what was decided is where it goes. Compression off, so that
    // what comes back can be scrubbed.
    let host_header = match (origin.host.contains(':'), origin.port) {
        (true, 443) => format!("[{}]", origin.host),
        (true, p) => format!("[{}]:{p}", origin.host),
        (false, 443) => origin.host.clone(),
        (false, p) => format!("{}:{p}", origin.host),
    };
    upstream = upstream.header(hyper::header::HOST, host_header);
    if let Some(h) = upstream.headers_mut() {
        h.insert(hyper::header::ACCEPT_ENCODING, hyper::header::HeaderValue::from_static("identity"));
    }
    let Ok(upstream) = upstream.body(body.boxed()) else {
        return text(StatusCode::BAD_REQUEST, "jp egress proxy: the request cannot be passed on\n".into());
    };
    let response = {
        let mut sender = sender.lock().await;
        if sender.ready().await.is_err() {
            return text(StatusCode::BAD_GATEWAY, format!("jp egress proxy: the connection to {origin} closed\n"));
        }
        sender.send_request(upstream).await
    };
    let response = match response {
        Ok(r) => r,
        Err(e) => return text(StatusCode::BAD_GATEWAY, format!("jp egress proxy: {origin}: {e}\n")),
    };
    let head = parts.method == hyper::Method::HEAD;
    let (mut parts, body) = response.into_parts();
    // A body jp cannot read cannot be masked: only identity passes.
    if let Some(encoding) = parts.headers.get(hyper::header::CONTENT_ENCODING)
        && !encoding.as_bytes().eq_ignore_ascii_case(b"identity")
    {
        return text(
            StatusCode::BAD_GATEWAY,
            format!(
                "jp egress proxy: {origin} answered with Content-Encoding {:?}, which jp cannot mask a secret in (it asked for identity); the answer was withheld\n",
                String::from_utf8_lossy(encoding.as_bytes())
            ),
        );
    }
    // The status line's own words are the upstream's: replaced by the standard ones.
    parts.extensions.remove::<hyper::ext::ReasonPhrase>();
    for value in parts.headers.values_mut() {
        let masked = broker.scrub_bytes(value.as_bytes());
        if masked != value.as_bytes() {
            *value =
                hyper::header::HeaderValue::from_bytes(&masked).unwrap_or(hyper::header::HeaderValue::from_static(""));
        }
    }
    for h in HOP_BY_HOP.iter().filter(|h| **h != "host") {
        parts.headers.remove(*h);
    }
    if head {
        return Response::from_parts(parts, http_body_util::Empty::new().map_err(|e| match e {}).boxed());
    }
    Response::from_parts(parts, Scrubbed { body, carry: Carry::default(), broker: broker.clone(), done: false }.boxed())
}

/// A response body with every secret masked as it streams (same length); trailers are dropped.
struct Scrubbed {
    body: Incoming,
    carry: Carry,
    broker: Arc<SecretBroker>,
    done: bool,
}

impl hyper::body::Body for Scrubbed {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        use std::task::Poll;
        let this = &mut *self;
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            match std::pin::Pin::new(&mut this.body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        let out = this.carry.piece(&this.broker, &data);
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                        }
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    this.done = true;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => {
                    this.done = true;
                    let rest = this.carry.finish(&this.broker);
                    if !rest.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from(rest)))));
                    }
                }
            }
        }
    }
}

/// The process's stream, with what it sent before its `CONNECT` was answered read first.
struct Prefixed<'a> {
    early: Vec<u8>,
    at: usize,
    io: &'a mut TcpStream,
}

impl tokio::io::AsyncRead for Prefixed<'_> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.at < this.early.len() {
            let n = buf.remaining().min(this.early.len() - this.at);
            buf.put_slice(&this.early[this.at..this.at + n]);
            this.at += n;
            return std::task::Poll::Ready(Ok(()));
        }
        std::pin::Pin::new(&mut *this.io).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for Prefixed<'_> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut *self.io).poll_write(cx, buf)
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut *self.io).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut *self.io).poll_shutdown(cx)
    }
}
