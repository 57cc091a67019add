//! Components under the real wasmtime runtime: the seed's test tool, the builtin `learn`, the
//! first-party tools as a component (and their parity with the VFS binary), policy holding for
//! plain `std::fs`, and the per-call limits.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use jp_core::cancel::CancellationToken;
use jp_core::runtime::{ComponentError, Config, ExecutionOutcome, RuntimeError, ToolCall, ToolConfig};
use jp_native::files::FsProjectFiles;
use jp_native::runtime::wasm::{
    ComponentSource, GUESTS_DIR, LEARN_SCHEMA, LEARN_WASM, WasmEngine, WasmLimits, WasmRuntime,
};
use serde_json::{Value, json};

fn guest(name: &str) -> PathBuf {
    Path::new(GUESTS_DIR).join(format!("{name}.wasm"))
}

fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let w = ws.path();
    std::fs::create_dir_all(w.join("src")).unwrap();
    std::fs::create_dir_all(w.join(".jp/tools")).unwrap();
    std::fs::write(w.join("src/main.rs"), "fn main() {\n    println!(\"hi\");\n}\n").unwrap();
    std::fs::write(w.join("README.md"), "# demo\n").unwrap();
    std::fs::write(w.join(".env"), "TOKEN=hunter2\n").unwrap();
    for g in ["jp_tool_test", "jp_tool_faults", "jp_fs_component"] {
        std::fs::copy(guest(g), w.join(format!(".jp/tools/{g}.wasm"))).unwrap();
    }
    ws
}

fn config(toml_body: &str) -> ToolConfig {
    let text = format!("[conversation.tools.t]\nsource = \"local\"\n{toml_body}");
    Config::from_toml(&text, "test.toml").unwrap().conversation.tools.remove("t").unwrap()
}

fn builtin() -> ToolConfig {
    let text = "[conversation.tools.learn]\nsource = \"builtin\"\n";
    Config::from_toml(text, "test.toml").unwrap().conversation.tools.remove("learn").unwrap()
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall::new(name, "c", args.as_object().cloned().unwrap_or_default())
}

fn runtime(ws: &Path) -> WasmRuntime {
    let files = Arc::new(FsProjectFiles::open(ws).unwrap());
    WasmRuntime::new(WasmEngine::shared().unwrap(), files, ws)
}

fn ok(out: &ExecutionOutcome) -> String {
    match out {
        ExecutionOutcome::Completed { result: Ok(r), .. } => r.to_text(),
        other => panic!("expected success, got {other:?}"),
    }
}

fn tool_err(out: &ExecutionOutcome) -> String {
    match out {
        ExecutionOutcome::Completed { result: Err(e), .. } => e.message.clone(),
        other => panic!("expected a tool error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_seed_test_tool_reads_a_workspace_file() {
    let ws = workspace();
    let rt = runtime(ws.path());
    for cfg in [
        config("wasm = \".jp/tools/jp_tool_test.wasm\""),
        config("command = \".jp/tools/jp_tool_test.wasm\""),
        config("command = \".jp/tools/jp_tool_test.wasm\"\nruntime = \"wasm\""),
    ] {
        let out = rt.run(call("wasm_test", json!({"path": "src/main.rs"})), &cfg, None).await.unwrap();
        assert_eq!(ok(&out), "fn main() {\n    println!(\"hi\");\n}\n");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replaced_component_file_is_reloaded() {
    // The cache is keyed by path + content: an unchanged file is not re-read, a changed one is.
    let ws = workspace();
    let rt = runtime(ws.path());
    let cfg = config("wasm = \".jp/tools/current.wasm\"");
    let target = ws.path().join(".jp/tools/current.wasm");
    std::fs::copy(guest("jp_tool_test"), &target).unwrap();
    let out = rt.run(call("wasm_test", json!({"path": "README.md"})), &cfg, None).await.unwrap();
    assert_eq!(ok(&out), "# demo\n");
    // Rewritten in place (same inode), then replaced by rename (new inode): both are seen.
    std::fs::copy(guest("jp_tool_faults"), &target).unwrap();
    let out = rt.run(call("ok", json!({})), &cfg, None).await.unwrap();
    assert_eq!(ok(&out), "ok");
    let staged = ws.path().join(".jp/tools/staged.wasm");
    std::fs::copy(guest("jp_tool_test"), &staged).unwrap();
    std::fs::rename(&staged, &target).unwrap();
    let out = rt.run(call("wasm_test", json!({"path": "README.md"})), &cfg, None).await.unwrap();
    assert_eq!(ok(&out), "# demo\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn scoping_prevents_escape() {
    let ws = workspace();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "outside secret").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), ws.path().join("link_out")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("dir_link")).unwrap();
    let rt = runtime(ws.path());
    let test_tool = config("wasm = \".jp/tools/jp_tool_test.wasm\"");
    for path in ["../../etc/passwd", "/etc/passwd", "../outside.txt", "link_out", "dir_link/secret.txt", "src/../../x"]
    {
        let out = rt.run(call("wasm_test", json!({"path": path})), &test_tool, None).await.unwrap();
        let message = tool_err(&out);
        assert!(message.starts_with("Failed to read file"), "{path}: {message}");
        assert!(!message.contains("outside secret") && !message.contains("root:"), "{path}: {message}");
    }
    // Every way out the faults component knows, reported line by line.
    let faults = config("wasm = \".jp/tools/jp_tool_faults.wasm\"");
    let report = ok(&rt.run(call("escape", json!({})), &faults, None).await.unwrap());
    for line in report.lines() {
        assert!(!line.contains("READ"), "escaped: {line}\n{report}");
    }
    assert!(report.contains("env: 0"), "no environment: {report}");
    assert!(!report.contains("socket: Ok"), "no sockets: {report}");
}

#[tokio::test(flavor = "multi_thread")]
async fn std_fs_in_a_guest_obeys_the_same_policy_as_jp_host_filesystem() {
    let ws = workspace();
    let rt = runtime(ws.path());
    let policy = "[conversation.tools.t.access]\nfilesystem = [{ path = \".\", allow = [\"read\", \"write\"] }, { path = \"src\", allow = [\"read\"] }]\n";
    let faults = config(&format!("wasm = \".jp/tools/jp_tool_faults.wasm\"\n{policy}"));
    let fs_tools = config(&format!("wasm = \".jp/tools/jp_fs_component.wasm\"\n{policy}"));

    // `.env` is sensitive: without anyone to ask, both ways of reading it are denied.
    let plain = tool_err(&rt.run(call("read", json!({"path": ".env"})), &faults, None).await.unwrap());
    assert!(plain.contains("PermissionDenied"), "{plain}");
    let host = tool_err(&rt.run(call("fs_read_file", json!({"path": ".env"})), &fs_tools, None).await.unwrap());
    assert!(host.contains("sensitive") && host.contains("non-interactive"), "{host}");

    // `src` is read-only for both.
    let plain =
        tool_err(&rt.run(call("write", json!({"path": "src/x.rs", "content": "x"})), &faults, None).await.unwrap());
    assert!(plain.contains("PermissionDenied"), "{plain}");
    let host = tool_err(
        &rt.run(call("fs_create_file", json!({"path": "src/x.rs", "content": "x"})), &fs_tools, None).await.unwrap(),
    );
    assert!(host.contains("Access denied"), "{host}");
    assert!(!ws.path().join("src/x.rs").exists());
    let plain = tool_err(&rt.run(call("remove", json!({"path": "src/main.rs"})), &faults, None).await.unwrap());
    assert!(plain.contains("PermissionDenied"), "{plain}");
    let plain = tool_err(
        &rt.run(call("rename", json!({"from": "src/main.rs", "to": "main.rs"})), &faults, None).await.unwrap(),
    );
    assert!(plain.contains("PermissionDenied"), "{plain}");
    assert!(ws.path().join("src/main.rs").exists());

    // Elsewhere plain std::fs works, and the file is written whole.
    assert_eq!(
        ok(&rt.run(call("write", json!({"path": "notes/a.txt", "content": "hello"})), &faults, None).await.unwrap()),
        "written"
    );
    assert_eq!(std::fs::read_to_string(ws.path().join("notes/a.txt")).unwrap(), "hello");
    assert_eq!(
        ok(&rt.run(call("append", json!({"path": "notes/a.txt", "content": " world"})), &faults, None).await.unwrap()),
        "appended"
    );
    assert_eq!(std::fs::read_to_string(ws.path().join("notes/a.txt")).unwrap(), "hello world");
    assert_eq!(ok(&rt.run(call("read", json!({"path": "notes/a.txt"})), &faults, None).await.unwrap()), "hello world");
    assert_eq!(ok(&rt.run(call("list", json!({"path": "src"})), &faults, None).await.unwrap()), "main.rs");
    let listing = ok(&rt.run(call("list", json!({"path": "."})), &faults, None).await.unwrap());
    assert_eq!(listing, ".env\n.jp/\nREADME.md\nnotes/\nsrc/", "{listing}");
    assert_eq!(ok(&rt.run(call("mkdir", json!({"path": "a/b"})), &faults, None).await.unwrap()), "created");
    assert!(ws.path().join("a/b").is_dir());
    assert_eq!(
        ok(&rt.run(call("rename", json!({"from": "notes/a.txt", "to": "b.txt"})), &faults, None).await.unwrap()),
        "renamed"
    );
    assert_eq!(ok(&rt.run(call("remove", json!({"path": "b.txt"})), &faults, None).await.unwrap()), "removed");
    assert!(!ws.path().join("b.txt").exists());
}

fn subjects() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("ast-grep.md"), "# ast-grep\nSearch code by syntax.\n").unwrap();
    std::fs::write(d.join("config.toml"), "key = \"value\"\n").unwrap();
    std::fs::write(d.join(".draft.md"), "not ready").unwrap();
    std::fs::create_dir_all(d.join("rust")).unwrap();
    std::fs::write(d.join("rust/errors.md"), "Use thiserror.\n").unwrap();
    std::fs::create_dir_all(d.join(".private")).unwrap();
    std::fs::write(d.join(".private/keys.md"), "hidden").unwrap();
    dir
}

fn learn(subjects: &Path) -> Option<ComponentSource> {
    let files = jp_native::files::FsProjectFiles::open(subjects).unwrap();
    Some(ComponentSource::Builtin { name: "learn", bytes: LEARN_WASM, subjects: Some(std::sync::Arc::new(files)) })
}

#[tokio::test(flavor = "multi_thread")]
async fn learn_lists_reads_and_hides_dot_prefixed_subjects() {
    let ws = workspace();
    let kb = subjects();
    let rt = runtime(ws.path());
    let cfg = builtin();
    let topic = json!({"title": "Skills", "description": "Things to know.", "disabled": [], "learned": ["ast-grep"]});

    let list = ok(&rt.run(call("learn", json!({"_topic": topic})), &cfg, learn(kb.path())).await.unwrap());
    assert!(list.starts_with("# Skills\n\nThings to know."), "{list}");
    assert!(
        list.contains("- ast-grep (already learned)") && list.contains("- config") && list.contains("- rust/errors")
    );
    assert!(!list.contains("draft") && !list.contains("keys"), "{list}");

    // Markdown passes through; other formats are fenced with their language.
    let out =
        ok(&rt.run(call("learn", json!({"subjects": ["ast-grep", "config"]})), &cfg, learn(kb.path())).await.unwrap());
    assert!(out.contains("## Subject: ast-grep\n\n# ast-grep\nSearch code by syntax.\n"), "{out}");
    assert!(out.contains("## Subject: config\n\n```toml\nkey = \"value\"\n```"), "{out}");
    // Globs, and hidden subjects are not found even when asked for by name.
    let all = ok(&rt.run(call("learn", json!({"subjects": "*"})), &cfg, learn(kb.path())).await.unwrap());
    assert!(all.contains("ast-grep") && !all.contains("rust/errors") && !all.contains("not ready"), "{all}");
    let nested = ok(&rt.run(call("learn", json!({"subjects": "rust/*"})), &cfg, learn(kb.path())).await.unwrap());
    assert!(nested.contains("Use thiserror."), "{nested}");
    let hidden = tool_err(&rt.run(call("learn", json!({"subjects": ".draft"})), &cfg, learn(kb.path())).await.unwrap());
    assert!(hidden.contains("no subject matches"), "{hidden}");
    // Disabled subjects are hidden too.
    let out =
        ok(&rt.run(call("learn", json!({"_topic": {"disabled": ["config"]}})), &cfg, learn(kb.path())).await.unwrap());
    assert!(!out.contains("- config"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn builtin_and_local_components_give_the_same_outcome_shape() {
    let ws = workspace();
    let kb = subjects();
    let rt = runtime(ws.path());
    let from_builtin =
        rt.run(call("learn", json!({"subjects": "ast-grep"})), &builtin(), learn(kb.path())).await.unwrap();
    let local = rt
        .run(call("wasm_test", json!({"path": "README.md"})), &config("wasm = \".jp/tools/jp_tool_test.wasm\""), None)
        .await
        .unwrap();
    for out in [&from_builtin, &local] {
        assert!(matches!(out, ExecutionOutcome::Completed { id, result: Ok(_) } if id == "c"), "{out:?}");
    }
    let bad_builtin = rt.run(call("learn", json!({"subjects": 7})), &builtin(), learn(kb.path())).await.unwrap();
    let bad_local =
        rt.run(call("wasm_test", json!({})), &config("wasm = \".jp/tools/jp_tool_test.wasm\""), None).await.unwrap();
    for out in [&bad_builtin, &bad_local] {
        assert!(tool_err(out).starts_with("Invalid arguments"), "{out:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn components_describe_themselves() {
    let ws = workspace();
    let rt = runtime(ws.path());
    let schema =
        rt.describe("fs_read_file", ComponentSource::File(ws.path().join(".jp/tools/jp_fs_component.wasm"))).await;
    let schema: Value = serde_json::from_str(&schema.unwrap().unwrap()).unwrap();
    let names: Vec<&str> = schema["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"fs_read_file") && names.contains(&"fs_grep_files"), "{names:?}");
    let learn_schema =
        rt.describe("learn", ComponentSource::Builtin { name: "learn", bytes: LEARN_WASM, subjects: None }).await;
    // `jp` lists `learn` from the same file without compiling it (`LEARN_SCHEMA`): the
    // component's own answer must be exactly that.
    let learn_schema: Value = serde_json::from_str(&learn_schema.unwrap().unwrap()).unwrap();
    assert_eq!(learn_schema, serde_json::from_str::<Value>(LEARN_SCHEMA).unwrap());
    assert_eq!(learn_schema["tools"][0]["name"], "learn");
    // The seed's test tool exports only `run`.
    let none = rt.describe("t", ComponentSource::File(ws.path().join(".jp/tools/jp_tool_test.wasm"))).await.unwrap();
    assert_eq!(none, None);
}

#[tokio::test(flavor = "multi_thread")]
async fn load_errors_are_clear() {
    let ws = workspace();
    let rt = runtime(ws.path());
    let missing = rt.run(call("t", json!({})), &config("wasm = \"nope.wasm\""), None).await.unwrap_err();
    assert!(
        matches!(&missing, RuntimeError::Component(ComponentError::NotFound { path }) if path.ends_with("nope.wasm")),
        "{missing:?}"
    );
    assert!(missing.to_string().starts_with("Wasm binary not found: "), "{missing}");
    std::fs::write(ws.path().join("junk.wasm"), b"\0asm\x0d\0\x01\0garbage").unwrap();
    let junk = rt.run(call("t", json!({})), &config("wasm = \"junk.wasm\""), None).await.unwrap_err();
    assert!(junk.to_string().contains("Failed to compile Wasm component"), "{junk}");
    let faults = config("wasm = \".jp/tools/jp_tool_faults.wasm\"");
    let unknown = tool_err(&rt.run(call("nope", json!({})), &faults, None).await.unwrap());
    assert_eq!(unknown, "no tool named 'nope'");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_guest_cannot_probe_whether_a_denied_file_exists() {
    let ws = workspace();
    std::fs::create_dir_all(ws.path().join("secret")).unwrap();
    std::fs::write(ws.path().join("secret/plans.txt"), "x").unwrap();
    let policy = "[conversation.tools.t.access]\nfilesystem = [{ path = \".\", allow = [\"read\", \"write\"] }, { path = \"secret\", allow = [] }]\n";
    let faults = config(&format!("wasm = \".jp/tools/jp_tool_faults.wasm\"\n{policy}"));
    let rt = runtime(ws.path());
    // An existing and a missing file below a denied directory fail the same way.
    for path in ["secret/plans.txt", "secret/missing.txt"] {
        let read = tool_err(&rt.run(call("read", json!({ "path": path })), &faults, None).await.unwrap());
        assert!(read.contains("PermissionDenied"), "{path}: {read}");
        let append =
            tool_err(&rt.run(call("append", json!({ "path": path, "content": "y" })), &faults, None).await.unwrap());
        assert!(append.contains("PermissionDenied"), "{path}: {append}");
    }
    assert_eq!(std::fs::read_to_string(ws.path().join("secret/plans.txt")).unwrap(), "x");
}

/// How many files the `hoard` guest kept open (from its panic message).
fn hoarded(message: &str) -> usize {
    message
        .split("hoarded ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{message}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn open_file_buffers_are_charged_to_the_memory_limit_and_descriptors_are_counted() {
    let ws = workspace();
    let rt = runtime(ws.path()).limits(WasmLimits { memory: 64 << 20, ..WasmLimits::default() });
    let faults = config("wasm = \".jp/tools/jp_tool_faults.wasm\"");
    // 40 files of 8 MiB kept open: 320 MiB of host buffers against a 64 MiB limit.
    let big = tool_err(&rt.run(call("hoard", json!({"files": 40, "mib": 8})), &faults, None).await.unwrap());
    // Eight fit exactly; writing the ninth fails (EIO through a stream: wasi-libc does not ask
    // the host for the code).
    assert!(hoarded(&big) <= 8 && big.contains("first failure: write "), "{big}");
    // Empty files cost no bytes: the descriptor limit stops them.
    let many = tool_err(&rt.run(call("hoard", json!({"files": 1000, "mib": 0})), &faults, None).await.unwrap());
    assert!(hoarded(&many) < 128 && many.contains("first failure: open "), "{many}");
    // The trap committed nothing, and the next call has its whole budget again.
    assert!(!ws.path().join("hoard/0.bin").exists());
    let out = rt.run(call("hoard", json!({"files": 7, "mib": 8})), &faults, None).await.unwrap();
    assert!(tool_err(&out).contains("hoarded 7 files; first failure: none"), "{out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn limits_end_a_call_cleanly_and_the_next_call_is_unaffected() {
    let ws = workspace();
    // A deadline the other calls (a 64 MiB bomb, a 4 MiB flood) meet on a busy machine too.
    let limits = WasmLimits { deadline: Duration::from_secs(5), memory: 64 << 20, output: 1 << 20, stdio: 64 << 10 };
    let rt = runtime(ws.path()).limits(limits);
    let faults = config("wasm = \".jp/tools/jp_tool_faults.wasm\"");

    // The deadline stops the spin: a `Timeout`, not the spin's own end (it has none).
    let spin = rt.run(call("spin", json!({})), &faults, None).await.unwrap_err();
    assert!(matches!(spin, RuntimeError::Timeout { .. }), "{spin}");
    assert_eq!(ok(&rt.run(call("ok", json!({})), &faults, None).await.unwrap()), "ok");

    let bomb = tool_err(&rt.run(call("bomb", json!({})), &faults, None).await.unwrap());
    assert!(bomb.contains("exceeded its memory limit of 64 MiB"), "{bomb}");
    assert_eq!(ok(&rt.run(call("ok", json!({})), &faults, None).await.unwrap()), "ok");

    let flood = tool_err(&rt.run(call("flood", json!({"bytes": 4 << 20})), &faults, None).await.unwrap());
    assert!(flood.contains("over the 1048576-byte output limit"), "{flood}");
    let print = rt.run(call("print", json!({"lines": 1000})), &faults, None).await.unwrap();
    assert!(matches!(print, ExecutionOutcome::Completed { .. }), "{print:?}");
    assert_eq!(ok(&rt.run(call("ok", json!({})), &faults, None).await.unwrap()), "ok");

    let cancel = CancellationToken::new();
    let mut spin = call("spin", json!({}));
    spin.cancel = cancel.clone();
    let stopper = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let out = runtime(ws.path()).run(spin, &faults, None).await.unwrap();
    stopper.await.unwrap();
    // Cancelled, not timed out: the cancellation stopped the spin, which never ends by itself.
    assert!(matches!(out, ExecutionOutcome::Cancelled { .. }), "{out:?}");
}

#[test]
fn the_on_disk_cache_is_reused_by_a_new_engine_and_survives_a_corrupt_artifact() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("wasm");
    let bytes = std::fs::read(guest("jp_tool_test")).unwrap();
    WasmEngine::new(Some(&cache)).unwrap().preload(&bytes).unwrap();
    let artifacts: Vec<_> = std::fs::read_dir(&cache).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(artifacts.len(), 1, "{artifacts:?}");
    assert!(artifacts[0].extension().is_some_and(|e| e == "cwasm"));
    let written = std::fs::read(&artifacts[0]).unwrap();
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let first = inode(&artifacts[0]);
    // A second engine (what a second `jp` process does) maps the artifact instead of compiling
    // (a recompile would rename a new file into place: another inode).
    WasmEngine::new(Some(&cache)).unwrap().preload(&bytes).unwrap();
    assert_eq!(inode(&artifacts[0]), first, "the artifact was reused, not rewritten");
    // A torn or foreign artifact is refused by wasmtime's header check and replaced (removed,
    // recompiled, written again — the file system may hand out the same inode, so compare content).
    std::fs::write(&artifacts[0], b"not a compiled component").unwrap();
    WasmEngine::new(Some(&cache)).unwrap().preload(&bytes).unwrap();
    assert_eq!(std::fs::read(&artifacts[0]).unwrap(), written, "the bad artifact was replaced");
}
