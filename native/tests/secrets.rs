//! Brokered secrets (issue 38): an MCP server (the official Python SDK's server side) under
//! `jp tool call`, its `access.secrets` binding GITHUB_TOKEN to an HTTPS test server on
//! 127.0.0.1 (its own certificate authority, which jp's upstream verifier trusts through
//! `SSL_CERT_FILE` in jp's environment). The test server receives the real token; the process
//! holds a placeholder and never the value — not in its environment, not in its memory (it
//! dumps both), not in what comes back (the server echoes the header); the placeholder sent to
//! another host arrives as it is (traced); a path rule on the bound host holds; a process that
//! trusts only its own roots cannot connect; `--trace` never shows the value.

#![cfg(target_os = "linux")]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod support;
use support::approve_config;
use support::mcp::{site_packages, venv};

const JP: &str = env!("CARGO_BIN_EXE_jp");
const SECRET: &str = "ghp_the-real-secret-0123456789abcdef";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// What a test server saw: the request line and the `Authorization` header of each request.
type Seen = Arc<Mutex<Vec<(String, String)>>>;

/// A server on 127.0.0.1 answering every request with `seen <its Authorization header>`, over
/// TLS when given a configuration; stopped when dropped.
struct Echo {
    port: u16,
    seen: Seen,
    stop: Arc<AtomicBool>,
}

impl Echo {
    fn start(tls: Option<Arc<rustls::ServerConfig>>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let (seen, stop): (Seen, _) = (Arc::default(), Arc::new(AtomicBool::new(false)));
        let (s, st) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            while !st.load(Ordering::SeqCst) {
                let Ok((tcp, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                tcp.set_nonblocking(false).unwrap();
                tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let (s, tls) = (s.clone(), tls.clone());
                std::thread::spawn(move || match tls {
                    Some(config) => {
                        let conn = rustls::ServerConnection::new(config).unwrap();
                        let mut stream = rustls::StreamOwned::new(conn, tcp);
                        answer(&mut stream, &s);
                        stream.conn.send_close_notify();
                        let _ = stream.flush();
                    }
                    None => answer(&mut { tcp }, &s),
                });
            }
        });
        Self { port, seen, stop }
    }

    fn seen(&self) -> Vec<(String, String)> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn answer(stream: &mut (impl Read + Write), seen: &Seen) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let line = text.lines().next().unwrap_or_default().to_owned();
    let auth = text
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("authorization")).map(|(_, v)| v.trim()))
        .unwrap_or_default()
        .to_owned();
    seen.lock().unwrap().push((line, auth.clone()));
    let body = format!("seen {auth}");
    let _ = write!(stream, "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
}

/// A certificate authority of the test's and a server configuration for 127.0.0.1 signed by it;
/// the authority's certificate is written to `ca_file` (jp's `SSL_CERT_FILE`).
fn test_tls(ca_file: &Path) -> Arc<rustls::ServerConfig> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::default();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name.push(rcgen::DnType::CommonName, "secrets test CA");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    std::fs::write(ca_file, ca_cert.pem()).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap().signed_by(&key, &issuer).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    Arc::new(
        rustls::ServerConfig::builder().with_no_client_auth().with_single_cert(vec![cert.der().clone()], key).unwrap(),
    )
}

struct World {
    /// HTTPS, the origin GITHUB_TOKEN is bound to.
    bound: Echo,
    /// Plain HTTP, allowed, not bound.
    plain: Echo,
    /// HTTPS, allowed, not bound (a tunnel).
    other: Echo,
    ca_file: tempfile::NamedTempFile,
    ws: tempfile::TempDir,
}

impl World {
    fn start() -> Self {
        let ca_file = tempfile::NamedTempFile::new().unwrap();
        let tls = test_tls(ca_file.path());
        let (bound, plain, other) = (Echo::start(Some(tls.clone())), Echo::start(None), Echo::start(Some(tls)));
        let dir = repo().join("tests/secrets");
        let config = format!(
            "[mcp.servers.sec]\ncommand = \"/usr/bin/python3\"\nargs = [{:?}]\nenv = [\"PYTHONPATH\"]\nread_paths = [{dir:?}, {:?}, \"/proc\"]\n\
             tools = [\"call\", \"call_unverified\", \"call_pinned\", \"dump\"]\n[mcp.servers.sec.access]\n\
             filesystem = [{{ path = \".\", allow = [\"read\", \"write\"] }}]\n\
             network = {{ allow = [\"https://127.0.0.1:{b}/allowed\", \"http://127.0.0.1:{p}\", \"https://127.0.0.1:{o}\"] }}\n\
             secrets = {{ GITHUB_TOKEN = [\"https://127.0.0.1:{b}\"] }}\n",
            dir.join("secret_server.py"),
            venv(),
            b = bound.port,
            p = plain.port,
            o = other.port,
        );
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
        std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
        approve_config(ws.path());
        Self { bound, plain, other, ca_file, ws }
    }

    /// (`/proc` is readable so that the server can read its own memory, `/proc/self/mem`.)
    /// `jp tool call sec.TOOL ARGS… --trace` with GITHUB_TOKEN in jp's environment: exit code,
    /// stdout, stderr.
    fn call(&self, tool: &str, args: &[String]) -> (i32, String, String) {
        let mut argv = vec!["tool".to_owned(), "call".to_owned(), format!("sec.{tool}"), "--trace".to_owned()];
        argv.extend(args.iter().cloned());
        let out = Command::new(JP)
            .args(&argv)
            .current_dir(self.ws.path())
            .env("GITHUB_TOKEN", SECRET)
            .env("SSL_CERT_FILE", self.ca_file.path())
            .env("PYTHONPATH", site_packages(&venv()))
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .output()
            .unwrap();
        let (stdout, stderr) =
            (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
        assert!(!stderr.contains(SECRET) && !stdout.contains(SECRET), "jp showed the secret:\n{stdout}\n{stderr}");
        (out.status.code().unwrap_or(-1), stdout, stderr)
    }

    fn url(&self, server: &Echo, scheme: &str, path: &str) -> String {
        format!("url={scheme}://127.0.0.1:{}{path}", server.port)
    }
}

#[test]
fn the_bound_origin_gets_the_token_and_the_process_only_a_placeholder() {
    let w = World::start();
    let (code, out, err) = w.call("call", &[w.url(&w.bound, "https", "/allowed/user")]);
    assert_eq!(code, 0, "{out}\n{err}");
    let seen = w.bound.seen();
    assert_eq!(seen.len(), 1, "{seen:?}\n{out}\n{err}");
    assert_eq!(seen[0], ("GET /allowed/user HTTP/1.1".to_owned(), format!("Bearer {SECRET}")));
    // The server echoed the header: what came back to the process has it masked.
    let masked = "*".repeat(SECRET.len());
    assert!(out.contains(&format!("200 seen Bearer {masked}")), "{out}\n{err}");
    assert!(err.lines().any(|l| l.contains("net.http") && l.contains("/allowed/user") && l.contains("allow")), "{err}");

    // The process's environment and memory, after a request: the placeholder, never the value.
    let (code, out, err) = w.call("dump", &[w.url(&w.bound, "https", "/allowed/dump"), "path=dump.txt".into()]);
    assert_eq!(code, 0, "{out}\n{err}");
    let dump = std::fs::read_to_string(w.ws.path().join("dump.txt")).unwrap();
    let placeholder = dump
        .lines()
        .find_map(|l| l.strip_prefix("GITHUB_TOKEN="))
        .unwrap_or_else(|| panic!("no GITHUB_TOKEN in the process's environment:\n{}", &dump[..dump.len().min(2000)]));
    assert!(placeholder.starts_with("jp-placeholder-"), "{placeholder}");
    let strings = dump.lines().filter(|l| l.contains(placeholder)).count();
    let unreadable: Vec<&str> = dump.lines().filter(|l| l.starts_with("memory unreadable")).collect();
    assert!(
        strings >= 2,
        "the memory scan did not find even the placeholder ({strings}; {unreadable:?}; {out}); it proves nothing"
    );
    assert!(!dump.contains(SECRET) && !dump.contains("the-real-secret"), "the secret is in the process");
    let scanned: usize = out
        .split(" strings of memory written")
        .next()
        .and_then(|s| s.split_whitespace().last())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(scanned > 10_000, "the process read too little of its memory to prove anything: {out}");
    assert_eq!(w.bound.seen().last().unwrap().1, format!("Bearer {SECRET}"));
}

#[test]
fn the_placeholder_sent_elsewhere_stays_a_placeholder() {
    let w = World::start();
    // Plain HTTP through the proxy: jp sees the request, leaves the placeholder and traces it.
    let (code, out, err) = w.call("call", &[w.url(&w.plain, "http", "/p")]);
    assert_eq!(code, 0, "{out}\n{err}");
    let seen = w.plain.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].1.starts_with("Bearer jp-placeholder-"), "{seen:?}");
    assert!(
        err.lines().any(|l| l.contains("net.placeholder") && l.contains("GITHUB_TOKEN") && l.contains("/p")),
        "{err}"
    );
    // HTTPS to an origin no secret is bound to: an opaque tunnel, the placeholder as it was.
    let (code, out, err) = w.call("call_unverified", &[w.url(&w.other, "https", "/o")]);
    assert_eq!(code, 0, "{out}\n{err}");
    let seen = w.other.seen();
    assert_eq!(seen.len(), 1, "{seen:?}\n{out}\n{err}");
    assert!(seen[0].1.starts_with("Bearer jp-placeholder-"), "{seen:?}");
    assert!(w.bound.seen().is_empty());
}

#[test]
fn a_path_rule_on_the_bound_origin_holds_and_a_pinning_client_cannot_connect() {
    let w = World::start();
    let (code, out, err) = w.call("call", &[w.url(&w.bound, "https", "/admin")]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("403") && out.contains("Access denied"), "{out}\n{err}");
    assert!(err.lines().any(|l| l.contains("net.http") && l.contains("/admin") && l.contains("deny")), "{err}");
    // The path sent is the path decided: dot segments resolved before the decision and sent so.
    let (code, out, err) = w.call("call", &[w.url(&w.bound, "https", "/admin/%2e%2e/allowed/dots")]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("200 seen Bearer"), "{out}\n{err}");
    assert_eq!(w.bound.seen().iter().map(|(l, _)| l.as_str()).collect::<Vec<_>>(), ["GET /allowed/dots HTTP/1.1"]);
    // A client that trusts only the system's roots does not trust the process's authority.
    let (code, out, err) = w.call("call_pinned", &[w.url(&w.bound, "https", "/allowed/pinned")]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("error") && out.contains("CERTIFICATE_VERIFY_FAILED"), "{out}\n{err}");
    assert_eq!(w.bound.seen().len(), 1, "a refused or failed request reached the server: {:?}", w.bound.seen());
}

#[test]
fn a_bound_secret_missing_from_jps_environment_stops_the_server_with_the_fix() {
    let w = World::start();
    let out = Command::new(JP)
        .args(["tool", "call", "sec.call", "url=https://127.0.0.1:1/allowed"])
        .current_dir(w.ws.path())
        .env_remove("GITHUB_TOKEN")
        .env("PYTHONPATH", site_packages(&venv()))
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("GITHUB_TOKEN is not set in jp's environment; export it before starting jp"), "{text}");
}
