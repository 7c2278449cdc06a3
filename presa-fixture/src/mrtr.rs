//! The fixture's interactive items (wire reference section 16.1): tools, a prompt and a
//! resource that ask the client for input through multi round-trip requests, and the
//! triggers of list-changed notifications.
//!
//! Sampling and roots are deprecated in 2026-07-28; the conformance runner still calls
//! them, hence the `allow(deprecated)`.

use presa::mrtr::{Elicitation, InputRequired, SamplingRequest};
use presa::{RequestContext, ServerBuilder, Tool, ToolCall, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .add::<test_missing_capability>()
        .add::<test_streaming_elicitation>()
        .add::<test_trigger_tool_change>()
        .add::<test_trigger_prompt_change>()
        .add::<test_input_required_result_elicitation>()
        .add::<test_single_use_state>()
        .add::<test_input_required_result_sampling>()
        .add::<test_input_required_result_list_roots>()
        .add::<test_input_required_result_request_state>()
        .add::<test_input_required_result_multiple_inputs>()
        .add::<test_input_required_result_multi_round>()
        .add::<test_input_required_result_tampered_state>()
        .add::<test_input_required_result_capabilities>()
        .add::<test_input_required_result_prompt>()
        .add::<input_required_preview>()
}

#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
struct UserName {
    /// Your name.
    name: String,
}

#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
struct Color {
    /// Your favourite colour.
    color: String,
}

#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
struct Confirm {
    /// Whether to go on.
    ok: bool,
}

#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
struct UserContext {
    /// Some context for the request.
    context: String,
}

fn greet(answer: Elicitation<UserName>) -> String {
    match answer {
        Elicitation::Accepted(u) => format!("Hello, {}!", u.name),
        Elicitation::Declined => "The user declined to give a name.".into(),
        Elicitation::Cancelled => "The user cancelled.".into(),
    }
}

/// Always asks for sampling, whatever the client declared (so a client without sampling
/// gets -32021).
#[presa::tool]
#[allow(deprecated)]
async fn test_missing_capability(ctx: RequestContext) -> Result<String, InputRequired> {
    let answer = ctx
        .sample(
            "capital_question",
            SamplingRequest::new(100).user("What is the capital of France?"),
        )
        .get()?;
    Ok(answer.text())
}

/// Asks for the user's name through an input request, never a request on the stream.
#[presa::tool]
async fn test_streaming_elicitation(ctx: RequestContext) -> Result<String, InputRequired> {
    Ok(greet(
        ctx.elicit::<UserName>("user_name", "Please provide your name")
            .get()?,
    ))
}

/// Adds and removes a temporary tool, so listeners get tools/list_changed.
#[presa::tool]
async fn test_trigger_tool_change(ctx: RequestContext) -> Result<String, ToolError> {
    let server = ctx.server();
    let name = "test_trigger_tool_change_temporary";
    if !server.remove_tool(name) {
        server
            .add_tool(
                Tool::new(name)
                    .description("A tool that comes and goes")
                    .handler(|_: ToolCall| async { "here" }),
            )
            .map_err(|e| ToolError::new(e.to_string()))?;
    }
    Ok("The tool list changed".into())
}

/// Adds and removes a temporary prompt, so listeners get prompts/list_changed.
#[presa::tool]
async fn test_trigger_prompt_change(ctx: RequestContext) -> Result<String, ToolError> {
    let server = ctx.server();
    let name = "test_trigger_prompt_change_temporary";
    if !server.remove_prompt(name) {
        server
            .add_prompt(
                presa::Prompt::new(name)
                    .description("A prompt that comes and goes")
                    .handler(|_: presa::PromptGet| async { "here".to_owned() }),
            )
            .map_err(|e| ToolError::new(e.to_string()))?;
    }
    Ok("The prompt list changed".into())
}

/// Asks for the user's name (elicitation), then greets them.
#[presa::tool]
async fn test_input_required_result_elicitation(
    ctx: RequestContext,
) -> Result<String, InputRequired> {
    Ok(greet(
        ctx.elicit::<UserName>("user_name", "Please provide your name")
            .get()?,
    ))
}

/// Asks for the user's name like `test_input_required_result_elicitation`, with a
/// single-use request state: a second retry with the same state is refused, by every
/// replica sharing the fixture's store (`--tasks-store`).
#[presa::tool]
async fn test_single_use_state(ctx: RequestContext) -> Result<String, InputRequired> {
    ctx.single_use_state();
    Ok(greet(
        ctx.elicit::<UserName>("user_name", "Please provide your name")
            .get()?,
    ))
}

/// Asks the client's model a question (sampling).
#[presa::tool]
#[allow(deprecated)]
async fn test_input_required_result_sampling(ctx: RequestContext) -> Result<String, InputRequired> {
    let answer = ctx
        .sample(
            "capital_question",
            SamplingRequest::new(100).user("What is the capital of France?"),
        )
        .get()?;
    Ok(format!("The model said: {}", answer.text()))
}

/// Asks for the client's roots.
#[presa::tool]
#[allow(deprecated)]
async fn test_input_required_result_list_roots(
    ctx: RequestContext,
) -> Result<String, InputRequired> {
    let roots = ctx.roots("client_roots").get()?;
    let uris: Vec<String> = roots.into_iter().map(|r| r.uri).collect();
    Ok(format!("Roots: {}", uris.join(", ")))
}

#[derive(Serialize, Deserialize)]
struct Progress {
    step: String,
}

async fn confirm_with_state(ctx: RequestContext) -> Result<String, InputRequired> {
    // State carried to the next round in the signed requestState.
    ctx.carry(&Progress {
        step: "confirm".into(),
    });
    let answer = ctx
        .elicit::<Confirm>("confirm", "Confirm to continue")
        .get()?;
    let carried = ctx.carried::<Progress>().map(|p| p.step);
    Ok(match (answer, carried.as_deref()) {
        (Elicitation::Accepted(Confirm { ok: true }), Some("confirm")) => "state-ok".into(),
        (Elicitation::Accepted(_), Some(_)) => "state-ok: not confirmed".into(),
        (_, None) => "state missing".into(),
        _ => "state-ok: declined".into(),
    })
}

/// Carries state from round to round in the signed request state.
#[presa::tool]
async fn test_input_required_result_request_state(
    ctx: RequestContext,
) -> Result<String, InputRequired> {
    confirm_with_state(ctx).await
}

/// Carries signed state; a tampered state is refused.
#[presa::tool]
async fn test_input_required_result_tampered_state(
    ctx: RequestContext,
) -> Result<String, InputRequired> {
    confirm_with_state(ctx).await
}

/// Asks for three inputs in one round: a form, a sampling and the roots.
#[presa::tool]
#[allow(deprecated)]
async fn test_input_required_result_multiple_inputs(
    ctx: RequestContext,
) -> Result<String, InputRequired> {
    let name = ctx.elicit::<UserName>("user_name", "Please provide your name");
    let greeting = ctx.sample(
        "greeting",
        SamplingRequest::new(50).user("Generate a greeting"),
    );
    let roots = ctx.roots("client_roots");
    let name = greet(name.get()?);
    let greeting = greeting.get()?.text();
    let roots = roots.get()?.len();
    Ok(format!("{name} {greeting} ({roots} roots)"))
}

/// Asks in two rounds: a name, then a colour.
#[presa::tool]
async fn test_input_required_result_multi_round(
    ctx: RequestContext,
) -> Result<String, InputRequired> {
    let name = greet(ctx.elicit::<UserName>("step1", "Step 1: your name").get()?);
    let color = match ctx
        .elicit::<Color>("step2", "Step 2: your favourite colour")
        .get()?
    {
        Elicitation::Accepted(c) => c.color,
        _ => "no colour".into(),
    };
    Ok(format!("{name} Favourite colour: {color}"))
}

/// Asks only for what the client declared: elicitation when it can, sampling when it can.
#[presa::tool]
#[allow(deprecated)]
async fn test_input_required_result_capabilities(
    ctx: RequestContext,
) -> Result<String, InputRequired> {
    let name = ctx
        .supports_elicitation()
        .then(|| ctx.elicit::<UserName>("user_name", "Please provide your name"));
    let greeting = ctx.supports_sampling().then(|| {
        ctx.sample(
            "greeting",
            SamplingRequest::new(50).user("Generate a greeting"),
        )
    });
    let mut parts = Vec::new();
    if let Some(n) = name {
        parts.push(greet(n.get()?));
    }
    if let Some(g) = greeting {
        parts.push(g.get()?.text());
    }
    if parts.is_empty() {
        parts.push("The client declared neither elicitation nor sampling.".into());
    }
    Ok(parts.join(" "))
}

/// Asks for context before rendering its messages.
#[presa::prompt]
async fn test_input_required_result_prompt(
    ctx: RequestContext,
) -> Result<Vec<presa::PromptMessage>, presa::Error> {
    let context = match ctx
        .elicit::<UserContext>("user_context", "Please provide some context")
        .get()?
    {
        Elicitation::Accepted(c) => c.context,
        _ => "no context".into(),
    };
    Ok(vec![presa::PromptMessage::user(format!(
        "Answer with this context in mind: {context}"
    ))])
}

/// A preview that needs context from the user first (listed after the plain resources).
#[presa::resource(uri = "z-mrtr://input-required-preview", mime_type = "text/plain")]
async fn input_required_preview(ctx: RequestContext) -> Result<String, presa::Error> {
    let context = match ctx
        .elicit::<UserContext>("user_context", "Please provide some context")
        .get()?
    {
        Elicitation::Accepted(c) => c.context,
        _ => "no context".into(),
    };
    Ok(format!("Preview for: {context}"))
}
