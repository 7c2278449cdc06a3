//! Three replicas of the fixture (child processes over Streamable HTTP) sharing one
//! throwaway PostgreSQL (`--tasks-store`) and one request-state key
//! (`PRESA_STATE_KEYS`), behind a throwaway HAProxy balancing round-robin: what a
//! client of the balancer sees is one server. A task created through the balancer is
//! answered by every replica; a request state issued by one replica is accepted by
//! another, and a single-use one spent there is refused by the third; a database outage
//! under a steady load is a retryable -32603 (never a hang, never a lost acknowledged
//! task) and serving comes back after it; a task whose replica is killed (SIGKILL)
//! mid-run completes on another with the same idempotency key; a task cancelled through
//! another replica stops at once and stays cancelled; and a listen stream on one replica
//! hears a list change and a task status published on another.
//!
//! Skipped, saying so, where HAProxy or PostgreSQL is not installed (`.ci/run` installs
//! both).

use crate::mrtr::{accept, call_params, form_caps, retry};
use crate::tasks::{declared, task_id, tool};
use presa_tests::haproxy::Haproxy;
use presa_tests::http::Http;
use presa_tests::postgres::Postgres;
use presa_tests::replicas::Replicas;
use presa_tests::sse::Next;
use presa_tests::wait::{Deadline, PATIENCE};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const FIXTURE: &str = env!("CARGO_BIN_EXE_fixture");

/// The request-state key every replica shares.
const KEY: &str = "k1:BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";

/// How late past a bound an answer may come (scheduling on a loaded machine) and still
/// count as bounded.
const MARGIN: Duration = Duration::from_millis(1500);

/// A throwaway PostgreSQL, three replicas on it with `args` added, and HAProxy in front
/// of them; `None` (said on stderr) where PostgreSQL or HAProxy is missing.
async fn cluster(args: &[&str]) -> Option<(Postgres, Replicas, Haproxy)> {
    let pg = Postgres::start().await?;
    let url = pg.url();
    let mut all = vec!["--tasks-store", url.as_str()];
    all.extend_from_slice(args);
    let replicas = Replicas::start(FIXTURE, 3, &all, &[("PRESA_STATE_KEYS", KEY)]).await;
    let lb = Haproxy::start(&replicas.addrs()).await?;
    Some((pg, replicas, lb))
}

/// The response of `method` with `params`, sent to `to`.
async fn send(to: &Http, id: i64, method: &str, params: Value) -> Value {
    to.call(id, method, params).await.response().clone()
}

/// The `result` of a response, failing with the response when there is none.
#[track_caller]
fn result(response: &Value) -> &Value {
    response
        .get("result")
        .unwrap_or_else(|| panic!("a result: {response}"))
}

/// A task created through the balancer is answered by `tasks/get` on each replica
/// directly and through the balancer (one request to each replica, round-robin), and
/// completes, every replica then answering it completed with its result.
#[tokio::test]
async fn a_task_created_through_the_balancer_is_answered_by_every_replica() {
    let Some((_pg, replicas, lb)) = cluster(&[]).await else {
        return;
    };
    let balancer = Http::at(&lb.url());
    let direct: Vec<Http> = (0..replicas.len())
        .map(|i| Http::at(&replicas.url(i)))
        .collect();
    let created = send(
        &balancer,
        1,
        "tools/call",
        declared(tool(
            "slow_compute",
            json!({"seconds": 0.5, "label": "everywhere"}),
        )),
    )
    .await;
    let created = result(&created);
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().expect("a taskId").to_owned();

    for (i, to) in direct
        .iter()
        .chain(std::iter::repeat_n(&balancer, 3))
        .enumerate()
    {
        let got = send(to, 10 + i as i64, "tasks/get", declared(task_id(&id))).await;
        let task = result(&got);
        assert_eq!(task["taskId"], json!(id), "request {i}: {task}");
        assert!(
            ["working", "completed"].contains(&task["status"].as_str().unwrap_or("")),
            "request {i}: {task}"
        );
    }

    let deadline = Deadline::new("the task completes");
    let mut n = 100;
    let done = loop {
        n += 1;
        let got = send(&balancer, n, "tasks/get", declared(task_id(&id))).await;
        let task = result(&got).clone();
        if task["status"] == "completed" {
            break task;
        }
        assert_eq!(task["status"], "working", "{task}");
        deadline.tick(&task).await;
    };
    assert_eq!(
        done["result"]["content"][0]["text"], "Completed everywhere",
        "{done}"
    );
    for (i, to) in direct.iter().enumerate() {
        let got = send(to, 200 + i as i64, "tasks/get", declared(task_id(&id))).await;
        assert_eq!(*result(&got), done, "replica {i} answers it completed");
    }
}

/// A request state issued by replica A is accepted by B (they share the key); it is
/// single-use, and spent on B it is refused by C (they share the record of spent
/// states), and by A and B too. Through the balancer alike: a first round and its
/// retry, wherever each lands, succeed, and the same retry is then refused wherever it
/// lands.
#[tokio::test]
async fn a_state_from_one_replica_is_served_by_another_and_refused_by_a_third() {
    let Some((_pg, replicas, lb)) = cluster(&[]).await else {
        return;
    };
    let [a, b, c] = [0, 1, 2].map(|i| Http::at(&replicas.url(i)));
    let params = call_params("test_single_use_state", json!({}), form_caps());
    let alice = json!({"user_name": accept(json!({"name": "Alice"}))});
    let refused = |response: &Value| {
        assert_eq!(response["error"]["code"], -32602, "{response}");
    };

    let first = send(&a, 1, "tools/call", params.clone()).await;
    let state = result(&first)["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("input_required: {first}"))
        .to_owned();
    let again = retry(&params, alice.clone(), Some(&state));
    let done = send(&b, 2, "tools/call", again.clone()).await;
    assert_eq!(
        result(&done)["content"][0]["text"],
        "Hello, Alice!",
        "{done}"
    );
    refused(&send(&c, 3, "tools/call", again.clone()).await);
    refused(&send(&a, 4, "tools/call", again.clone()).await);
    refused(&send(&b, 5, "tools/call", again).await);

    let balancer = Http::at(&lb.url());
    let first = send(&balancer, 6, "tools/call", params.clone()).await;
    let state = result(&first)["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("input_required: {first}"))
        .to_owned();
    let again = retry(&params, alice, Some(&state));
    let done = send(&balancer, 7, "tools/call", again.clone()).await;
    assert_eq!(
        result(&done)["content"][0]["text"],
        "Hello, Alice!",
        "{done}"
    );
    for id in 8..11 {
        refused(&send(&balancer, id, "tools/call", again.clone()).await);
    }
}

/// One request of the steady load: what was asked, when, how long it took, and what
/// came back.
struct Sent {
    at: Instant,
    took: Duration,
    method: &'static str,
    response: Value,
}

/// How long a store call waits during the outage test (`--store-timeout`).
const STORE_TIMEOUT: Duration = Duration::from_millis(800);

/// PostgreSQL stopped for about 10 s under a steady load of task creations and
/// `tasks/get` through the balancer: every request is answered within the store's
/// timeout (and a margin), either as before or with a retryable -32603; no replica
/// dies; every task acknowledged, before the outage or after, is found after it by
/// every replica; and serving recovers within 5 s of PostgreSQL's return.
#[tokio::test]
async fn a_database_outage_under_load_is_retryable_and_loses_no_acknowledged_task() {
    let timeout = STORE_TIMEOUT.as_millis().to_string();
    let Some((pg, mut replicas, lb)) = cluster(&["--store-timeout", &timeout]).await else {
        return;
    };
    let balancer = Http::at(&lb.url());
    let stop = Arc::new(AtomicBool::new(false));
    let load = tokio::spawn({
        let balancer = balancer.clone();
        let stop = Arc::clone(&stop);
        async move {
            let mut sent = Vec::new();
            let mut known: Option<String> = None;
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) {
                n += 1;
                let (method, params) = match (&known, n % 2) {
                    (Some(id), 0) => ("tasks/get", declared(task_id(id))),
                    _ => (
                        "tools/call",
                        declared(tool(
                            "slow_compute",
                            json!({"seconds": 0, "label": n.to_string()}),
                        )),
                    ),
                };
                let at = Instant::now();
                let within = STORE_TIMEOUT * 2 + MARGIN * 2;
                let response = tokio::time::timeout(within, send(&balancer, n, method, params))
                    .await
                    .unwrap_or_else(|_| panic!("{method}: no answer within {within:?}"));
                if method == "tools/call"
                    && let Some(id) = response["result"]["taskId"].as_str()
                {
                    known = Some(id.to_owned());
                }
                sent.push(Sent {
                    at,
                    took: at.elapsed(),
                    method,
                    response,
                });
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            sent
        }
    });

    // Some load served first, then the outage.
    tokio::time::sleep(Duration::from_secs(1)).await;
    // The server ends its sessions before `pg_ctl stop` returns: refusals may come from
    // the moment it is asked to stop.
    let stopping = Instant::now();
    pg.stop().await;
    let down = Instant::now();
    tokio::time::sleep(Duration::from_secs(10)).await;
    pg.start_again().await.expect("PostgreSQL starts again");
    let back = Instant::now();
    // Load until well past the recovery bound.
    tokio::time::sleep(Duration::from_secs(7)).await;
    stop.store(true, Ordering::SeqCst);
    let sent = load.await.expect("the load ran without a panic");

    let mut acknowledged = Vec::new();
    let (mut before, mut after) = (0, 0);
    let mut refused_during = 0;
    let mut first_after: Option<Instant> = None;
    for s in &sent {
        let r = &s.response;
        assert!(
            s.took < STORE_TIMEOUT + MARGIN,
            "{}: answered after {:?}: {r}",
            s.method,
            s.took
        );
        match (r.get("result"), r.get("error")) {
            (Some(result), None) => {
                if s.method == "tools/call" {
                    assert_eq!(result["resultType"], "task", "{result}");
                    acknowledged.push(result["taskId"].as_str().expect("a taskId").to_owned());
                    before += usize::from(s.at + s.took < stopping);
                    after += usize::from(s.at >= back);
                }
                if s.at >= back && first_after.is_none() {
                    first_after = Some(s.at + s.took);
                }
            }
            (None, Some(error)) => {
                assert_eq!(error["code"], -32603, "{}: {r}", s.method);
                assert_eq!(error["data"]["retryable"], true, "{}: {r}", s.method);
                assert!(
                    s.at + s.took >= stopping && s.at < back + Duration::from_secs(5),
                    "{}: refused outside the outage: {r}",
                    s.method
                );
                if s.at >= down && s.at < back {
                    refused_during += 1;
                }
            }
            _ => panic!("{}: neither a result nor an error: {r}", s.method),
        }
    }
    assert!(refused_during > 0, "the outage was seen by the load");
    let recovered = first_after.expect("served again after the outage");
    assert!(
        recovered.duration_since(back) < Duration::from_secs(5),
        "served again {:?} after PostgreSQL's return",
        recovered.duration_since(back)
    );
    assert!(
        before > 0 && after > 0,
        "tasks acknowledged before ({before}) and after ({after}) the outage"
    );

    let direct: Vec<Http> = (0..replicas.len())
        .map(|i| Http::at(&replicas.url(i)))
        .collect();
    let mut n = 1_000_000;
    for id in &acknowledged {
        for to in &direct {
            n += 1;
            let got = send(to, n, "tasks/get", declared(task_id(id))).await;
            assert_eq!(result(&got)["taskId"], json!(id), "{got}");
        }
    }
    for i in 0..replicas.len() {
        assert!(replicas.running(i), "replica {i} is still serving");
    }
}

/// A replica whose store cannot be opened does not start: it exits with 1 and says why
/// on stderr, within its store timeout (and a margin), without echoing the URL.
#[tokio::test]
async fn a_replica_whose_store_cannot_be_opened_fails_at_start_saying_why() {
    let nowhere = format!(
        "postgres://postgres:secret@127.0.0.1:{}/presa",
        presa_tests::free_port()
    );
    let dir = tempfile::tempdir().expect("a folder");
    let unwritable = format!(
        "sqlite:{}",
        dir.path().join("no/such/folder/t.db").display()
    );
    for (url, why) in [
        (
            nowhere.as_str(),
            "the task store (PostgreSQL) cannot be opened",
        ),
        (
            unwritable.as_str(),
            "the task store (SQLite) cannot be opened",
        ),
    ] {
        let started = Instant::now();
        let output = tokio::process::Command::new(FIXTURE)
            .args(["--tasks-store", url, "--store-timeout", "300"])
            .stdin(std::process::Stdio::null())
            .output();
        let output = presa_tests::wait::within("the fixture exits", output)
            .await
            .expect("the fixture runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{url}: {stderr}");
        assert!(output.stdout.is_empty(), "{url}: no ready line");
        assert!(stderr.contains(why), "{url}: {stderr}");
        assert!(!stderr.contains("secret"), "{url}: {stderr}");
        assert!(
            started.elapsed() < Duration::from_millis(300) + MARGIN,
            "{url}: {:?}",
            started.elapsed()
        );
    }
}

/// The lease of the replicas in the tests that kill or cancel a run: short, so a task
/// whose replica died runs again within about 1⅓ of it.
const LEASE: &str = "600";

/// The `durable_job run <attempt> key <key>` line replica `i` wrote for `attempt`, if
/// any: the key it ran with.
fn run_key(replicas: &Replicas, i: usize, attempt: u64) -> Option<String> {
    let prefix = format!("durable_job run {attempt} key ");
    replicas
        .stderr(i)
        .lines()
        .find_map(|l| l.strip_prefix(&prefix).map(str::to_owned))
}

/// Creates a `durable_job` of `seconds` on `to`; its task id.
async fn durable_job(to: &Http, id: i64, seconds: f64) -> String {
    let created = send(
        to,
        id,
        "tools/call",
        declared(tool("durable_job", json!({"seconds": seconds}))),
    )
    .await;
    let created = result(&created);
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().expect("a taskId").to_owned()
}

/// Polls `tasks/get` of `task` on `to` until its status is no longer `working`; the task.
async fn settled(to: &Http, task: &str, what: &str) -> Value {
    let deadline = Deadline::new(what);
    let mut n = 1000;
    loop {
        n += 1;
        let got = send(to, n, "tasks/get", declared(task_id(task))).await;
        let task = result(&got).clone();
        if task["status"] != "working" {
            return task;
        }
        deadline.tick(&task).await;
    }
}

/// A task whose replica is killed (SIGKILL) mid-run completes on another: the other
/// claims it once its lease has run out and runs it again, the tool seeing the same
/// idempotency key as the killed run and attempt 2; `tasks/get` through the balancer and
/// on every live replica answers it completed with that run's result.
#[tokio::test]
async fn a_task_whose_replica_is_killed_mid_run_completes_on_another_with_the_same_key() {
    let Some((_pg, mut replicas, lb)) = cluster(&["--task-lease", LEASE]).await else {
        return;
    };
    let a = Http::at(&replicas.url(0));
    let id = durable_job(&a, 1, 2.0).await;
    let deadline = Deadline::new("the first run starts on replica 0");
    let key = loop {
        if let Some(key) = run_key(&replicas, 0, 1) {
            break key;
        }
        deadline.tick(replicas.stderr(0)).await;
    };
    replicas.kill(0).await;
    let killed = Instant::now();

    let balancer = Http::at(&lb.url());
    let done = settled(&balancer, &id, "the task completes on another replica").await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"],
        json!(format!("run 2 key {key}")),
        "{done}"
    );
    // Bounded by a lease to run out, a third of one for a claimer to look, and the
    // whole run again.
    let lease = Duration::from_millis(LEASE.parse().expect("a lease in ms"));
    assert!(
        killed.elapsed() < lease + lease / 3 + Duration::from_secs(2) + MARGIN * 2,
        "{:?}",
        killed.elapsed()
    );
    let resumed_on: Vec<usize> = (1..3)
        .filter(|&i| run_key(&replicas, i, 2).is_some())
        .collect();
    assert_eq!(
        resumed_on.len(),
        1,
        "one replica ran it again: {resumed_on:?}"
    );
    assert_eq!(run_key(&replicas, resumed_on[0], 2), Some(key.clone()));
    for i in 1..3 {
        let got = send(
            &Http::at(&replicas.url(i)),
            50 + i as i64,
            "tasks/get",
            declared(task_id(&id)),
        )
        .await;
        assert_eq!(*result(&got), done, "replica {i}");
        assert!(
            run_key(&replicas, i, 3).is_none(),
            "no third run on replica {i}"
        );
    }
}

/// A task cancelled through replica B while its run is on replica A stops within the
/// lease's renewal interval (the cancellation is pushed to A at once), and stays
/// cancelled: no replica runs it again once A's lease is gone.
#[tokio::test]
async fn a_task_cancelled_through_another_replica_stops_and_stays_cancelled() {
    let Some((_pg, replicas, _lb)) = cluster(&["--task-lease", LEASE]).await else {
        return;
    };
    let (a, b) = (Http::at(&replicas.url(0)), Http::at(&replicas.url(1)));
    let id = durable_job(&a, 1, 60.0).await;
    let deadline = Deadline::new("the run starts on replica 0");
    while run_key(&replicas, 0, 1).is_none() {
        deadline.tick(replicas.stderr(0)).await;
    }
    let cancelled = Instant::now();
    let got = send(&b, 2, "tasks/cancel", declared(task_id(&id))).await;
    assert_eq!(result(&got)["resultType"], "complete", "{got}");
    let deadline = Deadline::new("the run on replica 0 stops");
    while !replicas.stderr(0).contains("durable_job run 1 stopped") {
        deadline.tick(replicas.stderr(0)).await;
    }
    let renewal = Duration::from_millis(200);
    assert!(
        cancelled.elapsed() < renewal + MARGIN,
        "stopped within the renewal interval: {:?}",
        cancelled.elapsed()
    );
    // Two leases later, still cancelled, and run by no one else.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    for i in 0..3 {
        let got = send(
            &Http::at(&replicas.url(i)),
            10 + i as i64,
            "tasks/get",
            declared(task_id(&id)),
        )
        .await;
        assert_eq!(result(&got)["status"], "cancelled", "replica {i}: {got}");
        assert!(
            run_key(&replicas, i, 2).is_none(),
            "replica {i} ran it again"
        );
    }
}

/// A `subscriptions/listen` stream on replica A hears a tool list change and a task's
/// status published on replica B, in the order B published them: the list change
/// through the event fan-out, the status through the task store's change feed.
#[tokio::test]
async fn a_listen_stream_on_one_replica_hears_what_another_publishes() {
    let Some((_pg, replicas, _lb)) = cluster(&["--task-lease", LEASE]).await else {
        return;
    };
    let (a, b) = (Http::at(&replicas.url(0)), Http::at(&replicas.url(1)));
    let id = durable_job(&b, 1, 60.0).await;
    let listen = presa_tests::request(
        2,
        "subscriptions/listen",
        declared(json!({"notifications": {"toolsListChanged": true, "taskIds": [id]}})),
    );
    let mut stream = a.open(&listen, &[]).await;
    let ack = stream.next(PATIENCE).await.msg("the acknowledgement");
    assert_eq!(
        ack["params"]["notifications"]["taskIds"],
        json!([id]),
        "{ack}"
    );
    // The fan-out's listener may start after the stream: B publishes until A hears.
    let deadline = Deadline::new("A hears B's tool list change");
    let mut n = 10;
    loop {
        n += 1;
        let changed = send(
            &b,
            n,
            "tools/call",
            declared(tool("test_trigger_tool_change", json!({}))),
        )
        .await;
        assert!(changed.get("result").is_some(), "{changed}");
        match stream.next(Duration::from_millis(500)).await {
            Next::Msg(m) => {
                assert_eq!(m["method"], "notifications/tools/list_changed", "{m}");
                break;
            }
            other => deadline.tick(format!("{other:?}")).await,
        }
    }
    // In order: a list change, then the task's cancellation, both made on B.
    let changed = send(
        &b,
        100,
        "tools/call",
        declared(tool("test_trigger_tool_change", json!({}))),
    )
    .await;
    assert!(changed.get("result").is_some(), "{changed}");
    let first = stream.next(PATIENCE).await.msg("the list change");
    assert_eq!(
        first["method"], "notifications/tools/list_changed",
        "{first}"
    );
    let got = send(&b, 101, "tasks/cancel", declared(task_id(&id))).await;
    assert_eq!(result(&got)["resultType"], "complete", "{got}");
    let second = stream.next(PATIENCE).await.msg("the task's status");
    assert_eq!(second["method"], "notifications/tasks", "{second}");
    assert_eq!(second["params"]["taskId"], json!(id), "{second}");
    assert_eq!(second["params"]["status"], "cancelled", "{second}");
}
