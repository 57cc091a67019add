//! What a newcomer meets first (issue 36), with the real binary in temp workspaces: an `access`
//! table adds to its runtime's default instead of replacing it, `jp tool show` prints what a
//! tool may touch as its runtime enforces it, and a mistyped tool or argument name gets the
//! closest right one.

#![cfg(target_os = "linux")]

mod support;
use support::cli::{code, jp, stderr, stdout, workspace, write_config};

#[test]
fn an_access_table_adds_to_the_runtimes_default_and_show_prints_the_effective_policy() {
    let ws = workspace();
    std::fs::write(ws.path().join("README.md"), "read me\n").unwrap();
    write_config(
        ws.path(),
        r#"
[conversation.tools.run]               # only `commands`: the workspace stays readable
source = "builtin"
[conversation.tools.run.access]
commands = { "/usr/bin/cat" = { args = [["**"]] } }

[conversation.tools.reader]            # a stdio tool given only a network rule
source = "local"
command = "/usr/bin/python3 -c 'import sys; print(open(\"README.md\").read().strip())'"
parameters = {}
[conversation.tools.reader.access]
network.allow = ["https://example.com"]
"#,
    );
    // Before, the `run` child and the stdio tool lost the workspace the default grants them.
    let o = jp(ws.path(), &["tool", "call", "run", "program=/usr/bin/cat", r#"args=["README.md"]"#]);
    assert_eq!(code(&o), 0, "{} {}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("read me"), "{}", stdout(&o));
    let o = jp(ws.path(), &["tool", "call", "reader"]);
    assert_eq!(code(&o), 0, "{} {}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("read me"), "{}", stdout(&o));

    // What is shown is what holds: the default's part and the table's, each with its origin.
    let o = jp(ws.path(), &["tool", "show", "reader"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let shown = stdout(&o);
    for line in [
        "reader  (runtime stdio, source local)",
        "may touch (held by the OS sandbox):",
        "files    . read+create+update+delete   (the default stdio policy (workspace read-write))",
        "files    anything else: refused",
        "network  allow https://example.com   (access.network.allow[0])",
        "program  anything else: refused",
    ] {
        assert!(shown.contains(line), "missing {line:?} in:\n{shown}");
    }
    let o = jp(ws.path(), &["tool", "show", "run"]);
    assert!(stdout(&o).contains("program  /usr/bin/cat: [**]"), "{}", stdout(&o));
    assert!(stdout(&o).contains("files    . read   (the default policy (workspace read-only))"), "{}", stdout(&o));
    // A table that writes a part replaces that part: here files become read-only.
    write_config(
        ws.path(),
        r#"
[conversation.tools.reader]
source = "local"
command = "/usr/bin/python3 -c 'open(\"out.txt\", \"w\").write(\"x\")'"
parameters = {}
[conversation.tools.reader.access]
filesystem = [{ path = ".", allow = ["read"] }]
"#,
    );
    let o = jp(ws.path(), &["tool", "call", "reader"]);
    assert_ne!(code(&o), 0, "{}", stdout(&o));
    assert!(!ws.path().join("out.txt").exists());
    let o = jp(ws.path(), &["tool", "show", "reader", "--json"]);
    let rules: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(
        rules["rules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "files    . read   (access.filesystem[0] (\".\", read))"),
        "{rules}"
    );
}

#[test]
fn a_mistyped_tool_or_argument_gets_the_closest_right_name() {
    let ws = workspace();
    let o = jp(ws.path(), &["tool", "show", "fs_red_file"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("no tool 'fs_red_file'; did you mean 'fs_read_file'?"), "{}", stderr(&o));
    // An argument the tool does not take is refused, not passed over in silence.
    let o = jp(ws.path(), &["tool", "call", "fs_read_file", "pth=README.md"]);
    assert_ne!(code(&o), 0);
    let err = stderr(&o);
    assert!(err.contains("argument 'pth' is not one of this tool's arguments; did you mean 'path'?"), "{err}");
    let o = jp(ws.path(), &["tool", "call", "fs_read_file", "--args", r#"{"path":"src/main.rs","bogus":1}"#]);
    assert_ne!(code(&o), 0);
    assert!(stderr(&o).contains("argument 'bogus' is not one of this tool's arguments ("), "{}", stderr(&o));
}

#[test]
fn the_demo_without_a_terminal_says_what_did_not_happen_and_its_hint_works_as_written() {
    let ws = workspace();
    let o = jp(ws.path(), &["query", "--provider", "scripted", "fix the TODO"]);
    assert_eq!(code(&o), 1, "every call refused: not a success\n{}\n{}", stdout(&o), stderr(&o));
    assert!(!ws.path().join("jp-demo").exists());
    assert!(stdout(&o).contains("The project could not be made"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("Done:"), "{}", stdout(&o));
    let err = stderr(&o);
    // The refusal in full, with its fix…
    let hint =
        "the user can allow it with run = \"unattended\" in [conversation.tools.fs_create_file] of .jp/config.toml";
    assert!(err.contains(hint), "{err}");
    assert!(err.contains("none of the turn's 2 tool call(s) did anything"), "{err}");
    // …which, followed for each tool that asks, lets the whole recorded turn run.
    write_config(
        ws.path(),
        "[conversation.tools.fs_create_file]\nsource = \"builtin\"\nrun = \"unattended\"\n\n[conversation.tools.fs_modify_file]\nsource = \"builtin\"\nrun = \"unattended\"\n",
    );
    let o = jp(ws.path(), &["query", "--provider", "scripted", "fix the TODO"]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    let greet = std::fs::read_to_string(ws.path().join("jp-demo/src/greet.py")).unwrap();
    assert!(greet.contains("name = sys.argv[1]") && !greet.contains("TODO"), "{greet}");
}

#[test]
fn an_unusable_configuration_gets_one_message_from_every_command_as_text_and_its_fix_works() {
    let ws = workspace();
    // Not valid TOML: jp trust refuses it too (the helper lets it be written).
    write_config(ws.path(), "[conversation.tools.x]\nsource = \"local\"\ncommand = \"unterminated\n");
    let list = stderr(&jp(ws.path(), &["tool", "list"]));
    let trust = stderr(&jp(ws.path(), &["trust", "--yes"]));
    assert_eq!(list, trust, "one message, whichever command meets the file");
    for part in
        ["config.toml cannot be used as it is:", "line 3", "Fix the file, then approve it with: jp trust --workspace"]
    {
        assert!(list.contains(part), "missing {part:?}:\n{list}");
    }
    assert!(!list.contains("\\u{a}") && !list.contains("\\`"), "text, not escaped Rust strings:\n{list}");
    // A key of the wrong type: named, with its line.
    write_config(ws.path(), "[conversation.tools.x]\nsource = \"local\"\ncommand = 5\n");
    let list = stderr(&jp(ws.path(), &["tool", "list"]));
    assert!(list.contains("cannot be used as it is at conversation.tools.x.command (line 3):"), "{list}");
    assert_eq!(list, stderr(&jp(ws.path(), &["trust", "--yes"])), "one message, whichever command meets the file");
    // A key a later check refuses (no line from the parser): its line is found all the same.
    write_config(ws.path(), "# a comment\n\n[mcp.servers.s]\nurl = \"https://mcp.example/mcp\"\n");
    let list = stderr(&jp(ws.path(), &["tool", "list"]));
    assert!(list.contains("cannot be used as it is at mcp.servers.s.url (line 4):"), "{list}");
    // The fix, as the message says: fix the file, then the command it names.
    std::fs::write(
        ws.path().join(".jp/config.toml"),
        "[conversation.tools.x]\nsource = \"local\"\ncommand = \"/bin/true\"\nparameters = {}\n",
    )
    .unwrap();
    let hint = list.lines().last().unwrap();
    let command = hint.split("approve it with: ").nth(1).unwrap();
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_jp")).args(&args).arg("--yes").output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(code(&jp(ws.path(), &["tool", "list"])), 0);
}
