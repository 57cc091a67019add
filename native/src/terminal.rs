//! The terminal side of the `jp` command: inquiries asked on the terminal and the `--trace`
//! printer.

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
}

impl Inquirer for TerminalInquirer {
    fn ask<'a>(&'a self, inquiry: &'a Inquiry) -> BoxFuture<'a, InquiryAnswer> {
        Box::pin(async move {
            let _one = self.lock.lock().await;
            let prompt = format!(
                "\ntool '{}' wants {} {}\n  ({})\nallow? [y = once, Y = for the rest of this call, n = deny] ",
                inquiry.tool, inquiry.method, inquiry.target, inquiry.reason
            );
            let answer = tokio::task::spawn_blocking(move || {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(prompt.as_bytes());
                let _ = err.flush();
                let mut line = String::new();
                match std::io::stdin().lock().read_line(&mut line) {
                    Ok(0) | Err(_) => None,
                    Ok(_) => Some(line),
                }
            })
            .await
            .ok()
            .flatten();
            match answer {
                Some(line) => Self::interpret(&line),
                None => InquiryAnswer::Deny("no answer (the terminal closed)".into()),
            }
        })
    }
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
        format!("trace: {} {} → {} ({}){outcome}", event.method, event.target, event.decision, event.reason)
    }
}

impl DispatchEvents for StderrTrace {
    fn pending(&self, _request_id: &Id, reason: &str) {
        let _one = self.lines.lock();
        eprintln!("trace: waiting for the user: {reason}");
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
}
