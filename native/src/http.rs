//! [`ReqwestHttpClient`]: the native [`HttpClient`] on reqwest with rustls.
//!
//! It never follows redirects: the core dispatcher follows them and checks each hop against the
//! policy. Bodies are read as a stream and refused beyond the request's size cap.

use std::time::Duration;

use jp_core::BoxFuture;
use jp_core::host::{BackendError, HttpClient, HttpMethod, HttpRequest, HttpResponse};
use jp_core::maybe::OnBytes;
use jp_core::protocol::Header;

/// Make *ring* the process's TLS crypto provider (reqwest is built without one, see the
/// workspace `Cargo.toml`); every HTTPS client of `jp` is built after this. Idempotent.
pub fn crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err only when a provider is installed already, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Default time for one HTTP exchange.
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// HTTP over reqwest (rustls, no redirects, bounded bodies).
#[derive(Debug, Clone)]
pub struct ReqwestHttpClient {
    /// Built on first use: loading the system's root certificates takes milliseconds, which a
    /// call that never touches the network should not pay.
    client: std::sync::OnceLock<Result<reqwest::Client, BackendError>>,
    timeout: Duration,
}

impl ReqwestHttpClient {
    /// A client with the given per-exchange timeout.
    pub fn new(timeout: Duration) -> Result<Self, BackendError> {
        Ok(Self { client: std::sync::OnceLock::new(), timeout })
    }

    fn client(&self) -> Result<&reqwest::Client, BackendError> {
        self.client
            .get_or_init(|| {
                crypto_provider();
                reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .timeout(self.timeout)
                    .user_agent(concat!("jp-host/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| BackendError::Failed(format!("cannot build the HTTP client: {e}")))
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl HttpClient for ReqwestHttpClient {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpResponse, BackendError>> {
        Box::pin(self.exchange(request, None))
    }

    fn send_streaming<'a>(
        &'a self,
        request: HttpRequest,
        on_chunk: OnBytes<'a>,
    ) -> BoxFuture<'a, Result<HttpResponse, BackendError>> {
        Box::pin(self.exchange(request, Some(on_chunk)))
    }
}

impl ReqwestHttpClient {
    /// One exchange; the body's pieces also go to `on_chunk` as they arrive.
    async fn exchange(
        &self,
        request: HttpRequest,
        on_chunk: Option<OnBytes<'_>>,
    ) -> Result<HttpResponse, BackendError> {
        {
            let client = self.client()?;
            let mut builder = match request.method {
                HttpMethod::Get => client.get(&request.url),
                HttpMethod::Post => client.post(&request.url).body(request.body.clone()),
            };
            for h in &request.headers {
                builder = builder.header(&h.name, &h.value);
            }
            let describe = |e: reqwest::Error| {
                if e.is_timeout() {
                    BackendError::Timeout(format!(
                        "no response from {} within {} s",
                        request.url,
                        self.timeout.as_secs()
                    ))
                } else if e.is_builder() {
                    BackendError::Failed(format!("invalid request to {}: {e}", request.url))
                } else {
                    BackendError::Failed(format!("request to {} failed: {e}", request.url))
                }
            };
            let mut response = builder.send().await.map_err(describe)?;
            let status = response.status().as_u16();
            let headers = response
                .headers()
                .iter()
                .map(|(k, v)| Header {
                    name: k.as_str().to_owned(),
                    value: String::from_utf8_lossy(v.as_bytes()).into_owned(),
                })
                .collect();
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(describe)? {
                if body.len() + chunk.len() > request.max_body {
                    return Err(BackendError::TooLarge(format!(
                        "the response body of {} is over the {}-byte limit",
                        request.url, request.max_body
                    )));
                }
                if let Some(f) = on_chunk {
                    f(&chunk);
                }
                body.extend_from_slice(&chunk);
            }
            Ok(HttpResponse { status, headers, body })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// reqwest is built without a crypto provider (the workspace installs *ring*): an `https`
    /// request must get as far as sending a TLS ClientHello, not fail for want of a provider.
    #[tokio::test]
    async fn https_goes_through_rustls_with_ring() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().unwrap();
            let mut head = [0u8; 3];
            socket.read_exact(&mut head).unwrap();
            let _ = tx.send(head); // the socket is dropped here: the handshake fails
        });
        let client = ReqwestHttpClient::new(Duration::from_secs(5)).unwrap();
        let request = HttpRequest {
            method: HttpMethod::Get,
            url: format!("https://127.0.0.1:{port}/"),
            headers: Vec::new(),
            body: Vec::new(),
            max_body: 1024,
        };
        let err = client.send(request).await.unwrap_err();
        // A TLS handshake record (0x16), TLS 1.x (0x03 ..).
        let head = rx.recv_timeout(Duration::from_secs(5)).unwrap_or_else(|_| panic!("no TLS connection: {err:?}"));
        assert_eq!(&head[..2], &[0x16, 0x03]);
        assert!(!format!("{err:?}").contains("provider"), "{err:?}");
    }
}
