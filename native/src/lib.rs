//! The native jp-host.
//!
//! `jp-core` decides; this crate provides what it needs on a real machine:
//!
//! - [`files::FsProjectFiles`] — the project directory, reached only through a capability handle.
//! - [`http::ReqwestHttpClient`] and [`process::TokioProcessRunner`] — the host services behind
//!   `http.*` and `process.run`.
//! - [`sandbox`] — the OS sandbox (crate `jp-sandbox`: Landlock, seccomp, namespaces, the mount view) applied in a tool's child process
//!   between `fork` and `exec`, never in the host; it fails closed.
//! - [`runtime`] — every way a tool runs (D10; [`runtime::services::HostServices`] is what a dispatcher is built from):
//!   [`runtime::vfs::VfsRuntime`] (a sandboxed subprocess whose every request is served by the
//!   core dispatcher), [`runtime::stdio::StdioRuntime`] (legacy local tools under the same OS
//!   sandbox, granted the workspace as a whole), [`runtime::wasm::WasmRuntime`] (WASI p2
//!   components under wasmtime), [`runtime::builtin::BuiltinRuntime`] (builtin tools
//!   in-process), the stateful `run` tool ([`runtime::run_tool`]) and jp as an MCP client
//!   ([`runtime::mcp`]).
//! - [`mcp`] — `jp mcp`, the MCP server: the tools served to agents.
//! - [`agent`] — `jp query`: the core turn loop with a model from `[providers.*]` and these tools.
//! - [`trust`] — which configuration is used: the user's own, `--config`, and a workspace's only
//!   once the user approved its exact content (`jp trust`).
//! - [`app`] and [`terminal`] — the `jp` command's host: configuration, builtin tools, D06
//!   schemas, D10 runtime resolution, terminal inquiries and `--trace`.

#![forbid(unsafe_code)]

pub mod agent;
pub mod app;
pub mod egress;
pub mod files;
pub mod http;
pub mod learning;
pub mod mcp;
pub mod process;
pub mod runtime;
pub mod sandbox;
pub mod signals;
pub mod terminal;
pub mod trust;
