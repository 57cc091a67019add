//! jp-host in the browser and at the edge (crate `jp-web`, wasm32 only).
//!
//! - [`files::IndexedDbProjectFiles`]: the project's files in IndexedDB, one transaction per
//!   operation.

#![cfg(target_arch = "wasm32")]

pub mod files;
