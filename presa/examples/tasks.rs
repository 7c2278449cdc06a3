//! A long-running tool with the Tasks extension: rendering a report answers at once with a
//! task; the client polls it with `tasks/get`, answers its questions with `tasks/update`
//! and may stop it with `tasks/cancel`.
//!
//! ```sh
//! cargo run -p presa --example tasks            # stdio
//! cargo run -p presa --example tasks -- --http  # http://127.0.0.1:3000/mcp
//! ```

use presa::RequestContext;
use presa::mrtr::Elicitation;
use presa::tasks::Tasks;
use presa::{CallToolResult, ToolError};
use std::time::Duration;

// ANCHOR: tool
/// Go on with a long report?
#[derive(serde::Deserialize, schemars::JsonSchema, presa::ElicitForm)]
struct GoOn {
    /// Render it anyway?
    confirm: bool,
}

/// Renders a report of `pages` pages, slowly. A task when the client declared Tasks.
#[presa::tool(task = "optional", annotations(read_only))]
async fn render_report(ctx: RequestContext, pages: u32) -> Result<CallToolResult, ToolError> {
    if pages > 50 {
        // Inside a task this parks the task as `input_required`; the answer comes with
        // `tasks/update`, and the tool then runs again from the top with it.
        let answer = ctx.elicit::<GoOn>("go_on", &format!("Render all {pages} pages?"));
        if !matches!(answer.get()?, Elicitation::Accepted(GoOn { confirm: true })) {
            return Ok(CallToolResult::text("Not rendered."));
        }
    }
    for _page in 0..pages {
        // Each await is a point where cancellation can stop the work: `tasks/cancel`
        // records `cancelled`, then drops this future.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(CallToolResult::text(format!("Rendered {pages} pages.")))
}
// ANCHOR_END: tool

// ANCHOR: server
fn server() -> Result<presa::Server, presa::BuildError> {
    let tasks = Tasks::builder()
        .ttl(Some(Duration::from_secs(600))) // kept 10 minutes after creation
        .poll_interval(Duration::from_millis(100)) // suggested to clients
        .max_workers(16) // tasks running at once
        .build();
    presa::server!().registered().extension(tasks).build()
}
// ANCHOR_END: server

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let server = server()?;
    match std::env::args().nth(1).as_deref() {
        Some("--http") => server.serve_http("127.0.0.1:3000").await?,
        _ => server.serve_stdio().await?,
    }
    Ok(())
}

// ANCHOR: tests
#[cfg(test)]
mod tests {
    use super::*;
    use presa::testing::TestClient;
    use serde_json::{Value, json};

    /// A client that declared the Tasks extension (and form elicitation).
    fn client(server: &presa::Server) -> TestClient {
        TestClient::new(server).with_capabilities(json!({
            "extensions": {"io.modelcontextprotocol/tasks": {}},
            "elicitation": {"form": {}}
        }))
    }

    /// Polls `tasks/get` until the task leaves `working` (at most 5 s).
    async fn settle(client: &TestClient, id: &Value) -> Value {
        for _ in 0..250 {
            let task = client.request("tasks/get", json!({"taskId": id})).await;
            let task = task.result().clone();
            if task["status"] != "working" {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the task did not settle");
    }

    #[tokio::test]
    async fn a_task_completes() {
        let server = server().unwrap();
        let client = client(&server);
        let created = client.call_tool("render_report", json!({"pages": 3})).await;
        let created = created.result();
        assert_eq!(created["resultType"], "task");
        assert_eq!(created["status"], "working");
        assert_eq!(created["pollIntervalMs"], 100);
        let task = settle(&client, &created["taskId"]).await;
        assert_eq!(task["status"], "completed");
        assert_eq!(task["result"]["content"][0]["text"], "Rendered 3 pages.");
    }

    #[tokio::test]
    async fn a_task_asks_and_is_answered() {
        let server = server().unwrap();
        let client = client(&server);
        let created = client
            .call_tool("render_report", json!({"pages": 60}))
            .await;
        let id = created.result()["taskId"].clone();
        let task = settle(&client, &id).await;
        assert_eq!(task["status"], "input_required");
        assert_eq!(
            task["inputRequests"]["go_on"]["method"],
            "elicitation/create"
        );
        let answer = json!({"go_on": {"action": "accept", "content": {"confirm": true}}});
        client
            .request(
                "tasks/update",
                json!({"taskId": id, "inputResponses": answer}),
            )
            .await
            .result();
        let task = settle(&client, &id).await;
        assert_eq!(task["result"]["content"][0]["text"], "Rendered 60 pages.");
    }

    #[tokio::test]
    async fn a_task_is_cancelled() {
        let server = server().unwrap();
        let client = client(&server);
        let created = client
            .call_tool("render_report", json!({"pages": 50}))
            .await;
        let id = created.result()["taskId"].clone();
        // The acknowledgement is empty and does not wait for the work to stop.
        client
            .request("tasks/cancel", json!({"taskId": id}))
            .await
            .result();
        let task = client.request("tasks/get", json!({"taskId": id})).await;
        assert_eq!(task.result()["status"], "cancelled");
    }

    #[tokio::test]
    async fn without_tasks_the_call_runs_in_the_request() {
        let server = server().unwrap();
        TestClient::new(&server)
            .call_tool("render_report", json!({"pages": 2}))
            .await
            .assert_text("Rendered 2 pages.");
    }
}
// ANCHOR_END: tests
