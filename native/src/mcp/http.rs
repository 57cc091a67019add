//! `jp mcp --http ADDR`: MCP Streamable HTTP. Loopback by default; every request needs
//! `Authorization: Bearer <token>` (401 otherwise); a request with an `Origin` header is refused
//! (403) unless it is the server's own origin — a web page cannot drive the tools even if it
//! learns the address (DNS rebinding, as the MCP specification asks); rmcp checks `Host`
//! as well. A non-loopback address is refused unless the token was given explicitly.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use jp_core::handles::{HandleOwners, SessionLimits, StatefulTools};

use super::{JpMcp, McpOptions, ServeError, TaskStore};
use crate::app::{App, Handles};

/// The endpoint's path.
pub const PATH: &str = "/mcp";

/// Scopes of stateless requests that may hold live handles at once.
const MAX_SCOPES: usize = 64;

/// How often idle handles are looked for.
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// Where and how to serve.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The address to listen on.
    pub addr: SocketAddr,
    /// The bearer token every request must carry.
    pub token: String,
    /// Whether the token was chosen by the user (required for a non-loopback address).
    pub token_given: bool,
}

/// A fresh random token (32 bytes from the OS, hex).
pub fn generate_token() -> Result<String, ServeError> {
    let mut bytes = [0u8; 32];
    rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty())
        .map_err(|e| ServeError::Token(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn plain(status: StatusCode, text: &str) -> Response<BoxBody<Bytes, Infallible>> {
    let mut r = Response::new(Full::new(Bytes::from(format!("{text}\n"))).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert("content-type", hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

/// Constant-time comparison of the presented token.
fn token_ok(req: &Request<Incoming>, token: &str) -> bool {
    let Some(given) = req.headers().get("authorization").and_then(|v| v.to_str().ok()) else { return false };
    let Some(given) = given.strip_prefix("Bearer ") else { return false };
    given.len() == token.len() && given.bytes().zip(token.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// The handles of every session still open.
fn live_sessions(sessions: &std::sync::Mutex<Vec<std::sync::Weak<Handles>>>) -> Vec<Arc<Handles>> {
    sessions
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .filter_map(std::sync::Weak::upgrade)
        .collect()
}

/// Serve until `shutdown` resolves. Prints the address (and a generated token) to stderr.
pub async fn serve(
    app: Arc<App>,
    options: McpOptions,
    http: HttpOptions,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), ServeError> {
    if !http.addr.ip().is_loopback() && !http.token_given {
        return Err(ServeError::NotLoopback { addr: http.addr });
    }
    let listener = tokio::net::TcpListener::bind(http.addr)
        .await
        .map_err(|source| ServeError::Listen { addr: http.addr, source })?;
    let local = listener.local_addr().map_err(ServeError::LocalAddr)?;
    let own_origins = [format!("http://{local}"), format!("http://localhost:{}", local.port())];
    let mut config = StreamableHttpServerConfig::default();
    if !local.ip().is_loopback() {
        config = config.with_allowed_hosts([local.ip().to_string()]);
    }
    let factory_app = app.clone();
    // Every session's handles, so that stopping the server aborts them all.
    let sessions: Arc<std::sync::Mutex<Vec<std::sync::Weak<Handles>>>> = Arc::default();
    let factory_sessions = sessions.clone();
    // One bound on concurrent calls for the whole server, not per session.
    let slots = Arc::new(tokio::sync::Semaphore::new(options.max_concurrent.max(1)));
    // MCP tasks outlive the request that made them (a stateless request's server lives for that
    // request only): one store for the server, each task bound to its session or to the token.
    let tasks = TaskStore::new();
    let factory_tasks = tasks.clone();
    // Handles of stateless requests outlive them too: one set for the server, by scope.
    let owners = Arc::new(HandleOwners::new(SessionLimits::default(), MAX_SCOPES));
    let factory_owners = owners.clone();
    let service = StreamableHttpService::new(
        move || {
            let server =
                JpMcp::shared(factory_app.clone(), slots.clone(), factory_tasks.clone(), factory_owners.clone());
            let mut all = factory_sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            all.retain(|w| w.strong_count() > 0);
            all.push(Arc::downgrade(server.handles()));
            Ok(server)
        },
        Arc::new(LocalSessionManager::default()),
        config,
    );
    eprintln!("jp mcp: serving MCP over HTTP at http://{local}{PATH}");
    if !http.token_given {
        eprintln!("jp mcp: bearer token (shown once): {}", http.token);
    }
    let token: Arc<str> = http.token.into();
    let own_origins = Arc::new(own_origins);
    // Idle handles are aborted even when nobody calls again.
    let sweeper = {
        let (owners, sessions, app) = (owners.clone(), sessions.clone(), app.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(SWEEP_EVERY).await;
                let now = StatefulTools::now(&*app);
                owners.expire(now).await;
                let live = live_sessions(&sessions);
                for handles in live {
                    handles.expire(now).await;
                }
            }
        })
    };
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => { eprintln!("jp mcp: accept failed: {e}"); continue; }
            },
            () = &mut shutdown => {
                let live = live_sessions(&sessions);
                sweeper.abort();
                tasks.close(None).await;
                owners.close().await;
                for handles in live {
                    handles.close().await;
                }
                return Ok(());
            }
        };
        let (service, token, own_origins) = (service.clone(), token.clone(), own_origins.clone());
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |req: Request<Incoming>| {
                let (service, token, own_origins) = (service.clone(), token.clone(), own_origins.clone());
                async move {
                    if req.uri().path() != PATH {
                        return Ok::<_, Infallible>(plain(
                            StatusCode::NOT_FOUND,
                            "not found: the MCP endpoint is /mcp",
                        ));
                    }
                    if let Some(origin) = req.headers().get("origin") {
                        let ok = origin.to_str().is_ok_and(|o| own_origins.iter().any(|own| own == o));
                        if !ok {
                            return Ok(plain(
                                StatusCode::FORBIDDEN,
                                "forbidden: requests from web pages of other origins are refused",
                            ));
                        }
                    }
                    if !token_ok(&req, &token) {
                        let mut r = plain(
                            StatusCode::UNAUTHORIZED,
                            "unauthorized: send Authorization: Bearer <token> (printed by jp mcp --http, or the value of --token-env)",
                        );
                        r.headers_mut().insert("www-authenticate", hyper::header::HeaderValue::from_static("Bearer"));
                        return Ok(r);
                    }
                    Ok(service.handle(req).await)
                }
            });
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), handler).await;
        });
    }
}
