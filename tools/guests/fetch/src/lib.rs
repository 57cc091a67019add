//! The example component of issue 34: one WASI p2 component that runs unchanged natively
//! (wasmtime, `jp tool call`), in the page and at the edge (jco), because everything it does
//! outside itself goes through the host's `jp:host` imports, which every host serves through the
//! same policy:
//!
//! - `api_get` `{ url }`: `jp:host/http.get` with `Authorization: Bearer ${API_TOKEN}`. The
//!   component writes the placeholder literally; the host substitutes the value when the tool's
//!   `network.envs` names `API_TOKEN` and the URL is allowed, and scrubs the value from the
//!   response, so the token never enters the component. Answers `status <N>` and the body.
//! - `get` `{ url }`: `jp:host/http.get` with no credentials — a request the host may ask its
//!   user about (a URL no rule covers under a `sandbox` table), which one carrying a secret never
//!   is.
//! - `read_env` `{}`: `.env` through `jp:host/filesystem.read` — a sensitive path, so the host
//!   asks its user first.
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
   "parameters":{"url":{"type":"string","summary":"The URL to GET."}}},
  {"name":"read_env","summary":"Read the project's .env file (the host asks first).","parameters":{}}
]}"#;

fn failure(message: String) -> Outcome {
    Outcome::Error(ErrorInfo { message, trace: Vec::new(), transient: false })
}

/// The host's refusal or failure as the tool's error: its message, with its D11 code.
fn host_failure(request: &str, e: HostError) -> Outcome {
    failure(format!("{request} failed (host error {}): {}", e.code, e.message))
}

/// GET `arguments.url` with `headers`: `status <N>` and the body.
fn get(arguments: &serde_json::Value, headers: &[http::Header]) -> Outcome {
    let Some(url) = arguments["url"].as_str() else {
        return failure("missing required string argument 'url'".into());
    };
    match http::get(url, headers) {
        Ok(r) => Outcome::Success(format!("status {}\n{}", r.status, String::from_utf8_lossy(&r.body))),
        Err(e) => host_failure("http.get", e),
    }
}

fn read_env() -> Outcome {
    match filesystem::read(".env") {
        Ok(bytes) => Outcome::Success(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) => host_failure("filesystem.read .env", e),
    }
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
            "read_env" => read_env(),
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
