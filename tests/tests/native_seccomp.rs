//! The seccomp filters of the OS sandbox, seen from a real sandboxed `python3` child under real
//! Landlock and seccomp: no x32 syscalls past the x86_64 rules, no listening socket.

#![cfg(all(not(target_arch = "wasm32"), target_os = "linux"))]

use std::path::Path;

use jp_native::sandbox::{ChildCommand, EGRESS_PORT, SandboxSpec};
use tokio::io::AsyncReadExt;

/// Runs `python3 -c script` sandboxed as a tool, with or without the egress network; its stdout
/// and, with the network, the listener of the child's namespace (served from the host's).
async fn sandboxed_python_with(script: &str, egress: bool) -> (String, Option<tokio::net::TcpListener>) {
    let mut spec = SandboxSpec::for_tool(Path::new("/usr/bin/python3"), &[], &[]);
    spec.egress = egress;
    let mut command = ChildCommand::new("/usr/bin/python3");
    command.args(["-c", script]).envs([("PATH", "/usr/bin:/bin")]).current_dir("/").stdin_null();
    let mut child = command.spawn(Some(spec.prepare().unwrap())).unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let listener = child.egress.take();
    let (mut stdout, mut stderr) = (String::new(), String::new());
    let (_, _, status) = tokio::join!(out.read_to_string(&mut stdout), err.read_to_string(&mut stderr), child.wait());
    assert!(status.unwrap().success(), "{stdout} {stderr}");
    (stdout, listener)
}

async fn sandboxed_python(script: &str, egress: bool) -> String {
    sandboxed_python_with(script, egress).await.0
}

/// Whether this kernel runs x32 syscalls for an unsandboxed process (for the log: the filter
/// must hold either way).
fn x32_enabled() -> bool {
    // SAFETY: getpid takes no arguments and has no effect.
    #[allow(unsafe_code)]
    let pid = unsafe { libc::syscall(0x4000_0000 | libc::SYS_getpid) };
    pid == i64::from(std::process::id() as i32)
}

#[cfg(target_arch = "x86_64")]
#[tokio::test(flavor = "multi_thread")]
async fn x32_syscalls_are_refused_so_they_cannot_bypass_the_x86_64_rules() {
    println!("x32 syscalls enabled on this kernel: {}", x32_enabled());
    let (getpid, setsid) = (libc::SYS_getpid, libc::SYS_setsid);
    // The filter answers EPERM, the kernel without x32 ENOSYS: the errno tells which refused.
    let script = format!(
        "import ctypes, os\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         def call(nr):\n    ctypes.set_errno(0)\n    return libc.syscall(nr), ctypes.get_errno()\n\
         print('getpid', call({getpid})[0] == os.getpid())\n\
         print('x32-getpid', *call(0x40000000 + {getpid}))\n\
         print('x32-setsid', *call(0x40000000 + {setsid}))\n\
         print('setsid', *call({setsid}))\n"
    );
    let text = sandboxed_python(&script, false).await;
    let eperm = libc::EPERM;
    assert!(text.contains("getpid True\n"), "a plain syscall still runs: {text}");
    assert!(text.contains(&format!("x32-getpid -1 {eperm}\n")), "x32 getpid refused by the filter: {text}");
    assert!(text.contains(&format!("x32-setsid -1 {eperm}\n")), "a denied syscall's x32 form too: {text}");
    assert!(text.contains(&format!("setsid -1 {eperm}\n")), "{text}");
}

const LISTEN: &str = "import socket\n\
    try:\n    s = socket.socket()\n    s.listen()\n    print('listening on', s.getsockname()[1])\n\
    except OSError as e:\n    print('listen', e.errno)\n\
    try:\n    s = socket.socket()\n    s.accept()\n\
    except OSError as e:\n    print('accept', e.errno)\n";

#[tokio::test(flavor = "multi_thread")]
async fn a_child_with_the_egress_network_connects_to_its_proxy_only_and_cannot_listen() {
    let script = format!(
        "{LISTEN}import socket\n\
         for port in ({EGRESS_PORT}, 80):\n\
         \x20   try:\n\
         \x20       socket.create_connection(('127.0.0.1', port), timeout=10); print('connected', port)\n\
         \x20   except OSError as e:\n\
         \x20       print('refused', port, e.errno)\n"
    );
    let (text, listener) = sandboxed_python_with(&script, true).await;
    let eperm = libc::EPERM;
    // Before: `listen` bound an ephemeral port (Landlock's bind rule never saw it); `accept` on a
    // socket that does not listen was EINVAL.
    assert!(text.contains(&format!("listen {eperm}\n")), "{text}");
    assert!(text.contains(&format!("accept {eperm}\n")), "{text}");
    assert!(text.contains(&format!("connected {EGRESS_PORT}\n")), "the proxy's port is reachable: {text}");
    assert!(text.contains(&format!("refused 80 {}\n", libc::EACCES)), "Landlock refuses every other port: {text}");
    // The connection waits in the namespace listener's backlog, accepted from the host's side.
    let accepted = tokio::time::timeout(std::time::Duration::from_secs(10), listener.unwrap().accept()).await;
    assert!(accepted.is_ok_and(|a| a.is_ok()), "the listener saw the connection");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_without_the_network_cannot_listen_either() {
    let text = sandboxed_python(LISTEN, false).await;
    let eperm = libc::EPERM;
    assert!(text.contains(&format!("listen {eperm}\n")) && text.contains(&format!("accept {eperm}\n")), "{text}");
    assert!(!text.contains("listening"), "{text}");
}

/// A program runs only from a file Landlock lets the child execute: Landlock does not look at a
/// memfd (an internal mount), so an executable one — or running any descriptor with
/// `execveat(AT_EMPTY_PATH)` — would run a program no policy lists (issue 23: an MCP server ran
/// `/bin/sh` that way). A memfd sealed non-executable still works.
#[cfg(target_arch = "x86_64")]
#[tokio::test(flavor = "multi_thread")]
async fn no_program_runs_from_an_executable_memfd_or_a_descriptor() {
    let (memfd_create, execveat) = (libc::SYS_memfd_create, libc::SYS_execveat);
    let script = format!(
        "import ctypes, os\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         def memfd(flags):\n    ctypes.set_errno(0)\n    return libc.syscall({memfd_create}, b'x', flags), ctypes.get_errno()\n\
         print('memfd-default', *memfd(0))\n\
         print('memfd-exec', *memfd(0x10))\n\
         print('memfd-noexec-seal', memfd(0x8)[0] >= 0)\n\
         fd = os.open('/bin/true', os.O_RDONLY)\n\
         argv = (ctypes.c_char_p * 2)(b'true', None)\n\
         ctypes.set_errno(0)\n\
         print('execveat-fd', libc.syscall({execveat}, fd, b'', argv, None, 0x1000), ctypes.get_errno())\n"
    );
    let text = sandboxed_python(&script, false).await;
    let eperm = libc::EPERM;
    assert!(text.contains(&format!("memfd-default -1 {eperm}\n")), "{text}");
    assert!(text.contains(&format!("memfd-exec -1 {eperm}\n")), "{text}");
    assert!(text.contains("memfd-noexec-seal True\n"), "{text}");
    assert!(text.contains(&format!("execveat-fd -1 {eperm}\n")), "{text}");
}
