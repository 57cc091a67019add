//! The example component of issue 34 (`tools/guests/fetch`) under the real `jp tool call`, against
//! HTTP servers on 127.0.0.1 that the tests start and stop: the host substitutes `${API_TOKEN}`
//! into the request and scrubs it from what the component reads back, a URL the tool's rules do
//! not allow is refused before anything is sent, and `.env` is read only when the user says yes.

#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use jp_native::runtime::wasm::GUESTS_DIR;

mod support;
use support::approve_config;
use support::cli::{code, jp_on_a_terminal, stderr, stdout};

const JP: &str = env!("CARGO_BIN_EXE_jp");
const SECRET: &str = "s3cr3t-value";
const ENV_FILE: &str = "TOKEN=hunter2\n";

/// One request a [`Server`] received: its target and its headers (names lower case).
#[derive(Debug, Clone)]
struct Received {
    target: String,
    headers: Vec<(String, String)>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// An HTTP/1.1 server on a loopback address, one request per connection: it records each
/// request's head and answers 200 with the `Authorization` header it got, as
/// `authorization: VALUE`. Stopped (and its thread joined) when dropped.
struct Server {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    fn start(bind: &str) -> Self {
        let listener = TcpListener::bind(bind).unwrap_or_else(|e| panic!("bind {bind}: {e}"));
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let (received, stop) = (received.clone(), stop.clone());
            move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    if let Ok(stream) = stream {
                        serve(stream, &received);
                    }
                }
            }
        });
        Self { addr, received, stop, thread: Some(thread) }
    }

    fn port(&self) -> u16 {
        self.addr.port()
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// A request of the test's own, straight to the server: proof that it listens and records
    /// (so that an empty record means nothing was sent to it).
    fn probe(&self) {
        let mut s = TcpStream::connect(self.addr).unwrap();
        write!(s, "GET /probe HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", self.addr).unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Read one request head, record it (before answering: once the client has the answer, the
/// record is there), answer it.
fn serve(stream: TcpStream, received: &Mutex<Vec<Received>>) {
    let mut reader = BufReader::new(&stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() || request_line.is_empty() {
        return;
    }
    let target = request_line.split_whitespace().nth(1).unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let request = Received { target, headers };
    let body = format!("authorization: {}\n", request.header("authorization").unwrap_or("(none)"));
    received.lock().unwrap().push(request);
    let mut stream = &stream;
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.shutdown(Shutdown::Write);
}

/// A workspace with the component as tools `api_get` and `read_env`, both allowed to read the
/// workspace and to reach `http://127.0.0.1:PORT/allowed` with `${API_TOKEN}`, and a `.env`;
/// its configuration approved.
fn workspace(port: u16) -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let w = ws.path();
    std::fs::create_dir_all(w.join(".jp/tools")).unwrap();
    std::fs::copy(Path::new(GUESTS_DIR).join("jp_tool_fetch.wasm"), w.join(".jp/tools/fetch.wasm")).unwrap();
    std::fs::write(w.join(".env"), ENV_FILE).unwrap();
    std::fs::write(w.join(".jp/config.toml"), config(port)).unwrap();
    approve_config(w);
    ws
}

fn config(port: u16) -> String {
    let mut config = String::new();
    for tool in ["api_get", "read_env"] {
        config.push_str(&format!(
            r#"[conversation.tools.{tool}]
source = "local"
wasm = ".jp/tools/fetch.wasm"
[conversation.tools.{tool}.access]
filesystem = [{{ path = ".", allow = ["read"] }}]
network = {{ allow = ["http://127.0.0.1:{port}/allowed"], envs = ["API_TOKEN"] }}

"#
        ));
    }
    config
}

/// `jp tool call api_get url=URL --no-interaction`, with `API_TOKEN` set in jp's environment.
fn api_get(ws: &Path, url: &str) -> Output {
    Command::new(JP)
        .arg("--workspace")
        .arg(ws)
        .args(["tool", "call", "api_get", &format!("url={url}"), "--no-interaction"])
        .env("API_TOKEN", SECRET)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn the_host_sends_the_token_the_component_only_names_and_scrubs_it_from_the_answer() {
    let server = Server::start("127.0.0.1:0");
    let ws = workspace(server.port());
    let url = format!("http://127.0.0.1:{}/allowed/items", server.port());

    let o = api_get(ws.path(), &url);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let got = server.received();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].target, "/allowed/items");
    assert_eq!(got[0].header("authorization"), Some("Bearer s3cr3t-value"), "{got:?}");
    // The server echoed the token; the component read it back scrubbed.
    assert_eq!(stdout(&o), "status 200\nauthorization: Bearer [REDACTED]\n");
    assert!(!stderr(&o).contains(SECRET), "{}", stderr(&o));
}

#[test]
fn another_path_of_the_allowed_origin_is_refused_and_nothing_is_sent() {
    let server = Server::start("127.0.0.1:0");
    let ws = workspace(server.port());
    let url = format!("http://127.0.0.1:{}/other", server.port());

    let o = api_get(ws.path(), &url);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let err = stderr(&o);
    assert!(err.contains("tool 'api_get' failed: http.get failed (host error -32001): "), "{err}");
    assert!(err.contains(&format!("Access denied: no network rule allows GET {url}")), "{err}");
    // The hint is this path on that origin (the origin itself is already allowed, for a path).
    assert!(err.contains("allows only paths under \"/allowed\" on that origin"), "{err}");
    assert!(err.contains(&format!("(e.g. \"{url}\")")), "{err}");
    assert_eq!(stdout(&o), "");
    assert!(server.received().is_empty(), "{:?}", server.received());
    server.probe();
    assert_eq!(server.received().len(), 1);
}

#[test]
fn another_host_or_port_is_refused_and_nothing_is_sent() {
    let server = Server::start("127.0.0.1:0");
    let ws = workspace(server.port());
    // The same port on another loopback address, and another port on the same address: each a
    // live server the request would reach if it were sent.
    let other_host = Server::start(&format!("127.0.0.2:{}", server.port()));
    let other_port = Server::start("127.0.0.1:0");

    for target in [&other_host, &other_port] {
        let url = format!("http://{}/allowed", target.addr);
        let o = api_get(ws.path(), &url);
        assert_eq!(code(&o), 1, "{url}: {}", stdout(&o));
        let err = stderr(&o);
        assert!(err.contains("(host error -32001): "), "{err}");
        assert!(err.contains(&format!("Access denied: no network rule allows GET {url}")), "{err}");
        assert!(target.received().is_empty(), "{url}: {:?}", target.received());
        target.probe();
        assert_eq!(target.received().len(), 1);
    }
    assert!(server.received().is_empty(), "{:?}", server.received());
}

#[test]
fn reading_env_asks_and_is_denied_without_anyone_to_ask() {
    // No request goes out: any port will do.
    let ws = workspace(1);
    let o = Command::new(JP)
        .arg("--workspace")
        .arg(ws.path())
        .args(["tool", "call", "read_env", "--no-interaction"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "tool 'read_env' failed: filesystem.read .env failed (host error -32001): Access denied: read '.env' touches a sensitive path; confirm to allow; no one can be asked in non-interactive mode"
        ),
        "{err}"
    );
    assert!(!err.contains("hunter2") && !stdout(&o).contains("hunter2"), "{err}");
}

#[test]
fn reading_env_on_a_terminal_asks_and_obeys_the_answer() {
    // No request goes out: any port will do.
    let ws = workspace(1);

    let yes = jp_on_a_terminal(ws.path(), "tool call read_env", "y\n");
    let out = stdout(&yes);
    assert!(out.contains("tool 'read_env' wants fs.read .env"), "{out}");
    assert!(out.contains("read '.env' touches a sensitive path; confirm to allow"), "{out}");
    assert!(out.contains("TOKEN=hunter2"), "{out}");
    assert_eq!(code(&yes), 0, "{out}");

    let no = jp_on_a_terminal(ws.path(), "tool call read_env", "n\n");
    let out = stdout(&no);
    assert!(out.contains("tool 'read_env' wants fs.read .env"), "{out}");
    assert!(out.contains("filesystem.read .env failed (host error -32001)"), "{out}");
    assert!(out.contains("the user denied it at the prompt") && !out.contains("hunter2"), "{out}");
    assert_eq!(code(&no), 1, "{out}");
}
