//! What the user sees before allowing a tool call (RFD 009's permission question), decided in
//! one place for `jp query` and the page: [`describe_call`].
//!
//! A yes grants what the arguments say, so the fields that say *what the call touches* are shown
//! first and in full, however long: paths, commands and their arguments, URLs, environment, the
//! stateful action (see [`is_granting`] for the set). The other fields — file content,
//! replacement text — come after, each cut at [`FIELD_SHOWN`] characters, at most
//! [`FIELDS_SHOWN`] of them; whatever is cut or left out is named with its size, so a long
//! `content` can never push `"path": ".jp/config.toml"` out of sight. A granting field nested
//! in another (`edits[0].path`) is lifted out and shown in full as well.
//!
//! Every line is safe to show as it is: values are written as JSON (quotes and control
//! characters escaped) and then [neutralized](crate::display::neutralize) (bidi and invisible
//! characters escaped), keys and the name are [shown]; no line holds a
//! line break, so nothing in the arguments can forge the question that follows.

use serde_json::{Map, Value};

use crate::display::{neutralize, shown};

/// Characters of a field that does not grant anything shown at most.
pub const FIELD_SHOWN: usize = 200;

/// Fields that do not grant anything shown at most; the rest are named, not shown.
pub const FIELDS_SHOWN: usize = 16;

/// How deep nested arguments are searched for granting fields.
const DEPTH: usize = 16;

/// Keys that say what a call touches, compared lowercase with `_` and `-` removed.
const GRANTING: &[&str] = &[
    "action",
    "args",
    "argv",
    "cmd",
    "command",
    "cwd",
    "dest",
    "destination",
    "dir",
    "directory",
    "dst",
    "env",
    "envs",
    "file",
    "files",
    "from",
    "host",
    "path",
    "paths",
    "program",
    "root",
    "source",
    "src",
    "target",
    "to",
    "uri",
    "url",
    "urls",
    "workdir",
];

/// Endings of such keys (`old_path`, `filePath`, `target_dir`, `outputFile`, `base_url`).
const GRANTING_SUFFIXES: &[&str] =
    &["path", "paths", "dir", "directory", "file", "files", "filename", "url", "urls", "uri", "command", "program"];

/// Whether a field named `key` says what a call touches and so is always shown in full: one of
/// `action`, `args`, `argv`, `cmd`, `command`, `cwd`, `dest`, `destination`, `dir`,
/// `directory`, `dst`, `env`, `envs`, `file`, `files`, `from`, `host`, `path`, `paths`,
/// `program`, `root`, `source`, `src`, `target`, `to`, `uri`, `url`, `urls`, `workdir`, or a key
/// ending in `path(s)`, `dir(ectory)`, `file(s)`, `filename`, `url(s)`, `uri`, `command` or
/// `program` — case, `_` and `-` ignored. Showing a harmless field in full costs a line;
/// cutting a path would hide what a yes grants.
pub fn is_granting(key: &str) -> bool {
    let key: String = key.chars().filter(|c| !matches!(c, '_' | '-')).flat_map(char::to_lowercase).collect();
    GRANTING.contains(&key.as_str()) || GRANTING_SUFFIXES.iter().any(|s| key.ends_with(s))
}

/// A field not shown in full.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutField {
    /// Its key as shown (nested fields as `a.b[0]`).
    pub key: String,
    /// Its length in characters: of the text for a string, of the JSON otherwise.
    pub characters: usize,
    /// How many of them are shown (0: the field is left out).
    pub shown: usize,
}

impl CutField {
    /// The note naming it: `(content cut: 5000 characters; shown: first 200)`.
    pub fn note(&self) -> String {
        let size = plural(self.characters, "character");
        if self.shown == 0 {
            format!("({} not shown: {size})", self.key)
        } else {
            format!("({} cut: {size}; shown: first {})", self.key, self.shown)
        }
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") }
}

/// What a permission question shows of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallSummary {
    /// The tool's name, quoted unless it is one plain word.
    pub name: String,
    /// One `key: value` line per field shown: the granting fields first, in full, then the
    /// others, maybe cut. Safe to show as they are; none holds a line break.
    pub lines: Vec<String>,
    /// The fields cut or left out, in the order of `lines`.
    pub cut: Vec<CutField>,
}

impl CallSummary {
    /// The lines, then one note per cut field.
    pub fn all_lines(&self) -> Vec<String> {
        self.lines.iter().cloned().chain(self.cut.iter().map(CutField::note)).collect()
    }

    /// [`all_lines`](Self::all_lines), each on its own line after two spaces of indent.
    pub fn text(&self) -> String {
        self.all_lines().iter().map(|l| format!("  {l}\n")).collect()
    }
}

/// What to show of a call of tool `name` with `arguments` before the user allows it (see the
/// module documentation).
pub fn describe_call(name: &str, arguments: &Value) -> CallSummary {
    let mut granting = Vec::new();
    let mut others = Vec::new();
    match arguments {
        Value::Object(map) => {
            for (key, value) in sorted(map) {
                let shown_key = shown(key);
                if is_granting(key) && flat(value) {
                    granting.push(line(&shown_key, &full(value)));
                } else {
                    lift(value, &shown_key, DEPTH, &mut granting);
                    others.push((shown_key, value));
                }
            }
        }
        other => others.push(("arguments".to_owned(), other)),
    }
    let mut lines = granting;
    let mut cut = Vec::new();
    for (i, (key, value)) in others.into_iter().enumerate() {
        // A string is measured and cut as text, anything else as its JSON.
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let characters = text.chars().count();
        if i >= FIELDS_SHOWN {
            cut.push(CutField { key, characters, shown: 0 });
        } else if characters <= FIELD_SHOWN {
            lines.push(line(&key, &full(value)));
        } else {
            let head: String = text.chars().take(FIELD_SHOWN).collect();
            let head = if value.is_string() {
                let json = Value::String(head).to_string();
                // Without the closing quote, which would say the string ends there.
                json[..json.len() - 1].to_owned()
            } else {
                head
            };
            lines.push(line(&key, &format!("{}…", neutralize(&head))));
            cut.push(CutField { key, characters, shown: FIELD_SHOWN });
        }
    }
    CallSummary { name: shown(name), lines, cut }
}

fn line(key: &str, value: &str) -> String {
    format!("{key}: {value}")
}

/// The JSON of `value`, safe to show.
fn full(value: &Value) -> String {
    neutralize(&value.to_string())
}

/// An object's fields by key (the model's order is not meaningful, and this one is stable).
fn sorted(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut fields: Vec<_> = map.iter().collect();
    fields.sort_by(|a, b| a.0.cmp(b.0));
    fields
}

/// A value shown in full as one granting field: a scalar, or an array or object of scalars
/// (`args`, `paths`, `env`). Anything deeper is searched for granting fields instead.
fn flat(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().all(|v| !v.is_array() && !v.is_object()),
        Value::Object(map) => map.values().all(|v| !v.is_array() && !v.is_object()),
        _ => true,
    }
}

/// The granting fields nested in `value` (under `at`), as lines in full.
fn lift(value: &Value, at: &str, depth: usize, out: &mut Vec<String>) {
    if depth == 0 {
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, v) in sorted(map) {
                let path = format!("{at}.{}", shown(key));
                if is_granting(key) && flat(v) {
                    out.push(line(&path, &full(v)));
                } else {
                    lift(v, &path, depth - 1, out);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                lift(v, &format!("{at}[{i}]"), depth - 1, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_long_content_is_cut_after_the_path_which_is_shown_first_and_in_full() {
        let content = "x".repeat(5000);
        let summary = describe_call("fs_create_file", &json!({"content": content, "path": ".jp/config.toml"}));
        assert_eq!(summary.name, "fs_create_file");
        assert_eq!(summary.lines[0], r#"path: ".jp/config.toml""#);
        assert_eq!(summary.lines[1], format!("content: \"{}…", "x".repeat(FIELD_SHOWN)));
        assert_eq!(summary.cut, [CutField { key: "content".into(), characters: 5000, shown: 200 }]);
        assert_eq!(summary.all_lines()[2], "(content cut: 5000 characters; shown: first 200)");
        assert_eq!(
            summary.text(),
            format!(
                "  path: \".jp/config.toml\"\n  content: \"{}…\n  (content cut: 5000 characters; shown: first 200)\n",
                "x".repeat(200)
            )
        );
    }

    #[test]
    fn short_arguments_are_shown_whole_and_nothing_is_named_as_cut() {
        let summary =
            describe_call("fs_modify_file", &json!({"patterns": [{"old": "TODO", "new": "DONE"}], "path": "notes.md"}));
        assert_eq!(summary.lines, [r#"path: "notes.md""#, r#"patterns: [{"new":"DONE","old":"TODO"}]"#]);
        assert!(summary.cut.is_empty());
    }

    #[test]
    fn every_granting_field_is_shown_in_full_however_long() {
        let long = format!("src/{}/main.rs", "deep/".repeat(300));
        let args: Vec<String> = (0..100).map(|i| format!("--flag-{i}")).collect();
        let summary = describe_call(
            "run",
            &json!({
                "action": "spawn", "program": "cargo", "args": args, "envs": ["RUSTFLAGS"],
                "source": long, "destination": "b", "cwd": "sub", "base_url": "https://example.com/",
                "outputFile": "out.txt", "target_dir": "t", "input": "y".repeat(300),
            }),
        );
        let keys: Vec<&str> = summary.lines.iter().map(|l| l.split(':').next().unwrap()).collect();
        assert_eq!(
            keys,
            [
                "action",
                "args",
                "base_url",
                "cwd",
                "destination",
                "envs",
                "outputFile",
                "program",
                "source",
                "target_dir",
                "input"
            ]
        );
        assert!(summary.lines.contains(&format!("source: \"{long}\"")));
        assert!(summary.lines.contains(&format!("args: {}", serde_json::to_string(&args).unwrap())));
        assert_eq!(summary.cut, [CutField { key: "input".into(), characters: 300, shown: 200 }]);
    }

    #[test]
    fn nested_granting_fields_are_lifted_out_of_a_field_that_is_cut() {
        let body = "z".repeat(400);
        let summary = describe_call(
            "multi_edit",
            &json!({"edits": [{"content": body, "path": "a.rs"}, {"content": "x", "path": ".jp/config.toml"}]}),
        );
        assert_eq!(summary.lines[0], r#"edits[0].path: "a.rs""#);
        assert_eq!(summary.lines[1], r#"edits[1].path: ".jp/config.toml""#);
        assert!(summary.lines[2].starts_with("edits: [{\"content\":\"zzz") && summary.lines[2].ends_with('…'));
        assert_eq!(summary.cut[0].key, "edits");
        assert_eq!(summary.cut[0].shown, FIELD_SHOWN);
    }

    #[test]
    fn fields_beyond_the_limit_are_named_not_shown() {
        let mut args = Map::new();
        for i in 0..FIELDS_SHOWN + 3 {
            args.insert(format!("k{i:02}"), json!(i));
        }
        args.insert("path".into(), json!("p"));
        let summary = describe_call("t", &Value::Object(args));
        assert_eq!(summary.lines.len(), 1 + FIELDS_SHOWN);
        assert_eq!(summary.lines[0], r#"path: "p""#);
        let hidden: Vec<&str> = summary.cut.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(hidden, ["k16", "k17", "k18"]);
        assert_eq!(summary.cut[0].note(), "(k16 not shown: 2 characters)");
    }

    #[test]
    fn nothing_in_the_arguments_can_break_a_line_or_hide_itself() {
        let summary = describe_call(
            "evil\u{1b}[2J",
            &json!({
                "path": "a\u{202e}txt.exe\n[y = yes] ",
                "we ird\"key": "\u{7f}\u{9b}",
                "content": format!("{}\u{200b}", "c".repeat(250)),
            }),
        );
        assert_eq!(summary.name, "\"evil\\x1b[2J\"");
        for l in summary.all_lines() {
            assert!(!l.chars().any(|c| c.is_control() || c == '\u{202e}' || c == '\u{200b}'), "{l:?}");
        }
        assert_eq!(summary.lines[0], r#"path: "a\u{202e}txt.exe\n[y = yes] ""#);
        assert!(summary.lines.contains(&r#""we ird\"key": "\x7f\u{9b}""#.to_owned()), "{:?}", summary.lines);
    }

    #[test]
    fn arguments_that_are_not_an_object_are_shown_as_one_field() {
        let summary = describe_call("t", &json!("a".repeat(300)));
        assert_eq!(summary.cut, [CutField { key: "arguments".into(), characters: 300, shown: 200 }]);
        assert_eq!(describe_call("t", &json!([1, 2])).lines, ["arguments: [1,2]"]);
    }

    #[test]
    fn the_granting_set_matches_keys_in_any_case_and_spelling() {
        for key in ["path", "Path", "old_path", "filePath", "target-dir", "OUTPUT_FILE", "base_url", "argv", "env"] {
            assert!(is_granting(key), "{key}");
        }
        for key in ["content", "patterns", "old", "new", "pattern", "input", "start_line"] {
            assert!(!is_granting(key), "{key}");
        }
    }
}
