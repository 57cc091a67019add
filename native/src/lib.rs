//! The native jp-host.
//!
//! `jp-core` decides; this crate provides what it needs on a real machine:
//!
//! - [`files::FsProjectFiles`] — the project directory, reached only through a capability handle.
//! - [`http::ReqwestHttpClient`] and [`process::TokioProcessRunner`] — the host services behind
//!   `http.*` and `process.run`.
//! - [`sandbox`] — the OS sandbox (Landlock, seccomp, rlimits) applied in a tool's child process
//!   between `fork` and `exec`, never in the host; it fails closed.
//! - [`vfs::VfsRuntime`] — the D11 runtime: a sandboxed subprocess whose every request is served
//!   by the core dispatcher.
//! - [`stdio::StdioRuntime`] — legacy local tools (D10's default runtime) under the same OS
//!   sandbox, granted the workspace as a whole per their policy.
//! - [`wasm::WasmRuntime`] — WASI p2 components under wasmtime; their `wasi:filesystem` and
//!   `jp:host` imports are served by the core dispatcher.
//! - [`builtin::BuiltinRuntime`] — first-party tools in-process, their host calls served by the
//!   core dispatcher directly ([`services::HostServices`] is what both it and the VFS runtime build
//!   a dispatcher from).
//! - [`agent`] — `jp query`: the core turn loop with a model from `[providers.*]` and these tools.
//! - [`trust`] — which configuration is used: the user's own, `--config`, and a workspace's only
//!   once the user approved its exact content (`jp trust`).
//! - [`app`] and [`terminal`] — the `jp` command's host: configuration, first-party tools, D06
//!   schemas, D10 runtime resolution, terminal inquiries and `--trace`.

pub mod agent;
pub mod app;
pub mod builtin;
pub mod egress;
pub mod files;
pub mod http;
pub mod mcp;
pub mod process;
pub mod run_tool;
pub mod sandbox;
pub mod services;
pub mod stdio;
pub mod terminal;
pub mod trust;
pub mod vfs;
pub mod wasm;
