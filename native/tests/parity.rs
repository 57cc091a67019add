//! Write once, run anywhere: the first-party tools as a VFS subprocess (`jp __tool` under the OS
//! sandbox), in-process on the builtin runtime and as a WASI component give byte-identical
//! results and identical denials, over the same file sets and policies — because all three ask
//! the same dispatcher.

#![cfg(target_os = "linux")]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use jp_core::cancel::CancellationToken;
use jp_core::runtime::{Config, ExecutionOutcome, ToolCall, ToolConfig};
use jp_native::files::FsProjectFiles;
use jp_native::runtime::builtin::BuiltinRuntime;
use jp_native::runtime::services::HostServices;
use jp_native::runtime::vfs::VfsRuntime;
use jp_native::runtime::wasm::{GUESTS_DIR, WasmEngine, WasmRuntime};
use serde_json::{Value, json};

const JP: &str = env!("CARGO_BIN_EXE_jp");

/// The file set every case starts from.
fn populate(w: &Path) {
    let files: [(&str, &[u8]); 9] = [
        ("README.md", b"# demo\nA project.\n"),
        ("src/main.rs", b"fn main() {\n    println!(\"hi\");\n}\n"),
        ("src/lib.rs", b"pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n// TODO: more\n"),
        ("src/nested/deep.rs", b"// TODO: deep\n"),
        ("docs/guide.md", b"Guide\n\nTODO: write\n"),
        ("data/blob.bin", b"\x00\x01\x02\xffbinary"),
        ("secrets/key.txt", b"s3cr3t\n"),
        (".env", b"TOKEN=hunter2\n"),
        ("caf\u{e9}.txt", "unicode name\n".as_bytes()),
    ];
    for (path, content) in files {
        let p = w.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
}

fn tree(w: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(p.strip_prefix(root).unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(w, w, &mut out);
    out.retain(|k, _| !k.starts_with(".jp/"));
    out
}

const POLICIES: [(&str, &str); 3] = [
    ("read-only", r#"filesystem = [{ path = ".", allow = ["read"] }]"#),
    (
        "writable except src and secrets",
        r#"filesystem = [{ path = ".", allow = ["read", "write"] }, { path = "src", allow = ["read"] }, { path = "secrets", allow = [] }]"#,
    ),
    ("docs only", r#"filesystem = [{ path = "docs", allow = ["read", "write"] }]"#),
];

fn cases() -> Vec<(&'static str, Value)> {
    vec![
        ("fs_read_file", json!({"path": "src/main.rs"})),
        ("fs_read_file", json!({"path": "src/lib.rs", "start_line": 2, "end_line": 3})),
        ("fs_read_file", json!({"path": "data/blob.bin"})),
        ("fs_read_file", json!({"path": "missing.txt"})),
        ("fs_read_file", json!({"path": ".env"})),
        ("fs_read_file", json!({"path": "secrets/key.txt"})),
        ("fs_read_file", json!({"path": "../outside"})),
        ("fs_read_file", json!({"path": "caf\u{e9}.txt"})),
        ("fs_read_file", json!({})),
        ("fs_list_files", json!({})),
        ("fs_list_files", json!({"path": "src", "recursive": false})),
        ("fs_list_files", json!({"path": "src", "extensions": ["rs"]})),
        ("fs_list_files", json!({"path": "nope"})),
        ("fs_grep_files", json!({"pattern": "TODO"})),
        ("fs_grep_files", json!({"pattern": "fn \\w+", "paths": ["src"], "context": 1})),
        ("fs_grep_files", json!({"pattern": "s3cr3t|hunter2"})),
        ("fs_grep_files", json!({"pattern": "(unclosed"})),
        ("fs_create_file", json!({"path": "docs/new.md", "content": "new\n"})),
        ("fs_create_file", json!({"path": "src/new.rs", "content": "x"})),
        ("fs_create_file", json!({"path": "README.md", "content": "over"})),
        ("fs_create_file", json!({"path": "README.md", "content": "over", "overwrite": true})),
        ("fs_modify_file", json!({"path": "docs/guide.md", "patterns": [{"old": "TODO: write", "new": "Done."}]})),
        ("fs_modify_file", json!({"path": "src/lib.rs", "patterns": [{"old": "a + b", "new": "a - b"}]})),
        ("fs_modify_file", json!({"path": "docs/guide.md", "patterns": [{"old": "absent", "new": "x"}]})),
        ("fs_delete_file", json!({"path": "docs/guide.md"})),
        ("fs_delete_file", json!({"path": "secrets/key.txt"})),
        ("fs_move_file", json!({"source": "docs/guide.md", "destination": "docs/moved.md"})),
        ("fs_move_file", json!({"source": "src/main.rs", "destination": "main.rs"})),
    ]
}

fn config(command: Option<&str>, wasm: Option<&str>, access: &str) -> ToolConfig {
    let mut text = "[conversation.tools.t]\nsource = \"local\"\n".to_owned();
    if let Some(c) = command {
        text.push_str(&format!("command = {c:?}\nruntime = \"vfs\"\n"));
    }
    if let Some(w) = wasm {
        text.push_str(&format!("wasm = {w:?}\n"));
    }
    text.push_str(&format!("[conversation.tools.t.access]\n{access}\n"));
    Config::from_toml(&text, "parity.toml").unwrap().conversation.tools.remove("t").unwrap()
}

fn call(name: &str, args: &Value) -> ToolCall {
    ToolCall {
        name: name.into(),
        id: "p".into(),
        arguments: args.as_object().cloned().unwrap(),
        answers: Default::default(),
        cancel: CancellationToken::new(),
        inquirer: None,
        policy: None,
    }
}

fn summary(out: ExecutionOutcome) -> Result<String, String> {
    match out {
        ExecutionOutcome::Completed { result: Ok(r), .. } => Ok(r.to_text()),
        ExecutionOutcome::Completed { result: Err(e), .. } => Err(e.message),
        other => Err(format!("{other:?}")),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn vfs_binary_builtin_and_component_agree_byte_for_byte() {
    let engine = WasmEngine::shared().unwrap();
    let component = Path::new(GUESTS_DIR).join("jp_fs_component.wasm");
    let mut compared = 0;
    let mut denials = 0;
    for (policy_name, access) in POLICIES {
        for (tool, args) in cases() {
            let (a, b, c) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            populate(a.path());
            populate(b.path());
            populate(c.path());

            let files = Arc::new(FsProjectFiles::open(a.path()).unwrap());
            let vfs = VfsRuntime::new(files, a.path());
            let vfs_out = vfs.run(call(tool, &args), &config(Some(&format!("{JP} __tool")), None, access), None).await;

            let files = Arc::new(FsProjectFiles::open(b.path()).unwrap());
            let wasm = WasmRuntime::new(engine.clone(), files, b.path());
            let wasm_cfg = config(None, Some(component.to_str().unwrap()), access);
            let wasm_out = wasm.run(call(tool, &args), &wasm_cfg, None).await;

            let files = Arc::new(FsProjectFiles::open(c.path()).unwrap());
            let builtin = BuiltinRuntime::new(HostServices::new(files, c.path()), jp_fs_tools::TOOLS);
            let builtin_cfg = config(None, Some("unused.wasm"), access);
            let builtin_out =
                builtin.run(call(tool, &args), &builtin_cfg, jp_core::policy::AccessPolicy::vfs_default()).await;

            let (v, w) = (summary(vfs_out.unwrap()), summary(wasm_out.unwrap()));
            let i = summary(builtin_out.unwrap());
            assert_eq!(v, w, "{policy_name}: {tool} {args}");
            assert_eq!(v, i, "{policy_name}: {tool} {args} (builtin)");
            assert_eq!(tree(a.path()), tree(b.path()), "{policy_name}: {tool} {args}: the files differ afterwards");
            assert_eq!(tree(a.path()), tree(c.path()), "{policy_name}: {tool} {args}: builtin left other files");
            compared += 1;
            if v.as_ref().is_err_and(|e| e.contains("Access denied")) {
                denials += 1;
            }
        }
    }
    println!("parity: {compared} calls compared, {denials} of them denials");
    assert!(denials >= 10, "the policies must deny something for the comparison to mean anything");
}
