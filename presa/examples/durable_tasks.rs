//! Tasks that outlive the process: kept in a SQLite file, so a restarted server answers
//! `tasks/get` for the tasks finished before it (feature `sqlite`).
//!
//! ```sh
//! cargo run -p presa --features sqlite --example durable_tasks -- tasks.db
//! ```

use presa::tasks::{SqliteStore, Tasks};
use std::path::Path;

/// Rebuilds the search index; a task when the client declared Tasks.
#[presa::tool(task = "optional")]
async fn reindex() -> String {
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    "index rebuilt".into()
}

// ANCHOR: server
/// The server, its tasks kept in the SQLite file at `path`.
async fn server(path: &Path) -> Result<presa::Server, Box<dyn std::error::Error>> {
    // Creates the file and its schema if needed. A file locked by another writer,
    // unwritable, not a database, or written by a newer presa is an `OpenError`
    // naming the file.
    let store = SqliteStore::open(path).await?;
    let tasks = Tasks::builder().store(store).build();
    Ok(presa::server!().registered().extension(tasks).build()?)
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
