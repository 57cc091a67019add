//! The VFS runtime end to end: real tool subprocesses under real Landlock and seccomp, real files
//! in temporary directories, the core dispatcher in between.

#![cfg(all(not(target_arch = "wasm32"), target_os = "linux"))]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use jp_core::cancel::CancellationToken;
use jp_core::runtime::{Config, ExecutionOutcome, RuntimeError, ToolCall, ToolConfig};
use jp_native::files::FsProjectFiles;
use jp_native::vfs::{VfsOptions, VfsRuntime};
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
