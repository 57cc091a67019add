//! The prompts and resources of wrapped MCP servers (`[mcp.servers.*]`), offered through
//! `jp mcp` (issue 25): a prompt under the server's prefix like its tools (`files.summarize`),
//! resource URIs unchanged. Each list is paged by hand under the same caps as `tools/list`; a
//! server that cannot be started, or declares neither, offers nothing (and says why on stderr).

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResult,
};

use crate::app::App;

/// Whether any server is configured (then `jp mcp` declares prompts and resources).
pub(crate) fn any(app: &App) -> bool {
    !app.mcp().servers().is_empty()
}

/// A method of prompts or resources is served only when they are declared (some server is
/// configured); otherwise it does not exist here (-32601), as the spec asks.
pub(crate) fn declared(app: &App, method: &str) -> Result<(), ErrorData> {
    if any(app) {
        Ok(())
    } else {
        Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("{method}: no MCP server is configured, so jp offers no prompts or resources"),
            None,
        ))
    }
}

/// Every server's prompts, named as its tools are (`<prefix><name>`).
pub(crate) async fn list_prompts(app: &Arc<App>) -> ListPromptsResult {
    let mut prompts = Vec::new();
    for (server, sc) in app.mcp().servers() {
        if !app.mcp().offers(server, true).await {
            continue;
        }
        match app.mcp().list_prompts(server).await {
            Ok(listed) => prompts.extend(listed.into_iter().map(|mut p| {
                p.name = sc.offered_name(server, &p.name);
                p
            })),
            Err(e) => eprintln!("jp mcp: the prompts of MCP server '{server}' are not offered: {e}"),
        }
    }
    ListPromptsResult::with_all_items(prompts)
}

/// The prompt `params.name` names, from the server whose prefix it carries.
pub(crate) async fn get_prompt(
    app: &Arc<App>,
    mut params: GetPromptRequestParams,
) -> Result<GetPromptResult, ErrorData> {
    let asked = params.name.clone();
    for (server, sc) in app.mcp().servers() {
        let prefix = sc.offered_name(server, "");
        let Some(own) = asked.strip_prefix(prefix.as_str()) else { continue };
        if !app.mcp().offers(server, true).await {
            continue;
        }
        let listed =
            app.mcp().list_prompts(server).await.map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        if !listed.iter().any(|p| p.name == own) {
            continue;
        }
        params.name = own.to_owned();
        return app.mcp().get_prompt(server, params).await.map_err(|e| ErrorData::internal_error(e.to_string(), None));
    }
    Err(ErrorData::invalid_params(format!("no prompt '{asked}'; prompts/list names the prompts there are"), None))
}

/// Every server's resources, URIs unchanged.
pub(crate) async fn list_resources(app: &Arc<App>) -> ListResourcesResult {
    let mut resources = Vec::new();
    for server in app.mcp().servers().keys() {
        if !app.mcp().offers(server, false).await {
            continue;
        }
        match app.mcp().list_resources(server).await {
            Ok(listed) => resources.extend(listed),
            Err(e) => eprintln!("jp mcp: the resources of MCP server '{server}' are not offered: {e}"),
        }
    }
    ListResourcesResult::with_all_items(resources)
}

/// Resource `params.uri`, from the server that lists it.
pub(crate) async fn read_resource(
    app: &Arc<App>,
    params: ReadResourceRequestParams,
) -> Result<ReadResourceResult, ErrorData> {
    for server in app.mcp().servers().keys() {
        if !app.mcp().offers(server, false).await {
            continue;
        }
        let Ok(listed) = app.mcp().list_resources(server).await else { continue };
        if listed.iter().any(|r| r.uri == params.uri) {
            return app
                .mcp()
                .read_resource(server, params)
                .await
                .map_err(|e| ErrorData::internal_error(e.to_string(), None));
        }
    }
    Err(ErrorData::resource_not_found(
        format!("no resource '{}'; resources/list names the resources there are", params.uri),
        None,
    ))
}
