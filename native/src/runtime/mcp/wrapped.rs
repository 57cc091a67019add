//! jp's client of a wrapped MCP server ([`Wrapped`]): which of the server's requests of a client
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`) reach the agent's client, as
//! the server's `forward` says and the agent's client declared; the rest declined with the
//! reason (see [`forward`](super::forward)).

// Roots and sampling are deprecated by SEP-2577, but 2025-11-25 clients speak them.
#![allow(deprecated)]

use std::sync::Arc;

use jp_core::runtime::{McpForward, McpServerConfig};
use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientResult, CreateMessageRequest, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction, Implementation, ListRootsRequest,
    ListRootsResult, MetaObject, ServerRequest,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::Value;

use super::ask::Client;
use super::forward::{Asker, Hub, NoAsker, cut};
use jp_core::display::escape;

/// jp's client of wrapped server `server`: which of its requests reach the agent's client.
pub struct Wrapped {
    server: String,
    config: McpServerConfig,
    hub: Arc<Hub>,
}

impl Wrapped {
    /// The client of server `server` configured as `config`.
    pub fn new(server: &str, config: &McpServerConfig, hub: &Arc<Hub>) -> Self {
        Self { server: server.to_owned(), config: config.clone(), hub: hub.clone() }
    }

    /// Why a request `what` of the server is not passed on, or the asker it goes to.
    fn route(&self, what: McpForward) -> Result<Asker, NotPassedOn> {
        let server = self.server.clone();
        if !self.config.forwards(what) {
            return Err(NotPassedOn::NotForwarded { what, server });
        }
        let asker = self.hub.asker(&self.server).map_err(|why| NotPassedOn::NoAsker { what, server, why })?;
        let can = match (&asker, what) {
            // A call's client may be asked by request, or by its result (2026-07-28).
            (Asker::Call(c), McpForward::Elicitation) => c.asker.can_ask(),
            _ => asker.session().declared(what),
        };
        if !can {
            return Err(NotPassedOn::Undeclared { what });
        }
        Ok(asker)
    }
}

/// Why a wrapped server's request (elicitation, sampling, roots) is not passed on to the agent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotPassedOn {
    /// The server's `forward` list does not name it.
    #[error(
        "jp does not pass {} requests of MCP server '{server}' on to the agent: add \"{}\" to [mcp.servers.{server}] forward to allow it",
        .what.as_str(),
        .what.as_str()
    )]
    NotForwarded {
        /// The kind of request.
        what: McpForward,
        /// The server.
        server: String,
    },
    /// No session can be asked.
    #[error("jp cannot pass this {} request of MCP server '{server}' on: {why}", .what.as_str())]
    NoAsker {
        /// The kind of request.
        what: McpForward,
        /// The server.
        server: String,
        /// Why nobody.
        why: NoAsker,
    },
    /// The agent's client did not declare it.
    #[error(
        "the agent's MCP client does not support {} requests (it did not declare them, or it speaks 2026-07-28)",
        .what.as_str()
    )]
    Undeclared {
        /// The kind of request.
        what: McpForward,
    },
}

fn declined(reason: String) -> ElicitResult {
    let mut meta = MetaObject::default();
    meta.0.insert("reason".into(), Value::String(reason));
    ElicitResult::new(ElicitationAction::Decline).with_meta(meta)
}

impl ClientHandler for Wrapped {
    fn get_info(&self) -> ClientConfig {
        let mut caps = serde_json::Map::new();
        if self.config.forwards(McpForward::Elicitation) {
            caps.insert("elicitation".into(), serde_json::json!({"form": {}}));
        }
        if self.config.forwards(McpForward::Sampling) {
            caps.insert("sampling".into(), serde_json::json!({}));
        }
        if self.config.forwards(McpForward::Roots) {
            caps.insert("roots".into(), serde_json::json!({}));
        }
        let capabilities: ClientCapabilities = serde_json::from_value(Value::Object(caps)).unwrap_or_default();
        ClientConfig::new(capabilities, Implementation::new("jp", env!("CARGO_PKG_VERSION")))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let asker = match self.route(McpForward::Elicitation) {
            Ok(a) => a,
            Err(why) => return Ok(declined(why.to_string())),
        };
        let ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } = request else {
            return Ok(declined("jp passes on form elicitation only, not URL elicitation".into()));
        };
        // jp's words first, the server's escaped: it cannot pose as jp or another server.
        let message = format!("MCP server '{}' asks: {}", escape(&self.server), escape(&cut(&message)));
        let client = match &asker {
            Asker::Call(c) => c.asker.clone(),
            Asker::Session(s) => match s.peer() {
                Some(peer) => Client::for_peer(peer),
                None => return Ok(declined("the agent's client is not connected".into())),
            },
        };
        Ok(client
            .ask(message, requested_schema)
            .await
            .unwrap_or_else(|| declined("the agent's client did not answer".into())))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let not_found =
            |why: NotPassedOn| ErrorData::new(rmcp::model::ErrorCode::METHOD_NOT_FOUND, why.to_string(), None);
        let asker = self.route(McpForward::Sampling).map_err(not_found)?;
        match asker.request(ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params))).await {
            Ok(ClientResult::CreateMessageResult(r)) => Ok(*r),
            Ok(_) => Err(ErrorData::internal_error("the agent's client answered sampling with something else", None)),
            Err(e) => Err(ErrorData::internal_error(format!("the agent's client failed on sampling: {e}"), None)),
        }
    }

    async fn list_roots(&self, _context: RequestContext<RoleClient>) -> Result<ListRootsResult, ErrorData> {
        // Not passed on: jp's own answer, as before (no roots).
        let Ok(asker) = self.route(McpForward::Roots) else { return Ok(ListRootsResult::default()) };
        match asker.request(ServerRequest::ListRootsRequest(ListRootsRequest::default())).await {
            Ok(ClientResult::ListRootsResult(r)) => Ok(r),
            Ok(_) => Err(ErrorData::internal_error("the agent's client answered roots/list with something else", None)),
            Err(e) => Err(ErrorData::internal_error(format!("the agent's client failed on roots/list: {e}"), None)),
        }
    }
}
