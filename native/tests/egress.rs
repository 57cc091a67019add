//! Per-host egress for direct-access processes (issue 26 part 1), end to end through the real
//! `jp`: a stdio tool, an MCP server (the official Python SDK's server side) and a `run` child,
//! each allowed `http://127.0.0.1:A`, run `tests/egress/probe.py`. Through the proxy variables
//! they reach server A (plain HTTP and a CONNECT tunnel) and are refused B (another port) and C
//! (127.0.0.2, same port) with the policy's reason; without the proxy (a direct connect, UDP, a
//! DNS query, the resolver) they reach nothing. The test's own servers count what arrived, the
//! decisions appear in `--trace`, and nothing the call started is left running.

#![cfg(target_os = "linux")]

use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

mod support;
use support::{approve_config, try_approve_config};

const JP: &str = env!("CARGO_BIN_EXE_jp");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// A real HTTP server on `addr` answering every request with `hello from NAME`, recording each
/// request line; stopped when dropped.
struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn start(addr: &str, name: &'static str) -> Self {
        let listener = TcpListener::bind(addr).unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            while !st.load(Ordering::SeqCst) {
                let Ok((mut c, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                c.set_nonblocking(false).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match c.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&head);
                s.lock().unwrap().push(text.lines().next().unwrap_or_default().to_owned());
                let body = format!("hello from {name}");
                let _ =
                    write!(c, "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
            }
        });
        Self { port, seen, stop }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// A UDP server counting datagrams (and answering them, so a probe would see it got through).
struct Udp {
    port: u16,
    count: Arc<Mutex<usize>>,
    stop: Arc<AtomicBool>,
}

impl Udp {
    fn start() -> Self {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let port = socket.local_addr().unwrap().port();
        let (count, stop) = (Arc::new(Mutex::new(0)), Arc::new(AtomicBool::new(false)));
        let (c, st) = (count.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            while !st.load(Ordering::SeqCst) {
                if let Ok((_, from)) = socket.recv_from(&mut buf) {
                    *c.lock().unwrap() += 1;
                    let _ = socket.send_to(b"pong", from);
                }
            }
        });
        Self { port, count, stop }
    }
}

impl Drop for Udp {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Server A (allowed), B (another port), C (127.0.0.2, A's port) and the UDP server.
struct World {
    a: Server,
    b: Server,
    c: Server,
    udp: Udp,
}

impl World {
    fn start() -> Self {
        let a = Server::start("127.0.0.1:0", "A");
        let b = Server::start("127.0.0.1:0", "B");
        let c = Server::start(&format!("127.0.0.2:{}", a.port), "C");
        Self { a, b, c, udp: Udp::start() }
    }

    /// The probe's arguments.
    fn args(&self) -> [String; 4] {
        [self.a.port.to_string(), self.b.port.to_string(), "127.0.0.2".into(), self.udp.port.to_string()]
    }

    fn allow(&self) -> String {
        // Plain HTTP to A by checked requests, and a tunnel to it (as TLS would need).
        format!("network = {{ allow = [\"http://127.0.0.1:{0}\", \"https://127.0.0.1:{0}\"] }}", self.a.port)
    }

    /// What the probe reported and what the servers saw: A reached through the proxy only, B, C
    /// and UDP never; every refusal the policy's.
    fn check(&self, report: &Value) {
        let get = |k: &str| report[k].as_str().unwrap_or_default().to_owned();
        assert_eq!(get("proxy_env"), "http://127.0.0.1:3128", "{report:#}");
        assert_eq!(get("proxy_a"), "200 hello from A", "{report:#}");
        assert_eq!(get("tunnel_a"), "200 hello from A", "{report:#}");
        for k in ["proxy_b", "proxy_c", "tunnel_b", "tunnel_c"] {
            let v = get(k);
            assert!(v.starts_with("403") && v.contains("Access denied"), "{k}: {report:#}");
        }
        for k in ["direct_a", "direct_b", "direct_c", "dns"] {
            assert!(get(k).starts_with("error"), "{k} must fail without the proxy: {report:#}");
        }
        for k in ["udp", "dns_udp"] {
            assert!(!get(k).starts_with("answered"), "{k}: {report:#}");
        }
        let a = self.a.seen();
        assert!(a.iter().any(|l| l.starts_with("GET /a ")), "{a:?}");
        assert!(a.iter().any(|l| l.starts_with("GET /tunnel ")), "{a:?}");
        assert!(!a.iter().any(|l| l.contains("/direct")), "a direct request reached A: {a:?}");
        assert_eq!(self.b.seen(), Vec::<String>::new(), "B was reached");
        assert_eq!(self.c.seen(), Vec::<String>::new(), "C was reached");
        assert_eq!(*self.udp.count.lock().unwrap(), 0, "a datagram got out");
    }

    /// `--trace` shows each decision: allowed for A, denied for B and C, by both ways in.
    fn check_trace(&self, stderr: &str) {
        let (a, b) = (self.a.port, self.b.port);
        for (line, decision) in [
            (format!("GET http://127.0.0.1:{a}/a"), "allow"),
            (format!("net.connect 127.0.0.1:{a} → allow"), "allow"),
            (format!("GET http://127.0.0.1:{b}/b"), "deny"),
            (format!("net.connect 127.0.0.1:{b} → deny"), "deny"),
            (format!("GET http://127.0.0.2:{a}/c"), "deny"),
            (format!("net.connect 127.0.0.2:{a} → deny"), "deny"),
        ] {
            assert!(
                stderr.lines().any(|l| l.starts_with("trace: net.") && l.contains(&line) && l.contains(decision)),
                "no trace line with {line:?} → {decision} in:\n{stderr}"
            );
        }
    }
}

fn workspace(config: &str) -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    ws
}

fn jp(ws: &Path, args: &[&str], env: &[(&str, &Path)]) -> (i32, String, String) {
    let mut command = Command::new(JP);
    // The host's own proxy variables must not reach a tool; programs from the system's PATH.
    command
        .args(args)
        .current_dir(ws)
        .env("HTTP_PROXY", "http://127.0.0.1:1")
        .env("NO_PROXY", "*")
        .env("PATH", "/usr/local/bin:/usr/bin:/bin");
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// The probe's JSON line in a tool's output.
fn report(out: &str) -> Value {
    let line = out.lines().find(|l| l.trim_start().starts_with('{')).unwrap_or_else(|| panic!("no report in {out}"));
    serde_json::from_str(line.trim()).unwrap()
}

/// No process whose command line names `marker` is left.
fn nothing_left(marker: &str) {
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(marker))
        .collect();
    assert!(left.is_empty(), "left running after the call: {left:?}");
}

#[test]
fn a_stdio_tool_reaches_only_its_origin_and_only_through_the_proxy() {
    let world = World::start();
    let probe = repo().join("tests/egress/probe.py");
    let [a, b, c, u] = world.args();
    let config = format!(
        "[conversation.tools.probe]\nsource = \"local\"\ncommand = \"/usr/bin/python3 {} {a} {b} {c} {u}\"\nparameters = {{}}\n[conversation.tools.probe.access]\nfilesystem = [{{ path = \".\", allow = [\"read\"] }}]\n{}\n",
        probe.display(),
        world.allow()
    );
    let ws = workspace(&config);
    approve_config(ws.path());
    let (code, out, err) = jp(ws.path(), &["tool", "call", "probe", "--trace"], &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    world.check(&report(&out));
    world.check_trace(&err);
    nothing_left(&format!("probe.py {a} {b}"));
}

#[test]
fn an_mcp_server_reaches_only_its_origin_and_only_through_the_proxy() {
    let world = World::start();
    let venv = mcp_venv();
    let site = std::fs::read_dir(venv.join("lib")).unwrap().flatten().next().unwrap().path().join("site-packages");
    let dir = repo().join("tests/egress");
    let config = format!(
        "[mcp.servers.egress]\ncommand = \"/usr/bin/python3\"\nargs = [{:?}]\nenv = [\"PYTHONPATH\"]\nread_paths = [{dir:?}, {venv:?}]\ntools = [\"probe\"]\n[mcp.servers.egress.access]\nfilesystem = [{{ path = \".\", allow = [\"read\"] }}]\n{}\n",
        dir.join("egress_server.py"),
        world.allow()
    );
    let ws = workspace(&config);
    approve_config(ws.path());
    let [a, b, c, u] = world.args();
    let args = [format!("a={a}"), format!("b={b}"), format!("c_host={c}"), format!("u={u}")];
    let mut argv = vec!["tool", "call", "egress.probe", "--trace"];
    argv.extend(args.iter().map(String::as_str));
    let (code, out, err) = jp(ws.path(), &argv, &[("PYTHONPATH", &site)]);
    assert_eq!(code, 0, "{out}\n{err}");
    world.check(&report(&out));
    world.check_trace(&err);
    nothing_left("egress_server.py");
}

#[test]
fn a_run_child_reaches_only_its_origin_and_only_through_the_proxy() {
    let world = World::start();
    let [a, b, c, u] = world.args();
    let config = format!(
        "[conversation.tools.run]\nsource = \"builtin\"\n[conversation.tools.run.access]\nfilesystem = [{{ path = \".\", allow = [\"read\"] }}]\ncommands = {{ python3 = {{ args = [[\"**\"]] }} }}\n{}\n",
        world.allow()
    );
    let ws = workspace(&config);
    // The child reads the probe from the workspace (its only readable tree besides the system).
    std::fs::copy(repo().join("tests/egress/probe.py"), ws.path().join("probe.py")).unwrap();
    approve_config(ws.path());
    let call = serde_json::json!({ "program": "python3", "args": ["probe.py", a, b, c, u] }).to_string();
    let (code, out, err) = jp(ws.path(), &["tool", "call", "run", "--trace", "--args", &call], &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    world.check(&report(&out));
    world.check_trace(&err);
    nothing_left(&format!("probe.py {a} {b}"));
}

#[test]
fn network_rules_finer_than_their_origin_refuse_a_direct_process_before_it_starts() {
    let marker = tempfile::tempdir().unwrap();
    let ran = marker.path().join("ran");
    let config = format!(
        "[conversation.tools.finer]\nsource = \"local\"\ncommand = \"/usr/bin/touch {}\"\nparameters = {{}}\n[conversation.tools.finer.access]\nfilesystem = [{{ path = \".\", allow = [\"read\"] }}]\nnetwork = {{ allow = [{{ url = \"http://127.0.0.1:9/api\", methods = [\"GET\"] }}] }}\n",
        ran.display()
    );
    let ws = workspace(&config);
    assert!(try_approve_config(ws.path()));
    let (code, out, err) = jp(ws.path(), &["tool", "call", "finer"], &[]);
    assert_ne!(code, 0, "{out}");
    let text = format!("{out}{err}");
    assert!(
        text.contains("cannot be held") && text.contains("per host and port") && text.contains("127.0.0.1:9"),
        "{text}"
    );
    assert!(!ran.exists(), "the tool ran");
}

#[test]
fn sandbox_status_says_whether_per_host_egress_holds() {
    let out = Command::new(JP).args(["sandbox", "status", "--json"]).output().unwrap();
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    // TOOLCHAIN.md: unprivileged user namespaces work on this machine.
    assert_eq!(status["egress"], true, "{status:#}");
    let out = Command::new(JP).args(["sandbox", "status"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("per-host egress:         enforced"));
}

/// The origins `jp policy suggest` proposed (the lines of its `# adds network: …` notes), and
/// the origins the run's `--trace` shows refused — `net.http "GET URL"` and `net.connect
/// host:port` → deny — which must be the same: nothing unused is proposed.
fn proposed_and_refused(stderr: &str) -> (Vec<String>, Vec<String>) {
    let mut proposed: Vec<String> =
        stderr.lines().filter_map(|l| l.strip_prefix("# adds network: ")).map(str::to_owned).collect();
    let mut refused: Vec<String> = stderr
        .lines()
        .filter(|l| l.starts_with("trace: net.") && l.contains("→ deny"))
        .filter_map(|l| {
            let target = l.split_whitespace().nth(2)?.trim_matches('"');
            if l.starts_with("trace: net.http") {
                let url = l.split_whitespace().nth(3)?.trim_matches('"');
                let u = url::Url::parse(url).ok()?;
                Some(format!("http://{}:{}", u.host_str()?, u.port_or_known_default()?))
            } else {
                Some(format!("https://{target}"))
            }
        })
        .collect();
    for v in [&mut proposed, &mut refused] {
        v.sort();
        v.dedup();
    }
    (proposed, refused)
}

/// `jp policy suggest ARGS` in `ws`: exit code and stderr.
fn suggest(ws: &Path, args: &[&str], env: &[(&str, &Path)]) -> (i32, String, String) {
    let mut argv = vec!["policy", "suggest"];
    argv.extend(args);
    jp(ws, &argv, env)
}

#[test]
fn learning_mode_proposes_just_the_origins_a_stdio_tool_was_refused() {
    let world = World::start();
    let (a, b) = (world.a.port, world.b.port);
    let dir = repo().join("tests/egress");
    let config = format!(
        "[conversation.tools.fetch]\nsource = \"local\"\ncommand = \"/usr/bin/python3 fetch.py\"\nparameters = {{}}\nread_paths = [{dir:?}]\n[conversation.tools.fetch.access]\nfilesystem = [{{ path = \".\", allow = [\"read\"] }}]\n"
    );
    let ws = workspace(&config);
    // Plain HTTP to A through the proxy, a tunnel to B: then it goes on, whatever the answers.
    let script = format!(
        "import sys\nsys.path.insert(0, {dir:?})\nfrom probe import get, tunnel\nsys.stdin.read()\nprint(get('http://127.0.0.1:{a}/a'), '|', tunnel('127.0.0.1', {b}))\n"
    );
    std::fs::write(ws.path().join("fetch.py"), script).unwrap();
    approve_config(ws.path());
    let (code, out, err) = suggest(ws.path(), &["--write", "--", "tool", "call", "fetch", "--trace"], &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("403") && !out.contains("hello from"), "refused, not widened, during the run: {out}");
    let (proposed, refused) = proposed_and_refused(&err);
    assert_eq!(proposed, [format!("http://127.0.0.1:{a}"), format!("https://127.0.0.1:{b}")], "{err}");
    assert_eq!(proposed, refused, "{err}");
    assert!(err.contains("review and approve it with: jp trust"), "{err}");
    // The written file is not used until approved, like any change.
    let (code, _, err) = jp(ws.path(), &["tool", "call", "fetch"], &[]);
    assert_eq!(code, 2, "{err}");
    approve_config(ws.path());
    let (code, out, err) = suggest(ws.path(), &["--", "tool", "call", "fetch"], &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("200 hello from A") && out.contains("200 hello from B"), "{out}\n{err}");
    assert!(err.contains("the configuration needs no change"), "{err}");
    assert!(world.c.seen().is_empty());
}

#[test]
fn learning_mode_proposes_just_the_origins_an_mcp_server_was_refused() {
    let world = World::start();
    let venv = mcp_venv();
    let site = std::fs::read_dir(venv.join("lib")).unwrap().flatten().next().unwrap().path().join("site-packages");
    // The server and the probe copied into the workspace, under a name of their own: the other
    // tests, running at the same time, look for their `egress_server.py` left running.
    let ws = workspace("");
    let dir = repo().join("tests/egress");
    std::fs::copy(dir.join("egress_server.py"), ws.path().join("learning_server.py")).unwrap();
    std::fs::copy(dir.join("probe.py"), ws.path().join("probe.py")).unwrap();
    let config = format!(
        "[mcp.servers.egress]\ncommand = \"/usr/bin/python3\"\nargs = [\"learning_server.py\"]\nenv = [\"PYTHONPATH\"]\nread_paths = [{venv:?}]\ntools = [\"probe\"]\n[mcp.servers.egress.access]\nfilesystem = [{{ path = \".\", allow = [\"read\"] }}]\n"
    );
    std::fs::write(ws.path().join(".jp/config.toml"), config).unwrap();
    approve_config(ws.path());
    let [a, b, c, u] = world.args();
    let args = [format!("a={a}"), format!("b={b}"), format!("c_host={c}"), format!("u={u}")];
    let mut argv = vec!["--write", "--", "tool", "call", "egress.probe", "--trace"];
    argv.extend(args.iter().map(String::as_str));
    let (code, out, err) = suggest(ws.path(), &argv, &[("PYTHONPATH", &site)]);
    assert_eq!(code, 0, "{out}\n{err}");
    let (proposed, refused) = proposed_and_refused(&err);
    assert_eq!(proposed.len(), 6, "plain and tunnel to A, B and C: {err}");
    assert_eq!(proposed, refused, "{err}");
    let written = std::fs::read_to_string(ws.path().join(".jp/config.toml")).unwrap();
    assert!(
        written.contains("[mcp.servers.egress.access]") && written.contains(&format!("\"http://127.0.0.1:{a}\"")),
        "{written}"
    );
    approve_config(ws.path());
    argv[0] = "--";
    argv.remove(1);
    let (code, out, err) = suggest(ws.path(), &argv, &[("PYTHONPATH", &site)]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(err.contains("the configuration needs no change"), "{err}");
    assert!(report(&out)["proxy_b"].as_str().unwrap().starts_with("200"), "{out}");
    nothing_left("learning_server.py");
}

/// The venv with the pinned Python SDK (as `mcp_servers.rs` makes it).
fn mcp_venv() -> PathBuf {
    let home = std::env::var("HOME").unwrap();
    let venv = Path::new(&home).join(".cache/jp-host/venv-mcp-2.3.0");
    if !venv.join("bin/python").exists()
        || !Command::new(venv.join("bin/python")).args(["-c", "import mcp"]).status().unwrap().success()
    {
        assert!(Command::new("/usr/bin/python3").args(["-m", "venv"]).arg(&venv).status().unwrap().success());
        assert!(Command::new(venv.join("bin/pip")).args(["install", "-q", "mcp==2.3.0"]).status().unwrap().success());
    }
    venv
}
