//! Tasks kept in PostgreSQL (`presa::tasks::PgStore`), on a throwaway server each test
//! starts (`presa_tests::postgres`; skipped, saying so, where PostgreSQL is not
//! installed): the store's contract, its migrations (once, at once, and a newer schema
//! refused), its bounded waits, two servers sharing one database as replicas do, changes
//! pushed between them through LISTEN/NOTIFY (to workers and to listen streams, across a
//! killed listener connection), and a database outage met by requests over HTTP.

use crate::tasks::{Client, Kind, Lab, Tasking, bare, declared, task_id, tool};
use presa::tasks::{ConnectError, PgStore, StoreError, TaskStore, Tasks, contract};
use presa_tests::postgres::Postgres;
use presa_tests::wait::Deadline;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

/// How late past a bound an answer may come (scheduling on a loaded machine) and still
/// count as bounded.
const MARGIN: Duration = Duration::from_millis(1500);

/// Each check of the contract on an empty store of its own: a fresh schema each.
#[tokio::test]
async fn the_postgres_store_keeps_the_contract() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let n = AtomicUsize::new(0);
    contract::run_all(|| {
        let builder =
            PgStore::builder(pg.url()).schema(format!("contract_{}", n.fetch_add(1, SeqCst)));
        async move { builder.connect().await.expect("connects") }
    })
    .await;
}

/// `(component, version)` of every row of `schema.presa_migrations`.
async fn migrations(pg: &Postgres, schema: &str) -> Vec<(String, i64)> {
    let mut conn = pg.connection().await;
    sqlx::query_as(&format!(
        "SELECT component, version FROM {schema}.presa_migrations ORDER BY component"
    ))
    .fetch_all(&mut conn)
    .await
    .expect("the migrations read")
}

/// The rows of `presa_migrations` of this build: the fan-out's events and the replay
/// record at version 1, the legacy sessions at version 2 (their event buffers), the
/// tasks at version 2 (leases).
fn current() -> [(String, i64); 4] {
    [
        ("events".to_owned(), 1),
        ("replay".to_owned(), 1),
        ("sessions".to_owned(), 2),
        ("tasks".to_owned(), 2),
    ]
}

/// The rows of `presa_migrations` when the fan-out's events, the replay record, the
/// sessions' records and the tasks are all at `version`.
fn every(version: i64) -> [(String, i64); 4] {
    [
        ("events".to_owned(), version),
        ("replay".to_owned(), version),
        ("sessions".to_owned(), version),
        ("tasks".to_owned(), version),
    ]
}

/// Two stores connecting at once to a new database both succeed, and the schema is made
/// once; connecting again migrates nothing and finds the tasks; a version newer than this
/// build's is refused with an error saying so, and the database is left as it was.
#[tokio::test]
async fn migrations_run_once_and_a_newer_schema_is_refused() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let url = pg.url();
    let (a, b) = tokio::join!(
        PgStore::builder(&url).schema("racing").connect(),
        PgStore::builder(&url).schema("racing").connect(),
    );
    let (a, b) = (
        a.expect("the first connects"),
        b.expect("the second connects"),
    );
    assert_eq!(migrations(&pg, "racing").await, current());
    // A task through one is seen through the other.
    contract::insert_then_get(&a).await;
    assert_eq!(b.count(None, 0).await, Ok(1));
    a.close().await;
    b.close().await;

    // Again: the tables are there (the first migration would fail making them twice).
    let again = PgStore::builder(&url)
        .schema("racing")
        .connect()
        .await
        .expect("connects again");
    assert_eq!(again.count(None, 0).await, Ok(1), "the task is kept");
    assert_eq!(migrations(&pg, "racing").await, current());
    again.close().await;

    // A newer presa migrated the database: this build refuses it and changes nothing.
    let mut conn = pg.connection().await;
    sqlx::query("UPDATE racing.presa_migrations SET version = 3")
        .execute(&mut conn)
        .await
        .expect("the version raised");
    let error = PgStore::builder(&url)
        .schema("racing")
        .connect()
        .await
        .expect_err("refused");
    assert!(
        matches!(error, ConnectError::NewerSchema { found: 3, known: 2 }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "the task database has schema version 3, newer than this build's 2: it was migrated \
         by a newer presa"
    );
    assert_eq!(migrations(&pg, "racing").await, every(3));
    let kept: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM racing.presa_tasks")
        .fetch_one(&mut conn)
        .await
        .expect("counted");
    assert_eq!(kept, 1, "the tasks are left alone");

    // Without a schema the tables go to the connection's search path (`public`).
    let plain = PgStore::connect(&url).await.expect("connects");
    assert_eq!(plain.count(None, 0).await, Ok(0));
    assert_eq!(migrations(&pg, "public").await, current());
}

/// `get` through `store`, with how long it took.
async fn timed_get(store: &PgStore) -> (Result<bool, StoreError>, Duration) {
    let started = Instant::now();
    let got = store.get("nothing").await.map(|r| r.is_none());
    (got, started.elapsed())
}

/// A statement waiting on a lock is cancelled at the statement timeout, not before; a
/// call finding the pool's connections all busy is refused at the acquire timeout, not
/// before; both are `Unavailable`, and the store answers again once the lock is gone.
#[tokio::test]
async fn every_wait_on_the_database_is_bounded() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let statement = Duration::from_millis(1200);
    let acquire = Duration::from_millis(400);
    let store = PgStore::builder(pg.url())
        .schema("bounds")
        .max_connections(1)
        .statement_timeout(statement)
        .acquire_timeout(acquire)
        .connect()
        .await
        .expect("connects");
    assert_eq!(store.get("nothing").await, Ok(None));

    // Under the bound: a lock held for less than the statement timeout is waited out.
    let mut holder = pg.connection().await;
    let lock = "LOCK TABLE bounds.presa_tasks IN ACCESS EXCLUSIVE MODE";
    sqlx::query("BEGIN")
        .execute(&mut holder)
        .await
        .expect("begun");
    sqlx::query(lock)
        .execute(&mut holder)
        .await
        .expect("locked");
    let waiting = tokio::spawn({
        let store = store.clone();
        async move { timed_get(&store).await }
    });
    tokio::time::sleep(statement / 3).await;
    sqlx::query("ROLLBACK")
        .execute(&mut holder)
        .await
        .expect("released");
    let (got, took) = waiting.await.expect("the call ends");
    assert_eq!(got, Ok(true), "answered once the lock was released");
    assert!(took >= statement / 3, "it waited for the lock: {took:?}");

    // At and past the bounds: the lock is held until both calls have given up.
    sqlx::query("BEGIN")
        .execute(&mut holder)
        .await
        .expect("begun");
    sqlx::query(lock)
        .execute(&mut holder)
        .await
        .expect("locked");
    let first = tokio::spawn({
        let store = store.clone();
        async move { timed_get(&store).await }
    });
    // The first call holds the pool's one connection, waiting on the lock.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (second, second_took) = timed_get(&store).await;
    let (first, first_took) = first.await.expect("the call ends");
    match &second {
        Err(StoreError::Unavailable(why)) => {
            assert!(why.contains("no connection within 400ms"), "{why}");
        }
        other => panic!("the second call: {other:?}"),
    }
    assert!(
        second_took >= acquire && second_took < acquire + MARGIN,
        "refused at the acquire timeout: {second_took:?}"
    );
    match &first {
        Err(StoreError::Unavailable(why)) => {
            assert!(why.contains("statement timeout"), "{why}");
        }
        other => panic!("the first call: {other:?}"),
    }
    assert!(
        first_took >= statement && first_took < statement + MARGIN,
        "cancelled at the statement timeout: {first_took:?}"
    );
    sqlx::query("ROLLBACK")
        .execute(&mut holder)
        .await
        .expect("released");
    assert_eq!(
        store.get("nothing").await,
        Ok(None),
        "the store answers again"
    );
}

/// A server that cannot keep its own statement timeout (its process stopped, as a frozen
/// host or a network dropping packets would leave it) is given up one second after that
/// timeout, not before and not much after, and its connection is closed: once the
/// process runs again, the store answers on a new connection.
#[tokio::test]
async fn a_silent_server_is_given_up_a_second_past_the_statement_timeout() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let statement = Duration::from_millis(600);
    let grace = Duration::from_secs(1);
    let store = PgStore::builder(pg.url())
        .schema("silent")
        .max_connections(1)
        .statement_timeout(statement)
        .connect()
        .await
        .expect("connects");
    let mut holder = pg.connection().await;
    sqlx::query("BEGIN")
        .execute(&mut holder)
        .await
        .expect("begun");
    sqlx::query("LOCK TABLE silent.presa_tasks IN ACCESS EXCLUSIVE MODE")
        .execute(&mut holder)
        .await
        .expect("locked");
    let waiting = tokio::spawn({
        let store = store.clone();
        async move { timed_get(&store).await }
    });
    // The store's one connection waits on the lock; its server process is stopped there,
    // and the lock let go, so only a running process could answer.
    let backend = presa_tests::wait::Deadline::new("the store's statement waits on the lock");
    let pid: i32 = loop {
        let found: Option<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'presa' \
             AND wait_event_type = 'Lock'",
        )
        .fetch_optional(&mut holder)
        .await
        .expect("read");
        if let Some(pid) = found {
            break pid;
        }
        backend.tick("not yet").await;
    };
    kill(Pid::from_raw(pid), Signal::SIGSTOP).expect("stopped");
    sqlx::query("ROLLBACK")
        .execute(&mut holder)
        .await
        .expect("released");
    let (got, took) = waiting.await.expect("the call ends");
    kill(Pid::from_raw(pid), Signal::SIGCONT).expect("continued");
    match &got {
        Err(StoreError::Unavailable(why)) => {
            assert!(why.contains("no answer within 1.6s"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        took >= statement + grace && took < statement + grace + MARGIN,
        "given up a second past the statement timeout: {took:?}"
    );
    assert_eq!(
        store.get("nothing").await,
        Ok(None),
        "answered on a new connection"
    );
}

/// Two servers, each with its own pool on one database, as two replicas behind a load
/// balancer: a task created through the first is read, and cancelled, through the second;
/// its work runs in the first only, and the first's worker drops the work when it reads
/// the cancellation made through the second.
#[tokio::test]
async fn two_servers_on_one_database_answer_for_each_others_tasks() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let replica = || async {
        let store = PgStore::connect(&pg.url()).await.expect("connects");
        Lab::new(
            Tasks::builder()
                .remote_check(Duration::from_millis(20))
                .store(store),
        )
    };
    let (a, b) = (replica().await, replica().await);
    let mut wa = Client::start(Kind::Http, &a.server).await;
    let mut wb = Client::start(Kind::Http, &b.server).await;

    let id = wa.create("gate", json!({})).await;
    assert_eq!(wb.get(&id).await["status"], "working", "B reads A's task");
    a.gate.add_permits(1);
    let done = wb.wait_for(&id, &["completed"]).await;
    assert_eq!(done["result"]["content"][0]["text"], "released", "{done}");
    assert_eq!(wa.get(&id).await, done, "both answer alike");

    let other = wa.create("gate", json!({})).await;
    a.wait_count(&a.probe.started, 2, "A's runs").await;
    wb.cancel(&other).await;
    // The worker drops the tool's future (its guard with it) without letting it finish.
    a.wait_count(&a.probe.dropped, 2, "A's runs dropped").await;
    assert_eq!(
        a.probe.finished.load(SeqCst),
        1,
        "the cancelled run never finished"
    );
    assert_eq!(wa.get(&other).await["status"], "cancelled");
    assert_eq!(b.probe.started.load(SeqCst), 0, "no work ran in B");
}

/// `method` with `params` through `w`, answered within `within` (a hang fails the test);
/// the response, with how long it took.
async fn timed_send(
    w: &mut Client,
    method: &str,
    params: Value,
    within: Duration,
) -> (Value, Duration) {
    let started = Instant::now();
    let got = tokio::time::timeout(within, w.send(method, declared(params)))
        .await
        .unwrap_or_else(|_| panic!("{method}: no answer within {within:?}"));
    (got.response().clone(), started.elapsed())
}

/// PostgreSQL stopped under a running server: reading and creating tasks are a retryable
/// -32603 that comes at the acquire timeout (not a hang), and nothing panics; started
/// again on the same data and port, the same requests succeed within 5 s, and the task
/// acknowledged before the outage is answered as it was.
#[tokio::test]
async fn a_database_outage_is_retryable_and_loses_no_acknowledged_task() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let acquire = Duration::from_millis(800);
    let store = PgStore::builder(pg.url())
        .acquire_timeout(acquire)
        .statement_timeout(Duration::from_secs(2))
        .connect()
        .await
        .expect("connects");
    let lab = Lab::new(
        Tasks::builder()
            .remote_check(Duration::from_millis(20))
            .reap_every(Duration::from_millis(50))
            .store(store),
    );
    let mut w = Client::start(Kind::Http, &lab.server).await;
    let id = w.create("quick", json!({"n": 3})).await;
    let done = w.wait_for(&id, &["completed"]).await;

    pg.stop().await;
    for (method, params) in [
        ("tasks/get", task_id(&id)),
        ("tools/call", tool("quick", json!({"n": 4}))),
    ] {
        let (response, took) = timed_send(&mut w, method, params, acquire + MARGIN * 2).await;
        assert_eq!(response["error"]["code"], -32603, "{method}: {response}");
        assert_eq!(
            response["error"]["data"]["retryable"], true,
            "{method}: {response}"
        );
        assert_eq!(
            response["error"]["message"], "The task store is unavailable; try again",
            "{method}: no detail of the fault is sent"
        );
        assert!(
            took >= acquire && took < acquire + MARGIN,
            "{method}: refused at the acquire timeout: {took:?}"
        );
    }

    pg.start_again().await.expect("PostgreSQL starts again");
    let back = Instant::now();
    let deadline = Deadline::new("the store answers again");
    loop {
        let (response, _) =
            timed_send(&mut w, "tasks/get", task_id(&id), acquire + MARGIN * 2).await;
        if let Some(task) = response.get("result") {
            assert_eq!(*task, done, "the task is answered as it was completed");
            break;
        }
        assert_eq!(response["error"]["data"]["retryable"], true, "{response}");
        deadline.tick(&response).await;
    }
    assert!(
        back.elapsed() < Duration::from_secs(5),
        "back within 5 s: {:?}",
        back.elapsed()
    );
    let again = w.create("quick", json!({"n": 5})).await;
    let task = w.wait_for(&again, &["completed"]).await;
    assert_eq!(task["result"]["content"][0]["text"], "quick 5", "{task}");
}

/// How long a change pushed through LISTEN/NOTIFY may take to reach the other replica,
/// scheduling on a loaded machine included: far below the 30 s poll the push tests set.
const PUSHED_WITHIN: Duration = Duration::from_secs(2);

/// Two replicas, each with its own store on one database, polling only every 30 s: what
/// they see of each other within [`PUSHED_WITHIN`] was pushed.
async fn pushing_replicas(pg: &Postgres) -> (Lab, Lab) {
    let replica = || async {
        let store = PgStore::connect(&pg.url()).await.expect("connects");
        Lab::new(
            Tasks::builder()
                .remote_check(Duration::from_secs(30))
                .store(store),
        )
    };
    (replica().await, replica().await)
}

/// Waits until `counter` of A's probe reaches `n` within [`PUSHED_WITHIN`] of `from`.
async fn within_push(lab: &Lab, counter: &AtomicUsize, n: usize, from: Instant, what: &str) {
    tokio::time::timeout(PUSHED_WITHIN, lab.wait_count(counter, n, what))
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {PUSHED_WITHIN:?}"));
    assert!(
        from.elapsed() < PUSHED_WITHIN,
        "{what}: {:?}",
        from.elapsed()
    );
}

/// A cancellation through B reaches A's running worker at once, though both poll only
/// every 30 s: the change is pushed (NOTIFY at commit, A's listener wakes the worker).
#[tokio::test]
async fn a_cancel_through_another_replica_is_pushed_to_the_worker() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let (a, b) = pushing_replicas(&pg).await;
    let mut wa = Client::start(Kind::Http, &a.server).await;
    let mut wb = Client::start(Kind::Http, &b.server).await;
    for n in 1..=2 {
        let id = wa.create("gate", json!({})).await;
        a.wait_count(&a.probe.started, n, "A's runs").await;
        let cancelled = Instant::now();
        wb.cancel(&id).await;
        within_push(&a, &a.probe.dropped, n, cancelled, "A drops the run").await;
        assert_eq!(a.probe.finished.load(SeqCst), 0, "no run finished");
        assert_eq!(wa.get(&id).await["status"], "cancelled");
    }
}

/// The pids of the change feeds' listener connections.
async fn listeners(pg: &Postgres) -> Vec<i32> {
    pg.pids_of("presa-listen").await
}

/// Waits until the listener connections are exactly `n`, none of them in `gone`.
async fn listening(pg: &Postgres, n: usize, gone: &[i32]) -> Vec<i32> {
    let deadline = Deadline::new("the listeners connect");
    loop {
        let pids = listeners(pg).await;
        if pids.len() == n && pids.iter().all(|p| !gone.contains(p)) {
            return pids;
        }
        deadline.tick(format!("{pids:?}")).await;
    }
}

/// The listener connection killed by the server: a cancellation made right after, while
/// it reconnects, still reaches A's worker within a bound (A listens again and reads its
/// task once), and changes made once it listens again are pushed as before.
#[tokio::test]
async fn a_dropped_listener_connection_reconnects_and_misses_nothing() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let (a, b) = pushing_replicas(&pg).await;
    let mut wa = Client::start(Kind::Http, &a.server).await;
    let mut wb = Client::start(Kind::Http, &b.server).await;

    let first = wa.create("gate", json!({})).await;
    a.wait_count(&a.probe.started, 1, "A's runs").await;
    // Only A has subscribed (its worker): one listener.
    let before = listening(&pg, 1, &[]).await;
    let mut conn = pg.connection().await;
    sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'presa-listen'")
        .execute(&mut conn)
        .await
        .expect("the listener is killed");
    let cancelled = Instant::now();
    wb.cancel(&first).await;
    within_push(&a, &a.probe.dropped, 1, cancelled, "A drops the run").await;

    listening(&pg, 1, &before).await;
    let second = wa.create("gate", json!({})).await;
    a.wait_count(&a.probe.started, 2, "A's runs").await;
    let cancelled = Instant::now();
    wb.cancel(&second).await;
    within_push(&a, &a.probe.dropped, 2, cancelled, "A drops the second run").await;
    assert_eq!(a.probe.finished.load(SeqCst), 0, "no run finished");
}

/// A stream listening on A to a task whose status changes through B hears the change at
/// once (A's relay reads the task on B's notification); a change A makes itself is heard
/// once, not again when its own notification comes back.
#[tokio::test]
async fn a_listener_hears_changes_made_through_another_replica() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let (a, b) = pushing_replicas(&pg).await;
    let mut wa = Client::start(Kind::Http, &a.server).await;
    let mut wb = Client::start(Kind::Http, &b.server).await;

    let remote = wa.create("gate", json!({})).await;
    let local = wa.create("gate", json!({})).await;
    a.wait_count(&a.probe.started, 2, "A's runs").await;
    let listen = |id: &String| declared(json!({"notifications": {"taskIds": [id]}}));
    let l = wa
        .listen_tasks(listen(&remote))
        .await
        .unwrap_or_else(|e| panic!("the listen is accepted: {e:?}"));
    let cancelled = Instant::now();
    wb.cancel(&remote).await;
    let events = tokio::time::timeout(
        PUSHED_WITHIN,
        wa.task_events_until(&l, &remote, "cancelled"),
    )
    .await
    .unwrap_or_else(|_| panic!("no cancelled notification within {PUSHED_WITHIN:?}"));
    assert!(
        cancelled.elapsed() < PUSHED_WITHIN,
        "{:?}",
        cancelled.elapsed()
    );
    assert_eq!(
        bare(&events.last().expect("an event")["params"]),
        bare(&wa.get(&remote).await),
        "the notification is the task as stored"
    );

    // The permit below must reach the local task's gate: the cancelled run's future,
    // which waited at the gate first, is dropped once A's worker hears the cancel (the
    // listener above may hear it sooner).
    a.wait_count(&a.probe.dropped, 1, "the cancelled run's future is dropped")
        .await;
    let l = wa
        .listen_tasks(listen(&local))
        .await
        .unwrap_or_else(|e| panic!("the listen is accepted: {e:?}"));
    a.gate.add_permits(1);
    wa.task_events_until(&l, &local, "completed").await;
    // The completion's own notification comes back to A's relay, which has published
    // that revision already.
    if let Some(again) = wa.event(&l, Duration::from_millis(1000)).await {
        panic!("nothing more is sent: {again}");
    }
}

/// Lease renewals are changes of the stored record, so each one is notified; a listener
/// on another replica, whose relay reads the task at every notification, still hears
/// nothing until a change a client can see (the completion), and hears that once.
#[tokio::test]
async fn lease_renewals_notified_through_the_database_are_not_published() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let lease = Duration::from_millis(90);
    let replica = || async {
        let store = PgStore::connect(&pg.url()).await.expect("connects");
        Lab::new(
            Tasks::builder()
                .remote_check(Duration::from_secs(30))
                .lease(lease)
                .store(store),
        )
    };
    let (a, b) = (replica().await, replica().await);
    let mut wa = Client::start(Kind::Http, &a.server).await;
    let mut wb = Client::start(Kind::Http, &b.server).await;
    let id = wa.create("gate", json!({})).await;
    a.wait_count(&a.probe.started, 1, "A's run").await;
    let l = wb
        .listen_tasks(declared(json!({"notifications": {"taskIds": [id]}})))
        .await
        .unwrap_or_else(|e| panic!("the listen is accepted: {e:?}"));
    let revision = || async {
        let stored = b.tasks.store().get(&id).await.expect("the store answers");
        stored.map_or(0, |r| r.revision)
    };
    let before = revision().await;
    if let Some(event) = wb.event(&l, lease * 8).await {
        panic!("a renewal was published: {event}");
    }
    let after = revision().await;
    assert!(
        after >= before + 3,
        "renewed (and notified) several times meanwhile: {before} → {after}"
    );
    a.gate.add_permits(1);
    let events = wb.task_events_until(&l, &id, "completed").await;
    assert_eq!(events.len(), 1, "the completion alone: {events:#?}");
    if let Some(again) = wb.event(&l, Duration::from_millis(500)).await {
        panic!("nothing more is sent: {again}");
    }
}
