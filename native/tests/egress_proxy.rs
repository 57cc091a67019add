//! jp's egress proxy against a hostile process, in-process: each way in (`CONNECT`, an
//! absolute-URI request) tried where the policy refuses, with smuggling (a second request behind
//! the first, two `Content-Length`s, `Transfer-Encoding`, a forged `Host`), a huge head, too many
//! connections, and a hostile server answer; and the proxy gone once dropped. Real servers on
//! 127.0.0.1, started and stopped by the test.

#![cfg(target_os = "linux")]

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jp_core::host::{DenyInquirer, DispatchEvents, EgressGate, TraceEvent};
use jp_core::policy::{AccessConfig, AccessPolicy};
use jp_native::egress::{EgressLimits, EgressProxy, serve};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Default)]
struct Trace(Mutex<Vec<TraceEvent>>);
impl DispatchEvents for Trace {
    fn decided(&self, e: &TraceEvent) {
        self.0.lock().unwrap().push(e.clone());
    }
}

/// A server that records every byte it receives and answers each connection with `answer`.
struct Upstream {
    port: u16,
    received: Arc<Mutex<Vec<u8>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Upstream {
    async fn start(answer: &'static [u8]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let r = received.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut c, _)) = listener.accept().await {
                let r = r.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    // Read what arrives in the first moments, answer, then keep recording.
                    let mut answered = false;
                    loop {
                        match tokio::time::timeout(Duration::from_millis(300), c.read(&mut buf)).await {
                            Ok(Ok(0)) | Ok(Err(_)) => break,
                            Ok(Ok(n)) => r.lock().unwrap().extend_from_slice(&buf[..n]),
                            Err(_) if !answered => {
                                answered = true;
                                let _ = c.write_all(answer).await;
                                let _ = c.shutdown().await;
                            }
                            Err(_) => break,
                        }
                    }
                });
            }
        });
        Self { port, received, task }
    }

    fn received(&self) -> String {
        String::from_utf8_lossy(&self.received.lock().unwrap()).into_owned()
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";

/// A proxy (on a loopback port of the host, as the namespace's listener would be) whose policy
/// is `network`; its address and trace.
async fn proxy(network: &str, limits: EgressLimits) -> (EgressProxy, u16, Arc<Trace>) {
    let cfg: AccessConfig = toml::from_str(&format!("network = {network}")).unwrap();
    let policy = Arc::new(AccessPolicy::from_config(None, Some(&cfg)).unwrap());
    let trace = Arc::new(Trace::default());
    let gate =
        EgressGate::new("t", policy, Arc::new(DenyInquirer), Some(trace.clone()), Arc::new(AtomicBool::new(false)));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    (serve(listener, Arc::new(gate), limits, None), port, trace)
}

/// Send `bytes` to the proxy and read its whole answer.
async fn exchange_bytes(port: u16, bytes: &[u8]) -> Vec<u8> {
    let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    c.write_all(bytes).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut out)).await;
    out
}

async fn exchange(port: u16, bytes: &[u8]) -> String {
    String::from_utf8_lossy(&exchange_bytes(port, bytes).await).into_owned()
}

#[tokio::test]
async fn a_connect_to_a_denied_host_is_403_with_the_reason_and_reaches_nothing() {
    let (a, b) = (Upstream::start(OK).await, Upstream::start(OK).await);
    let (_p, port, trace) = proxy(
        &format!("{{ allow = [\"http://127.0.0.1:{0}\", \"https://127.0.0.1:{0}\"] }}", a.port),
        Default::default(),
    )
    .await;
    let denied =
        exchange(port, format!("CONNECT 127.0.0.1:{} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n", b.port).as_bytes()).await;
    assert!(denied.starts_with("HTTP/1.1 403 ") && denied.contains("Access denied"), "{denied}");
    let other = exchange(port, format!("CONNECT 127.0.0.2:{} HTTP/1.1\r\n\r\n", a.port).as_bytes()).await;
    assert!(other.starts_with("HTTP/1.1 403 "), "{other}");
    let named = exchange(port, format!("CONNECT localhost:{} HTTP/1.1\r\n\r\n", a.port).as_bytes()).await;
    assert!(named.starts_with("HTTP/1.1 403 "), "another name for the same address: {named}");
    // The allowed one tunnels, bytes sent with the CONNECT included.
    let ok = exchange(port, format!("CONNECT 127.0.0.1:{} HTTP/1.1\r\n\r\nGET /t HTTP/1.1\r\n\r\n", a.port).as_bytes())
        .await;
    assert!(ok.starts_with("HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK"), "{ok}");
    assert_eq!(b.received(), "", "B was reached");
    assert!(a.received().starts_with("GET /t HTTP/1.1"), "{}", a.received());
    let events = trace.0.lock().unwrap();
    let decided: Vec<(String, bool)> = events.iter().map(|e| (e.target.clone(), e.allowed)).collect();
    assert_eq!(decided.len(), 4, "{decided:?}");
    assert_eq!(decided[3], (format!("127.0.0.1:{}", a.port), true));
    assert!(events.iter().all(|e| e.method == "net.connect"));
}

#[tokio::test]
async fn a_tunnel_is_for_tls_only_and_goes_to_the_address_the_policy_decided() {
    let a = Upstream::start(OK).await;
    // Plain HTTP only: a tunnel would let the process say any `Host` inside it.
    let (_p, port, _) = proxy(&format!("{{ allow = [\"http://127.0.0.1:{}\"] }}", a.port), Default::default()).await;
    let refused = exchange(port, format!("CONNECT 127.0.0.1:{} HTTP/1.1\r\n\r\n", a.port).as_bytes()).await;
    assert!(refused.starts_with("HTTP/1.1 403 ") && refused.contains("plain HTTP"), "{refused}");
    assert_eq!(a.received(), "", "A was reached through a refused tunnel");
    // An https origin tunnels; its name with a trailing dot is the same address, connected to
    // as the IP literal the policy compared (not handed to the resolver).
    let (_p, port, _) = proxy(&format!("{{ allow = [\"https://127.0.0.1:{}\"] }}", a.port), Default::default()).await;
    let dotted =
        exchange(port, format!("CONNECT 127.0.0.1.:{} HTTP/1.1\r\n\r\nGET /dot HTTP/1.1\r\n\r\n", a.port).as_bytes())
            .await;
    assert!(dotted.starts_with("HTTP/1.1 200 Connection established"), "{dotted}");
    assert!(a.received().starts_with("GET /dot HTTP/1.1"), "{}", a.received());
}

#[tokio::test]
async fn an_absolute_uri_is_decided_per_request_and_cannot_smuggle_a_second_one() {
    let a = Upstream::start(OK).await;
    let origin = format!("http://127.0.0.1:{}", a.port);
    // Per-request rules hold for plain HTTP through the proxy (a tunnel would be refused).
    let network = format!(
        "{{ allow = [{{ url = \"{origin}/ok\", methods = [\"GET\", \"POST\"] }}], deny = [\"{origin}/ok/admin\"] }}"
    );
    let (_p, port, _) = proxy(&network, Default::default()).await;
    let denied = exchange(port, format!("GET {origin}/ok/admin HTTP/1.1\r\n\r\n").as_bytes()).await;
    assert!(denied.starts_with("HTTP/1.1 403 ") && denied.contains("/ok/admin"), "{denied}");
    let dots = exchange(port, format!("GET {origin}/ok/x/../admin HTTP/1.1\r\n\r\n").as_bytes()).await;
    assert!(dots.starts_with("HTTP/1.1 403 "), "dot segments resolved before deciding: {dots}");
    let method = exchange(port, format!("DELETE {origin}/ok HTTP/1.1\r\n\r\n").as_bytes()).await;
    assert!(method.starts_with("HTTP/1.1 403 "), "{method}");
    let tunnel = exchange(port, format!("CONNECT 127.0.0.1:{} HTTP/1.1\r\n\r\n", a.port).as_bytes()).await;
    assert!(tunnel.starts_with("HTTP/1.1 403 ") && tunnel.contains("per host and port"), "{tunnel}");
    // Allowed, with a second request behind the first and a forged Host: only the first goes
    // upstream, with Host from the URL.
    let smuggle = format!(
        "POST {origin}/ok HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 4\r\nProxy-Authorization: x\r\n\r\nbodyGET {origin}/ok/admin HTTP/1.1\r\n\r\n"
    );
    let ok = exchange(port, smuggle.as_bytes()).await;
    assert!(ok.starts_with("HTTP/1.1 200 OK"), "{ok}");
    let seen = a.received();
    assert!(seen.starts_with("POST /ok HTTP/1.1\r\nHost: 127.0.0.1:"), "{seen}");
    assert!(seen.ends_with("Connection: close\r\n\r\nbody"), "exactly the body, nothing after it: {seen}");
    assert!(!seen.contains("admin") && !seen.contains("evil") && !seen.contains("Proxy-Authorization"), "{seen}");
    for (bad, code) in [
        (format!("POST {origin}/ok HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), "501"),
        (format!("POST {origin}/ok HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"), "400"),
        ("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n".to_owned(), "400"),
        (format!("GET https://127.0.0.1:{}/ok HTTP/1.1\r\n\r\n", a.port), "400"),
        ("\u{1}\u{2}garbage\r\n\r\n".to_owned(), "400"),
    ] {
        let answer = exchange(port, bad.as_bytes()).await;
        assert!(answer.starts_with(&format!("HTTP/1.1 {code} ")), "{bad:?}: {answer}");
    }
}

#[tokio::test]
async fn a_huge_head_too_many_connections_and_a_hostile_answer_are_bounded() {
    // An answer that never ends its head and sends 1 MiB of garbage.
    static HOSTILE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    let hostile: &'static [u8] = HOSTILE.get_or_init(|| {
        let mut v = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        v.extend(std::iter::repeat_n(b'\xff', 1 << 20));
        v
    });
    let evil = Upstream::start(hostile).await;
    let limits = EgressLimits { max_head: 4096, max_connections: 3, ..Default::default() };
    let (proxy, port, _) =
        proxy(&format!("{{ allow = [\"http://127.0.0.1:{0}\", \"https://127.0.0.1:{0}\"] }}", evil.port), limits).await;
    let huge = format!("GET http://127.0.0.1:{}/ HTTP/1.1\r\nX: {}\r\n\r\n", evil.port, "a".repeat(8192));
    let answer = exchange(port, huge.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 431 "), "{}", &answer[..answer.len().min(200)]);
    let many = (0..70).map(|i| format!("X-{i}: y\r\n")).collect::<String>();
    let answer = exchange(port, format!("GET http://127.0.0.1:{}/ HTTP/1.1\r\n{many}\r\n", evil.port).as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 431 "), "{answer}");
    // The hostile answer passes through to the process unchanged; the proxy keeps serving.
    let answer = exchange_bytes(port, format!("GET http://127.0.0.1:{}/ HTTP/1.1\r\n\r\n", evil.port).as_bytes()).await;
    assert!(answer == hostile, "{} bytes of {} came through", answer.len(), hostile.len());
    // Three idle connections hold every slot; the fourth is told so.
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(TcpStream::connect(("127.0.0.1", port)).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let refused = exchange(port, b"CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n").await;
    assert!(refused.starts_with("HTTP/1.1 503 ") && refused.contains("more than 3 connections"), "{refused}");
    drop(held);
    // Dropped, the proxy is gone: nothing listens any more.
    drop(proxy);
    let mut gone = false;
    for _ in 0..100 {
        tokio::task::yield_now().await;
        if TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone, "the proxy still listens after it was dropped");
}
