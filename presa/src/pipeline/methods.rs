//! The methods of 2026-07-28: params validation for each, dispatch to the registry, and
//! the result shapes (section 5), pagination (section 6) and caching hints (section 7).

use super::headers;
use super::{Closing, Step};
use crate::context::RequestContext;
use crate::error::Error;
use crate::extension::{Intercepted, ToolInvocation, check_result, start_handler};
use crate::registry::completion::CompletionRequest;
use crate::registry::prompt::PromptGet;
use crate::registry::resource::ResourceRead;
use crate::registry::tool::{ToolEntry, ToolOutput};
use crate::registry::{Catalog, Listed, Listing};
use crate::server::Server;
use crate::subscriptions;
use crate::wire::jsonrpc::RequestParams;
use crate::wire::meta::SUPPORTED_VERSIONS;
use crate::wire::types::CachePolicy;
use axum::http::HeaderMap;
use futures_util::FutureExt;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// Most completion values sent in one result.
pub const MAX_COMPLETION_VALUES: usize = 100;

/// The tool a `tools/call` names, when it exists.
#[inline]
pub(super) fn target_tool<'c>(
    catalog: &'c Catalog,
    method: &str,
    params: &RequestParams,
) -> Option<&'c Arc<ToolEntry>> {
    if method != "tools/call" {
        return None;
    }
    let name = params.get("name").and_then(Value::as_str)?;
    catalog.tools.get(name)
}

/// Whether the capability behind `method` is advertised now.
#[inline]
pub(super) fn offered(server: &Server, catalog: &Catalog, method: &str) -> bool {
    let _ = server;
    match method {
        "tools/list" | "tools/call" => !catalog.tools.is_empty(),
        "prompts/list" | "prompts/get" => !catalog.prompts.is_empty(),
        "resources/list" | "resources/templates/list" | "resources/read" => {
            !catalog.resources.is_empty() || !catalog.templates.is_empty()
        }
        "completion/complete" => catalog.has_completions(),
        _ => true,
    }
}

/// Runs a served method other than `tools/call`, which the pipeline starts with
/// [`start_call`] (its params may hold members apart; see `RequestParams`). A `tools/call` reaching
/// here would be answered -32601.
pub(super) async fn dispatch(
    server: &Server,
    catalog: &Arc<Catalog>,
    method: &str,
    params: Map<String, Value>,
    ctx: RequestContext,
    retry: bool,
) -> Result<String, Error> {
    match method {
        "server/discover" => discover(server, catalog),
        "tools/list" => list(
            server,
            &catalog.tools,
            "tools",
            &params,
            server.config().tools_cache,
        ),
        "prompts/list" => list(
            server,
            &catalog.prompts,
            "prompts",
            &params,
            server.config().prompts_cache,
        ),
        "resources/list" => list(
            server,
            &catalog.resources,
            "resources",
            &params,
            server.config().resources_cache,
        ),
        "resources/templates/list" => list(
            server,
            &catalog.templates,
            "resourceTemplates",
            &params,
            server.config().templates_cache,
        ),
        "resources/read" => read_resource(server, catalog, params, ctx, retry).await,
        "prompts/get" => get_prompt(server, catalog, params, ctx).await,
        "completion/complete" => complete(server, catalog, params, ctx).await,
        "subscriptions/listen" => {
            let mut filter = subscriptions::parse_filter(&params, offer(server, catalog))?;
            if let Some(Value::Object(n)) = params.get("notifications") {
                for extension in server.extensions() {
                    if let Some((key, topics)) = extension.listen_filter(n, &ctx)? {
                        filter.add_topics(key, topics);
                    }
                }
            }
            // Boxed: a stream's future is the largest of the methods', and the space of
            // the largest is what every request's future carries.
            let result = Box::pin(subscriptions::listen(&server.inner.hub, filter, &ctx)).await;
            server.shape(result)
        }
        other => Err(Error::method_not_found(other)),
    }
}

/// What list-changed and resource events the server can produce now.
fn offer(server: &Server, catalog: &Catalog) -> subscriptions::Offer {
    let resources = !catalog.resources.is_empty() || !catalog.templates.is_empty();
    let events = server.config().resource_notifications;
    subscriptions::Offer {
        // Tools and prompts can be added and removed at run time, which notifies.
        tools: !catalog.tools.is_empty(),
        prompts: !catalog.prompts.is_empty(),
        resources_list: resources && events,
        resources_subscribe: resources && events,
    }
}

fn discover(server: &Server, catalog: &Catalog) -> Result<String, Error> {
    let offer = offer(server, catalog);
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
    if server.config().logging {
        caps.insert("logging".into(), json!({}));
    }
    let extensions: Map<String, Value> = server
        .extensions()
        .map(|e| (e.id().to_owned(), e.settings()))
        .collect();
    if !extensions.is_empty() {
        caps.insert("extensions".into(), Value::Object(extensions));
    }
    let mut result = Map::new();
    result.insert("supportedVersions".into(), json!(SUPPORTED_VERSIONS));
    result.insert("capabilities".into(), Value::Object(caps));
    if let Some(i) = &server.config().instructions {
        result.insert("instructions".into(), Value::from(i.as_str()));
    }
    let out = super::open_object(result).ok_or_else(Error::internal)?;
    server.end_cached_result(out, server.config().discover_cache)
}

/// Reads the optional `cursor` of a list request.
fn cursor(params: &Map<String, Value>) -> Result<Option<&str>, Error> {
    match params.get("cursor") {
        None => Ok(None),
        Some(Value::String(c)) => Ok(Some(c)),
        Some(_) => Err(Error::invalid_params("Cursor must be a string")),
    }
}

/// One page of a listing: the prepared item JSON is copied as is, and the rest of the
/// result (the next cursor, the caching hints, `resultType`, serverInfo) is written by
/// hand after it.
fn list<T: Listed>(
    server: &Server,
    listing: &Listing<T>,
    key: &str,
    params: &Map<String, Value>,
    cache: CachePolicy,
) -> Result<String, Error> {
    let page = listing.page(key, cursor(params)?, server.config().page_size)?;
    let items_len: usize = page.items.iter().map(|i| i.listing().get().len() + 1).sum();
    let cursor_len = page
        .next_after
        .map_or(0, |k| crate::registry::cursor_len(key, k.len()) + 16);
    // The items, the tail's members and serverInfo; and room for the envelope's head,
    // which is put in front of this text once it is done.
    let info_len = server.inner.server_info_raw.get().len();
    let mut out = String::with_capacity(items_len + key.len() + cursor_len + info_len + 192);
    out.push_str("{\"");
    out.push_str(key);
    out.push_str("\":[");
    for (i, item) in page.items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item.listing().get());
    }
    out.push(']');
    if let Some(last) = page.next_after {
        out.push_str(",\"nextCursor\":\"");
        crate::registry::push_cursor(&mut out, key, last);
        out.push('"');
    }
    server.end_cached_result(out, cache)
}

/// A member that must be a non-empty string.
fn required_string<'a>(member: Option<&'a Value>, message: &'static str) -> Result<&'a str, Error> {
    match member {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(Error::invalid_params(message)),
    }
}

/// Structural checks of `inputResponses` and `requestState` (wire section 10.3), run at
/// admission for the three methods that may take part in a multi round-trip request.
/// The shapes of a request's `inputResponses` and `requestState` members.
pub(super) fn check_mrtr_params(
    responses: Option<&Value>,
    state: Option<&Value>,
) -> Result<(), Error> {
    match responses {
        None => {}
        Some(Value::Object(m)) if !m.values().all(Value::is_object) => {
            return Err(Error::invalid_params(
                "inputResponses must map string IDs to bare result objects",
            ));
        }
        Some(Value::Object(_)) => {}
        Some(_) => return Err(Error::invalid_params("inputResponses must be an object")),
    }
    if state.is_some_and(|s| !s.is_string()) {
        return Err(Error::invalid_params("requestState must be a string"));
    }
    Ok(())
}

/// A `tools/call`, started: everything before the handler runs happens here, then the
/// handler is polled once, in place. A handler that completes at that poll (most do) is
/// answered at once, with no future of the pipeline's own; one that waits comes back as
/// the rest of the call, which holds only what the handler needs and polls it again
/// (with its task's waker) before anything else. The result is written in `buffer`
/// ([`Exchange::buffer`](super::Exchange::buffer)).
#[inline]
pub(super) fn start_call(
    server: &Server,
    params: RequestParams,
    headers: Option<&HeaderMap>,
    tool: Option<Arc<ToolEntry>>,
    closing: Closing,
    buffer: String,
) -> Step<Result<String, Error>> {
    let ctx = closing.ctx.clone();
    let (entry, arguments, ctx) = match prepare_call(server, params, headers, ctx, tool) {
        Err(error) => return Step::Done(closing.close(server, Err(error))),
        Ok(Prepared::Answered(answer)) => return Step::Done(closing.close(server, answer)),
        Ok(Prepared::Run(entry, arguments, ctx)) => (entry, arguments, ctx),
    };
    let mut handler = start_handler(&entry, arguments, ctx);
    if let Some(result) = handler.as_mut().now_or_never() {
        return Step::Done(closing.close(server, shape_call(server, &entry, result, buffer)));
    }
    let server = server.clone();
    let sink = Arc::clone(closing.ctx.outbound());
    Step::Rest(
        Box::pin(async move {
            let result = handler.await;
            closing.close(&server, shape_call(&server, &entry, result, buffer))
        }),
        sink,
    )
}

/// A handler's outcome, its structured result checked, shaped as the `tools/call` result
/// (in `buffer`).
#[inline]
fn shape_call(
    server: &Server,
    entry: &ToolEntry,
    result: Result<ToolOutput, Error>,
    buffer: String,
) -> Result<String, Error> {
    check_result(entry, result).and_then(|output| match output {
        ToolOutput::Text(text) => server.shape_text_result(&text, buffer),
        ToolOutput::Result(result) => server.shape_call_result(&result, buffer),
    })
}

/// What a `tools/call` comes to before its handler runs.
enum Prepared {
    /// Answered already: arguments that fail the schema, or an extension's answer.
    Answered(Result<String, Error>),
    /// The handler's inputs.
    Run(Arc<ToolEntry>, Map<String, Value>, RequestContext),
}

/// Everything before a `tools/call`'s handler runs, in the order its errors are reported:
/// the name, the arguments' shape, an unknown tool, the HTTP header mirror, the input
/// schema (an `isError` result), then the extensions' interception. `tool` is what
/// admission found under the name in the catalog, if anything.
#[inline]
fn prepare_call(
    server: &Server,
    mut params: RequestParams,
    headers: Option<&HeaderMap>,
    ctx: RequestContext,
    tool: Option<Arc<ToolEntry>>,
) -> Result<Prepared, Error> {
    // Admission looked the name up already, in the same snapshot of the catalog. When it
    // found nothing, the name is checked here, and an unknown one is reported after the
    // arguments are checked.
    let entry = if let Some(entry) = tool {
        super::request_span().record("mcp.name", entry.tool.name.as_str());
        Ok(entry)
    } else {
        let name = required_string(
            params.get("name"),
            "tools/call requires a non-empty string name",
        )?;
        super::request_span().record("mcp.name", name);
        Err(format!("Unknown tool: {name}"))
    };
    let arguments = match params.take("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(a)) => a,
        Some(_) => {
            return Err(Error::invalid_params(
                "tools/call arguments must be an object",
            ));
        }
    };
    let entry = entry.map_err(Error::invalid_params)?;
    let name = entry.tool.name.as_str();
    if let Some(h) = headers {
        headers::params_match(h, &entry.headers, &arguments)?;
    }
    let args_value = Value::Object(arguments);
    if let Err(problems) = entry.input.validate(&args_value) {
        let result = crate::wire::types::CallToolResult::error(format!(
            "Invalid arguments for tool {name}: {problems}"
        ));
        return Ok(Prepared::Answered(
            server.shape_call_result(&result, String::new()),
        ));
    }
    let Value::Object(arguments) = args_value else {
        return Err(Error::internal());
    };
    if server.inner.extensions.is_empty() {
        return Ok(Prepared::Run(entry, arguments, ctx));
    }
    // Extensions see the validated call and may answer it themselves (Tasks does).
    let mut invocation = ToolInvocation {
        entry,
        arguments,
        params: params.into_map(),
        ctx,
        server: server.clone(),
    };
    for extension in &server.inner.extensions {
        match extension.intercept_tool_call(invocation)? {
            Intercepted::Continue(i) => invocation = i,
            Intercepted::Result(result) => return Ok(Prepared::Answered(server.shape(result))),
        }
    }
    Ok(Prepared::Run(
        invocation.entry,
        invocation.arguments,
        invocation.ctx,
    ))
}

async fn read_resource(
    server: &Server,
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
    super::request_span().record("mcp.name", uri.as_str());
    if !crate::wire::uri::is_absolute_uri(&uri) {
        return Err(Error::invalid_params(
            "resources/read uri must be an absolute URI",
        ));
    }
    let (handler, cache, variables) = if let Some(entry) = catalog.resources.get(&uri) {
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
            return Err(Error::resource_not_found(&uri));
        };
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
        return Err(Error::resource_not_found(&uri));
    }
    // A result produced by a retry must not be cached (errata W-10).
    let policy = if retry {
        CachePolicy::NONE
    } else {
        cache.unwrap_or(server.config().read_cache)
    };
    // Written straight from the typed contents, as a listing is, rather than through a
    // `Value` tree and a map to be shaped.
    let mut out = String::with_capacity(256);
    out.push_str("{\"contents\":[");
    for (i, item) in result.contents.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        item.push_json(&mut out).map_err(|_| Error::internal())?;
    }
    out.push(']');
    server.end_cached_result(out, policy)
}

async fn get_prompt(
    server: &Server,
    catalog: &Catalog,
    params: Map<String, Value>,
    ctx: RequestContext,
) -> Result<String, Error> {
    let name = required_string(
        params.get("name"),
        "prompts/get requires a non-empty string name",
    )?
    .to_owned();
    super::request_span().record("mcp.name", name.as_str());
    let arguments = string_map(
        params.get("arguments"),
        "prompts/get arguments must map strings to strings",
    )?;
    let entry = catalog
        .prompts
        .get(&name)
        .cloned()
        .ok_or_else(|| Error::invalid_params(format!("Unknown prompt: {name}")))?;
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
        Ok(Value::Object(m)) => server.shape(m),
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
    server: &Server,
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
    server.shape(result)
}
