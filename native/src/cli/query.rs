//! `jp query`: one agent turn with a model from `[providers.*]` and the workspace's tools.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use jp_core::cancel::CancellationToken;
use jp_core::host::{DenyInquirer, Inquirer};
use jp_native::app::App;
use jp_native::mcp::shutdown_signal;
use jp_native::terminal::TerminalInquirer;

use crate::{Cli, Failure, QueryCli, options};

pub(crate) async fn query(cli: &Cli, args: &QueryCli) -> Result<ExitCode, Failure> {
    use jp_native::agent::{self, QueryArgs, QueryError, output::Printer};
    let usage = |message: String| Failure { code: 2, message };
    let first = App::load(options(cli))?;
    let (name, provider) = agent::provider(&first, args.provider.as_deref()).map_err(|e| usage(e.to_string()))?;
    let mut o = options(cli);
    let (model, key) = agent::model(&name, &provider, first.workspace(), &o.env).map_err(|e| usage(e.to_string()))?;
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
        Err(QueryError::Failed | QueryError::NothingDone) => Ok(ExitCode::from(1)),
        Err(e @ (QueryError::History(_) | QueryError::Tools(_))) => Err(usage(printer.scrub(&e.to_string()))),
    }
}
