//! The `jp` command run from temp workspaces (the CLI tests' shared helpers).

use std::path::Path;
use std::process::{Command, Output};

const JP: &str = env!("CARGO_BIN_EXE_jp");

pub(crate) fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("src")).unwrap();
    std::fs::write(ws.path().join("src/main.rs"), "fn main() {\n    println!(\"hi\");\n}\n").unwrap();
    std::fs::write(ws.path().join("README.md"), "# demo\n").unwrap();
    std::fs::write(ws.path().join(".env"), "TOKEN=hunter2\n").unwrap();
    ws
}

pub(crate) fn jp(ws: &Path, args: &[&str]) -> Output {
    Command::new(JP).arg("--workspace").arg(ws).args(args).stdin(std::process::Stdio::null()).output().unwrap()
}

/// Run `jp` on a real pseudo-terminal (util-linux `script`), typing `input` after a moment.
pub(crate) fn jp_on_a_terminal(ws: &Path, args: &str, input: &str) -> Output {
    use std::io::Write as _;
    let mut child = Command::new("script")
        .args(["-qec", &format!("{JP} --workspace {} {args}", ws.display()), "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("util-linux `script` runs jp on a pseudo-terminal");
    let mut stdin = child.stdin.take().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    // jp may be done before anything is typed (when it does not ask).
    let _ = stdin.write_all(input.as_bytes());
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    out
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub(crate) fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

pub(crate) fn write_config(ws: &Path, text: &str) {
    std::fs::create_dir_all(ws.join(".jp")).unwrap();
    std::fs::write(ws.join(".jp/config.toml"), text).unwrap();
    // Some tests write configurations jp cannot use, to see the errors it gives.
    super::try_approve_config(ws);
}

/// A small Python VFS tool (stdlib only) the CLI tests configure.
pub(crate) const PY_VFS_TOOL: &str = r#"import json, sys
init = json.loads(sys.stdin.readline())
tool = init["params"]["tool"]
if tool.get("action") == "schema":
    schema = {"tools": [{"name": "count_lines", "summary": "Count the lines of a file.",
                         "parameters": {"path": {"type": "string", "summary": "The file."}}}]}
    print(json.dumps({"jsonrpc": "2.0", "method": "result", "params": {"content": json.dumps(schema)}}), flush=True)
    sys.exit(0)
path = tool["arguments"]["path"]
print(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "fs.read", "params": {"path": path}}), flush=True)
resp = json.loads(sys.stdin.readline())
if "error" in resp:
    print(json.dumps({"jsonrpc": "2.0", "method": "error", "params": {"message": resp["error"]["message"]}}), flush=True)
else:
    n = len(resp["result"]["content"].splitlines())
    print(json.dumps({"jsonrpc": "2.0", "method": "result", "params": {"content": f"{path}: {n} lines"}}), flush=True)
"#;
