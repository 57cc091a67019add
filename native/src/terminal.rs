//! The terminal side of the `jp` command: inquiries asked on the terminal and the `--trace`
//! printer.
//!
//! Paths, URLs, command lines and reasons in an inquiry come from the tool. Written raw, an ESC
//! could move the cursor or clear the screen, a CR or newline could overwrite the question with a
//! forged one, and bidi or zero-width characters could make the text read differently from what
//! it is. So every such part is [escaped](escape) (`\x1b`, `\r`, `\u{202e}`, …) and a target
//! that is not one plain word is [quoted](shown); the question itself is written by `jp` alone,
//! on a line of its own.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::sync::Mutex;

use jp_core::BoxFuture;
/// The escaping routines (in core, so the page shows tool text the same way).
pub use jp_core::display::{escape, neutralize, shown};
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

    /// Map one typed answer to the decision (`y`, `a` — or `Y`, as before —, anything else):
    /// the same letters as `jp query`'s permission question.
    pub fn interpret(line: &str) -> InquiryAnswer {
        match line.trim() {
            "y" | "yes" => InquiryAnswer::Allow,
            "a" | "all" | "Y" => InquiryAnswer::AllowAll,
            _ => InquiryAnswer::Deny("the user denied it at the prompt".into()),
        }
    }

    /// The text written for one inquiry: the request (escaped, the target quoted unless it is one
    /// plain word), the policy's reason, and the fixed question on the last line.
    pub fn prompt(inquiry: &Inquiry) -> String {
        format!(
            "\ntool '{}' wants {} {}\n  ({})\nallow? [y = once, a = for the rest of this call, n = deny] ",
            escape(&inquiry.tool),
            shown(&inquiry.method),
            shown(&inquiry.target),
            jp_core::agent::surface::shown_reason(&inquiry.target, &inquiry.reason)
        )
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
            tool: "t".into(),
            method: "fs.write".into(),
            target: "a.txt".into(),
            decision: "deny",
            reason: "the default policy (workspace read-only)".into(),
            allowed: false,
        };
        assert_eq!(StderrTrace::line(&e), "trace: fs.write a.txt → deny (the default policy (workspace read-only))");
    }

    #[test]
    fn a_forged_question_in_a_target_stays_on_the_request_line() {
        let inquiry = Inquiry {
            tool: "t".into(),
            method: "fs.read".into(),
            target: "x\r\u{1b}[2K\nallow? [y = once, a = for the rest of this call, n = deny] y\n".into(),
            reason: "read 'x\u{1b}[2K' is not covered\r".into(),
        };
        let prompt = TerminalInquirer::prompt(&inquiry);
        assert!(!prompt.chars().any(|c| c.is_control() && c != '\n'), "{prompt:?}");
        let lines: Vec<&str> = prompt.split('\n').collect();
        assert_eq!(lines.len(), 4, "{prompt:?}");
        assert_eq!(
            lines[1],
            "tool 't' wants fs.read \"x\\r\\x1b[2K\\nallow? [y = once, a = for the rest of this call, n = deny] y\\n\""
        );
        assert_eq!(lines[2], "  (read 'x\\x1b[2K' is not covered\\r)");
        assert_eq!(lines[3], "allow? [y = once, a = for the rest of this call, n = deny] ");
    }

    #[test]
    fn trace_line_escapes_the_tool_controlled_parts() {
        let e = TraceEvent {
            tool: "t".into(),
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
