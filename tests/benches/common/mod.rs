//! Helpers shared by the benchmark binaries.

use std::time::Duration;

use jp_core::cancel::CancellationToken;
use jp_core::runtime::{Config, ToolCall, ToolConfig};

/// The median of some timings.
pub(crate) fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A local tool `t` configured by the TOML lines in `body`.
pub(crate) fn config(body: &str) -> ToolConfig {
    let text = format!("[conversation.tools.t]\nsource = \"local\"\n{body}\n");
    Config::from_toml(&text, "bench.toml").unwrap().conversation.tools.remove("t").unwrap()
}

/// One call of `name` with `args` (a JSON object).
pub(crate) fn call(name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        name: name.into(),
        id: "b".into(),
        arguments: args.as_object().cloned().unwrap(),
        answers: Default::default(),
        cancel: CancellationToken::new(),
        inquirer: None,
        policy: None,
    }
}
