//! `jp`: run sandboxed tools from the command line.
//!
//! Exit codes: 0 when the tool succeeded, 1 when it failed (its own error, a denial it could not
//! recover from, a crash, a timeout), 2 for usage and configuration errors.

#![forbid(unsafe_code)]

mod cli;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use jp_core::host::{DenyInquirer, Inquirer};
use jp_core::runtime::RuntimeError;
use jp_native::app::{App, AppError, AppOptions, TOOL_MODE_ARG};
use jp_native::sandbox::SandboxMode;
use jp_native::terminal::{self, StderrTrace, TerminalInquirer};
use serde_json::json;

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
    /// Propose policy from use: `jp policy suggest [--write] -- ARGS…` runs `jp ARGS…` in
    /// learning mode and prints the smallest change to the configuration that would have
    /// allowed what it was refused.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Serve a builtin tool over the VFS protocol (how jp runs its own tools).
    #[command(name = TOOL_MODE_ARG, hide = true)]
    ToolMode,
}

#[derive(Debug, Subcommand)]
enum ToolSubcommand {
    /// Every tool: name, runtime, source, summary and policy.
    List,
    /// One tool: where it comes from, how it runs, and everything its policy lets it touch.
    Show {
        /// Tool name.
        name: String,
    },
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

#[derive(Debug, Subcommand)]
enum PolicyCommand {
    /// Run `jp ARGS…` (`tool call …`, `query …`, or `mcp` until its client leaves) in learning
    /// mode — every refusal recorded, no one asked, nothing widened — then print each table
    /// widened by just what the run needed: paths as narrow as the accesses, origins, programs
    /// with their arguments. `--write` puts them into the workspace's configuration, which
    /// `jp trust` then shows and approves.
    Suggest(SuggestArgs),
}

#[derive(Debug, Args)]
struct SuggestArgs {
    /// Write the proposal into the workspace's configuration (then approve it: `jp trust`).
    #[arg(long)]
    write: bool,
    /// The command to learn from, after `--`: e.g. `-- tool call NAME ARGS…`.
    #[arg(last = true, required = true, value_name = "ARGS")]
    args: Vec<String>,
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
    // A command that serves a client (`mcp`) or a turn's calls at once (`query`) gets a worker
    // per core; the others (one call, a listing, `trust`) run on this thread: no thread to
    // start and no wake-up of another one is part of a one-shot call's cost (BENCHMARKS.md,
    // "The one-shot path").
    let mut builder = if matches!(cli.command, Command::Mcp(_) | Command::Query(_) | Command::Policy(_)) {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let code = runtime.block_on(async {
        // A tool's descendants left behind become jp's, to be killed and reaped here.
        if let Err(e) = jp_native::sandbox::become_subreaper() {
            eprintln!("warning: cannot become the subreaper of the tools' processes: {e}");
        }
        // Listening before any child is started: no child's end is missed, and no scan of
        // /proc is made before one ended (a one-shot call pays nothing for it otherwise).
        let reaper = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child())
            .ok()
            .map(|sigchld| tokio::spawn(reap_on_sigchld(sigchld)));
        let code = until_signal(run_handling_signals(&cli), run(cli)).await;
        if let Some(reaper) = reaper {
            reaper.abort();
        }
        code
    });
    // A read of a blocking stdin (a socket or a terminal: tokio reads those on a blocking
    // thread) never returns while the client keeps it open, and dropping the runtime would wait
    // for it: after a signal, `jp mcp` must end now. Everything of ours has ended by here (the
    // session's handles aborted, its processes killed); what is left is dropped, not awaited.
    runtime.shutdown_timeout(Duration::from_millis(100));
    code
}

/// Reaps the zombies a tool left behind (see `sandbox::reap_orphans`) each time a child ends.
async fn reap_on_sigchld(mut sigchld: tokio::signal::unix::Signal) {
    while sigchld.recv().await.is_some() {
        jp_native::sandbox::reap_orphans();
    }
}

/// Whether the command ends its tool calls itself on SIGINT, SIGTERM, SIGHUP and SIGQUIT
/// (cancelled, then their groups killed after a grace period, and a message or a result).
fn run_handling_signals(cli: &Cli) -> bool {
    matches!(
        cli.command,
        Command::Tool(ToolSubcommand::Call(_)) | Command::Mcp(_) | Command::Query(_) | Command::Policy(_)
    )
}

/// How long a command that ends its calls itself has, after the first signal, before its work is
/// dropped (the tools' stdio grace period is 5 s; a second signal ends it at once).
const SIGNAL_GRACE: Duration = Duration::from_secs(8);

/// `command`, until an ending signal: the listeners are registered first, so no such signal ends
/// jp by its default action (which would leave the tools' process groups running). On a signal
/// the command's future is dropped — at once, or for a command that handles signals itself after
/// [`SIGNAL_GRACE`] or a second signal — and with it every call: process groups killed, scratch
/// directories removed. The exit code is then 128 + the signal's number.
async fn until_signal(handles_signals: bool, command: impl std::future::Future<Output = ExitCode>) -> ExitCode {
    let mut signals = jp_native::signals::EndingSignals::new();
    let ending = async {
        let first = signals.recv().await;
        if handles_signals {
            tokio::select! {
                _ = signals.recv() => {}
                () = tokio::time::sleep(SIGNAL_GRACE) => {}
            }
        }
        first
    };
    tokio::select! {
        code = command => code,
        signal = ending => ExitCode::from(128 + u8::try_from(signal).unwrap_or(0)),
    }
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
        // Every variant named, so a new one must be placed: 2 for what the caller or the
        // configuration must fix, 1 for a tool's or the machine's failure.
        let code = match e {
            RuntimeError::Component(ref c) => {
                if c.is_config() {
                    2
                } else {
                    1
                }
            }
            RuntimeError::Command(_)
            | RuntimeError::KnowledgeBase(_)
            | RuntimeError::ReadPaths(_)
            | RuntimeError::McpServer(_)
            | RuntimeError::UnknownTool { .. }
            | RuntimeError::NoCommand { .. }
            | RuntimeError::Policy(_)
            | RuntimeError::Schema(_)
            | RuntimeError::Input(_)
            | RuntimeError::UnsupportedRuntime { .. } => 2,
            RuntimeError::Misrouted { .. }
            | RuntimeError::Spawn { .. }
            | RuntimeError::Sandbox(_)
            | RuntimeError::Protocol { .. }
            | RuntimeError::Timeout { .. }
            | RuntimeError::Other(_) => 1,
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
        Command::Sandbox(SandboxCommand::Status) => Ok(cli::sandbox::status(cli.json)),
        Command::Tool(ToolSubcommand::List) => {
            let app = App::load(options(&cli))?;
            app.discover().await;
            cli::tool::list(&app, cli.json).await
        }
        Command::Tool(ToolSubcommand::Show { name }) => {
            let app = App::load(options(&cli))?;
            app.discover().await;
            cli::tool::show(&app, name, cli.json).await
        }
        Command::Mcp(args) => cli::mcp::serve(&cli, args).await,
        Command::Trust(args) => cli::trust::trust(&cli, args).await,
        Command::Policy(PolicyCommand::Suggest(args)) => cli::policy::suggest(&cli, args).await,
        Command::Query(args) => cli::query::query(&cli, args).await,
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
            cli::tool::call(&app, args, interactive, cli.json).await
        }
    }
}
