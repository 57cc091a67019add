//! `jp tool list` and `jp tool call`: the tools of a workspace, and one call of a tool with its
//! result printed (exit code 1 when the tool failed).

use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::sync::Arc;

use jp_core::cancel::CancellationToken;
use jp_core::runtime::{ExecutionOutcome, ToolCall};
use jp_native::app::{Answerer, App, CallReply, Handles, NoAnswerer};
use jp_native::terminal;
use serde_json::{Map, Value, json};

use crate::{CallArgs, Failure};

pub(crate) async fn list(app: &App, json: bool) -> Result<ExitCode, Failure> {
    let mut rows = Vec::new();
    for entry in app.tools() {
        let summary = match app.definition(&entry.name).await {
            Ok(d) => d.summary.unwrap_or_default(),
            Err(e) => format!("(cannot describe itself: {e})"),
        };
        let policy = app.policy_summary(&entry);
        rows.push(json!({
            "name": entry.name,
            "runtime": app.runtime_label(&entry),
            "source": entry.source_label(),
            "summary": summary,
            "policy": policy,
            "defined_in": entry.origin,
        }));
    }
    if json {
        println!("{}", Value::Array(rows));
        return Ok(ExitCode::SUCCESS);
    }
    let width = rows.iter().map(|r| r["name"].as_str().map_or(0, str::len)).max().unwrap_or(4).max(4);
    println!("{:width$}  {:7}  {:8}  SUMMARY", "NAME", "RUNTIME", "SOURCE");
    for r in &rows {
        // Names and summaries can come from a tool's own schema.
        let s = |k: &str| terminal::neutralize(r[k].as_str().unwrap_or_default());
        println!("{:width$}  {:7}  {:8}  {}", s("name"), s("runtime"), s("source"), s("summary"));
        println!("{:width$}  policy: {}", "", s("policy"));
    }
    Ok(ExitCode::SUCCESS)
}

/// `jp tool show NAME`: the tool's origin and runtime, and its effective policy rule by rule.
pub(crate) async fn show(app: &App, name: &str, json: bool) -> Result<ExitCode, Failure> {
    let Some(entry) = app.tools().into_iter().find(|e| e.name == name) else {
        let names: Vec<String> = app.tools().into_iter().map(|e| e.name).collect();
        return Err(Failure {
            code: 2,
            message: format!("no tool '{name}'{}; `jp tool list` shows them all", did_you_mean(name, &names)),
        });
    };
    let runtime = app.runtime_label(&entry);
    // A process the OS sandbox holds cannot be asked mid-call.
    let direct = matches!(runtime.as_str(), "stdio" | "mcp") || entry.name == "run";
    let summary = match app.definition(&entry.name).await {
        Ok(d) => d.summary.unwrap_or_default(),
        Err(e) => format!("(cannot describe itself: {e})"),
    };
    let policy = entry.policy().details(direct);
    if json {
        let out = json!({
            "name": entry.name, "runtime": runtime, "source": entry.source_label(), "summary": summary,
            "defined_in": entry.origin, "policy": app.policy_summary(&entry), "rules": policy,
        });
        println!("{out}");
        return Ok(ExitCode::SUCCESS);
    }
    let s = |t: &str| terminal::neutralize(t);
    println!("{}  (runtime {runtime}, source {})", s(&entry.name), s(&entry.source_label()));
    if !summary.is_empty() {
        println!("  {}", s(&summary));
    }
    println!("  defined in {}", s(&entry.origin));
    println!("may touch{}:", if direct { " (held by the OS sandbox)" } else { " (each request decided by jp)" });
    for line in policy {
        println!("  {}", s(&line));
    }
    Ok(ExitCode::SUCCESS)
}

/// `; did you mean 'x'?` for the closest of `names` to `given`, when one is close.
pub(crate) fn did_you_mean(given: &str, names: &[String]) -> String {
    jp_core::schema::closest(given, names.iter().map(String::as_str))
        .map(|n| format!("; did you mean '{n}'?"))
        .unwrap_or_default()
}

pub(crate) fn parse_json_object(text: &str, what: &str) -> Result<Map<String, Value>, Failure> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(Failure { code: 2, message: format!("{what} must be a JSON object, got {other}") }),
        Err(e) => Err(Failure {
            code: 2,
            message: format!("{what} is not valid JSON ({e}); write e.g. --args '{{\"path\":\"src/main.rs\"}}'"),
        }),
    }
}

pub(crate) async fn call(app: &Arc<App>, args: &CallArgs, interactive: bool, json: bool) -> Result<ExitCode, Failure> {
    let mut arguments = match &args.args {
        Some(text) => parse_json_object(text, "--args")?,
        None => Map::new(),
    };
    arguments.extend(app.parse_pairs(&args.name, &args.pairs).await?);
    let mut answers = Map::new();
    for a in &args.answers {
        let (id, value) = a.split_once('=').ok_or_else(|| Failure {
            code: 2,
            message: format!("--answer {a:?} is not ID=VALUE; write e.g. --answer confirm=true"),
        })?;
        answers.insert(id.into(), serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.into())));
    }
    let cancel = CancellationToken::new();
    let on_ctrl_c = cancel.clone();
    // SIGINT, SIGTERM, SIGHUP, SIGQUIT: the call is cancelled (its process group killed).
    let mut signals = jp_native::signals::EndingSignals::new();
    let ctrl_c = tokio::spawn(async move {
        signals.recv().await;
        on_ctrl_c.cancel();
    });
    let mut call = ToolCall::new(args.name.clone(), "call", arguments);
    call.answers = answers;
    call.cancel = cancel.clone();
    let answerer: Box<dyn Answerer> =
        if interactive { Box::new(terminal::TerminalAnswerer) } else { Box::new(NoAnswerer) };
    // A stateful command (`action`) gets a handle that lives as long as this process: the reply
    // shows its state, and the handle is aborted before jp exits.
    let handles = Handles::default();
    let result = app.agent_call(call, &handles, answerer.as_ref()).await;
    handles.close().await;
    let result = match result {
        Ok(CallReply::Outcome(outcome)) => Ok(outcome),
        Ok(CallReply::Handle { id, state }) => {
            ctrl_c.abort();
            println!("{}", state.to_handle_response(&id));
            let failed = matches!(state, jp_core::state::ToolState::Stopped { result: Err(_) });
            return Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS });
        }
        Err(e) => Err(e),
    };
    ctrl_c.abort();
    match result? {
        ExecutionOutcome::Completed { result: Ok(r), .. } => {
            if json {
                println!("{}", json!({"ok": true, "result": r, "text": r.to_text()}));
            } else {
                // Text as text; an image, audio, resource or link as one line (`--json` has them).
                let mut text = r.to_shown();
                if std::io::stdout().is_terminal() {
                    text = terminal::neutralize(&text);
                }
                print!("{text}");
                if !text.ends_with('\n') {
                    println!();
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        ExecutionOutcome::Completed { result: Err(e), .. } => {
            if json {
                println!("{}", json!({"ok": false, "error": e.message, "transient": e.transient}));
            } else {
                let shown = if std::io::stderr().is_terminal() { terminal::neutralize(&e.message) } else { e.message };
                eprintln!("error: tool '{}' failed: {shown}", args.name);
            }
            Ok(ExitCode::from(1))
        }
        ExecutionOutcome::NeedsInput { question, .. } => Err(Failure {
            code: 1,
            message: format!(
                "tool '{}' asks: {} — answer with --answer {}=VALUE (no terminal to ask on)",
                args.name, question.text, question.id
            ),
        }),
        ExecutionOutcome::Cancelled { .. } => {
            Err(Failure { code: 1, message: format!("tool '{}' was cancelled", args.name) })
        }
    }
}
