//! `FsProjectFiles` on real directories: the same conformance vectors as the in-memory backend,
//! and the path tricks a real file system allows (symlinks out, races, hard links).

#![cfg(all(not(target_arch = "wasm32"), target_os = "linux"))]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use jp_core::BoxFuture;
use jp_core::files::{FilesError, GrepQuery, ProjectFiles, match_bytes};
use jp_core::host::{Dispatcher, NoEvents};
use jp_core::policy::{AccessPolicy, WorkspacePath};
use jp_core::protocol::{EntryKind, HostRequest, Id};
use jp_native::files::FsProjectFiles;
use jp_tests::{Backend, Project};
use serde_json::{Value, json};

/// Real temporary directories; each project keeps its directory alive.
struct TempDirs;

fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

impl Backend for TempDirs {
    fn create(&self, files: Vec<(String, Vec<u8>)>, dirs: Vec<String>) -> BoxFuture<'_, Result<Project, String>> {
        Box::pin(async move {
            let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
            for (path, content) in files {
                let p = dir.path().join(&path);
                std::fs::create_dir_all(p.parent().unwrap()).map_err(|e| e.to_string())?;
                std::fs::write(&p, content).map_err(|e| e.to_string())?;
            }
            for d in dirs {
                std::fs::create_dir_all(dir.path().join(d)).map_err(|e| e.to_string())?;
            }
            let files = FsProjectFiles::open(dir.path()).map_err(|e| e.to_string())?;
            let root = files.root().to_path_buf();
            let dir = Arc::new(dir);
            Ok(Project {
                files: Arc::new(files),
                snapshot: Box::new(move || {
                    let _keep = &dir;
                    let files = snapshot(&root);
                    Box::pin(async move { files })
                }),
            })
        })
    }
}

#[test]
fn the_conformance_vectors_pass_on_the_real_file_system() {
    let report = futures_executor::block_on(jp_tests::run_all_with(false, &TempDirs));
    println!("conformance vectors (FsProjectFiles):\n{}", report.table());
    assert!(report.failures.is_empty(), "{} failing:\n{}", report.failures.len(), report.failures.join("\n"));
    assert_eq!(report.ran, jp_tests::VECTOR_COUNT);
}

fn dispatch(root: &Path, policy: AccessPolicy, method: &str, params: Value) -> Value {
    let files = Arc::new(FsProjectFiles::open(root).unwrap());
    let d = Dispatcher::builder("t", Arc::new(policy), files).build();
    let req = HostRequest::parse(method, params).unwrap();
    match futures_executor::block_on(d.handle(&req, &Id::Number(1), &NoEvents)) {
        Ok(v) => json!({ "ok": v }),
        Err(e) => json!({ "code": e.code().code(), "message": e.to_string() }),
    }
}

fn writable() -> AccessPolicy {
    AccessPolicy::stdio_default()
}

#[test]
fn symlinks_out_of_the_root_are_refused_for_read_write_and_create() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "outside secret").unwrap();
    let ws = tempfile::tempdir().unwrap();
    let w = ws.path();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), w.join("file_link")).unwrap();
    std::os::unix::fs::symlink(outside.path(), w.join("dir_link")).unwrap();
    std::os::unix::fs::symlink("../../", w.join("relative_link")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("missing.txt"), w.join("dangling_link")).unwrap();
    std::fs::create_dir(w.join("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), w.join("sub/mid")).unwrap();
    let cases = [
        ("fs.read", json!({"path": "file_link"})),
        ("fs.read", json!({"path": "dir_link/secret.txt"})),
        ("fs.read", json!({"path": "sub/mid/secret.txt"})),
        ("fs.list_dir", json!({"path": "dir_link"})),
        ("fs.list_dir", json!({"path": "relative_link"})),
        ("fs.write", json!({"path": "file_link", "content": "pwned"})),
        ("fs.write", json!({"path": "dir_link/new.txt", "content": "pwned"})),
        ("fs.write", json!({"path": "dangling_link", "content": "pwned"})),
        ("fs.write", json!({"path": "sub/mid/created.txt", "content": "pwned"})),
        ("fs.delete", json!({"path": "dir_link/secret.txt"})),
        ("fs.rename", json!({"from": "README.md", "to": "dir_link/moved.txt"})),
    ];
    std::fs::write(w.join("README.md"), "# readme").unwrap();
    for (method, params) in cases {
        let r = dispatch(w, writable(), method, params.clone());
        assert_eq!(r["code"], json!(-32001), "{method} {params} was not refused: {r}");
    }
    assert_eq!(std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(), "outside secret");
    let names: Vec<String> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["secret.txt"], "nothing was created outside");
    assert_eq!(std::fs::read_to_string(w.join("README.md")).unwrap(), "# readme");
}

#[test]
fn a_symlink_inside_the_root_is_checked_against_where_it_points() {
    let ws = tempfile::tempdir().unwrap();
    let w = ws.path();
    std::fs::create_dir(w.join("secret")).unwrap();
    std::fs::write(w.join("secret/key"), "k").unwrap();
    std::os::unix::fs::symlink("secret", w.join("innocent")).unwrap();
    let cfg: jp_core::policy::AccessConfig = serde_json::from_value(
        json!({"filesystem": [{"path": ".", "allow": ["read"]}, {"path": "secret", "allow": []}]}),
    )
    .unwrap();
    let policy = AccessPolicy::from_config(None, Some(&cfg)).unwrap();
    let r = dispatch(w, policy, "fs.read", json!({"path": "innocent/key"}));
    assert_eq!(r["code"], json!(-32001), "{r}");
    assert!(r["message"].as_str().unwrap().contains("resolves to 'secret/key'"), "{r}");
}

#[test]
fn writing_a_hard_link_to_an_outside_file_replaces_the_link_not_the_file() {
    let outside = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("victim.txt"), "original").unwrap();
    if std::fs::hard_link(outside.path().join("victim.txt"), ws.path().join("link.txt")).is_err() {
        // Different file systems: a hard link cannot exist, which is the safe case.
        return;
    }
    let r = dispatch(ws.path(), writable(), "fs.write", json!({"path": "link.txt", "content": "changed"}));
    assert_eq!(r, json!({"ok": {}}));
    assert_eq!(std::fs::read_to_string(outside.path().join("victim.txt")).unwrap(), "original");
    assert_eq!(std::fs::read_to_string(ws.path().join("link.txt")).unwrap(), "changed");
}

#[test]
fn a_directory_symlink_swap_race_never_reads_outside() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("f"), "OUTSIDE").unwrap();
    let ws = tempfile::tempdir().unwrap();
    let w = ws.path().to_path_buf();
    std::fs::create_dir(w.join("d")).unwrap();
    std::fs::write(w.join("d/f"), "inside").unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (w, out, stop) = (w.clone(), outside.path().to_path_buf(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::rename(w.join("d"), w.join("d_real"));
                let _ = std::os::unix::fs::symlink(&out, w.join("d"));
                let _ = std::fs::remove_file(w.join("d"));
                let _ = std::fs::rename(w.join("d_real"), w.join("d"));
            }
        })
    };
    let files = FsProjectFiles::open(&w).unwrap();
    let path = WorkspacePath::parse("d/f").unwrap();
    let mut inside = 0;
    for _ in 0..3000 {
        if let Ok(bytes) = futures_executor::block_on(files.read(&path)) {
            assert_eq!(bytes, b"inside", "read outside content during the race");
            inside += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    println!("{inside} of 3000 reads succeeded, none outside");
}

fn wp(s: &str) -> WorkspacePath {
    WorkspacePath::parse(s).unwrap()
}

fn link_refused<T: std::fmt::Debug>(r: Result<T, FilesError>) -> bool {
    matches!(&r, Err(FilesError::Io { message, .. }) if message.contains("symbolic link"))
}

/// The backend acts on exactly the path it is given: a link in any component is not followed
/// (the dispatcher resolves first and passes the resolved path), except that `delete` and `rename`
/// act on a link itself, never on its target.
#[test]
fn operations_follow_no_symbolic_link_only_resolve_does() {
    let ws = tempfile::tempdir().unwrap();
    let w = ws.path();
    std::fs::create_dir(w.join("real")).unwrap();
    std::fs::write(w.join("real/f"), "content").unwrap();
    std::os::unix::fs::symlink("real", w.join("dlink")).unwrap();
    std::os::unix::fs::symlink("real/f", w.join("flink")).unwrap();
    std::os::unix::fs::symlink("/etc", w.join("out")).unwrap();
    let files = FsProjectFiles::open(w).unwrap();
    futures_executor::block_on(async {
        assert_eq!(files.resolve(&wp("dlink/f")).await.unwrap(), wp("real/f"));
        assert_eq!(files.read(&files.resolve(&wp("flink")).await.unwrap()).await.unwrap(), b"content");

        assert!(link_refused(files.read(&wp("dlink/f")).await));
        assert!(link_refused(files.read(&wp("flink")).await));
        assert!(link_refused(files.metadata(&wp("dlink/f")).await));
        assert!(link_refused(files.metadata(&wp("flink")).await));
        assert!(link_refused(files.list_dir(&wp("dlink")).await));
        assert!(link_refused(files.exists(&wp("dlink/f")).await));
        assert!(files.exists(&wp("flink")).await.unwrap(), "the link itself is there");
        assert!(link_refused(files.write(&wp("dlink/new"), b"x").await));
        assert!(link_refused(files.write(&wp("flink"), b"x").await));
        assert!(link_refused(files.create_dir(&wp("dlink/sub")).await));
        assert!(link_refused(files.delete(&wp("dlink/f")).await));
        assert!(link_refused(files.rename(&wp("dlink/f"), &wp("g")).await));
        assert!(link_refused(files.rename(&wp("real/f"), &wp("dlink/g")).await));
        let grep = GrepQuery::new("content", &["dlink".into()], &[], 0).unwrap();
        assert!(link_refused(files.grep(&grep).await));
        assert_eq!(std::fs::read_to_string(w.join("real/f")).unwrap(), "content");
        assert_eq!(std::fs::read_dir(w.join("real")).unwrap().count(), 1, "nothing created through the link");

        // Listing shows a link as what it points to inside the project, and leaves out the rest.
        let listed: Vec<(String, EntryKind)> =
            files.list_dir(&WorkspacePath::root()).await.unwrap().into_iter().map(|e| (e.path, e.kind)).collect();
        let want = [("dlink", EntryKind::Dir), ("flink", EntryKind::File), ("real", EntryKind::Dir)];
        assert_eq!(listed, want.map(|(n, k)| (n.to_owned(), k)));

        // delete and rename act on the link, never on its target.
        files.rename(&wp("dlink"), &wp("moved")).await.unwrap();
        assert!(std::fs::symlink_metadata(w.join("moved")).unwrap().file_type().is_symlink());
        files.delete(&wp("flink")).await.unwrap();
        files.delete(&wp("moved")).await.unwrap();
        assert_eq!(std::fs::read_to_string(w.join("real/f")).unwrap(), "content");
    });
}

#[test]
fn a_fifo_in_the_project_is_refused_not_waited_on() {
    let ws = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("mkfifo").arg(ws.path().join("pipe")).status().unwrap();
    assert!(status.success());
    let files = FsProjectFiles::open(ws.path()).unwrap();
    let r = futures_executor::block_on(files.read(&wp("pipe")));
    assert!(matches!(&r, Err(FilesError::Io { message, .. }) if message.contains("not a regular file")), "{r:?}");
}

/// fs.grep stops searching once its matches pass `max_bytes`, rather than collecting every match
/// in the project and trimming afterwards.
#[test]
fn grep_stops_once_the_matches_pass_max_bytes() {
    let ws = tempfile::tempdir().unwrap();
    let line = format!("needle {}\n", "x".repeat(60));
    for i in 0..200 {
        std::fs::write(ws.path().join(format!("f{i:03}.txt")), line.repeat(200)).unwrap();
    }
    let files = FsProjectFiles::open(ws.path()).unwrap();
    let one_file = 200 * (line.len() - 1 + 16) + "f000.txt".len();
    let mut query = GrepQuery::new("needle", &[], &[], 0).unwrap();
    let all = futures_executor::block_on(files.grep(&query)).unwrap();
    assert_eq!(all.len(), 200, "unbounded by default");
    query.max_bytes = 4096;
    let some = futures_executor::block_on(files.grep(&query)).unwrap();
    let total: usize = some.iter().map(match_bytes).sum();
    assert!(!some.is_empty() && total > query.max_bytes, "the file that crossed the cap is kept: {total}");
    assert!(total <= query.max_bytes + one_file, "{total} bytes in {} files for a cap of 4096", some.len());
}
