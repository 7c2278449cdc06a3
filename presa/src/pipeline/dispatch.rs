//! The methods the server answers itself, other than `tools/call` (`call`): params
//! validation for each, the registry's handler, and the result (wire section 5), with
//! pagination (section 6) and caching hints (section 7).

use super::Core;
use crate::context::RequestContext;
use crate::error::Error;
use crate::registry::completion::CompletionRequest;
use crate::registry::prompt::PromptGet;
use crate::registry::resource::ResourceRead;
use crate::registry::{Catalog, Listed, Listing};
use crate::shape::Shaper;
use crate::subscriptions;
use crate::wire::meta::SUPPORTED_VERSIONS;
use crate::wire::types::CachePolicy;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// Most completion values sent in one result.
pub const MAX_COMPLETION_VALUES: usize = 100;

/// Runs a served method other than `tools/call` (which `call` starts). A method not
/// served here is answered -32601.
pub(super) async fn method(
    core: &Core,
    shaper: &Shaper,
    catalog: &Arc<Catalog>,
    method: &str,
    params: Map<String, Value>,
    retry: bool,
    ctx: RequestContext,
) -> Result<String, Error> {
    let config = &core.config;
    match method {
        "server/discover" => discover(core, catalog),
        "tools/list" => list(
            core,
            shaper,
            &catalog.tools,
            "tools",
            &params,
            config.tools_cache,
        ),
        "prompts/list" => list(
            core,
            shaper,
            &catalog.prompts,
            "prompts",
            &params,
            config.prompts_cache,
        ),
        "resources/list" => list(
            core,
            shaper,
            &catalog.resources,
            "resources",
            &params,
            config.resources_cache,
        ),
        "resources/templates/list" => list(
            core,
            shaper,
            &catalog.templates,
            "resourceTemplates",
            &params,
            config.templates_cache,
        ),
        "resources/read" => read_resource(core, shaper, catalog, params, ctx, retry).await,
        "prompts/get" => get_prompt(core, shaper, catalog, params, ctx).await,
        "completion/complete" => complete(core, shaper, catalog, params, ctx).await,
        "subscriptions/listen" => {
            let mut filter = subscriptions::parse_filter(&params, offer(core, catalog))?;
            if let Some(Value::Object(n)) = params.get("notifications") {
                for extension in &core.extensions {
                    if let Some((key, topics)) = extension.listen_filter(n, &ctx).await? {
                        filter.add_topics(key, topics);
                    }
                }
            }
            // Boxed: a stream's future is the largest of the methods', and the space of
            // the largest is what every request's future carries.
            let result = Box::pin(subscriptions::listen(&core.hub, filter, &ctx)).await?;
            core.shaper.object(result)
        }
        other => Err(Error::method_not_found(other)),
    }
}

/// What list-changed and resource events the server can produce now.
pub(super) fn offer(core: &Core, catalog: &Catalog) -> subscriptions::Offer {
    let resources = !catalog.resources.is_empty() || !catalog.templates.is_empty();
    let events = core.config.resource_notifications;
    // An extension that changes its resources while the server runs notifies the list.
    let changing = core.extensions.iter().any(|e| e.changes_resources());
    subscriptions::Offer {
        // Tools and prompts can be added and removed at run time, which notifies.
        tools: !catalog.tools.is_empty(),
        prompts: !catalog.prompts.is_empty(),
        resources_list: resources && (events || changing),
        resources_subscribe: resources && events,
    }
}

fn discover(core: &Core, catalog: &Catalog) -> Result<String, Error> {
    let offer = offer(core, catalog);
    let mut caps = Map::new();
    if offer.tools {
        caps.insert("tools".into(), json!({"listChanged": true}));
    }
    if offer.prompts {
        caps.insert("prompts".into(), json!({"listChanged": true}));
    }
    if !catalog.resources.is_empty() || !catalog.templates.is_empty() {
        let mut r = Map::new();
        if offer.resources_list {
            r.insert("listChanged".into(), Value::Bool(true));
        }
        if offer.resources_subscribe {
            r.insert("subscribe".into(), Value::Bool(true));
        }
        caps.insert("resources".into(), Value::Object(r));
    }
    if catalog.has_completions() {
        caps.insert("completions".into(), json!({}));
    }
    if core.config.logging {
        caps.insert("logging".into(), json!({}));
    }
    let extensions: Map<String, Value> = core
        .extensions
        .iter()
        .map(|e| (e.id().to_owned(), e.settings()))
        .collect();
    if !extensions.is_empty() {
        caps.insert("extensions".into(), Value::Object(extensions));
    }
    let mut result = Map::new();
    result.insert("supportedVersions".into(), json!(SUPPORTED_VERSIONS));
    result.insert("capabilities".into(), Value::Object(caps));
    if let Some(i) = &core.config.instructions {
        result.insert("instructions".into(), Value::from(i.as_str()));
    }
    core.shaper
        .cached_object(result, core.config.discover_cache)
}

/// Reads the optional `cursor` of a list request.
fn cursor(params: &Map<String, Value>) -> Result<Option<&str>, Error> {
    match params.get("cursor") {
        None => Ok(None),
        Some(Value::String(c)) => Ok(Some(c)),
        Some(_) => Err(Error::invalid_params("Cursor must be a string")),
    }
}

/// One page of a listing.
fn list<T: Listed>(
    core: &Core,
    shaper: &Shaper,
    listing: &Listing<T>,
    key: &str,
    params: &Map<String, Value>,
    cache: CachePolicy,
) -> Result<String, Error> {
    let page = listing.page(key, cursor(params)?, core.config.page_size)?;
    let items = page.items.iter().map(|i| i.listing());
    shaper.page(key, items, page.next_after, cache)
}

/// A member that must be a non-empty string.
pub(super) fn required_string<'a>(
    member: Option<&'a Value>,
    message: &'static str,
) -> Result<&'a str, Error> {
    match member {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(Error::invalid_params(message)),
    }
}

async fn read_resource(
    core: &Core,
    shaper: &Shaper,
    catalog: &Catalog,
    params: Map<String, Value>,
    ctx: RequestContext,
    retry: bool,
) -> Result<String, Error> {
    let uri = required_string(
        params.get("uri"),
        "resources/read requires a non-empty string uri",
    )?
    .to_owned();
    // Recorded only when opted in: a URI may carry what the client asked for.
    crate::observe::target(
        &super::request_span(),
        crate::observe::Target::Resource,
        &uri,
    );
    if !crate::wire::uri::is_absolute_uri(&uri) {
        return Err(Error::invalid_params(
            "resources/read uri must be an absolute URI",
        ));
    }
    let (handler, cache, variables) = if let Some(entry) = catalog.resources.get(&uri) {
        core.authorize(ctx.principal(), &entry.resource.scopes)?;
        (
            Arc::clone(&entry.handler),
            entry.resource.cache,
            HashMap::new(),
        )
    } else {
        let found = catalog
            .templates
            .iter()
            .find_map(|t| t.parsed.matches(&uri).map(|vars| (t, vars)));
        let Some((entry, vars)) = found else {
            return Err(not_found(shaper, &uri));
        };
        core.authorize(ctx.principal(), &entry.template.scopes)?;
        (
            Arc::clone(&entry.handler),
            entry.template.cache,
            vars.into_iter().collect(),
        )
    };
    let result = handler(ResourceRead {
        uri: uri.clone(),
        variables,
        ctx,
    })
    .await?;
    // An empty `contents` is how older servers said "not found", which the revision
    // forbids (errata: it MUST NOT be sent for a missing resource): a handler that finds
    // nothing to return is answered as not found.
    if result.contents.is_empty() {
        return Err(not_found(shaper, &uri));
    }
    // A result produced by a retry must not be cached (errata W-10).
    let policy = if retry {
        CachePolicy::NONE
    } else {
        cache.unwrap_or(core.config.read_cache)
    };
    shaper.read(&result.contents, policy)
}

/// The error for a resource that does not exist: -32602 in 2026-07-28, and -32002 in the
/// legacy revisions, which define it.
fn not_found(shaper: &Shaper, uri: &str) -> Error {
    let error = Error::resource_not_found(uri);
    if shaper.is_modern() {
        error
    } else {
        Error::new(
            crate::error::code::RESOURCE_NOT_FOUND_LEGACY,
            error.message().to_owned(),
        )
        .with_data(json!({ "uri": uri }))
    }
}

async fn get_prompt(
    core: &Core,
    shaper: &Shaper,
    catalog: &Catalog,
    params: Map<String, Value>,
    ctx: RequestContext,
) -> Result<String, Error> {
    let name = required_string(
        params.get("name"),
        "prompts/get requires a non-empty string name",
    )?
    .to_owned();
    let arguments = string_map(
        params.get("arguments"),
        "prompts/get arguments must map strings to strings",
    )?;
    let entry = catalog
        .prompts
        .get(&name)
        .cloned()
        .ok_or_else(|| Error::invalid_params(format!("Unknown prompt: {name}")))?;
    // Only a prompt the server has names the span: a client's arbitrary string does not.
    crate::observe::target(
        &super::request_span(),
        crate::observe::Target::Prompt,
        &entry.prompt.name,
    );
    core.authorize(ctx.principal(), &entry.prompt.scopes)?;
    let missing: Vec<&str> = entry
        .prompt
        .arguments
        .iter()
        .filter(|a| a.required && !arguments.contains_key(&a.name))
        .map(|a| a.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(Error::invalid_params("Missing required prompt arguments")
            .with_data(json!({ "missing": missing })));
    }
    // `server/prompts.mdx`: servers SHOULD validate prompt arguments. An argument the
    // prompt does not declare is a client's mistake (a misspelt name would otherwise be
    // dropped without a word), reported as the missing ones are.
    let mut unknown: Vec<&str> = arguments
        .keys()
        .map(String::as_str)
        .filter(|k| !entry.prompt.arguments.iter().any(|a| a.name == *k))
        .collect();
    if !unknown.is_empty() {
        unknown.sort_unstable();
        return Err(Error::invalid_params("Unknown prompt arguments")
            .with_data(json!({ "unknown": unknown })));
    }
    let result = (entry.handler)(PromptGet {
        name,
        arguments,
        ctx,
    })
    .await?;
    if let Some(problem) = result.messages.iter().find_map(|m| m.content.check().err()) {
        tracing::error!(prompt = %entry.prompt.name, %problem, "prompt message content breaks the schema");
        return Err(Error::internal());
    }
    match serde_json::to_value(result) {
        Ok(Value::Object(m)) => shaper.object(m),
        _ => Err(Error::internal()),
    }
}

fn string_map(
    value: Option<&Value>,
    message: &'static str,
) -> Result<HashMap<String, String>, Error> {
    match value {
        None | Some(Value::Null) => Ok(HashMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(Error::invalid_params(message)),
            })
            .collect(),
        Some(_) => Err(Error::invalid_params(message)),
    }
}

async fn complete(
    core: &Core,
    shaper: &Shaper,
    catalog: &Catalog,
    params: Map<String, Value>,
    ctx: RequestContext,
) -> Result<String, Error> {
    let Some(Value::Object(reference)) = params.get("ref") else {
        return Err(Error::invalid_params(
            "Completion requires a prompt or resource-template reference",
        ));
    };
    let (argument, value) = match params.get("argument") {
        Some(Value::Object(a)) => match (a.get("name"), a.get("value")) {
            (Some(Value::String(n)), Some(Value::String(v))) => (n.clone(), v.clone()),
            _ => {
                return Err(Error::invalid_params(
                    "Completion argument requires string name and value",
                ));
            }
        },
        _ => {
            return Err(Error::invalid_params(
                "Completion argument requires string name and value",
            ));
        }
    };
    let context = match params.get("context") {
        None | Some(Value::Null) => HashMap::new(),
        Some(Value::Object(c)) => string_map(
            c.get("arguments"),
            "Completion context arguments must map strings to strings",
        )?,
        Some(_) => {
            return Err(Error::invalid_params(
                "Completion context must be an object",
            ));
        }
    };
    let handler = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let name = reference
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    Error::invalid_params(
                        "Completion requires a prompt or resource-template reference",
                    )
                })?;
            let entry = catalog.prompts.get(name).ok_or_else(|| {
                Error::invalid_params(format!("Unknown completion prompt: {name}"))
            })?;
            core.authorize(ctx.principal(), &entry.prompt.scopes)?;
            entry.prompt.completions.get(&argument).cloned()
        }
        Some("ref/resource") => {
            let uri = reference
                .get("uri")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    Error::invalid_params(
                        "Completion requires a prompt or resource-template reference",
                    )
                })?;
            // A URI template, or a concrete URI matched against the templates.
            let entry = catalog
                .templates
                .get(uri)
                .or_else(|| {
                    catalog
                        .templates
                        .iter()
                        .find(|t| t.parsed.matches(uri).is_some())
                })
                .ok_or_else(|| {
                    Error::invalid_params("Unknown completion resource template")
                        .with_data(json!({ "uri": uri }))
                })?;
            core.authorize(ctx.principal(), &entry.template.scopes)?;
            entry.template.completions.get(&argument).cloned()
        }
        _ => {
            return Err(Error::invalid_params(
                "Completion reference type is not supported",
            ));
        }
    };
    let handler =
        handler.ok_or_else(|| Error::invalid_params("Argument does not support completion"))?;
    let mut completion = handler(CompletionRequest {
        argument,
        value,
        context,
        ctx,
    })
    .await?;
    if completion.values.len() > MAX_COMPLETION_VALUES {
        let total = completion.values.len() as u64;
        completion.values.truncate(MAX_COMPLETION_VALUES);
        completion.has_more = Some(true);
        completion.total = Some(completion.total.unwrap_or(total).max(total));
    }
    if let Some(total) = completion.total {
        completion.total = Some(total.max(completion.values.len() as u64));
    }
    let mut result = Map::new();
    result.insert(
        "completion".into(),
        serde_json::to_value(completion).map_err(|_| Error::internal())?,
    );
    shaper.object(result)
}
