//! Extensions: protocol additions negotiated through `capabilities.extensions`, plugged
//! into the one pipeline through a few hooks rather than special cases. An extension can
//! own methods (gated by the client's declaration of the extension), mirror a param into
//! `Mcp-Name` on HTTP, take over `tools/call`, and add a filter to
//! `subscriptions/listen`. The Tasks extension (`presa::tasks`) is built on these hooks.

use crate::context::RequestContext;
use crate::error::Error;
use crate::registry::BoxFuture;
use crate::registry::tool::{Tool, ToolEntry, ToolOutput};
use crate::server::Server;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// A protocol extension.
pub trait Extension: Send + Sync + 'static {
    /// The extension's identifier, a prefixed `_meta`-style key such as
    /// `io.modelcontextprotocol/tasks`.
    fn id(&self) -> &'static str;

    /// The settings advertised under `capabilities.extensions` (default `{}`).
    fn settings(&self) -> Value {
        json!({})
    }

    /// The methods the extension serves. A request for one from a client that did not
    /// declare the extension is -32021.
    fn methods(&self) -> &'static [&'static str] {
        &[]
    }

    /// For an HTTP request of `method`, the param mirrored in `Mcp-Name` (for example
    /// `taskId`), if the extension defines one.
    fn routing_param(&self, _method: &str) -> Option<&'static str> {
        None
    }

    /// Serves one of [`Extension::methods`], after admission and the declaration check.
    fn handle(
        &self,
        method: &str,
        _params: Map<String, Value>,
        _ctx: RequestContext,
    ) -> BoxFuture<Result<Map<String, Value>, Error>> {
        let error = Error::method_not_found(method);
        Box::pin(async move { Err(error) })
    }

    /// Sees every `tools/call` after its arguments are validated, and may answer it
    /// itself instead of running the tool in the request.
    fn intercept_tool_call(&self, call: ToolInvocation) -> Result<Intercepted, Error> {
        Ok(Intercepted::Continue(call))
    }

    /// Reads this extension's part of a `subscriptions/listen` filter. Returns the
    /// accepted topics under a key of the acknowledged filter (such as `taskIds`), or
    /// `None` when the request asked for none.
    fn listen_filter(
        &self,
        _notifications: &Map<String, Value>,
        _ctx: &RequestContext,
    ) -> Result<Option<(&'static str, Vec<String>)>, Error> {
        Ok(None)
    }
}

/// What an extension made of a `tools/call`.
pub enum Intercepted {
    /// Run the tool in the request, as usual.
    Continue(ToolInvocation),
    /// Answer with this result instead (its `resultType` included).
    Result(Map<String, Value>),
}

/// A validated `tools/call`, ready to run.
pub struct ToolInvocation {
    pub(crate) entry: Arc<ToolEntry>,
    pub(crate) arguments: Map<String, Value>,
    pub(crate) params: Map<String, Value>,
    pub(crate) ctx: RequestContext,
    pub(crate) server: Server,
}

impl ToolInvocation {
    /// The tool.
    pub fn tool(&self) -> &Tool {
        &self.entry.tool
    }

    /// The validated arguments.
    pub fn arguments(&self) -> &Map<String, Value> {
        &self.arguments
    }

    /// The request's params as sent.
    pub fn params(&self) -> &Map<String, Value> {
        &self.params
    }

    /// The request context.
    pub fn ctx(&self) -> &RequestContext {
        &self.ctx
    }

    /// The server.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// Runs the tool with `ctx` (the request's own context, or a detached one), checking
    /// its structured result against its output schema, and returns the shaped result.
    pub fn run_with(&self, ctx: RequestContext) -> BoxFuture<Result<Map<String, Value>, Error>> {
        let entry = Arc::clone(&self.entry);
        let arguments = self.arguments.clone();
        let server = self.server.clone();
        Box::pin(async move { run_tool(&server, &entry, arguments, ctx).await })
    }
}

/// Runs a tool and shapes its result (detached runs keep it as an object).
pub(crate) async fn run_tool(
    server: &Server,
    entry: &ToolEntry,
    arguments: Map<String, Value>,
    ctx: RequestContext,
) -> Result<Map<String, Value>, Error> {
    let result = check_result(entry, start_handler(entry, arguments, ctx).await)?;
    match serde_json::to_value(result.into_result()) {
        Ok(Value::Object(m)) => Ok(server.shape_map(m)),
        _ => Err(Error::internal()),
    }
}

/// A tool's handler called with its arguments: the future that runs it.
pub(crate) fn start_handler(
    entry: &ToolEntry,
    arguments: Map<String, Value>,
    ctx: RequestContext,
) -> BoxFuture<Result<ToolOutput, Error>> {
    (entry.handler)(&entry.name, arguments, ctx)
}

/// A handler's outcome checked where the handler could break the schema: its content's
/// annotations (a `priority` from 0 to 1) and its structured result against the tool's
/// output schema. A result that breaks either is -32603, logged (the model never sees it).
#[inline]
pub(crate) fn check_result(
    entry: &ToolEntry,
    result: Result<ToolOutput, Error>,
) -> Result<ToolOutput, Error> {
    let result = match result? {
        // One text block without annotations breaks nothing, unless an outputSchema asks
        // for structured content.
        ToolOutput::Text(text) if entry.output.is_none() => return Ok(ToolOutput::Text(text)),
        output => output.into_result(),
    };
    let name = entry.tool.name.as_str();
    if let Some(problem) = result.content.iter().find_map(|c| c.check().err()) {
        tracing::error!(tool = %name, %problem, "tool result content breaks the schema");
        return Err(Error::internal());
    }
    if let (Some(output), false) = (&entry.output, result.is_error) {
        let structured = result.structured_content.as_ref().ok_or_else(|| {
            tracing::error!(tool = %name, "tool declares an outputSchema but returned no structuredContent");
            Error::internal()
        })?;
        if let Err(problems) = output.validate(structured) {
            tracing::error!(tool = %name, %problems, "structured result does not match the tool's outputSchema");
            return Err(Error::internal());
        }
    }
    Ok(ToolOutput::Result(result))
}

/// Whether the request declared extension `id` in its client capabilities.
pub fn declared(ctx: &RequestContext, id: &str) -> bool {
    ctx.client_capabilities()
        .get("extensions")
        .and_then(|e| e.get(id))
        .is_some_and(Value::is_object)
}

/// The -32021 for a request that needs extension `id` without declaring it.
pub fn missing(id: &str) -> Error {
    let mut ext = Map::new();
    ext.insert(id.to_owned(), json!({}));
    Error::missing_client_capability(json!({ "extensions": ext }))
}
