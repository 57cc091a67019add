//! What `jp query` shows: the assistant's text on stdout; each tool call, the host decisions it
//! caused and its result on stderr, compact — or, with `--json`, one JSON object per line on
//! stdout for every event. Everything shown passes the scrubber (the API key never appears).

use std::io::{IsTerminal as _, Write as _};
use std::sync::Mutex;

use jp_core::agent::prompt::describe_call;
use jp_core::agent::turn::TurnEvent;
use jp_core::host::{DispatchEvents, TraceEvent};
use jp_core::policy::{Scrubber, StreamScrubber};
use serde_json::{Value, json};

use crate::terminal::{escape, neutralize, shown};

/// Longest part of a tool's arguments or result shown on one line.
const SHOWN: usize = 160;

fn clip(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(SHOWN).collect();
    if out.len() < line.len() || text.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

/// Longest error shown: an error is what the person needs to read in full (a refusal says how
/// to allow what was refused), so it is not cut to a line.
const SHOWN_ERROR: usize = 2000;

/// An error on as many lines as it has, indented under its mark, cut only past [`SHOWN_ERROR`].
fn clip_error(text: &str) -> String {
    let mut out: String = text.trim_end().chars().take(SHOWN_ERROR).collect();
    if out.len() < text.trim_end().len() {
        out.push('…');
    }
    out.replace('\n', "\n    ")
}

/// Where a turn's events are shown.
pub struct Printer {
    json: bool,
    scrubber: Scrubber,
    /// Whether the reply being written was shown in pieces already.
    streamed: std::sync::atomic::AtomicBool,
    /// The streamed text's end that may begin a secret, held back.
    held: Mutex<StreamScrubber>,
    // One event at a time: lines of concurrent calls never interleave.
    lock: Mutex<()>,
}

impl std::fmt::Debug for Printer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Printer").field("json", &self.json).finish_non_exhaustive()
    }
}

impl Printer {
    /// Show events as text (or JSON lines), with `secrets` scrubbed from all of it.
    pub fn new(json: bool, secrets: &[String]) -> Self {
        Self {
            json,
            scrubber: Scrubber::new(secrets.iter().filter(|s| !s.is_empty())),
            streamed: std::sync::atomic::AtomicBool::new(false),
            held: Mutex::default(),
            lock: Mutex::new(()),
        }
    }

    /// The part of a streamed piece that can be shown now, scrubbed; the rest waits.
    fn piece(&self, text: &str) -> String {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner).piece(&self.scrubber, text)
    }

    /// What was held back of the streamed text (its end is reached).
    fn rest(&self) -> String {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner).finish()
    }

    /// `text` with the secrets replaced.
    pub fn scrub(&self, text: &str) -> String {
        self.scrubber.scrub_str(text).into_owned()
    }

    /// One JSON event line (`--json`), scrubbed.
    fn emit(&self, value: &Value) {
        let line = self.scrub(&value.to_string());
        let _one = self.lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    fn err_line(&self, text: &str) {
        let text = self.scrub(text);
        let _one = self.lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = writeln!(std::io::stderr().lock(), "{text}");
    }

    /// A turn event.
    pub fn event(&self, event: &TurnEvent) {
        if self.json {
            let value = match event {
                TurnEvent::TextDelta(text) => {
                    let shown = self.piece(text);
                    if shown.is_empty() {
                        return;
                    }
                    json!({"type": "text_delta", "text": shown})
                }
                TurnEvent::Text(text) => {
                    let rest = self.rest();
                    if !rest.is_empty() {
                        self.emit(&json!({"type": "text_delta", "text": rest}));
                    }
                    json!({"type": "text", "text": text})
                }
                TurnEvent::ToolCall(c) => {
                    json!({"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments})
                }
                TurnEvent::ToolResult { id, output } => {
                    json!({"type": "tool_result", "id": id, "content": output.content, "is_error": output.is_error})
                }
                TurnEvent::Retry { error, after } => {
                    json!({"type": "retry", "error": error.to_string(), "after_ms": after.as_millis() as u64})
                }
                TurnEvent::End { rounds } => json!({"type": "turn_end", "rounds": rounds}),
            };
            self.emit(&value);
            return;
        }
        use std::sync::atomic::Ordering;
        match event {
            // Pieces as they are written, then the line ends when the whole text comes.
            TurnEvent::TextDelta(text) => {
                self.streamed.store(true, Ordering::SeqCst);
                let shown = self.piece(text);
                self.out(&shown, false);
            }
            TurnEvent::Text(text) => {
                if self.streamed.swap(false, Ordering::SeqCst) {
                    let rest = self.rest();
                    self.out(&rest, true);
                } else {
                    self.out(text, true);
                }
            }
            // The fields that say what the call touches first, as the permission question
            // shows them (already safe to show), then clipped to one line.
            TurnEvent::ToolCall(c) => {
                let summary = describe_call(&c.name, &c.arguments);
                self.err_line(&format!("▸ {} {}", summary.name, clip(&summary.lines.join(", "))));
            }
            TurnEvent::ToolResult { output, .. } => {
                if output.is_error {
                    let lines: Vec<String> = clip_error(&output.content).split('\n').map(escape).collect();
                    self.err_line(&format!("  ✗ {}", lines.join("\n")));
                } else {
                    self.err_line(&format!("  ✓ {}", escape(&clip(&output.content))));
                }
            }
            TurnEvent::Retry { error, after } => {
                self.err_line(&format!("  (retrying in {:.1} s: {})", after.as_secs_f64(), escape(&error.to_string())));
            }
            TurnEvent::End { .. } => {}
        }
    }

    /// The model's text on stdout. It may quote what a tool read: on a terminal nothing in it may
    /// act on the terminal.
    fn out(&self, text: &str, end_line: bool) {
        let text = self.scrub(text);
        let text = if std::io::stdout().is_terminal() { neutralize(&text) } else { text };
        let _one = self.lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out = std::io::stdout().lock();
        let _ = if end_line { writeln!(out, "{text}") } else { write!(out, "{text}") };
        let _ = out.flush();
    }

    /// Why the turn ended without an answer.
    pub fn error(&self, message: &str) {
        if self.json {
            self.emit(&json!({"type": "error", "message": message}));
        } else {
            self.err_line(&format!("error: {message}"));
        }
    }

    /// A note for the user (not part of the conversation).
    pub fn note(&self, message: &str) {
        if !self.json {
            self.err_line(message);
        }
    }
}

impl DispatchEvents for Printer {
    fn decided(&self, event: &TraceEvent) {
        if self.json {
            self.emit(&json!({
                "type": "decision",
                "method": event.method,
                "target": event.target,
                "decision": event.decision,
                "reason": event.reason,
                "allowed": event.allowed,
            }));
            return;
        }
        let outcome = match (event.decision, event.allowed) {
            ("ask", true) => "ask → allowed".to_owned(),
            ("ask", false) => "ask → denied".to_owned(),
            (d, _) => d.to_owned(),
        };
        let why = if event.allowed { String::new() } else { format!(" ({})", escape(&event.reason)) };
        self.err_line(&format!("    · {} {} → {outcome}{why}", shown(&event.method), shown(&event.target)));
    }
}
