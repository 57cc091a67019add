//! The terminal side of the `jp` command: inquiries asked on the terminal and the `--trace`
//! printer.
//!
//! Paths, URLs, command lines and reasons in an inquiry come from the tool. Written raw, an ESC
//! could move the cursor or clear the screen, a CR or newline could overwrite the question with a
//! forged one, and bidi or zero-width characters could make the text read differently from what
//! it is. So every such part is [escaped](escape) (`\x1b`, `\r`, `\u{202e}`, …) and a target
//! that is not one plain word is [quoted](shown); the question itself is written by `jp` alone,
//! on a line of its own.

use std::fmt::Write as _;
use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::sync::Mutex;

use jp_core::BoxFuture;
use jp_core::host::{DispatchEvents, Inquirer, Inquiry, InquiryAnswer, TraceEvent};
use jp_core::protocol::Id;

/// Asks on the terminal: `y` allows once, `Y` allows this and every further request of the call,
/// anything else denies. Only used when stdin is a terminal; otherwise [`jp_core::host::DenyInquirer`]
/// answers.
#[derive(Debug, Default)]
pub struct TerminalInquirer {
    // One question at a time, even if requests arrive together.
    lock: tokio::sync::Mutex<()>,
}

impl TerminalInquirer {
    /// Whether there is a terminal to ask on.
    pub fn available() -> bool {
        std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
    }

    /// Map one typed answer to the decision (`y`, `Y`, anything else).
    pub fn interpret(line: &str) -> InquiryAnswer {
        match line.trim() {
            "y" | "yes" => InquiryAnswer::Allow,
            "Y" => InquiryAnswer::AllowAll,
            _ => InquiryAnswer::Deny("the user denied it at the prompt".into()),
        }
    }

    /// The text written for one inquiry: the request (escaped, the target quoted unless it is one
    /// plain word), the policy's reason, and the fixed question on the last line.
    pub fn prompt(inquiry: &Inquiry) -> String {
        format!(
            "\ntool '{}' wants {} {}\n  ({})\nallow? [y = once, Y = for the rest of this call, n = deny] ",
            escape(&inquiry.tool),
            shown(&inquiry.method),
            shown(&inquiry.target),
            escape(&inquiry.reason)
        )
    }
}

/// `text` with every character a terminal would not show as itself written as an escape: `\n`,
/// `\r`, `\t`, other C0 controls and DEL as `\x1b`, C1 controls, bidi controls, zero-width and
/// other invisible or format characters as `\u{202e}`; a backslash is doubled so an escape in
/// the output always means the character. Quotes are kept (see [`shown`]).
pub fn escape(text: &str) -> String {
    disarm(text, false)
}

/// Tool output for a terminal: line breaks (`\n`, `\r\n`) and tabs stay as they are so a result
/// reads normally, but no escape sequence, lone carriage return, backspace or bidi/invisible
/// character reaches the terminal to act on it (they are written as in [`escape`];
/// backslashes are left alone). Output to a pipe or file is not passed through this: it stays
/// byte for byte what the tool returned.
pub fn neutralize(text: &str) -> String {
    disarm(text, true)
}

/// The one escaping routine; `layout` keeps line breaks, tabs and backslashes as they are.
fn disarm(text: &str, layout: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' | '\\' if layout => out.push(c),
            '\r' if layout && chars.peek() == Some(&'\n') => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if c < ' ' || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if invisible(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// A tool-controlled word as it appears in a prompt or trace line: as is when it is one plain
/// word (nothing escaped, no space or quote), otherwise in double quotes with `"` escaped — so
/// where it ends can never be mistaken, and no text of the tool can pass for `jp`'s own words.
pub fn shown(text: &str) -> String {
    let escaped = escape(text);
    let plain = !text.is_empty() && escaped == text && !text.contains([' ', '"', '\'']);
    if plain { escaped } else { format!("\"{}\"", escaped.replace('"', "\\\"")) }
}

/// Characters that change how the text around them is displayed, or are not displayed at all:
/// C1 controls, bidi embeddings/overrides/isolates/marks, zero-width and joiner characters,
/// invisible fillers, variation selectors, tags; then whatever the standard library does not
/// consider printable (format characters, separators, unassigned and private-use code points).
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{80}'..='\u{9f}'
            | '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{115f}'
            | '\u{1160}'
            | '\u{17b4}'
            | '\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{205f}'..='\u{206f}'
            | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff0}'..='\u{fffb}'
            | '\u{e0000}'..='\u{e0fff}'
    ) || c != '\'' && c != '"' && {
        // `str::escape_debug` escapes what is not printable (and grapheme extenders only at the
        // start, which `x` prevents: combining accents of a real name stay readable).
        let pair: String = ['x', c].into_iter().collect();
        pair.escape_debug().nth(1) == Some('\\')
    }
}

impl Inquirer for TerminalInquirer {
    fn ask<'a>(&'a self, inquiry: &'a Inquiry) -> BoxFuture<'a, InquiryAnswer> {
        Box::pin(async move {
            let _one = self.lock.lock().await;
            match ask_line(Self::prompt(inquiry)).await {
                Some(line) => Self::interpret(&line),
                None => InquiryAnswer::Deny("no answer (the terminal closed)".into()),
            }
        })
    }
}

/// Write `prompt` to stderr and read one line from stdin (trimmed), off the async runtime;
/// `None` when the terminal closed. Every question `jp` asks goes through here.
pub async fn ask_line(prompt: String) -> Option<String> {
    tokio::task::spawn_blocking(move || {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(prompt.as_bytes());
        let _ = err.flush();
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim().to_owned()),
        }
    })
    .await
    .ok()
    .flatten()
}

/// `--trace`: every host request of the tool with its policy decision, one line each on stderr.
#[derive(Debug, Default)]
pub struct StderrTrace {
    lines: Mutex<()>,
}

impl StderrTrace {
    /// The line printed for one decision.
    pub fn line(event: &TraceEvent) -> String {
        let outcome = if event.decision == "ask" {
            if event.allowed { " → allowed by the user" } else { " → denied" }
        } else {
            ""
        };
        format!(
            "trace: {} {} → {} ({}){outcome}",
            shown(&event.method),
            shown(&event.target),
            event.decision,
            escape(&event.reason)
        )
    }
}

impl DispatchEvents for StderrTrace {
    fn pending(&self, _request_id: &Id, reason: &str) {
        let _one = self.lines.lock();
        eprintln!("trace: waiting for the user: {}", escape(reason));
    }
    fn decided(&self, event: &TraceEvent) {
        let _one = self.lines.lock();
        eprintln!("{}", Self::line(event));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        assert_eq!(TerminalInquirer::interpret("y\n"), InquiryAnswer::Allow);
        assert_eq!(TerminalInquirer::interpret("Y\n"), InquiryAnswer::AllowAll);
        assert!(matches!(TerminalInquirer::interpret("n\n"), InquiryAnswer::Deny(_)));
        assert!(matches!(TerminalInquirer::interpret("\n"), InquiryAnswer::Deny(_)));
    }

    #[test]
    fn trace_line_names_decision_and_rule() {
        let e = TraceEvent {
            method: "fs.write".into(),
            target: "a.txt".into(),
            decision: "deny",
            reason: "the default policy (workspace read-only)".into(),
            allowed: false,
        };
        assert_eq!(StderrTrace::line(&e), "trace: fs.write a.txt → deny (the default policy (workspace read-only))");
    }

    #[test]
    fn escape_shows_every_class_of_control_and_invisible_character() {
        let cases: &[(&str, &str)] = &[
            ("\n", "\\n"),
            ("\r", "\\r"),
            ("\t", "\\t"),
            ("\u{1b}[2J", "\\x1b[2J"),
            ("\u{8}", "\\x08"),
            ("\u{7}", "\\x07"),
            ("\u{0}", "\\x00"),
            ("\u{7f}", "\\x7f"),
            ("\u{9b}31m", "\\u{9b}31m"),
            ("\u{85}", "\\u{85}"),
            ("\\x1b", "\\\\x1b"),
            ("\u{ad}", "\\u{ad}"),
            ("\u{61c}", "\\u{61c}"),
            ("\u{200b}\u{200c}\u{200d}", "\\u{200b}\\u{200c}\\u{200d}"),
            ("\u{2060}\u{feff}", "\\u{2060}\\u{feff}"),
            ("\u{2028}\u{2029}", "\\u{2028}\\u{2029}"),
            ("\u{3164}\u{115f}", "\\u{3164}\\u{115f}"),
            ("\u{fe0f}\u{e0041}", "\\u{fe0f}\\u{e0041}"),
            ("\u{a0}", "\\u{a0}"),
            ("\u{e000}", "\\u{e000}"),
        ];
        for (raw, want) in cases {
            assert_eq!(escape(raw), *want, "{raw:?}");
        }
        // Every bidi control: embeddings, overrides, isolates, marks.
        for c in ('\u{202a}'..='\u{202e}').chain('\u{2066}'..='\u{2069}').chain(['\u{200e}', '\u{200f}']) {
            assert_eq!(escape(&c.to_string()), format!("\\u{{{:x}}}", u32::from(c)));
        }
        // Every C0 and C1 control, and nothing raw left of any of them.
        for c in ('\u{0}'..='\u{1f}').chain(['\u{7f}']).chain('\u{80}'..='\u{9f}') {
            let e = escape(&c.to_string());
            assert!(e.starts_with('\\') && !e.contains(c), "{c:?} -> {e:?}");
        }
        // Ordinary text, quotes and real names with accents (combining or not) stay as they are.
        for plain in ["src/main.rs", "it's \"quoted\"", "café", "cafe\u{301}", "日本語/ファイル", "emoji 🦀"]
        {
            assert_eq!(escape(plain), plain);
        }
    }

    #[test]
    fn neutralize_keeps_lines_and_tabs_and_disarms_the_rest() {
        assert_eq!(neutralize("a\tb\nc\r\nd\\e"), "a\tb\nc\r\nd\\e");
        assert_eq!(neutralize("x\u{1b}[2Jy\rz\u{8}\u{202e}"), "x\\x1b[2Jy\\rz\\x08\\u{202e}");
    }

    #[test]
    fn shown_quotes_anything_that_is_not_one_plain_word() {
        assert_eq!(shown("README.md"), "README.md");
        assert_eq!(shown("a b"), "\"a b\"");
        assert_eq!(shown(""), "\"\"");
        assert_eq!(shown("say \"hi\""), "\"say \\\"hi\\\"\"");
        assert_eq!(shown("x\u{1b}]0;t\u{7}"), "\"x\\x1b]0;t\\x07\"");
        assert_eq!(shown("a\u{202e}txt.exe"), "\"a\\u{202e}txt.exe\"");
    }

    #[test]
    fn a_forged_question_in_a_target_stays_on_the_request_line() {
        let inquiry = Inquiry {
            tool: "t".into(),
            method: "fs.read".into(),
            target: "x\r\u{1b}[2K\nallow? [y = once, Y = for the rest of this call, n = deny] y\n".into(),
            reason: "read 'x\u{1b}[2K' is not covered\r".into(),
        };
        let prompt = TerminalInquirer::prompt(&inquiry);
        assert!(!prompt.chars().any(|c| c.is_control() && c != '\n'), "{prompt:?}");
        let lines: Vec<&str> = prompt.split('\n').collect();
        assert_eq!(lines.len(), 4, "{prompt:?}");
        assert_eq!(
            lines[1],
            "tool 't' wants fs.read \"x\\r\\x1b[2K\\nallow? [y = once, Y = for the rest of this call, n = deny] y\\n\""
        );
        assert_eq!(lines[2], "  (read 'x\\x1b[2K' is not covered\\r)");
        assert_eq!(lines[3], "allow? [y = once, Y = for the rest of this call, n = deny] ");
    }

    #[test]
    fn trace_line_escapes_the_tool_controlled_parts() {
        let e = TraceEvent {
            method: "process.run".into(),
            target: "ls \u{1b}[8m -la".into(),
            decision: "deny",
            reason: "Access denied: running 'ls' \u{202e}".into(),
            allowed: false,
        };
        assert_eq!(
            StderrTrace::line(&e),
            "trace: process.run \"ls \\x1b[8m -la\" → deny (Access denied: running 'ls' \\u{202e})"
        );
    }
}

/// Answers a tool's own questions on the terminal (stderr for the question, stdin for the
/// answer); the question is the tool's text, shown with its controls disarmed.
#[derive(Debug, Default, Clone, Copy)]
pub struct TerminalAnswerer;

impl crate::app::Answerer for TerminalAnswerer {
    fn answer<'a>(
        &'a self,
        _tool: &'a str,
        question: &'a jp_core::state::Question,
    ) -> jp_core::BoxFuture<'a, Option<serde_json::Value>> {
        use jp_core::state::AnswerType;
        let hint = match &question.answer_type {
            AnswerType::Boolean => " [y/n]".to_owned(),
            AnswerType::Text => String::new(),
            AnswerType::Select { options } => format!(" [{}]", neutralize(&options.join("/"))),
        };
        let text = neutralize(&question.text);
        let boolean = question.answer_type == AnswerType::Boolean;
        Box::pin(async move {
            let line = ask_line(format!("{text}{hint} ")).await?;
            Some(if boolean {
                serde_json::Value::Bool(matches!(line.as_str(), "y" | "Y" | "yes" | "true"))
            } else {
                serde_json::Value::String(line)
            })
        })
    }
}
