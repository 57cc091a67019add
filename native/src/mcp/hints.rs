//! Caching hints on list results (SEP-2549, MCP 2026-07-28: every `tools/list`, `prompts/list`
//! and `resources/list` result carries `ttlMs` and `cacheScope`). Older protocol versions get
//! the results they always got, without the fields.
//!
//! Every list depends on this user's workspace and configuration, so it is `private`. The
//! configuration is fixed for the life of `jp mcp` (a changed one is refused until approved
//! again), but a wrapped server whose tools could not be listed is asked again on the next
//! list, and its prompts are the server's own: a minute. Resources are data a server may change
//! at any moment: not cached.

use rmcp::RoleServer;
use rmcp::model::CacheScope;
use rmcp::service::RequestContext;

/// `tools/list` and `prompts/list`: fresh for a minute.
pub(crate) const LISTS_TTL_MS: u64 = 60_000;
/// `resources/list`: stale at once.
pub(crate) const RESOURCES_TTL_MS: u64 = 0;

/// Set a list result's hints (`ttl_ms`, `cache_scope`) when `ctx`'s protocol has them.
pub(crate) fn set(
    ctx: &RequestContext<RoleServer>,
    ttl_ms: &mut Option<u64>,
    cache_scope: &mut Option<CacheScope>,
    ttl: u64,
) {
    if ctx.protocol_version().is_some_and(|v| !v.has_initialize()) {
        *ttl_ms = Some(ttl);
        *cache_scope = Some(CacheScope::Private);
    }
}
