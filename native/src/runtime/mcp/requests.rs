//! The requests jp makes of a wrapped MCP server besides `tools/*`, for `jp mcp` to pass on
//! (`passthrough`): prompts, resources and their templates, subscriptions,
//! completions and the logging level. Each has the call time limit; a list is paged under the
//! caps of `tools/list`; a failure names the server and the request, and each is traced
//! (`--trace`).

// Logging and resource subscriptions are deprecated by SEP-2577, but 2025-11-25 servers speak them.
#![allow(deprecated)]

use jp_core::host::TraceEvent;
use jp_core::runtime::RuntimeError;
use rmcp::RoleClient;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, LoggingLevel, PaginatedRequestParams, ResourceTemplate,
    SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};

use super::bounds::ListError;
use super::client::{McpRuntime, Server, with_tail};

/// What a server may declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// `prompts`.
    Prompts,
    /// `resources`.
    Resources,
    /// `resources.subscribe`.
    Subscribe,
    /// `logging`.
    Logging,
    /// `completions`.
    Completions,
}

impl McpRuntime {
    /// One request `what` (`prompts/get`, …) of server `name`, with the call time limit; a
    /// failure names the server and the request (a connection gone: the server is dropped).
    pub(super) async fn request<T, F, Fut>(&self, name: &str, what: &str, send: F) -> Result<T, RuntimeError>
    where
        F: FnOnce(rmcp::Peer<RoleClient>) -> Fut,
        Fut: std::future::Future<Output = Result<T, ListError>>,
    {
        let server = self.server(name).await?;
        let peer = server.service.peer().clone();
        let message = match tokio::time::timeout(self.timeout(), send(peer)).await {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(ListError::Cap(cap))) => format!("MCP server '{name}' sent {cap} (cap)"),
            Ok(Err(ListError::Service(e))) => {
                let dead = !matches!(e, rmcp::ServiceError::McpError(_)) || server.service.is_closed();
                if dead {
                    self.forget(name, &server).await;
                }
                format!("MCP server '{name}' failed on {what}: {e}{}", if dead { server.gone() } else { String::new() })
            }
            Err(_) => {
                return Err(RuntimeError::Timeout { tool: format!("mcp.{name}"), seconds: self.timeout().as_secs() });
            }
        };
        Err(RuntimeError::Protocol { tool: format!("mcp.{name}"), message: with_tail(message, &server.tail()) })
    }

    /// Whether server `name` declared `what`; a server that cannot be started declares nothing.
    pub async fn offers(&self, name: &str, what: Offer) -> bool {
        let Ok(server) = self.server(name).await else { return false };
        let Some(info) = server.service.peer().peer_info() else { return false };
        let caps = &info.capabilities;
        match what {
            Offer::Prompts => caps.prompts.is_some(),
            Offer::Resources => caps.resources.is_some(),
            Offer::Subscribe => caps.resources.as_ref().is_some_and(|r| r.subscribe == Some(true)),
            Offer::Logging => caps.logging.is_some(),
            Offer::Completions => caps.completions.is_some(),
        }
    }

    /// The prompts of server `name`, within the list caps.
    pub async fn list_prompts(&self, name: &str) -> Result<Vec<rmcp::model::Prompt>, RuntimeError> {
        self.request(name, "prompts/list", |peer| async move {
            super::bounds::list_all("prompts/list", |cursor| {
                let peer = peer.clone();
                async move {
                    let page = peer
                        .list_prompts(Some(rmcp::model::PaginatedRequestParams::default().with_cursor(cursor)))
                        .await?;
                    Ok((page.prompts, page.next_cursor))
                }
            })
            .await
        })
        .await
    }

    /// Prompt `params.name` of server `name`.
    pub async fn get_prompt(
        &self,
        name: &str,
        params: rmcp::model::GetPromptRequestParams,
    ) -> Result<rmcp::model::GetPromptResult, RuntimeError> {
        self.request(
            name,
            "prompts/get",
            |peer| async move { peer.get_prompt(params).await.map_err(ListError::Service) },
        )
        .await
    }

    /// The resources of server `name`, within the list caps.
    pub async fn list_resources(&self, name: &str) -> Result<Vec<rmcp::model::Resource>, RuntimeError> {
        self.request(name, "resources/list", |peer| async move {
            super::bounds::list_all("resources/list", |cursor| {
                let peer = peer.clone();
                async move {
                    let page = peer
                        .list_resources(Some(rmcp::model::PaginatedRequestParams::default().with_cursor(cursor)))
                        .await?;
                    Ok((page.resources, page.next_cursor))
                }
            })
            .await
        })
        .await
    }

    /// Resource `params.uri` of server `name`.
    pub async fn read_resource(
        &self,
        name: &str,
        params: rmcp::model::ReadResourceRequestParams,
    ) -> Result<rmcp::model::ReadResourceResult, RuntimeError> {
        self.request(name, "resources/read", |peer| async move {
            peer.read_resource(params).await.map_err(ListError::Service)
        })
        .await
    }

    /// The resource templates of server `name`, within the list caps.
    pub async fn list_resource_templates(&self, name: &str) -> Result<Vec<ResourceTemplate>, RuntimeError> {
        self.request(name, "resources/templates/list", |peer| async move {
            super::bounds::list_all("resources/templates/list", |cursor| {
                let peer = peer.clone();
                async move {
                    let page = peer
                        .list_resource_templates(Some(PaginatedRequestParams::default().with_cursor(cursor)))
                        .await?;
                    Ok((page.resource_templates, page.next_cursor))
                }
            })
            .await
        })
        .await
    }

    /// Subscribe to (or unsubscribe from) resource `uri` of server `name`.
    pub async fn subscribe(&self, name: &str, uri: &str, subscribe: bool) -> Result<(), RuntimeError> {
        let uri = uri.to_owned();
        if subscribe {
            self.request(name, "resources/subscribe", |peer| async move {
                peer.subscribe(SubscribeRequestParams::new(uri)).await.map_err(ListError::Service)
            })
            .await
        } else {
            self.request(name, "resources/unsubscribe", |peer| async move {
                peer.unsubscribe(UnsubscribeRequestParams::new(uri)).await.map_err(ListError::Service)
            })
            .await
        }
    }

    /// Completions of server `name` for `params` (its own prompt name already).
    pub async fn complete(&self, name: &str, params: CompleteRequestParams) -> Result<CompleteResult, RuntimeError> {
        self.request(name, "completion/complete", |peer| async move {
            peer.complete(params).await.map_err(ListError::Service)
        })
        .await
    }

    /// Ask server `name`, when running and declaring logging, to log at `level`.
    pub async fn set_level(&self, name: &str, level: LoggingLevel) -> Result<(), RuntimeError> {
        self.request(name, "logging/setLevel", |peer| async move {
            peer.set_level(SetLevelRequestParams::new(level)).await.map_err(ListError::Service)
        })
        .await
    }

    /// A server just started: it logs at the level the agents set, if any set one.
    pub(super) async fn log_at_level(&self, name: &str, server: &Server) {
        let Some(level) = self.hub().level() else { return };
        let peer = server.service.peer();
        if peer.peer_info().is_none_or(|i| i.capabilities.logging.is_none()) {
            return;
        }
        self.trace(name, "logging/setLevel", &format!("{level:?}").to_lowercase());
        let set = tokio::time::timeout(self.timeout(), peer.set_level(SetLevelRequestParams::new(level))).await;
        if !matches!(set, Ok(Ok(()))) {
            eprintln!("jp: MCP server '{name}' did not take logging/setLevel");
        }
    }

    /// `--trace`: a request passed on to server `name`.
    pub fn trace(&self, name: &str, method: &str, target: &str) {
        if let Some(trace) = self.tracer() {
            trace.decided(&TraceEvent {
                tool: format!("mcp.{name}"),
                method: format!("mcp {method}"),
                target: target.to_owned(),
                decision: "allow",
                reason: format!("passed on to MCP server '{name}'"),
                allowed: true,
            });
        }
    }
}
