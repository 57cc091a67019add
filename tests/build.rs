//! Embeds every conformance vector file (so the wasm32 run, which has no file system, reads the
//! very same data) and counts the cases, so both runs can prove they ran all of them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> =
        std::fs::read_dir(dir).expect("tests/vectors exists").flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

fn main() {
    // Read at run time: a build script binary can be reused from a shared target directory by a
    // checkout at another path, and `env!` would bake in the first checkout's path.
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR")).join("vectors");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(&root, &mut files);
    let mut code = String::from("&[\n");
    let mut count = 0usize;
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        let text = std::fs::read_to_string(file).expect("readable vector file");
        let doc: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: invalid JSON: {e}", file.display()));
        for group in doc["groups"].as_array().unwrap_or_else(|| panic!("{}: needs \"groups\"", file.display())) {
            count += group["cases"].as_array().map_or(0, Vec::len);
        }
        let rel = file.strip_prefix(&root).expect("under vectors/").to_string_lossy().replace('\\', "/");
        writeln!(code, "    ({rel:?}, include_str!({:?})),", file.display().to_string()).unwrap();
    }
    code.push_str("]\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(out.join("vector_files.rs"), code).expect("write vector_files.rs");
    std::fs::write(out.join("vector_count.rs"), format!("{count}\n")).expect("write vector_count.rs");
}
