//! Platform-neutral core of jp-host.
//!
//! An agent asks to run a *tool* with JSON arguments; the tool then asks the host for files,
//! network and processes. Everything that decides *whether* and *how* such a request is answered
//! lives here, so that the native `jp` command, the browser host and edge functions give the same
//! answer to the same request:
//!
//! - [`protocol`] — the VFS wire protocol of RFD D11 (JSON-RPC 2.0 over NDJSON).
//! - [`state`] — tool results and the stateful tool protocol of RFD 009.
//! - [`policy`] — the one [`AccessPolicy`](policy::AccessPolicy) and the secret [`Scrubber`](policy::Scrubber).
//! - [`files`] — the [`ProjectFiles`](files::ProjectFiles) trait of RFD D09 and its in-memory backends.
//! - [`host`] — the one request [`Dispatcher`](host::Dispatcher) used by every transport.
//! - [`handles`] — the RFD 009 handle registry.
//! - [`runtime`] — the [`ToolRuntime`](runtime::ToolRuntime) trait of RFD D10 and tool configuration.
//! - [`schema`] — RFD D06 self-description and RFD 009 action schemas.
//! - [`agent`] — the agent turn loop, its model providers and what a permission question shows.
//! - [`display`] — tool and model text made safe to show on a terminal or a page.
//! - [`json_shape`] — how deep JSON text nests and how many values it holds, measured unparsed.
//!
//! **Architecture invariant:** this crate does no I/O. It has no file system, no clock, no
//! environment and no sockets (`clippy.toml` bans them) and builds for `wasm32-unknown-unknown`.
//! Platforms implement the backend traits.

pub mod agent;
pub mod cancel;
pub mod display;
pub mod files;
pub mod handles;
pub mod host;
pub mod json_shape;
pub mod maybe;
pub mod policy;
pub mod protocol;
pub mod runtime;
pub mod schema;
pub mod state;

pub use maybe::{BoxFuture, MaybeSend, MaybeSync};
