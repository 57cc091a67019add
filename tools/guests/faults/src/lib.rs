//! Misbehaving on purpose, selected by the tool name: `ok` (does nothing: the benchmark's trivial
//! tool), `exit` (ends "the process"), `sleep` (a day by default), `stdin` (reads a line),
//! `spin` (an endless loop), `bomb` (allocates until it cannot), `flood` (a huge result),
//! `print` (floods stdout), `write` / `read` / `list` / `remove` / `rename` (plain `std::fs` on
//! `/workspace`, for the policy tests), `escape` (every way out of the preopen it can think of),
//! `hoard` (keeps many files open with large unwritten buffers, then traps so nothing is kept).

wit_bindgen::generate!({
    world: "tool",
    path: "../../../wit/tool",
});

use jp::tool::types::ErrorInfo;

struct Faults;

fn arg(arguments: &serde_json::Value, name: &str) -> String {
    arguments[name].as_str().unwrap_or_default().to_owned()
}

fn fail(message: String) -> Outcome {
    Outcome::Error(ErrorInfo { message, trace: vec![], transient: false })
}

fn io<T>(r: std::io::Result<T>, what: &str) -> Result<T, Outcome> {
    r.map_err(|e| fail(format!("{what}: {e} ({:?})", e.kind())))
}

fn attempt(path: &str) -> String {
    match std::fs::read(path) {
        Ok(b) => format!("{path}: READ {} bytes", b.len()),
        Err(e) => format!("{path}: {:?}", e.kind()),
    }
}

impl Guest for Faults {
    fn run(_ctx: Context, name: String, arguments: String, _answers: String) -> Outcome {
        let args: serde_json::Value = serde_json::from_str(&arguments).unwrap_or_default();
        let result = match name.as_str() {
            "ok" => Ok("ok".to_owned()),
            "exit" => std::process::exit(0),
            "sleep" => {
                std::thread::sleep(std::time::Duration::from_secs(args["seconds"].as_u64().unwrap_or(86_400)));
                Ok("slept".to_owned())
            }
            "stdin" => {
                let mut line = String::new();
                io(std::io::stdin().read_line(&mut line), "stdin").map(|n| format!("read {n} bytes"))
            }
            "spin" => {
                let mut x: u64 = 0;
                loop {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            "bomb" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 16 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "flood" => Ok("x".repeat(args["bytes"].as_u64().unwrap_or(64 << 20) as usize)),
            "print" => {
                let line = "y".repeat(1023);
                for _ in 0..(args["lines"].as_u64().unwrap_or(100_000)) {
                    println!("{line}");
                }
                Ok("printed".to_owned())
            }
            "read" => io(std::fs::read_to_string(format!("/workspace/{}", arg(&args, "path"))), "read"),
            "write" => io(std::fs::write(format!("/workspace/{}", arg(&args, "path")), arg(&args, "content")), "write")
                .map(|()| "written".to_owned()),
            "append" => {
                use std::io::Write as _;
                let path = format!("/workspace/{}", arg(&args, "path"));
                io(std::fs::OpenOptions::new().append(true).open(&path), "open")
                    .and_then(|mut f| io(f.write_all(arg(&args, "content").as_bytes()), "append"))
                    .map(|()| "appended".to_owned())
            }
            "list" => io(std::fs::read_dir(format!("/workspace/{}", arg(&args, "path"))), "list").map(|rd| {
                let mut names: Vec<String> = rd
                    .map(|e| match e {
                        Ok(e) => e,
                        Err(err) => panic!("read_dir entry: {err}"),
                    })
                    .map(|e| {
                        let dir = e.file_type().is_ok_and(|t| t.is_dir());
                        format!("{}{}", e.file_name().to_string_lossy(), if dir { "/" } else { "" })
                    })
                    .collect();
                names.sort();
                names.join("\n")
            }),
            "remove" => io(std::fs::remove_file(format!("/workspace/{}", arg(&args, "path"))), "remove")
                .map(|()| "removed".to_owned()),
            "rename" => io(
                std::fs::rename(
                    format!("/workspace/{}", arg(&args, "from")),
                    format!("/workspace/{}", arg(&args, "to")),
                ),
                "rename",
            )
            .map(|()| "renamed".to_owned()),
            "mkdir" => io(std::fs::create_dir_all(format!("/workspace/{}", arg(&args, "path"))), "mkdir")
                .map(|()| "created".to_owned()),
            "hoard" => {
                use std::io::Write as _;
                let files = args["files"].as_u64().unwrap_or(100) as usize;
                let mib = args["mib"].as_u64().unwrap_or(8) as usize;
                let chunk = vec![b'h'; 1 << 20];
                let _ = std::fs::create_dir_all("/workspace/hoard");
                let mut open = Vec::new();
                let mut failure = "none".to_owned();
                'files: for i in 0..files {
                    let mut f = match std::fs::File::create(format!("/workspace/hoard/{i}.bin")) {
                        Ok(f) => f,
                        Err(e) => {
                            failure = format!("open {i}: {e} ({:?})", e.kind());
                            break;
                        }
                    };
                    for _ in 0..mib {
                        if let Err(e) = f.write_all(&chunk) {
                            failure = format!("write {i}: {e} ({:?})", e.kind());
                            break 'files;
                        }
                    }
                    open.push(f);
                }
                // A trap: the host commits nothing, and the report is the panic message.
                panic!("hoarded {} files; first failure: {failure}", open.len());
            }
            "escape" => Ok([
                attempt("/etc/passwd"),
                attempt("/workspace/../../etc/passwd"),
                attempt("/workspace/../outside.txt"),
                attempt("/workspace/link_out"),
                attempt("/workspace/dir_link/secret.txt"),
                attempt("/proc/self/environ"),
                format!("env: {}", std::env::vars().count()),
                format!("socket: {:?}", std::net::TcpStream::connect("127.0.0.1:9").map_err(|e| e.kind())),
            ]
            .join("\n")),
            other => Err(fail(format!("no tool named '{other}'"))),
        };
        match result {
            Ok(text) => Outcome::Success(text),
            Err(outcome) => outcome,
        }
    }
}

export!(Faults);
