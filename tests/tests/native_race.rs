//! Check-then-use races inside the project root (issue 10 item 9): the dispatcher decides on a
//! path with its symbolic links resolved, then the backend acts on it. A link swapped in between
//! (by an allowed `process.run`, or any other process) must make the operation fail, never
//! redirect it to a path the policy denies. A thread swaps `a` between a real directory and a
//! link `a -> secret` while a real `Dispatcher` serves thousands of requests on `a/f`.

#![cfg(all(not(target_arch = "wasm32"), target_os = "linux"))]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use jp_core::host::{Dispatcher, NoEvents};
use jp_core::policy::{AccessConfig, AccessPolicy};
use jp_core::protocol::{HostRequest, Id};
use jp_native::files::FsProjectFiles;
use serde_json::{Value, json};

const ROUNDS: usize = 4000;

/// A project with `a/f` (allowed) and `secret/f` (denied), served under `access`.
fn project(access: Value) -> (tempfile::TempDir, Dispatcher) {
    let ws = tempfile::tempdir().unwrap();
    let w = ws.path();
    std::fs::create_dir(w.join("a")).unwrap();
    std::fs::write(w.join("a/f"), "allowed").unwrap();
    std::fs::create_dir(w.join("secret")).unwrap();
    std::fs::write(w.join("secret/f"), "TOP SECRET").unwrap();
    let cfg: AccessConfig = serde_json::from_value(access).unwrap();
    let policy = AccessPolicy::from_config(None, Some(&cfg)).unwrap();
    let files = Arc::new(FsProjectFiles::open(w).unwrap());
    (ws, Dispatcher::builder("race", Arc::new(policy), files).build())
}

/// Swap `a` between the real directory and a link to `secret` until `stop` is set.
fn swapper(w: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut swaps = 0;
        while !stop.load(Ordering::Relaxed) {
            let _ = std::fs::rename(w.join("a"), w.join("a_real"));
            let _ = std::os::unix::fs::symlink("secret", w.join("a"));
            let _ = std::fs::remove_file(w.join("a"));
            let _ = std::fs::rename(w.join("a_real"), w.join("a"));
            swaps += 1;
            // Leave the real directory in place for a moment too, so that requests also land
            // between swaps (the tests check the race really ran both ways).
            std::thread::yield_now();
        }
        swaps
    })
}

fn call(d: &Dispatcher, method: &str, params: Value) -> Result<Value, String> {
    let req = HostRequest::parse(method, params).unwrap();
    futures_executor::block_on(d.handle(&req, &Id::Number(1), &NoEvents))
        .map(|r| serde_json::to_value(r).unwrap())
        .map_err(|e| e.to_string())
}

fn secret(w: &Path) -> String {
    std::fs::read_to_string(w.join("secret/f")).unwrap()
}

#[test]
fn reading_through_a_directory_swapped_for_a_link_to_a_denied_path_never_returns_it() {
    let access = json!({"filesystem": [{"path": ".", "allow": ["read"]}, {"path": "secret", "allow": []}]});
    let (ws, d) = project(access);
    let w = ws.path().to_path_buf();
    // Without a race, the link itself is decided on what it points to.
    std::os::unix::fs::symlink("secret", w.join("link")).unwrap();
    let direct = call(&d, "fs.read", json!({"path": "link/f"}));
    assert!(direct.as_ref().is_err_and(|e| e.contains("resolves to 'secret/f'")), "{direct:?}");
    std::fs::remove_file(w.join("link")).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = swapper(w.clone(), stop.clone());
    let (mut allowed, mut refused) = (0, 0);
    // At least ROUNDS reads, and more (up to 4×) until one got through between swaps.
    for i in 0..4 * ROUNDS {
        if i >= ROUNDS && allowed > 0 {
            break;
        }
        match call(&d, "fs.read", json!({"path": "a/f"})) {
            Ok(v) => {
                assert_ne!(
                    v["content"],
                    json!("TOP SECRET"),
                    "a read reached the denied secret/f through the swapped link"
                );
                assert_eq!(v["content"], json!("allowed"));
                allowed += 1;
            }
            Err(_) => refused += 1,
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swaps.join().unwrap();
    println!("{allowed} reads of a/f, {refused} refused, {swaps} swaps; none returned secret/f");
    // The race really ran: the link was swapped in and out, and reads got through in between.
    assert!(swaps > 0 && allowed > 0, "{allowed} allowed, {refused} refused, {swaps} swaps");
}

#[test]
fn writing_through_a_directory_swapped_for_a_link_to_a_denied_path_never_changes_it() {
    let access =
        json!({"filesystem": [{"path": ".", "allow": ["read", "write"]}, {"path": "secret", "allow": ["read"]}]});
    let (ws, d) = project(access);
    let w = ws.path().to_path_buf();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = swapper(w.clone(), stop.clone());
    let mut written = 0;
    for i in 0..ROUNDS {
        if call(&d, "fs.write", json!({"path": "a/f", "content": format!("write {i}")})).is_ok() {
            written += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swaps.join().unwrap();
    assert!(swaps > 0, "the link was never swapped in");
    assert_eq!(secret(&w), "TOP SECRET", "a write reached the denied secret/f through the swapped link");
    let names: Vec<String> = std::fs::read_dir(w.join("secret"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["f"], "nothing was created in secret/");
    println!("{written} of {ROUNDS} writes of a/f succeeded, {swaps} swaps; secret/f untouched");
}
