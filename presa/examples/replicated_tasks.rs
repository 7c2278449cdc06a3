//! Tasks shared by several replicas of one server: kept in PostgreSQL, so any replica
//! answers `tasks/get`, `tasks/update` and `tasks/cancel` for a task another one created,
//! and listen streams on any replica hear the list changes and resource updates of all
//! (feature `postgres`). Needs a running PostgreSQL; start each replica with the same
//! database URL:
//!
//! ```sh
//! export PRESA_DATABASE_URL=postgres://presa:secret@127.0.0.1:5432/presa
//! cargo run -p presa --features postgres --example replicated_tasks -- 127.0.0.1:3001 &
//! cargo run -p presa --features postgres --example replicated_tasks -- 127.0.0.1:3002 &
//! ```

use presa::tasks::{PgStore, Tasks};
use std::time::Duration;

/// Rebuilds the search index; a task when the client declared Tasks.
#[presa::tool(task = "optional")]
async fn reindex() -> String {
    tokio::time::sleep(Duration::from_millis(20)).await;
    "index rebuilt".into()
}

// ANCHOR: server
/// A replica, its tasks kept in the PostgreSQL database at `url`.
async fn replica(url: &str) -> Result<presa::Server, Box<dyn std::error::Error>> {
    // Creates the tables, or brings them up to date, once however many replicas start
    // at once. A server unreachable within the acquire timeout, a refused login, or a
    // schema migrated by a newer presa is a `ConnectError`.
    let store = PgStore::builder(url)
        .max_connections(16) // per replica; count them all against the server's limit
        .acquire_timeout(Duration::from_secs(5)) // waiting for a connection, opening included
        .statement_timeout(Duration::from_secs(5)) // each statement, on the server
        .schema("presa") // the tables' PostgreSQL schema (created if missing)
        .connect()
        .await?;
    // List changes and resource updates published on any replica reach the listen
    // streams of all, through the same database.
    let fanout = store.fanout();
    // A single-use request state spent on one replica is refused by all.
    let spent = store.clone();
    // A legacy session (a client that opened with `initialize`) is served by every
    // replica, wherever its next request lands.
    let sessions = store.clone();
    let tasks = Tasks::builder().store(store).build();
    Ok(presa::server!()
        .registered()
        .extension(tasks)
        .fanout(fanout)
        .replay_store(spent)
        .session_store(sessions)
        .build()?)
}
// ANCHOR_END: server

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let url = std::env::var("PRESA_DATABASE_URL")
        .map_err(|_| "set PRESA_DATABASE_URL to a PostgreSQL URL")?;
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3000".into());
    replica(&url).await?.serve_http(addr.as_str()).await?;
    Ok(())
}
