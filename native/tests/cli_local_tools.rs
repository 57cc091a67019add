//! Local tools configured in TOML, run by the real `jp`: a stdio tool under the OS sandbox that
//! describes itself, a policy the kernel cannot hold (fails closed), a tool that cannot describe
//! itself, a Python VFS tool, and `jp` itself as a configured VFS tool.

#![cfg(target_os = "linux")]

use serde_json::Value;

mod support;

const JP: &str = env!("CARGO_BIN_EXE_jp");
use support::cli::{PY_VFS_TOOL, code, jp, stderr, stdout, workspace, write_config};

const STDIO_TOOL: &str = r#"#!/bin/sh
# A legacy stdio tool: reads its context, writes a file in the workspace, tries to reach outside.
ctx=$(cat)
case "$ctx" in
  *'"action":"schema"'*)
    echo '{"tools":[{"name":"stamp","summary":"Stamp a file.","parameters":{"file":{"type":"string","summary":"Where."}}}]}'
    exit 0;;
esac
file=$(printf '%s' "$ctx" | sed -n 's/.*"file":"\([^"]*\)".*/\1/p')
echo stamped > "$file"
if cat /etc/hostname >/dev/null 2>&1; then outside=readable; else outside=denied; fi
echo "{\"type\":\"success\",\"content\":\"wrote $file; /etc/hostname $outside; cwd $(pwd)\"}"
"#;

/// A workspace with [`STDIO_TOOL`] as `tools/stamp.sh`, executable.
fn workspace_with_stamp_tool() -> tempfile::TempDir {
    let ws = workspace();
    std::fs::create_dir_all(ws.path().join("tools")).unwrap();
    let script = ws.path().join("tools/stamp.sh");
    std::fs::write(&script, STDIO_TOOL).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    ws
}

#[test]
fn a_stdio_tool_from_config_runs_in_the_workspace_under_the_sandbox_and_describes_itself() {
    let ws = workspace_with_stamp_tool();
    write_config(
        ws.path(),
        r#"
[conversation.tools.stamp]
source = "local"
command = "tools/stamp.sh"
description = "Writes 'stamped' into a file."
"#,
    );
    // Self-described (no `parameters`), with the config's description merged on top.
    let o = jp(ws.path(), &["tool", "schema", "stamp"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let schema: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(schema["summary"], "Stamp a file.");
    assert_eq!(schema["description"], "Writes 'stamped' into a file.");
    assert_eq!(schema["parameters"]["required"], serde_json::json!(["file"]));

    let o = jp(ws.path(), &["tool", "call", "stamp", "file=out.txt"]);
    assert_eq!(code(&o), 0, "{} {}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("wrote out.txt"), "{out}");
    assert!(out.contains("/etc/hostname denied"), "the sandbox must hide the rest of the system: {out}");
    let real_ws = std::fs::canonicalize(ws.path()).unwrap();
    assert!(out.contains(&format!("cwd {}", real_ws.display())), "{out}");
    assert_eq!(std::fs::read_to_string(ws.path().join("out.txt")).unwrap(), "stamped\n");
}

#[test]
fn a_stdio_tool_with_a_policy_the_kernel_cannot_hold_fails_closed() {
    let ws = workspace();
    std::fs::write(ws.path().join("t.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(ws.path().join("t.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    write_config(
        ws.path(),
        r#"
[conversation.tools.t]
source = "local"
command = "./t.sh"
parameters = {}
[conversation.tools.t.access]
filesystem = [{ path = ".", allow = ["read"] }, { path = "src", allow = ["write"] }]
"#,
    );
    let o = jp(ws.path(), &["tool", "call", "t"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("was not started") && err.contains("'src'") && err.contains("runtime = \"vfs\""), "{err}");
    // With the opt-out it runs (the policy is then advisory for a direct-access tool).
    let o = jp(ws.path(), &["--no-os-sandbox", "tool", "call", "t"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), "hi\n");
}

#[test]
fn a_stdio_tool_that_never_stops_writing_is_cut_one_byte_past_the_output_limit() {
    // `yes` writes forever: jp keeps at most the 10 MiB limit plus the one byte that tells it
    // there was more, then kills the tool's group and says what to do; nothing of it is printed.
    let ws = workspace();
    write_config(ws.path(), "[conversation.tools.chatty]\nsource = \"local\"\ncommand = \"yes\"\nparameters = {}\n");
    let o = jp(ws.path(), &["tool", "call", "chatty"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = stderr(&o);
    let limit = 10 * 1024 * 1024;
    assert!(
        err.contains(&format!(
            "wrote {} bytes or more to stdout, over the {limit}-byte limit; have it write less",
            limit + 1
        )),
        "{err}"
    );
    assert!(stdout(&o).is_empty(), "{}", stdout(&o).len());
}

#[test]
fn a_tool_that_cannot_describe_itself_gets_a_clear_error() {
    let ws = workspace();
    std::fs::write(ws.path().join("mute.sh"), "#!/bin/sh\necho 'not json'\n").unwrap();
    std::fs::set_permissions(ws.path().join("mute.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    write_config(ws.path(), "[conversation.tools.mute]\nsource = \"local\"\ncommand = \"./mute.sh\"\n");
    let o = jp(ws.path(), &["tool", "schema", "mute"]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(err.contains("add `parameters`") && err.contains("update the binary"), "{err}");
}

#[test]
fn a_python_vfs_tool_configured_in_toml() {
    let ws = workspace();
    std::fs::create_dir_all(ws.path().join("tools")).unwrap();
    std::fs::write(ws.path().join("tools/count.py"), PY_VFS_TOOL).unwrap();
    write_config(
        ws.path(),
        r#"
[conversation.tools.count_lines]
source = "local"
command = "/usr/bin/python3 tools/count.py"
runtime = "vfs"
"#,
    );
    let o = jp(ws.path(), &["tool", "schema", "count_lines"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let schema: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(schema["summary"], "Count the lines of a file.");

    let o = jp(ws.path(), &["tool", "call", "count_lines", "path=src/main.rs", "--trace"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), "src/main.rs: 3 lines\n");
    assert!(stderr(&o).contains("trace: fs.read src/main.rs → allow"), "{}", stderr(&o));
    let o = jp(ws.path(), &["tool", "call", "count_lines", "path=../outside"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("outside"), "{}", stderr(&o));
}

#[test]
fn jp_itself_as_a_configured_vfs_tool_with_its_own_policy() {
    // A VFS tool from config that describes itself: the first-party binary, configured by hand,
    // with a policy that makes only `notes` writable.
    let ws = workspace();
    let command = format!("{JP} __tool");
    write_config(
        ws.path(),
        &format!(
            r#"
[conversation.tools.fs_create_file_notes]
source = "local"
command = {command:?}
runtime = "vfs"
"#
        ),
    );
    // The binary serves fs_create_file, not this name: the schema error says what it lists.
    let o = jp(ws.path(), &["tool", "schema", "fs_create_file_notes"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("it lists: fs_read_file"), "{}", stderr(&o));

    write_config(
        ws.path(),
        &format!(
            r#"
[conversation.tools.fs_create_file]
source = "local"
command = {command:?}
runtime = "vfs"
[conversation.tools.fs_create_file.access]
filesystem = [{{ path = ".", allow = ["read"] }}, {{ path = "notes", allow = ["read", "write"] }}]
"#
        ),
    );
    let o = jp(ws.path(), &["tool", "call", "fs_create_file", "path=notes/a.txt", "content=ok"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(ws.path().join("notes/a.txt")).unwrap(), "ok");
    let o = jp(ws.path(), &["tool", "call", "fs_create_file", "path=src/evil.rs", "content=x"]);
    assert_eq!(code(&o), 1);
    assert!(!ws.path().join("src/evil.rs").exists());
}

/// Reads `.env` itself and prints what it got (a stdio tool: it touches files directly).
const PEEK_TOOL: &str = r#"import json, sys
ctx = sys.stdin.read()
if '"action":"schema"' in ctx:
    print(json.dumps({"tools": [{"name": sys.argv[1], "summary": "Peek.", "parameters": {}}]}))
    sys.exit(0)
try:
    print(open(".env").read().strip())
except OSError as e:
    print("refused", e.errno)
"#;

#[test]
fn a_stdio_tool_sees_the_workspaces_env_only_when_a_rule_of_its_own_grants_it() {
    let ws = workspace();
    std::fs::write(ws.path().join("peek.py"), PEEK_TOOL).unwrap();
    write_config(
        ws.path(),
        r#"
[conversation.tools.peek]
source = "local"
command = "/usr/bin/python3 peek.py peek"

[conversation.tools.peek_granted]
source = "local"
command = "/usr/bin/python3 peek.py peek_granted"
[conversation.tools.peek_granted.access]
filesystem = [{ path = ".", allow = ["read", "write"] }, { path = ".env", allow = ["read", "write"] }]
"#,
    );
    let o = jp(ws.path(), &["tool", "call", "peek"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    if jp_native::sandbox::user_namespaces().is_ok() {
        // Nobody can be asked for a process that reads files itself: hidden by its mount view.
        assert_eq!(stdout(&o).trim(), format!("refused {}", libc::EACCES), "{}", stdout(&o));
    } else {
        println!("no mount view here (Landlock alone): {}", stdout(&o));
    }
    let o = jp(ws.path(), &["tool", "call", "peek_granted"]);
    assert_eq!((code(&o), stdout(&o).trim()), (0, "TOKEN=hunter2"), "{}", stderr(&o));
}

/// Run `jp ARGS…` in a user namespace of the test's own whose limit on nested user namespaces is
/// 0, as on a kernel or container that refuses unprivileged user namespaces. `None` where this
/// machine cannot make the outer namespace.
fn jp_without_user_namespaces(ws: &std::path::Path, args: &[&str]) -> Option<std::process::Output> {
    let script = "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" \"$@\"";
    let o = std::process::Command::new("unshare")
        .args(["-Ur", "sh", "-c", script, JP, "--workspace"])
        .arg(ws)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("util-linux `unshare`");
    (!stderr(&o).contains("unshare failed")).then_some(o)
}

#[test]
fn where_user_namespaces_are_refused_a_tool_runs_under_landlock_alone_and_one_needing_egress_is_not_started() {
    let ws = workspace_with_stamp_tool();
    write_config(
        ws.path(),
        r#"
[conversation.tools.stamp]
source = "local"
command = "tools/stamp.sh"
parameters = { file = { type = "string" } }

[conversation.tools.fetch]
source = "local"
command = "/bin/true"
parameters = {}
[conversation.tools.fetch.access]
network = { allow = ["https://api.example.com"] }
"#,
    );
    let Some(o) = jp_without_user_namespaces(ws.path(), &["sandbox", "status"]) else {
        println!("no user namespaces here at all: nothing to take away");
        return;
    };
    // What `jp sandbox status` says, and what the start of a tool finds out by itself (there is
    // no probe child before it): the mount view's clone is refused, and the tool is started
    // again without it — under Landlock, which still hides the rest of the system.
    assert!(stdout(&o).contains("per-host egress:         NOT available"), "{}", stdout(&o));
    let o = jp_without_user_namespaces(ws.path(), &["tool", "call", "stamp", "file=out.txt"]).unwrap();
    assert_eq!(code(&o), 0, "{} {}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("wrote out.txt") && stdout(&o).contains("/etc/hostname denied"), "{}", stdout(&o));
    assert_eq!(std::fs::read_to_string(ws.path().join("out.txt")).unwrap(), "stamped\n");
    // A process allowed some URLs needs a network namespace to be held to them: not started.
    let o = jp_without_user_namespaces(ws.path(), &["tool", "call", "fetch"]).unwrap();
    let err = stderr(&o);
    assert_ne!(code(&o), 0, "{}", stdout(&o));
    assert!(err.contains("unprivileged user namespaces") && err.contains("was not started"), "{err}");
    assert!(err.contains("max_user_namespaces"), "the cause is named: {err}");
}
