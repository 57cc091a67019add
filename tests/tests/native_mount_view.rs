//! Issue 33, seen from real sandboxed `python3` children under real Landlock, seccomp and — where
//! unprivileged user namespaces exist — the private mount view of a direct-access process:
//! datagram socket pairs, `clone(CLONE_PARENT)`, changing the parent-death signal, typing into a
//! terminal, device nodes and capabilities are refused to every child; a direct-access child
//! cannot read the workspace's sensitive files or write `.jp/`, and one with an exec list cannot
//! run another program through the ELF loader nor run what it wrote.

#![cfg(all(not(target_arch = "wasm32"), target_os = "linux"))]

use std::path::{Path, PathBuf};

use jp_core::policy::{AccessPolicy, WorkspaceGrant};
use jp_native::sandbox::{ChildCommand, DirectAccess, SandboxSpec, user_namespaces};
use tokio::io::AsyncReadExt;

/// Runs `python3 -c script` under `spec` in `cwd`; its exit code, stdout and stderr.
async fn run(spec: SandboxSpec, cwd: &Path, script: &str) -> (i32, String, String) {
    let mut command = ChildCommand::new("/usr/bin/python3");
    command.args(["-c", script]).envs([("PATH", "/usr/bin:/bin")]).current_dir(cwd).stdin_null();
    let mut child = command.spawn(Some(spec.prepare().unwrap())).unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let (mut stdout, mut stderr) = (String::new(), String::new());
    let (_, _, status) = tokio::join!(out.read_to_string(&mut stdout), err.read_to_string(&mut stderr), child.wait());
    (status.unwrap().code().unwrap_or(-1), stdout, stderr)
}

fn python_tool() -> SandboxSpec {
    SandboxSpec::for_tool(Path::new("/usr/bin/python3"), &[], &[])
}

const PRELUDE: &str = "import ctypes, os, socket, errno\n\
    libc = ctypes.CDLL(None, use_errno=True)\n\
    def sys(nr, *args):\n    ctypes.set_errno(0)\n    r = libc.syscall(nr, *args)\n    return r, ctypes.get_errno()\n";

#[cfg(target_arch = "x86_64")]
#[tokio::test(flavor = "multi_thread")]
async fn every_child_is_refused_datagram_pairs_clone_parent_a_new_death_signal_and_tiocsti() {
    // A pathname datagram socket outside, as the system log or a user service would be.
    let outside = tempfile::tempdir().unwrap();
    let sock_path = outside.path().join("log.sock");
    let receiver = std::os::unix::net::UnixDatagram::bind(&sock_path).unwrap();
    receiver.set_nonblocking(true).unwrap();
    let script = format!(
        "{PRELUDE}\
         try:\n    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n    a.sendto(b'escaped', {path:?}); print('dgram sent')\n\
         except OSError as e:\n    print('dgram', e.errno)\n\
         for kind in ('SOCK_STREAM', 'SOCK_SEQPACKET'):\n    a, b = socket.socketpair(socket.AF_UNIX, getattr(socket, kind)); a.send(b'x'); print(kind, b.recv(1))\n\
         r, e = sys({clone}, 0x8000 | 17, 0, 0, 0, 0)\n\
         if r == 0: os._exit(0)\n\
         print('clone-parent', r, e)\n\
         print('pdeathsig-clear', libc.prctl(1, 0, 0, 0, 0), ctypes.get_errno())\n\
         print('pdeathsig-usr1', libc.prctl(1, 10, 0, 0, 0), ctypes.get_errno())\n\
         print('pdeathsig-kill', libc.prctl(1, 9, 0, 0, 0))\n\
         sig = ctypes.c_int(0); libc.prctl(2, ctypes.byref(sig), 0, 0, 0); print('pdeathsig-now', sig.value)\n\
         c = ctypes.c_char(b'x')\n\
         print('tiocsti', *sys({ioctl}, 0, 0x5412, ctypes.byref(c)))\n",
        path = sock_path.to_str().unwrap(),
        clone = libc::SYS_clone,
        ioctl = libc::SYS_ioctl,
    );
    let (code, text, err) = run(python_tool(), Path::new("/"), &script).await;
    assert_eq!(code, 0, "{text} {err}");
    let eperm = libc::EPERM;
    assert!(text.contains(&format!("dgram {eperm}\n")), "a datagram pair is refused: {text}");
    assert!(receiver.recv(&mut [0u8; 64]).is_err(), "nothing reached the socket outside");
    assert!(text.contains("SOCK_STREAM b'x'\n") && text.contains("SOCK_SEQPACKET b'x'\n"), "{text}");
    assert!(text.contains(&format!("clone-parent -1 {eperm}\n")), "{text}");
    assert!(text.contains(&format!("pdeathsig-clear -1 {eperm}\n")), "{text}");
    assert!(text.contains(&format!("pdeathsig-usr1 -1 {eperm}\n")), "{text}");
    assert!(text.contains("pdeathsig-kill 0\npdeathsig-now 9\n"), "{text}");
    // EPERM from the filter (stdin is /dev/null: the kernel alone would say ENOTTY).
    assert!(text.contains(&format!("tiocsti -1 {eperm}\n")), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn no_child_makes_a_device_node_or_keeps_a_capability_whoever_runs_jp() {
    let dir = tempfile::tempdir().unwrap();
    let spec = SandboxSpec {
        read_write: vec![dir.path().to_path_buf()],
        read_only: vec![PathBuf::from("/proc")],
        ..python_tool()
    };
    let script = "import os, stat\n\
        for name, mode in (('tty', stat.S_IFCHR), ('disk', stat.S_IFBLK), ('fifo', stat.S_IFIFO)):\n\
        \x20   try:\n        os.mknod(name, mode | 0o600, os.makedev(5, 0)); print(name, 'made')\n\
        \x20   except OSError as e:\n        print(name, e.errno)\n\
        for line in open('/proc/self/status'):\n\
        \x20   if line.startswith('Cap'): print(line.strip())\n";
    let (code, text, err) = run(spec, dir.path(), script).await;
    assert_eq!(code, 0, "{text} {err}");
    let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    println!("jp runs as root: {root}\n{text}");
    let eperm = libc::EPERM;
    assert!(text.contains(&format!("tty {eperm}\n")) && text.contains(&format!("disk {eperm}\n")), "{text}");
    assert!(text.contains("fifo made\n"), "a FIFO is no device: {text}");
    assert!(!dir.path().join("tty").exists());
    let cap = |name: &str| text.lines().find_map(|l| l.strip_prefix(name)).map(str::trim).unwrap_or("?").to_owned();
    for set in ["CapInh:", "CapPrm:", "CapEff:", "CapAmb:"] {
        assert_eq!(cap(set), "0000000000000000", "{set} {text}");
    }
    // The bounding set matters where there is something to bound: root (or a user namespace).
    if root {
        assert_eq!(cap("CapBnd:"), "0000000000000000", "{text}");
    }
}

/// A workspace with sensitive files, a `.jp/` and an ordinary file.
fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    for (rel, text) in [
        (".env", "TOKEN=hunter2\n"),
        ("deploy/.env.production", "DB=secret\n"),
        (".jp/config.toml", "# approved\n"),
        ("README.md", "# demo\n"),
    ] {
        std::fs::create_dir_all(ws.path().join(rel).parent().unwrap()).unwrap();
        std::fs::write(ws.path().join(rel), text).unwrap();
    }
    // Sensitive by name, links: one to a file inside (hidden there), one out of the workspace.
    std::fs::create_dir_all(ws.path().join("config")).unwrap();
    std::fs::write(ws.path().join("config/staging.txt"), "STAGING=secret\n").unwrap();
    std::os::unix::fs::symlink("../config/staging.txt", ws.path().join("deploy/.env.staging")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", ws.path().join(".env.outside")).unwrap();
    ws
}

fn direct(ws: &Path, scratch: &Path, policy: &AccessPolicy, spec: SandboxSpec) -> SandboxSpec {
    spec.direct_access(&DirectAccess {
        workspace: ws,
        grant: WorkspaceGrant { read: true, write: true },
        exec_workspace: false,
        scratch,
        system_config: false,
        network: false,
        policy,
    })
}

const PROBE: &str = "import os\n\
    def attempt(what, f):\n\
    \x20   try:\n        r = f(); print(what, 'ok', repr(r)[:40])\n\
    \x20   except OSError as e:\n        print(what, e.errno)\n\
    attempt('read-env', lambda: open('.env').read())\n\
    attempt('read-deep-env', lambda: open('deploy/.env.production').read())\n\
    attempt('write-env', lambda: open('.env', 'w').write('x'))\n\
    attempt('unlink-env', lambda: os.unlink('.env'))\n\
    attempt('read-readme', lambda: open('README.md').read())\n\
    attempt('read-linked', lambda: open('deploy/.env.staging').read())\n\
    attempt('read-link-target', lambda: open('config/staging.txt').read())\n\
    attempt('read-outside-link', lambda: open('.env.outside').read())\n\
    attempt('write-config', lambda: open('.jp/config.toml', 'a').write('[x]'))\n\
    attempt('unlink-config', lambda: os.unlink('.jp/config.toml'))\n\
    attempt('rename-jp', lambda: os.rename('.jp', 'moved'))\n\
    attempt('new-in-jp', lambda: open('.jp/extra.toml', 'w').write('x'))\n\
    attempt('write-notes', lambda: open('notes.txt', 'w').write('fine'))\n\
    import sys\n\
    attempt('stat-host-tmp', lambda: os.stat(sys.argv[1]).st_size)\n";

#[tokio::test(flavor = "multi_thread")]
async fn a_direct_access_child_cannot_read_sensitive_files_or_change_jp_dir() {
    if let Err(why) = user_namespaces() {
        // Landlock alone then: `jp sandbox status` and SECURITY.md say so.
        println!("no mount view on this machine: {why}");
        return;
    }
    let ws = workspace();
    let real = std::fs::canonicalize(ws.path()).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let policy = AccessPolicy::default();
    let spec = direct(&real, scratch.path(), &policy, python_tool());
    let view = spec.view.clone().unwrap();
    assert!(view.masked.contains(&real.join(".env")) && view.masked.contains(&real.join("deploy/.env.production")));
    assert!(view.masked.contains(&real.join("config/staging.txt")), "{view:?}");
    assert!(!view.masked.iter().any(|p| !p.starts_with(&real)), "nothing outside is covered: {view:?}");
    // A file in the host's /tmp, beside the workspace: Landlock alone would let it be stat'ed.
    let host_tmp = tempfile::Builder::new().prefix("jp-host-tmp-").tempfile_in("/tmp").unwrap();
    let script = format!("import sys; sys.argv = ['probe', {:?}]\n{PROBE}", host_tmp.path().to_str().unwrap());
    let (code, text, err) = run(spec, &real, &script).await;
    println!("{text}");
    assert_eq!(code, 0, "{text} {err}");
    let (eacces, erofs, ebusy) = (libc::EACCES, libc::EROFS, libc::EBUSY);
    assert!(text.contains(&format!("read-env {eacces}\n")), "{text}");
    assert!(text.contains(&format!("read-deep-env {eacces}\n")), "{text}");
    assert!(text.contains(&format!("read-linked {eacces}\n")), "{text}");
    assert!(text.contains(&format!("read-link-target {eacces}\n")), "{text}");
    assert!(text.contains(&format!("read-outside-link {eacces}\n")), "Landlock refuses outside: {text}");
    assert!(text.contains(&format!("write-env {eacces}\n")), "{text}");
    assert!(text.contains(&format!("unlink-env {ebusy}\n")), "{text}");
    assert!(text.contains("read-readme ok '# demo\\n'\n"), "the rest of the workspace as granted: {text}");
    assert!(text.contains(&format!("write-config {erofs}\n")), "{text}");
    assert!(text.contains(&format!("unlink-config {erofs}\n")), "{text}");
    assert!(text.contains(&format!("rename-jp {ebusy}\n")), "{text}");
    assert!(text.contains(&format!("new-in-jp {erofs}\n")), "{text}");
    assert!(text.contains("write-notes ok 4\n"), "{text}");
    // A private /tmp: the host's is not there, the workspace under it is.
    assert!(text.contains(&format!("stat-host-tmp {}\n", libc::ENOENT)), "{text}");
    // Nothing changed outside the child's view.
    assert_eq!(std::fs::read_to_string(real.join(".env")).unwrap(), "TOKEN=hunter2\n");
    assert_eq!(std::fs::read_to_string(real.join(".jp/config.toml")).unwrap(), "# approved\n");
    assert_eq!(std::fs::read_to_string(real.join("notes.txt")).unwrap(), "fine");
}

#[cfg(target_arch = "x86_64")]
#[tokio::test(flavor = "multi_thread")]
async fn with_an_exec_list_neither_the_loader_nor_a_written_program_runs_anything_else() {
    if let Err(why) = user_namespaces() {
        println!("no mount view on this machine: {why}");
        return;
    }
    let ws = workspace();
    let real = std::fs::canonicalize(ws.path()).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let policy = AccessPolicy::default();
    let python = std::fs::canonicalize("/usr/bin/python3").unwrap();
    let loader = std::fs::canonicalize("/lib64/ld-linux-x86-64.so.2").unwrap();
    let spec = direct(&real, scratch.path(), &policy, python_tool().exec_only(vec![python.clone(), loader.clone()]));
    let script = format!(
        "import subprocess, shutil, os\n\
         def attempt(what, argv):\n\
         \x20   try:\n        r = subprocess.run(argv, capture_output=True); print(what, r.returncode, r.stdout.strip(), r.stderr.strip()[-60:])\n\
         \x20   except OSError as e:\n        print(what, 'errno', e.errno)\n\
         attempt('sh', ['/bin/sh', '-c', 'echo pwned'])\n\
         attempt('loader-sh', [{loader:?}, '/bin/sh', '-c', 'echo pwned'])\n\
         shutil.copy('/bin/true', 'mytrue'); os.chmod('mytrue', 0o755)\n\
         attempt('written', ['./mytrue'])\n\
         attempt('loader-written', [{loader:?}, './mytrue'])\n\
         attempt('python', [{python:?}, '-c', 'print(\"still runs\")'])\n",
        loader = loader.to_str().unwrap(),
        python = python.to_str().unwrap(),
    );
    let (code, text, err) = run(spec, &real, &script).await;
    println!("{text}");
    assert_eq!(code, 0, "{text} {err}");
    assert_eq!(text.lines().filter(|l| l.starts_with("loader-")).count(), 2, "{text}");
    assert!(text.contains(&format!("sh errno {}\n", libc::EACCES)), "{text}");
    assert!(text.contains("written errno"), "a program it wrote does not run: {text}");
    for line in text.lines().filter(|l| l.starts_with("loader-")) {
        assert!(!line.contains("pwned") && !line.contains(" 0 b''"), "the loader maps nothing noexec: {line}");
        assert!(line.contains("failed to map segment") || line.contains("errno"), "{line}");
    }
    assert!(text.contains("python 0 b'still runs'"), "the listed program still runs: {text}");
}
