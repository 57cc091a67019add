//! `jp query`: one agent turn in the terminal — the core turn loop ([`run_turn`]) with a model
//! from `[providers.*]`, the workspace's tools ([`tools`]), and what happens shown as it happens
//! ([`output`]). The conversation is kept for `--continue` in the user's state directory
//! (`$XDG_STATE_HOME/jp-host/conversations/<hash of the workspace path>/last.json`, written
//! atomically, the key scrubbed), never in the workspace: a tool could read there what the user
//! allowed once, or plant turns that `--continue` would send as the user's.

pub mod output;
pub mod tools;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use jp_core::BoxFuture;
use jp_core::agent::anthropic::Anthropic;
use jp_core::agent::openai::OpenAi;
use jp_core::agent::scripted::Scripted;
use jp_core::agent::turn::{Sleep, Turn, TurnError, TurnOptions, run_turn};
use jp_core::agent::{Message, Model, ModelReply, ModelTool, ProviderError, Role};
use jp_core::cancel::CancellationToken;
use jp_core::runtime::{ProviderConfig, ProviderKind, RuntimeError};

use crate::app::App;
use crate::http::ReqwestHttpClient;
use output::Printer;
use tools::NativeTools;

/// Where the last conversation of `workspace` is kept, under jp's state directory.
pub fn history_path(state_dir: &Path, workspace: &Path) -> PathBuf {
    use sha2::Digest as _;
    let key: String =
        sha2::Sha256::digest(workspace.as_os_str().as_encoded_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    state_dir.join("conversations").join(key).join("last.json")
}

/// How long one model request may take.
const MODEL_TIMEOUT: Duration = Duration::from_secs(300);

/// What `jp query` was asked.
#[derive(Debug, Clone)]
pub struct QueryArgs {
    /// The user's message.
    pub prompt: String,
    /// `--provider`.
    pub provider: Option<String>,
    /// `--continue`: append to the last conversation.
    pub continue_last: bool,
    /// A terminal to ask on (and not `--no-interaction`).
    pub interactive: bool,
    /// `--json`.
    pub json: bool,
    /// Most model requests in the turn.
    pub max_rounds: usize,
}

/// Why `jp query` could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// `--continue` has no conversation to continue: exit 2.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// The tools cannot be offered to the model (a tool's schema, say): exit 2.
    #[error(transparent)]
    Tools(#[from] RuntimeError),
    /// The turn ended without an answer (already reported): exit 1.
    #[error("the turn ended without an answer")]
    Failed,
    /// The turn answered, but every tool call it made failed or was refused (already
    /// reported): exit 1, so that a script does not take the answer for work done.
    #[error("every tool call of the turn failed or was refused")]
    NothingDone,
}

/// Why the conversation kept for `--continue` cannot be read or kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistoryError {
    /// jp has nowhere to keep it.
    #[error("no conversation to continue: jp keeps it in $XDG_STATE_HOME or $HOME, and neither is set")]
    NoStateDir,
    /// There is none.
    #[error("no conversation to continue ({}: {why}); run jp query without --continue first", .path.display())]
    Missing {
        /// Where it would be.
        path: PathBuf,
        /// The I/O error.
        why: String,
    },
    /// The file is not a conversation.
    #[error("{} is not a saved conversation ({why}); delete it and start again", .path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// It could not be written.
    #[error("{}: {why}", .path.display())]
    Write {
        /// The file or its directory.
        path: PathBuf,
        /// The I/O error.
        why: String,
    },
}

/// Why `jp query` has no model to ask: which provider is meant, or what its table lacks. Each
/// says what to do (a usage error: exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderSetupError {
    /// `--provider NAME` names no `[providers.NAME]` table.
    #[error("no provider '{name}'; configured: {known}; add a [providers.{name}] table to .jp/config.toml")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The providers there are.
        known: String,
    },
    /// No `--provider`, and no table marked default or alone.
    #[error(
        "which model? pass --provider NAME ({known}), or mark one [providers.NAME] with default = true; --provider scripted replays the offline demo"
    )]
    NotChosen {
        /// The providers there are.
        known: String,
    },
    /// The provider's `api_key_env` is not set.
    #[error("[providers.{provider}] reads its API key from ${var}, which is not set; export {var}=… and run again")]
    NoKey {
        /// The provider.
        provider: String,
        /// The variable.
        var: String,
    },
    /// The HTTP client could not be built.
    #[error("no HTTP client: {0}")]
    NoHttpClient(String),
    /// A scripted provider's recording could not be read or parsed.
    #[error("{0}")]
    Recording(String),
}

/// The provider `jp query` uses: `--provider NAME`, else the one with `default = true`, else the
/// only one. `scripted` without a table of that name is the shipped demo.
pub fn provider(app: &App, name: Option<&str>) -> Result<(String, ProviderConfig), ProviderSetupError> {
    let providers = app.providers();
    let demo = || ProviderConfig {
        kind: ProviderKind::Scripted,
        base_url: None,
        model: None,
        api_key_env: None,
        stream: false,
        max_tokens: None,
        default: false,
        file: None,
    };
    let known = || {
        let mut names: Vec<&str> = providers.keys().map(String::as_str).collect();
        names.push("scripted (the offline demo)");
        names.join(", ")
    };
    match name {
        Some(n) => match providers.get(n) {
            Some(p) => Ok((n.to_owned(), p.clone())),
            None if n == "scripted" => Ok((n.to_owned(), demo())),
            None => Err(ProviderSetupError::Unknown { name: n.to_owned(), known: known() }),
        },
        None => {
            if let Some((n, p)) = providers.iter().find(|(_, p)| p.default) {
                return Ok((n.clone(), p.clone()));
            }
            if let (1, Some((n, p))) = (providers.len(), providers.iter().next()) {
                return Ok((n.clone(), p.clone()));
            }
            Err(ProviderSetupError::NotChosen { known: known() })
        }
    }
}

/// The model of a provider, and its key (a secret to scrub), read from the host environment.
pub fn model(
    name: &str,
    config: &ProviderConfig,
    workspace: &Path,
    env: &std::collections::BTreeMap<String, String>,
) -> Result<(Box<dyn Model>, Option<String>), ProviderSetupError> {
    let key = match &config.api_key_env {
        Some(var) => Some(
            env.get(var)
                .filter(|k| !k.is_empty())
                .cloned()
                .ok_or_else(|| ProviderSetupError::NoKey { provider: name.to_owned(), var: var.clone() })?,
        ),
        None => None,
    };
    let http = || -> Result<Arc<ReqwestHttpClient>, ProviderSetupError> {
        ReqwestHttpClient::new(MODEL_TIMEOUT).map(Arc::new).map_err(|e| ProviderSetupError::NoHttpClient(e.to_string()))
    };
    let model_name = config.model.clone().unwrap_or_default();
    let model: Box<dyn Model> = match config.kind {
        ProviderKind::Openai => Box::new(OpenAi {
            base_url: config.base_url.clone().unwrap_or_else(|| "https://api.openai.com/v1".into()),
            model: model_name,
            api_key: key.clone(),
            stream: config.stream,
            http: http()?,
        }),
        ProviderKind::Anthropic => Box::new(Anthropic {
            base_url: config.base_url.clone().unwrap_or_else(|| "https://api.anthropic.com".into()),
            model: model_name,
            api_key: key.clone(),
            max_tokens: config.max_tokens.unwrap_or(4096),
            stream: config.stream,
            http: http()?,
        }),
        ProviderKind::Scripted => match &config.file {
            Some(file) => {
                let path = workspace.join(file);
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    ProviderSetupError::Recording(format!("[providers.{name}] file {}: {e}", path.display()))
                })?;
                Box::new(
                    Scripted::from_json(&text)
                        .map_err(|e| ProviderSetupError::Recording(format!("[providers.{name}] file {file}: {e}")))?,
                )
            }
            None => Box::new(Scripted::demo().map_err(|e| ProviderSetupError::Recording(e.to_string()))?),
        },
    };
    Ok((model, key))
}

/// The model asked, given up when the turn is cancelled (Ctrl-C during a model request).
struct Cancellable<'a> {
    inner: &'a dyn Model,
    cancel: &'a CancellationToken,
}

impl Model for Cancellable<'_> {
    fn complete_streaming<'a>(
        &'a self,
        messages: &'a [Message],
        tools: &'a [ModelTool],
        on_text: jp_core::maybe::OnText<'a>,
    ) -> BoxFuture<'a, Result<ModelReply, ProviderError>> {
        Box::pin(async move {
            tokio::select! {
                r = self.inner.complete_streaming(messages, tools, on_text) => r,
                () = self.cancel.cancelled() => Err(ProviderError::Transport("the turn was cancelled".into())),
            }
        })
    }
}

struct TokioSleep;

impl Sleep for TokioSleep {
    fn sleep(&self, d: Duration) -> BoxFuture<'_, ()> {
        Box::pin(tokio::time::sleep(d))
    }
}

fn system_prompt(workspace: &Path) -> String {
    format!(
        "You are a coding agent working in the project at {}. Use the tools to read, search and change its files; paths are relative to the project root. Every tool runs sandboxed: a request the access policy refuses comes back as an error that says why. Be brief.",
        workspace.display()
    )
}

/// The conversation kept for `--continue`.
pub fn load_history(path: &Path) -> Result<Vec<Message>, HistoryError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| HistoryError::Missing { path: path.to_owned(), why: e.to_string() })?;
    serde_json::from_str(&text).map_err(|e| HistoryError::Corrupt { path: path.to_owned(), why: e.to_string() })
}

/// Keep `messages` for `--continue`: written to a temporary file beside it, then renamed, so a
/// crash leaves the old conversation or the new one, never half of one.
pub fn save_history(path: &Path, messages: &[Message], printer: &Printer) -> Result<(), HistoryError> {
    use std::os::unix::fs::DirBuilderExt as _;
    let failed =
        |at: &Path, why: &dyn std::fmt::Display| HistoryError::Write { path: at.to_owned(), why: why.to_string() };
    let dir = path.parent().ok_or_else(|| failed(path, &"no directory"))?;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|e| failed(dir, &e))?;
    let text = printer.scrub(&serde_json::to_string_pretty(messages).map_err(|e| failed(path, &e))?);
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| failed(dir, &e))?;
    std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(|e| failed(path, &e))?;
    tmp.as_file().sync_all().map_err(|e| failed(path, &e))?;
    tmp.persist(path).map_err(|e| failed(path, &e))?;
    Ok(())
}

/// Run one turn: `app` was loaded with `printer` as its trace (so decisions are shown) and
/// without the key in its environment (so no tool can be given it).
pub async fn query(
    app: Arc<App>,
    args: &QueryArgs,
    model: &dyn Model,
    printer: &Printer,
    secrets: &[String],
    cancel: &CancellationToken,
) -> Result<String, QueryError> {
    let workspace = app.workspace().to_path_buf();
    let history = app.state_dir().map(|state| history_path(state, &workspace));
    let mut messages = if args.continue_last {
        let path = history.as_deref().ok_or(HistoryError::NoStateDir)?;
        load_history(path)?
    } else {
        vec![Message::text(Role::System, system_prompt(&workspace))]
    };
    messages.push(Message::text(Role::User, args.prompt.clone()));
    let asked = messages.len();
    let tools = NativeTools::new(app, args.interactive, secrets).await?;
    let options = TurnOptions { max_rounds: args.max_rounds.max(1), ..TurnOptions::default() };
    let model = Cancellable { inner: model, cancel };
    let on_event = |e: &jp_core::agent::turn::TurnEvent| printer.event(e);
    let turn =
        Turn { model: &model, tools: &tools, options: &options, sleep: &TokioSleep, cancel, on_event: &on_event };
    let result = run_turn(&turn, &mut messages).await;
    match &history {
        Some(path) => {
            if let Err(e) = save_history(path, &messages, printer) {
                printer.note(&format!("warning: the conversation was not saved: {e}"));
            }
        }
        None => printer.note("warning: the conversation was not saved: neither $XDG_STATE_HOME nor $HOME is set"),
    }
    match result {
        Ok(text) => {
            let results: Vec<&Message> =
                messages[asked.min(messages.len())..].iter().filter(|m| m.role == Role::Tool).collect();
            if !results.is_empty() && results.iter().all(|m| m.is_error) {
                printer.error(&format!(
                    "none of the turn's {} tool call(s) did anything: each failed or was refused (see above), whatever the answer says",
                    results.len()
                ));
                return Err(QueryError::NothingDone);
            }
            Ok(text)
        }
        Err(e) => {
            let message = if cancel.is_cancelled() {
                TurnError::Cancelled.to_string() + "; its tool calls were stopped and its handles aborted"
            } else {
                e.to_string()
            };
            printer.error(&message);
            Err(QueryError::Failed)
        }
    }
}
