//! `process.run` children under the OS sandbox: real programs (`sh`, `python3`, `setsid`) run by
//! `TokioProcessRunner` under real Landlock and seccomp, real files in temporary directories, a
//! real TCP listener.

#![cfg(all(not(target_arch = "wasm32"), target_os = "linux"))]

use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jp_core::files::ProjectFiles;
use jp_core::host::{BackendError, Dispatcher, HostError, NoEvents, ProcessOutput, ProcessRequest, ProcessRunner};
use jp_core::policy::{AccessPolicy, GrantError, ProcessGrant, WorkspaceGrant};
use jp_core::protocol::{HostRequest, Id};
use jp_core::runtime::Config;
use jp_native::files::FsProjectFiles;
use jp_native::process::TokioProcessRunner;
use jp_native::sandbox::{SandboxMode, SandboxSpec};
use serde_json::json;

const READ_ONLY: ProcessGrant = ProcessGrant { workspace: WorkspaceGrant { read: true, write: false }, network: false };
const READ_WRITE: ProcessGrant = ProcessGrant { workspace: WorkspaceGrant { read: true, write: true }, network: false };

fn request(ws: &Path, program: &str, args: &[&str], grant: Result<ProcessGrant, GrantError>) -> ProcessRequest {
    ProcessRequest {
        program: program.into(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: vec![("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()), ("HOME".into(), "/root".into())],
        cwd: Some(ws.to_string_lossy().into_owned()),
        max_output: 1 << 20,
        grant,
        egress: None,
    }
}

fn runner() -> TokioProcessRunner {
    TokioProcessRunner::new(Duration::from_secs(20))
}

async fn sh(ws: &Path, script: &str, grant: ProcessGrant) -> (String, String) {
    let out = runner().run(request(ws, "sh", &["-c", script], Ok(grant))).await.unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A number no other process has in its argv: `sleep <marker>` is findable in /proc.
fn marker(n: u32) -> String {
    format!("300.{}{n}", std::process::id())
}

/// Live processes with `marker` as an argument (zombies have no argv).
fn alive(marker: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        if cmdline.split(|b| *b == 0).any(|a| a == marker.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

/// Whether processes with `marker` remain after a generous wait; kills them so that a failing
/// test leaves nothing behind.
fn survivors(marker: &str) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !alive(marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = alive(marker);
    for pid in &left {
        // SAFETY: kill(2) with a pid we just read; no memory is involved.
        #[allow(unsafe_code)]
        unsafe {
            libc::kill(*pid, libc::SIGKILL);
        }
    }
    left
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_cannot_read_outside_the_workspace_and_gets_a_private_home() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("inside.txt"), "inside").unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let secret = elsewhere.path().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET").unwrap();
    let script = format!(
        "cat inside.txt; echo; cat {s}; echo cat=$?; ls /root >/dev/null; echo ls=$?; echo home=$HOME; echo x > \"$HOME/f\" && cat \"$HOME/f\"",
        s = secret.display()
    );
    let (out, err) = sh(ws.path(), &script, READ_ONLY).await;
    assert!(out.starts_with("inside\n"), "the workspace is readable: {out} {err}");
    assert!(!out.contains("TOP-SECRET") && out.contains("cat=1"), "a file outside the workspace: {out} {err}");
    assert!(out.contains("ls=2"), "the host's home: {out} {err}");
    let home = out.lines().find_map(|l| l.strip_prefix("home=")).unwrap();
    assert_ne!(home, "/root", "HOME is private");
    assert!(out.ends_with("x\n"), "the private HOME is writable: {out} {err}");
    assert!(!Path::new(home).exists(), "the private HOME is removed after the call");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_workspace_is_writable_only_under_a_read_write_grant() {
    let ws = tempfile::tempdir().unwrap();
    let script = "echo new > made.txt; echo write=$?";
    let (out, err) = sh(ws.path(), script, READ_ONLY).await;
    assert!(out.contains("write=2"), "{out} {err}");
    assert!(!ws.path().join("made.txt").exists(), "a read-only grant keeps the workspace read-only");
    let (out, err) = sh(ws.path(), script, READ_WRITE).await;
    assert!(out.contains("write=0"), "{out} {err}");
    assert_eq!(std::fs::read_to_string(ws.path().join("made.txt")).unwrap(), "new\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_in_the_workspace_runs_but_a_symlink_there_lends_nothing() {
    use std::os::unix::fs::PermissionsExt as _;
    let ws = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    for (dir, text) in [(ws.path(), "echo built"), (elsewhere.path(), "echo escaped")] {
        let script = dir.join("run.sh");
        std::fs::write(&script, format!("#!/bin/sh\n{text}\n")).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::os::unix::fs::symlink(elsewhere.path().join("run.sh"), ws.path().join("link.sh")).unwrap();
    let out = runner().run(request(ws.path(), "./run.sh", &[], Ok(READ_ONLY))).await.unwrap();
    assert_eq!(out.stdout, b"built\n");
    let result = runner().run(request(ws.path(), "./link.sh", &[], Ok(READ_WRITE))).await;
    // Landlock refuses the target; in the private mount view (a private /tmp, where `elsewhere`
    // lies) it is not even there.
    let refused = |m: &str| m.contains("denied") || m.contains("No such file or directory");
    assert!(matches!(&result, Err(BackendError::Failed(m)) if refused(m)), "{result:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn git_and_make_still_work_in_a_writable_workspace() {
    let ws = tempfile::tempdir().unwrap();
    let script = "git init -q . && echo hi > a && git add a && git -c user.name=t -c user.email=t@e commit -qm first && git log --format=%s; \
                  printf 'all:\\n\\t@echo made\\n' > Makefile && make";
    let (out, err) = sh(ws.path(), script, READ_WRITE).await;
    assert_eq!(out, "first\nmade\n", "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_network_is_closed_unless_the_grant_opens_it_and_then_only_through_the_proxy() {
    let ws = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    // A direct connection, then a tunnel through the proxy the environment names.
    let script = format!(
        "import os, socket\n\
         try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=10); print('connected')\n\
         except OSError as e:\n    print('refused')\n\
         proxy = os.environ.get('HTTPS_PROXY')\n\
         if proxy:\n\
         \x20   s = socket.create_connection(('127.0.0.1', int(proxy.rsplit(':', 1)[1])), timeout=10)\n\
         \x20   s.sendall(b'CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\n\\r\\n')\n\
         \x20   print(s.recv(100).decode().split('\\r')[0])\n"
    );
    let gate = |allow: &str| {
        let cfg: jp_core::policy::AccessConfig =
            toml::from_str(&format!("network = {{ allow = [{allow:?}] }}")).unwrap();
        let policy = Arc::new(AccessPolicy::from_config(None, Some(&cfg)).unwrap());
        Arc::new(jp_core::host::EgressGate::new(
            "t",
            policy,
            Arc::new(jp_core::host::DenyInquirer),
            None,
            Arc::default(),
        ))
    };
    let run = |network, egress| {
        let mut req = request(ws.path(), "python3", &["-c", &script], Ok(ProcessGrant { network, ..READ_ONLY }));
        req.egress = egress;
        async move { runner().run(req).await.unwrap() }
    };
    let text =
        |o: &ProcessOutput| format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let closed = run(false, None).await;
    assert_eq!(text(&closed), "refused\n");
    // Granted: still no direct connection, but a tunnel to what the gate allows…
    let open = run(true, Some(gate(&format!("https://127.0.0.1:{port}")))).await;
    assert_eq!(text(&open), "refused\nHTTP/1.1 200 Connection established\n");
    listener.set_nonblocking(false).unwrap();
    assert!(listener.accept().is_ok(), "the listener saw the tunnelled connection");
    listener.set_nonblocking(true).unwrap();
    // …and nothing it refuses.
    let other = run(true, Some(gate("https://127.0.0.1:1"))).await;
    assert!(text(&other).starts_with("refused\nHTTP/1.1 403 "), "{}", text(&other));
    assert_eq!(listener.accept().map(|_| ()).unwrap_err().kind(), ErrorKind::WouldBlock, "nothing connected");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_cannot_leave_its_process_group() {
    let ws = tempfile::tempdir().unwrap();
    let m = marker(1);
    // setsid(1) started by the shell is not a group leader, so it calls setsid(2) directly.
    let script = format!(
        "setsid true; echo setsid=$?; python3 -c 'import os; os.setpgid(0, 0)' 2>/dev/null; echo setpgid=$?; (setsid sleep {m} >/dev/null 2>&1 &); echo started"
    );
    let (out, err) = sh(ws.path(), &script, READ_ONLY).await;
    let left = survivors(&m);
    assert!(out.contains("setsid=1") && out.contains("setpgid=1"), "{out} {err}");
    assert!(left.is_empty(), "a process escaped the group and outlived the call: {left:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_the_child_started_outlives_the_call_however_it_ends() {
    let ws = tempfile::tempdir().unwrap();
    // Normal end, with a grandchild left in the background holding no pipe.
    let m = marker(2);
    let (out, _) = sh(ws.path(), &format!("sleep {m} >/dev/null 2>&1 & echo started"), READ_ONLY).await;
    assert_eq!(out, "started\n");
    assert_eq!(survivors(&m), Vec::<i32>::new(), "a background grandchild after a normal end");

    // Timeout.
    let m = marker(3);
    let req = request(ws.path(), "sh", &["-c", &format!("sleep {m} & sleep {m}")], Ok(READ_ONLY));
    let err = TokioProcessRunner::new(Duration::from_secs(1)).run(req).await.unwrap_err();
    assert!(matches!(err, BackendError::Timeout(_)), "{err:?}");
    assert_eq!(survivors(&m), Vec::<i32>::new(), "the group after a timeout");

    // Cancellation: the dispatcher drops the future when the tool's call is cancelled.
    let m = marker(4);
    let req = request(ws.path(), "sh", &["-c", &format!("sleep {m} & sleep {m}")], Ok(READ_ONLY));
    let task = tokio::spawn(async move { runner().run(req).await });
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(&m).len() < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(alive(&m).len(), 2, "both sleeps started");
    task.abort();
    let _ = task.await;
    assert_eq!(survivors(&m), Vec::<i32>::new(), "the group after the call was dropped");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_the_kernel_cannot_hold_is_refused_unless_the_sandbox_is_off() {
    let ws = tempfile::tempdir().unwrap();
    let why = GrantError::TakesAway { path: "secrets".into(), origin: "the test's policy".into() };
    let err = runner().run(request(ws.path(), "sh", &["-c", "echo ran"], Err(why.clone()))).await.unwrap_err();
    let BackendError::Unavailable(message) = err else { panic!("{err:?}") };
    assert!(
        message.contains("its filesystem rule for 'secrets' (the test's policy) takes away access")
            && message.contains("--no-os-sandbox")
            && message.contains("not started"),
        "{message}"
    );

    // --no-os-sandbox: runs as before, unconfined.
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("s.txt"), "outside").unwrap();
    let script = format!("cat {}/s.txt", elsewhere.path().display());
    let req = request(ws.path(), "sh", &["-c", &script], Err(why));
    let out = runner().sandbox(SandboxMode::Disabled).run(req).await.unwrap();
    assert_eq!(out, ProcessOutput { stdout: b"outside".to_vec(), stderr: Vec::new(), exit_code: Some(0) });
}

#[tokio::test(flavor = "multi_thread")]
async fn process_run_through_the_dispatcher_gets_the_policy_grant() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("src")).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("s.txt"), "outside").unwrap();
    let dispatcher = |access: &str| {
        let text = format!(
            "[conversation.tools.t]\nsource = \"local\"\nruntime = \"vfs\"\ncommand = \"x\"\n[conversation.tools.t.access]\n{access}\ncommands.sh = {{}}\n"
        );
        let config = Config::from_toml(&text, "test.toml").unwrap().conversation.tools.remove("t").unwrap();
        let policy = config.policy(AccessPolicy::vfs_default()).unwrap();
        let files: Arc<dyn ProjectFiles> = Arc::new(FsProjectFiles::open(ws.path()).unwrap());
        Dispatcher::builder("t", Arc::new(policy), files)
            .process(Arc::new(runner()))
            .env([("PATH".to_owned(), "/usr/bin:/bin".to_owned())].into_iter().collect())
            .build()
    };
    let script = format!("echo x > made.txt; echo write=$?; cat {}/s.txt; echo cat=$?", elsewhere.path().display());
    let req = HostRequest::parse("process.run", json!({"program": "sh", "args": ["-c", script]})).unwrap();

    let read_only = dispatcher("filesystem = [{ path = \".\", allow = [\"read\"] }]");
    let out = serde_json::to_value(read_only.handle(&req, &Id::Number(1), &NoEvents).await.unwrap()).unwrap();
    let stdout = out["stdout"].as_str().unwrap();
    assert!(stdout.contains("write=2") && stdout.contains("cat=1") && !stdout.contains("outside"), "{out}");
    assert!(!ws.path().join("made.txt").exists());

    let writable = dispatcher("filesystem = [{ path = \".\", allow = [\"read\", \"write\"] }]");
    let out = serde_json::to_value(writable.handle(&req, &Id::Number(2), &NoEvents).await.unwrap()).unwrap();
    assert!(out["stdout"].as_str().unwrap().contains("write=0"), "{out}");
    assert!(ws.path().join("made.txt").exists());

    let narrowed = dispatcher(
        "filesystem = [{ path = \".\", allow = [\"read\", \"write\"] }, { path = \"src\", allow = [\"read\"] }]",
    );
    let err = narrowed.handle(&req, &Id::Number(3), &NoEvents).await.unwrap_err();
    assert!(
        matches!(&err, HostError::Unavailable(m) if m.contains("'src'") && m.contains("--no-os-sandbox")),
        "{err:?}"
    );
}

/// Runs `sh -c script` under a spec that behaves as on a kernel without Landlock signal scoping.
async fn without_signal_scoping(script: &str) -> std::process::Output {
    let mut spec = SandboxSpec::for_tool(Path::new("/usr/bin/sh"), &[], &[]);
    spec.force_signal_filter = true;
    let mut command = tokio::process::Command::new("/usr/bin/sh");
    command.args(["-c", script]).env_clear().env("PATH", "/usr/bin:/bin").current_dir("/").kill_on_drop(true);
    Arc::new(spec.prepare().unwrap()).install(&mut command);
    command.output().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn without_landlock_signal_scoping_seccomp_keeps_signals_in_the_group() {
    let m = marker(5);
    let mut outsider = std::process::Command::new("sleep").arg(&m).spawn().unwrap();
    let pid = outsider.id();
    let tgkill = libc::SYS_tgkill;
    let script = format!(
        "kill -KILL {pid}; echo kill=$?; /usr/bin/kill -KILL {pid}; echo child-kill=$?; \
         python3 -c 'import ctypes; print(\"tgkill\", ctypes.CDLL(None).syscall({tgkill}, {pid}, {pid}, 9))'; \
         kill -0 {pid}; echo probe=$?"
    );
    let out = without_signal_scoping(&script).await;
    let text = String::from_utf8_lossy(&out.stdout);
    let still_running = outsider.try_wait().unwrap().is_none();
    let _ = outsider.kill();
    let _ = outsider.wait();
    assert!(still_running, "a process outside the group was killed: {text}");
    assert!(text.contains("kill=1") && text.contains("child-kill=1") && text.contains("tgkill -1"), "{text}");
    assert!(text.contains("probe=0"), "signal 0 (does it exist?) is allowed: {text}");

    // Its own group it may signal, and a program may abort.
    let out = without_signal_scoping(&format!("sleep {m} & kill -TERM 0; echo not reached")).await;
    assert_eq!(out.status.signal(), Some(libc::SIGTERM), "{out:?}");
    assert_eq!(survivors(&m), Vec::<i32>::new());
    let out = without_signal_scoping("exec python3 -c 'import os; os.abort()'").await;
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{out:?}");
    let out = without_signal_scoping("python3 -c 'import os; os.abort()'; echo status=$?").await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.trim().strip_prefix("status=").unwrap().parse::<i32>().unwrap() > 128,
        "a descendant's abort still ends it: {text}"
    );
}
