//! Every example in README.md, run as written (issue 36) — and those of docs/configuration.md
//! and docs/tools.md that configure or build a tool: each `jp …` line of its `sh` blocks in
//! a temp workspace (those that need a model endpoint, a person at a terminal or another program
//! are listed in [`NOT_RUN`] with the reason, and the list is checked against the README so it
//! cannot go stale), each `toml` block as a workspace's `.jp/config.toml` that `jp` accepts, the
//! MCP client configuration as JSON that starts `jp mcp`, and the Python VFS tool as the tool its
//! text configures.

#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;

mod support;
use support::approve_config;
use support::cli::{code, jp, jp_on_a_terminal, stderr, stdout, workspace, write_config};

const JP: &str = env!("CARGO_BIN_EXE_jp");

/// README lines that are not run here, by their start, with why.
const NOT_RUN: &[(&str, &str)] = &[
    ("cargo install", "builds jp (the test runs the jp it built)"),
    ("jp query \"what does", "needs the model endpoint marked default"),
    ("jp query --continue", "needs a model endpoint"),
    ("jp --json query", "needs a model endpoint"),
    ("jp trust  ", "asks y/N on a terminal (the --yes form below is run)"),
    ("npm ", "the web build: run by ./tests/run itself"),
    ("./tests/run", "the test command itself"),
];

/// README lines run on a terminal, with what the person types (`a` to each permission question).
const ON_A_TERMINAL: &[(&str, &str)] = &[("jp query --provider scripted", "a\na\n")];

/// The README's fenced blocks: (language, first line number, text).
fn blocks() -> Vec<(String, usize, String)> {
    blocks_of("README.md")
}

/// The fenced blocks of a file of the repository (`docs/configuration.md`).
fn blocks_of(file: &str) -> Vec<(String, usize, String)> {
    let text = std::fs::read_to_string(format!("{}/../{file}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let mut out = Vec::new();
    let mut open: Option<(String, usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some(lang) = line.strip_prefix("```") {
            match open.take() {
                Some(block) => out.push(block),
                None => open = Some((lang.trim().to_owned(), i + 1, String::new())),
            }
        } else if let Some((_, _, body)) = open.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

/// A shell line without its trailing comment (` # …`).
fn command_of(line: &str) -> &str {
    line.find(" #").map_or(line, |i| &line[..i]).trim()
}

#[test]
fn every_list_of_lines_not_run_names_a_readme_line() {
    let lines: Vec<String> = blocks()
        .into_iter()
        .filter(|(lang, ..)| lang == "sh")
        .flat_map(|(_, _, body)| body.lines().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    for (start, why) in NOT_RUN {
        assert!(
            lines.iter().any(|l| l.starts_with(start)),
            "NOT_RUN names {start:?} ({why}), which the README no longer has"
        );
    }
}

#[test]
fn every_jp_line_of_the_readme_runs_as_written() {
    let ws = workspace();
    // A workspace configuration, for `jp trust` to show and approve.
    write_config(ws.path(), "[conversation.tools.fs_create_file]\nsource = \"builtin\"\n");
    let mut ran = 0;
    for (lang, at, body) in blocks() {
        if lang != "sh" {
            continue;
        }
        for line in body.lines() {
            if line.trim().is_empty() || NOT_RUN.iter().any(|(start, _)| line.starts_with(start)) {
                continue;
            }
            let command = command_of(line).replace("DIR", &ws.path().display().to_string());
            assert!(command.starts_with("jp "), "README.md:{at}: a line neither run nor in NOT_RUN: {line}");
            if let Some((_, typed)) = ON_A_TERMINAL.iter().find(|(start, _)| line.starts_with(start)) {
                let o = jp_on_a_terminal(ws.path(), &command["jp ".len()..], typed);
                assert_eq!(code(&o), 0, "README.md:{at}: `{command}` failed:\n{}\n{}", stdout(&o), stderr(&o));
                ran += 1;
                continue;
            }
            // As a user's shell runs it, with this jp first on PATH and the workspace current.
            let bin = Path::new(JP).parent().unwrap();
            let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
            let o = Command::new("sh")
                .arg("-c")
                .arg(&command)
                .current_dir(ws.path())
                .env("PATH", path)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            assert_eq!(code(&o), 0, "README.md:{at}: `{command}` failed:\n{}\n{}", stdout(&o), stderr(&o));
            ran += 1;
        }
    }
    assert!(ran >= 10, "only {ran} README lines ran");
}

#[test]
fn every_toml_block_of_the_readme_is_a_configuration_jp_accepts() {
    let all = blocks().into_iter().map(|b| ("README.md", b));
    let reference = blocks_of("docs/configuration.md").into_iter().map(|b| ("docs/configuration.md", b));
    for (file, (lang, line, body)) in all.chain(reference) {
        if lang != "toml" {
            continue;
        }
        let at = format!("{file}:{line}");
        let ws = workspace();
        write_config(ws.path(), &body);
        approve_config(ws.path());
        let o = jp(ws.path(), &["tool", "list"]);
        assert_eq!(code(&o), 0, "{at}: jp refuses the example:\n{}", stderr(&o));
        for name in body.lines().filter_map(|l| l.strip_prefix("[conversation.tools.")) {
            let name = name.split([']', '.']).next().unwrap();
            assert!(stdout(&o).contains(name), "{at}: tool '{name}' is not listed:\n{}", stdout(&o));
        }
    }
}

#[test]
fn the_mcp_client_configuration_starts_jp_mcp() {
    let (_, at, body) = blocks().into_iter().find(|(lang, ..)| lang == "json").expect("the README's MCP configuration");
    let config: serde_json::Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("README.md:{at}: {e}"));
    let server = &config["mcpServers"]["jp"];
    assert_eq!(server["command"], "jp", "README.md:{at}");
    let args: Vec<&str> = server["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    let ws = workspace();
    // The server it starts answers an initialize.
    let mut child = Command::new(JP)
        .arg("--workspace")
        .arg(ws.path())
        .args(&args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    use std::io::{BufRead as _, Write as _};
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"readme","version":"1"}}}"#;
    writeln!(child.stdin.as_mut().unwrap(), "{init}").unwrap();
    let mut reply = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut reply).unwrap();
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
    assert!(reply.contains(r#""serverInfo""#), "README.md:{at}: {reply}");
}

#[test]
fn the_python_vfs_tool_of_the_readme_counts_lines_as_configured() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let (_, at, script) = blocks().into_iter().find(|(lang, ..)| lang == "python").expect("the README's Python tool");
    // Configured as the text before it says.
    let configured = "command = \"/usr/bin/python3 tools/count.py\"` and `runtime = \"vfs\"";
    assert!(readme.contains(configured), "README.md:{at}: the text no longer configures the tool as this test does");
    let ws = workspace();
    std::fs::create_dir_all(ws.path().join("tools")).unwrap();
    std::fs::write(ws.path().join("tools/count.py"), script).unwrap();
    write_config(
        ws.path(),
        r#"
[conversation.tools.count_lines]
source = "local"
command = "/usr/bin/python3 tools/count.py"
runtime = "vfs"
parameters = { path = { type = "string", required = true } }
"#,
    );
    let o = jp(ws.path(), &["tool", "call", "count_lines", "path=src/main.rs"]);
    assert_eq!(code(&o), 0, "README.md:{at}: {}", stderr(&o));
    assert!(stdout(&o).contains("3 lines"), "README.md:{at}: {}", stdout(&o));
}

#[test]
fn the_sample_output_of_the_demo_is_what_jp_prints() {
    let all = blocks();
    let demo = all.iter().position(|(_, _, body)| body.contains("jp query --provider scripted")).unwrap();
    // The block right after the commands: what the demo prints, `[…]` standing for a cut value.
    let (_, at, sample) = &all[demo + 1];
    let ws = workspace();
    let o = jp_on_a_terminal(ws.path(), "query --provider scripted \"fix the TODO\"", "a\na\n");
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    // On a terminal stdout and stderr are one stream.
    let printed = stdout(&o).replace('\r', "");
    for line in sample.lines().filter(|l| !l.trim().is_empty() && *l != "[…]") {
        let parts: Vec<&str> = line.split("[…]").collect();
        let found = printed.lines().any(|p| {
            let mut rest = p;
            parts.iter().all(|part| match rest.find(part) {
                Some(i) => {
                    rest = &rest[i + part.len()..];
                    true
                }
                None => false,
            })
        });
        assert!(found, "README.md:{at}: the sample line {line:?} is not what jp prints:\n{printed}");
    }
}

#[test]
fn the_self_describing_tool_of_docs_tools_md_runs_as_written() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/tools.md")).unwrap();
    let section = &doc[doc.find("#### Tools that describe themselves").expect("the section")..];
    let block = |lang: &str| {
        let start = section.find(&format!("```{lang}\n")).unwrap_or_else(|| panic!("no {lang} block")) + lang.len() + 4;
        section[start..start + section[start..].find("```").unwrap()].to_owned()
    };
    // The documented answer is one jp reads.
    let answer: serde_json::Value = serde_json::from_str(&block("json")).expect("the answer is JSON");
    assert_eq!(answer["tools"].as_array().unwrap().len(), 2);
    let ws = workspace();
    std::fs::create_dir_all(ws.path().join("tools")).unwrap();
    std::fs::write(ws.path().join("tools/count.py"), block("python")).unwrap();
    write_config(ws.path(), &block("toml"));
    let o = jp(ws.path(), &["tool", "schema", "word_count"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let schema: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(schema["summary"], "Count the words of a file.");
    assert_eq!(schema["parameters"]["properties"]["min_length"]["minimum"], 1, "{schema}");
    assert_eq!(schema["parameters"]["required"], serde_json::json!(["path"]), "{schema}");
    let o = jp(ws.path(), &["tool", "call", "word_count", "path=src/main.rs", "min_length=3"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "2 words");
    let o = jp(ws.path(), &["tool", "call", "line_count", "path=src/main.rs"]);
    assert_eq!(stdout(&o).trim(), "3 lines", "{}", stderr(&o));
}
