//! Tasks that outlive the process: kept in a SQLite file, so a restarted server answers
//! `tasks/get` for the tasks finished before it (feature `sqlite`).
//!
//! ```sh
//! cargo run -p presa --features sqlite --example durable_tasks -- tasks.db
//! ```

use presa::tasks::{SqliteStore, Tasks};
use presa::{RequestContext, ToolError};
use std::path::Path;

/// Rebuilds the search index; a task when the client declared Tasks.
#[presa::tool(task = "optional")]
async fn reindex() -> String {
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    "index rebuilt".into()
}

// ANCHOR: idempotent
/// Sends the invoice for `order` once, however many times the task runs: the billing
/// service keeps one invoice per idempotency key.
#[presa::tool(task = "required")]
async fn invoice(order: String, ctx: RequestContext) -> Result<String, ToolError> {
    // The same on every run of this task, on any replica; None outside a task.
    let key = ctx
        .idempotency_key()
        .ok_or_else(|| ToolError::new("invoice runs only as a task"))?;
    let number = billing::send_invoice(&order, key).await;
    // ctx.attempt(): 1 for the first run, 2 once the task was claimed again, …
    Ok(format!(
        "invoice {number} for {order} (run {})",
        ctx.attempt()
    ))
}
// ANCHOR_END: idempotent

/// A stand-in for a billing service that takes an idempotency key: a second request
/// with the same key returns the first one's invoice instead of sending another.
mod billing {
    use std::collections::HashMap;
    use std::sync::Mutex;

    static SENT: Mutex<Option<HashMap<String, u64>>> = Mutex::new(None);

    /// The number of the invoice sent for `key` (sent now if it was not before).
    pub async fn send_invoice(_order: &str, key: &str) -> u64 {
        let mut sent = SENT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let sent = sent.get_or_insert_with(HashMap::new);
        let next = sent.len() as u64 + 1;
        *sent.entry(key.to_owned()).or_insert(next)
    }
}

// ANCHOR: server
/// The server, its tasks kept in the SQLite file at `path`.
async fn server(path: &Path) -> Result<presa::Server, Box<dyn std::error::Error>> {
    // Creates the file and its schema if needed. A file locked by another writer,
    // unwritable, not a database, or written by a newer presa is an `OpenError`
    // naming the file.
    let store = SqliteStore::open(path).await?;
    // Spent single-use request states are kept in the same file.
    let spent = store.clone();
    let tasks = Tasks::builder().store(store).build();
    Ok(presa::server!()
        .registered()
        .extension(tasks)
        .replay_store(spent)
        .build()?)
}
// ANCHOR_END: server

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let path = std::env::args().nth(1).unwrap_or_else(|| "tasks.db".into());
    server(Path::new(&path))
        .await?
        .serve_http("127.0.0.1:3000")
        .await?;
    Ok(())
}

// ANCHOR: tests
#[cfg(test)]
mod tests {
    use super::*;
    use presa::testing::TestClient;
    use serde_json::{Value, json};

    fn client(server: &presa::Server) -> TestClient {
        TestClient::new(server)
            .with_capabilities(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}))
    }

    /// Polls `tasks/get` until the task leaves `working` (at most 5 s).
    async fn settle(client: &TestClient, id: &Value) -> Value {
        for _ in 0..250 {
            let task = client.request("tasks/get", json!({"taskId": id})).await;
            if task.result()["status"] != "working" {
                return task.result().clone();
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("the task did not settle");
    }

    #[tokio::test]
    async fn an_invoice_is_sent_once_per_key() {
        let dir = tempfile::tempdir().unwrap();
        let server = server(&dir.path().join("tasks.db")).await.unwrap();
        let created = client(&server)
            .call_tool("invoice", json!({"order": "A-17"}))
            .await;
        let id = created.result()["taskId"].clone();
        let done = settle(&client(&server), &id).await;
        let text = done["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.ends_with("for A-17 (run 1)"), "{text}");
        // Another run with the same key (as after a claim) gets the same invoice.
        let first = billing::send_invoice("A-17", "key-1").await;
        assert_eq!(billing::send_invoice("A-17", "key-1").await, first);
        assert_ne!(billing::send_invoice("A-18", "key-2").await, first);
    }

    #[tokio::test]
    async fn a_restarted_server_answers_a_finished_task() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.db");
        let first = server(&path).await.unwrap();
        let created = client(&first).call_tool("reindex", json!({})).await;
        let id = created.result()["taskId"].clone();
        let done = settle(&client(&first), &id).await;
        assert_eq!(done["result"]["content"][0]["text"], "index rebuilt");
        drop(first);
        // A new server on the same file, as after a restart.
        let second = server(&path).await.unwrap();
        let task = client(&second)
            .request("tasks/get", json!({"taskId": id}))
            .await;
        assert_eq!(task.result()["status"], "completed");
        assert_eq!(task.result()["result"], done["result"]);
    }
}
// ANCHOR_END: tests
