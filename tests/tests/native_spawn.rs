//! Every runtime spawns through the fork-free path (`jp_native::sandbox::ChildCommand`): nothing a
//! tool started outlives a dropped call, every child is reaped, and a child spawned under the OS
//! sandbox is really restricted. Real subprocesses, real Landlock and seccomp.

#![cfg(all(not(target_arch = "wasm32"), target_os = "linux"))]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jp_core::cancel::CancellationToken;
use jp_core::runtime::{Config, ToolCall, ToolConfig};
use jp_native::files::FsProjectFiles;
use jp_native::runtime::services::{HostServices, NoFiles};
use jp_native::runtime::stdio::StdioRuntime;
use jp_native::runtime::vfs::VfsRuntime;
use jp_native::sandbox::{ChildCommand, SandboxMode, SandboxSpec};
use serde_json::Map;
use tokio::io::AsyncReadExt;

const TOOL: &str = env!("CARGO_BIN_EXE_jp-test-tools");

fn config(runtime: &str, command: &str) -> ToolConfig {
    let text = format!("[conversation.tools.t]\nsource = \"local\"\nruntime = {runtime:?}\ncommand = {command:?}\n");
    Config::from_toml(&text, "test.toml").unwrap().conversation.tools.remove("t").unwrap()
}

fn call() -> ToolCall {
    ToolCall {
        name: "t".into(),
        id: "call-1".into(),
        arguments: Map::new(),
        answers: Map::new(),
        cancel: CancellationToken::new(),
        inquirer: None,
        policy: None,
    }
}

/// `(pid, state)` of every process whose command line contains `marker`, zombies included.
fn processes_with(marker: &str) -> Vec<(String, char)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let Some((name, rest)) = stat.split_once(" (").and_then(|(_, r)| r.rsplit_once(") ")) else { continue };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(marker) || name.contains(marker) {
            found.push((pid, rest.chars().next().unwrap_or('?')));
        }
    }
    found
}

/// Children of this process that exited and were never reaped.
fn zombie_children() -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        let field = |k: &str| status.lines().find_map(|l| l.strip_prefix(k)).map(str::trim).unwrap_or("");
        if field("PPid:") == me && field("State:").starts_with('Z') {
            found.push(format!("{} {}", entry.file_name().to_string_lossy(), field("Name:")));
        }
    }
    found
}

fn marker(name: &str) -> String {
    format!("jp-spawn-{name}-{}", std::process::id())
}

/// Wait up to 10 s for `done`.
async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}

/// Runs `run` in a task until `count` processes carrying `m` are up, drops it, and checks that
/// none of them is left, not even as a zombie of ours.
async fn drop_mid_call<F: Future + Send + 'static>(run: F, m: &str, count: usize)
where
    F::Output: Send,
{
    let task = tokio::spawn(run);
    assert!(eventually(|| processes_with(m).len() >= count).await, "started: {:?}", processes_with(m));
    task.abort();
    let _ = task.await;
    assert!(eventually(|| processes_with(m).is_empty()).await, "left behind: {:?}", processes_with(m));
    assert!(eventually(|| zombie_children().is_empty()).await, "unreaped: {:?}", zombie_children());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_vfs_call_leaves_no_process_and_no_zombie() {
    let ws = tempfile::tempdir().unwrap();
    for mode in [SandboxMode::Enforce, SandboxMode::Disabled] {
        let m = marker(&format!("vfs-{mode:?}"));
        let vfs = VfsRuntime::new(Arc::new(FsProjectFiles::open(ws.path()).unwrap()), ws.path()).sandbox(mode);
        let cfg = config("vfs", &format!("{TOOL} raw hang {m}"));
        drop_mid_call(async move { vfs.run(call(), &cfg, None).await }, &m, 1).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_stdio_call_leaves_no_process_and_no_zombie() {
    let ws = tempfile::tempdir().unwrap();
    for mode in [SandboxMode::Enforce, SandboxMode::Disabled] {
        let m = marker(&format!("stdio-{mode:?}"));
        // The tool and a grandchild in the background, both shells looping on a script whose
        // name carries the marker.
        let child = ws.path().join(format!("{m}.sh"));
        std::fs::write(&child, "while :; do sleep 1; done\n").unwrap();
        let tool = ws.path().join(format!("tool-{mode:?}.sh"));
        let sh = |c: &Path| format!("/bin/sh {}", c.display());
        std::fs::write(&tool, format!("{} &\nexec {}\n", sh(&child), sh(&child))).unwrap();
        let services = HostServices::new(Arc::new(NoFiles::DIRECT), ws.path())
            .env([("PATH".into(), "/usr/bin:/bin".into())].into());
        let stdio = StdioRuntime::with_services(services).sandbox(mode);
        let cfg = config("stdio", &sh(&tool));
        drop_mid_call(async move { stdio.run(call(), &cfg, None).await }, &m, 2).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_child_is_reaped_and_reports_its_status() {
    let ws = tempfile::tempdir().unwrap();
    let vfs = VfsRuntime::new(Arc::new(FsProjectFiles::open(ws.path()).unwrap()), ws.path());
    let ok = config("vfs", &format!("{TOOL} raw no-stdin"));
    let failing = config("vfs", &format!("{TOOL} raw exit-silently"));
    for _ in 0..10 {
        vfs.run(call(), &ok, None).await.unwrap();
        let out = format!("{:?}", vfs.run(call(), &failing, None).await.unwrap());
        assert!(out.contains("exited with status 3"), "{out}");
    }
    assert!(eventually(|| zombie_children().is_empty()).await, "unreaped: {:?}", zombie_children());
}

/// A child spawned straight through `ChildCommand` (what `process.run` uses): exactly the given
/// environment, the given working directory, `/dev/null` as stdin, and the sandbox enforced.
#[tokio::test(flavor = "multi_thread")]
async fn a_child_command_gets_exactly_its_environment_cwd_and_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let secret = tempfile::tempdir().unwrap();
    std::fs::write(secret.path().join("key"), "s3cret").unwrap();
    let script = format!(
        "pwd; env | sort; cat; echo stdin-closed; cat {}/key 2>/dev/null || echo denied; exit 7",
        secret.path().display()
    );
    let spec = SandboxSpec {
        read_only: vec![dir.path().to_path_buf()],
        ..SandboxSpec::for_tool(Path::new("/bin/sh"), &[], &[])
    };
    let mut command = ChildCommand::new("/bin/sh");
    command.args(["-c", &script]).envs([("ONLY", "this")]).current_dir(dir.path()).stdin_null();
    let mut child = command.spawn(Some(spec.prepare().unwrap())).unwrap();
    assert!(child.stdin.is_none());
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).await.unwrap();
    let status = child.wait().await.unwrap();
    assert_eq!(status.code(), Some(7));
    assert_eq!(out.lines().next(), Some(dir.path().to_str().unwrap()), "{out}");
    // (`sh` adds PWD and the like itself; nothing of the host's environment is there.)
    assert!(out.contains("\nONLY=this\n") && !out.contains("CARGO") && !out.contains("HOME="), "{out}");
    assert!(out.ends_with("stdin-closed\ndenied\n"), "{out}");
    // Without a sandbox the same file is readable: the denial above was the sandbox.
    let mut command = ChildCommand::new("/bin/cat");
    command.args([secret.path().join("key")]);
    let mut child = command.spawn(None).unwrap();
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).await.unwrap();
    assert_eq!((child.wait().await.unwrap().code(), out.as_str()), (Some(0), "s3cret"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_or_forbidden_program_is_the_spawn_error() {
    let err = ChildCommand::new("/nonexistent/tool").spawn(None).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let tool = dir.path().join("tool");
    std::fs::copy("/bin/true", &tool).unwrap();
    let spec = SandboxSpec::for_tool(Path::new("/bin/sh"), &[], &[]);
    let err = ChildCommand::new(&tool).spawn(Some(spec.prepare().unwrap())).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EACCES), "{err}");
    assert!(eventually(|| zombie_children().is_empty()).await, "unreaped: {:?}", zombie_children());
}
