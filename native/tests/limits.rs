//! What a hostile tool can make the host hold in memory: the real `jp` binary's peak RSS (its
//! `ru_maxrss` from `wait4`) while a VFS tool pipelines large writes and while a component keeps
//! many large files open. Unbounded, each scenario needs well over 1.6 GiB; the bound below is
//! generous but far under that.

#![cfg(target_os = "linux")]

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};

mod support;
use support::approve_config;

const JP: &str = env!("CARGO_BIN_EXE_jp");

/// Peak resident memory `jp` may reach in these scenarios.
const MAX_RSS_MIB: i64 = 600;

/// Run `jp` and return its exit code, stderr and peak RSS in MiB.
fn jp_peak_rss(ws: &Path, args: &[&str]) -> (i32, String, i64) {
    let mut stderr_file = tempfile::tempfile().unwrap();
    // Reaped by `wait4` below, which `Child::wait` cannot do (it gives no rusage).
    #[allow(clippy::zombie_processes)]
    let child = Command::new(JP)
        .arg("--workspace")
        .arg(ws)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr_file.try_clone().unwrap())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: plain FFI call on our own child's pid with valid out-pointers; the child is reaped
    // here and never waited on through `Child`.
    #[allow(unsafe_code)]
    let (pid, usage) = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        let pid = libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage);
        (pid, usage)
    };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4: {}", std::io::Error::last_os_error());
    let mut stderr = String::new();
    use std::io::Seek as _;
    stderr_file.rewind().unwrap();
    stderr_file.read_to_string(&mut stderr).unwrap();
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 };
    let rss = usage.ru_maxrss / 1024;
    eprintln!("jp {args:?}: peak RSS {rss} MiB");
    (code, stderr, rss)
}

fn write_config(ws: &Path, text: &str) {
    std::fs::create_dir_all(ws.join(".jp")).unwrap();
    std::fs::write(ws.join(".jp/config.toml"), text).unwrap();
    approve_config(ws);
}

/// Asks for a URL the test server never answers, then pipelines 200 writes of 8 MiB from a
/// second thread without reading anything, and reports how many got through once the writer is
/// done or has been held back for 3 s.
const PIPELINER: &str = r#"import json, os, sys, threading, time
url = json.loads(sys.stdin.readline())["params"]["tool"]["arguments"]["url"]
out = sys.stdout.buffer
out.write(('{"jsonrpc":"2.0","id":0,"method":"http.get","params":{"url":"%s"}}\n' % url).encode())
out.flush()
content = b"p" * (8 << 20)
written = [0]
def writer():
    for i in range(1, 201):
        out.write(b'{"jsonrpc":"2.0","id":%d,"method":"fs.write","params":{"path":"pipelined.txt","content":"' % i + content + b'"}}\n')
        out.flush()
        written[0] = i
threading.Thread(target=writer, daemon=True).start()
last, still = 0, 0
while written[0] < 200 and still < 30:
    time.sleep(0.1)
    if written[0] == last:
        still += 1
    else:
        last, still = written[0], 0
sys.stderr.write("wrote %d of 200 requests\n" % written[0])
sys.stderr.flush()
os._exit(0)
"#;

#[test]
fn a_vfs_tool_pipelining_large_writes_cannot_grow_the_host() {
    // A server that accepts and never answers: the tool's first request stays in flight.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            held.push(conn);
        }
    });
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("pipeliner.py"), PIPELINER).unwrap();
    write_config(
        ws.path(),
        &format!(
            r#"
[conversation.tools.pipeline]
source = "local"
runtime = "vfs"
command = "/usr/bin/python3 pipeliner.py"
[conversation.tools.pipeline.parameters.url]
type = "string"
required = true
[conversation.tools.pipeline.sandbox]
filesystem = {{ allow = ["."], writable = true }}
network = {{ allow = ["http://127.0.0.1:{port}"] }}
"#
        ),
    );
    let url = format!("url=http://127.0.0.1:{port}/slow");
    let (code, stderr, rss) = jp_peak_rss(ws.path(), &["tool", "call", "pipeline", &url]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("wrote ") && stderr.contains(" of 200 requests"), "{stderr}");
    assert!(rss < MAX_RSS_MIB, "jp reached {rss} MiB (bound {MAX_RSS_MIB} MiB); {stderr}");
}

#[test]
fn a_component_holding_many_large_files_open_cannot_grow_the_host() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp/tools")).unwrap();
    let guests = Path::new(jp_native::runtime::wasm::GUESTS_DIR);
    std::fs::copy(guests.join("jp_tool_faults.wasm"), ws.path().join(".jp/tools/faults.wasm")).unwrap();
    write_config(
        ws.path(),
        r#"
[conversation.tools.hoard]
source = "local"
wasm = ".jp/tools/faults.wasm"
[conversation.tools.hoard.parameters.files]
type = "integer"
required = true
"#,
    );
    // 200 files of 8 MiB each: 1.6 GiB of buffers if nothing stops it.
    let (code, stderr, rss) = jp_peak_rss(ws.path(), &["tool", "call", "hoard", "files=200"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("hoarded "), "{stderr}");
    assert!(rss < MAX_RSS_MIB, "jp reached {rss} MiB (bound {MAX_RSS_MIB} MiB); {stderr}");
}
