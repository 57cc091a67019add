//! RFD 009 stateful tools, platform-neutral: the [`registry`] of one owner's live handles, and
//! the [`session`] that dispatches an agent's calls to it (spawn/fetch/apply/abort, one-shot
//! wrapping, limits, idle expiry, close = abort all) over the small [`StatefulTools`] trait a
//! platform implements — the native `App`, jp-web's host in the page and at the edge.

pub mod registry;
pub mod session;

pub use registry::{AnyToolHandle, ApplyInput, Checkout, DEFAULT_MAX_LIVE, HandleError, HandleRegistry};
pub use session::{HandleOwners, HandleSession, LiveHandle, SessionLimits, StatefulTools, run_to_end};
