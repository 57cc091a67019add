//! The prompts and resources of wrapped MCP servers (`[mcp.servers.*]`), offered through
//! `jp mcp` (issue 25): a prompt under the server's prefix like its tools (`files.summarize`),
//! resource URIs and templates unchanged, subscriptions, completions and the logging level
//! passed on. Each list is paged by hand under the same caps as `tools/list`; a server that
//! cannot be started, or does not declare the feature, offers nothing (and says why on stderr);
//! each request passed on is traced (`--trace`).

// Logging and resource subscriptions are deprecated by SEP-2577, but 2025-11-25 clients speak them.
#![allow(deprecated)]

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, LoggingLevel, ReadResourceRequestParams, ReadResourceResult,
    Reference,
};

use crate::app::App;
use crate::runtime::mcp::forward::AgentSession;
use crate::runtime::mcp::requests::Offer;

/// Whether any server is configured (then `jp mcp` declares prompts, resources, logging and
/// completions).
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
            format!(
                "{method}: no MCP server is configured, so jp offers no prompts, resources, logging or completions"
            ),
            None,
        ))
    }
}

/// Every server's prompts, named as its tools are (`<prefix><name>`).
pub(crate) async fn list_prompts(app: &Arc<App>) -> ListPromptsResult {
    let mut prompts = Vec::new();
    for (server, sc) in app.mcp().servers() {
        if !app.mcp().offers(server, Offer::Prompts).await {
            continue;
        }
        match app.mcp().list_prompts(server).await {
            Ok(listed) => prompts.extend(listed.into_iter().map(|mut p| {
                p.name = sc.offered_name(server, &p.name);
                p
            })),
            Err(e) => {
                crate::app::warn(format_args!("jp mcp: the prompts of MCP server '{server}' are not offered: {e}"))
            }
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
        if !app.mcp().offers(server, Offer::Prompts).await {
            continue;
        }
        let listed =
            app.mcp().list_prompts(server).await.map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        if !listed.iter().any(|p| p.name == own) {
            continue;
        }
        params.name = own.to_owned();
        app.mcp().trace(server, "prompts/get", own);
        return app.mcp().get_prompt(server, params).await.map_err(|e| ErrorData::internal_error(e.to_string(), None));
    }
    Err(ErrorData::invalid_params(format!("no prompt '{asked}'; prompts/list names the prompts there are"), None))
}

/// Every server's resources, URIs unchanged.
pub(crate) async fn list_resources(app: &Arc<App>) -> ListResourcesResult {
    let mut resources = Vec::new();
    for server in app.mcp().servers().keys() {
        if !app.mcp().offers(server, Offer::Resources).await {
            continue;
        }
        match app.mcp().list_resources(server).await {
            Ok(listed) => resources.extend(listed),
            Err(e) => {
                crate::app::warn(format_args!("jp mcp: the resources of MCP server '{server}' are not offered: {e}"))
            }
        }
    }
    ListResourcesResult::with_all_items(resources)
}

/// Resource `params.uri`, from the server that lists it or has a template it fits.
pub(crate) async fn read_resource(
    app: &Arc<App>,
    params: ReadResourceRequestParams,
) -> Result<ReadResourceResult, ErrorData> {
    let Some(server) = owner_of(app, &params.uri).await else {
        return Err(ErrorData::resource_not_found(
            format!(
                "no resource '{}'; resources/list and resources/templates/list name the resources there are",
                params.uri
            ),
            None,
        ));
    };
    app.mcp().trace(&server, "resources/read", &params.uri);
    app.mcp().read_resource(&server, params).await.map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// Every server's resource templates, unchanged.
pub(crate) async fn list_resource_templates(app: &Arc<App>) -> ListResourceTemplatesResult {
    let mut templates = Vec::new();
    for server in app.mcp().servers().keys() {
        if !app.mcp().offers(server, Offer::Resources).await {
            continue;
        }
        match app.mcp().list_resource_templates(server).await {
            Ok(listed) => templates.extend(listed),
            Err(e) => crate::app::warn(format_args!(
                "jp mcp: the resource templates of MCP server '{server}' are not offered: {e}"
            )),
        }
    }
    ListResourceTemplatesResult::with_all_items(templates)
}

/// Whether `uri` fits the URI template `template` (RFC 6570: each `{…}` stands for one or more
/// characters; `{+…}`, `{/…}` and the like as well).
fn fits(template: &str, uri: &str) -> bool {
    let Some((head, rest)) = template.split_once('{') else { return template == uri };
    let Some(tail) = uri.strip_prefix(head) else { return false };
    let Some((_, after)) = rest.split_once('}') else { return false };
    // The variable takes one or more characters; the rest of the template must fit what is left.
    (1..=tail.len()).filter(|i| tail.is_char_boundary(*i)).any(|i| fits(after, &tail[i..]))
}

/// The server that offers resource `uri`: it lists it, or one of its templates fits it.
async fn owner_of(app: &Arc<App>, uri: &str) -> Option<String> {
    for server in app.mcp().servers().keys() {
        if !app.mcp().offers(server, Offer::Resources).await {
            continue;
        }
        if let Ok(listed) = app.mcp().list_resources(server).await
            && listed.iter().any(|r| r.uri == uri)
        {
            return Some(server.clone());
        }
        if let Ok(templates) = app.mcp().list_resource_templates(server).await
            && templates.iter().any(|t| fits(&t.uri_template, uri))
        {
            return Some(server.clone());
        }
    }
    None
}

/// Subscribe `session` to resource `uri` (or unsubscribe it): passed on to the server that
/// offers it, which must declare subscriptions — or, for a URI no server lists, to the only
/// server that takes subscriptions.
pub(crate) async fn subscribe(
    app: &Arc<App>,
    session: &Arc<AgentSession>,
    uri: &str,
    subscribe: bool,
) -> Result<(), ErrorData> {
    let method = if subscribe { "resources/subscribe" } else { "resources/unsubscribe" };
    let server = match owner_of(app, uri).await {
        Some(server) => server,
        // A resource a server does not list (one it makes on the way, say): the one server
        // that takes subscriptions, when there is exactly one; otherwise nobody can tell whose.
        None => {
            let mut subscribers = Vec::new();
            for server in app.mcp().servers().keys() {
                if app.mcp().offers(server, Offer::Subscribe).await {
                    subscribers.push(server.clone());
                }
            }
            match subscribers.as_slice() {
                [one] => one.clone(),
                _ => {
                    return Err(ErrorData::resource_not_found(
                        format!(
                            "{method}: no server lists '{uri}'{}; resources/list and resources/templates/list name what there is",
                            if subscribers.is_empty() {
                                String::new()
                            } else {
                                format!(", and several take subscriptions ({})", subscribers.join(", "))
                            }
                        ),
                        None,
                    ));
                }
            }
        }
    };
    if !app.mcp().offers(&server, Offer::Subscribe).await {
        return Err(ErrorData::invalid_params(
            format!("{method}: MCP server '{server}', which offers '{uri}', does not support subscriptions"),
            None,
        ));
    }
    session.subscribe(uri, subscribe);
    app.mcp().trace(&server, method, uri);
    app.mcp().subscribe(&server, uri, subscribe).await.map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// `completion/complete`: a prompt's argument to the server owning the prompt (its own name),
/// a resource template's to the server whose template it is.
pub(crate) async fn complete(app: &Arc<App>, mut params: CompleteRequestParams) -> Result<CompleteResult, ErrorData> {
    let server = match &mut params.r#ref {
        Reference::Prompt(prompt) => {
            let asked = prompt.name.clone();
            let mut found = None;
            for (server, sc) in app.mcp().servers() {
                let prefix = sc.offered_name(server, "");
                let Some(own) = asked.strip_prefix(prefix.as_str()) else { continue };
                if !app.mcp().offers(server, Offer::Prompts).await {
                    continue;
                }
                let Ok(listed) = app.mcp().list_prompts(server).await else { continue };
                if listed.iter().any(|p| p.name == own) {
                    found = Some((server.clone(), own.to_owned()));
                    break;
                }
            }
            let Some((server, own)) = found else {
                return Err(ErrorData::invalid_params(
                    format!("completion/complete: no prompt '{asked}'; prompts/list names the prompts there are"),
                    None,
                ));
            };
            prompt.name = own;
            server
        }
        Reference::Resource(resource) => {
            let uri = resource.uri.clone();
            let mut found = None;
            for server in app.mcp().servers().keys() {
                if !app.mcp().offers(server, Offer::Resources).await {
                    continue;
                }
                let Ok(templates) = app.mcp().list_resource_templates(server).await else { continue };
                if templates.iter().any(|t| t.uri_template == uri || fits(&t.uri_template, &uri)) {
                    found = Some(server.clone());
                    break;
                }
            }
            let Some(server) = found else {
                return Err(ErrorData::invalid_params(
                    format!(
                        "completion/complete: no resource template '{uri}'; resources/templates/list names the templates there are"
                    ),
                    None,
                ));
            };
            server
        }
        _ => {
            return Err(ErrorData::invalid_params(
                "completion/complete: jp passes on completions of ref/prompt and ref/resource only",
                None,
            ));
        }
    };
    if !app.mcp().offers(&server, Offer::Completions).await {
        return Err(ErrorData::invalid_params(
            format!("completion/complete: MCP server '{server}' does not offer completions"),
            None,
        ));
    }
    app.mcp().trace(&server, "completion/complete", &params.argument.name);
    app.mcp().complete(&server, params).await.map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// `logging/setLevel` of `session`: remembered (for servers started later) and passed on to
/// every running server that declared logging, at the lowest level any session asked for.
pub(crate) async fn set_level(
    app: &Arc<App>,
    session: &Arc<AgentSession>,
    level: LoggingLevel,
) -> Result<(), ErrorData> {
    session.set_level(level);
    app.mcp().hub().join(session);
    let level = app.mcp().hub().set_level(level);
    for server in app.mcp().running().await {
        if !app.mcp().offers(&server, Offer::Logging).await {
            continue;
        }
        app.mcp().trace(&server, "logging/setLevel", &format!("{level:?}").to_lowercase());
        if let Err(e) = app.mcp().set_level(&server, level).await {
            crate::app::warn(format_args!("jp mcp: {e}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::fits;

    #[test]
    fn uris_fit_templates() {
        assert!(fits("demo://resource/dynamic/text/{index}", "demo://resource/dynamic/text/3"));
        assert!(fits("file:///{path}/x", "file:///a/b/x"));
        assert!(!fits("demo://resource/dynamic/text/{index}", "demo://resource/dynamic/text/"));
        assert!(!fits("demo://a/{x}", "other://a/1"));
        assert!(fits("plain://uri", "plain://uri"));
    }
}
