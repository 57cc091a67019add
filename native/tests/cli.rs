//! The `jp` command end to end: the real binary, run from temp workspaces, with tools under the
//! real OS sandbox.

#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod support;
use support::approve_config;
use support::cli::{code, jp, stderr, stdout, workspace, write_config};

const JP: &str = env!("CARGO_BIN_EXE_jp");

const FIRST_PARTY: [&str; 7] = [
    "fs_create_file",
    "fs_delete_file",
    "fs_grep_files",
    "fs_list_files",
    "fs_modify_file",
    "fs_move_file",
    "fs_read_file",
];

#[test]
fn list_shows_every_first_party_tool_with_runtime_source_summary_and_policy() {
    let ws = workspace();
    let o = jp(ws.path(), &["tool", "list", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let rows: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    let mut expected = FIRST_PARTY.to_vec();
    expected.extend(["learn", "run"]);
    assert_eq!(names, expected);
    for r in &rows {
        assert_eq!(r["runtime"], if r["name"] == "learn" { "wasm" } else { "builtin" });
        assert_eq!(r["source"], "builtin");
        assert!(!r["summary"].as_str().unwrap().is_empty(), "{r}");
    }
    let read = rows.iter().find(|r| r["name"] == "fs_read_file").unwrap();
    assert!(read["policy"].as_str().unwrap().starts_with("files: . read,"), "{read}");
    let create = rows.iter().find(|r| r["name"] == "fs_create_file").unwrap();
    assert!(create["policy"].as_str().unwrap().contains(". read+create+update+delete"), "{create}");

    let text = jp(ws.path(), &["tool", "list"]);
    assert_eq!(code(&text), 0);
    assert!(stdout(&text).lines().next().unwrap().starts_with("NAME"));
    assert!(stdout(&text).contains("fs_grep_files"));
}

#[test]
fn a_first_party_tool_runs_in_process_or_as_a_vfs_subprocess_with_runtime_vfs() {
    let ws = workspace();
    std::fs::write(ws.path().join("notes.txt"), "one\ntwo\n").unwrap();
    let builtin = jp(ws.path(), &["tool", "call", "fs_read_file", "path=notes.txt", "--trace"]);
    assert_eq!(code(&builtin), 0, "{}", stderr(&builtin));
    assert_eq!(stdout(&builtin), "one\ntwo\n");
    assert!(stderr(&builtin).contains("fs.read"), "the builtin form reports its decisions too: {}", stderr(&builtin));

    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    std::fs::write(
        ws.path().join(".jp/config.toml"),
        "[conversation.tools.fs_read_file]\nsource = \"builtin\"\nruntime = \"vfs\"\n",
    )
    .unwrap();
    approve_config(ws.path());
    let list = jp(ws.path(), &["tool", "list", "--json"]);
    let rows: Vec<Value> = serde_json::from_str(&stdout(&list)).unwrap();
    let runtime = |n: &str| rows.iter().find(|r| r["name"] == n).unwrap()["runtime"].clone();
    assert_eq!(runtime("fs_read_file"), "vfs");
    assert_eq!(runtime("fs_grep_files"), "builtin");
    let vfs = jp(ws.path(), &["tool", "call", "fs_read_file", "path=notes.txt", "--trace"]);
    assert_eq!(code(&vfs), 0, "{}", stderr(&vfs));
    assert_eq!(stdout(&vfs), stdout(&builtin));
    assert!(
        !stderr(&vfs).contains("ignored"),
        "runtime = \"vfs\" is meaningful on a first-party tool: {}",
        stderr(&vfs)
    );
}

#[test]
fn run_and_learn_are_listed_where_they_run_whatever_runtime_their_table_names() {
    // Neither can be `jp __tool`: `run` starts its programs from `jp`, `learn` is a component
    // inside it. The listing must say so, and the call must work.
    let ws = workspace();
    write_config(
        ws.path(),
        r#"[conversation.tools.run]
source = "builtin"
runtime = "vfs"
[conversation.tools.run.access]
filesystem = [{ path = ".", allow = ["read"] }]
commands = { echo = { args = [["**"]] } }

[conversation.tools.learn]
source = "builtin"
runtime = "vfs"
"#,
    );
    let list = jp(ws.path(), &["tool", "list", "--json"]);
    assert_eq!(code(&list), 0, "{}", stderr(&list));
    let rows: Vec<Value> = serde_json::from_str(&stdout(&list)).unwrap();
    let runtime = |n: &str| rows.iter().find(|r| r["name"] == n).unwrap()["runtime"].clone();
    assert_eq!(runtime("run"), "builtin");
    assert_eq!(runtime("learn"), "wasm");
    let o = jp(ws.path(), &["tool", "call", "run", "--args", r#"{"program": "echo", "args": ["ran in-process"]}"#]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("ran in-process"), "{}", stdout(&o));
}

#[test]
fn a_run_child_has_each_variable_once_with_home_and_tmpdir_its_scratch_dir() {
    // `env` itself as the program: a shell would fold duplicates into one before printing.
    let ws = workspace();
    write_config(
        ws.path(),
        "[conversation.tools.run]\nsource = \"builtin\"\n[conversation.tools.run.access]\nfilesystem = [{ path = \".\", allow = [\"read\"] }]\ncommands = { env = { args = [[\"**\"]] } }\n",
    );
    let o = jp(ws.path(), &["tool", "call", "run", "--args", r#"{"program": "env"}"#]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let vars: Vec<(&str, &str)> = out.lines().filter_map(|l| l.split_once('=')).collect();
    let named = |name: &str| vars.iter().filter(|(k, _)| *k == name).map(|(_, v)| *v).collect::<Vec<_>>();
    let home = named("HOME");
    assert_eq!(home.len(), 1, "HOME once:\n{out}");
    let scratch = Path::new(home[0]);
    assert!(scratch.is_absolute() && scratch.starts_with(std::env::temp_dir()), "{out}");
    assert!(scratch.file_name().unwrap().to_string_lossy().starts_with("jp-process-"), "{out}");
    assert_eq!(named("TMPDIR"), home, "TMPDIR is the same scratch dir:\n{out}");
    let mut names: Vec<&str> = vars.iter().map(|(k, _)| *k).collect();
    names.sort_unstable();
    let count = names.len();
    names.dedup();
    assert_eq!(names.len(), count, "every variable once:\n{out}");
}

#[test]
fn schema_of_every_first_party_tool() {
    let ws = workspace();
    for name in FIRST_PARTY {
        let o = jp(ws.path(), &["tool", "schema", name]);
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        let schema: Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(schema["name"], name);
        assert_eq!(schema["parameters"]["type"], "object");
        assert!(schema["parameters"]["properties"].as_object().is_some_and(|p| !p.is_empty()), "{schema}");
    }
    let o = jp(ws.path(), &["tool", "schema", "fs_read_file"]);
    let schema: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(schema["parameters"]["required"], serde_json::json!(["path"]));
    let o = jp(ws.path(), &["tool", "schema", "nope"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("no tool named 'nope'") && stderr(&o).contains("fs_read_file"), "{}", stderr(&o));
}

#[test]
fn call_every_first_party_tool() {
    let ws = workspace();
    let w = ws.path();
    let o = jp(w, &["tool", "call", "fs_read_file", "path=src/main.rs"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("println!(\"hi\")"));

    let o = jp(w, &["tool", "call", "fs_list_files", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["ok"], true);
    assert!(v["text"].as_str().unwrap().contains("src/main.rs"), "{v}");

    let o = jp(w, &["tool", "call", "fs_grep_files", "--args", r#"{"pattern":"fn main"}"#]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("src/main.rs"), "{}", stdout(&o));

    let o = jp(w, &["tool", "call", "fs_create_file", "path=notes/todo.txt", "content=buy milk"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(w.join("notes/todo.txt")).unwrap(), "buy milk");

    let o =
        jp(w, &["tool", "call", "fs_modify_file", "path=notes/todo.txt", r#"patterns=[{"old":"milk","new":"bread"}]"#]);
    assert_eq!(code(&o), 0, "{} {}", stdout(&o), stderr(&o));
    assert_eq!(std::fs::read_to_string(w.join("notes/todo.txt")).unwrap(), "buy bread");

    let o = jp(w, &["tool", "call", "fs_move_file", "source=notes/todo.txt", "destination=notes/done.txt"]);
    assert_eq!(code(&o), 0, "{} {}", stdout(&o), stderr(&o));
    assert!(!w.join("notes/todo.txt").exists());
    assert!(w.join("notes/done.txt").exists());

    let o = jp(w, &["tool", "call", "fs_delete_file", "path=notes/done.txt"]);
    assert_eq!(code(&o), 0, "{} {}", stdout(&o), stderr(&o));
    assert!(!w.join("notes/done.txt").exists());

    // Tool errors exit 1; missing arguments are usage errors (2).
    let o = jp(w, &["tool", "call", "fs_read_file", "path=missing.txt"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("missing.txt"), "{}", stderr(&o));
    let o = jp(w, &["tool", "call", "fs_read_file"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("'path'"), "{}", stderr(&o));
    let o = jp(w, &["tool", "call", "fs_read_file", "--args", "[1]"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("JSON object"), "{}", stderr(&o));
}

#[test]
fn a_read_only_policy_denies_a_write_and_trace_shows_the_decisions() {
    let ws = workspace();
    write_config(
        ws.path(),
        r#"
[conversation.tools.fs_create_file]
source = "builtin"
summary = "Create a file (read-only here)."
[conversation.tools.fs_create_file.sandbox]
filesystem.allow = ["."]
filesystem.writable = false
"#,
    );
    let o = jp(ws.path(), &["tool", "call", "fs_create_file", "path=new.txt", "content=x", "--trace"]);
    assert_eq!(code(&o), 1, "{} {}", stdout(&o), stderr(&o));
    assert!(!ws.path().join("new.txt").exists());
    let err = stderr(&o);
    assert!(err.contains("trace: fs.write new.txt → deny"), "{err}");
    assert!(err.contains("error: tool 'fs_create_file' failed"), "{err}");

    let o = jp(ws.path(), &["tool", "call", "fs_read_file", "path=README.md", "--trace"]);
    assert_eq!(code(&o), 0);
    assert!(
        stderr(&o).contains(
            "trace: fs.read README.md → allow (read 'README.md' allowed by the default policy (workspace read-only))"
        ),
        "{}",
        stderr(&o)
    );

    // The override shows in the listing too.
    let o = jp(ws.path(), &["tool", "list", "--json"]);
    let rows: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let create = rows.iter().find(|r| r["name"] == "fs_create_file").unwrap();
    assert_eq!(create["summary"], "Create a file (read-only here).");
    assert!(create["defined_in"].as_str().unwrap().ends_with(".jp/config.toml"));
}

#[test]
fn an_inquiry_without_a_terminal_is_denied_with_a_clear_message() {
    let ws = workspace();
    // `.env` is a sensitive path: reading it needs the user's decision.
    for extra in [&["--no-interaction"][..], &[][..]] {
        let mut args = vec!["tool", "call", "fs_read_file", "path=.env"];
        args.extend_from_slice(extra);
        let o = jp(ws.path(), &args);
        assert_eq!(code(&o), 1, "{}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("non-interactive"), "{err}");
        assert!(!stdout(&o).contains("hunter2"));
    }
}

#[test]
fn config_errors_name_the_file_the_key_and_the_fix() {
    let ws = workspace();
    write_config(ws.path(), "[conversation.tools.x]\nsource = \"local\"\ncommand = \"x\"\nruntme = \"vfs\"\n");
    let o = jp(ws.path(), &["tool", "list"]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(err.contains("config.toml") && err.contains("runtme"), "{err}");

    write_config(ws.path(), "[conversation.tools.x\n");
    let o = jp(ws.path(), &["tool", "list"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("config.toml"), "{}", stderr(&o));

    write_config(ws.path(), "[conversation.tools.x]\nsource = \"builtin\"\n");
    let o = jp(ws.path(), &["tool", "list"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("no builtin tool named 'x'"), "{}", stderr(&o));

    let o = Command::new(JP).args(["--config", "/nonexistent/jp.toml", "tool", "list"]).output().unwrap();
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("/nonexistent/jp.toml"), "{}", stderr(&o));

    let o = jp(ws.path(), &["tool", "frobnicate"]);
    assert_eq!(code(&o), 2, "clap usage errors exit 2");
}

#[test]
fn runtime_resolution_errors() {
    let ws = workspace();
    write_config(
        ws.path(),
        r#"
[conversation.tools.plugin]
source = "local"
command = "tools/plugin.wasm"
parameters.x = { type = "string" }

[conversation.tools.explicit]
source = "local"
command = "tools/plugin"
runtime = "wasm"
parameters.x = { type = "string" }

[conversation.tools.remote]
source = "mcp.github.list_issues"
parameters.x = { type = "string" }

[mcp.servers.github]
command = "no-such-mcp-server-program"
"#,
    );
    let o = jp(ws.path(), &["tool", "list", "--json"]);
    let rows: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let runtime = |n: &str| rows.iter().find(|r| r["name"] == n).unwrap()["runtime"].clone();
    assert_eq!(runtime("plugin"), "wasm");
    assert_eq!(runtime("explicit"), "wasm");
    assert_eq!(runtime("remote"), "mcp");
    for name in ["plugin", "explicit"] {
        let o = jp(ws.path(), &["tool", "call", name, "x=1"]);
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert!(stderr(&o).contains("Wasm binary not found"), "{}", stderr(&o));
    }
    let o = jp(ws.path(), &["tool", "call", "remote", "x=1"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("MCP server 'github'") && stderr(&o).contains("no-such-mcp-server-program"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn sandbox_status_reports_the_kernel() {
    let o = Command::new(JP).args(["sandbox", "status", "--json"]).output().unwrap();
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["can_enforce"].as_bool().unwrap(), code(&o) == 0);
    if v["can_enforce"] == true {
        assert!(v["landlock_abi"].as_i64().unwrap() >= 4);
    }
    // The mount view exactly where user namespaces are (the egress needs the same).
    assert_eq!(v["mount_view"], v["egress"]);
    let o = Command::new(JP).args(["sandbox", "status"]).output().unwrap();
    assert!(stdout(&o).contains("Landlock"));
    let view = if v["mount_view"] == true {
        "private mount view:      enforced"
    } else {
        "private mount view:      NOT available"
    };
    assert!(stdout(&o).contains(view), "{}", stdout(&o));
}

#[test]
fn every_command_has_help() {
    for args in [&["--help"][..], &["tool", "--help"], &["tool", "call", "--help"], &["sandbox", "status", "--help"]] {
        let o = Command::new(JP).args(args).output().unwrap();
        assert_eq!(code(&o), 0);
        assert!(stdout(&o).contains("Usage"), "{args:?}");
    }
    let o = Command::new(JP).args(["tool", "call", "--help"]).output().unwrap();
    for flag in ["--args", "--no-interaction", "--trace", "--timeout", "--workspace", "--json"] {
        assert!(stdout(&o).contains(flag), "{flag}");
    }
}

#[test]
fn learn_is_builtin_and_reads_the_knowledge_base() {
    let ws = workspace();
    let o = jp(ws.path(), &["tool", "call", "learn"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains(".jp/kb/<topic>/<subject>.md"), "{}", stderr(&o));

    let kb = ws.path().join(".jp/kb/skills");
    std::fs::create_dir_all(&kb).unwrap();
    std::fs::write(kb.join("ast-grep.md"), "# ast-grep\nSearch code by syntax.\n").unwrap();
    std::fs::write(kb.join(".secret.md"), "hidden").unwrap();
    let o = jp(ws.path(), &["tool", "call", "learn"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("# skills") && stdout(&o).contains("- ast-grep"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("secret"));
    let o = jp(ws.path(), &["tool", "call", "learn", "topic=skills", r#"subjects=["ast-*"]"#]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("Search code by syntax."), "{}", stdout(&o));
    let o = jp(ws.path(), &["tool", "schema", "learn"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("\"subjects\""), "{}", stdout(&o));
}

#[test]
fn a_configured_local_component_runs_and_obeys_its_policy() {
    let ws = workspace();
    std::fs::create_dir_all(ws.path().join(".jp/tools")).unwrap();
    let guests = std::path::Path::new(jp_native::runtime::wasm::GUESTS_DIR);
    std::fs::copy(guests.join("jp_tool_test.wasm"), ws.path().join(".jp/tools/test_tool.wasm")).unwrap();
    std::fs::copy(guests.join("jp_fs_component.wasm"), ws.path().join(".jp/tools/fs.wasm")).unwrap();
    write_config(
        ws.path(),
        r#"
[conversation.tools.wasm_test]
source = "local"
wasm = ".jp/tools/test_tool.wasm"
description = "Test tool that reads a file from the workspace"
[conversation.tools.wasm_test.parameters.path]
type = "string"
description = "Relative file path to read"
required = true

[conversation.tools.fs_grep_files]
source = "local"
command = ".jp/tools/fs.wasm"
[conversation.tools.fs_grep_files.access]
filesystem = [{ path = ".", allow = ["read"] }, { path = "src", allow = [] }]
"#,
    );
    let o = jp(ws.path(), &["tool", "call", "wasm_test", "path=README.md"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), "# demo\n");
    let o = jp(ws.path(), &["tool", "call", "wasm_test", "path=.env", "--trace"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("trace: fs.read .env → ask"), "{}", stderr(&o));
    assert!(!stdout(&o).contains("hunter2"));
    // A component that describes itself, with a policy that hides `src`.
    let o = jp(ws.path(), &["tool", "schema", "fs_grep_files"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("\"pattern\""));
    let o = jp(ws.path(), &["tool", "call", "fs_grep_files", "pattern=demo|main"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("README.md") && !stdout(&o).contains("src/main.rs"), "{}", stdout(&o));
    let o = jp(ws.path(), &["tool", "list", "--json"]);
    let rows: Vec<Value> = serde_json::from_str(&stdout(&o)).unwrap();
    let grep = rows.iter().find(|r| r["name"] == "fs_grep_files").unwrap();
    assert_eq!(grep["runtime"], "wasm");
}

#[test]
fn a_self_describing_tool_is_asked_once_per_change_across_runs() {
    let ws = workspace();
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let counter = dir.path().join("asked");
    let script = dir.path().join("tool.sh");
    // A stdio tool that counts how often it is asked for its schema (outside the sandbox, so it
    // can write the count where the test reads it).
    let text = format!(
        r#"#!/bin/sh
ctx=$(cat)
case "$ctx" in
  *'"action":"schema"'*) echo x >> {counter}; echo '{{"tools":[{{"name":"counted","summary":"Counts.","parameters":{{"n":{{"type":"integer","required":false}}}}}}]}}' ;;
  *) echo done ;;
esac
"#,
        counter = counter.display()
    );
    std::fs::write(&script, text).unwrap();
    std::process::Command::new("chmod").arg("+x").arg(&script).status().unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    std::fs::write(
        ws.path().join(".jp/config.toml"),
        format!("[conversation.tools.counted]\nsource = \"local\"\ncommand = {:?}\n", script.display().to_string()),
    )
    .unwrap();
    approve_config(ws.path());
    let run = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_jp"))
            .args(["--no-os-sandbox", "tool", "call", "counted", "n=1"])
            .current_dir(ws.path())
            .env("XDG_CACHE_HOME", cache.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        std::fs::read_to_string(&counter).unwrap_or_default().lines().count()
    };
    assert_eq!(run(), 1, "asked on the first run");
    assert_eq!(run(), 1, "not asked again: the answer is on disk");
    // A changed program is asked again (its size and modification time are in the key).
    std::fs::write(&script, std::fs::read_to_string(&script).unwrap() + "# changed\n").unwrap();
    assert_eq!(run(), 2, "asked again after the tool changed");
    assert_eq!(run(), 2);
}

#[test]
fn d06_keywords_pass_through_a_multi_tool_binary_maps_by_tool_and_a_tool_that_ignores_schema_is_named() {
    let ws = workspace();
    let dir = tempfile::tempdir().unwrap();
    // A binary serving two tools, `check` and `fmt`, that prints what it was called as.
    let multi = dir.path().join("multi.sh");
    std::fs::write(
        &multi,
        r#"#!/bin/sh
ctx=$(cat)
case "$ctx" in
  *'"action":"schema"'*) echo '{"tools":[{"name":"check","summary":"Check.","parameters":{"level":{"type":"integer","minimum":1,"maximum":3}}},{"name":"fmt","summary":"Format.","parameters":{}}]}' ;;
  *'"name":"check"'*) echo "ran check" ;;
  *) echo "ran something else" ;;
esac
"#,
    )
    .unwrap();
    // A legacy tool that ignores the schema action: it always runs and prints an Outcome.
    let legacy = dir.path().join("legacy.sh");
    std::fs::write(&legacy, "#!/bin/sh\ncat >/dev/null\necho '{\"type\":\"success\",\"content\":\"done\"}'\n").unwrap();
    for p in [&multi, &legacy] {
        std::process::Command::new("chmod").arg("+x").arg(p).status().unwrap();
    }
    let config = format!(
        r#"[conversation.tools.lint]
source = "local"
command = {multi:?}
tool = "check"

[conversation.tools.lint2]
source = "local"
command = {multi:?}
tool = "nope"

[conversation.tools.old]
source = "local"
command = {legacy:?}

[conversation.tools.ranged]
source = "local"
command = {legacy:?}
[conversation.tools.ranged.parameters.n]
type = "integer"
minimum = 1
pattern = "^[0-9]+$"
anyOf = [{{ type = "integer" }}, {{ type = "string" }}]
"#,
        multi = multi.display().to_string(),
        legacy = legacy.display().to_string()
    );
    write_config(ws.path(), &config);
    let o = jp(ws.path(), &["tool", "schema", "lint"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let schema: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(schema["summary"], "Check.");
    assert_eq!(
        schema["parameters"]["properties"]["level"]["maximum"], 3,
        "keywords of the answer pass through: {schema}"
    );
    let o = jp(ws.path(), &["tool", "call", "lint", "level=2"]);
    assert_eq!(stdout(&o).trim(), "ran check", "the binary is called with its own name for the tool: {}", stderr(&o));
    // The whole schema is checked before the tool runs: `minimum` of a self-described parameter
    // is a usage error (2) that names the argument and the fix; the tool is not started.
    let o = jp(ws.path(), &["tool", "call", "lint", "level=0"]);
    assert_eq!(code(&o), 2, "{} {}", stdout(&o), stderr(&o));
    assert_eq!(stdout(&o), "", "the tool did not run");
    assert!(
        stderr(&o).contains("tool 'lint': argument 'level' must be at least 1, got 0; see the tool's schema"),
        "{}",
        stderr(&o)
    );
    let o = jp(ws.path(), &["tool", "call", "lint", "level=4", "--json"]);
    assert_eq!(code(&o), 2);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v["error"].as_str().unwrap().contains("argument 'level' must be at most 3, got 4"), "{v}");
    let o = jp(ws.path(), &["tool", "schema", "lint2"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("'nope'") && stderr(&o).contains("check, fmt"), "{}", stderr(&o));
    let o = jp(ws.path(), &["tool", "schema", "old"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("ignores `action = \"schema\"`"), "{}", stderr(&o));
    let o = jp(ws.path(), &["tool", "schema", "ranged"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let schema: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let n = &schema["parameters"]["properties"]["n"];
    assert_eq!((n["minimum"].as_i64(), n["pattern"].as_str()), (Some(1), Some("^[0-9]+$")), "{schema}");
    assert_eq!(n["anyOf"].as_array().map(Vec::len), Some(2), "{schema}");

    write_config(
        ws.path(),
        "[conversation.tools.bad]\nsource = \"local\"\ncommand = \"x\"\n[conversation.tools.bad.parameters.n]\ntype = \"integer\"\nminimun = 1\n",
    );
    let o = jp(ws.path(), &["tool", "list"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("conversation.tools.bad.parameters.n.minimun") && stderr(&o).contains("unknown key"),
        "{}",
        stderr(&o)
    );
}
