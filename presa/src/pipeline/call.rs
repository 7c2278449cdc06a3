//! `tools/call`: the checks before the handler runs (the name, the arguments, the HTTP
//! parameter mirror, the input schema, the extensions' interception), the handler's first
//! poll in place, and its result checked and shaped.
//!
//! The handler's future is boxed by the handler itself, so it can be polled where the
//! call starts and, when it waits, moved whole into the rest of the call: a handler done
//! at its first poll (most are) is answered with no future of the pipeline's own.

use super::{Core, Step, headers};
use crate::context::RequestContext;
use crate::error::Error;
use crate::extension::{Intercepted, ToolInvocation};
use crate::mrtr::round::Closing;
use crate::observe::{self, Target};
use crate::registry::BoxFuture;
use crate::registry::tool::{ToolEntry, ToolOutput};
use crate::shape::Shaper;
use crate::wire::jsonrpc::RequestParams;
use crate::wire::types::CallToolResult;
use axum::http::HeaderMap;
use futures_util::FutureExt;
use serde_json::{Map, Value};
use std::sync::Arc;

/// A `tools/call`, started: everything before the handler runs happens here, then the
/// handler is polled once. One done at that poll is answered at once; one that waits
/// comes back as the rest of the call, which holds only what the handler needs. The
/// result is written in `buffer` ([`Exchange::buffer`](super::Exchange::buffer)).
pub(super) fn start(
    core: &Arc<Core>,
    params: RequestParams,
    headers: Option<&HeaderMap>,
    tool: Option<Arc<ToolEntry>>,
    closing: Closing,
    buffer: String,
) -> Step {
    let ctx = closing.ctx.clone();
    let shaper = &core.shaper;
    let (entry, arguments, ctx) = match prepare(core, shaper, params, headers, ctx, tool) {
        Err(error) => return Step::Done(closing.close(&core.seals, shaper, Err(error))),
        Ok(Prepared::Answered(answer)) => {
            return Step::Done(closing.close(&core.seals, shaper, answer));
        }
        Ok(Prepared::Later(mut answer)) => {
            if let Some(answer) = answer.as_mut().now_or_never() {
                let answer = answer.and_then(|result| shaper.object(result));
                return Step::Done(closing.close(&core.seals, shaper, answer));
            }
            let core = Arc::clone(core);
            return Step::Rest(Box::pin(async move {
                let answer = answer.await.and_then(|result| core.shaper.object(result));
                closing.close(&core.seals, &core.shaper, answer)
            }));
        }
        Ok(Prepared::Run(entry, arguments, ctx)) => (entry, arguments, ctx),
    };
    let mut handler = entry.start(arguments, ctx);
    if let Some(result) = handler.as_mut().now_or_never() {
        let answer = shape(shaper, &entry, result, buffer, &closing.ctx);
        return Step::Done(closing.close(&core.seals, shaper, answer));
    }
    let core = Arc::clone(core);
    Step::Rest(Box::pin(async move {
        let result = handler.await;
        let answer = shape(&core.shaper, &entry, result, buffer, &closing.ctx);
        closing.close(&core.seals, &core.shaper, answer)
    }))
}

/// A handler's outcome, checked, shaped as the `tools/call` result (in `buffer`). An
/// `isError` result marks the span a tool error only when it is the call's answer: a
/// handler that demanded input it was not given (`ctx`, the round's context) returned
/// the error its `InputRequired` became, which `input_required` replaces.
pub(super) fn shape(
    shaper: &Shaper,
    entry: &ToolEntry,
    result: Result<ToolOutput, Error>,
    buffer: String,
    ctx: &RequestContext,
) -> Result<String, Error> {
    entry.check(result).and_then(|output| match output {
        ToolOutput::Text(text) => shaper.text(&text, buffer),
        ToolOutput::Result(result) => {
            if result.is_error && !ctx.inputs().demanded() {
                observe::tool_error(&super::request_span());
            }
            shaper.call(&result, buffer)
        }
    })
}

/// What a `tools/call` comes to before its handler runs.
pub(super) enum Prepared {
    /// Answered already: arguments that fail the schema, or an extension's answer.
    Answered(Result<String, Error>),
    /// An extension's answer, once this future resolves (its first poll not yet made).
    Later(BoxFuture<Result<Map<String, Value>, Error>>),
    /// The handler's inputs.
    Run(
        Arc<ToolEntry>,
        Map<String, Value>,
        crate::context::RequestContext,
    ),
}

/// Everything before a `tools/call`'s handler runs, in the order its errors are reported:
/// the name, the arguments' shape, an unknown tool, the HTTP header mirror, the input
/// schema (an `isError` result), then the extensions' interception. `tool` is what
/// admission found under the name in the catalog, if anything.
pub(super) fn prepare(
    core: &Core,
    shaper: &Shaper,
    mut params: RequestParams,
    headers: Option<&HeaderMap>,
    ctx: crate::context::RequestContext,
    tool: Option<Arc<ToolEntry>>,
) -> Result<Prepared, Error> {
    // Admission looked the name up already, in the same snapshot of the catalog. When it
    // found nothing, the name is checked here, and an unknown one is reported after the
    // arguments are checked.
    let entry = if let Some(entry) = tool {
        observe::target(&super::request_span(), Target::Tool, &entry.tool.name);
        Ok(entry)
    } else {
        let name = super::dispatch::required_string(
            params.get("name"),
            "tools/call requires a non-empty string name",
        )?;
        // An unknown name is the client's arbitrary string: not recorded.
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
    // The tool's scopes, before anything of the call is looked at further.
    core.authorize(ctx.principal(), &entry.tool.scopes)?;
    if let Some(h) = headers {
        headers::params_match(h, &entry.headers, &arguments)?;
    }
    let arguments = Value::Object(arguments);
    if let Err(problems) = entry.input.validate(&arguments) {
        let result = CallToolResult::error(format!(
            "Invalid arguments for tool {}: {problems}",
            entry.tool.name
        ));
        observe::tool_error(&super::request_span());
        return Ok(Prepared::Answered(shaper.call(&result, String::new())));
    }
    let Value::Object(arguments) = arguments else {
        return Err(Error::internal());
    };
    if core.extensions.is_empty() {
        return Ok(Prepared::Run(entry, arguments, ctx));
    }
    // Extensions see the validated call and may answer it themselves (Tasks does).
    let mut invocation = ToolInvocation {
        entry,
        arguments,
        params: params.into_map(),
        ctx,
        shaper: shaper.clone(),
    };
    for extension in &core.extensions {
        match extension.intercept_tool_call(invocation)? {
            Intercepted::Continue(i) => invocation = i,
            Intercepted::Result(result) => {
                return Ok(Prepared::Answered(shaper.object(result)));
            }
            Intercepted::Later(answer) => return Ok(Prepared::Later(answer)),
        }
    }
    Ok(Prepared::Run(
        invocation.entry,
        invocation.arguments,
        invocation.ctx,
    ))
}
