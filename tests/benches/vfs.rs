//! VFS runtime benchmarks (`cargo bench -p jp-tests --bench vfs`). Prints medians and ratios
//! against a baseline measured in the same run; asserts nothing about time.
//!
//! 1. `fs.read` of a 4 KiB file through the protocol (sandboxed tool, per read) vs the same read
//!    through the dispatcher in-process.
//! 2. A cold run of a trivial VFS tool (spawn + sandbox + init + one read + result) vs a bare spawn
//!    of the same binary without the sandbox.

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    bench::main();
}

#[cfg(not(target_arch = "wasm32"))]
mod bench {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use jp_core::cancel::CancellationToken;
    use jp_core::host::{Dispatcher, NoEvents};
    use jp_core::policy::AccessPolicy;
    use jp_core::protocol::{HostRequest, Id};
    use jp_core::runtime::{Config, ToolCall, ToolConfig};
    use jp_native::files::FsProjectFiles;
    use jp_native::vfs::VfsRuntime;
    use serde_json::json;

    const TOOL: &str = env!("CARGO_BIN_EXE_jp-test-tools");

    fn median(mut v: Vec<Duration>) -> Duration {
        v.sort();
        v[v.len() / 2]
    }

    fn config(command: &str) -> ToolConfig {
        let text = format!("[conversation.tools.t]\nsource = \"local\"\nruntime = \"vfs\"\ncommand = {command:?}\n");
        Config::from_toml(&text, "bench.toml").unwrap().conversation.tools.remove("t").unwrap()
    }

    fn call(name: &str, args: serde_json::Value) -> ToolCall {
        ToolCall {
            name: name.into(),
            id: "b".into(),
            arguments: args.as_object().cloned().unwrap(),
            answers: Default::default(),
            cancel: CancellationToken::new(),
        }
    }

    pub(crate) fn main() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("4k.txt"), "x".repeat(4096)).unwrap();
        let files = Arc::new(FsProjectFiles::open(ws.path()).unwrap());
        let vfs = VfsRuntime::new(files.clone(), ws.path());
        let cfg = config(TOOL);

        // 1. fs.read round trip.
        let dispatcher = Dispatcher::builder("b", Arc::new(AccessPolicy::vfs_default()), files.clone()).build();
        let req = HostRequest::parse("fs.read", json!({"path": "4k.txt"})).unwrap();
        let mut in_process = Vec::new();
        rt.block_on(async {
            for _ in 0..2000 {
                let t = Instant::now();
                dispatcher.handle(&req, &Id::Number(1), &NoEvents).await.unwrap();
                in_process.push(t.elapsed());
            }
        });
        let n = 2000u32;
        let mut per_read = Vec::new();
        for _ in 0..7 {
            let one = rt.block_on(vfs.run(call("read_loop", json!({"path": "4k.txt", "n": 1})), &cfg, None)).unwrap();
            let t = Instant::now();
            let many = rt.block_on(vfs.run(call("read_loop", json!({"path": "4k.txt", "n": n})), &cfg, None)).unwrap();
            let total = t.elapsed();
            drop((one, many));
            let t = Instant::now();
            rt.block_on(vfs.run(call("read_loop", json!({"path": "4k.txt", "n": 1})), &cfg, None)).unwrap();
            let base = t.elapsed();
            per_read.push(total.saturating_sub(base) / (n - 1));
        }
        let (a, b) = (median(per_read), median(in_process));
        println!(
            "fs.read 4 KiB: through the protocol {a:?}/read, in-process {b:?}/read, ratio {:.1}x",
            a.as_secs_f64() / b.as_secs_f64()
        );

        // 2. Cold run vs bare spawn.
        let mut cold = Vec::new();
        let mut bare = Vec::new();
        for _ in 0..30 {
            let t = Instant::now();
            rt.block_on(vfs.run(call("read_loop", json!({"path": "4k.txt", "n": 1})), &cfg, None)).unwrap();
            cold.push(t.elapsed());
            let t = Instant::now();
            let status = std::process::Command::new(TOOL)
                .args(["raw", "no-stdin"])
                .stdout(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(status.success());
            bare.push(t.elapsed());
        }
        let (a, b) = (median(cold), median(bare));
        println!(
            "cold VFS tool run (spawn + sandbox + init + 1 read + result) {a:?}, bare spawn {b:?}, ratio {:.2}x (goal <= 1.3x)",
            a.as_secs_f64() / b.as_secs_f64()
        );
    }
}
