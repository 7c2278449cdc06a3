//! How tasks run (Tasks reference sections 3.2, 5 and 6; errata T-1, T-5 and section 4):
//! cancellation drops the worker's future and never loses to a finishing worker,
//! `notifications/cancelled` never cancels a task, workers run detached from the
//! creating request, panics fail the task without detail, capacity limits answer -32603
//! and store nothing, tasks are scoped to their principal, expired tasks become unknown
//! and are reaped, synchronous MRTR rounds precede task creation, and a task parks only
//! on input kinds its creating request declared.

use crate::tasks::{
    ALICE, Client, KINDS, Kind, Lab, Probe, Tasking, UNKNOWN_TASK, accept, alice_gate_task,
    assert_created, assert_sync, by_principal, declared, fixture, keys, plain_caps, task_id, text,
    tool, undeclared, with_caps,
};
use presa::tasks::{
    MemoryStore, StoreError, StoreFuture, TaskRecord, TaskStatus, TaskStore, Tasks,
};
use presa_tests::wait::{Deadline, QUIET, until};
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

// ---- cancellation (4.4, errata T-1) ----

/// Cancelling a running task drops its tool's future at once (a guard held across the
/// tool's wait is dropped, and the tool never finishes); the tool's context sees the
/// cancellation; the acknowledgement does not wait for any of it.
#[tokio::test]
async fn cancel_drops_the_running_tool_future() {
    for kind in KINDS {
        let lab = Lab::new(Tasks::builder());
        let mut w = Client::start(kind, &lab.server).await;
        let id = w.create("gate", json!({})).await;
        lab.wait_count(&lab.probe.started, 1, "gate runs").await;
        assert_eq!(Probe::get(&lab.probe.dropped), 0, "{kind:?}");
        let started = Instant::now();
        w.cancel(&id).await;
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{kind:?}: the ack does not wait"
        );
        assert_eq!(w.get(&id).await["status"], "cancelled", "{kind:?}");
        lab.wait_count(&lab.probe.dropped, 1, "the tool's future dropped")
            .await;
        lab.wait_count(&lab.probe.saw_cancel, 1, "the context saw the cancellation")
            .await;
        // The future is gone: the permit given now is never taken, and the tool never
        // went on.
        lab.gate.add_permits(1);
        assert_eq!(lab.gate.available_permits(), 1, "{kind:?}");
        assert_eq!(
            Probe::get(&lab.probe.finished),
            0,
            "{kind:?}: the tool never went on"
        );
        assert_eq!(
            lab.stored_status(&id),
            Some(TaskStatus::Cancelled),
            "{kind:?}"
        );
        let record = lab.record(&id).expect("stored");
        assert!(
            record.result.is_none() && record.error.is_none(),
            "{kind:?}: {record:?}"
        );
    }
}

/// A sleeping tool is stopped by cancel (not left to run out its sleep).
#[tokio::test]
async fn cancel_stops_a_sleeping_tool_at_once() {
    for kind in KINDS {
        let lab = Lab::new(Tasks::builder());
        let mut w = Client::start(kind, &lab.server).await;
        let id = w.create("sleeper", json!({"ms": 60_000})).await;
        lab.wait_count(&lab.probe.started, 1, "sleeper runs").await;
        w.cancel(&id).await;
        lab.wait_count(&lab.probe.dropped, 1, "the sleep dropped")
            .await;
        assert_eq!(Probe::get(&lab.probe.finished), 0, "{kind:?}");
        assert_eq!(w.get(&id).await["status"], "cancelled", "{kind:?}");
    }
}

/// The cancellation race (reference 4.1): a task cancelled while its worker is about to
/// finish stays cancelled: the gate opens right after the cancel is acknowledged, and
/// every later read says cancelled, with no result.
#[tokio::test]
async fn a_task_cancelled_while_its_worker_finishes_stays_cancelled() {
    for kind in KINDS {
        let lab = Lab::new(Tasks::builder());
        let mut w = Client::start(kind, &lab.server).await;
        for round in 0..10 {
            lab.drain_gate();
            let id = w.create("gate", json!({})).await;
            lab.wait_count(&lab.probe.started, round + 1, "gate runs")
                .await;
            w.cancel(&id).await;
            lab.gate.add_permits(1);
            for _ in 0..5 {
                let task = w.get(&id).await;
                assert_eq!(
                    task["status"], "cancelled",
                    "{kind:?} round {round}: {task}"
                );
            }
            // Once the worker is gone (its future dropped or run to its end), nothing
            // can change the task any more: the last read decides.
            lab.wait_count(&lab.probe.dropped, round + 1, "the worker is gone")
                .await;
            let task = w.get(&id).await;
            assert_eq!(
                task["status"], "cancelled",
                "{kind:?} round {round}: {task}"
            );
            let record = lab.record(&id).expect("stored");
            assert_eq!(
                record.status,
                TaskStatus::Cancelled,
                "{kind:?} round {round}"
            );
            assert!(
                record.result.is_none(),
                "{kind:?} round {round}: {record:?}"
            );
        }
    }
}

/// The other side of the race: when the gate opens just before the cancel, the task
/// ends either completed (the cancel came late and was a no-op) or cancelled (with no
/// result), and a terminal status never changes afterwards.
#[tokio::test]
async fn a_terminal_status_never_changes_when_cancel_and_completion_race() {
    for kind in KINDS {
        let lab = Lab::new(Tasks::builder());
        let mut w = Client::start(kind, &lab.server).await;
        for round in 0..10 {
            lab.drain_gate();
            let id = w.create("gate", json!({})).await;
            lab.wait_count(&lab.probe.started, round + 1, "gate runs")
                .await;
            lab.gate.add_permits(1);
            w.cancel(&id).await;
            let first = w.wait_terminal(&id).await;
            assert!(
                first["status"] == "completed" || first["status"] == "cancelled",
                "{kind:?} round {round}: {first}"
            );
            if first["status"] == "completed" {
                assert_eq!(text(&first["result"]), "released", "{kind:?}");
            }
            assert_eq!(w.get(&id).await, first, "{kind:?} round {round}: immutable");
            // Once the worker is gone nothing can change the task any more: the last
            // read decides.
            lab.wait_count(&lab.probe.dropped, round + 1, "the worker is gone")
                .await;
            assert_eq!(w.get(&id).await, first, "{kind:?} round {round}: immutable");
        }
    }
}

/// Errata T-1 and section 4: `notifications/cancelled` never cancels a task, neither
/// for the id of the `tools/call` that created it nor for the task id; the task runs on
/// and completes. (On HTTP the POSTed notification is accepted with 202.)
#[tokio::test]
async fn notifications_cancelled_never_cancels_a_task() {
    for kind in KINDS {
        let lab = Lab::new(Tasks::builder());
        let mut w = Client::start(kind, &lab.server).await;
        let call = w.next_id();
        let message = presa_tests::request(call, "tools/call", declared(tool("gate", json!({}))));
        let got = w.exchange(message, &[]).await;
        let id = assert_created(&got);
        lab.wait_count(&lab.probe.started, 1, "gate runs").await;
        for request_id in [json!(call), json!(id)] {
            w.notify(
                "notifications/cancelled",
                json!({"requestId": request_id, "reason": "user gave up"}),
            )
            .await;
        }
        // The notifications were read (stdio reads in order; HTTP answered 202 once it
        // took them) before this request.
        assert_eq!(w.get(&id).await["status"], "working", "{kind:?}");
        assert_eq!(Probe::get(&lab.probe.dropped), 0, "{kind:?}: still running");
        assert_eq!(Probe::get(&lab.probe.saw_cancel), 0, "{kind:?}");
        lab.gate.add_permits(1);
        // Not cancelled: wait_for fails if the task ends any other way than completed,
        // and the tool ran to its end.
        let task = w.wait_for(&id, &["completed"]).await;
        assert_eq!(text(&task["result"]), "released", "{kind:?}");
        assert_eq!(Probe::get(&lab.probe.finished), 1, "{kind:?}");
        assert_eq!(Probe::get(&lab.probe.saw_cancel), 0, "{kind:?}");
    }
}

/// The same rule against the fixture binary over real stdio: `notifications/cancelled`
/// for the creating call's id, sent after the CreateTaskResult, leaves slow_compute
/// running to completion.
#[tokio::test]
async fn notifications_cancelled_after_creation_leaves_the_fixture_task_running() {
    let mut w = fixture(Kind::Stdio).await;
    let call = w.next_id();
    let message = presa_tests::request(
        call,
        "tools/call",
        declared(tool(
            "slow_compute",
            json!({"seconds": 0.3, "label": "kept"}),
        )),
    );
    let got = w.exchange(message, &[]).await;
    let id = assert_created(&got);
    w.notify("notifications/cancelled", json!({"requestId": call}))
        .await;
    // Not cancelled: wait_for fails if the task ends any other way than completed.
    let task = w.wait_for(&id, &["completed"]).await;
    assert_eq!(text(&task["result"]), "Completed kept");
}

// ---- execution (5.1, 5.3) ----

/// A panicking task tool ends `failed` with -32603 and no trace of the panic message.
#[tokio::test]
async fn a_panicking_task_fails_with_32603_and_no_detail() {
    let lab = Lab::new(Tasks::builder());
    for kind in KINDS {
        let mut w = Client::start(kind, &lab.server).await;
        let id = w.create("panicky", json!({})).await;
        let task = w.wait_terminal(&id).await;
        assert_eq!(task["status"], "failed", "{kind:?}: {task}");
        assert_eq!(task["error"]["code"], json!(-32603), "{kind:?}: {task}");
        assert!(
            !task.to_string().contains("secret"),
            "{kind:?}: no leaked detail: {task}"
        );
        // The server is still up.
        let got = w
            .send("tools/call", undeclared(tool("sleeper", json!({"ms": 0}))))
            .await;
        assert_eq!(assert_sync(&got), "slept 0", "{kind:?}");
    }
}

/// A JSON-RPC error from the tool fails the task with that very error (the extension:
/// "the `error` field MUST contain that JSON-RPC error"; `tasks/get` "returns exactly
/// what the underlying request would have returned"): code, message and data as the
/// same call answers when it is not a task, not a -32603 in their place.
#[tokio::test]
async fn a_failed_task_carries_the_tools_own_json_rpc_error() {
    let lab = Lab::with(Tasks::builder(), |b| {
        b.tool(
            presa::Tool::new("quota")
                .description("Fails with an application error carrying data")
                .task(presa::tasks::TaskMode::Optional)
                .handler(|_: presa::ToolCall| async move {
                    let error = presa::Error::application(4290, "Quota exceeded")
                        .expect("an application code")
                        .with_data(json!({"retryAfterMs": 30000}));
                    Err::<String, _>(error)
                }),
        )
    });
    for kind in KINDS {
        let mut w = Client::start(kind, &lab.server).await;
        let direct = w
            .send("tools/call", undeclared(tool("quota", json!({}))))
            .await;
        let direct = direct.response()["error"].clone();
        assert_eq!(direct["code"], json!(4290), "{kind:?}: {direct}");
        let id = w.create("quota", json!({})).await;
        let task = w.wait_terminal(&id).await;
        assert_eq!(task["status"], "failed", "{kind:?}: {task}");
        assert_eq!(task["error"], direct, "{kind:?}: {task}");
        assert_eq!(task["statusMessage"], json!("Quota exceeded"), "{kind:?}");
    }
}

/// 5.3: the worker runs detached from the creating request: a progress token and a log
/// level on that request give the task no channel (nothing is sent, on the creating
/// response or anywhere), and the task outlives the request.
#[tokio::test]
async fn tasks_run_detached_without_progress_or_logs() {
    let lab = Lab::new(Tasks::builder());
    for kind in KINDS {
        let mut w = Client::start(kind, &lab.server).await;
        let mut params = declared(tool("chatty", json!({})));
        params["_meta"]["progressToken"] = json!("p-1");
        params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
        let got = w.send("tools/call", params).await;
        let id = assert_created(&got);
        assert_eq!(got.messages.len(), 1, "{kind:?}: {:?}", got.messages);
        assert!(!got.sse, "{kind:?}");
        let task = w.wait_for(&id, &["completed"]).await;
        assert_eq!(
            text(&task["result"]),
            "progress sent: false, log sent: false",
            "{kind:?}"
        );
        assert!(
            w.take_backlog().is_empty(),
            "{kind:?}: nothing else was sent"
        );
    }
}

// ---- capacity (3.2 step 6) ----

/// Asserts the capacity error of reference 3.2 step 6 for `limit`.
#[track_caller]
fn assert_capacity(got: &crate::tasks::Got, limit: &str) {
    let e = got.error(-32603, 500);
    assert_eq!(
        e["message"], "Task capacity exhausted",
        "{:?}: {e}",
        got.kind
    );
    assert_eq!(
        e["data"],
        json!({"retryable": true, "limit": limit}),
        "{:?}: {e}",
        got.kind
    );
}

/// `max_workers(1)`: while one task runs, the next creation is -32603 with
/// `{retryable: true, limit: "max_workers"}` and stores nothing; a synchronous call still
/// runs; once the running task ends, creation works again.
#[tokio::test]
async fn max_workers_refuses_a_creation_and_stores_nothing() {
    for kind in KINDS {
        let lab = Lab::new(Tasks::builder().max_workers(1));
        let mut w = Client::start(kind, &lab.server).await;
        let first = w.create("gate", json!({})).await;
        lab.wait_count(&lab.probe.started, 1, "gate runs").await;
        for name in ["quick", "gate"] {
            let got = w.send("tools/call", declared(tool(name, json!({})))).await;
            assert_capacity(&got, "max_workers");
        }
        assert_eq!(lab.stored(), 1, "{kind:?}: nothing stored");
        assert_eq!(Probe::get(&lab.probe.quick_runs), 0, "{kind:?}");
        let got = w
            .send("tools/call", undeclared(tool("sleeper", json!({"ms": 0}))))
            .await;
        assert_eq!(
            assert_sync(&got),
            "slept 0",
            "{kind:?}: sync calls still run"
        );
        lab.gate.add_permits(1);
        w.wait_for(&first, &["completed"]).await;
        let deadline = Deadline::new(format!("{kind:?}: the worker slot frees up"));
        let second = loop {
            let got = w
                .send("tools/call", declared(tool("quick", json!({"n": 2}))))
                .await;
            if got.response().get("result").is_some() {
                break assert_created(&got);
            }
            assert_capacity(&got, "max_workers");
            deadline.tick(got.response()).await;
        };
        let task = w.wait_for(&second, &["completed"]).await;
        assert_eq!(text(&task["result"]), "quick 2", "{kind:?}");
    }
}

/// A cancelled task frees its worker slot.
#[tokio::test]
async fn a_cancelled_task_frees_its_worker_slot() {
    let lab = Lab::new(Tasks::builder().max_workers(1));
    for kind in KINDS {
        let mut w = Client::start(kind, &lab.server).await;
        let id = w.create("sleeper", json!({"ms": 60_000})).await;
        w.cancel(&id).await;
        let deadline = Deadline::new(format!("{kind:?}: the slot frees up"));
        loop {
            let got = w
                .send("tools/call", declared(tool("quick", json!({}))))
                .await;
            if got.response().get("result").is_some() {
                let id = assert_created(&got);
                w.wait_for(&id, &["completed"]).await;
                break;
            }
            assert_capacity(&got, "max_workers");
            deadline.tick(got.response()).await;
        }
    }
}

/// A [`MemoryStore`] made to behave as another store would in one respect, counting
/// what it is asked: an `insert` that takes time (a durable store awaits its write), a
/// compare-and-set that conflicts every time (a broken store), a store that is down
/// while `down` is set (every call a fault).
#[derive(Default)]
struct TestStore {
    inner: MemoryStore,
    insert_delay: Duration,
    always_conflict: bool,
    down: Arc<AtomicBool>,
    counts: Arc<StoreCounts>,
}

impl TestStore {
    /// A fault, while the store is down.
    fn fault(&self) -> Option<StoreError> {
        self.down.load(SeqCst).then(|| {
            self.counts.faults.fetch_add(1, SeqCst);
            StoreError::Unavailable("the test store is down".into())
        })
    }
}

/// What a [`TestStore`] was asked.
#[derive(Default)]
struct StoreCounts {
    gets: AtomicUsize,
    statuses: AtomicUsize,
    compare_and_sets: AtomicUsize,
    faults: AtomicUsize,
}

impl TaskStore for TestStore {
    fn insert(&self, record: TaskRecord) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            if let Some(fault) = self.fault() {
                return Err(fault);
            }
            tokio::time::sleep(self.insert_delay).await;
            self.inner.insert(record).await
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        self.counts.gets.fetch_add(1, SeqCst);
        if let Some(fault) = self.fault() {
            return Box::pin(async { Err(fault) });
        }
        self.inner.get(id)
    }

    fn status<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskStatus>> {
        self.counts.statuses.fetch_add(1, SeqCst);
        if let Some(fault) = self.fault() {
            return Box::pin(async { Err(fault) });
        }
        self.inner.status(id)
    }

    fn compare_and_set(&self, expected: u64, record: TaskRecord) -> StoreFuture<'_, TaskRecord> {
        self.counts.compare_and_sets.fetch_add(1, SeqCst);
        if let Some(fault) = self.fault() {
            return Box::pin(async { Err(fault) });
        }
        if self.always_conflict {
            return Box::pin(async { Err(StoreError::Conflict) });
        }
        self.inner.compare_and_set(expected, record)
    }

    fn count<'a>(&'a self, scope: Option<&'a str>, now_ms: u64) -> StoreFuture<'a, usize> {
        if let Some(fault) = self.fault() {
            return Box::pin(async { Err(fault) });
        }
        self.inner.count(scope, now_ms)
    }

    fn claimable(&self, now_ms: u64, limit: usize) -> StoreFuture<'_, Vec<TaskRecord>> {
        if let Some(fault) = self.fault() {
            return Box::pin(async { Err(fault) });
        }
        self.inner.claimable(now_ms, limit)
    }

    fn remove_expired(&self, now_ms: u64) -> StoreFuture<'_, usize> {
        if let Some(fault) = self.fault() {
            return Box::pin(async { Err(fault) });
        }
        self.inner.remove_expired(now_ms)
    }
}

/// While the store is down, every request that needs it is a retryable -32603 (creating,
/// reading, answering or cancelling a task) and nothing panics; a worker whose tool
/// finished meanwhile keeps its result and records it once the store is back, so the
/// acknowledged task completes.
#[tokio::test]
async fn a_store_fault_is_retryable_and_loses_no_acknowledged_task() {
    let down = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(StoreCounts::default());
    let lab = Lab::new(
        Tasks::builder()
            .remote_check(Duration::from_millis(20))
            .reap_every(Duration::from_millis(20))
            .store(TestStore {
                down: Arc::clone(&down),
                counts: Arc::clone(&counts),
                ..TestStore::default()
            }),
    );
    let mut w = Client::start(Kind::Http, &lab.server).await;
    let id = w.create("gate", json!({})).await;
    down.store(true, SeqCst);
    lab.gate.add_permits(1);
    until("the tool finishes while the store is down", || {
        lab.probe.finished.load(SeqCst) >= 1
    })
    .await;
    let before = counts.faults.load(SeqCst);
    until("the worker meets the fault again", || {
        counts.faults.load(SeqCst) >= before + 3
    })
    .await;
    for (method, params) in [
        ("tasks/get", task_id(&id)),
        ("tasks/cancel", task_id(&id)),
        ("tasks/update", json!({"taskId": id, "inputResponses": {}})),
        ("tools/call", tool("quick", json!({}))),
    ] {
        let got = w.send(method, declared(params)).await;
        let error = got.error(-32603, 500);
        assert_eq!(error["data"]["retryable"], true, "{method}: {error}");
        assert_eq!(
            error["message"], "The task store is unavailable; try again",
            "{method}: no detail of the fault is sent"
        );
    }
    down.store(false, SeqCst);
    let task = w.wait_for(&id, &["completed"]).await;
    assert_eq!(task["result"]["content"][0]["text"], "released", "{task}");
}

/// A lab whose store takes 5 ms per insert.
fn slow_lab(knobs: presa::tasks::TasksBuilder) -> Lab {
    Lab::new(knobs.store(TestStore {
        insert_delay: Duration::from_millis(5),
        ..TestStore::default()
    }))
}

/// A store that conflicts on every update is given up on after a bounded number of
/// attempts, not retried forever on a worker thread: the worker ends (with one worker
/// slot, the next task can then be created), the task stays as last stored, the server
/// goes on answering, and a `tasks/cancel` the store will not take is a retryable
/// -32603, not an acknowledgement. The server runs on a runtime of its own thread and is
/// watched from this one, so a worker that never yields fails the test rather than
/// hanging it (a task waiting on that worker cannot be stolen from it).
#[test]
fn a_store_that_always_conflicts_is_given_up_on() {
    let counts = Arc::new(StoreCounts::default());
    let (report, outcome) = std::sync::mpsc::channel();
    let counted = Arc::clone(&counts);
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async move {
            let lab = Lab::new(Tasks::builder().max_workers(1).store(TestStore {
                always_conflict: true,
                counts: Arc::clone(&counted),
                ..TestStore::default()
            }));
            let mut w = Client::start(Kind::Http, &lab.server).await;
            let id = w.create("quick", json!({})).await;
            // The worker's update of the finished task conflicts until it is given up;
            // then the worker ends and frees the one slot.
            let deadline = Deadline::new("the worker gives up and frees its slot");
            loop {
                let got = w
                    .send("tools/call", declared(tool("gate", json!({}))))
                    .await;
                if got.response().get("result").is_some() {
                    assert_created(&got);
                    break;
                }
                assert_capacity(&got, "max_workers");
                deadline.tick(counted.compare_and_sets.load(SeqCst)).await;
            }
            let attempts = counted.compare_and_sets.load(SeqCst);
            let stored = lab.stored_status(&id);
            let status = w.get(&id).await["status"].clone();
            let after = counted.compare_and_sets.load(SeqCst);
            // A cancellation the store will not take is not acknowledged.
            let got = w.send("tasks/cancel", declared(task_id(&id))).await;
            let refused = got.error(-32603, 500).clone();
            let _ = report.send((attempts, after, stored, status, refused));
            lab.gate.add_permits(1);
        });
    });
    let (attempts, after, stored, status, refused) = outcome
        .recv_timeout(presa_tests::wait::PATIENCE * 2)
        .expect("the server gives up on the store and answers");
    assert!(attempts >= 1000, "{attempts} attempts");
    assert_eq!(after, attempts, "no attempt once the worker gave up");
    assert_eq!(stored, Some(TaskStatus::Working));
    assert_eq!(status, "working");
    assert_eq!(refused["data"]["retryable"], true, "{refused}");
}

/// Posts `n` task creations of `name` at once over HTTP; the ids created, after checking
/// that every refusal is the capacity error for `limit`.
async fn create_at_once(w: &Client, name: &str, n: i64, limit: &str) -> Vec<String> {
    let h = w.harness();
    let posts = (0..n).map(|i| {
        let m = presa_tests::request(i, "tools/call", declared(tool(name, json!({}))));
        async move { h.post(&m, &[]).await }
    });
    let replies = futures_util::future::join_all(posts).await;
    let mut created = Vec::new();
    for r in &replies {
        // Every message against the schema, as the Client's own calls are (a creation is a
        // `task` result, checked as a generic result; a refusal as an error).
        presa_tests::schema::check_exchange("tools/call", &r.messages);
        match r.response()["result"]["taskId"].as_str() {
            Some(id) => created.push(id.to_owned()),
            None => {
                assert_eq!(r.status, 500, "{}", r.body);
                assert_eq!(r.response()["error"]["data"]["limit"], limit, "{}", r.body);
            }
        }
    }
    created
}

/// Creation is atomic with its capacity check (reference 3.2 step 6): of 8 simultaneous
/// creations with one worker slot, exactly one succeeds and only it is stored, even with
/// a store whose writes take time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn simultaneous_creations_respect_max_workers() {
    let lab = slow_lab(Tasks::builder().max_workers(1));
    let w = Client::start(Kind::Http, &lab.server).await;
    let created = create_at_once(&w, "gate", 8, "max_workers").await;
    let running = created
        .iter()
        .filter(|id| lab.stored_status(id) == Some(TaskStatus::Working))
        .count();
    lab.gate.add_permits(created.len());
    assert_eq!(
        created.len(),
        1,
        "{} of 8 simultaneous creations got past max_workers(1), {running} running at once",
        created.len()
    );
    assert_eq!(lab.stored(), 1, "only the created task is stored");
}

/// Likewise for `max_tasks(1)`: exactly one of 8 simultaneous creations is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn simultaneous_creations_respect_max_tasks() {
    let lab = slow_lab(Tasks::builder().max_tasks(1));
    let w = Client::start(Kind::Http, &lab.server).await;
    let created = create_at_once(&w, "quick", 8, "max_tasks").await;
    assert_eq!(
        created.len(),
        1,
        "{} of 8 simultaneous creations got past max_tasks(1); {} stored",
        created.len(),
        lab.stored()
    );
    assert_eq!(lab.stored(), 1, "only the created task is stored");
}

/// `max_tasks(2)`: with two tasks kept (finished ones count until they expire), the
/// next creation is -32603 with `limit: "max_tasks"` and stores nothing.
#[tokio::test]
async fn max_tasks_refuses_a_creation_and_stores_nothing() {
    for kind in KINDS {
        let lab = Lab::new(Tasks::builder().max_tasks(2));
        let mut w = Client::start(kind, &lab.server).await;
        for n in 0..2 {
            let id = w.create("quick", json!({"n": n})).await;
            w.wait_for(&id, &["completed"]).await;
        }
        let got = w
            .send("tools/call", declared(tool("quick", json!({}))))
            .await;
        assert_capacity(&got, "max_tasks");
        assert_eq!(lab.stored(), 2, "{kind:?}: nothing stored");
        assert_eq!(Probe::get(&lab.probe.quick_runs), 2, "{kind:?}");
    }
}

/// `max_tasks_per_scope(1)`: a principal with one task gets -32603 with `limit:
/// "max_tasks_per_scope"` and nothing stored, while another principal can still create.
/// Callers without a principal (stdio here) share no scope, so the per-scope bound never
/// lets one of them use up what the others need; `max_tasks` bounds them.
#[tokio::test]
async fn max_tasks_per_scope_limits_each_principal() {
    let lab = Lab::with(Tasks::builder().max_tasks_per_scope(1), by_principal);
    let mut w = Client::start(Kind::Http, &lab.server).await;
    let params = declared(tool("quick", json!({})));
    let alice = [("X-Principal", "alice")];
    let bob = [("X-Principal", "bob")];
    let got = w.send_with("tools/call", params.clone(), &alice).await;
    assert_created(&got);
    let got = w.send_with("tools/call", params.clone(), &alice).await;
    assert_capacity(&got, "max_tasks_per_scope");
    assert_eq!(lab.stored(), 1, "nothing stored");
    let got = w.send_with("tools/call", params.clone(), &bob).await;
    assert_created(&got);
    assert_eq!(lab.stored(), 2);

    let lab = Lab::new(Tasks::builder().max_tasks_per_scope(1));
    let mut w = Client::start(Kind::Stdio, &lab.server).await;
    w.create("quick", json!({})).await;
    w.create("quick", json!({})).await;
    assert_eq!(
        lab.stored(),
        2,
        "each task without a principal is a scope of its own"
    );

    let lab = Lab::new(Tasks::builder().max_tasks(1));
    let mut w = Client::start(Kind::Stdio, &lab.server).await;
    w.create("quick", json!({})).await;
    let got = w.send("tools/call", params).await;
    assert_capacity(&got, "max_tasks");
    assert_eq!(lab.stored(), 1, "nothing stored");
}

// ---- scope (errata section 4: authorization on every task request) ----

/// A task created by principal A is unknown to principal B and to a request without a
/// principal, for get, update, cancel and the listen filter; B's attempts change nothing.
#[tokio::test]
async fn another_principals_task_is_unknown() {
    let (lab, mut w, id) = alice_gate_task().await;
    lab.wait_count(&lab.probe.started, 1, "gate runs").await;
    for who in [
        vec![("X-Principal", "bob")],
        vec![("X-Principal", "ALICE")],
        vec![],
    ] {
        for (method, params) in [
            ("tasks/get", task_id(&id)),
            ("tasks/cancel", task_id(&id)),
            (
                "tasks/update",
                json!({"taskId": id, "inputResponses": {"proceed": accept(json!({"proceed": true}))}}),
            ),
        ] {
            w.send_with(method, declared(params), &who)
                .await
                .invalid_params(UNKNOWN_TASK);
        }
    }
    assert_eq!(
        Probe::get(&lab.probe.dropped),
        0,
        "bob's cancel did nothing"
    );
    let got = w
        .send_with("tasks/get", declared(task_id(&id)), &ALICE)
        .await;
    assert_eq!(got.result()["status"], "working");
    // A task created without a principal is not alice's either.
    let got = w
        .send("tools/call", declared(tool("quick", json!({}))))
        .await;
    let anonymous = assert_created(&got);
    w.send_with("tasks/get", declared(task_id(&anonymous)), &ALICE)
        .await
        .invalid_params(UNKNOWN_TASK);
    let got = w
        .send_with("tasks/cancel", declared(task_id(&id)), &ALICE)
        .await;
    crate::tasks::assert_ack(got.result());
    let got = w
        .send_with("tasks/get", declared(task_id(&id)), &ALICE)
        .await;
    assert_eq!(got.result()["status"], "cancelled");
}

// ---- TTL and reaping (5.2) ----

/// How long the tasks of the TTL tests live: long enough that a loaded machine still
/// reads the task well before it expires.
const TTL: Duration = Duration::from_millis(1000);

/// With a short TTL and a 50 ms reaper: the task is readable before its TTL, unknown
/// (-32602) after it, and then gone from the store.
#[tokio::test]
async fn expired_tasks_become_unknown_and_are_reaped() {
    for kind in KINDS {
        let lab = Lab::new(
            Tasks::builder()
                .ttl(Some(TTL))
                .reap_every(Duration::from_millis(50)),
        );
        let mut w = Client::start(kind, &lab.server).await;
        let created = Instant::now();
        let got = w
            .send("tools/call", declared(tool("quick", json!({}))))
            .await;
        let id = assert_created(&got);
        assert_eq!(got.result()["ttlMs"], json!(1000), "{kind:?}");
        let task = w.wait_for(&id, &["completed"]).await;
        assert_eq!(task["ttlMs"], json!(1000), "{kind:?}");
        // Readable before its TTL: this read must come well inside it to test that.
        let got = w.send("tasks/get", declared(task_id(&id))).await;
        let at = created.elapsed();
        assert!(
            at < TTL - Duration::from_millis(100),
            "{kind:?}: the read before the TTL came {at:?} after creation; this machine \
             is too slow for a {TTL:?} TTL"
        );
        assert_eq!(
            got.result()["status"],
            "completed",
            "{kind:?}: readable at {at:?}"
        );
        let deadline = Deadline::new(format!("{kind:?}: the task expires"));
        loop {
            let got = w.send("tasks/get", declared(task_id(&id))).await;
            if got.response().get("error").is_some() {
                got.invalid_params(UNKNOWN_TASK);
                break;
            }
            assert_eq!(got.result()["status"], "completed", "{kind:?}");
            deadline.tick(got.response()).await;
        }
        assert!(
            created.elapsed() >= TTL - Duration::from_millis(10),
            "{kind:?}: not expired early ({:?})",
            created.elapsed()
        );
        for (method, params) in [
            ("tasks/cancel", task_id(&id)),
            ("tasks/update", json!({"taskId": id, "inputResponses": {}})),
        ] {
            w.send(method, declared(params))
                .await
                .invalid_params(UNKNOWN_TASK);
        }
        until("the reaper deletes the task", || lab.record(&id).is_none()).await;
        assert_eq!(lab.stored(), 0, "{kind:?}");
    }
}

/// An expired task is unknown at once, before the reaper runs, and no longer counts
/// toward `max_tasks`.
#[tokio::test]
async fn expired_tasks_are_unknown_before_the_reaper_runs() {
    for kind in KINDS {
        let lab = Lab::new(
            Tasks::builder()
                .ttl(Some(Duration::from_millis(100)))
                .reap_every(Duration::from_secs(60))
                .max_tasks(1),
        );
        let mut w = Client::start(kind, &lab.server).await;
        let id = w.create("quick", json!({})).await;
        w.wait_for(&id, &["completed"]).await;
        let deadline = Deadline::new(format!("{kind:?}: the task expires"));
        loop {
            let got = w.send("tasks/get", declared(task_id(&id))).await;
            if got.response().get("error").is_some() {
                got.invalid_params(UNKNOWN_TASK);
                break;
            }
            deadline.tick(got.response()).await;
        }
        assert!(lab.record(&id).is_some(), "{kind:?}: not reaped yet");
        let next = w.create("quick", json!({})).await;
        w.wait_for(&next, &["completed"]).await;
    }
}

// ---- MRTR and tasks (6.2, errata T-5) ----

/// Reference 6.2: a tool gathers input with ordinary MRTR first (round 1 is an
/// InputRequiredResult, no task), and the final round creates the task (no requestState,
/// no inputRequests), which completes with the answer.
#[tokio::test]
async fn mrtr_rounds_come_before_task_creation() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let params = with_caps(
            tool("test_tool_with_task", json!({})),
            json!({"elicitation": {}, "extensions": {crate::tasks::TASKS: {}}}),
        );
        let round1 = w.send("tools/call", params.clone()).await;
        let r = round1.result();
        assert_eq!(r["resultType"], "input_required", "{kind:?}: {r}");
        assert!(r.get("taskId").is_none(), "{kind:?}: {r}");
        assert_eq!(
            keys(&r["inputRequests"]),
            BTreeSet::from(["user_name"]),
            "{kind:?}"
        );
        let state = r["requestState"]
            .as_str()
            .expect("a requestState")
            .to_owned();
        // A retry that does not carry the answer is asked again, synchronously: no task
        // is made while a round is unresolved (the extension: servers SHOULD resolve the
        // rounds before responding with a CreateTaskResult).
        let mut empty = params.clone();
        empty["inputResponses"] = json!({});
        empty["requestState"] = json!(state.clone());
        let again = w.send("tools/call", empty).await;
        let r = again.result();
        assert_eq!(r["resultType"], "input_required", "{kind:?}: {r}");
        assert!(r.get("taskId").is_none(), "{kind:?}: {r}");
        let mut retry = params.clone();
        retry["inputResponses"] = json!({"user_name": accept(json!({"name": "Alice"}))});
        retry["requestState"] = json!(state);
        let round2 = w.send("tools/call", retry.clone()).await;
        let id = assert_created(&round2);
        for absent in ["requestState", "inputRequests"] {
            assert!(
                round2.result().get(absent).is_none(),
                "{kind:?}: no {absent}"
            );
        }
        let task = w.wait_for(&id, &["completed"]).await;
        assert!(text(&task["result"]).contains("Alice"), "{kind:?}: {task}");
        assert_eq!(text(&task["result"]), "Hello, Alice", "{kind:?}");

        // The final round from a client without Tasks: the tool is required then.
        let mut undeclared_retry = retry;
        undeclared_retry["_meta"][crate::tasks::CAPS] = plain_caps();
        let round1 = w
            .send(
                "tools/call",
                undeclared(tool("test_tool_with_task", json!({}))),
            )
            .await;
        let state = round1.result()["requestState"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        undeclared_retry["requestState"] = json!(state);
        w.send("tools/call", undeclared_retry).await.missing_tasks();
    }
}

/// Errata T-5: a task may park only on input kinds its creating request declared; the
/// fixture's confirm_delete asks for an elicitation, so created by a request that
/// declared Tasks but not elicitation, the task ends failed with -32021.
#[tokio::test]
async fn a_task_asking_for_an_undeclared_input_kind_fails_with_32021() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let got = w
            .send(
                "tools/call",
                with_caps(
                    tool("confirm_delete", json!({"filename": "t5.txt"})),
                    json!({"extensions": {crate::tasks::TASKS: {}}}),
                ),
            )
            .await;
        let id = assert_created(&got);
        let task = w.wait_terminal(&id).await;
        assert_eq!(task["status"], "failed", "{kind:?}: {task}");
        assert_eq!(task["error"]["code"], json!(-32021), "{kind:?}: {task}");
        assert!(
            task["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(),
            "{kind:?}: names what was missing: {task}"
        );
        assert!(task.get("inputRequests").is_none(), "{kind:?}: {task}");
    }
}

/// A task that asked for input keeps its creating request's capabilities: answered
/// through `tasks/update` on a later request (declaring Tasks only), it still resumes.
#[tokio::test]
async fn a_parked_task_resumes_with_its_creators_capabilities() {
    let lab = Lab::new(Tasks::builder());
    for kind in KINDS {
        let mut w = Client::start(kind, &lab.server).await;
        lab.gate.add_permits(2);
        let id = w.create("ask", json!({})).await;
        let task = w.wait_for(&id, &["input_required"]).await;
        assert_eq!(
            keys(&task["inputRequests"]),
            BTreeSet::from(["proceed"]),
            "{kind:?}"
        );
        let got = w
            .send(
                "tasks/update",
                with_caps(
                    json!({"taskId": id, "inputResponses": {"proceed": accept(json!({"proceed": true}))}}),
                    json!({"extensions": {crate::tasks::TASKS: {}}}),
                ),
            )
            .await;
        crate::tasks::assert_ack(got.result());
        let task = w.wait_for(&id, &["completed"]).await;
        assert_eq!(text(&task["result"]), "proceed: true", "{kind:?}");
    }
}

/// A partial answer keeps the task waiting (the extension: "the task remains in
/// `input_required` until the remaining responses arrive"): the tool does not run
/// again, so the key still pending keeps the very request the client was shown (a
/// server "MUST NOT use the same key to refer to two distinct requests over a task's
/// lifetime"; `pair` words `b` by the run that asks it). Once every key is answered the
/// tool runs once, with both answers.
#[tokio::test]
async fn a_partial_answer_keeps_the_task_waiting_with_its_requests_unchanged() {
    for kind in KINDS {
        let lab = Lab::new(Tasks::builder());
        let mut w = Client::start(kind, &lab.server).await;
        let id = w.create("pair", json!({})).await;
        let task = w.wait_for(&id, &["input_required"]).await;
        assert_eq!(
            keys(&task["inputRequests"]),
            BTreeSet::from(["a", "b"]),
            "{kind:?}"
        );
        let asked_b = task["inputRequests"]["b"].clone();
        let yes = accept(json!({"proceed": true}));
        w.update(&id, json!({"a": yes.clone()})).await;
        lab.gate.add_permits(1);
        // No run may start on a partial answer: nothing to wait for, so the rule is
        // watched for the quiet window (the update was taken: the ack came).
        tokio::time::sleep(QUIET).await;
        assert_eq!(
            Probe::get(&lab.probe.pair_runs),
            1,
            "{kind:?}: no run on a partial answer"
        );
        let task = w.get(&id).await;
        assert_eq!(task["status"], "input_required", "{kind:?}: {task}");
        assert_eq!(
            keys(&task["inputRequests"]),
            BTreeSet::from(["b"]),
            "{kind:?}"
        );
        assert_eq!(
            task["inputRequests"]["b"], asked_b,
            "{kind:?}: b's request changed"
        );
        w.update(&id, json!({"b": yes})).await;
        let task = w.wait_for(&id, &["completed"]).await;
        assert_eq!(text(&task["result"]), "a: true, b: true", "{kind:?}");
        assert_eq!(
            Probe::get(&lab.probe.pair_runs),
            2,
            "{kind:?}: one run with both"
        );
        let record = lab.record(&id).expect("stored");
        assert!(record.input_requests.is_empty(), "{kind:?}: {record:?}");
    }
}

/// `max_workers` holds for resumed tasks too: a task that parked on input gives its
/// slot back, and once answered it waits for a free slot before its tool runs again.
/// So answering many parked tasks at once cannot run more than `max_workers` tools.
#[tokio::test]
async fn a_resumed_task_waits_for_a_worker_slot() {
    for kind in KINDS {
        let lab = Lab::new(Tasks::builder().max_workers(1));
        let mut w = Client::start(kind, &lab.server).await;
        let parked = w.create("pair", json!({})).await;
        w.wait_for(&parked, &["input_required"]).await;
        // The parked task's slot runs another task, which waits at the gate.
        let running = w.create("gate", json!({})).await;
        lab.wait_count(&lab.probe.started, 1, "the gate task runs")
            .await;
        let yes = accept(json!({"proceed": true}));
        w.update(&parked, json!({"a": yes.clone(), "b": yes})).await;
        // The answered task may not run while the slot is taken: nothing to wait for,
        // so the rule is watched for the quiet window.
        tokio::time::sleep(QUIET).await;
        assert_eq!(
            Probe::get(&lab.probe.pair_runs),
            1,
            "{kind:?}: the answered task waits for the slot"
        );
        // The gate task ends and frees its slot: the answered task runs (and, as every
        // run of `pair` after its first, waits at the gate too).
        lab.gate.add_permits(1);
        w.wait_for(&running, &["completed"]).await;
        lab.wait_count(&lab.probe.pair_runs, 2, "the answered task runs")
            .await;
        lab.gate.add_permits(1);
        let done = w.wait_for(&parked, &["completed"]).await;
        assert_eq!(text(&done["result"]), "a: true, b: true", "{kind:?}");
    }
}

/// A waiting task's worker looks for changes made through another replica by reading
/// the task's status, not its whole record (arguments and answers, up to
/// `max_input_bytes`), every `REMOTE_CHECK`.
#[tokio::test]
async fn a_waiting_task_polls_the_store_for_its_status_only() {
    let counts = Arc::new(StoreCounts::default());
    let lab = Lab::new(Tasks::builder().store(TestStore {
        counts: Arc::clone(&counts),
        ..TestStore::default()
    }));
    let (gets, statuses) = (&counts.gets, &counts.statuses);
    let mut w = Client::start(Kind::Http, &lab.server).await;
    let id = w.create("pair", json!({})).await;
    w.wait_for(&id, &["input_required"]).await;
    let (before, polls) = (gets.load(SeqCst), statuses.load(SeqCst));
    // Two checks for changes elsewhere (one every REMOTE_CHECK) read its status...
    until("the waiting worker reads the task's status twice", || {
        statuses.load(SeqCst) >= polls + 2
    })
    .await;
    // ...and meanwhile no whole record.
    assert_eq!(
        gets.load(SeqCst),
        before,
        "no whole record read while waiting"
    );
}

/// `max_result_bytes`: a result at the bound completes its task; one byte past it fails
/// the task with -32603 (the record would keep it until it expires), and the server stays
/// up.
#[tokio::test]
async fn a_result_past_max_result_bytes_fails_its_task() {
    let sized = |b: presa::ServerBuilder| {
        b.tool(
            presa::Tool::new("sized")
                .description("Answers as much text as asked")
                .task(presa::tasks::TaskMode::Required)
                .input_schema(json!({"type": "object", "properties": {"n": {"type": "integer"}}}))
                .handler(|call: presa::ToolCall| async move {
                    let n = call.arguments["n"].as_u64().unwrap_or(0) as usize;
                    "x".repeat(n)
                }),
        )
    };
    // The size of the result of 1,000 bytes of text, as the task record keeps it.
    let lab = Lab::with(Tasks::builder(), sized);
    let mut w = Client::start(Kind::Stdio, &lab.server).await;
    let id = w.create("sized", json!({"n": 1000})).await;
    let task = w.wait_terminal(&id).await;
    let limit = serde_json::to_string(&task["result"]).expect("JSON").len();
    for (n, status) in [(1000, "completed"), (1001, "failed")] {
        let lab = Lab::with(Tasks::builder().max_result_bytes(limit), sized);
        let mut w = Client::start(Kind::Stdio, &lab.server).await;
        let id = w.create("sized", json!({"n": n})).await;
        let task = w.wait_terminal(&id).await;
        assert_eq!(task["status"], status, "{n}: {task}");
        if status == "failed" {
            assert_eq!(task["error"]["code"], json!(-32603), "{task}");
        }
    }
}
