//! The contract every [`TaskStore`] keeps: one check per rule the trait documents, and
//! [`run_all`] to run them all on fresh stores. presa runs it on its own stores; run it
//! on yours (Redis, DynamoDB, another database) from a test:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use presa::tasks::{MemoryStore, contract};
//!
//! contract::run_all(|| async { MemoryStore::default() }).await;
//! # }
//! ```
//!
//! Each check takes an empty store, panics with the rule it found broken (so it reads as
//! a failed test), and leaves behind the tasks it made. Times are fixed Unix milliseconds,
//! not the clock, so a store must take `now_ms` from its caller, as the trait says.

use super::store::{Lease, StoreError, TaskRecord, TaskStatus, TaskStore, WorkDescriptor};
use super::{DEFAULT_MAX_INPUT_BYTES, DEFAULT_MAX_RESULT_BYTES};
use serde_json::{Map, Value, json};
use std::future::Future;

/// The creation time of the records the checks make (Unix milliseconds).
const CREATED: u64 = 1_700_000_000_000;
/// A TTL, in milliseconds.
const TTL: u64 = 60_000;
/// The longest TTL presa gives a task: the schema's bound for `ttlMs`, 2^53 − 1.
const LONGEST_TTL: u64 = (1 << 53) - 1;

/// Runs every check, each on a store `make` gives, which must be empty. The order is the
/// order the checks are listed in this module.
pub async fn run_all<S, F, Fut>(mut make: F)
where
    S: TaskStore,
    F: FnMut() -> Fut,
    Fut: Future<Output = S>,
{
    insert_then_get(&make().await).await;
    duplicate_insert_is_refused(&make().await).await;
    unknown_ids_are_none(&make().await).await;
    status_agrees_with_get(&make().await).await;
    compare_and_set_bumps_the_revision(&make().await).await;
    stale_compare_and_set_conflicts(&make().await).await;
    compare_and_set_of_a_missing_task_conflicts(&make().await).await;
    concurrent_compare_and_sets_one_wins(&make().await).await;
    count_excludes_expired(&make().await).await;
    remove_expired_deletes_exactly_the_expired(&make().await).await;
    records_round_trip_whole(&make().await).await;
    large_records_round_trip(&make().await).await;
    no_ttl_never_expires(&make().await).await;
    claimable_is_exactly_the_unheld_working_tasks(&make().await).await;
    claimable_is_bounded_and_oldest_lease_first(&make().await).await;
    leases_follow_compare_and_set(&make().await).await;
}

/// A working task, created at [`CREATED`], kept `ttl_ms`.
pub(crate) fn record(id: &str, scope: &str, ttl_ms: Option<u64>) -> TaskRecord {
    TaskRecord {
        id: id.to_owned(),
        scope: scope.to_owned(),
        status: TaskStatus::Working,
        status_message: Some("Task accepted".into()),
        created_at: CREATED,
        last_updated_at: CREATED,
        ttl_ms,
        poll_interval_ms: 250,
        input_requests: Map::new(),
        answers: Map::new(),
        result: None,
        error: None,
        work: WorkDescriptor {
            tool: "reindex".into(),
            arguments: object(json!({"depth": 3})),
            client_capabilities: object(json!({"extensions": {super::ID: {}}})),
            protocol_version: crate::wire::meta::PROTOCOL_VERSION.into(),
            principal: None,
            idempotency_key: format!("key-{id}"),
            traceparent: None,
        },
        revision: 0,
        lease: None,
    }
}

/// [`record`], held by `owner`'s lease of `generation` until `expires_at`.
fn leased(id: &str, owner: &str, generation: u64, expires_at: u64) -> TaskRecord {
    let mut r = record(id, "s", Some(TTL));
    r.lease = Some(Lease::new(owner, generation, expires_at));
    r
}

/// The ids of `records`, sorted.
fn ids(records: &[TaskRecord]) -> Vec<String> {
    let mut ids: Vec<String> = records.iter().map(|r| r.id.clone()).collect();
    ids.sort();
    ids
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// `what`, or a panic naming the rule and the store's fault.
fn answered<T>(rule: &str, what: Result<T, StoreError>) -> T {
    match what {
        Ok(t) => t,
        Err(e) => panic!("task store contract, {rule}: the store failed: {e}"),
    }
}

async fn get(store: &dyn TaskStore, rule: &str, id: &str) -> Option<TaskRecord> {
    answered(rule, store.get(id).await)
}

async fn insert(store: &dyn TaskStore, rule: &str, r: &TaskRecord) {
    answered(rule, store.insert(r.clone()).await);
}

/// A record inserted is what `get` returns, whole.
pub async fn insert_then_get(store: &dyn TaskStore) {
    let rule = "insert then get returns the record";
    let r = record("insert-1", "principal:alice", Some(TTL));
    insert(store, rule, &r).await;
    assert_eq!(
        get(store, rule, &r.id).await,
        Some(r),
        "task store contract: {rule}"
    );
}

/// A second insert under an existing id is [`StoreError::Duplicate`], and the first
/// record stays as it was.
pub async fn duplicate_insert_is_refused(store: &dyn TaskStore) {
    let rule = "a duplicate insert is refused and changes nothing";
    let first = record("dup-1", "principal:alice", Some(TTL));
    insert(store, rule, &first).await;
    let mut second = record("dup-1", "principal:bob", None);
    second.status = TaskStatus::Completed;
    second.result = Some(json!({"content": []}));
    assert_eq!(
        store.insert(second).await,
        Err(StoreError::Duplicate),
        "task store contract: {rule}"
    );
    assert_eq!(
        get(store, rule, "dup-1").await,
        Some(first),
        "task store contract: {rule}"
    );
}

/// `get` and `status` of an id never inserted are `None`.
pub async fn unknown_ids_are_none(store: &dyn TaskStore) {
    let rule = "get and status of an unknown id are None";
    insert(store, rule, &record("known", "s", None)).await;
    for id in ["unknown", "know", "known ", "KNOWN", ""] {
        assert_eq!(
            get(store, rule, id).await,
            None,
            "task store contract: {rule}: {id:?}"
        );
        assert_eq!(
            answered(rule, store.status(id).await),
            None,
            "task store contract: {rule}: {id:?}"
        );
    }
}

/// `status` gives the status `get` gives, through every status.
pub async fn status_agrees_with_get(store: &dyn TaskStore) {
    let rule = "status agrees with get";
    let mut r = record("status-1", "s", Some(TTL));
    insert(store, rule, &r).await;
    for status in [
        TaskStatus::Working,
        TaskStatus::InputRequired,
        TaskStatus::Working,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ] {
        let expected = r.revision;
        r.status = status;
        r = answered(rule, store.compare_and_set(expected, r.clone()).await);
        let got = get(store, rule, &r.id).await.map(|r| r.status);
        assert_eq!(got, Some(status), "task store contract: {rule}: get");
        assert_eq!(
            answered(rule, store.status(&r.id).await),
            Some(status),
            "task store contract: {rule}: status"
        );
    }
}

/// A compare-and-set from the stored revision stores the record with the revision one
/// higher, and returns exactly what `get` then gives.
pub async fn compare_and_set_bumps_the_revision(store: &dyn TaskStore) {
    let rule = "compare_and_set from the stored revision bumps it by one";
    let r = record("cas-1", "s", Some(TTL));
    insert(store, rule, &r).await;
    for expected in 0..3 {
        let mut next = get(store, rule, &r.id).await.expect("inserted");
        next.status_message = Some(format!("step {expected}"));
        next.last_updated_at = CREATED + expected + 1;
        let stored = answered(rule, store.compare_and_set(expected, next.clone()).await);
        next.revision = expected + 1;
        assert_eq!(stored, next, "task store contract: {rule}: returned");
        assert_eq!(
            get(store, rule, &r.id).await,
            Some(next),
            "task store contract: {rule}: stored"
        );
    }
}

/// A compare-and-set from any other revision (older or newer) is
/// [`StoreError::Conflict`] and changes nothing.
pub async fn stale_compare_and_set_conflicts(store: &dyn TaskStore) {
    let rule = "compare_and_set from another revision conflicts and changes nothing";
    let r = record("stale-1", "s", Some(TTL));
    insert(store, rule, &r).await;
    let current = answered(rule, store.compare_and_set(0, r.clone()).await);
    for expected in [0, 2, u64::MAX] {
        let mut change = current.clone();
        change.status = TaskStatus::Cancelled;
        assert_eq!(
            store.compare_and_set(expected, change).await,
            Err(StoreError::Conflict),
            "task store contract: {rule}: expected {expected}"
        );
        assert_eq!(
            get(store, rule, &r.id).await,
            Some(current.clone()),
            "task store contract: {rule}: expected {expected}"
        );
    }
}

/// A compare-and-set of a task that does not exist is [`StoreError::Conflict`] and
/// stores nothing.
pub async fn compare_and_set_of_a_missing_task_conflicts(store: &dyn TaskStore) {
    let rule = "compare_and_set of a missing task conflicts and stores nothing";
    let r = record("missing-1", "s", Some(TTL));
    assert_eq!(
        store.compare_and_set(0, r.clone()).await,
        Err(StoreError::Conflict),
        "task store contract: {rule}"
    );
    assert_eq!(
        get(store, rule, &r.id).await,
        None,
        "task store contract: {rule}"
    );
    assert_eq!(
        answered(rule, store.count(None, CREATED).await),
        0,
        "task store contract: {rule}"
    );
}

/// Of several compare-and-sets started at once from the same revision, exactly one
/// succeeds, and the stored record is the one it wrote.
pub async fn concurrent_compare_and_sets_one_wins(store: &dyn TaskStore) {
    let rule = "of concurrent compare_and_sets from one revision exactly one wins";
    let r = record("race-1", "s", Some(TTL));
    insert(store, rule, &r).await;
    let tries = (0..8).map(|i| {
        let mut next = r.clone();
        next.status_message = Some(format!("writer {i}"));
        store.compare_and_set(0, next)
    });
    let outcomes = futures_util::future::join_all(tries).await;
    let mut won = Vec::new();
    for outcome in outcomes {
        match outcome {
            Ok(stored) => won.push(stored),
            Err(StoreError::Conflict) => {}
            Err(e) => panic!("task store contract, {rule}: the store failed: {e}"),
        }
    }
    assert_eq!(won.len(), 1, "task store contract: {rule}: {won:?}");
    assert_eq!(
        get(store, rule, &r.id).await,
        won.pop(),
        "task store contract: {rule}: the winner's record is stored"
    );
}

/// `count` leaves out tasks expired at `now_ms` (past `created_at + ttl_ms`, not at it),
/// and counts one scope when given one.
pub async fn count_excludes_expired(store: &dyn TaskStore) {
    let rule = "count leaves out expired tasks, in a scope or not";
    let now = CREATED + TTL;
    // At its expiry instant a task still counts; a millisecond past it, it does not.
    let records = [
        record("a-live", "principal:a", Some(TTL)),
        record("a-forever", "principal:a", None),
        record("a-expired", "principal:a", Some(TTL - 1)),
        record("b-live", "principal:b", Some(TTL + 1)),
        record("b-expired", "principal:b", Some(0)),
    ];
    for r in &records {
        insert(store, rule, r).await;
    }
    let count = async |scope: Option<&str>, now: u64| answered(rule, store.count(scope, now).await);
    assert_eq!(
        count(None, now).await,
        3,
        "task store contract: {rule}: all"
    );
    assert_eq!(
        count(Some("principal:a"), now).await,
        2,
        "task store contract: {rule}: scope a"
    );
    assert_eq!(
        count(Some("principal:b"), now).await,
        1,
        "task store contract: {rule}: scope b"
    );
    assert_eq!(
        count(Some("principal:c"), now).await,
        0,
        "task store contract: {rule}: an empty scope"
    );
    assert_eq!(
        count(None, CREATED).await,
        5,
        "task store contract: {rule}: none expired at creation"
    );
    assert_eq!(
        count(None, now + 1).await,
        2,
        "task store contract: {rule}: a millisecond later"
    );
}

/// `remove_expired` deletes exactly the tasks expired at `now_ms`, and says how many.
pub async fn remove_expired_deletes_exactly_the_expired(store: &dyn TaskStore) {
    let rule = "remove_expired deletes exactly the expired tasks and counts them";
    let now = CREATED + TTL;
    let kept = [
        record("kept-at-expiry", "s", Some(TTL)),
        record("kept-forever", "s", None),
        record("kept-longer", "t", Some(TTL + 1)),
    ];
    let gone = [
        record("gone-1", "s", Some(TTL - 1)),
        record("gone-2", "t", Some(0)),
    ];
    for r in kept.iter().chain(&gone) {
        insert(store, rule, r).await;
    }
    assert_eq!(
        answered(rule, store.remove_expired(now).await),
        gone.len(),
        "task store contract: {rule}: how many"
    );
    for r in &kept {
        assert_eq!(
            get(store, rule, &r.id).await.as_ref(),
            Some(r),
            "task store contract: {rule}: {} is kept",
            r.id
        );
    }
    for r in &gone {
        assert_eq!(
            get(store, rule, &r.id).await,
            None,
            "task store contract: {rule}: {} is deleted",
            r.id
        );
    }
    assert_eq!(
        answered(rule, store.remove_expired(now).await),
        0,
        "task store contract: {rule}: nothing left to delete"
    );
    assert_eq!(
        answered(rule, store.remove_expired(now + 1).await),
        1,
        "task store contract: {rule}: a millisecond later"
    );
}

/// A record with every field set (answers, input requests, a result, an error, text
/// beyond ASCII, the longest TTL) comes back whole from `insert` and from
/// `compare_and_set`.
pub async fn records_round_trip_whole(store: &dyn TaskStore) {
    let rule = "records round-trip whole";
    let mut r = record("whole-ü-✓-𝄞", "principal:zoë 名前", Some(LONGEST_TTL));
    r.status = TaskStatus::InputRequired;
    r.status_message = Some("En attente d'une réponse ✋ \"quoted\" \\ \n\t\u{0}".into());
    r.last_updated_at = CREATED + 17;
    r.poll_interval_ms = 1;
    r.input_requests = object(json!({
        "confirm": {"method": "elicitation/create", "params": {"message": "Go? 🚀"}}
    }));
    r.answers = object(json!({
        "earlier": {"action": "accept", "content": {"n": 1.5, "big": 9_007_199_254_740_991_u64, "neg": -3}}
    }));
    r.result = Some(json!({"content": [{"type": "text", "text": "ok ☃"}], "isError": false}));
    r.error =
        Some(json!({"code": -32603, "message": "Internal error", "data": {"retryable": true}}));
    r.work.arguments =
        object(json!({"text": "naïve café ☕ 𝄞", "nested": {"list": [1, "two", null, true]}}));
    r.work.principal = Some(
        crate::auth::Principal::new("zoë")
            .with_client_id("client-✓")
            .with_scopes(["tasks:run", "read"])
            .with_claims(object(json!({"tenant": "αβ", "level": 3}))),
    );
    r.lease = Some(Lease::new("replica-ü", 7, CREATED + 30_000));
    insert(store, rule, &r).await;
    assert_eq!(
        get(store, rule, &r.id).await.as_ref(),
        Some(&r),
        "task store contract: {rule}: after insert"
    );
    let mut next = r.clone();
    next.status = TaskStatus::Failed;
    next.answers
        .insert("later".into(), json!({"action": "decline"}));
    next.lease = None;
    let stored = answered(rule, store.compare_and_set(0, next.clone()).await);
    next.revision = 1;
    assert_eq!(
        stored, next,
        "task store contract: {rule}: returned by compare_and_set"
    );
    assert_eq!(
        get(store, rule, &r.id).await,
        Some(next),
        "task store contract: {rule}: after compare_and_set"
    );
}

/// A record as large as presa lets one grow (work input and answers at
/// [`DEFAULT_MAX_INPUT_BYTES`], a result at [`DEFAULT_MAX_RESULT_BYTES`]) comes back
/// whole.
pub async fn large_records_round_trip(store: &dyn TaskStore) {
    let rule = "records as large as presa's default bounds round-trip whole";
    let mut r = record("large-1", "s", Some(TTL));
    r.work.arguments = object(json!({"blob": "é".repeat(DEFAULT_MAX_INPUT_BYTES / 4)}));
    r.answers = object(json!({"a": {"text": "x".repeat(DEFAULT_MAX_INPUT_BYTES / 2)}}));
    insert(store, rule, &r).await;
    assert_eq!(
        get(store, rule, &r.id).await.as_ref(),
        Some(&r),
        "task store contract: {rule}: the input"
    );
    let mut next = r.clone();
    next.status = TaskStatus::Completed;
    next.result =
        Some(json!({"content": [{"type": "text", "text": "y".repeat(DEFAULT_MAX_RESULT_BYTES)}]}));
    let stored = answered(rule, store.compare_and_set(0, next).await);
    assert_eq!(
        get(store, rule, &r.id).await,
        Some(stored),
        "task store contract: {rule}: the result"
    );
}

/// A task without a TTL is never expired: counted and kept at any time.
pub async fn no_ttl_never_expires(store: &dyn TaskStore) {
    let rule = "a task without a TTL never expires";
    let r = record("forever-1", "s", None);
    insert(store, rule, &r).await;
    for now in [CREATED, CREATED + LONGEST_TTL, i64::MAX as u64, u64::MAX] {
        assert_eq!(
            answered(rule, store.remove_expired(now).await),
            0,
            "task store contract: {rule}: at {now}"
        );
        assert_eq!(
            answered(rule, store.count(None, now).await),
            1,
            "task store contract: {rule}: at {now}"
        );
    }
    assert_eq!(
        get(store, rule, &r.id).await,
        Some(r),
        "task store contract: {rule}"
    );
}

/// `claimable` finds the `working` tasks whose lease has run out (strictly before `now`)
/// or that have none, and no task that is held, waiting for input, ended or expired.
pub async fn claimable_is_exactly_the_unheld_working_tasks(store: &dyn TaskStore) {
    let rule = "claimable is exactly the unheld working tasks";
    let now = CREATED + 10_000;
    insert(store, rule, &record("free", "s", Some(TTL))).await;
    insert(store, rule, &leased("lapsed", "a", 1, now - 1)).await;
    insert(store, rule, &leased("at-now", "a", 1, now)).await;
    insert(store, rule, &leased("held", "a", 1, now + 1)).await;
    let mut waiting = leased("waiting", "a", 1, now - 1);
    waiting.status = TaskStatus::InputRequired;
    insert(store, rule, &waiting).await;
    for (id, status) in [
        ("done", TaskStatus::Completed),
        ("failed", TaskStatus::Failed),
        ("cancelled", TaskStatus::Cancelled),
    ] {
        let mut ended = record(id, "s", Some(TTL));
        ended.status = status;
        insert(store, rule, &ended).await;
    }
    insert(store, rule, &record("expired", "s", Some(1))).await;
    insert(store, rule, &record("forever", "s", None)).await;
    let found = answered(rule, store.claimable(now, 100).await);
    assert_eq!(
        ids(&found),
        ["forever", "free", "lapsed"],
        "task store contract: {rule}"
    );
    let lapsed = found.iter().find(|r| r.id == "lapsed");
    assert_eq!(
        lapsed.and_then(|r| r.lease.clone()),
        Some(Lease::new("a", 1, now - 1)),
        "task store contract: {rule}: records come back whole"
    );
}

/// `claimable` returns at most `limit` tasks, those whose lease ran out longest ago
/// first, after the tasks without one; a limit of zero returns none.
pub async fn claimable_is_bounded_and_oldest_lease_first(store: &dyn TaskStore) {
    let rule = "claimable is bounded, oldest lease first";
    let now = CREATED + 10_000;
    for (id, expired_at) in [("c", now - 10), ("a", now - 30), ("b", now - 20)] {
        insert(store, rule, &leased(id, "x", 2, expired_at)).await;
    }
    insert(store, rule, &record("none", "s", Some(TTL))).await;
    assert_eq!(
        answered(rule, store.claimable(now, 0).await),
        Vec::<TaskRecord>::new(),
        "task store contract: {rule}: limit 0"
    );
    let three: Vec<String> = answered(rule, store.claimable(now, 3).await)
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(three, ["none", "a", "b"], "task store contract: {rule}");
    assert_eq!(
        answered(rule, store.claimable(now, 4).await).len(),
        4,
        "task store contract: {rule}: at the limit"
    );
    assert_eq!(
        answered(rule, store.claimable(now, 5).await).len(),
        4,
        "task store contract: {rule}: past the number of tasks"
    );
}

/// A lease taken, renewed or given up with compare-and-set is what `claimable` sees next.
pub async fn leases_follow_compare_and_set(store: &dyn TaskStore) {
    let rule = "leases follow compare_and_set";
    let now = CREATED + 10_000;
    insert(store, rule, &record("t", "s", Some(TTL))).await;
    let claimable = |now| async move { ids(&answered(rule, store.claimable(now, 10).await)) };
    assert_eq!(claimable(now).await, ["t"], "task store contract: {rule}");
    let mut claimed = record("t", "s", Some(TTL));
    claimed.lease = Some(Lease::new("b", 2, now + 5_000));
    let claimed = answered(rule, store.compare_and_set(0, claimed).await);
    assert!(
        claimable(now).await.is_empty(),
        "task store contract: {rule}: a claimed task is held"
    );
    assert_eq!(
        claimable(now + 5_001).await,
        ["t"],
        "task store contract: {rule}: until its lease runs out"
    );
    let mut renewed = claimed.clone();
    renewed.lease = Some(Lease::new("b", 2, now + 9_000));
    answered(rule, store.compare_and_set(claimed.revision, renewed).await);
    assert!(
        claimable(now + 5_001).await.is_empty(),
        "task store contract: {rule}: a renewed lease holds it longer"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::{MemoryStore, StoreFuture};

    #[tokio::test]
    async fn the_memory_store_keeps_the_contract() {
        run_all(|| async { MemoryStore::default() }).await;
    }

    /// A store that breaks one rule, so the checks are seen to catch it.
    #[derive(Default)]
    struct Broken {
        inner: MemoryStore,
        /// compare_and_set ignores the revision (a lost update).
        blind_writes: bool,
        /// count counts expired tasks.
        counts_expired: bool,
    }

    impl TaskStore for Broken {
        fn insert(&self, record: TaskRecord) -> StoreFuture<'_, ()> {
            self.inner.insert(record)
        }
        fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
            self.inner.get(id)
        }
        fn compare_and_set(
            &self,
            expected: u64,
            record: TaskRecord,
        ) -> StoreFuture<'_, TaskRecord> {
            Box::pin(async move {
                let current = self.inner.get(&record.id).await?;
                match current {
                    Some(c) if self.blind_writes => {
                        self.inner.compare_and_set(c.revision, record).await
                    }
                    _ => self.inner.compare_and_set(expected, record).await,
                }
            })
        }
        fn count<'a>(&'a self, scope: Option<&'a str>, now_ms: u64) -> StoreFuture<'a, usize> {
            let now = if self.counts_expired { 0 } else { now_ms };
            self.inner.count(scope, now)
        }
        fn remove_expired(&self, now_ms: u64) -> StoreFuture<'_, usize> {
            self.inner.remove_expired(now_ms)
        }
        fn claimable(&self, now_ms: u64, limit: usize) -> StoreFuture<'_, Vec<TaskRecord>> {
            self.inner.claimable(now_ms, limit)
        }
    }

    #[tokio::test]
    #[should_panic(expected = "compare_and_set from another revision conflicts")]
    async fn a_store_that_loses_updates_fails_the_contract() {
        let store = Broken {
            blind_writes: true,
            ..Broken::default()
        };
        stale_compare_and_set_conflicts(&store).await;
    }

    #[tokio::test]
    #[should_panic(expected = "count leaves out expired tasks")]
    async fn a_store_that_counts_expired_tasks_fails_the_contract() {
        let store = Broken {
            counts_expired: true,
            ..Broken::default()
        };
        count_excludes_expired(&store).await;
    }

    #[tokio::test]
    async fn the_default_status_reads_through_get() {
        status_agrees_with_get(&Broken::default()).await;
        unknown_ids_are_none(&Broken::default()).await;
    }
}
