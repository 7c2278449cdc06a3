//! The fixture's task tools (Tasks reference section 9): what the ten tasks-* scenarios
//! call, with the task modes given there.

use presa::mrtr::{Elicitation, InputRequired};
use presa::tasks::TaskMode;
use presa::{CallToolResult, RequestContext, ServerBuilder, Tool, ToolCall, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;
use std::time::Duration;

pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .add::<greet>()
        .add::<slow_compute>()
        .add::<failing_job>()
        .add::<protocol_error_job>()
        .add::<confirm_delete>()
        .add::<multi_input>()
        .add::<durable_job>()
        .tool(test_tool_with_task())
}

/// Greets someone; never a task.
#[presa::tool]
async fn greet(name: Option<String>) -> String {
    format!("Hello, {}!", name.unwrap_or_else(|| "World".into()))
}

/// Sleeps for `seconds`, then reports `label`. A task when the client declared Tasks;
/// cancelling it stops the sleep at once.
#[presa::tool(task = "optional")]
async fn slow_compute(seconds: Option<f64>, label: Option<String>) -> String {
    let ms = (seconds.unwrap_or(0.0).max(0.0) * 1000.0).round() as u64;
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    format!("Completed {}", label.unwrap_or_default())
}

/// Works for `seconds` (at most an hour), then reports which run of the task finished
/// it and the task's idempotency key. Always a task. Each run writes
/// `durable_job run <attempt> key <key>` on the server's standard error when it starts,
/// and `durable_job run <attempt> stopped` if it is stopped before it ends (cancelled,
/// or its lease lost), so a test can see a run that a killed replica began and another
/// replica resumed.
#[presa::tool(task = "required")]
async fn durable_job(seconds: Option<f64>, ctx: RequestContext) -> String {
    let key = ctx.idempotency_key().unwrap_or("none").to_owned();
    let attempt = ctx.attempt();
    eprintln!("durable_job run {attempt} key {key}");
    let mut stopped = Stopped(Some(attempt));
    let ms = (seconds.unwrap_or(0.0).clamp(0.0, 3600.0) * 1000.0).round() as u64;
    tokio::time::sleep(Duration::from_millis(ms)).await;
    stopped.0 = None;
    format!("run {attempt} key {key}")
}

/// Says on standard error that the run it names was stopped, when dropped still naming
/// one.
struct Stopped(Option<u64>);

impl Drop for Stopped {
    fn drop(&mut self) {
        if let Some(attempt) = self.0 {
            eprintln!("durable_job run {attempt} stopped");
        }
    }
}

/// Always a task, which ends with a tool error.
#[presa::tool(task = "required")]
async fn failing_job() -> CallToolResult {
    CallToolResult::error("The task job failed")
}

/// Always a task, which fails with a protocol error.
#[presa::tool(task = "required")]
async fn protocol_error_job() -> Result<String, presa::Error> {
    Err(presa::Error::internal())
}

#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
struct ConfirmDelete {
    /// Whether to delete.
    confirm: bool,
}

/// Asks for confirmation before deleting a file.
#[presa::tool(task = "optional")]
async fn confirm_delete(filename: String, ctx: RequestContext) -> Result<String, InputRequired> {
    let answer = ctx
        .elicit::<ConfirmDelete>("confirm-delete", &format!("Delete {filename}?"))
        .get()?;
    let confirmed = matches!(
        answer,
        Elicitation::Accepted(ConfirmDelete { confirm: true })
    );
    Ok(format!("Delete confirmed: {confirmed}"))
}

#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
struct NameAndConfirm {
    /// A name.
    name: Option<String>,
    /// A confirmation.
    confirm: Option<bool>,
}

fn describe(answer: Elicitation<NameAndConfirm>) -> String {
    match answer {
        Elicitation::Accepted(NameAndConfirm { name: Some(n), .. }) => n,
        Elicitation::Accepted(NameAndConfirm { confirm, .. }) => {
            if confirm.unwrap_or(false) {
                "confirmed".into()
            } else {
                "not confirmed".into()
            }
        }
        _ => "declined".into(),
    }
}

/// Asks for two inputs at once.
#[presa::tool(task = "optional")]
async fn multi_input(ctx: RequestContext) -> Result<String, InputRequired> {
    let first = ctx.elicit::<NameAndConfirm>("first-input", "First input");
    let second = ctx.elicit::<NameAndConfirm>("second-input", "Second input");
    let first = describe(first.get()?);
    let second = describe(second.get()?);
    Ok(format!("Inputs received: {first}, {second}"))
}

#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
struct Name {
    /// Your name.
    name: String,
}

/// Asks for a name synchronously (multi round-trip), then runs as a task on the final
/// round: the task mode is chosen per call. The extension asks servers to resolve the
/// rounds before creating a task, so only a round that carries the answer becomes one;
/// a retry without it is asked again, synchronously.
fn test_tool_with_task() -> Tool {
    Tool::new("test_tool_with_task")
        .description("Asks for a name, then greets as a task")
        .task_per_call(|params| {
            let answered = params
                .get("inputResponses")
                .and_then(|r| r.get("user_name"))
                .is_some();
            if answered {
                TaskMode::Required
            } else {
                TaskMode::Sync
            }
        })
        .handler(|call: ToolCall| async move {
            let answer = call
                .ctx
                .elicit::<Name>("user_name", "What is your name?")
                .get()
                .map_err(ToolError::from)?;
            Ok::<_, ToolError>(match answer {
                Elicitation::Accepted(n) => format!("Hello, {}", n.name),
                _ => "Hello, stranger".to_owned(),
            })
        })
}
