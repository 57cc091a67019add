//! The tools of an agent turn: the same tools as `jp tool list` and `jp mcp`, called through
//! [`App::agent_call`] (same runtimes, policies and OS sandbox), stateful ones in RFD 009's flat
//! form with their handles owned by the turn — all aborted when it ends.
//!
//! Permission (RFD 009): `run = "ask" | "unattended" | "skip"` per tool; by default the user is
//! asked before a `spawn` and before a one-shot tool whose policy lets it write or run commands,
//! never before `fetch`, `apply` or `abort`. The question shows what a yes grants as
//! [`describe_call`] decides (paths, commands and URLs in full, the rest cut and named), from
//! the arguments as the tool will get them. Without a terminal (or with `--no-interaction`) a
//! call that needs asking is refused, and the model is told how the user can allow it.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use jp_core::BoxFuture;
use jp_core::agent::ModelTool;
use jp_core::agent::ToolCallRequest;
use jp_core::agent::prompt::describe_call;
use jp_core::agent::surface::{self, AgentTool, Gate};
use jp_core::agent::turn::{ToolOutput, TurnTools};
use jp_core::cancel::CancellationToken;
use jp_core::policy::Scrubber;
use jp_core::runtime::{RunMode, RuntimeError, ToolCall};
use serde_json::Value;

use crate::app::{Answerer, App, CallReply, Handles, NoAnswerer};
use crate::terminal::{TerminalAnswerer, ask_line};

/// The tools of one turn.
pub struct NativeTools {
    app: Arc<App>,
    tools: Vec<AgentTool>,
    handles: Arc<Handles>,
    interactive: bool,
    /// Tools the user allowed for the rest of the turn.
    always: Mutex<BTreeSet<String>>,
    /// One question at a time.
    asking: tokio::sync::Mutex<()>,
    /// The API key: replaced in every tool input (an endpoint that echoes it cannot pass it on).
    scrubber: Scrubber,
}

impl std::fmt::Debug for NativeTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeTools").field("tools", &self.tools.len()).finish_non_exhaustive()
    }
}

impl NativeTools {
    /// Every tool of `app` (MCP servers' `tools = "*"` discovered first), as the model is told
    /// about them; `interactive`: whether there is a terminal to ask on.
    pub async fn new(app: Arc<App>, interactive: bool, secrets: &[String]) -> Result<Self, RuntimeError> {
        app.discover().await;
        let mut tools = Vec::new();
        for entry in app.tools() {
            if entry.config.run_mode == Some(RunMode::Skip) {
                continue;
            }
            tools.push(app.agent_tool(&entry.name).await?);
        }
        Ok(Self {
            app,
            tools,
            handles: Arc::new(Handles::default()),
            interactive,
            always: Mutex::default(),
            asking: tokio::sync::Mutex::new(()),
            scrubber: Scrubber::new(secrets.iter().filter(|s| !s.is_empty())),
        })
    }

    /// The handles the turn opened (for tests and for the end of the turn).
    pub fn handles(&self) -> &Arc<Handles> {
        &self.handles
    }

    /// RFD 009's rule for this call ([`AgentTool::gate`]).
    fn gate(&self, name: &str, arguments: &Value) -> Result<Gate, RuntimeError> {
        match self.tools.iter().find(|t| t.name == name) {
            Some(tool) => Ok(tool.gate(arguments)),
            // Not offered to the model (`run = "skip"`), or no such tool.
            None => self.app.tool(name).map(|_| Gate::Skip),
        }
    }

    /// Ask on the terminal whether `name` may run with `arguments` (as the tool will get them);
    /// `true` when allowed.
    async fn ask(&self, name: &str, arguments: &Value) -> bool {
        let _one = self.asking.lock().await;
        if self.always.lock().unwrap_or_else(std::sync::PoisonError::into_inner).contains(name) {
            return true;
        }
        // What a yes grants — paths, commands, URLs — in full; the rest maybe cut, and named.
        let summary = describe_call(name, arguments);
        // The same letters as a policy question; `a` is for this tool only, and says so.
        let prompt = format!(
            "\nrun {}?\n{}[y = once, a = {} for the rest of this turn, n = deny] ",
            summary.name,
            summary.text(),
            summary.name
        );
        let answer = ask_line(prompt).await;
        match answer.as_deref() {
            Some("y" | "yes") => true,
            Some("a" | "always") => {
                self.always.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(name.to_owned());
                true
            }
            _ => false,
        }
    }
}

fn failed(content: String) -> ToolOutput {
    ToolOutput { content, is_error: true }
}

/// A call's reply as the model sees it: the agent surface's result as text. An image, audio or
/// blob block reaches the model as its one-line summary (`[image/png, 1.2 KiB]`), a link as
/// `[link URI]`: passing images and audio to providers that take them is not done yet.
fn output(name: &str, reply: CallReply) -> ToolOutput {
    let result = surface::call_result(name, reply);
    ToolOutput { content: result.to_text(), is_error: result.is_error }
}

impl TurnTools for NativeTools {
    fn specs(&self) -> Vec<ModelTool> {
        self.tools.iter().map(AgentTool::spec).collect()
    }

    fn call<'a>(&'a self, call: &'a ToolCallRequest, cancel: &'a CancellationToken) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let name = call.name.as_str();
            let gate = match self.gate(name, &call.arguments) {
                Ok(g) => g,
                Err(e) => return failed(e.to_string()),
            };
            if gate == Gate::Skip {
                return failed(format!("tool '{name}' is not available in this conversation (run = \"skip\")"));
            }
            // The arguments as the tool gets them (and the user is shown): the key replaced.
            let text = call.arguments.to_string();
            let arguments = match serde_json::from_str(&self.scrubber.scrub_str(&text)) {
                Ok(Value::Object(m)) => m,
                _ => return failed(format!("tool '{name}': the arguments must be a JSON object, got {text}")),
            };
            if gate == Gate::Ask {
                if !self.interactive {
                    return failed(format!(
                        "the user must allow '{name}' before it runs (it can change files, run commands or start a process), and jp query has no terminal to ask on; the user can allow it with run = \"unattended\" in [conversation.tools.{name}] of .jp/config.toml"
                    ));
                }
                if !self.ask(name, &Value::Object(arguments.clone())).await {
                    return failed(format!("the user declined to run '{name}'; ask them, or do without it"));
                }
            }
            let mut tool_call = ToolCall::new(name, call.id.clone(), arguments);
            tool_call.cancel = cancel.clone();
            let answerer: &dyn Answerer = if self.interactive { &TerminalAnswerer } else { &NoAnswerer };
            match self.app.agent_call(tool_call, &self.handles, answerer).await {
                Ok(reply) => output(name, reply),
                Err(e) => failed(e.to_string()),
            }
        })
    }

    fn end_turn(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.handles.close().await })
    }
}
