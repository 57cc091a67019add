//! The example stateful component of RFD 009 (`wit/tool/stateful.wit`): `calc`, a small integer
//! calculator whose bindings live in a session across commands. `spawn` starts it (`prelude`
//! lines run first; with `program` the lines run and the session ends, which is how a call
//! without `action` runs it to its end), `apply` sends lines (a JSON string), `clear` asks
//! before forgetting the bindings (state `waiting`, question `clear`, answered `true`/`false`),
//! `quit` stops it. The seed's one-shot `run` evaluates `program` the same way.
//!
//! The interpreter is [`interp`]; this file is the session around it and the bindings.

pub mod interp;

use std::collections::VecDeque;

use interp::{Calc, Step, plural};

/// The greeting of an interactive session.
const GREETING: &str = "calc: integer expressions with + - * / % ( ); NAME = EXPR binds a name; vars, clear, quit";

/// What a session shows: the WIT `tool-state`, free of the bindings.
#[derive(Debug, PartialEq, Eq)]
pub enum Shown {
    Running(Option<String>),
    /// Output so far, and how many bindings `clear` would forget.
    Waiting(Option<String>, usize),
    Stopped(Result<String, String>),
}

/// One session: the bindings, lines still to run, output not yet shown, a pending `clear`.
#[derive(Debug, Default)]
pub struct Machine {
    calc: Calc,
    queue: VecDeque<String>,
    out: String,
    pending: Option<usize>,
    /// Ends (with all its output) when its lines have run: a `program`.
    one_shot: bool,
    ended: Option<Result<String, String>>,
}

impl Machine {
    /// A session from spawn arguments `{"prelude"?: lines, "program"?: lines}`.
    pub fn spawn(arguments: &str) -> Result<Self, String> {
        let args: serde_json::Value = match arguments.trim() {
            "" => serde_json::json!({}),
            text => serde_json::from_str(text).map_err(|e| format!("invalid arguments: {e}"))?,
        };
        let lines = |key: &str| match &args[key] {
            serde_json::Value::Null => Ok(None),
            serde_json::Value::String(s) => Ok(Some(s.clone())),
            _ => Err(format!("`{key}` must be a string of lines")),
        };
        let (prelude, program) = (lines("prelude")?, lines("program")?);
        let mut m = Self { one_shot: program.is_some(), ..Self::default() };
        if !m.one_shot {
            m.say(GREETING);
        }
        for text in [prelude, program].into_iter().flatten() {
            m.queue.extend(text.lines().map(str::to_owned));
        }
        m.pump();
        Ok(m)
    }

    fn say(&mut self, text: &str) {
        if !self.out.is_empty() {
            self.out.push('\n');
        }
        self.out.push_str(text);
    }

    /// Run queued lines until they run out, a question is asked or the session ends.
    fn pump(&mut self) {
        while self.pending.is_none() && self.ended.is_none() {
            let Some(line) = self.queue.pop_front() else {
                if self.one_shot {
                    self.ended = Some(Ok(std::mem::take(&mut self.out)));
                }
                return;
            };
            match self.calc.line(&line) {
                Ok(Step::Out(text)) if text.is_empty() => {}
                Ok(Step::Out(text)) => self.say(&text),
                Ok(Step::AskClear(n)) => self.pending = Some(n),
                Ok(Step::Quit(bye)) => {
                    self.queue.clear();
                    self.say(&bye);
                    self.ended = Some(Ok(std::mem::take(&mut self.out)));
                }
                Err(e) => self.say(&format!("error: {e}")),
            }
        }
    }

    /// The state now; output shown once.
    pub fn state(&mut self) -> Shown {
        if let Some(r) = &self.ended {
            return Shown::Stopped(r.clone());
        }
        let out = Some(std::mem::take(&mut self.out)).filter(|o| !o.is_empty());
        match self.pending {
            Some(n) => Shown::Waiting(out, n),
            None => Shown::Running(out),
        }
    }

    /// `apply` with data: a JSON string of lines.
    pub fn data(&mut self, json: &str) -> Shown {
        if self.pending.is_some() {
            self.say("error: waiting for the answer to 'clear' (true or false): apply that first");
        } else if self.ended.is_none() {
            match serde_json::from_str::<serde_json::Value>(json) {
                Ok(serde_json::Value::String(text)) => {
                    self.queue.extend(text.lines().map(str::to_owned));
                    self.pump();
                }
                _ => self.say("error: input must be a JSON string of one or more lines, e.g. \"x = 1\""),
            }
        }
        self.state()
    }

    /// `apply` with the answer to question `id` (JSON).
    pub fn answer(&mut self, id: &str, value: &str) -> Shown {
        match (self.pending, id, serde_json::from_str::<serde_json::Value>(value)) {
            (None, _, _) => self.say("error: no question is pending; send lines as data instead"),
            (Some(_), id, _) if id != "clear" => {
                self.say(&format!("error: no question '{id}'; the pending one is 'clear'"))
            }
            (Some(_), _, Ok(serde_json::Value::Bool(yes))) => {
                self.pending = None;
                let text = if yes {
                    format!("forgot {}", plural(self.calc.clear()))
                } else {
                    format!("kept {}", plural(self.calc.vars.len()))
                };
                self.say(&text);
                self.pump();
            }
            (Some(_), _, _) => self.say("error: answer 'clear' with true or false"),
        }
        self.state()
    }

    /// The session as JSON: bindings, lines still queued, a pending question.
    pub fn save(&self) -> String {
        serde_json::json!({"vars": self.calc.vars, "queue": self.queue, "pending": self.pending, "one_shot": self.one_shot})
            .to_string()
    }

    /// A session from what [`save`](Self::save) returned.
    pub fn restore(saved: &str) -> Result<Self, String> {
        let v: serde_json::Value = serde_json::from_str(saved).map_err(|e| format!("not a saved calc session: {e}"))?;
        let vars = v["vars"].as_object().ok_or("not a saved calc session: no `vars`")?;
        let mut m = Self { one_shot: v["one_shot"].as_bool().unwrap_or(false), ..Self::default() };
        for (k, n) in vars {
            m.calc.vars.insert(k.clone(), n.as_i64().ok_or_else(|| format!("binding '{k}' is not an integer"))?);
        }
        m.queue = v["queue"].as_array().into_iter().flatten().filter_map(|l| l.as_str().map(str::to_owned)).collect();
        m.pending = v["pending"].as_u64().map(|n| n as usize);
        Ok(m)
    }
}

/// The D06 self-description (`describe.schema`).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
const SCHEMA: &str = r#"{"tools":[{"name":"calc",
  "summary":"An integer calculator that keeps its bindings across commands.",
  "description":"i64 expressions with + - * / %, parentheses, unary minus and names; `NAME = EXPR` binds a name, `EXPR` prints `= VALUE`, `vars` lists the bindings, `clear` asks before forgetting them, `quit` ends the session. Spawn it and apply lines (a JSON string), or give `program` to run lines to the end.",
  "parameters":{
    "program":{"type":"string","required":false,"summary":"Lines to run; the session ends after them with their output."},
    "prelude":{"type":"string","required":false,"summary":"Lines to run first when the session starts."}}}]}"#;

#[cfg(target_arch = "wasm32")]
mod component {
    use std::cell::RefCell;

    use super::*;

    wit_bindgen::generate!({ world: "stateful-tool", path: "../../../wit/tool" });

    use exports::jp::tool::stateful::{self, Answer, Input, Session, ToolState, WaitingState};
    use jp::tool::types::{ErrorInfo, Question};

    fn error(message: String) -> ErrorInfo {
        ErrorInfo { message, trace: Vec::new(), transient: false }
    }

    fn question(n: usize) -> Question {
        Question {
            id: "clear".into(),
            text: format!("Forget all {}?", plural(n)),
            answer_type: "boolean".into(),
            default: Some("false".into()),
        }
    }

    fn wit(shown: Shown) -> ToolState {
        match shown {
            Shown::Running(out) => ToolState::Running(out),
            Shown::Waiting(content, n) => ToolState::Waiting(WaitingState { content, question: question(n) }),
            Shown::Stopped(r) => ToolState::Stopped(r.map_err(error)),
        }
    }

    struct Calculator;

    struct Live(RefCell<Machine>);

    impl stateful::GuestSession for Live {
        fn fetch(&self) -> ToolState {
            wit(self.0.borrow_mut().state())
        }
        fn apply(&self, input: Input) -> ToolState {
            let mut m = self.0.borrow_mut();
            wit(match input {
                Input::Data(json) => m.data(&json),
                Input::Answer(Answer { question_id, value }) => m.answer(&question_id, &value),
            })
        }
        fn save(&self) -> Option<String> {
            Some(self.0.borrow().save())
        }
    }

    fn only_calc(name: &str) -> Result<(), ErrorInfo> {
        if name == "calc" {
            Ok(())
        } else {
            Err(error(format!("this component has no tool '{name}'; it serves: calc")))
        }
    }

    impl stateful::Guest for Calculator {
        type Session = Live;
        fn actions(name: String) -> Vec<String> {
            if name != "calc" {
                return Vec::new();
            }
            ["spawn", "fetch", "apply", "abort"].map(String::from).to_vec()
        }
        fn spawn(_ctx: Context, name: String, arguments: String) -> Result<Session, ErrorInfo> {
            only_calc(&name)?;
            Machine::spawn(&arguments).map(|m| Session::new(Live(RefCell::new(m)))).map_err(error)
        }
        fn restore(_ctx: Context, name: String, saved: String) -> Result<Session, ErrorInfo> {
            only_calc(&name)?;
            Machine::restore(&saved).map(|m| Session::new(Live(RefCell::new(m)))).map_err(error)
        }
    }

    impl Guest for Calculator {
        /// One-shot: `program` run to its end; a `clear` is answered from `answers`, else asked.
        fn run(_ctx: Context, name: String, arguments: String, answers: String) -> Outcome {
            if let Err(e) = only_calc(&name) {
                return Outcome::Error(e);
            }
            let answers: serde_json::Value = serde_json::from_str(&answers).unwrap_or_default();
            let mut m = match Machine::spawn(&arguments) {
                Ok(m) if m.one_shot => m,
                Ok(_) => return Outcome::Error(error("one-shot `calc` needs `program`: the lines to run".into())),
                Err(e) => return Outcome::Error(error(e)),
            };
            let mut shown_before = String::new();
            loop {
                match m.state() {
                    Shown::Stopped(Ok(out)) => return Outcome::Success(format!("{shown_before}{out}")),
                    Shown::Stopped(Err(e)) => return Outcome::Error(error(e)),
                    Shown::Running(_) => return Outcome::Error(error("the program did not end".into())),
                    Shown::Waiting(out, n) => match &answers["clear"] {
                        serde_json::Value::Bool(_) => {
                            shown_before.push_str(&out.map(|o| o + "\n").unwrap_or_default());
                            m.answer("clear", &answers["clear"].to_string());
                        }
                        _ => return Outcome::NeedsInput(question(n)),
                    },
                }
            }
        }
    }

    impl exports::jp::tool::describe::Guest for Calculator {
        fn schema() -> String {
            SCHEMA.to_owned()
        }
    }

    export!(Calculator);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_keeps_bindings_and_asks_before_clearing() {
        let mut m = Machine::spawn(r#"{"prelude": "a = 1"}"#).unwrap();
        assert_eq!(m.state(), Shown::Running(Some(format!("{GREETING}\na = 1"))));
        assert_eq!(m.data(r#""x = 2 * 3\nx + 1""#), Shown::Running(Some("x = 6\n= 7".into())));
        assert_eq!(m.data(r#""1 / 0""#), Shown::Running(Some("error: division by zero in 1 / 0".into())));
        assert_eq!(
            m.answer("clear", "true"),
            Shown::Running(Some("error: no question is pending; send lines as data instead".into()))
        );
        assert_eq!(m.data(r#""clear\nvars""#), Shown::Waiting(None, 2));
        assert!(matches!(m.data(r#""1""#), Shown::Waiting(Some(e), 2) if e.contains("waiting for the answer")));
        let saved = m.save();
        assert_eq!(m.answer("clear", "true"), Shown::Running(Some("forgot 2 bindings\n(no bindings)".into())));
        let mut back = Machine::restore(&saved).unwrap();
        assert_eq!(back.answer("clear", "false"), Shown::Running(Some("kept 2 bindings\na = 1\nx = 6".into())));
        assert_eq!(back.data(r#""quit""#), Shown::Stopped(Ok("bye: 2 bindings".into())));
    }

    #[test]
    fn a_program_runs_to_its_end() {
        let mut m = Machine::spawn(r#"{"program": "x = 5\nx * x"}"#).unwrap();
        assert_eq!(m.state(), Shown::Stopped(Ok("x = 5\n= 25".into())));
        assert!(Machine::spawn(r#"{"prelude": 3}"#).unwrap_err().contains("`prelude` must be a string"));
    }
}
