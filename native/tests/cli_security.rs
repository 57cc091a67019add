//! The `jp` binary against hostile workspaces and tools: a knowledge base that links out of the
//! workspace, and tools that misuse the schema request (D06).

#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::{Command, Output};

const JP: &str = env!("CARGO_BIN_EXE_jp");

fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("README.md"), "# demo\n").unwrap();
    ws
}

fn jp(ws: &Path, args: &[&str]) -> Output {
    Command::new(JP).arg("--workspace").arg(ws).args(args).stdin(std::process::Stdio::null()).output().unwrap()
}

fn out(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn write_config(ws: &Path, text: &str) {
    std::fs::create_dir_all(ws.join(".jp")).unwrap();
    std::fs::write(ws.join(".jp/config.toml"), text).unwrap();
}

/// A directory outside the workspace that looks like a knowledge base (topic `stolen`).
fn outside_kb() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("stolen")).unwrap();
    std::fs::write(dir.path().join("stolen/secret.md"), "# secret\nOUTSIDE-CONTENT\n").unwrap();
    dir
}

#[test]
fn learn_refuses_a_knowledge_base_that_links_out_of_the_workspace() {
    let ws = workspace();
    let outside = outside_kb();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join(".jp/kb")).unwrap();
    for args in [&["tool", "call", "learn"][..], &["tool", "call", "learn", "topic=stolen", r#"subjects=["*"]"#]] {
        let o = jp(ws.path(), args);
        let text = out(&o);
        assert_eq!(o.status.code(), Some(2), "{text}");
        assert!(text.contains(".jp/kb leads outside the workspace"), "the error names the path and why: {text}");
        assert!(text.contains("replace the link"), "and how to fix it: {text}");
        assert!(!text.contains("OUTSIDE-CONTENT") && !text.contains("secret"), "nothing outside listed: {text}");
    }
}

#[test]
fn learn_refuses_a_topic_or_subject_that_links_out_of_the_workspace() {
    let ws = workspace();
    let outside = outside_kb();
    let kb = ws.path().join(".jp/kb");
    std::fs::create_dir_all(kb.join("fine")).unwrap();
    std::fs::write(kb.join("fine/ok.md"), "# ok\nINSIDE-CONTENT\n").unwrap();
    std::os::unix::fs::symlink(outside.path().join("stolen"), kb.join("stolen")).unwrap();
    let o = jp(ws.path(), &["tool", "call", "learn", "topic=stolen", r#"subjects=["*"]"#]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains(".jp/kb/stolen leads outside the workspace"), "{text}");
    assert!(!text.contains("OUTSIDE-CONTENT"), "{text}");
    // The linked topic is not offered either.
    let o = jp(ws.path(), &["tool", "call", "learn", "topic=nope"]);
    assert!(out(&o).contains("topics: fine") && !out(&o).contains("stolen"), "{}", out(&o));

    // A subject inside a real topic that links out is not read.
    std::os::unix::fs::symlink(outside.path().join("stolen/secret.md"), kb.join("fine/leak.md")).unwrap();
    let o = jp(ws.path(), &["tool", "call", "learn", "topic=fine", r#"subjects=["*"]"#]);
    let text = out(&o);
    assert!(text.contains("INSIDE-CONTENT"), "{text}");
    assert!(!text.contains("OUTSIDE-CONTENT"), "{text}");
}

#[test]
fn learn_refuses_an_absolute_or_escaping_kb_option() {
    let ws = workspace();
    for (kb, why) in [("/etc", "is absolute"), ("../x", "escapes the workspace"), (".jp/../../x", "escapes")] {
        write_config(ws.path(), &format!("[conversation.tools.learn]\nsource = \"builtin\"\noptions.kb = {kb:?}\n"));
        let o = jp(ws.path(), &["tool", "call", "learn", "topic=passwd"]);
        let text = out(&o);
        assert_eq!(o.status.code(), Some(2), "{text}");
        assert!(text.contains("`options.kb`") && text.contains(&format!("{kb:?}")) && text.contains(why), "{text}");
    }
}

#[test]
fn learn_reads_a_knowledge_base_in_the_workspace_even_through_an_inner_link() {
    let ws = workspace();
    std::fs::create_dir_all(ws.path().join("docs/kb/rust")).unwrap();
    std::fs::write(ws.path().join("docs/kb/rust/ownership.md"), "# ownership\nBorrow, do not steal.\n").unwrap();
    std::fs::create_dir_all(ws.path().join(".jp")).unwrap();
    // A link that stays inside the workspace is fine.
    std::os::unix::fs::symlink("../docs/kb", ws.path().join(".jp/kb")).unwrap();
    let o = jp(ws.path(), &["tool", "call", "learn", r#"subjects=["own*"]"#]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(out(&o).contains("Borrow, do not steal."), "{}", out(&o));
    write_config(ws.path(), "[conversation.tools.learn]\nsource = \"builtin\"\noptions.kb = \"docs/kb\"\n");
    let o = jp(ws.path(), &["tool", "call", "learn", "topic=rust", r#"subjects=["own*"]"#]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(out(&o).contains("Borrow, do not steal."), "{}", out(&o));
}
