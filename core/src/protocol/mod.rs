//! The VFS tool protocol of RFD D11: JSON-RPC 2.0 messages, one per line (NDJSON).
//!
//! The tool is the *requester*: it writes requests (`fs.read`, `http.get`, `process.run`, …) to its
//! stdout and reads responses on its stdin. The host writes notifications (`init`, `cancel`,
//! `apply`, `pending`) and the tool ends with a `result` or `error` notification (or `state` updates
//! for stateful tools).
//!
//! - [`envelope`] — requests, responses, notifications, error objects and codes.
//! - [`methods`] — typed params and results of every method and notification.
//! - [`framing`] — NDJSON framing over any byte stream with a maximum line size.
//! - [`content`] — text-or-base64 content encoding.
//!
//! Content travels as bytes in the typed values ([`FsReadResult::content`], [`FsWriteParams::content`],
//! …); the text-or-base64 form exists only in their JSON (de)serialization (module `wire`).

pub mod content;
pub mod envelope;
pub mod framing;
pub mod methods;
mod wire;

pub use content::{Encoding, decode_content, encode_content};
pub use envelope::{ErrorCode, Id, Notification, Request, Response, RpcError, RpcMessage};
pub use framing::{Frame, Incoming, LineDecoder, decode_frame, decode_incoming, encode_message};
pub use methods::*;

/// The protocol version sent in `init` (D11 "Initial context").
pub const PROTOCOL_VERSION: &str = "0.1.0";

/// Largest file, body or output carried in one message, in bytes (D11: 10 MB default).
pub const DEFAULT_MAX_CONTENT: usize = 10 * 1024 * 1024;

/// Largest NDJSON line accepted, in bytes: the content cap after base64 (×4/3) plus room for the
/// JSON-RPC envelope and JSON escaping of the other fields.
pub const DEFAULT_MAX_LINE: usize = DEFAULT_MAX_CONTENT / 3 * 4 + 4 + 1024 * 1024;
