//! The replay record in PostgreSQL (`PgStore` as a `presa::mrtr::ReplayStore`), on a
//! throwaway server each test starts (skipped, saying so, where PostgreSQL is not
//! installed): the replay contract, the record's migration as its own component, three
//! replicas over HTTP sharing it (a single-use state spent on one is refused on all), and
//! a database outage met by a retry (retryable -32603, the state not spent).

use crate::mrtr::{
    Client, Kind, Name, Probe, accept, builder, call_params, form_caps, input_required, ok, probed,
    retry,
};
use presa::Server;
use presa::mrtr::{ReplayStore, contract};
use presa::tasks::{ConnectError, PgStore};
use presa_tests::postgres::Postgres;
use presa_tests::wait::Deadline;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How late past a bound an answer may come (scheduling on a loaded machine) and still
/// count as bounded.
const MARGIN: Duration = Duration::from_millis(1500);

#[tokio::test]
async fn the_postgres_store_keeps_the_replay_contract() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let store = PgStore::connect(&pg.url()).await.expect("connects");
    contract::run_all(&store).await;
    // Two handles on one database (two replicas) share the record.
    let other = PgStore::connect(&pg.url()).await.expect("connects");
    let exp = now() + 60;
    assert_eq!(store.first_use("shared", exp).await, Ok(true));
    assert_eq!(other.first_use("shared", exp).await, Ok(false));
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `(component, version)` of every row of `presa_migrations`.
async fn migrations(pg: &Postgres) -> Vec<(String, i64)> {
    let mut conn = pg.connection().await;
    sqlx::query_as("SELECT component, version FROM presa_migrations ORDER BY component")
        .fetch_all(&mut conn)
        .await
        .expect("the migrations read")
}

/// The replay record is its own component: a database the tasks alone were migrated in
/// gains it at the next connect; a replay version newer than this build's is refused,
/// and the database left as it was.
#[tokio::test]
async fn the_replay_record_migrates_as_its_own_component() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let url = pg.url();
    PgStore::connect(&url)
        .await
        .expect("connects")
        .close()
        .await;
    let every = [
        ("events".to_owned(), 1),
        ("replay".to_owned(), 1),
        ("sessions".to_owned(), 2),
        ("tasks".to_owned(), 2),
    ];
    assert_eq!(migrations(&pg).await, every);

    // As an earlier build left it: the tasks only.
    let mut conn = pg.connection().await;
    for statement in [
        "DROP TABLE presa_replay",
        "DELETE FROM presa_migrations WHERE component = 'replay'",
    ] {
        sqlx::query(statement)
            .execute(&mut conn)
            .await
            .expect("undone");
    }
    let store = PgStore::connect(&url).await.expect("connects");
    assert_eq!(migrations(&pg).await, every);
    assert_eq!(store.first_use("after", now() + 60).await, Ok(true));
    store.close().await;

    sqlx::query("UPDATE presa_migrations SET version = 2 WHERE component = 'replay'")
        .execute(&mut conn)
        .await
        .expect("the version raised");
    let error = PgStore::connect(&url).await.expect_err("refused");
    assert!(
        matches!(error, ConnectError::NewerSchema { found: 2, known: 1 }),
        "{error:?}"
    );
    assert_eq!(
        migrations(&pg).await,
        [
            ("events".to_owned(), 1),
            ("replay".to_owned(), 2),
            ("sessions".to_owned(), 2),
            ("tasks".to_owned(), 2)
        ]
    );
}

/// A replica of one server: the same name and state keys as every other (the mrtr
/// tests' `builder`), the replay record in `store`, and a tool whose state is
/// single-use.
fn replica(store: &PgStore, probe: &Arc<Probe>) -> Server {
    builder()
        .replay_store(store.clone())
        .tool(probed("once", probe, |_, call| async move {
            call.ctx.single_use_state();
            call.ctx.elicit::<Name>("user_name", "Name?").get()?;
            ok("done")
        }))
        .build()
        .expect("builds")
}

fn alice() -> Value {
    json!({"user_name": accept(json!({"name": "Alice"}))})
}

/// Three replicas over HTTP share one PostgreSQL replay record: the first round answered
/// by A, its retry served by B, the same retry replayed to C (and to A and B) refused
/// with the same -32602 a single process gives; the handler ran twice in all.
#[tokio::test]
async fn a_single_use_state_spent_on_one_replica_is_refused_on_all() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let store = PgStore::connect(&pg.url()).await.expect("connects");
    let probe = Arc::new(Probe::default());
    let mut a = Client::start(Kind::Http, &replica(&store, &probe)).await;
    let mut b = Client::start(Kind::Http, &replica(&store, &probe)).await;
    let mut c = Client::start(Kind::Http, &replica(&store, &probe)).await;
    let params = call_params("once", json!({}), form_caps());
    let state = input_required(&a.call(1, "tools/call", params.clone()).await).state;
    let again = retry(&params, alice(), Some(&state));
    assert_eq!(b.call(2, "tools/call", again.clone()).await.text(), "done");
    c.call(3, "tools/call", again.clone()).await.invalid_state();
    a.call(4, "tools/call", again.clone()).await.invalid_state();
    b.call(5, "tools/call", again).await.invalid_state();
    assert_eq!(probe.runs(), 2, "round 1 on A, the retry on B, no more");
}

/// PostgreSQL stopped under the replicas: a retry with a single-use state is the
/// retryable -32603 at the acquire timeout (never accepted, never a hang) and its handler
/// does not run; started again, the same retry succeeds on another replica (the fault
/// spent nothing), and is then refused.
#[tokio::test]
async fn a_replay_record_outage_is_retryable_and_spends_nothing() {
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
    let probe = Arc::new(Probe::default());
    let mut a = Client::start(Kind::Http, &replica(&store, &probe)).await;
    let mut b = Client::start(Kind::Http, &replica(&store, &probe)).await;
    let params = call_params("once", json!({}), form_caps());
    let state = input_required(&a.call(1, "tools/call", params.clone()).await).state;
    let again = retry(&params, alice(), Some(&state));

    pg.stop().await;
    let started = Instant::now();
    let got = b.call(2, "tools/call", again.clone()).await;
    let took = started.elapsed();
    let error = got.error(-32603, 500);
    assert_eq!(error["data"]["retryable"], true, "{error}");
    assert_eq!(
        error["message"], "The record of spent request state is unavailable; try again",
        "no detail of the fault is sent"
    );
    assert!(
        took >= acquire && took < acquire + MARGIN,
        "refused at the acquire timeout: {took:?}"
    );
    assert_eq!(probe.runs(), 1, "the handler did not run on the retry");

    pg.start_again().await.expect("PostgreSQL starts again");
    let deadline = Deadline::new("the replay record answers again");
    let mut id = 3;
    loop {
        let got = a.call(id, "tools/call", again.clone()).await;
        id += 1;
        let response = got.response().clone();
        if response.get("result").is_some() {
            assert_eq!(got.text(), "done");
            break;
        }
        assert_eq!(response["error"]["data"]["retryable"], true, "{response}");
        deadline.tick(&response).await;
    }
    b.call(id, "tools/call", again).await.invalid_state();
    assert_eq!(probe.runs(), 2);
}

/// Expired rows of `presa_replay`.
async fn expired_rows(pg: &Postgres) -> i64 {
    let mut conn = pg.connection().await;
    sqlx::query_scalar("SELECT count(*) FROM presa_replay WHERE expires_at < $1")
        .bind(i64::try_from(now()).unwrap_or(i64::MAX))
        .fetch_one(&mut conn)
        .await
        .expect("counted")
}

/// Expired records are dropped after a use whose id starts with `A` (one in 64 of a
/// state's random ids), 256 at most each time; live ones are kept.
#[tokio::test]
async fn expired_replay_records_are_pruned_a_batch_at_a_time() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let store = PgStore::connect(&pg.url()).await.expect("connects");
    let mut conn = pg.connection().await;
    sqlx::query(
        "INSERT INTO presa_replay (id, expires_at) SELECT 'old' || n, 1 FROM generate_series(1, 300) n",
    )
    .execute(&mut conn)
    .await
    .expect("expired rows");
    let live = now() + 60;
    assert_eq!(store.first_use("b-live", live).await, Ok(true));
    assert_eq!(expired_rows(&pg).await, 300, "no pruning after `b…`");
    assert_eq!(store.first_use("A-live", live).await, Ok(true));
    assert_eq!(expired_rows(&pg).await, 300 - 256, "one batch, no more");
    assert_eq!(store.first_use("A-two", live).await, Ok(true));
    assert_eq!(expired_rows(&pg).await, 0);
    assert_eq!(
        store.first_use("A-live", live).await,
        Ok(false),
        "live kept"
    );
    assert_eq!(
        store.first_use("b-live", live).await,
        Ok(false),
        "live kept"
    );
}
