//! `IndexedDbProjectFiles` in headless Chromium (wasm-bindgen-test, `run_in_browser`): the
//! conformance vectors, persistence across reopening the database, and all-or-nothing
//! transactions.

#![cfg(target_arch = "wasm32")]

use std::cell::Cell;
use std::sync::Arc;

use jp_core::BoxFuture;
use jp_core::files::{FilesError, ProjectFiles};
use jp_core::policy::WorkspacePath;
use jp_tests::{Backend, Project};
use jp_web::files::IndexedDbProjectFiles;
use wasm_bindgen_test::{console_log, wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

fn p(s: &str) -> WorkspacePath {
    WorkspacePath::parse(s).unwrap()
}

/// A fresh database per vector group.
struct IndexedDb {
    next: Cell<u32>,
    prefix: String,
}

impl Backend for IndexedDb {
    fn create(&self, files: Vec<(String, Vec<u8>)>, dirs: Vec<String>) -> BoxFuture<'_, Result<Project, String>> {
        Box::pin(async move {
            let n = self.next.get();
            self.next.set(n + 1);
            let name = format!("{}-{n}", self.prefix);
            IndexedDbProjectFiles::delete_database(&name).await.map_err(|e| e.to_string())?;
            // The core's traits take `Arc<dyn ProjectFiles>`; wasm32 here has one thread.
            #[allow(clippy::arc_with_non_send_sync)]
            let db = Arc::new(IndexedDbProjectFiles::open(&name).await.map_err(|e| e.to_string())?);
            let changes: Vec<_> = files
                .into_iter()
                .map(|(path, bytes)| Ok((WorkspacePath::parse(&path)?, Some(bytes))))
                .collect::<Result<_, jp_core::policy::PathError>>()
                .map_err(|e| e.to_string())?;
            db.write_all(&changes).await.map_err(|e| e.to_string())?;
            for d in dirs {
                db.create_dir(&WorkspacePath::parse(&d).map_err(|e| e.to_string())?)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            let snap = db.clone();
            Ok(Project {
                files: db,
                snapshot: Box::new(move || {
                    let snap = snap.clone();
                    Box::pin(async move { snap.all_files().await.unwrap_or_default() })
                }),
            })
        })
    }
}

#[wasm_bindgen_test]
async fn conformance_vectors_on_indexeddb() {
    let backend = IndexedDb { next: Cell::new(0), prefix: "jp-vectors".into() };
    let report = jp_tests::run_all_with(false, &backend).await;
    console_log!("conformance vectors (IndexedDB):\n{}", report.table());
    assert!(report.failures.is_empty(), "{} failing vectors:\n{}", report.failures.len(), report.failures.join("\n"));
    assert_eq!(report.ran, jp_tests::VECTOR_COUNT, "every embedded case ran");
}

#[wasm_bindgen_test]
async fn files_persist_across_reopening_the_database() {
    let name = "jp-persist";
    IndexedDbProjectFiles::delete_database(name).await.unwrap();
    let db = IndexedDbProjectFiles::open(name).await.unwrap();
    db.write(&p("src/main.rs"), b"fn main() {}\n").await.unwrap();
    db.create_dir(&p("empty/dir")).await.unwrap();
    db.rename(&p("src"), &p("lib")).await.unwrap();
    db.close();

    let again = IndexedDbProjectFiles::open(name).await.unwrap();
    assert_eq!(again.read(&p("lib/main.rs")).await.unwrap(), b"fn main() {}\n");
    assert!(!again.exists(&p("src")).await.unwrap());
    let names: Vec<String> = again.list_dir(&p("empty")).await.unwrap().into_iter().map(|e| e.path).collect();
    assert_eq!(names, ["dir"]);
    again.close();
}

#[wasm_bindgen_test]
async fn a_transaction_that_fails_midway_leaves_the_old_content() {
    let name = "jp-atomic";
    IndexedDbProjectFiles::delete_database(name).await.unwrap();
    let db = IndexedDbProjectFiles::open(name).await.unwrap();
    db.write(&p("a.txt"), b"old a").await.unwrap();
    db.write(&p("file"), b"a file, not a directory").await.unwrap();

    // The first change is applied inside the transaction, the second fails (its parent is a
    // file): the transaction is aborted and `a.txt` keeps its old content.
    let changes = vec![(p("a.txt"), Some(b"new a".to_vec())), (p("file/b.txt"), Some(b"b".to_vec()))];
    let err = db.write_all(&changes).await.unwrap_err();
    assert!(matches!(err, FilesError::NotADirectory(ref f) if f == "file"), "{err}");
    assert_eq!(db.read(&p("a.txt")).await.unwrap(), b"old a");
    assert!(!db.exists(&p("file/b.txt")).await.unwrap());

    // A rename of a subtree into a path under a file fails as a whole, too.
    db.write(&p("dir/x"), b"x").await.unwrap();
    db.write(&p("dir/y"), b"y").await.unwrap();
    assert!(db.rename(&p("dir"), &p("file/dir")).await.is_err());
    assert_eq!(db.read(&p("dir/x")).await.unwrap(), b"x");
    assert_eq!(db.read(&p("dir/y")).await.unwrap(), b"y");
    assert!(!db.exists(&p("file/dir")).await.unwrap());

    // A successful batch is visible as a whole.
    db.write_all(&[(p("a.txt"), Some(b"new a".to_vec())), (p("dir/x"), None)]).await.unwrap();
    assert_eq!(db.read(&p("a.txt")).await.unwrap(), b"new a");
    assert!(!db.exists(&p("dir/x")).await.unwrap());
    db.close();
}
