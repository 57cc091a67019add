//! `jp-test-tools`: the tool binary of the integration tests. Run by a host with
//! `runtime = "vfs"`, it serves the first-party file tools plus tools that exercise the protocol
//! and probe the sandbox (`script`, `escape`, `big`). With `raw <behaviour>` as arguments it
//! misbehaves on purpose, below the SDK: hangs, crashes, floods, ignores signals, leaves children,
//! pipelines large requests, sends malformed results or stale cancels.

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    native::main()
}

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::io::{BufRead, Read, Write};
    use std::process::ExitCode;
    use std::time::Duration;

    use jp_tool::{Call, Host, Reply, ToolSpec};
    use serde_json::{Value, json};

    pub(crate) fn main() -> ExitCode {
        let args: Vec<String> = std::env::args().collect();
        if args.get(1).map(String::as_str) == Some("raw") {
            return raw(args.get(2).map(String::as_str).unwrap_or(""));
        }
        let mut tools: Vec<ToolSpec> = jp_fs_tools::TOOLS.to_vec();
        tools.extend([
            ToolSpec {
                name: "escape",
                summary: "Try to reach around the protocol; report what happened.",
                description: "",
                parameters: "{}",
                run: escape,
            },
            ToolSpec {
                name: "big",
                summary: "Write a file of n bytes and read it back.",
                description: "",
                parameters: "{}",
                run: big,
            },
            ToolSpec {
                name: "read_loop",
                summary: "Read a file n times (benchmarks).",
                description: "",
                parameters: "{}",
                run: read_loop,
            },
            ToolSpec { name: "ask", summary: "Need an answer.", description: "", parameters: "{}", run: ask },
        ]);
        let host = match jp_tool::connect() {
            Ok(h) => h,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        };
        if host.init().tool.action.as_deref() == Some("schema") {
            host.finish(Reply::text(jp_tool::schema_response(&tools).to_string()));
            return ExitCode::SUCCESS;
        }
        let call = host.call();
        // `script` needs the raw client; everything else goes through the Host trait.
        let reply = if call.name == "script" { script(&host, &call) } else { jp_tool::dispatch(&tools, &host, &call) };
        host.finish(reply);
        ExitCode::SUCCESS
    }

    /// `{"requests":[{"method":…,"params":…},…]}` → the results or errors, in order.
    fn script(host: &jp_tool::VfsHost, call: &Call) -> Reply {
        let mut out = Vec::new();
        for r in call.arguments.get("requests").and_then(Value::as_array).into_iter().flatten() {
            let method = r["method"].as_str().unwrap_or("");
            match host.request(method, r["params"].clone()) {
                Ok(v) => out.push(json!({ "result": v })),
                Err(e) => out.push(json!({ "error": { "code": e.code().code(), "message": e.to_string() } })),
            }
        }
        Reply::text(Value::Array(out).to_string())
    }

    fn big(host: &dyn Host, call: &Call) -> Reply {
        let n = call.u64_arg("bytes").unwrap_or(1024) as usize;
        let data: Vec<u8> = (0..n).map(|i| b"abcdefghijklmnopqrstuvwxyz\n"[i % 27]).collect();
        if let Err(e) = host.write("big.txt", &data) {
            return Reply::from(e);
        }
        match host.read("big.txt") {
            Ok(back) if back == data => Reply::text(format!("round trip of {n} bytes ok")),
            Ok(back) => Reply::error(format!("read back {} bytes that differ", back.len())),
            Err(e) => Reply::from(e),
        }
    }

    fn read_loop(host: &dyn Host, call: &Call) -> Reply {
        let path = call.str_arg("path").unwrap_or("README.md");
        let n = call.u64_arg("n").unwrap_or(1);
        let mut total = 0;
        for _ in 0..n {
            match host.read(path) {
                Ok(b) => total += b.len(),
                Err(e) => return Reply::from(e),
            }
        }
        Reply::text(format!("read {total} bytes"))
    }

    fn ask(_: &dyn Host, call: &Call) -> Reply {
        match call.answers.get("confirm") {
            Some(v) => Reply::text(format!("answer: {v}")),
            None => Reply::NeedsInput(jp_tool::Question {
                id: "confirm".into(),
                text: "Proceed?".into(),
                answer_type: jp_tool::AnswerType::Boolean,
                default: Some(json!(false)),
            }),
        }
    }

    /// Tries every way around the protocol it knows; the report says, per attempt, `denied: …`
    /// or `ALLOWED: …`.
    fn escape(_: &dyn Host, call: &Call) -> Reply {
        let mut report = serde_json::Map::new();
        let mut note = |name: &str, r: Result<String, String>| {
            report.insert(
                name.to_owned(),
                json!(match r {
                    Ok(v) => format!("ALLOWED: {v}"),
                    Err(e) => format!("denied: {e}"),
                }),
            );
        };
        let s = |k: &str| call.str_arg(k).unwrap_or("").to_owned();
        let read =
            |p: String| std::fs::read(&p).map(|b| format!("read {} bytes of {p}", b.len())).map_err(|e| e.to_string());
        note("read_project_file", read(s("project_file")));
        note(
            "list_project_dir",
            std::fs::read_dir(s("project_dir")).map(|_| "listed".into()).map_err(|e| e.to_string()),
        );
        note(
            "write_project_file",
            std::fs::write(s("project_file"), b"pwned").map(|()| "wrote".into()).map_err(|e| e.to_string()),
        );
        note("read_home_file", read(s("home_file")));
        note("read_etc_passwd", read("/etc/passwd".into()));
        note("read_proc_self_environ", read("/proc/self/environ".into()));
        note("read_proc_1_root", read("/proc/1/root/etc/hostname".into()));
        note("read_proc_self_root", read(format!("/proc/self/root{}", s("project_file"))));
        note("read_dev_tcp", read("/dev/tcp/127.0.0.1/80".into()));
        note(
            "write_tmp",
            std::fs::write("/tmp/jp-escape-probe", b"x").map(|()| "wrote /tmp".into()).map_err(|e| e.to_string()),
        );
        note(
            "tcp_connect",
            std::net::TcpStream::connect_timeout(
                &s("tcp_addr").parse().unwrap_or(([127, 0, 0, 1], 9).into()),
                Duration::from_secs(2),
            )
            .map(|_| "connected".into())
            .map_err(|e| e.to_string()),
        );
        note(
            "tcp_bind",
            std::net::TcpListener::bind("127.0.0.1:0")
                .map(|l| format!("bound {:?}", l.local_addr()))
                .map_err(|e| e.to_string()),
        );
        note(
            "udp_send",
            std::net::UdpSocket::bind("127.0.0.1:0")
                .and_then(|u| u.send_to(b"x", s("udp_addr")))
                .map(|n| format!("sent {n} bytes"))
                .map_err(|e| e.to_string()),
        );
        note("abstract_unix_connect", abstract_connect(&s("abstract_name")));
        note(
            "fs_unix_connect",
            std::os::unix::net::UnixStream::connect(s("unix_path"))
                .map(|_| "connected".into())
                .map_err(|e| e.to_string()),
        );
        let env: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
        note("environment", if env.is_empty() { Err("empty".into()) } else { Ok(env.join(" ")) });
        note(
            "spawn_cat_project_file",
            std::process::Command::new("/bin/cat").arg(s("project_file")).output().map_err(|e| e.to_string()).and_then(
                |o| {
                    if o.status.success() {
                        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
                    } else {
                        Err(String::from_utf8_lossy(&o.stderr).trim().to_owned())
                    }
                },
            ),
        );
        note("ptrace_a_child", ptrace_child());
        #[allow(unsafe_code)]
        let unshare = unsafe { libc::unshare(libc::CLONE_NEWUSER) };
        note(
            "unshare_user_ns",
            if unshare == 0 {
                Ok("new user namespace".into())
            } else {
                Err(std::io::Error::last_os_error().to_string())
            },
        );
        #[allow(unsafe_code)]
        let kill = unsafe { libc::kill(std::os::unix::process::parent_id() as libc::pid_t, 0) };
        note(
            "signal_parent",
            if kill == 0 { Ok("may signal the host".into()) } else { Err(std::io::Error::last_os_error().to_string()) },
        );
        #[allow(unsafe_code)]
        let setsid = unsafe { libc::setsid() };
        note(
            "setsid",
            if setsid >= 0 {
                Ok("left the process group".into())
            } else {
                Err(std::io::Error::last_os_error().to_string())
            },
        );
        Reply::text(Value::Object(report).to_string())
    }

    /// Attach to a child of our own (harmless if it works: the child is killed right after).
    fn ptrace_child() -> Result<String, String> {
        let mut child =
            std::process::Command::new("/bin/sleep").arg("30").spawn().map_err(|e| format!("spawn: {e}"))?;
        #[allow(unsafe_code)]
        let r = unsafe { libc::ptrace(libc::PTRACE_ATTACH, child.id() as libc::pid_t, 0, 0) };
        let outcome = if r == 0 {
            Ok("attached to a child".to_owned())
        } else {
            Err(std::io::Error::last_os_error().to_string())
        };
        let _ = child.kill();
        let _ = child.wait();
        outcome
    }

    fn abstract_connect(name: &str) -> Result<String, String> {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).map_err(|e| e.to_string())?;
        std::os::unix::net::UnixStream::connect_addr(&addr).map(|_| "connected".into()).map_err(|e| e.to_string())
    }

    fn read_init() -> Value {
        let mut line = String::new();
        let _ = std::io::stdin().lock().read_line(&mut line);
        serde_json::from_str(&line).unwrap_or(Value::Null)
    }

    fn send(v: Value) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{v}");
        let _ = out.flush();
    }

    fn result(text: &str) {
        send(json!({"jsonrpc":"2.0","method":"result","params":{"content": text}}));
    }

    /// Asks for something the host holds (`.env` needs the user), then pipelines 200 writes of
    /// 8 MiB each from a second thread without reading a single answer, and reports on stderr
    /// how many got through once the writer is done or has been held back for 2 s.
    fn pipeline_writes() -> ExitCode {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        const TOTAL: usize = 200;
        read_init();
        send(json!({"jsonrpc":"2.0","id":0,"method":"fs.read","params":{"path":".env"}}));
        let written = Arc::new(AtomicUsize::new(0));
        let counter = written.clone();
        std::thread::spawn(move || {
            let content = "w".repeat(8 << 20);
            let mut out = std::io::stdout().lock();
            for id in 1..=TOTAL {
                let line = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"fs.write","params":{{"path":"pipelined.txt","content":"{content}"}}}}"#
                );
                if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
                    return;
                }
                counter.fetch_add(1, Ordering::SeqCst);
            }
        });
        let (mut last, mut still) = (0, 0);
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let n = written.load(Ordering::SeqCst);
            if n == TOTAL {
                break;
            }
            if n == last {
                still += 1;
                if still >= 20 {
                    break;
                }
            } else {
                (last, still) = (n, 0);
            }
        }
        eprintln!("wrote {} of {TOTAL} requests", written.load(Ordering::SeqCst));
        // Not `exit`: the writer thread may hold the stdout lock, blocked on the full pipe.
        #[allow(unsafe_code)]
        unsafe {
            libc::_exit(0)
        }
    }

    fn raw(behaviour: &str) -> ExitCode {
        match behaviour {
            "hang" => {
                read_init();
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
            "crash" => {
                read_init();
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(br#"{"jsonrpc":"2.0","id":1,"method":"fs.re"#);
                let _ = out.flush();
                eprintln!("about to crash: simulated failure in the middle of a request");
                std::process::abort();
            }
            "exit-silently" => {
                read_init();
                eprintln!("fatal: could not parse the configuration (line 3)");
                ExitCode::from(3)
            }
            "flood" => {
                read_init();
                let chunk = vec![b'x'; 1 << 20];
                let mut out = std::io::stdout().lock();
                while out.write_all(&chunk).is_ok() {}
                ExitCode::SUCCESS
            }
            "flood-lines" => {
                read_init();
                let mut out = std::io::stdout().lock();
                while out.write_all(b"this is not json\n").is_ok() {}
                ExitCode::SUCCESS
            }
            "no-stdin" => {
                // Never reads stdin (not even init) and finishes.
                result("finished without reading stdin");
                ExitCode::SUCCESS
            }
            "spam-requests" => {
                // Sends requests forever and never reads the responses.
                let mut out = std::io::stdout().lock();
                let mut id = 0u64;
                loop {
                    id += 1;
                    let line = json!({"jsonrpc":"2.0","id":id,"method":"fs.read","params":{"path":"big.txt"}});
                    if writeln!(out, "{line}").is_err() {
                        return ExitCode::SUCCESS;
                    }
                }
            }
            "ignore-term" => {
                read_init();
                #[allow(unsafe_code)]
                unsafe {
                    libc::signal(libc::SIGTERM, libc::SIG_IGN);
                }
                eprintln!("ignoring SIGTERM");
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
            "grandchild" => {
                read_init();
                // A child that inherits stdout and outlives the tool.
                let child = std::process::Command::new("/bin/sleep").arg("1000").spawn();
                match child {
                    Ok(c) => {
                        result(&format!("left a grandchild {}", c.id()));
                        std::mem::forget(c);
                    }
                    Err(e) => result(&format!("could not start a grandchild: {e}")),
                }
                ExitCode::SUCCESS
            }
            "malformed" => {
                // A garbage line, then a good request: both get answers, in order.
                read_init();
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(b"{this is not json\n");
                let _ = writeln!(
                    out,
                    "{}",
                    json!({"jsonrpc":"2.0","id":7,"method":"fs.exists","params":{"path":"README.md"}})
                );
                let _ = out.flush();
                drop(out);
                let stdin = std::io::stdin();
                let lines: Vec<String> = stdin.lock().lines().take(2).map_while(Result::ok).collect();
                result(&format!("[{}]", lines.join(",")));
                ExitCode::SUCCESS
            }
            "abandon" => {
                // Asks for something that needs the user, then gives up waiting with `cancel`.
                read_init();
                send(json!({"jsonrpc":"2.0","id":1,"method":"fs.read","params":{"path":".env"}}));
                let stdin = std::io::stdin();
                let mut lines = stdin.lock().lines();
                let pending = lines.next().and_then(Result::ok).unwrap_or_default();
                send(json!({"jsonrpc":"2.0","method":"cancel"}));
                let response = lines.next().and_then(Result::ok).unwrap_or_default();
                result(&format!("[{pending},{response}]"));
                ExitCode::SUCCESS
            }
            "slow-reader" => {
                // Sends one large write, then sleeps before reading the response.
                let _init = read_init();
                let content = "y".repeat(8 * 1024 * 1024);
                send(
                    json!({"jsonrpc":"2.0","id":1,"method":"fs.write","params":{"path":"slow.txt","content":content}}),
                );
                send(json!({"jsonrpc":"2.0","id":2,"method":"fs.read","params":{"path":"slow.txt"}}));
                std::thread::sleep(Duration::from_secs(2));
                let stdin = std::io::stdin();
                let mut lines = stdin.lock().lines();
                let mut sizes = Vec::new();
                for _ in 0..2 {
                    let line = lines.next().and_then(Result::ok).unwrap_or_default();
                    sizes.push(line.len());
                }
                result(&format!("responses of {} and {} bytes", sizes[0], sizes[1]));
                ExitCode::SUCCESS
            }
            "malformed-result" => {
                // Its last word is unreadable: a result whose content is a number.
                read_init();
                send(json!({"jsonrpc":"2.0","method":"result","params":{"content": 42}}));
                ExitCode::SUCCESS
            }
            "stale-cancel" => {
                // `cancel` with nothing in flight (before any request, and after an answer came
                // back), each followed by a normal request: both must be served.
                read_init();
                let stdin = std::io::stdin();
                let mut lines = stdin.lock().lines();
                let mut responses = Vec::new();
                for (id, method) in [(1, "fs.read"), (2, "fs.exists")] {
                    send(json!({"jsonrpc":"2.0","method":"cancel"}));
                    send(json!({"jsonrpc":"2.0","id":id,"method":method,"params":{"path":"README.md"}}));
                    responses.push(lines.next().and_then(Result::ok).unwrap_or_default());
                }
                result(&format!("[{}]", responses.join(",")));
                ExitCode::SUCCESS
            }
            "pipeline-writes" => pipeline_writes(),
            other => {
                let mut s = String::new();
                let _ = std::io::stdin().read_to_string(&mut s);
                eprintln!("unknown raw behaviour {other:?}");
                ExitCode::from(2)
            }
        }
    }
}
