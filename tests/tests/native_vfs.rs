//! The VFS runtime end to end: real tool subprocesses under real Landlock and seccomp, real files
//! in temporary directories, the core dispatcher in between.

#![cfg(all(not(target_arch = "wasm32"), target_os = "linux"))]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use jp_core::cancel::CancellationToken;
use jp_core::runtime::{Config, ExecutionOutcome, RuntimeError, ToolCall, ToolConfig};
use jp_native::files::FsProjectFiles;
use jp_native::runtime::vfs::{VfsOptions, VfsRuntime};
use serde_json::{Map, Value, json};

const TOOL: &str = env!("CARGO_BIN_EXE_jp-test-tools");

fn runtime(ws: &Path) -> VfsRuntime {
    VfsRuntime::new(Arc::new(FsProjectFiles::open(ws).unwrap()), ws)
}

fn config(command: &str, extra: &str) -> ToolConfig {
    let text = format!("[conversation.tools.t]\nsource = \"local\"\nruntime = \"vfs\"\ncommand = {command:?}\n{extra}");
    Config::from_toml(&text, "test.toml").unwrap().conversation.tools.remove("t").unwrap()
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall {
        name: name.into(),
        id: "call-1".into(),
        arguments: args.as_object().cloned().unwrap_or_default(),
        answers: Map::new(),
        cancel: CancellationToken::new(),
        inquirer: None,
        policy: None,
    }
}

fn text(outcome: &ExecutionOutcome) -> String {
    match outcome {
        ExecutionOutcome::Completed { result: Ok(r), .. } => r.to_text(),
        other => panic!("expected success, got {other:?}"),
    }
}

fn tool_error(outcome: &ExecutionOutcome) -> String {
    match outcome {
        ExecutionOutcome::Completed { result: Err(e), .. } => e.message.clone(),
        other => panic!("expected a tool error, got {other:?}"),
    }
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "fn main() {\n    println!(\"hello\");\n}\n").unwrap();
    std::fs::write(dir.path().join("README.md"), "# demo\n").unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn first_party_read_tool_runs_sandboxed() {
    let ws = workspace();
    let out = runtime(ws.path())
        .run(call("fs_read_file", json!({"path": "src/main.rs"})), &config(TOOL, ""), None)
        .await
        .unwrap();
    assert_eq!(text(&out), "fn main() {\n    println!(\"hello\");\n}\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sandboxed_tool_cannot_reach_around_the_protocol() {
    let ws = workspace();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("id_rsa"), "PRIVATE KEY").unwrap();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let abstract_name = format!("jp-test-{}", std::process::id());
    let abstract_listener = {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        std::os::unix::net::UnixListener::bind_addr(&addr).unwrap()
    };
    let sock_dir = tempfile::tempdir().unwrap();
    let unix_path = sock_dir.path().join("host.sock");
    let _unix_listener = std::os::unix::net::UnixListener::bind(&unix_path).unwrap();
    tcp.set_nonblocking(true).unwrap();
    abstract_listener.set_nonblocking(true).unwrap();

    let args = json!({
        "project_file": ws.path().join("README.md"),
        "project_dir": ws.path(),
        "home_file": home.path().join("id_rsa"),
        "tcp_addr": tcp.local_addr().unwrap().to_string(),
        "udp_addr": udp.local_addr().unwrap().to_string(),
        "abstract_name": abstract_name,
        "unix_path": unix_path,
    });
    let env = [("SECRET_TOKEN".to_owned(), "s3cr3t-value".to_owned()), ("PATH".to_owned(), "/usr/bin:/bin".to_owned())];
    let rt = runtime(ws.path()).env(env.into_iter().collect());
    let out = rt.run(call("escape", args), &config(TOOL, ""), None).await.unwrap();
    let report: Value = serde_json::from_str(&text(&out)).unwrap();
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
    for (attempt, result) in report.as_object().unwrap() {
        let result = result.as_str().unwrap();
        assert!(result.starts_with("denied"), "{attempt} was not stopped: {result}");
    }
    // Nothing arrived at the listeners either.
    assert!(tcp.accept().is_err(), "a TCP connection reached the host");
    assert!(abstract_listener.accept().is_err(), "an abstract socket connection reached the host");
    let mut buf = [0u8; 8];
    assert!(udp.recv_from(&mut buf).is_err(), "a UDP datagram reached the host");
    assert_eq!(std::fs::read_to_string(ws.path().join("README.md")).unwrap(), "# demo\n");
}

/// A tiny HTTP/1.1 server on 127.0.0.1 for the duration of a test: `/echo` answers with the
/// request head, `/redirect-out` redirects to another port, anything else 200 "hello".
async fn http_server() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let mut got = 0;
                loop {
                    let Ok(n) = sock.read(&mut buf[got..]).await else { return };
                    if n == 0 {
                        return;
                    }
                    got += n;
                    if buf[..got].windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
                let head = String::from_utf8_lossy(&buf[..got]).into_owned();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let (status, extra, body) = match path.as_str() {
                    "/echo" => ("200 OK", String::new(), head.clone()),
                    "/redirect-out" => {
                        ("302 Found", "Location: http://127.0.0.1:9/elsewhere\r\n".to_owned(), String::new())
                    }
                    _ => ("200 OK", String::new(), "hello".to_owned()),
                };
                let resp = format!(
                    "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    (addr, task)
}

#[tokio::test(flavor = "multi_thread")]
async fn every_method_and_error_code_through_a_real_subprocess() {
    use jp_native::http::ReqwestHttpClient;
    use jp_native::process::TokioProcessRunner;
    let ws = workspace();
    std::fs::write(ws.path().join(".env"), "TOKEN=1").unwrap();
    let (addr, server) = http_server().await;
    let png = "iVBORw0KGgoAAAAN";
    let requests = json!([
        {"method": "fs.write", "params": {"path": "out/new.txt", "content": "new text\n"}},
        {"method": "fs.write", "params": {"path": "img/logo.png", "content": png, "encoding": "base64"}},
        {"method": "fs.read", "params": {"path": "out/new.txt"}},
        {"method": "fs.read", "params": {"path": "img/logo.png"}},
        {"method": "fs.exists", "params": {"path": "src/main.rs"}},
        {"method": "fs.list_dir", "params": {"path": "."}},
        {"method": "fs.metadata", "params": {"path": "README.md"}},
        {"method": "fs.rename", "params": {"from": "out/new.txt", "to": "out/renamed.txt"}},
        {"method": "fs.delete", "params": {"path": "out/renamed.txt"}},
        {"method": "fs.grep", "params": {"pattern": "println", "paths": ["src"], "context": 1}},
        {"method": "http.get", "params": {"url": format!("http://{addr}/hello")}},
        {"method": "http.post", "params": {"url": format!("http://{addr}/echo"), "headers": [{"name": "X-Token", "value": "${API_TOKEN}"}], "body": "payload"}},
        {"method": "process.run", "params": {"program": "echo", "args": ["from", "the", "host"]}},
        {"method": "fs.chmod", "params": {"path": "README.md"}},
        {"method": "fs.read", "params": {}},
        {"method": "fs.read", "params": {"path": ".env"}},
        {"method": "fs.read", "params": {"path": "missing.txt"}},
        {"method": "fs.rename", "params": {"from": "README.md", "to": "src/main.rs"}},
        {"method": "process.run", "params": {"program": "sleep", "args": ["5"]}},
        {"method": "http.get", "params": {"url": format!("http://{addr}/redirect-out")}},
        {"method": "process.run", "params": {"program": "rm", "args": ["-rf", "."]}},
        {"method": "http.get", "params": {"url": format!("http://{addr}/echo"), "headers": [{"name": "X", "value": "${HOME_SECRET}"}]}},
    ]);
    let policy = format!(
        "[conversation.tools.t.sandbox]\nfilesystem = {{ allow = [\".\"], writable = true }}\nnetwork = {{ allow = [\"http://{addr}\"], envs = [\"API_TOKEN\"] }}\ncommands.echo = {{}}\ncommands.sleep = {{}}\n"
    );
    let env = [("API_TOKEN", "tok-123456"), ("HOME_SECRET", "do-not-send"), ("PATH", "/usr/bin:/bin")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let rt = runtime(ws.path())
        .env(env)
        .http(Arc::new(ReqwestHttpClient::new(Duration::from_secs(5)).unwrap()))
        .process(Arc::new(TokioProcessRunner::new(Duration::from_secs(1))));
    let out = rt.run(call("script", json!({ "requests": requests })), &config(TOOL, &policy), None).await.unwrap();
    let r: Vec<Value> = serde_json::from_str(&text(&out)).unwrap();
    server.abort();
    let ok = |i: usize| r[i].get("result").unwrap_or_else(|| panic!("request {i} failed: {}", r[i])).clone();
    let code = |i: usize| r[i]["error"]["code"].as_i64().unwrap_or_else(|| panic!("request {i} succeeded: {}", r[i]));
    assert_eq!(ok(0), json!({}));
    assert_eq!(ok(1), json!({}));
    assert_eq!(std::fs::read(ws.path().join("img/logo.png")).unwrap()[..4], [0x89, b'P', b'N', b'G']);
    assert_eq!(ok(2), json!({"content": "new text\n", "size": 9}));
    assert_eq!(ok(3), json!({"content": png, "encoding": "base64", "size": 12}));
    assert_eq!(ok(4), json!({"exists": true}));
    let listing = ok(5);
    let names: Vec<&str> = listing["entries"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(names, [".env", "README.md", "img", "out", "src"]);
    assert_eq!(ok(6), json!({"kind": "file", "size": 7}));
    assert_eq!(ok(7), json!({}));
    assert_eq!(ok(8), json!({}));
    assert!(!ws.path().join("out/renamed.txt").exists());
    assert_eq!(
        ok(9)["matches"][0]["lines"][1],
        json!({"line_number": 2, "content": "    println!(\"hello\");", "is_match": true})
    );
    assert_eq!((ok(10)["status"].clone(), ok(10)["body"].clone()), (json!(200), json!("hello")));
    let echoed = ok(11)["body"].as_str().unwrap().to_owned();
    assert!(echoed.starts_with("POST /echo"), "{echoed}");
    assert!(echoed.contains("x-token: [REDACTED]"), "the host substituted and then scrubbed the token: {echoed}");
    assert_eq!(ok(12)["stdout"], json!("from the host\n"));
    assert_eq!(code(13), -32601);
    assert_eq!(code(14), -32602);
    assert_eq!(code(15), -32001);
    assert_eq!(code(16), -32002);
    assert_eq!(code(17), -32003);
    assert_eq!(code(18), -32004, "{}", r[18]);
    assert_eq!(code(19), -32001, "the redirect off the allowed origin is refused: {}", r[19]);
    assert_eq!(code(20), -32001, "a program the policy does not allow: {}", r[20]);
    assert_eq!(code(21), -32001, "a ${{VAR}} not in network.envs: {}", r[21]);
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_lines_get_invalid_request_and_the_stream_stays_in_sync() {
    let ws = workspace();
    let out = runtime(ws.path())
        .run(call("t", json!({})), &config(&format!("{TOOL} raw malformed"), ""), None)
        .await
        .unwrap();
    let r: Vec<Value> = serde_json::from_str(&text(&out)).unwrap();
    assert_eq!(r[0]["error"]["code"], json!(-32600));
    assert_eq!(r[1], json!({"jsonrpc": "2.0", "id": 7, "result": {"exists": true}}));
}

/// An inquirer that never answers: the request stays pending until the tool gives up.
struct NeverAnswers;

impl jp_core::host::Inquirer for NeverAnswers {
    fn ask<'a>(&'a self, _: &'a jp_core::host::Inquiry) -> jp_core::BoxFuture<'a, jp_core::host::InquiryAnswer> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_held_request_sends_pending_and_can_be_abandoned_with_cancelled() {
    let ws = workspace();
    std::fs::write(ws.path().join(".env"), "TOKEN=1").unwrap();
    let rt = runtime(ws.path()).inquirer(Arc::new(NeverAnswers));
    let out = rt.run(call("t", json!({})), &config(&format!("{TOOL} raw abandon"), ""), None).await.unwrap();
    let r: Vec<Value> = serde_json::from_str(&text(&out)).unwrap();
    assert_eq!(r[0]["method"], json!("pending"));
    assert_eq!(r[0]["params"]["request_id"], json!(1));
    assert!(r[0]["params"]["reason"].as_str().unwrap().contains("sensitive path"), "{}", r[0]);
    assert_eq!(r[1]["error"]["code"], json!(-32005), "{}", r[1]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_result_is_reported_as_malformed_not_as_missing() {
    let ws = workspace();
    let (out, _) = raw(ws.path(), "malformed-result", "", fast()).await;
    let message = tool_error(&out.unwrap());
    assert!(message.contains("sent a malformed result notification"), "{message}");
    assert!(message.contains("content must be a string or a list of content blocks"), "{message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stale_cancel_does_not_cancel_the_next_request() {
    let ws = workspace();
    let (out, _) = raw(ws.path(), "stale-cancel", "", fast()).await;
    let r: Vec<Value> = serde_json::from_str(&text(&out.unwrap())).unwrap();
    assert_eq!(r[0]["result"]["content"], json!("# demo\n"), "{}", r[0]);
    assert_eq!(r[1]["result"], json!({"exists": true}), "{}", r[1]);
}

/// Live (non-zombie) processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains(marker) {
            continue;
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next().unwrap_or('?')).unwrap_or('?');
        if state != 'Z' && state != 'X' && state != '?' {
            found.push(format!("{pid} ({state})"));
        }
    }
    found
}

fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, r)| r.chars().next().unwrap_or('Z')))
        .is_some_and(|state| state != 'Z' && state != 'X')
}

fn marker(name: &str) -> String {
    format!("jp-marker-{name}-{}", std::process::id())
}

fn fast() -> VfsOptions {
    VfsOptions {
        request_timeout: Duration::from_secs(1),
        cancel_grace: Duration::from_millis(500),
        ..VfsOptions::default()
    }
}

async fn raw(
    ws: &Path,
    behaviour: &str,
    extra: &str,
    opts: VfsOptions,
) -> (Result<ExecutionOutcome, RuntimeError>, String) {
    let m = marker(behaviour);
    let cfg = config(&format!("{TOOL} raw {behaviour} {m}"), extra);
    let out =
        tokio::time::timeout(Duration::from_secs(60), runtime(ws).options(opts).run(call("t", json!({})), &cfg, None))
            .await
            .unwrap_or_else(|_| panic!("{behaviour}: the host hung"));
    (out, m)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hanging_tool_is_killed_at_the_request_timeout() {
    let ws = workspace();
    let (out, m) = raw(ws.path(), "hang", "", fast()).await;
    assert!(matches!(out, Err(RuntimeError::Timeout { seconds: 1, .. })), "{out:?}");
    assert!(processes_with(&m).is_empty(), "left behind: {:?}", processes_with(&m));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_mid_request_is_an_error_with_the_stderr_tail() {
    let ws = workspace();
    let (out, m) = raw(ws.path(), "crash", "", fast()).await;
    let message = tool_error(&out.unwrap());
    assert!(message.contains("killed by a signal") && message.contains("about to crash"), "{message}");
    assert!(processes_with(&m).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_exit_without_a_result_carries_status_and_stderr() {
    let ws = workspace();
    let (out, _) = raw(ws.path(), "exit-silently", "", fast()).await;
    let message = tool_error(&out.unwrap());
    assert!(message.contains("exited with status 3 without sending a result"), "{message}");
    assert!(message.contains("could not parse the configuration (line 3)"), "{message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_flooding_stdout_without_newlines_is_stopped() {
    let ws = workspace();
    let (out, m) = raw(ws.path(), "flood", "", fast()).await;
    assert!(matches!(out, Err(RuntimeError::Timeout { .. })), "{out:?}");
    assert!(processes_with(&m).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_flooding_malformed_lines_is_stopped() {
    let ws = workspace();
    let (out, m) = raw(ws.path(), "flood-lines", "", fast()).await;
    let Err(RuntimeError::Protocol { message, .. }) = out else { panic!("{out:?}") };
    assert!(message.contains("100 malformed messages"), "{message}");
    assert!(processes_with(&m).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_that_never_reads_stdin_still_finishes() {
    let ws = workspace();
    let (out, _) = raw(ws.path(), "no-stdin", "", fast()).await;
    assert_eq!(text(&out.unwrap()), "finished without reading stdin");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_that_sends_requests_but_never_reads_answers_is_stopped() {
    let ws = workspace();
    std::fs::write(ws.path().join("big.txt"), "z".repeat(1 << 20)).unwrap();
    let (out, m) = raw(ws.path(), "spam-requests", "", fast()).await;
    match out {
        Err(RuntimeError::Protocol { message, .. }) => {
            assert!(message.contains("stopped reading its stdin"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert!(processes_with(&m).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_reader_with_large_messages_does_not_deadlock() {
    let ws = workspace();
    let writable = "[conversation.tools.t.sandbox]\nfilesystem = { allow = [\".\"], writable = true }\n";
    let (out, _) = raw(ws.path(), "slow-reader", writable, VfsOptions::default()).await;
    let t = text(&out.unwrap());
    assert!(t.starts_with("responses of "), "{t}");
    let sizes: Vec<usize> = t
        .trim_start_matches("responses of ")
        .split(" and ")
        .map(|n| n.trim_end_matches(" bytes").parse().unwrap())
        .collect();
    assert!(sizes[0] < 100 && sizes[1] > 8 * 1024 * 1024, "{sizes:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn ten_mebibyte_messages_both_ways() {
    let ws = workspace();
    let writable = "[conversation.tools.t.sandbox]\nfilesystem = { allow = [\".\"], writable = true }\n";
    let out = runtime(ws.path())
        .run(call("big", json!({"bytes": 10 * 1024 * 1024})), &config(TOOL, writable), None)
        .await
        .unwrap();
    assert_eq!(text(&out), "round trip of 10485760 bytes ok");
    // One byte over the cap is refused with a clear error, and nothing is written.
    let out = runtime(ws.path())
        .run(call("big", json!({"bytes": 10 * 1024 * 1024 + 1})), &config(TOOL, writable), None)
        .await
        .unwrap();
    let message = tool_error(&out);
    assert!(message.contains("over the 10485760-byte limit"), "{message}");
    assert_eq!(std::fs::metadata(ws.path().join("big.txt")).unwrap().len(), 10 * 1024 * 1024);
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_then_sigterm_then_sigkill_for_a_tool_that_ignores_sigterm() {
    let ws = workspace();
    let m = marker("ignore-term");
    let cfg = config(&format!("{TOOL} raw ignore-term {m}"), "");
    let c = call("t", json!({}));
    let token = c.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel();
    });
    let out = runtime(ws.path()).options(fast()).run(c, &cfg, None).await.unwrap();
    // Cancelled (the request's own deadline would be a timeout), and the tool that ignores
    // SIGTERM is gone: the SIGKILL after the grace period fired.
    assert!(matches!(out, ExecutionOutcome::Cancelled { .. }), "{out:?}");
    assert!(processes_with(&m).is_empty(), "left behind: {:?}", processes_with(&m));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_grandchild_holding_the_pipe_is_killed_with_the_group() {
    let ws = workspace();
    let (out, m) = raw(ws.path(), "grandchild", "", fast()).await;
    let t = text(&out.unwrap());
    let pid = t.strip_prefix("left a grandchild ").unwrap_or_else(|| panic!("{t}")).to_owned();
    for _ in 0..50 {
        if !alive(&pid) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(&pid), "grandchild {pid} survived");
    assert!(processes_with(&m).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn needs_input_then_answered() {
    let ws = workspace();
    let out = runtime(ws.path()).run(call("ask", json!({})), &config(TOOL, ""), None).await.unwrap();
    let ExecutionOutcome::NeedsInput { question, .. } = out else { panic!("{out:?}") };
    assert_eq!(question.id, "confirm");
    let mut c = call("ask", json!({}));
    c.answers.insert("confirm".into(), json!(true));
    let out = runtime(ws.path()).run(c, &config(TOOL, ""), None).await.unwrap();
    assert_eq!(text(&out), "answer: true");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_python_tool_speaking_the_protocol_by_hand() {
    let ws = workspace();
    let tool_dir = tempfile::tempdir().unwrap();
    let script = tool_dir.path().join("count_lines.py");
    std::fs::write(
        &script,
        r#"import json, sys
init = json.loads(sys.stdin.readline())
path = init["params"]["tool"]["arguments"]["path"]
print(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "fs.read", "params": {"path": path}}), flush=True)
resp = json.loads(sys.stdin.readline())
if "error" in resp:
    print(json.dumps({"jsonrpc": "2.0", "method": "error", "params": {"message": resp["error"]["message"]}}), flush=True)
else:
    n = len(resp["result"]["content"].splitlines())
    print(json.dumps({"jsonrpc": "2.0", "method": "result", "params": {"content": f"{path}: {n} lines"}}), flush=True)
"#,
    )
    .unwrap();
    let cfg = config(&format!("/usr/bin/python3 {}", script.display()), "");
    let out = runtime(ws.path()).run(call("count_lines", json!({"path": "src/main.rs"})), &cfg, None).await.unwrap();
    assert_eq!(text(&out), "src/main.rs: 3 lines");
    let out = runtime(ws.path()).run(call("count_lines", json!({"path": "/etc/passwd"})), &cfg, None).await.unwrap();
    assert!(tool_error(&out).contains("is absolute"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_opt_out_really_runs_without_the_os_sandbox() {
    let ws = workspace();
    let rt = runtime(ws.path()).sandbox(jp_native::sandbox::SandboxMode::Disabled);
    let args = json!({"project_file": ws.path().join("README.md"), "project_dir": ws.path()});
    let out = rt.run(call("escape", args), &config(TOOL, ""), None).await.unwrap();
    let report: Value = serde_json::from_str(&text(&out)).unwrap();
    // Without the sandbox a tool can read the project directly: the sandbox is what stops it.
    assert!(report["read_project_file"].as_str().unwrap().starts_with("ALLOWED"), "{report}");
}

#[tokio::test(flavor = "multi_thread")]
async fn path_spellings_through_a_real_subprocess_never_escape() {
    let ws = workspace();
    let long = "a/".repeat(3000);
    let spellings = [
        "../../../../etc/passwd",
        "src/../../etc/passwd",
        "/etc/passwd",
        "//etc/passwd",
        "~/.ssh/id_rsa",
        "file:///etc/passwd",
        "..\\..\\etc\\passwd",
        "src\u{0}/main.rs",
        long.as_str(),
    ];
    let requests: Vec<Value> = spellings.iter().map(|p| json!({"method": "fs.read", "params": {"path": p}})).collect();
    let literal = json!([{"method": "fs.read", "params": {"path": "%2e%2e/etc/passwd"}}]);
    let rt = runtime(ws.path());
    let out = rt.run(call("script", json!({ "requests": requests })), &config(TOOL, ""), None).await.unwrap();
    let r: Vec<Value> = serde_json::from_str(&text(&out)).unwrap();
    for (spelling, resp) in spellings.iter().zip(&r) {
        assert_eq!(resp["error"]["code"], json!(-32001), "{spelling:?}: {resp}");
    }
    // Percent-encoding is a literal name inside the workspace, which does not exist.
    let out = rt.run(call("script", json!({ "requests": literal })), &config(TOOL, ""), None).await.unwrap();
    let r: Vec<Value> = serde_json::from_str(&text(&out)).unwrap();
    assert_eq!(r[0]["error"]["code"], json!(-32002), "{}", r[0]);
}
