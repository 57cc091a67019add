//! `jp`: run sandboxed tools from the command line.
//!
//! Exit codes: 0 when the tool succeeded, 1 when it failed (its own error, a denial it could not
//! recover from, a crash, a timeout), 2 for usage and configuration errors.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use jp_core::cancel::CancellationToken;
use jp_core::host::{DenyInquirer, Inquirer};
use jp_core::runtime::{ExecutionOutcome, RuntimeError, ToolCall};
use jp_native::app::{Answerer, App, AppError, AppOptions, CallReply, Handles, NoAnswerer, TOOL_MODE_ARG};
use jp_native::mcp::http::{self, HttpOptions, generate_token};
use jp_native::mcp::{McpOptions, serve_stdio, shutdown_signal};
use jp_native::sandbox::{OPT_OUT_FLAG, SandboxMode, probe};
use jp_native::terminal::{self, StderrTrace, TerminalInquirer};
use serde_json::{Map, Value, json};

#[derive(Debug, Parser)]
#[command(
    name = "jp",
    version,
    about = "Run tools for LLM agents in a sandbox: every file, network and process request is checked against one access policy."
)]
struct Cli {
    /// The project directory tools work in (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Configuration file (default: .jp/config.toml in the workspace, when it exists).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Run tools without the OS sandbox (Landlock + seccomp). The access policy still applies to
    /// every protocol request, but nothing stops a tool from bypassing the protocol.
    #[arg(long = "no-os-sandbox", global = true)]
    no_os_sandbox: bool,
    /// Machine-readable JSON output.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List, describe and call tools.
    #[command(subcommand)]
    Tool(ToolSubcommand),
    /// The OS sandbox.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Serve the tools to an agent over MCP (stdio; `--http ADDR` for Streamable HTTP).
    Mcp(McpArgs),
    /// One agent turn: a model from [providers.*] answers, calling the workspace's tools
    /// (sandboxed, asked first when they can write). `--provider scripted` replays a demo offline.
    Query(QueryCli),
    /// Approve the workspace's .jp/config.toml: shows what it grants and what changed since the
    /// last approval, then asks. jp uses a workspace's configuration only once approved.
    Trust(TrustArgs),
    /// Serve a first-party tool over the VFS protocol (how jp runs its own tools).
    #[command(name = TOOL_MODE_ARG, hide = true)]
    ToolMode,
}

#[derive(Debug, Subcommand)]
enum ToolSubcommand {
    /// Every tool: name, runtime, source, summary and policy.
    List,
    /// The JSON schema of a tool's arguments.
    Schema {
        /// Tool name.
        name: String,
        /// For a stateful tool, print RFD 009's `oneOf` form instead of the flat one.
        #[arg(long)]
        one_of: bool,
    },
    /// Run one call of a tool and print its result.
    Call(CallArgs),
}

#[derive(Debug, Args)]
struct CallArgs {
    /// Tool name.
    name: String,
    /// Arguments as `key=value` (a string parameter takes the text as is; others parse as JSON).
    #[arg(value_name = "KEY=VALUE")]
    pairs: Vec<String>,
    /// Arguments as one JSON object (combined with KEY=VALUE pairs, which win).
    #[arg(long, value_name = "JSON")]
    args: Option<String>,
    /// Answer a question the tool asks, by its id (repeatable).
    #[arg(long = "answer", value_name = "ID=VALUE")]
    answers: Vec<String>,
    /// Never ask on the terminal: requests that need a decision are denied.
    #[arg(long)]
    no_interaction: bool,
    /// Print every host request of the tool with its policy decision to stderr.
    #[arg(long)]
    trace: bool,
    /// Time limit of the call, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    timeout: u64,
}

#[derive(Debug, Args)]
struct QueryCli {
    /// The message to the agent.
    prompt: String,
    /// The provider: a [providers.NAME] table (default: the one with `default = true`, or the
    /// only one); `scripted` without a table replays the shipped demo offline.
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// Continue the last conversation in this workspace (kept in jp's state directory,
    /// $XDG_STATE_HOME/jp-host or ~/.local/state/jp-host).
    #[arg(long = "continue")]
    continue_last: bool,
    /// Never ask on the terminal: tool calls that need a yes, and requests that need a decision,
    /// are refused.
    #[arg(long)]
    no_interaction: bool,
    /// Most model requests in the turn.
    #[arg(long, value_name = "N", default_value_t = 20)]
    max_rounds: usize,
    /// Time limit of each tool call, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    timeout: u64,
}

#[derive(Debug, Args)]
struct TrustArgs {
    /// Approve without asking (for scripts; review the file first).
    #[arg(long, conflicts_with = "revoke")]
    yes: bool,
    /// Withdraw the approval: jp stops using the workspace's configuration.
    #[arg(long)]
    revoke: bool,
}

#[derive(Debug, Args)]
struct McpArgs {
    /// Serve MCP Streamable HTTP at this address (e.g. 127.0.0.1:8931) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
    /// The environment variable holding the bearer token for --http (otherwise one is generated
    /// and printed once to stderr).
    #[arg(long, value_name = "VAR")]
    token_env: Option<String>,
    /// Time limit of each tool call, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    timeout: u64,
    /// How long a stateful tool's fetch or apply waits for its state to change, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    fetch_wait_ms: u64,
    /// Tool calls running at once (default: twice the number of cores).
    #[arg(long, value_name = "N")]
    max_concurrent: Option<usize>,
    /// Print every host request of the tools with its policy decision to stderr.
    #[arg(long)]
    trace: bool,
}

#[derive(Debug, Subcommand)]
enum SandboxCommand {
    /// What this kernel enforces.
    Status,
}

fn main() -> ExitCode {
    // Tool mode first, before anything else touches stdin/stdout.
    if std::env::args_os().nth(1).is_some_and(|a| a == TOOL_MODE_ARG) {
        return jp_tool::serve(jp_fs_tools::TOOLS);
    }
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let code = runtime.block_on(run(cli));
    // A read of a blocking stdin (a socket or a terminal: tokio reads those on a blocking
    // thread) never returns while the client keeps it open, and dropping the runtime would wait
    // for it: after a signal, `jp mcp` must end now. Everything of ours has ended by here (the
    // session's handles aborted, its processes killed); what is left is dropped, not awaited.
    runtime.shutdown_timeout(Duration::from_millis(100));
    code
}

/// A failure and its exit code.
struct Failure {
    code: u8,
    message: String,
}

impl From<AppError> for Failure {
    fn from(e: AppError) -> Self {
        Self { code: 2, message: e.to_string() }
    }
}

impl From<RuntimeError> for Failure {
    fn from(e: RuntimeError) -> Self {
        let code = match e {
            RuntimeError::Config(_) | RuntimeError::Input(_) | RuntimeError::UnsupportedRuntime { .. } => 2,
            _ => 1,
        };
        Self { code, message: e.to_string() }
    }
}

async fn run(cli: Cli) -> ExitCode {
    let json = cli.json;
    match dispatch(cli).await {
        Ok(code) => code,
        Err(f) => {
            if json {
                println!("{}", json!({"ok": false, "error": f.message}));
            } else {
                // Runtime errors carry text of the tool (its stderr tail, its schema).
                eprintln!("error: {}", terminal::neutralize(&f.message));
            }
            ExitCode::from(f.code)
        }
    }
}

fn options(cli: &Cli) -> AppOptions {
    let mut o = AppOptions::new(cli.workspace.clone().unwrap_or_else(|| PathBuf::from(".")));
    o.config_file = cli.config.clone();
    if cli.no_os_sandbox {
        o.sandbox = SandboxMode::Disabled;
    }
    o
}

async fn dispatch(cli: Cli) -> Result<ExitCode, Failure> {
    match &cli.command {
        Command::ToolMode => Ok(jp_tool::serve(jp_fs_tools::TOOLS)),
        Command::Sandbox(SandboxCommand::Status) => Ok(sandbox_status(cli.json)),
        Command::Tool(ToolSubcommand::List) => {
            let app = App::load(options(&cli))?;
            app.discover().await;
            list(&app, cli.json).await
        }
        Command::Mcp(args) => mcp(&cli, args).await,
        Command::Trust(args) => trust(&cli, args).await,
        Command::Query(args) => query(&cli, args).await,
        Command::Tool(ToolSubcommand::Schema { name, one_of }) => {
            let app = App::load(options(&cli))?;
            app.discover().await;
            let def = app.definition(name).await?;
            let schema = json!({
                "name": def.name,
                "summary": def.summary,
                "description": def.description,
                "parameters": app.agent_schema(name, *one_of).await?,
            });
            println!("{}", serde_json::to_string_pretty(&schema).unwrap_or_default());
            Ok(ExitCode::SUCCESS)
        }
        Command::Tool(ToolSubcommand::Call(args)) => {
            let interactive = !args.no_interaction && TerminalInquirer::available();
            let mut o = options(&cli);
            o.inquirer = if interactive {
                Arc::new(TerminalInquirer::default()) as Arc<dyn Inquirer>
            } else {
                Arc::new(DenyInquirer)
            };
            if args.trace {
                o.trace = Some(Arc::new(StderrTrace::default()));
            }
            o.timeout = Duration::from_secs(args.timeout.max(1));
            let app = Arc::new(App::load(o)?);
            app.discover().await;
            call(&app, args, interactive, cli.json).await
        }
    }
}

fn sandbox_status(json: bool) -> ExitCode {
    let p = probe();
    if json {
        println!(
            "{}",
            json!({
                "landlock_abi": p.landlock_abi,
                "landlock_note": p.landlock_note,
                "filesystem": p.filesystem(),
                "network": p.network(),
                "scoping": p.scoping(),
                "seccomp": p.seccomp,
                "egress": p.egress(),
                "egress_note": p.user_namespaces_note,
                "can_enforce": p.can_enforce(),
                "missing": p.missing(),
            })
        );
    } else {
        let yes = |b: bool| if b { "enforced" } else { "NOT available" };
        match p.landlock_abi {
            Some(v) => println!("Landlock ABI:            {v}"),
            None => println!("Landlock:                not available ({})", p.landlock_note.as_deref().unwrap_or("?")),
        }
        println!("filesystem restriction:  {}", yes(p.filesystem()));
        println!("TCP bind/connect:        {}", yes(p.network()));
        println!("signal/socket scoping:   {}", yes(p.scoping()));
        println!("seccomp filters:         {}", yes(p.seccomp));
        match &p.user_namespaces_note {
            None => println!(
                "per-host egress:         enforced (a direct-access process whose policy allows URLs gets a network namespace of its own; its only way out is jp's proxy)"
            ),
            Some(why) => println!(
                "per-host egress:         NOT available ({why}); a stdio tool, MCP server or process.run child whose policy allows URLs will NOT run"
            ),
        }
        match p.missing() {
            None => println!("tools run under the OS sandbox"),
            Some(why) => println!("tools will NOT run: {why} (pass {OPT_OUT_FLAG} to run them without the OS sandbox)"),
        }
    }
    if p.can_enforce() { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

async fn trust(cli: &Cli, args: &TrustArgs) -> Result<ExitCode, Failure> {
    use jp_native::trust::{self, TrustStore, Verdict};
    let usage = |message: String| Failure { code: 2, message };
    let given = cli.workspace.clone().unwrap_or_else(|| PathBuf::from("."));
    let workspace = std::fs::canonicalize(&given).map_err(|e| {
        usage(format!("workspace {}: {e}; pass an existing directory with --workspace", given.display()))
    })?;
    let env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
    let state = trust::state_dir(&env)
        .ok_or_else(|| usage("jp keeps approvals in $XDG_STATE_HOME or $HOME, and neither is set".into()))?;
    let store = TrustStore::new(&state);
    let shown_ws = terminal::escape(&workspace.display().to_string());
    if args.revoke {
        let had = store.revoke(&workspace).map_err(usage)?;
        if cli.json {
            println!("{}", json!({"ok": true, "workspace": workspace, "revoked": had}));
        } else if had {
            println!("revoked: jp no longer uses the configuration of {shown_ws}");
        } else {
            println!("nothing to revoke: no configuration of {shown_ws} was approved");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let config = trust::read_workspace_config(&workspace)
        .map_err(usage)?
        .ok_or_else(|| usage(format!("{shown_ws} has no {}: nothing to approve", jp_native::trust::CONFIG_PATH)))?;
    let verdict = store.verdict(&workspace, &config).map_err(usage)?;
    let path = terminal::escape(&config.path.display().to_string());
    if matches!(verdict, Verdict::Approved) {
        if cli.json {
            println!(
                "{}",
                json!({"ok": true, "workspace": workspace, "sha256": config.sha256, "approved": true, "changed": false})
            );
        } else {
            println!("{path} is approved as it is (sha256 {})", config.sha256);
        }
        return Ok(ExitCode::SUCCESS);
    }
    // What it grants is decided on the configuration jp would enforce: over the user's own.
    let user_file = trust::user_config_file(&env).filter(|f| f.is_file());
    let user_text = user_file
        .as_ref()
        .map(|f| std::fs::read_to_string(f).map_err(|e| usage(format!("{}: {e}", f.display()))))
        .transpose()?;
    let user_name = user_file.as_ref().map(|f| f.display().to_string()).unwrap_or_default();
    let user = user_text.as_deref().map(|t| (t, user_name.as_str()));
    let summary = trust::summary(&config, user).map_err(|e| {
        usage(format!(
            "{path} cannot be used as it is ({}), so there is nothing to approve; fix it first",
            terminal::escape(&e)
        ))
    })?;
    if cli.json && !args.yes {
        return Err(usage(format!(
            "not approved: --json shows no summary to review; run `jp trust --workspace {shown_ws}` on a terminal, or pass --yes"
        )));
    }
    if !cli.json {
        println!("{path} (sha256 {}) grants, beyond jp's defaults:\n{summary}", config.sha256);
        match &verdict {
            Verdict::Changed(previous) => {
                println!("changes since your approval:\n{}", trust::diff(&previous.text, &config.text));
            }
            _ => println!("it was never approved for this workspace.\n"),
        }
    }
    let approve = if args.yes {
        true
    } else if TerminalInquirer::available() {
        let answer = terminal::ask_line(format!("approve this configuration for {shown_ws}? [y/N] ")).await;
        matches!(answer.as_deref(), Some("y" | "yes" | "Y"))
    } else {
        return Err(usage(format!(
            "not approved: no terminal to ask on; review {path}, then run `jp trust --yes --workspace {shown_ws}`"
        )));
    };
    if !approve {
        return Err(Failure { code: 1, message: format!("not approved: jp will not use {path}") });
    }
    store.approve(&workspace, &config).map_err(|m| Failure { code: 1, message: m })?;
    if cli.json {
        println!(
            "{}",
            json!({"ok": true, "workspace": workspace, "sha256": config.sha256, "approved": true, "changed": true})
        );
    } else {
        println!("approved: jp uses {path} (sha256 {}) until it changes", config.sha256);
    }
    Ok(ExitCode::SUCCESS)
}

async fn query(cli: &Cli, args: &QueryCli) -> Result<ExitCode, Failure> {
    use jp_native::agent::{self, QueryArgs, QueryError, output::Printer};
    let usage = |message: String| Failure { code: 2, message };
    let first = App::load(options(cli))?;
    let (name, provider) = agent::provider(&first, args.provider.as_deref()).map_err(usage)?;
    let mut o = options(cli);
    let (model, key) = agent::model(&name, &provider, first.workspace(), &o.env).map_err(usage)?;
    drop(first);
    // The key is not in the environment tools pick from: no policy can hand it to one.
    if let Some(var) = &provider.api_key_env {
        o.env.remove(var);
    }
    let secrets: Vec<String> = key.into_iter().collect();
    let printer = Arc::new(Printer::new(cli.json, &secrets));
    let interactive = !args.no_interaction && TerminalInquirer::available();
    o.inquirer =
        if interactive { Arc::new(TerminalInquirer::default()) as Arc<dyn Inquirer> } else { Arc::new(DenyInquirer) };
    o.trace = Some(printer.clone());
    o.timeout = Duration::from_secs(args.timeout.max(1));
    let app = Arc::new(App::load(o)?);
    let cancel = CancellationToken::new();
    let on_signal = {
        let (cancel, printer) = (cancel.clone(), printer.clone());
        tokio::spawn(async move {
            shutdown_signal().await;
            printer.note("cancelling: stopping the running tool calls…");
            cancel.cancel();
        })
    };
    let query_args = QueryArgs {
        prompt: args.prompt.clone(),
        provider: Some(name),
        continue_last: args.continue_last,
        interactive,
        json: cli.json,
        max_rounds: args.max_rounds,
    };
    let result = agent::query(app, &query_args, model.as_ref(), &printer, &secrets, &cancel).await;
    on_signal.abort();
    match result {
        Ok(_) => Ok(ExitCode::SUCCESS),
        Err(QueryError::Failed) => Ok(ExitCode::from(1)),
        Err(QueryError::Usage(message)) => Err(usage(printer.scrub(&message))),
    }
}

async fn list(app: &App, json: bool) -> Result<ExitCode, Failure> {
    let mut rows = Vec::new();
    for entry in app.tools() {
        let summary = match app.definition(&entry.name).await {
            Ok(d) => d.summary.unwrap_or_default(),
            Err(e) => format!("(cannot describe itself: {e})"),
        };
        let policy = entry.policy_summary();
        rows.push(json!({
            "name": entry.name,
            "runtime": entry.runtime_label(),
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

fn parse_json_object(text: &str, what: &str) -> Result<Map<String, Value>, Failure> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(Failure { code: 2, message: format!("{what} must be a JSON object, got {other}") }),
        Err(e) => Err(Failure {
            code: 2,
            message: format!("{what} is not valid JSON ({e}); write e.g. --args '{{\"path\":\"src/main.rs\"}}'"),
        }),
    }
}

async fn mcp(cli: &Cli, args: &McpArgs) -> Result<ExitCode, Failure> {
    let mut o = options(cli);
    o.timeout = Duration::from_secs(args.timeout.max(1));
    o.fetch_wait = Duration::from_millis(args.fetch_wait_ms);
    if args.trace {
        o.trace = Some(Arc::new(StderrTrace::default()));
    }
    let app = Arc::new(App::load(o)?);
    let mut options = McpOptions::default();
    if let Some(n) = args.max_concurrent {
        options.max_concurrent = n.max(1);
    }
    let served = match args.http {
        None => serve_stdio(app, options).await,
        Some(addr) => {
            let (token, token_given) = match &args.token_env {
                Some(var) => match std::env::var(var) {
                    Ok(t) if !t.trim().is_empty() => (t.trim().to_owned(), true),
                    _ => {
                        return Err(Failure {
                            code: 2,
                            message: format!("--token-env {var}: the variable is not set or empty; export it first"),
                        });
                    }
                },
                None => (generate_token().map_err(|m| Failure { code: 1, message: m })?, false),
            };
            http::serve(app, options, HttpOptions { addr, token, token_given }, shutdown_signal()).await
        }
    };
    served.map(|()| ExitCode::SUCCESS).map_err(|message| Failure { code: 1, message })
}

async fn call(app: &Arc<App>, args: &CallArgs, interactive: bool, json: bool) -> Result<ExitCode, Failure> {
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
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    let mut call = ToolCall::new(args.name.clone(), "call", arguments);
    call.answers = answers;
    call.cancel = cancel.clone();
    let answerer: Box<dyn Answerer> =
        if interactive { Box::new(terminal::TerminalAnswerer) } else { Box::new(NoAnswerer) };
    // A stateful command (`action`) gets a handle that lives as long as this process: the reply
    // shows its state, and the handle is aborted before jp exits.
    let handles = Handles::new();
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
