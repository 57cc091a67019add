//! jp as an MCP *client*: `[mcp.servers.*]` started under the OS sandbox (or reached by URL) and
//! their tools run as D10's `McpRuntime` ([`client`]); the caps on what a server sends
//! ([`bounds`]); its prompts, resources, completions and logging level ([`requests`]); what it
//! sends towards the agent ([`forward`], [`wrapped`], asked through [`ask`]); the relay's pipes to
//! a running stdio server ([`pipes`]); content blocks both ways ([`content`], also used by the
//! server). `jp mcp`, the server, is [`crate::mcp`].

pub mod ask;
pub mod bounds;
pub mod client;
pub mod content;
pub mod forward;
pub mod pipes;
pub mod requests;
mod start;
pub mod wrapped;
