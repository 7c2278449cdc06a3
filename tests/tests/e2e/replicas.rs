//! Three replicas of the fixture (child processes over Streamable HTTP) sharing one
//! throwaway PostgreSQL (`--tasks-store`) and one request-state key
//! (`PRESA_STATE_KEYS`), behind a throwaway HAProxy balancing round-robin: what a
//! client of the balancer sees is one server. A task created through the balancer is
//! answered by every replica; a request state issued by one replica is accepted by
//! another, and a single-use one spent there is refused by the third; a database outage
//! under a steady load is a retryable -32603 (never a hang, never a lost acknowledged
//! task) and serving comes back after it.
//!
//! Skipped, saying so, where HAProxy or PostgreSQL is not installed (`.ci/run` installs
//! both).

use crate::mrtr::{accept, call_params, form_caps, retry};
use crate::tasks::{declared, task_id, tool};
use presa_tests::haproxy::Haproxy;
use presa_tests::http::Http;
use presa_tests::postgres::Postgres;
use presa_tests::replicas::Replicas;
use presa_tests::wait::Deadline;
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
