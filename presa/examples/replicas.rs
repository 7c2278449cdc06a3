//! Several replicas of one server behind a load balancer: what they must share (the
//! request-state keys, a replay store for single-use state, a task store) and what scales
//! without sharing (everything else).
//!
//! ```sh
//! export PRESA_STATE_KEYS="k1:$(head -c 32 /dev/urandom | base64)"  # the same on every replica
//! cargo run -p presa --example replicas -- 127.0.0.1:3001 &
//! cargo run -p presa --example replicas -- 127.0.0.1:3002 &
//! ```

use presa::RequestContext;
use presa::mrtr::{Elicitation, ReplayError, ReplayFuture, ReplayStore};
use presa::tasks::{MemoryStore, StoreFuture, TaskRecord, TaskStatus, TaskStore, Tasks};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// Confirm the transfer?
#[derive(serde::Deserialize, schemars::JsonSchema, presa::ElicitForm)]
struct Confirm {
    /// Go ahead?
    confirm: bool,
}

/// Moves money between two accounts, after the user confirms.
#[presa::tool(annotations(destructive))]
async fn transfer(
    ctx: RequestContext,
    amount: u64,
    to: String,
) -> Result<String, presa::ToolError> {
    ctx.single_use_state(); // the confirming retry works once, whichever replica gets it
    let question = format!("Transfer {amount} to {to}?");
    match ctx.elicit::<Confirm>("confirm", &question).get()? {
        Elicitation::Accepted(Confirm { confirm: true }) => Ok(format!("sent {amount} to {to}")),
        _ => Ok("nothing sent".into()),
    }
}

/// Rebuilds the search index; a task when the client declared Tasks.
#[presa::tool(task = "optional")]
async fn reindex() -> String {
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    "index rebuilt".into()
}

// ANCHOR: stores
/// The replay store every replica shares. This one is a map in memory, standing in for
/// Redis (`SET id 1 NX EXAT expires_at`) or a database table with a unique key (presa's
/// `PgStore`, feature `postgres`, is one: `.replay_store(pg.clone())`). A real one awaits
/// its client inside the future and reports a fault as a `ReplayError`;
/// `presa::mrtr::contract` checks it keeps the rules.
#[derive(Clone, Default)]
pub struct SharedReplays(Arc<Mutex<HashMap<String, u64>>>);

impl ReplayStore for SharedReplays {
    fn first_use<'a>(&'a self, id: &'a str, expires_at: u64) -> ReplayFuture<'a> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        // A poisoned map cannot be trusted: the fault makes the retry retryable.
        let first = self
            .0
            .lock()
            .map_err(|_| ReplayError::new("the shared map is poisoned"))
            .map(|mut seen| {
                seen.retain(|_, exp| *exp >= now);
                seen.insert(id.to_owned(), expires_at).is_none()
            });
        Box::pin(std::future::ready(first))
    }
}

/// The task store every replica shares: a stand-in for a database, delegating to
/// presa's in-memory store. A real one awaits its client inside each future and reports
/// a fault as `StoreError::Unavailable`; `presa::tasks::contract` checks it keeps the rules.
#[derive(Clone, Default)]
pub struct SharedTasks(Arc<MemoryStore>);

impl TaskStore for SharedTasks {
    fn insert(&self, record: TaskRecord) -> StoreFuture<'_, ()> {
        self.0.insert(record)
    }
    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        self.0.get(id)
    }
    fn status<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskStatus>> {
        self.0.status(id)
    }
    fn compare_and_set(&self, expected: u64, record: TaskRecord) -> StoreFuture<'_, TaskRecord> {
        self.0.compare_and_set(expected, record)
    }
    fn count<'a>(&'a self, scope: Option<&'a str>, now_ms: u64) -> StoreFuture<'a, usize> {
        self.0.count(scope, now_ms)
    }
    fn remove_expired(&self, now_ms: u64) -> StoreFuture<'_, usize> {
        self.0.remove_expired(now_ms)
    }
    fn claimable(&self, now_ms: u64, limit: usize) -> StoreFuture<'_, Vec<TaskRecord>> {
        self.0.claimable(now_ms, limit)
    }
}
// ANCHOR_END: stores

// ANCHOR: replica
/// One replica. The request-state keys come from `PRESA_STATE_KEYS` unless given here.
fn replica(
    keys: Option<presa::mrtr::Keyring>,
    replays: SharedReplays,
    tasks: SharedTasks,
) -> Result<presa::Server, presa::BuildError> {
    let mut builder = presa::server!()
        .registered()
        .replay_store(replays)
        .extension(Tasks::builder().store(tasks).build());
    if let Some(keys) = keys {
        builder = builder.state_keys(keys);
    }
    builder.build()
}
// ANCHOR_END: replica

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3000".into());
    // In production the stores are clients of the shared services; here each process
    // has its own, so only the keys are really shared between the two commands above.
    let server = replica(None, SharedReplays::default(), SharedTasks::default())?;
    server.serve_http(addr).await?;
    Ok(())
}

// ANCHOR: tests
#[cfg(test)]
mod tests {
    use super::*;
    use presa::mrtr::{Keyring, StateKey};
    use presa::testing::TestClient;
    use serde_json::{Value, json};

    fn keys(ids: &[(&str, u8)]) -> Keyring {
        let keys = ids
            .iter()
            .map(|(id, byte)| StateKey::new(*id, vec![*byte; 32]).unwrap())
            .collect();
        Keyring::new(keys).unwrap()
    }

    fn caps() -> Value {
        json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
    }

    /// Round 1 of a transfer; returns the params of the confirming retry.
    async fn first_round(server: &presa::Server) -> Value {
        let client = TestClient::new(server).with_capabilities(caps());
        let args = json!({"amount": 10, "to": "Bo"});
        let first = client.call_tool("transfer", args.clone()).await;
        json!({"name": "transfer", "arguments": args,
               "requestState": first.result()["requestState"],
               "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}})
    }

    #[tokio::test]
    async fn any_replica_serves_any_round_once() {
        let (replays, tasks) = (SharedReplays::default(), SharedTasks::default());
        let a = replica(Some(keys(&[("k1", 1)])), replays.clone(), tasks.clone()).unwrap();
        let b = replica(Some(keys(&[("k1", 1)])), replays.clone(), tasks.clone()).unwrap();
        let retry = first_round(&a).await;
        // The retry lands on the other replica: the shared key verifies it.
        TestClient::new(&b)
            .with_capabilities(caps())
            .request("tools/call", retry.clone())
            .await
            .assert_text("sent 10 to Bo");
        // Replayed on the first replica: the shared replay store refuses it.
        TestClient::new(&a)
            .with_capabilities(caps())
            .request("tools/call", retry)
            .await
            .assert_error(-32602);
    }

    #[tokio::test]
    async fn keys_rotate_without_breaking_calls_in_flight() {
        let (replays, tasks) = (SharedReplays::default(), SharedTasks::default());
        let old = replica(Some(keys(&[("k1", 1)])), replays.clone(), tasks.clone()).unwrap();
        // The new key signs; the old one still verifies until its tokens expire.
        let rotated = keys(&[("k2", 2), ("k1", 1)]);
        let new = replica(Some(rotated), replays.clone(), tasks.clone()).unwrap();
        let retry = first_round(&old).await;
        let client = TestClient::new(&new).with_capabilities(caps());
        client
            .request("tools/call", retry)
            .await
            .assert_text("sent 10 to Bo");
        // A replica that does not hold the signing key refuses the state.
        let stranger = replica(Some(keys(&[("k9", 9)])), replays, tasks).unwrap();
        let retry = first_round(&new).await;
        TestClient::new(&stranger)
            .with_capabilities(caps())
            .request("tools/call", retry)
            .await
            .assert_error(-32602);
    }

    #[tokio::test]
    async fn a_shared_task_store_answers_on_every_replica() {
        let (replays, tasks) = (SharedReplays::default(), SharedTasks::default());
        let a = replica(Some(keys(&[("k1", 1)])), replays.clone(), tasks.clone()).unwrap();
        let b = replica(Some(keys(&[("k1", 1)])), replays, tasks).unwrap();
        let created = TestClient::new(&a)
            .with_capabilities(caps())
            .call_tool("reindex", json!({}))
            .await;
        let id = created.result()["taskId"].clone();
        let on_b = TestClient::new(&b).with_capabilities(caps());
        loop {
            let task = on_b.request("tasks/get", json!({"taskId": id})).await;
            if task.result()["status"] == "completed" {
                let text = &task.result()["result"]["content"][0]["text"];
                assert_eq!(text, "index rebuilt");
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
}
// ANCHOR_END: tests
