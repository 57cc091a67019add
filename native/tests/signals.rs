//! `jp mcp` ends on SIGINT or SIGTERM however its stdio are connected (issue 25): Claude Code
//! starts servers with sockets for stdin/stdout and sends SIGKILL half a second after SIGINT, so
//! a `jp mcp` that waits for stdin to close never ends cleanly. Each case starts a `run` handle
//! (a `sleep` under the sandbox) and checks that the signal ends `jp` itself, with its handle's
//! process gone — on sockets, pipes, a pty and over HTTP.

#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;
use support::approve_config;

const JP: &str = env!("CARGO_BIN_EXE_jp");

fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    std::fs::write(
        ws.path().join(".jp/config.toml"),
        "[conversation.tools.run]\nsource = \"builtin\"\n[conversation.tools.run.access]\nfilesystem = [{ path = \".\", allow = [\"read\"] }]\ncommands = { sleep = { args = [[\"**\"]] } }\n",
    )
    .unwrap();
    approve_config(ws.path());
    ws
}

/// How `jp mcp`'s stdin and stdout are connected.
#[derive(Debug, Clone, Copy)]
enum Connected {
    Pipes,
    Socket,
    /// A terminal (raw mode, so that the JSON lines pass unchanged).
    Pty,
}

/// `jp mcp` in `ws` with its stdio connected as `how`; the client's reader and writer.
fn start(ws: &Path, how: Connected) -> (Child, Box<dyn BufRead>, Box<dyn Write>) {
    let mut command = Command::new(JP);
    command.arg("mcp").current_dir(ws).stderr(Stdio::null());
    match how {
        Connected::Pipes => {
            let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
            let reader = Box::new(BufReader::new(child.stdout.take().unwrap()));
            let writer = Box::new(child.stdin.take().unwrap());
            (child, reader, writer)
        }
        Connected::Socket => {
            let (ours, theirs) = UnixStream::pair().unwrap();
            let theirs_out = theirs.try_clone().unwrap();
            let child = command
                .stdin(Stdio::from(OwnedFd::from(theirs)))
                .stdout(Stdio::from(OwnedFd::from(theirs_out)))
                .spawn()
                .unwrap();
            let reader = Box::new(BufReader::new(ours.try_clone().unwrap()));
            (child, reader, Box::new(ours))
        }
        Connected::Pty => {
            let (master, slave) = pty();
            let slave_out = slave.try_clone().unwrap();
            let child = command.stdin(Stdio::from(slave)).stdout(Stdio::from(slave_out)).spawn().unwrap();
            let master = std::fs::File::from(master);
            let reader = Box::new(BufReader::new(master.try_clone().unwrap()));
            (child, reader, Box::new(master))
        }
    }
}

/// A pseudo-terminal in raw mode: (master, slave).
fn pty() -> (OwnedFd, OwnedFd) {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two new descriptors we then own; the termios is read and set on
    // the slave we own.
    #[allow(unsafe_code)]
    unsafe {
        let made = libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null());
        assert_eq!(made, 0, "openpty: {}", std::io::Error::last_os_error());
        let mut mode: libc::termios = std::mem::zeroed();
        assert_eq!(libc::tcgetattr(slave, &mut mode), 0);
        libc::cfmakeraw(&mut mode);
        assert_eq!(libc::tcsetattr(slave, libc::TCSANOW, &mode), 0);
        (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave))
    }
}

fn request(reader: &mut dyn BufRead, writer: &mut dyn Write, id: u64, method: &str, params: Value) -> Value {
    let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
    writeln!(writer, "{line}").unwrap();
    writer.flush().unwrap();
    loop {
        let mut answer = String::new();
        assert!(reader.read_line(&mut answer).unwrap() > 0, "jp mcp closed its stdout");
        let v: Value = serde_json::from_str(&answer).unwrap();
        if v["id"] == id {
            return v;
        }
    }
}

fn alive(pid: u32) -> bool {
    // A zombie (reaped late by its parent) counts as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s.rsplit_once(") ").map(|(_, rest)| rest.chars().next().unwrap_or('?')).unwrap_or('?');
        state != 'Z'
    })
}

/// The pids of `sleep 1000` processes whose parent is `parent`.
fn sleeps_of(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some((comm, rest)) = stat.split_once(" (").and_then(|(_, r)| r.rsplit_once(") ")) else { continue };
        let ppid: u32 = rest.split(' ').nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
        if comm == "sleep" && ppid == parent {
            out.push(pid);
        }
    }
    out
}

fn ends_on(signal: i32, how: Connected) {
    let ws = workspace();
    let (mut child, mut reader, mut writer) = start(ws.path(), how);
    let init = request(
        &mut *reader,
        &mut *writer,
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "signals", "version": "0"}}),
    );
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    writeln!(writer, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
    let spawned = request(
        &mut *reader,
        &mut *writer,
        2,
        "tools/call",
        json!({"name": "run", "arguments": {"action": "spawn", "program": "sleep", "args": ["1000"]}}),
    );
    assert!(spawned["result"]["isError"] != true, "{spawned}");
    let sleeps = sleeps_of(child.id());
    assert_eq!(sleeps.len(), 1, "the handle's program runs: {spawned}");

    // SAFETY: sends a signal to our own child.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
    // A bound far above what is expected, only so that a jp that never ends fails the test
    // instead of hanging it.
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let Some(status) = status else {
        let _ = child.kill();
        panic!("jp mcp (stdio {how:?}) did not end on signal {signal}; the client's stdin is still open");
    };
    assert!(status.code().is_some(), "ended by its own exit, not killed: {status:?}");
    for pid in sleeps {
        assert!(!alive(pid), "the handle's process {pid} outlived jp mcp");
    }
    drop(writer);
}

#[test]
fn sigterm_ends_jp_mcp_on_sockets() {
    ends_on(libc::SIGTERM, Connected::Socket);
}

#[test]
fn sigint_ends_jp_mcp_on_sockets() {
    ends_on(libc::SIGINT, Connected::Socket);
}

#[test]
fn sigint_ends_jp_mcp_on_a_pty() {
    ends_on(libc::SIGINT, Connected::Pty);
}

#[test]
fn sigterm_ends_jp_mcp_on_a_pty() {
    ends_on(libc::SIGTERM, Connected::Pty);
}

#[test]
fn sigterm_ends_jp_mcp_on_pipes() {
    ends_on(libc::SIGTERM, Connected::Pipes);
}

#[test]
fn sigterm_ends_jp_mcp_over_http_with_a_connection_open() {
    let ws = workspace();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(JP)
        .args(["mcp", "--http", &format!("127.0.0.1:{port}"), "--token-env", "JP_SIGNALS_TOKEN"])
        .current_dir(ws.path())
        .env("JP_SIGNALS_TOKEN", "signals-test-token-0123456789")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("serving MCP over HTTP") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "jp mcp --http ended before serving");
    }
    // A client that connected and sent half a request, then waits.
    let mut idle = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    idle.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: sends a signal to our own child.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("jp mcp --http did not end on SIGTERM with a connection open");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(idle);
}

#[test]
fn a_client_that_leaves_without_initializing_ends_the_session_quietly() {
    // An MCP 2026-07-28 client never sends `initialize`; one that asks `server/discover` and
    // leaves (the TypeScript SDK v2 does so to pin a version) ended its session normally.
    let ws = workspace();
    for first in [
        Some(json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "leaves", "version": "0"},
        }}})),
        None, // nothing at all
    ] {
        let mut child = Command::new(JP)
            .arg("mcp")
            .current_dir(ws.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        if let Some(message) = &first {
            writeln!(stdin, "{message}").unwrap();
            let mut line = String::new();
            BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
            assert!(line.contains("\"result\""), "{line}");
        }
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{first:?}: {:?} {stderr}", out.status);
        assert_eq!(stderr, "", "{first:?}");
    }
}

/// A stdio tool that leaves a process behind: it starts a grandchild (`sleep`) in its group,
/// writes "its pid, the grandchild's, its TMPDIR" to `pids.txt` and waits. Asked for its schema
/// (`hang` in the arguments of the config's command), it does the same while describing itself.
const LINGERING_TOOL: &str = r#"import json, os, subprocess, sys, time
ctx = sys.stdin.read()
if '"action":"schema"' in ctx and sys.argv[1:2] != ["hang"]:
    print(json.dumps({"tools": [{"name": "linger", "summary": "Waits.", "parameters": {}}]}))
    sys.exit(0)
child = subprocess.Popen(["sleep", "1000"])
# Describing itself, it may write nothing but its own TMPDIR.
where = os.environ["TMPDIR"] if sys.argv[1:2] == ["hang"] else "."
with open(os.path.join(where, "pids.tmp"), "w") as f:
    f.write(f"{os.getpid()} {child.pid} {os.environ['TMPDIR']} {' '.join(sys.argv[2:])}")
os.rename(os.path.join(where, "pids.tmp"), os.path.join(where, "pids.txt"))
time.sleep(1000)
"#;

/// A workspace with the lingering tool as `linger` (and as `hang`, which lingers describing itself,
/// writing `pids.txt` with the workspace's name in its scratch directory).
fn lingering_workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    std::fs::write(ws.path().join("linger.py"), LINGERING_TOOL).unwrap();
    let marker = ws.path().file_name().unwrap().to_string_lossy().into_owned();
    std::fs::write(
        ws.path().join(".jp/config.toml"),
        format!("[conversation.tools.linger]\nsource = \"local\"\ncommand = \"/usr/bin/python3 linger.py\"\n\n[conversation.tools.hang]\nsource = \"local\"\ncommand = \"/usr/bin/python3 linger.py hang {marker}\"\n"),
    )
    .unwrap();
    approve_config(ws.path());
    ws
}

/// Waits (with a generous bound) for the tool's `pids.txt`: (tool, grandchild, its TMPDIR).
fn lingering_pids(ws: &Path, jp: &mut Child) -> (u32, u32, String) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let marker = ws.file_name().unwrap().to_string_lossy().into_owned();
    loop {
        // In the workspace, or (describing itself) in its scratch directory under jp's temp dir.
        let scratch = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("jp-stdio-"))
            .filter_map(|e| std::fs::read_to_string(e.path().join("pids.txt")).ok())
            .find(|t| t.trim_end().ends_with(&format!(" {marker}")));
        if let Some(text) = std::fs::read_to_string(ws.join("pids.txt")).ok().or(scratch) {
            let mut parts = text.split(' ');
            let mut pid = || parts.next().unwrap().parse::<u32>().unwrap();
            let (tool, grandchild) = (pid(), pid());
            return (tool, grandchild, text.split(' ').nth(2).unwrap().to_owned());
        }
        assert!(jp.try_wait().unwrap().is_none(), "jp ended before its tool started");
        assert!(Instant::now() < deadline, "the tool never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `child` to end (a bound only so that a jp that never ends fails the test).
fn wait_bounded(child: &mut Child, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} did not end");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(pid: u32, signal: i32) {
    // SAFETY: sends a signal to a process of this test.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(pid as i32, signal);
    }
}

/// `jp args…` with a lingering tool running, then `signal`: jp ends by its own exit, and the
/// tool, its grandchild and its scratch directory are gone.
fn leaves_nothing_on(args: &[&str], sig: i32) {
    let ws = lingering_workspace();
    let mut jp = Command::new(JP)
        .args(args)
        .current_dir(ws.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tool, grandchild, scratch) = lingering_pids(ws.path(), &mut jp);
    assert!(alive(tool) && alive(grandchild) && Path::new(&scratch).is_dir());
    signal(jp.id(), sig);
    let status = wait_bounded(&mut jp, "jp");
    assert!(status.code().is_some(), "jp {args:?} ended by its own exit on signal {sig}, not by it: {status:?}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while (alive(tool) || alive(grandchild)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(tool), "the tool outlived jp {args:?} on signal {sig}");
    assert!(!alive(grandchild), "the tool's grandchild outlived jp {args:?} on signal {sig}");
    assert!(!Path::new(&scratch).exists(), "the tool's scratch directory {scratch} was left behind");
}

#[test]
fn sigterm_sighup_and_sigquit_end_a_tool_call_with_its_processes() {
    for sig in [libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        leaves_nothing_on(&["tool", "call", "linger", "--no-interaction"], sig);
    }
}

#[test]
fn a_signal_while_a_tool_describes_itself_leaves_nothing_either() {
    // `jp tool schema` does not handle signals itself: its work is dropped at once.
    for sig in [libc::SIGHUP, libc::SIGTERM] {
        leaves_nothing_on(&["tool", "schema", "hang"], sig);
    }
}

#[test]
fn sighup_ends_jp_mcp_on_a_pty() {
    ends_on(libc::SIGHUP, Connected::Pty);
}

#[test]
fn sigquit_ends_jp_mcp_on_pipes() {
    ends_on(libc::SIGQUIT, Connected::Pipes);
}

#[test]
fn a_tool_dies_with_a_killed_jp_and_cannot_change_that() {
    let ws = lingering_workspace();
    let mut jp = Command::new(JP)
        .args(["tool", "call", "linger", "--no-interaction"])
        .current_dir(ws.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tool, grandchild, _) = lingering_pids(ws.path(), &mut jp);
    let _ = jp.kill();
    let _ = jp.wait();
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive(tool) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(tool), "the tool outlived a SIGKILL of jp (its parent-death signal)");
    // Its grandchild, which has no parent-death signal of its own, is the known gap
    // (SECURITY.md): nothing of jp is left to kill it.
    signal(grandchild, libc::SIGKILL);
}

/// A stdio tool whose child leaves orphans: one `sleep` and 20 processes that exit at once.
/// It writes the sleep's pid to `orphan.pid` and answers once `go` exists.
const ORPHANING_TOOL: &str = r#"import json, os, sys, time
ctx = sys.stdin.read()
if '"action":"schema"' in ctx:
    print(json.dumps({"tools": [{"name": "orphans", "summary": "Leaves orphans.", "parameters": {}}]}))
    sys.exit(0)
r, w = os.pipe()
a = os.fork()
if a == 0:
    b = os.fork()
    if b == 0:
        os.execv("/usr/bin/sleep", ["sleep", "1000"])
    quick = []
    for _ in range(20):
        c = os.fork()
        if c == 0:
            os._exit(0)
        quick.append(c)
    os.write(w, " ".join(str(p) for p in [b] + quick).encode())
    os._exit(0)
os.waitpid(a, 0)
pids = os.read(r, 4096).decode()
with open("orphan.tmp", "w") as f:
    f.write(pids)
os.rename("orphan.tmp", "orphan.pid")
while not os.path.exists("go"):
    time.sleep(0.02)
print(json.dumps({"type": "success", "content": f"orphans {pids}"}))
"#;

/// (parent pid, state) of `pid`.
fn parent_and_state(pid: u32) -> Option<(u32, char)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(") ")?.1;
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    Some((fields.next()?.parse().ok()?, state))
}

/// The zombies whose parent is `parent`, each with its `stat` line (name, group) for the message.
fn zombies_of(parent: u32) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| parent_and_state(*pid) == Some((parent, 'Z')))
        .map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default())
        .collect()
}

#[test]
fn jp_mcp_adopts_and_reaps_what_a_tool_leaves_behind() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    std::fs::write(ws.path().join("orphans.py"), ORPHANING_TOOL).unwrap();
    std::fs::write(
        ws.path().join(".jp/config.toml"),
        "[conversation.tools.orphans]\nsource = \"local\"\ncommand = \"/usr/bin/python3 orphans.py\"\n",
    )
    .unwrap();
    approve_config(ws.path());
    let (mut child, mut reader, mut writer) = start(ws.path(), Connected::Pipes);
    let jp = child.id();
    let init = request(
        &mut *reader,
        &mut *writer,
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "reaper", "version": "0"}}),
    );
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    writeln!(writer, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
    let call =
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "orphans", "arguments": {}}});
    writeln!(writer, "{call}").unwrap();
    writer.flush().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let (orphan, quick) = loop {
        if let Ok(text) = std::fs::read_to_string(ws.path().join("orphan.pid")) {
            let pids: Vec<u32> = text.split(' ').map(|p| p.trim().parse().unwrap()).collect();
            break (pids[0], pids[1..].to_vec());
        }
        assert!(Instant::now() < deadline, "the tool never ran");
        std::thread::sleep(Duration::from_millis(20));
    };
    // jp is the subreaper: the orphan is its child now, not init's.
    assert_eq!(parent_and_state(orphan).map(|(p, _)| p), Some(jp), "the orphan was adopted by jp mcp");
    // The 20 that exited at once are reaped by jp: gone from /proc, not zombies of anyone (a
    // bound only so that a leak fails the test).
    let gone = |pid: &u32| !Path::new(&format!("/proc/{pid}")).exists();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !quick.iter().all(gone) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(quick.iter().all(gone), "not reaped: {:?}", zombies_of(jp));
    std::fs::write(ws.path().join("go"), "").unwrap();
    loop {
        let mut answer = String::new();
        assert!(reader.read_line(&mut answer).unwrap() > 0, "jp mcp closed its stdout");
        let v: Value = serde_json::from_str(&answer).unwrap();
        if v["id"] == 2 {
            assert!(v["result"]["isError"] != true, "{v}");
            break;
        }
    }
    // The call is over: its group killed, the orphan with it, and reaped too.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !gone(&orphan) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(orphan), "the orphan outlived its call");
    assert!(gone(&orphan), "the orphan was not reaped: {:?}", zombies_of(jp));
    drop(writer);
    signal(jp, libc::SIGTERM);
    wait_bounded(&mut child, "jp mcp");
}
