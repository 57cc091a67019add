//! Every way `jp` runs a tool (D10's `ToolRuntime`s), below the front ends (`jp tool call`,
//! [`crate::mcp`], [`crate::agent`]) and above the backends ([`crate::files`],
//! [`crate::sandbox`], [`crate::process`], [`crate::http`], [`crate::egress`]):
//!
//! - [`vfs`] — `VfsRuntime`: a sandboxed subprocess speaking the D11 protocol, every request
//!   served by the core dispatcher.
//! - [`stdio`] — `StdioRuntime`: legacy local tools under the same OS sandbox, granted the
//!   workspace as a whole.
//! - [`wasm`] — `WasmRuntime`: WASI p2 components under wasmtime.
//! - [`builtin`] — `BuiltinRuntime`: the builtin fs tools in-process.
//! - [`run_tool`] — the builtin stateful tool `run`.
//! - [`mcp`] — `McpRuntime`: jp as the client of `[mcp.servers.*]`.
//! - [`services`] — `HostServices`, what a tool's dispatcher is built from.
//! - [`tail`] — `StderrTail`, the one reader of a child's stderr.
//!
//! **Architecture invariant:** nothing here imports a front end or `crate::app`; the app
//! assembles runtimes, runtimes never reach back.

pub mod builtin;
pub mod mcp;
pub mod run_tool;
pub mod services;
pub mod stdio;
pub mod tail;
pub mod vfs;
pub mod wasm;
