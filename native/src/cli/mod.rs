//! The `jp` binary's subcommands, one module each (modules of the binary, not of the
//! `jp_native` library): `jp tool list|call` ([`tool`]), `jp mcp` ([`mcp`]), `jp query`
//! ([`query`]), `jp trust` ([`trust`]), `jp policy suggest` ([`policy`]) and `jp sandbox status`
//! ([`sandbox`]). `main.rs` holds
//! the command line and sends each subcommand here.

pub(crate) mod mcp;
pub(crate) mod policy;
pub(crate) mod query;
pub(crate) mod sandbox;
pub(crate) mod tool;
pub(crate) mod trust;
