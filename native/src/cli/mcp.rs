//! `jp mcp`: the tools served to an agent over MCP, on stdio or Streamable HTTP.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use jp_native::app::App;
use jp_native::mcp::http::{self, HttpOptions, generate_token};
use jp_native::mcp::{McpOptions, serve_stdio, shutdown_signal};
use jp_native::terminal::StderrTrace;

use crate::{Cli, Failure, McpArgs, options};

pub(crate) async fn serve(cli: &Cli, args: &McpArgs) -> Result<ExitCode, Failure> {
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
                None => (generate_token().map_err(|e| Failure { code: 1, message: e.to_string() })?, false),
            };
            http::serve(app, options, HttpOptions { addr, token, token_given }, async {
                shutdown_signal().await;
            })
            .await
        }
    };
    served.map(|()| ExitCode::SUCCESS).map_err(|e| Failure { code: 1, message: e.to_string() })
}
