//! VFS runtime benchmarks (`cargo bench -p jp-tests --bench vfs`). Prints medians and ratios
//! against a baseline measured in the same run; asserts nothing about time.
//!
//! 1. `fs.read` of a 4 KiB file through the protocol (sandboxed tool, per read) vs the same read
//!    through the dispatcher in-process.
//! 2. A cold run of a trivial VFS tool (spawn + sandbox + init + one read + result) vs a bare spawn
//!    of the same binary without the sandbox, with where the difference goes.
//! 3. `fs.grep` over a generated tree of 50,000 files through the dispatcher vs `rg` (Debian
//!    package `ripgrep`; `tests/bench` installs it) on the same tree.

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    bench::main();
}

#[cfg(not(target_arch = "wasm32"))]
mod common;

#[cfg(not(target_arch = "wasm32"))]
mod bench {
    use std::sync::Arc;
    use std::time::Instant;

    use jp_core::host::{Dispatcher, NoEvents};
    use jp_core::policy::AccessPolicy;
    use jp_core::protocol::{HostRequest, Id};
    use jp_native::files::FsProjectFiles;
    use jp_native::sandbox::{SandboxMode, SandboxSpec};
    use jp_native::vfs::VfsRuntime;
    use serde_json::json;

    use super::common::{call, config, median};

    const TOOL: &str = env!("CARGO_BIN_EXE_jp-test-tools");

    pub(crate) fn main() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("4k.txt"), "x".repeat(4096)).unwrap();
        let files = Arc::new(FsProjectFiles::open(ws.path()).unwrap());
        let vfs = VfsRuntime::new(files.clone(), ws.path());
        let cfg = config(&format!("runtime = \"vfs\"\ncommand = {TOOL:?}"));

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

        // Where the cold-run time goes: the same run without the OS sandbox (posix_spawn instead
        // of fork + pre_exec), and building the sandbox alone.
        let unsandboxed = VfsRuntime::new(files.clone(), ws.path()).sandbox(SandboxMode::Disabled);
        let mut plain = Vec::new();
        let mut prepare = Vec::new();
        let spec = SandboxSpec::for_tool(std::path::Path::new(TOOL), &[], &[]);
        for _ in 0..30 {
            let t = Instant::now();
            rt.block_on(unsandboxed.run(call("read_loop", json!({"path": "4k.txt", "n": 1})), &cfg, None)).unwrap();
            plain.push(t.elapsed());
            let t = Instant::now();
            drop(spec.prepare().unwrap());
            prepare.push(t.elapsed());
        }
        // posix_spawn (what std uses without pre_exec) vs fork (what any pre_exec forces).
        let mut forked = Vec::new();
        for _ in 0..30 {
            let mut c = std::process::Command::new(TOOL);
            c.args(["raw", "no-stdin"]).stdout(std::process::Stdio::null());
            // SAFETY: the hook does nothing; it only makes std fork instead of posix_spawn.
            #[allow(unsafe_code)]
            unsafe {
                std::os::unix::process::CommandExt::pre_exec(&mut c, || Ok(()));
            }
            let t = Instant::now();
            assert!(c.status().unwrap().success());
            forked.push(t.elapsed());
        }
        let f = median(forked);
        println!(
            "  bare spawn with fork (an empty pre_exec) {f:?} vs posix_spawn {b:?}, ratio {:.2}x",
            f.as_secs_f64() / b.as_secs_f64()
        );
        let (p, q) = (median(plain), median(prepare));
        println!(
            "  breakdown: same run without the OS sandbox {p:?} ({:.2}x bare spawn); building the sandbox {q:?}",
            p.as_secs_f64() / b.as_secs_f64()
        );

        grep_bench(&rt);
    }

    /// 50,000 files in 500 directories, about 1 KiB each; one file in 100 has a match.
    fn grep_bench(rt: &tokio::runtime::Runtime) {
        const FILES: usize = 50_000;
        let tree = tempfile::tempdir().unwrap();
        let filler = "let value = compute(input, other_input) + offset; // nothing to see here\n".repeat(14);
        for i in 0..FILES {
            let dir = tree.path().join(format!("d{:03}", i / 100));
            if i % 100 == 0 {
                std::fs::create_dir(&dir).unwrap();
            }
            let body = if i % 100 == 7 { format!("{filler}fn needle_{i}() {{}}\n{filler}") } else { filler.clone() };
            std::fs::write(dir.join(format!("f{i}.rs")), body).unwrap();
        }
        let files = Arc::new(FsProjectFiles::open(tree.path()).unwrap());
        let dispatcher = Dispatcher::builder("g", Arc::new(AccessPolicy::vfs_default()), files).build();
        let req = HostRequest::parse("fs.grep", json!({"pattern": "fn needle_[0-9]+"})).unwrap();
        let expected = FILES / 100;
        let mut ours = Vec::new();
        let mut rg = Vec::new();
        let rg_ok = std::process::Command::new("rg").arg("--version").output().is_ok_and(|o| o.status.success());
        for _ in 0..7 {
            let t = Instant::now();
            let v = rt.block_on(dispatcher.handle(&req, &Id::Number(1), &NoEvents)).unwrap();
            ours.push(t.elapsed());
            let found = match v {
                jp_core::protocol::HostResponse::FsGrep(r) => r.matches.len(),
                _ => 0,
            };
            assert_eq!(found, expected, "fs.grep found {found} files, expected {expected}");
            if rg_ok {
                let t = Instant::now();
                let out = std::process::Command::new("rg")
                    .args(["--line-number", "fn needle_[0-9]+"])
                    .arg(tree.path())
                    .output()
                    .unwrap();
                rg.push(t.elapsed());
                assert_eq!(out.stdout.iter().filter(|b| **b == b'\n').count(), expected);
            }
        }
        let a = median(ours);
        if rg_ok {
            let b = median(rg);
            println!(
                "fs.grep over {FILES} files: dispatcher {a:?}, rg {b:?}, ratio {:.2}x (goal <= 1.2x)",
                a.as_secs_f64() / b.as_secs_f64()
            );
        } else {
            println!(
                "fs.grep over {FILES} files: dispatcher {a:?}; rg is not installed (run tests/bench, which installs ripgrep)"
            );
        }
    }
}
