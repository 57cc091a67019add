//! The example component of issue 34: one WASI p2 component that runs unchanged natively
//! (wasmtime, `jp tool call`), in the page and at the edge (jco), because everything it does
//! outside itself goes through the host's `jp:host` imports, which every host serves through the
//! same policy:
//!
//! - `api_get` `{ url }`: `jp:host/http.get` with `Authorization: Bearer ${API_TOKEN}`. The
//!   component writes the placeholder literally; the host substitutes the value when the tool's
//!   `network.envs` names `API_TOKEN` and the URL is allowed, and scrubs the value from the
//!   response, so the token never enters the component. Answers `status <N>` and the body.
//! - `get` `{ url, times? }`: `jp:host/http.get` with no credentials — a request the host may ask
//!   its user about (a URL no rule covers under a `sandbox` table), which one carrying a secret
//!   never is. With `times`, the request is made that many times, going on after a refusal (what
//!   a misbehaving tool does, for the hosts' limits).
//! - `read_env` `{ times? }`: `.env` through `jp:host/filesystem.read` — a sensitive path, so the
//!   host asks its user first; with `times`, asked again each time.
//!
//! A refusal or failure of the host is the tool's error, with the host's code and message.
//!
//! It binds the two interfaces it uses directly (no SDK), to show what a tool author writes with
//! nothing but the WIT files, and to stay small for the page and the edge.

wit_bindgen::generate!({
    path: ["../../../wit/host", "../../../wit/tool"],
    inline: "
        package jp:fetch-example;

        world fetch {
            import jp:host/http@0.1.0;
            import jp:host/filesystem@0.1.0;
            include jp:tool/described-tool@0.1.0;
        }
    ",
    world: "fetch",
    generate_all,
});

use exports::jp::tool::describe;
use jp::host::types::HostError;
use jp::host::{filesystem, http};
use jp::tool::types::ErrorInfo;

/// The D06 self-description (`describe.schema`).
const SCHEMA: &str = r#"{"tools":[
  {"name":"api_get","summary":"GET a URL of the API with the user's API token.",
   "description":"Sends `Authorization: Bearer ${API_TOKEN}`; the host fills in the token, which the tool never sees.",
   "parameters":{"url":{"type":"string","summary":"The URL to GET."}}},
  {"name":"get","summary":"GET a URL, with no credentials.",
   "parameters":{"url":{"type":"string","summary":"The URL to GET."},
     "times":{"type":"integer","required":false,"summary":"How many times (default 1): the last answer, or how many were refused."}}},
  {"name":"read_env","summary":"Read the project's .env file (the host asks first).",
   "parameters":{"times":{"type":"integer","required":false,"summary":"How many times (default 1)."}}}
]}"#;

fn failure(message: String) -> Outcome {
    Outcome::Error(ErrorInfo { message, trace: Vec::new(), transient: false })
}

/// The host's refusal or failure as the tool's error: its message, with its D11 code.
fn host_failure(request: &str, e: HostError) -> Outcome {
    failure(format!("{request} failed (host error {}): {}", e.code, e.message))
}

/// `attempt` made `arguments.times` times (default 1), going on after a failure: one attempt's
/// own answer, or how many of them the host answered and its last refusal.
fn repeated(arguments: &serde_json::Value, what: &str, attempt: impl Fn() -> Result<String, HostError>) -> Outcome {
    let times = arguments["times"].as_u64().unwrap_or(1).max(1);
    let mut last = None;
    let (mut answered, mut answer) = (0, String::new());
    for _ in 0..times {
        match attempt() {
            Ok(a) => (answered, answer) = (answered + 1, a),
            Err(e) => last = Some(e),
        }
    }
    match (times, last) {
        (1, Some(e)) => host_failure(what, e),
        (1, None) => Outcome::Success(answer),
        (_, None) => Outcome::Success(format!("{answered} of {times} answered\n{answer}")),
        (_, Some(e)) => Outcome::Success(format!(
            "{answered} of {times} answered; the last refusal: {what} failed (host error {}): {}",
            e.code, e.message
        )),
    }
}

/// GET `arguments.url` with `headers`: `status <N>` and the body.
fn get(arguments: &serde_json::Value, headers: &[http::Header]) -> Outcome {
    let Some(url) = arguments["url"].as_str() else {
        return failure("missing required string argument 'url'".into());
    };
    repeated(arguments, "http.get", || {
        http::get(url, headers).map(|r| format!("status {}\n{}", r.status, String::from_utf8_lossy(&r.body)))
    })
}

fn read_env(arguments: &serde_json::Value) -> Outcome {
    repeated(arguments, "filesystem.read .env", || {
        filesystem::read(".env").map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    })
}

struct Fetch;

impl Guest for Fetch {
    fn run(_ctx: Context, name: String, arguments: String, _answers: String) -> Outcome {
        let arguments: serde_json::Value = match serde_json::from_str(&arguments) {
            Ok(v) => v,
            Err(_) if arguments.trim().is_empty() => serde_json::Value::Null,
            Err(e) => return failure(format!("invalid arguments: {e}")),
        };
        match name.as_str() {
            "api_get" => {
                get(&arguments, &[http::Header { name: "Authorization".into(), value: "Bearer ${API_TOKEN}".into() }])
            }
            "get" => get(&arguments, &[]),
            "read_env" => read_env(&arguments),
            other => failure(format!("this component has no tool '{other}'; it serves: api_get, get, read_env")),
        }
    }
}

impl describe::Guest for Fetch {
    fn schema() -> String {
        SCHEMA.to_owned()
    }
}

export!(Fetch);
