//! jp-host in the browser and at the edge (crate `jp-web`, wasm32 only).
//!
//! - `files::IndexedDbProjectFiles`: the project's files in IndexedDB, one transaction per
//!   operation.
//! - `host::JpHost`: the JS API (wasm-bindgen): files, the policy, decisions as events, and
//!   the start of a call; `call::CallSession` serves a jco-transpiled component's `jp:host`
//!   imports via the core dispatcher; `policy`: the policy text (and the edge's ceiling);
//!   `schema`: argument schemas checked as `jp` checks them (`ArgumentSchema`, `toolInputSchema`).
//! - `run`: `JpHost.call`, one tool call through the core's call path (arguments checked, the
//!   component run by a JS runner on a call session, its answer mapped, its questions answered).
//! - `handles`: stateful tools (RFD 009) — `JpHost.agentCall` through the core's handle
//!   session, a live component instance per handle (run by JS: `www/jp.js`), owners kept apart.
//! - `store::Store`: where a host keeps its project — IndexedDB, memory, or the embedder's
//!   `ProjectStorage` (edge functions) — and the snapshot/commit every call runs on.
//! - `agent`: `runAgentTurn`, the core turn loop in the page (model through `fetch`, tool calls
//!   through a JS callback).
//! - `surface`: the core's agent surface for JS — `agentTool`, `askBeforeCall`, `agentResult`
//!   (the page's agent and the edge's `/mcp` describe, gate and answer calls as `jp mcp` does).
//! - `http::FetchHttpClient`, `http::JsInquirer`: `fetch` and a JS callback behind the core's
//!   `HttpClient` and `Inquirer`.

#![cfg(target_arch = "wasm32")]

pub mod agent;
pub mod call;
pub mod files;
pub mod handles;
pub mod host;
pub mod http;
mod js;
pub mod policy;
pub mod run;
pub mod saved;
pub mod schema;
pub mod store;
pub mod surface;

pub use call::CallSession;
pub use host::JpHost;
