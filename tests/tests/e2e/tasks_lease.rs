//! Leases on tasks, between servers sharing one store in this process (each server's view
//! of the store can be cut off, as a replica loses its database): a run holds a lease it
//! renews; a run whose lease was taken over writes nothing (fencing) and is stopped; a
//! task whose replica stopped renewing runs again on another replica, with the same
//! idempotency key and the next attempt; an answer given to a task whose replica died
//! runs it on the replica that took the answer; and renewals publish nothing. The same
//! across real processes, killed with SIGKILL, is in `replicas.rs`.

use crate::tasks::{Client, Kind, Tasking, declared, tool};
use presa::tasks::{
    Lease, MemoryStore, StoreError, StoreFuture, TaskMode, TaskRecord, TaskStatus, TaskStore,
    Tasks, TasksBuilder,
};
use presa::{Error, Implementation, Server, Tool, ToolCall};
use presa_tests::wait::{Deadline, until};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::Semaphore;

/// The lease of the tests that let one run out: short, so a task resumes within about
/// 1⅓ of it.
const LEASE: Duration = Duration::from_millis(300);

/// One replica's view of the shared store: while `cut`, every call fails, as a replica
/// that lost its database sees it; while `hung`, no call ever answers, as behind a
/// network that drops packets.
#[derive(Clone)]
struct View {
    shared: Arc<MemoryStore>,
    cut: Arc<AtomicBool>,
    hung: Arc<AtomicBool>,
}

impl View {
    fn fault<T: Send + 'static>(&self) -> Option<StoreFuture<'static, T>> {
        if self.hung.load(SeqCst) {
            return Some(Box::pin(std::future::pending()));
        }
        self.cut.load(SeqCst).then(|| -> StoreFuture<'static, T> {
            Box::pin(async { Err(StoreError::Unavailable("cut off".into())) })
        })
    }
}

impl TaskStore for View {
    fn insert(&self, record: TaskRecord) -> StoreFuture<'_, ()> {
        self.fault().unwrap_or_else(|| self.shared.insert(record))
    }
    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        self.fault().unwrap_or_else(|| self.shared.get(id))
    }
    fn compare_and_set(&self, expected: u64, record: TaskRecord) -> StoreFuture<'_, TaskRecord> {
        self.fault()
            .unwrap_or_else(|| self.shared.compare_and_set(expected, record))
    }
    fn count<'a>(&'a self, scope: Option<&'a str>, now_ms: u64) -> StoreFuture<'a, usize> {
        self.fault()
            .unwrap_or_else(|| self.shared.count(scope, now_ms))
    }
    fn remove_expired(&self, now_ms: u64) -> StoreFuture<'_, usize> {
        self.fault()
            .unwrap_or_else(|| self.shared.remove_expired(now_ms))
    }
    fn claimable(&self, now_ms: u64, limit: usize) -> StoreFuture<'_, Vec<TaskRecord>> {
        self.fault()
            .unwrap_or_else(|| self.shared.claimable(now_ms, limit))
    }
}

/// One run of a tool, as the tool saw it.
#[derive(Clone, Debug, PartialEq)]
struct Seen {
    replica: &'static str,
    key: Option<String>,
    attempt: u64,
    at: Instant,
}

/// What the tools of every replica record, and the gate they wait at.
#[derive(Clone)]
struct Shared {
    runs: Arc<Mutex<Vec<Seen>>>,
    /// Runs that ended without finishing (their future dropped).
    dropped: Arc<Mutex<Vec<(&'static str, Instant)>>>,
    gate: Arc<Semaphore>,
}

impl Shared {
    fn new() -> Shared {
        Shared {
            runs: Arc::default(),
            dropped: Arc::default(),
            gate: Arc::new(Semaphore::new(0)),
        }
    }

    fn runs(&self) -> Vec<Seen> {
        self.runs.lock().expect("runs").clone()
    }

    fn dropped(&self) -> Vec<(&'static str, Instant)> {
        self.dropped.lock().expect("dropped").clone()
    }

    async fn until_runs(&self, n: usize, what: &str) {
        until(what, || self.runs().len() >= n).await;
    }

    async fn until_dropped(&self, n: usize, what: &str) {
        until(what, || self.dropped().len() >= n).await;
    }
}

/// Records a dropped run when dropped before `finished`.
struct Unfinished {
    replica: &'static str,
    dropped: Arc<Mutex<Vec<(&'static str, Instant)>>>,
    finished: bool,
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if !self.finished
            && let Ok(mut d) = self.dropped.lock()
        {
            d.push((self.replica, Instant::now()));
        }
    }
}

#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
struct Proceed {
    /// Whether to go on.
    proceed: bool,
}

/// A replica named `replica`: the tools `durable` (records its run, waits at the gate,
/// answers with its key and attempt) and `durable_ask` (asks first, then does the same),
/// on `view` of the store.
fn replica(replica: &'static str, shared: &Shared, view: View, knobs: TasksBuilder) -> Server {
    let record = move |shared: &Shared, call: &ToolCall| {
        let seen = Seen {
            replica,
            key: call.ctx.idempotency_key().map(str::to_owned),
            attempt: call.ctx.attempt(),
            at: Instant::now(),
        };
        shared.runs.lock().expect("runs").push(seen);
    };
    let run = move |shared: Shared, call: ToolCall| async move {
        record(&shared, &call);
        let mut guard = Unfinished {
            replica,
            dropped: Arc::clone(&shared.dropped),
            finished: false,
        };
        if let Ok(p) = shared.gate.acquire().await {
            p.forget();
        }
        guard.finished = true;
        format!(
            "{replica} ran attempt {} with key {}",
            call.ctx.attempt(),
            call.ctx.idempotency_key().unwrap_or("none")
        )
    };
    let (s1, s2) = (shared.clone(), shared.clone());
    Server::builder(Implementation::new("presa-lease-tests", "0.0.1"))
        .tool(
            Tool::new("durable")
                .description("Waits at the gate; says which run it was")
                .task(TaskMode::Required)
                .handler(move |call: ToolCall| run(s1.clone(), call)),
        )
        .tool(
            Tool::new("durable_ask")
                .description("Asks whether to proceed, then does what durable does")
                .task(TaskMode::Required)
                .handler(move |call: ToolCall| {
                    let shared = s2.clone();
                    async move {
                        let answer = call.ctx.elicit::<Proceed>("proceed", "Proceed?").get()?;
                        let go = matches!(
                            answer,
                            presa::mrtr::Elicitation::Accepted(Proceed { proceed: true })
                        );
                        let said = run(shared, call).await;
                        Ok::<_, Error>(format!("proceed: {go}; {said}"))
                    }
                }),
        )
        .tool(
            Tool::new("direct")
                .description("Answers in the request with its key and attempt")
                .handler(|call: ToolCall| async move {
                    json!({
                        "key": call.ctx.idempotency_key(),
                        "attempt": call.ctx.attempt(),
                    })
                    .to_string()
                }),
        )
        .extension(knobs.store(view).build())
        .build()
        .expect("the replica builds")
}

/// Two views of one store, and whether each is cut.
fn views() -> (Arc<MemoryStore>, View, View) {
    let shared = Arc::new(MemoryStore::default());
    let view = || View {
        shared: Arc::clone(&shared),
        cut: Arc::default(),
        hung: Arc::default(),
    };
    let (a, b) = (view(), view());
    (shared, a, b)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The stored record of task `id`.
async fn stored(store: &MemoryStore, id: &str) -> TaskRecord {
    store
        .get(id)
        .await
        .expect("the store answers")
        .expect("the task is stored")
}

/// Replaces the lease of task `id` with `lease`, as another replica claiming it would.
async fn take_over(store: &MemoryStore, id: &str, lease: Lease) -> TaskRecord {
    let current = stored(store, id).await;
    let mut next = current.clone();
    next.lease = Some(lease);
    store
        .compare_and_set(current.revision, next)
        .await
        .expect("taken over")
}

/// A task whose replica lost the store runs again on another replica once its lease ran
/// out: the first run is stopped before its lease runs out (never two at once), the
/// second sees the same idempotency key and attempt 2, and its outcome is what every
/// replica answers afterwards.
#[tokio::test]
async fn a_task_whose_replica_stops_renewing_runs_again_elsewhere_with_the_same_key() {
    let shared = Shared::new();
    let (store, view_a, view_b) = views();
    let knobs = || Tasks::builder().lease(LEASE);
    let a = replica("a", &shared, view_a.clone(), knobs());
    let b = replica("b", &shared, view_b, knobs());
    let mut on_a = Client::start(Kind::Http, &a).await;
    let mut on_b = Client::start(Kind::Http, &b).await;
    let id = on_a.create("durable", json!({})).await;
    shared.until_runs(1, "the first run starts on a").await;
    let first = stored(&store, &id).await;
    let lease = first.lease.clone().expect("a lease from creation");
    assert_eq!(lease.generation, 1);
    let lease_ms = u64::try_from(LEASE.as_millis()).expect("ms");
    assert!(
        lease.expires_at >= first.created_at + lease_ms,
        "{lease:?} {first:?}"
    );

    view_a.cut.store(true, SeqCst);
    let cut_at = Instant::now();
    shared.until_runs(2, "the task runs again on b").await;
    let resumed_after = cut_at.elapsed();
    assert!(
        resumed_after < LEASE * 3,
        "resumed within about 1⅓ leases of the last renewal: {resumed_after:?}"
    );
    let runs = shared.runs();
    assert_eq!(
        runs.iter()
            .map(|r| (r.replica, r.attempt))
            .collect::<Vec<_>>(),
        [("a", 1), ("b", 2)]
    );
    let key = runs[0].key.clone().expect("a task's run has a key");
    assert_eq!(runs[1].key.as_deref(), Some(key.as_str()), "the same key");
    assert_ne!(key, id, "the key is not the task id");
    let dropped = shared.dropped();
    assert_eq!(dropped.len(), 1, "a's run was stopped: {dropped:?}");
    assert_eq!(dropped[0].0, "a");
    assert!(
        dropped[0].1 <= runs[1].at,
        "a's run stopped before b's began"
    );
    let claimed = stored(&store, &id).await.lease.expect("b's lease");
    assert_eq!(claimed.generation, 2);
    assert_ne!(claimed.owner, lease.owner);

    shared.gate.add_permits(1);
    let done = on_b.wait_terminal(&id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"],
        format!("b ran attempt 2 with key {key}")
    );
    view_a.cut.store(false, SeqCst);
    assert_eq!(on_a.get(&id).await["status"], "completed");
    assert_eq!(shared.runs().len(), 2, "no third run");
}

/// A run whose lease another run took over writes nothing when it finishes: the task
/// keeps the other run's lease and stays `working`.
#[tokio::test]
async fn a_run_whose_lease_was_taken_over_writes_nothing() {
    let shared = Shared::new();
    let (store, view, _) = views();
    // A long lease: the run is not told by a renewal before it finishes.
    let a = replica("a", &shared, view, Tasks::builder());
    let mut on_a = Client::start(Kind::Http, &a).await;
    let id = on_a.create("durable", json!({})).await;
    shared.until_runs(1, "the run starts").await;
    let far = now_ms() + 600_000;
    let taken = take_over(&store, &id, Lease::new("elsewhere", 2, far)).await;
    shared.gate.add_permits(1);
    // The run finishes (its outcome is refused); nothing changes afterwards.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = stored(&store, &id).await;
    assert_eq!(after, taken, "nothing written over the other run's lease");
    assert_eq!(after.status, TaskStatus::Working);
    assert!(after.result.is_none());
    assert_eq!(on_a.get(&id).await["status"], "working");
}

/// A run whose lease was taken over is stopped at its next renewal: its tool's future is
/// dropped, and the record stays the other run's.
#[tokio::test]
async fn a_run_whose_lease_was_taken_over_is_stopped_at_its_next_renewal() {
    let shared = Shared::new();
    let (store, view, _) = views();
    let a = replica("a", &shared, view, Tasks::builder().lease(LEASE));
    let mut on_a = Client::start(Kind::Http, &a).await;
    let id = on_a.create("durable", json!({})).await;
    shared.until_runs(1, "the run starts").await;
    let taken = take_over(&store, &id, Lease::new("elsewhere", 2, now_ms() + 600_000)).await;
    let at = Instant::now();
    shared.until_dropped(1, "the run is stopped").await;
    assert!(
        at.elapsed() < LEASE,
        "stopped within a renewal interval: {:?}",
        at.elapsed()
    );
    tokio::time::sleep(LEASE).await;
    assert_eq!(stored(&store, &id).await, taken);
}

/// A task parked for input whose replica died is answered through another replica: the
/// answer is kept in the store, and the answering replica claims the task (its lease ran
/// out) and runs it with the answer, at once rather than at its next look.
#[tokio::test]
async fn an_answer_to_a_task_whose_replica_died_runs_it_where_it_was_answered() {
    let shared = Shared::new();
    let (store, view_a, view_b) = views();
    // b looks for tasks to claim only every 20 s: the answer must make it look at once.
    let a = replica("a", &shared, view_a.clone(), Tasks::builder().lease(LEASE));
    let b = replica(
        "b",
        &shared,
        view_b,
        Tasks::builder().lease(Duration::from_secs(60)),
    );
    let mut on_a = Client::start(Kind::Http, &a).await;
    let mut on_b = Client::start(Kind::Http, &b).await;
    let id = on_a.create("durable_ask", json!({})).await;
    on_a.wait_for(&id, &["input_required"]).await;
    view_a.cut.store(true, SeqCst);
    // a's lease runs out.
    let deadline = Deadline::new("a's lease runs out");
    loop {
        let lease = stored(&store, &id).await.lease;
        if lease.as_ref().is_some_and(|l| l.expires_at < now_ms()) {
            break;
        }
        deadline.tick(format!("{lease:?}")).await;
    }
    let answered_at = Instant::now();
    on_b.update(
        &id,
        json!({"proceed": {"action": "accept", "content": {"proceed": true}}}),
    )
    .await;
    shared.until_runs(1, "b runs the answered task").await;
    assert!(
        answered_at.elapsed() < Duration::from_secs(5),
        "b claimed it when answered: {:?}",
        answered_at.elapsed()
    );
    let runs = shared.runs();
    assert_eq!((runs[0].replica, runs[0].attempt), ("b", 2));
    shared.gate.add_permits(1);
    let done = on_b.wait_terminal(&id).await;
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(text.starts_with("proceed: true; b ran attempt 2"), "{done}");
}

/// Renewing a lease changes nothing a client sees: a listener hears no notification while
/// a task runs through many renewals, and hears its completion.
#[tokio::test]
async fn renewals_publish_nothing() {
    let shared = Shared::new();
    let (store, view, _) = views();
    let lease = Duration::from_millis(90);
    let a = replica("a", &shared, view, Tasks::builder().lease(lease));
    let mut on_a = Client::start(Kind::Http, &a).await;
    let id = on_a.create("durable", json!({})).await;
    shared.until_runs(1, "the run starts").await;
    let listening = on_a
        .listen_tasks(declared(json!({"notifications": {"taskIds": [id]}})))
        .await
        .expect("listening");
    let before = stored(&store, &id).await;
    tokio::time::sleep(lease * 6).await;
    let after = stored(&store, &id).await;
    assert!(
        after.revision >= before.revision + 3,
        "renewed several times: {} → {}",
        before.revision,
        after.revision
    );
    assert_eq!(after.last_updated_at, before.last_updated_at);
    assert_eq!(
        on_a.event(&listening, Duration::from_millis(50)).await,
        None,
        "no notification for a renewal"
    );
    shared.gate.add_permits(1);
    let events = on_a.task_events_until(&listening, &id, "completed").await;
    assert_eq!(events.len(), 1, "the completion alone: {events:#?}");
}

/// A call answered in its request has no idempotency key, and is attempt 1.
#[tokio::test]
async fn a_direct_call_has_no_key_and_is_attempt_one() {
    let (_, view, _) = views();
    let a = replica("a", &Shared::new(), view, Tasks::builder());
    let mut on_a = Client::start(Kind::Http, &a).await;
    let got = on_a
        .send("tools/call", declared(tool("direct", json!({}))))
        .await;
    let text = got.result()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let seen: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(seen, json!({"key": null, "attempt": 1}));
}

/// A `working` task left in the store by a replica that died (its lease ran out) is run
/// by a replica started afterwards, without any request: the claimer starts when the
/// server is built on a runtime.
#[tokio::test]
async fn a_replica_started_later_runs_the_tasks_left_behind_unasked() {
    let shared = Shared::new();
    let (store, view_a, view_b) = views();
    let a = replica("a", &shared, view_a.clone(), Tasks::builder().lease(LEASE));
    let mut on_a = Client::start(Kind::Http, &a).await;
    let id = on_a.create("durable", json!({})).await;
    shared.until_runs(1, "the first run starts").await;
    // a dies: cut off for good, and its server dropped.
    view_a.cut.store(true, SeqCst);
    drop((on_a, a));
    let _b = replica("b", &shared, view_b, Tasks::builder().lease(LEASE));
    shared.until_runs(2, "b runs the task left behind").await;
    let runs = shared.runs();
    assert_eq!((runs[1].replica, runs[1].attempt), ("b", 2));
    assert_eq!(runs[1].key, runs[0].key);
    shared.gate.add_permits(1);
    let deadline = Deadline::new("the task completes");
    loop {
        let record = stored(&store, &id).await;
        if record.status == TaskStatus::Completed {
            break;
        }
        deadline.tick(format!("{:?}", record.status)).await;
    }
}

/// A replica built outside a runtime starts its claimer with its first call: a task left
/// behind is then run there.
#[test]
fn a_replica_built_outside_a_runtime_claims_once_it_is_called() {
    let shared = Shared::new();
    let (store, view_a, view_b) = views();
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let id = runtime.block_on(async {
        let a = replica("a", &shared, view_a.clone(), Tasks::builder().lease(LEASE));
        let mut on_a = Client::start(Kind::Http, &a).await;
        let id = on_a.create("durable", json!({})).await;
        shared.until_runs(1, "the first run starts").await;
        view_a.cut.store(true, SeqCst);
        id
    });
    // Built with no runtime entered.
    let b = replica("b", &shared, view_b, Tasks::builder().lease(LEASE));
    runtime.block_on(async {
        // Its lease runs out; nothing claims it while b is not called.
        tokio::time::sleep(LEASE * 2).await;
        assert_eq!(shared.runs().len(), 1, "not claimed before b is called");
        let mut on_b = Client::start(Kind::Http, &b).await;
        let got = on_b
            .send("tools/call", declared(tool("direct", json!({}))))
            .await;
        assert!(got.result()["content"].is_array());
        shared.until_runs(2, "b runs the task left behind").await;
        assert_eq!(shared.runs()[1].replica, "b");
        let record = stored(&store, &id).await;
        assert_eq!(record.lease.map(|l| l.generation), Some(2));
    });
}

/// A replica whose store stops answering (no error, no answer) stops its run before the
/// lease it holds runs out, though the renewal it sent never comes back: it never runs on
/// while another replica may have claimed the task.
#[tokio::test]
async fn a_run_stops_before_its_lease_runs_out_when_the_store_hangs() {
    let shared = Shared::new();
    let (_, view, _) = views();
    let a = replica("a", &shared, view.clone(), Tasks::builder().lease(LEASE));
    let mut on_a = Client::start(Kind::Http, &a).await;
    on_a.create("durable", json!({})).await;
    shared.until_runs(1, "the run starts").await;
    view.hung.store(true, SeqCst);
    let hung = Instant::now();
    shared.until_dropped(1, "the run stops").await;
    // Its last renewal, at most a renewal interval before the store hung, holds it a
    // lease from then; the run stops a renewal interval before that.
    assert!(
        hung.elapsed() < LEASE,
        "stopped within its lease: {:?}",
        hung.elapsed()
    );
}

/// A task stored before leases (no idempotency key, no principal, no lease) is claimed
/// with a key of its own, kept for every later run, and acts for the principal its scope
/// names.
#[tokio::test]
async fn a_task_stored_before_leases_gets_a_key_and_its_principal_when_claimed() {
    let shared = Shared::new();
    let (store, _, view) = views();
    let now = now_ms();
    let mut record: TaskRecord = serde_json::from_value(json!({
        "id": "before-leases",
        "scope": "principal:alice",
        "status": "working",
        "status_message": "Task accepted",
        "created_at": now,
        "last_updated_at": now,
        "ttl_ms": 600_000,
        "poll_interval_ms": 250,
        "input_requests": {},
        "answers": {},
        "result": null,
        "error": null,
        "work": {
            "tool": "durable",
            "arguments": {},
            "client_capabilities": {},
            "protocol_version": "2026-07-28"
        },
        "revision": 0
    }))
    .expect("a record as a build before leases stored it");
    assert!(record.work.idempotency_key.is_empty() && record.lease.is_none());
    store.insert(record.clone()).await.expect("stored");
    let _b = replica("b", &shared, view, Tasks::builder().lease(LEASE));
    shared.until_runs(1, "b claims and runs it").await;
    let run = &shared.runs()[0];
    assert_eq!(
        run.attempt, 1,
        "the first claim of a record without a lease"
    );
    let key = run.key.clone().expect("a key");
    assert!(!key.is_empty());
    record = stored(&store, "before-leases").await;
    assert_eq!(record.work.idempotency_key, key, "the key is kept");
    assert_eq!(
        record.work.principal.as_ref().map(|p| p.id()),
        Some("alice")
    );
}

/// A replica without the task's tool leaves a task whose lease ran out to one that has
/// it: the task is not failed, and is run by the replica serving the tool.
#[tokio::test]
async fn a_replica_without_the_tool_leaves_the_task_to_one_with_it() {
    let shared = Shared::new();
    let (store, view_a, view_b) = views();
    let a = replica("a", &shared, view_a.clone(), Tasks::builder().lease(LEASE));
    let mut on_a = Client::start(Kind::Http, &a).await;
    let id = on_a.create("durable", json!({})).await;
    shared.until_runs(1, "the run starts").await;
    view_a.cut.store(true, SeqCst);
    drop((on_a, a));
    // A replica of another build: no `durable` tool.
    let _other = Server::builder(Implementation::new("presa-lease-tests", "0.0.2"))
        .tool(
            Tool::new("direct")
                .description("Answers in the request")
                .handler(|_: ToolCall| async { "direct" }),
        )
        .extension(Tasks::builder().lease(LEASE).store(view_b.clone()).build())
        .build()
        .expect("builds");
    tokio::time::sleep(LEASE * 3).await;
    let left = stored(&store, &id).await;
    assert_eq!(left.status, TaskStatus::Working, "not failed: {left:?}");
    assert_eq!(left.lease.map(|l| l.generation), Some(1), "not claimed");
    let _b = replica("b", &shared, view_b, Tasks::builder().lease(LEASE));
    shared
        .until_runs(2, "the replica with the tool runs it")
        .await;
    assert_eq!(shared.runs()[1].replica, "b");
}
