//! Tasks kept in a SQLite file (`presa::tasks::SqliteStore`), over HTTP: a task run to
//! completion by one server is answered by a new server opened on the same file, as it
//! would be after a restart; and a task whose process was killed mid-run (SIGKILL) is run
//! again by the next process on the file once its lease has run out, with the same
//! idempotency key.

use crate::tasks::{Client, Kind, Lab, Tasking, declared, task_id, tool};
use presa::tasks::{SqliteStore, Tasks};
use presa_tests::http::Http;
use presa_tests::replicas::Replicas;
use presa_tests::wait::Deadline;
use serde_json::json;

#[tokio::test]
async fn a_completed_task_is_answered_by_a_new_server_on_the_same_file() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("tasks.db");
    let store = SqliteStore::open(&path).await.expect("opens");
    let first = Lab::new(Tasks::builder().store(store.clone()));
    let mut w = Client::start(Kind::Http, &first.server).await;
    let id = w.create("quick", json!({"n": 7})).await;
    let done = w.wait_for(&id, &["completed"]).await;
    assert_eq!(done["result"]["content"][0]["text"], "quick 7", "{done}");
    // Nothing of the first server's store stays open: the second reads the file.
    store.close().await;
    drop((w, first, store));

    let reopened = SqliteStore::open(&path).await.expect("reopens");
    let second = Lab::new(Tasks::builder().store(reopened));
    let mut w = Client::start(Kind::Http, &second.server).await;
    let again = w.get(&id).await;
    assert_eq!(
        again, done,
        "the new server answers the task as it was completed"
    );
    assert_eq!(
        second
            .probe
            .quick_runs
            .load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the new server did not run the tool again"
    );
}

/// One machine: the fixture on a SQLite file is killed (SIGKILL) while a task runs, and
/// started again on the same file and port; the new process claims the task once the
/// killed one's lease has run out, and runs it to completion, the tool seeing the same
/// idempotency key as the killed run, and attempt 2.
#[tokio::test]
async fn a_task_killed_mid_run_completes_after_a_restart_on_the_same_file() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let store = format!("sqlite:{}", dir.path().join("tasks.db").display());
    let args = ["--tasks-store", store.as_str(), "--task-lease", "600"];
    let mut fixture = Replicas::start(env!("CARGO_BIN_EXE_fixture"), 1, &args, &[]).await;
    let http = Http::at(&fixture.url(0));
    let created = http
        .call(
            1,
            "tools/call",
            declared(tool("durable_job", json!({"seconds": 1.0}))),
        )
        .await;
    let id = created.response()["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {}", created.body))
        .to_owned();
    let key = |attempt: u64, log: &str| {
        let prefix = format!("durable_job run {attempt} key ");
        log.lines()
            .find_map(|l| l.strip_prefix(&prefix).map(str::to_owned))
    };
    let deadline = Deadline::new("the first run starts");
    let first = loop {
        if let Some(k) = key(1, &fixture.stderr(0)) {
            break k;
        }
        deadline.tick(fixture.stderr(0)).await;
    };
    fixture.kill(0).await;
    fixture.restart(0).await;
    let deadline = Deadline::new("the task completes after the restart");
    let mut n = 10;
    let done = loop {
        n += 1;
        let got = http.call(n, "tasks/get", declared(task_id(&id))).await;
        let task = got.response()["result"].clone();
        if task["status"] != "working" {
            break task;
        }
        deadline.tick(&task).await;
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"],
        json!(format!("run 2 key {first}"))
    );
    assert_eq!(key(2, &fixture.stderr(0)), Some(first));
}
