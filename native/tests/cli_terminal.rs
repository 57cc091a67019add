//! The `jp` command on a real pseudo-terminal: questions asked and obeyed, and nothing a tool
//! controls reaching the terminal raw (the real binary, temp workspaces, tools under the real OS
//! sandbox).

#![cfg(target_os = "linux")]

mod support;
use support::cli::{PY_VFS_TOOL, code, jp, jp_on_a_terminal, stdout, workspace, write_config};

#[test]
fn an_inquiry_on_a_terminal_asks_and_obeys_the_answer() {
    let ws = workspace();
    let yes = jp_on_a_terminal(ws.path(), "tool call fs_read_file path=.env", "y\n");
    let out = stdout(&yes);
    assert!(
        out.contains("wants fs.read .env") && out.contains("[y = once, a = for the rest of this call, n = deny]"),
        "{out}"
    );
    assert!(out.contains("TOKEN=hunter2"), "{out}");
    assert_eq!(code(&yes), 0);

    let no = jp_on_a_terminal(ws.path(), "tool call fs_read_file path=.env", "n\n");
    let out = stdout(&no);
    assert!(out.contains("the user denied it at the prompt") && !out.contains("hunter2"), "{out}");
    assert_eq!(code(&no), 1);

    // --no-interaction never asks, even on a terminal.
    let never = jp_on_a_terminal(ws.path(), "tool call fs_read_file path=.env --no-interaction", "y\n");
    let out = stdout(&never);
    assert!(!out.contains("allow?") && out.contains("non-interactive"), "{out}");
    assert_eq!(code(&never), 1);
}

#[test]
fn an_inquiry_on_a_terminal_shows_a_tools_control_characters_escaped() {
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
[conversation.tools.count_lines.sandbox]
filesystem.allow = ["src"]
"#,
    );
    // A path outside `src` is not covered: the user is asked. The path tries to clear the screen,
    // return the cursor and write a harmless-looking request over the real one.
    let args = r#"'{"path":"evil\u001b[2J\rsrc/main.rs\u202e"}'"#;
    let o = jp_on_a_terminal(ws.path(), &format!("tool call count_lines --args {args}"), "n\n");
    let out = stdout(&o);
    let request = out.lines().find(|l| l.contains("wants fs.read")).unwrap_or_else(|| panic!("no prompt: {out:?}"));
    let request = request.trim_end_matches('\r');
    assert_eq!(
        request, r#"tool 'count_lines' wants fs.read "evil\x1b[2J\rsrc/main.rs\u{202e}""#,
        "the path must be shown escaped and quoted: {out:?}"
    );
    let question = out.find("allow? [y = once").unwrap();
    assert!(!out[..question].contains(['\u{1b}', '\u{202e}']), "nothing raw before the question: {out:?}");
    assert_eq!(code(&o), 1, "{out}");
}

#[test]
fn a_tools_output_cannot_drive_the_terminal_but_a_pipe_gets_it_unchanged() {
    let ws = workspace();
    std::fs::write(ws.path().join("evil.txt"), "line one\n\u{1b}[2J\u{1b}]0;pwned\u{7}gone\rfake\u{202e}\tx\n")
        .unwrap();
    // On a terminal: lines and tabs as they are, every escape sequence and control disarmed.
    let o = jp_on_a_terminal(ws.path(), "tool call fs_read_file path=evil.txt", "");
    let out = stdout(&o);
    assert!(out.contains(r"\x1b[2J\x1b]0;pwned\x07gone\rfake\u{202e}"), "{out:?}");
    assert!(!out.contains(['\u{1b}', '\u{7}', '\u{202e}']), "{out:?}");
    // To a pipe: byte for byte what the file holds.
    let o = jp(ws.path(), &["tool", "call", "fs_read_file", "path=evil.txt"]);
    assert_eq!(stdout(&o), "line one\n\u{1b}[2J\u{1b}]0;pwned\u{7}gone\rfake\u{202e}\tx\n");
}
