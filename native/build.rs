//! Builds the WASI components in `tools/guests` for `wasm32-wasip2` (release) with a nested
//! cargo in a target directory of their own — so the outer build's lock is never waited on —
//! embeds the builtin `learn` component, and tells the crate where the others are
//! (`JP_GUESTS_DIR`, for tests and benchmarks).
//!
//! A release build (`cargo install`) builds `learn` alone: it is the only component `jp` embeds,
//! and building the test components (with the core and the fs tools for wasm32) took 3 of the
//! 19 minutes of a fresh install on 2 cores, on the critical path. Debug builds (`cargo test`)
//! build them all, and so does any build with `JP_BUILD_GUESTS=all` (`./tests/bench`).

use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let root = manifest_dir.parent().expect("native/ is inside the workspace").to_path_buf();
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    for watched in ["tools/guests", "tools/sdk/src", "tools/sdk/Cargo.toml", "tools/fs/src", "core/src", "wit"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    // <target>/[<triple>/]<profile>/build/<pkg>-<hash>/out → <target>[/<triple>]/jp-guests
    let guests_target = out_dir.ancestors().nth(4).unwrap_or(&out_dir).join("jp-guests");
    let manifest = root.join("tools/guests/Cargo.toml");
    println!("cargo:rerun-if-env-changed=JP_BUILD_GUESTS");
    let all = std::env::var("JP_BUILD_GUESTS").is_ok_and(|v| v == "all")
        || std::env::var("PROFILE").is_ok_and(|p| p != "release");
    let only: &[&str] = if all { &[] } else { &["-p", "jp-tool-learn"] };

    if let Err(first) = build(&manifest, &guests_target, only) {
        // The one thing a fresh machine is likely to lack: install it and try again.
        if first.contains("target may not be installed") || first.contains("can't find crate for `core`") {
            let added = Command::new("rustup").args(["target", "add", TARGET]).status();
            if !added.is_ok_and(|s| s.success()) {
                panic!("the {TARGET} target is missing and `rustup target add {TARGET}` failed:\n{first}");
            }
            if let Err(second) = build(&manifest, &guests_target, only) {
                panic!("building the WASI components failed:\n{second}");
            }
        } else {
            panic!("building the WASI components (tools/guests) for {TARGET} failed:\n{first}");
        }
    }
    let built = guests_target.join(TARGET).join("release");
    std::fs::copy(built.join("jp_tool_learn.wasm"), out_dir.join("jp_tool_learn.wasm"))
        .expect("the learn component was built");
    println!("cargo:rustc-env=JP_GUESTS_DIR={}", built.display());
    if pack_relative_relocs(&out_dir) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether `jp` can be linked with packed relative relocations (`DT_RELR`): what the loader
/// fixes up at every start shrinks from 1.6 MB of `RELA` entries to ~18 KB, ~80 fewer page
/// faults and ~0.3 ms off every one-shot call (BENCHMARKS.md, "The one-shot path"). Needs a
/// linker that knows the flag (binutils 2.38+, lld 15+, mold) and a C library that loads it
/// (glibc 2.36+): a small program is linked with the flag and run here, and only if it runs is
/// the flag used. Native Linux builds only (a cross build cannot run what it links).
fn pack_relative_relocs(out_dir: &Path) -> bool {
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    if env("CARGO_CFG_TARGET_OS") != "linux" || env("CARGO_CFG_TARGET_ENV") != "gnu" || env("HOST") != env("TARGET") {
        return false;
    }
    let linker = std::env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".into());
    let (source, program) = (out_dir.join("relr_probe.c"), out_dir.join("relr_probe"));
    if std::fs::write(&source, "int main(void) { static const char *p = \"relr\"; return p[0] != 'r'; }\n").is_err() {
        return false;
    }
    let linked = Command::new(&linker)
        .args(["-O1", "-fPIE", "-pie", "-Wl,-z,pack-relative-relocs", "-o"])
        .arg(&program)
        .arg(&source)
        .output()
        .is_ok_and(|o| o.status.success());
    linked && Command::new(&program).status().is_ok_and(|s| s.success())
}

/// Run the nested cargo with a clean environment (nothing of the outer build leaks in: not its
/// target, flags, wrappers such as clippy-driver, or jobserver).
fn build(manifest: &Path, target_dir: &Path, only: &[&str]) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.env_clear();
    for (k, v) in std::env::vars_os() {
        let k_str = k.to_string_lossy();
        let keep =
            matches!(k_str.as_ref(), "PATH" | "HOME" | "RUSTUP_HOME" | "CARGO_HOME" | "RUSTUP_TOOLCHAIN" | "TMPDIR")
                || k_str.starts_with("CARGO_REGISTRIES_")
                || k_str.starts_with("CARGO_NET_")
                || k_str.starts_with("CARGO_HTTP_")
                || k_str.to_ascii_uppercase().ends_with("_PROXY")
                || k_str.starts_with("SSL_CERT");
        if keep {
            cmd.env(k, v);
        }
    }
    cmd.args(["build", "--release", "--locked", "--target", TARGET, "--manifest-path"])
        .arg(manifest)
        .args(only)
        .arg("--target-dir")
        .arg(target_dir);
    let out = cmd.output().map_err(|e| format!("cannot run cargo: {e}"))?;
    if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).into_owned()) }
}
