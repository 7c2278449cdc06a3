//! Legacy sessions (clients that open with `initialize`) served by several replicas that
//! share a session store: a session made on one replica is served by every other, as
//! the same session (revision, capabilities, log level, subscriptions), wherever each
//! request lands; a DELETE on any replica ends it on all; a fault of the store is a
//! retryable -32603 and serving comes back with the store.
//!
//! A stream's events are shared too: a client that drops a GET stream or a request's
//! stream resumes it with `Last-Event-ID` on any replica, which replays what it missed
//! from the store, with the same ids, and goes on with what follows.
//!
//! Two servers in this process sharing a `MemorySessionStore` check the rules quickly;
//! three fixture replicas sharing a throwaway PostgreSQL behind a real HAProxy check them
//! as deployed (skipped, saying so, where PostgreSQL or HAProxy is missing).

use crate::subscriptions::{builder, plain_resource, plain_tool};
use presa::session::{MemorySessionStore, SessionStore};
use presa::subscriptions::MemoryFanout;
use presa::{HttpConfig, LogLevel, Server, Tool, ToolCall};
use presa_tests::haproxy::Haproxy;
use presa_tests::http::{Harness, Http};
use presa_tests::legacy::{Legacy, request};
use presa_tests::postgres::Postgres;
use presa_tests::replicas::Replicas;
use presa_tests::sse::Next;
use presa_tests::wait::{Deadline, PATIENCE};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

const FIXTURE: &str = env!("CARGO_BIN_EXE_fixture");

/// The request-state key every replica shares.
const KEY: &str = "k1:BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";

/// The revision the sessions speak.
const VERSION: &str = "2025-11-25";

/// A server with tools, a resource to subscribe to and logging, keeping its sessions'
/// records in `store`.
fn replica(store: &MemorySessionStore) -> Server {
    builder("legacy-replica")
        .tool(plain_tool("plain"))
        .resource(plain_resource("test://doc"))
        .resource_notifications(true)
        .session_store(store.clone())
        .build()
        .expect("builds")
}

/// The log messages a reply carried.
fn logs(reply: &presa_tests::http::Reply) -> usize {
    reply
        .notifications()
        .iter()
        .filter(|n| n["method"] == "notifications/message")
        .count()
}

/// A session made on server A is served by server B (unknown there until then) as the
/// same session; what the client sets on B holds on A; a DELETE on B ends it on both.
#[tokio::test]
async fn a_session_made_on_one_server_is_served_by_another_sharing_its_store() {
    let store = MemorySessionStore::default();
    let (one, two) = (replica(&store), replica(&store));
    let ha = Harness::start(one.clone()).await;
    let hb = Harness::start(two.clone()).await;
    let mut a = Legacy::open_with(&ha.http(), VERSION, json!({"elicitation": {}})).await;
    let mut b = a.at(&hb.http());

    let r = b.call("tools/list", json!({})).await;
    assert!(r.response()["result"]["tools"].is_array(), "{}", r.body);
    let r = b
        .call("tools/call", json!({"name": "plain", "arguments": {}}))
        .await;
    assert!(r.response().get("result").is_some(), "{}", r.body);
    let id = a.session.clone().expect("a session");
    let record = store
        .touch(&id, now_ms(), u64::MAX)
        .await
        .expect("the store answers")
        .expect("the record");
    assert_eq!(record.version, VERSION);
    assert_eq!(record.capabilities["elicitation"], json!({}));
    assert_eq!(record.client_info["name"], "presa-legacy-tests");

    // The level set on B is the record's, and A serves by it.
    let r = b.call("logging/setLevel", json!({"level": "error"})).await;
    assert_eq!(r.response()["result"], json!({}), "{}", r.body);
    let record = store.touch(&id, now_ms(), u64::MAX).await.expect("ok");
    assert_eq!(record.expect("live").log_level, Some(LogLevel::Error));

    // A subscription made on A reaches B's copy: an update published on B goes to the
    // GET stream open on B.
    let r = a
        .call("resources/subscribe", json!({"uri": "test://doc"}))
        .await;
    assert_eq!(r.response()["result"], json!({}), "{}", r.body);
    let mut get = b.get("", &[]).await;
    assert_eq!(get.status, 200);
    two.notify_resource_updated("test://doc");
    let m = get.next(PATIENCE).await.msg("the update");
    assert_eq!(m["method"], "notifications/resources/updated", "{m}");

    // Ended on B: 404 on both, for every kind of message.
    assert_eq!(b.delete(&[]).await.status, 204);
    for to in [&mut a, &mut b] {
        to.call("tools/list", json!({}))
            .await
            .assert_error(404, -32600, None);
        to.get("", &[])
            .await
            .reply()
            .await
            .assert_error(404, -32600, None);
    }
    a.delete(&[]).await.assert_error(404, -32600, None);
    drop(get);
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}

/// A session whose record expired in the store (idle past the limit) gets 404 on
/// every server, also the one that holds a copy of it.
#[tokio::test]
async fn a_session_idle_past_the_limit_in_the_store_ends_everywhere() {
    let store = MemorySessionStore::default();
    let idle = Duration::from_millis(300);
    let config = HttpConfig::default().session_idle(idle);
    let ha = Harness::start_with(replica(&store), config.clone()).await;
    let hb = Harness::start_with(replica(&store), config).await;
    let mut a = Legacy::open(&ha.http(), VERSION).await;
    let mut b = a.at(&hb.http());
    let r = b.call("tools/list", json!({})).await;
    assert!(r.response().get("result").is_some(), "{}", r.body);
    tokio::time::sleep(idle * 2).await;
    for to in [&mut a, &mut b] {
        to.call("tools/list", json!({}))
            .await
            .assert_error(404, -32600, None);
    }
}

// ---- Three fixture replicas on PostgreSQL behind HAProxy ----

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

/// The result of a reply, failing with the reply when there is none.
#[track_caller]
fn result(reply: &presa_tests::http::Reply) -> Value {
    reply
        .response()
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("a result: {}", reply.body))
}

/// A session opened on replica A is served by B and C directly and through the
/// balancer: a tool call, the level set on B and used on C and A, a subscription made
/// on C (while A holds the session's GET stream) that brings an update published on B to
/// that stream; a DELETE on B ends A's stream, and is 404 on A and C (and B) afterwards.
#[tokio::test]
async fn a_legacy_session_is_served_by_every_replica() {
    let Some((_pg, replicas, lb)) = cluster(&[]).await else {
        return;
    };
    let [ra, rb, rc] = [0, 1, 2].map(|i| Http::at(&replicas.url(i)));
    let mut a = Legacy::open(&ra, VERSION).await;
    let (mut b, mut c) = (a.at(&rb), a.at(&rc));
    let mut through = a.at(&Http::at(&lb.url()));
    for to in [&a, &b] {
        assert_ids_past_the_store_are_400(to).await;
    }

    let r = b
        .call(
            "tools/call",
            json!({"name": "test_simple_text", "arguments": {}}),
        )
        .await;
    assert!(result(&r)["content"].is_array(), "{}", r.body);
    for _ in 0..3 {
        let r = through.call("tools/list", json!({})).await;
        assert!(result(&r)["tools"].is_array(), "{}", r.body);
    }

    // Every level at or above the one set on B, on C, and on A alike.
    let r = b.call("logging/setLevel", json!({"level": "error"})).await;
    assert_eq!(result(&r), json!({}));
    for to in [&mut c, &mut a] {
        let r = to
            .call(
                "tools/call",
                json!({"name": "test_logging_tool", "arguments": {}}),
            )
            .await;
        assert_eq!(logs(&r), 4, "error and above: {}", r.body);
    }
    let r = c
        .call("logging/setLevel", json!({"level": "warning"}))
        .await;
    assert_eq!(result(&r), json!({}));
    let r = b
        .call(
            "tools/call",
            json!({"name": "test_logging_tool", "arguments": {}}),
        )
        .await;
    assert_eq!(logs(&r), 5, "warning and above: {}", r.body);

    // The stream open on A before C subscribes hears an update published on B: C's
    // change reaches A through the fan-out. The fan-out's listener may start after the
    // stream: B publishes until A hears.
    let mut get = a.get("", &[]).await;
    assert_eq!(get.status, 200);
    let r = c
        .call(
            "resources/subscribe",
            json!({"uri": "test://watched-resource"}),
        )
        .await;
    assert_eq!(result(&r), json!({}));
    let deadline = Deadline::new("A's stream hears B's resource update");
    loop {
        let r = b
            .call(
                "tools/call",
                json!({"name": "test_trigger_resource_update", "arguments": {}}),
            )
            .await;
        assert!(r.response().get("result").is_some(), "{}", r.body);
        match get.next(Duration::from_millis(500)).await {
            Next::Msg(m) => {
                assert_eq!(m["method"], "notifications/resources/updated", "{m}");
                assert_eq!(m["params"]["uri"], "test://watched-resource", "{m}");
                break;
            }
            other => deadline.tick(format!("{other:?}")).await,
        }
    }

    // Ended on B: the stream open on A ends, and every replica answers 404.
    assert_eq!(b.delete(&[]).await.status, 204);
    let deadline = Deadline::new("A's stream ends");
    loop {
        match get.next(Duration::from_millis(500)).await {
            Next::End => break,
            other => deadline.tick(format!("{other:?}")).await,
        }
    }
    for to in [&mut a, &mut b, &mut c] {
        to.call("tools/list", json!({}))
            .await
            .assert_error(404, -32600, None);
    }
    c.delete(&[]).await.assert_error(404, -32600, None);
}

/// The store bound the replicas are started with in the outage test.
const STORE_TIMEOUT: Duration = Duration::from_millis(1000);

/// How late past a bound an answer may come (scheduling on a loaded machine).
const MARGIN: Duration = Duration::from_millis(1500);

/// PostgreSQL stopped: a request of a session, and a resumption of its stream, on a
/// replica that holds it and on one that does not, is a 503 with the retryable -32603
/// within the store timeout (never a hang); PostgreSQL back, the session is served
/// again, within 5 s, on every replica.
#[tokio::test]
async fn a_database_outage_is_retryable_for_legacy_sessions_and_they_recover() {
    let timeout = STORE_TIMEOUT.as_millis().to_string();
    let Some((pg, replicas, _lb)) = cluster(&["--store-timeout", &timeout]).await else {
        return;
    };
    let [ra, rb] = [0, 1].map(|i| Http::at(&replicas.url(i)));
    let mut a = Legacy::open(&ra, VERSION).await;
    let mut b = a.at(&rb);
    pg.stop().await;
    for to in [&mut a, &mut b] {
        let at = Instant::now();
        let r = to.call("tools/list", json!({})).await;
        let took = at.elapsed();
        assert!(
            took < STORE_TIMEOUT * 2 + MARGIN,
            "answered after {took:?}: {}",
            r.body
        );
        assert_eq!(r.status, 503, "{}", r.body);
        let error = &r.response()["error"];
        assert_eq!(error["code"], -32603, "{}", r.body);
        assert_eq!(error["data"]["retryable"], true, "{}", r.body);
        // A resumption too: the store holds the stream.
        let r = to.get("", &[("Last-Event-ID", "0-0")]).await.reply().await;
        assert_eq!(r.status, 503, "{}", r.body);
        assert_eq!(r.response()["error"]["code"], -32603, "{}", r.body);
        assert_eq!(
            r.response()["error"]["data"]["retryable"],
            true,
            "{}",
            r.body
        );
    }
    pg.start_again().await.expect("PostgreSQL starts again");
    let back = Instant::now();
    for to in [&mut a, &mut b] {
        let deadline = Deadline::new("the session is served again");
        loop {
            let r = to.call("tools/list", json!({})).await;
            if r.status == 200 && r.response().get("result").is_some() {
                break;
            }
            deadline.tick(&r.body).await;
        }
    }
    assert!(
        back.elapsed() < Duration::from_secs(5) + MARGIN,
        "served again {:?} after PostgreSQL's return",
        back.elapsed()
    );
}

/// The PostgreSQL store keeps the session stores' contract; a second store on the same
/// database reads the records the first keeps; and with PostgreSQL stopped every call is
/// a fault within the store's bounds, never a session that ended.
#[tokio::test]
async fn the_postgres_session_store_keeps_the_contract() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let bound = Duration::from_millis(500);
    let connect = || {
        presa::tasks::PgStore::builder(pg.url())
            .schema("sessions_contract")
            .acquire_timeout(bound)
            .statement_timeout(bound)
            .connect()
    };
    let store = connect().await.expect("connects");
    presa::session::contract::run_all(&store).await;
    // A session ended, and one found expired by a touch, keep no stream (nor, with
    // them, any event) in the database: neither waits for the pruning.
    let mut db = pg.connection().await;
    let left: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM sessions_contract.presa_session_streams
         WHERE session IN ('contract-events-end', 'contract-events-idle')",
    )
    .fetch_one(&mut db)
    .await
    .expect("counted");
    assert_eq!(left, 0, "the streams of ended and expired sessions");
    drop(db);
    let other = connect().await.expect("connects");
    let record = other
        .touch("contract-recent", 50_002, 1_000)
        .await
        .expect("the store answers")
        .expect("the record the first store keeps");
    assert_eq!(record.last_used_ms, 50_002);

    pg.stop().await;
    let at = Instant::now();
    let got = store.touch("contract-recent", 50_003, 1_000).await;
    assert!(got.is_err(), "a fault, not a session that ended: {got:?}");
    assert!(store.end("contract-recent").await.is_err());
    assert!(
        at.elapsed() < bound * 4 + Duration::from_secs(2) + MARGIN,
        "faults within the bounds: {:?}",
        at.elapsed()
    );
}

/// A database whose session records an earlier build kept (the sessions' first version:
/// records, no event buffers) gains the buffers at the next connect, and the records it
/// held are served with them.
#[tokio::test]
async fn session_records_of_an_earlier_build_gain_event_buffers() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let store = presa::tasks::PgStore::connect(&pg.url())
        .await
        .expect("connects");
    let kept = presa::session::SessionRecord::new(
        "earlier",
        None,
        VERSION,
        serde_json::Map::new(),
        json!({"name": "c", "version": "1"}),
        now_ms(),
    );
    store.create(&kept).await.expect("kept");
    store.close().await;
    let mut conn = pg.connection().await;
    for statement in [
        "DROP TABLE presa_session_events",
        "DROP TABLE presa_session_streams",
        "ALTER TABLE presa_sessions DROP COLUMN copies",
        "UPDATE presa_migrations SET version = 1 WHERE component = 'sessions'",
    ] {
        sqlx::query(statement)
            .execute(&mut conn)
            .await
            .expect("undone");
    }
    let store = presa::tasks::PgStore::connect(&pg.url())
        .await
        .expect("connects and migrates");
    let version: i64 =
        sqlx::query_scalar("SELECT version FROM presa_migrations WHERE component = 'sessions'")
            .fetch_one(&mut conn)
            .await
            .expect("read");
    assert_eq!(version, 2);
    assert_eq!(store.claim_copy("earlier").await, Ok(Some(1)));
    let event = presa::session::StreamEvent::new(0, 1, "{}");
    let bounds = presa::session::EventBounds::new(10, 1 << 20);
    assert_eq!(
        store.append_event("earlier", 0, &event, bounds).await,
        Ok(true)
    );
    let read = store
        .read_stream("earlier", 0, 0)
        .await
        .expect("the store answers")
        .expect("the stream");
    assert_eq!(read.events, [event]);
}

/// The client's answer to an elicitation replica A asked, POSTed to replica B, reaches
/// A (through the fan-out), and the tool completes on A's stream; a
/// `notifications/cancelled` POSTed to C cancels a request running on A.
#[tokio::test]
async fn answers_and_cancellations_reach_the_replica_that_waits_for_them() {
    let Some((_pg, replicas, _lb)) = cluster(&[]).await else {
        return;
    };
    let [ra, rb, rc] = [0, 1, 2].map(|i| Http::at(&replicas.url(i)));
    let a = Legacy::open_with(&ra, VERSION, json!({"elicitation": {}})).await;
    let (b, c) = (a.at(&rb), a.at(&rc));

    let ask = request(
        1,
        "tools/call",
        json!({"name": "test_elicitation", "arguments": {"message": "Who are you?"}}),
    );
    let mut stream = a.open_post(&ask, &[]).await;
    assert!(stream.is_sse());
    let asked = stream.next(PATIENCE).await.msg("the elicitation request");
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    b.answer(
        "elicitation/create",
        &asked["id"],
        json!({"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}),
    )
    .await
    .assert_accepted();
    let done = stream.next(PATIENCE).await.msg("the tool's result");
    assert_eq!(
        done["result"]["content"][0]["text"], "User provided: username=ada, email=ada@example.com",
        "{done}"
    );

    // A request running on A, cancelled through C: its POST ends with 204 at once.
    let slow = request(
        2,
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 60, "label": "never"}}),
    );
    let running = tokio::spawn({
        let a = a.clone();
        async move { a.post(&slow, &[]).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let at = Instant::now();
    c.notify(
        "notifications/cancelled",
        json!({"requestId": 2, "reason": "changed my mind"}),
    )
    .await
    .assert_accepted();
    let reply = tokio::time::timeout(PATIENCE, running)
        .await
        .expect("the cancelled request ends")
        .expect("no panic");
    assert_eq!(reply.status, 204, "{}", reply.body);
    assert!(at.elapsed() < Duration::from_secs(5), "{:?}", at.elapsed());
}

// ---- Streams resumed on another replica ----

/// A server like [`replica`], also sharing `fanout`, with `steps`: a tool that reports
/// progress twice, waits for `gate`, reports progress again and answers "done".
fn streaming_replica<S: SessionStore + Clone>(
    store: &S,
    fanout: &MemoryFanout,
    gate: &Arc<Notify>,
) -> Server {
    let gate = Arc::clone(gate);
    let steps = Tool::new("steps")
        .description("Reports progress twice, waits for the test, then once more")
        .handler(move |call: ToolCall| {
            let gate = Arc::clone(&gate);
            async move {
                call.ctx.progress(1.0, Some(3.0), Some("one"));
                call.ctx.progress(2.0, Some(3.0), Some("two"));
                gate.notified().await;
                call.ctx.progress(3.0, Some(3.0), Some("three"));
                "done"
            }
        });
    builder("legacy-replica")
        .tool(plain_tool("plain"))
        .tool(steps)
        .resource(plain_resource("test://doc"))
        .resource_notifications(true)
        .session_store(store.clone())
        .fanout(fanout.clone())
        .build()
        .expect("builds")
}

/// Two [`streaming_replica`]s on one store and fan-out, and a session opened on the first
/// (`a`) and addressed to the second (`b`).
struct Pair {
    ha: Harness,
    hb: Harness,
    a: Legacy,
    b: Legacy,
    id: String,
}

impl Pair {
    async fn start<S: SessionStore + Clone>(
        store: &S,
        fanout: &MemoryFanout,
        gate: &Arc<Notify>,
    ) -> Pair {
        let ha = Harness::start(streaming_replica(store, fanout, gate)).await;
        let hb = Harness::start(streaming_replica(store, fanout, gate)).await;
        let a = Legacy::open(&ha.http(), VERSION).await;
        let b = a.at(&hb.http());
        let id = a.session.clone().expect("a session");
        Pair { ha, hb, a, b, id }
    }
}

/// The event ids of an SSE body, in order.
fn ids_in(raw: &str) -> Vec<String> {
    raw.lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .map(str::to_owned)
        .collect()
}

/// The `data:` of the first event of an SSE body.
#[track_caller]
fn first_data(raw: &str) -> String {
    raw.lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or_else(|| panic!("an event with data: {raw:?}"))
        .to_owned()
}

/// The stream number of an event id `<stream>-<seq>`.
#[track_caller]
fn stream_of(id: &str) -> u64 {
    id.split_once('-')
        .and_then(|(stream, _)| stream.parse().ok())
        .unwrap_or_else(|| panic!("an event id <stream>-<seq>: {id}"))
}

/// Waits until `store` holds `seq` as the last event written of stream `stream` of
/// session `id` (the replica writes its events to the store as it goes).
async fn until_stored(store: &dyn SessionStore, id: &str, stream: u64, seq: u64) {
    presa_tests::wait::until_async("the events reach the store", || async {
        let read = store.read_stream(id, stream, 0).await.ok()??;
        (read.last_seq >= seq).then_some(())
    })
    .await;
}

/// Publishes an update of `test://doc` on `server`, and waits until the session's
/// standalone stream in `store` has one more event (a feed coalesces updates it has not
/// sent yet, so they go one at a time).
async fn update(server: &Server, store: &dyn SessionStore, id: &str) {
    let last = store
        .read_stream(id, 0, 0)
        .await
        .ok()
        .flatten()
        .map_or(0, |r| r.last_seq);
    server.notify_resource_updated("test://doc");
    until_stored(store, id, 0, last + 1).await;
}

/// (a) A GET stream opened on A hears an update; the connection drops; two more updates
/// come while no connection is open; a GET with `Last-Event-ID` on B replays exactly
/// those two, byte for byte with their ids, then goes on with B's own events (the
/// stream's numbering goes on where the store says); A no longer writes the stream once
/// B took it over, so an update published on A reaches the client once, through B.
#[tokio::test]
async fn a_get_stream_dropped_on_one_server_resumes_on_another() {
    let (store, fanout, gate) = (
        MemorySessionStore::default(),
        MemoryFanout::new(),
        Arc::new(Notify::new()),
    );
    let one = streaming_replica(&store, &fanout, &gate);
    let two = streaming_replica(&store, &fanout, &gate);
    let (ha, hb) = (
        Harness::start(one.clone()).await,
        Harness::start(two.clone()).await,
    );
    let mut a = Legacy::open(&ha.http(), VERSION).await;
    let b = a.at(&hb.http());
    let id = a.session.clone().expect("a session");
    let r = a
        .call("resources/subscribe", json!({"uri": "test://doc"}))
        .await;
    assert_eq!(r.response()["result"], json!({}), "{}", r.body);

    let mut get = a.get("", &[]).await;
    assert_eq!(get.status, 200);
    one.notify_resource_updated("test://doc");
    get.next(PATIENCE).await.msg("the first update");
    let last = get.last_event_id().expect("an event id");
    assert_eq!(last, "0-1");
    let data = first_data(get.raw().trim_start_matches("id: 0-0\ndata:\n\n"));
    drop(get);

    update(&one, &store, &id).await;
    update(&one, &store, &id).await;
    let mut resumed = b.get("", &[("Last-Event-ID", &last)]).await;
    assert_eq!(resumed.status, 200);
    resumed.next(PATIENCE).await.msg("the second update");
    resumed.next(PATIENCE).await.msg("the third update");
    assert_eq!(
        resumed.raw(),
        format!("id: 0-2\ndata: {data}\n\nid: 0-3\ndata: {data}\n\n"),
        "exactly the missed events, in order, with their ids"
    );

    // New events: B's own, and one published on A (heard by B through the fan-out,
    // written by B alone).
    two.notify_resource_updated("test://doc");
    resumed.next(PATIENCE).await.msg("an update published on B");
    one.notify_resource_updated("test://doc");
    resumed.next(PATIENCE).await.msg("an update published on A");
    assert_eq!(ids_in(resumed.raw()), ["0-2", "0-3", "0-4", "0-5"]);
    assert!(
        matches!(
            resumed.next(Duration::from_millis(300)).await,
            Next::Timeout
        ),
        "nothing twice: {:?}",
        resumed.raw()
    );
}

/// (b) A request answered as a stream on A reports progress twice; the client drops the
/// connection after the first event and resumes on B with its id: B replays the second
/// from the store, then follows the stream live (A writes it) to the third and the
/// answer, and the stream ends. A request stream B numbers is never one A numbers.
#[tokio::test]
async fn a_request_stream_dropped_on_one_server_resumes_on_another() {
    let (store, fanout, gate) = (
        MemorySessionStore::default(),
        MemoryFanout::new(),
        Arc::new(Notify::new()),
    );
    let Pair {
        ha: _ha,
        hb: _hb,
        a,
        b,
        id,
    } = Pair::start(&store, &fanout, &gate).await;

    let call = request(
        7,
        "tools/call",
        json!({"name": "steps", "arguments": {}, "_meta": {"progressToken": "p"}}),
    );
    let mut s = a.open_post(&call, &[]).await;
    assert!(s.is_sse());
    let first = s.next(PATIENCE).await.msg("the first progress");
    assert_eq!(first["params"]["progress"], 1.0, "{first}");
    let last = s.last_event_id().expect("an event id");
    let stream = stream_of(&last);
    assert_eq!(last, format!("{stream}-1"));
    drop(s);
    until_stored(&store, &id, stream, 2).await;

    let mut resumed = b.get("tools/call", &[("Last-Event-ID", &last)]).await;
    assert_eq!(resumed.status, 200);
    let second = resumed.next(PATIENCE).await.msg("the second progress");
    assert_eq!(second["params"]["progress"], 2.0, "{second}");
    assert!(
        resumed
            .raw()
            .starts_with(&format!("id: {stream}-2\ndata: {{")),
        "{:?}",
        resumed.raw()
    );
    gate.notify_one();
    let third = resumed.next(PATIENCE).await.msg("the third progress");
    assert_eq!(third["params"]["progress"], 3.0, "{third}");
    let done = resumed.next(PATIENCE).await.msg("the answer");
    assert_eq!(done["id"], 7, "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "done", "{done}");
    assert!(matches!(resumed.next(PATIENCE).await, Next::End));
    assert_eq!(
        ids_in(resumed.raw()),
        [2, 3, 4].map(|n| format!("{stream}-{n}"))
    );

    // B's own request stream is numbered in B's range.
    let mut on_b = b
        .open_post(
            &request(
                8,
                "tools/call",
                json!({"name": "steps", "arguments": {}, "_meta": {"progressToken": "q"}}),
            ),
            &[],
        )
        .await;
    on_b.next(PATIENCE).await.msg("progress on B");
    let b_stream = stream_of(&on_b.last_event_id().expect("an id"));
    assert!(
        b_stream >= 1_000_000_000_000 && b_stream != stream,
        "{b_stream} vs {stream}"
    );
    gate.notify_one();
    on_b.reply().await;
}

/// A resumption on B replaces the connection that read the stream on A, which ends: the
/// GET stream's, and a request stream's (A still writes it; B reads it to its answer).
#[tokio::test]
async fn a_resumption_on_one_server_ends_the_connection_on_another() {
    let (store, fanout, gate) = (
        MemorySessionStore::default(),
        MemoryFanout::new(),
        Arc::new(Notify::new()),
    );
    let Pair {
        ha: _ha,
        hb: _hb,
        a,
        b,
        id: _,
    } = Pair::start(&store, &fanout, &gate).await;

    let mut get = a.get("", &[]).await;
    assert_eq!(get.status, 200);
    let mut taken = b.get("", &[("Last-Event-ID", "0-0")]).await;
    assert_eq!(taken.status, 200);
    assert!(
        matches!(get.next(PATIENCE).await, Next::End),
        "A's GET stream ends: {:?}",
        get.raw()
    );

    let call = request(
        3,
        "tools/call",
        json!({"name": "steps", "arguments": {}, "_meta": {"progressToken": 3}}),
    );
    let mut s = a.open_post(&call, &[]).await;
    s.next(PATIENCE).await.msg("the first progress");
    let last = s.last_event_id().expect("an event id");
    let resumed = b.get("tools/call", &[("Last-Event-ID", &last)]).await;
    assert_eq!(resumed.status, 200);
    let deadline = Deadline::new("A's request stream ends");
    loop {
        match s.next(Duration::from_millis(200)).await {
            Next::End => break,
            // The second progress may reach A's connection before it is replaced.
            Next::Msg(m) if m["params"]["progress"] == 2.0 => {}
            other => deadline.tick(format!("{other:?}")).await,
        }
    }
    gate.notify_one();
    let (messages, raw) = to_end(resumed).await;
    assert_eq!(messages.last().expect("the answer")["id"], 3, "{raw}");
    assert!(matches!(
        taken.next(Duration::from_millis(100)).await,
        Next::Timeout
    ));
}

/// A plain GET on B while A holds the GET stream takes the stream over: A's connection
/// ends, B's begins with a priming event at the store's newest id, and goes on from it.
#[tokio::test]
async fn a_plain_get_on_another_server_takes_the_stream_over() {
    let (store, fanout, gate) = (
        MemorySessionStore::default(),
        MemoryFanout::new(),
        Arc::new(Notify::new()),
    );
    let one = streaming_replica(&store, &fanout, &gate);
    let two = streaming_replica(&store, &fanout, &gate);
    let ha = Harness::start(one.clone()).await;
    let hb = Harness::start(two.clone()).await;
    let mut a = Legacy::open(&ha.http(), VERSION).await;
    let b = a.at(&hb.http());
    let id = a.session.clone().expect("a session");
    a.call("resources/subscribe", json!({"uri": "test://doc"}))
        .await;
    let mut get = a.get("", &[]).await;
    update(&one, &store, &id).await;
    get.next(PATIENCE).await.msg("the update");
    assert_eq!(get.last_event_id().as_deref(), Some("0-1"));

    let mut taken = b.get("", &[]).await;
    assert_eq!(taken.status, 200);
    assert!(matches!(get.next(PATIENCE).await, Next::End), "A's ends");
    update(&two, &store, &id).await;
    taken.next(PATIENCE).await.msg("an update on B");
    assert!(
        taken
            .raw()
            .starts_with("id: 0-1\ndata:\n\nid: 0-2\ndata: {"),
        "{:?}",
        taken.raw()
    );
}

/// (d) With a buffer of `N` events, a stream resumed on another server replays all `N`
/// when `N` were written, and the newest `N` when one more was: the bound holds in the
/// store as in one server's buffer.
#[tokio::test]
async fn the_shared_buffer_holds_its_bound_at_and_past_it() {
    const N: u64 = 3;
    for (written, want) in [(N, 1..=N), (N + 1, 2..=N + 1)] {
        let (store, fanout, gate) = (
            MemorySessionStore::default(),
            MemoryFanout::new(),
            Arc::new(Notify::new()),
        );
        let config = HttpConfig::default().session_event_buffer(N as usize, 1 << 20);
        let one = streaming_replica(&store, &fanout, &gate);
        let ha = Harness::start_with(one.clone(), config.clone()).await;
        let hb = Harness::start_with(streaming_replica(&store, &fanout, &gate), config).await;
        let mut a = Legacy::open(&ha.http(), VERSION).await;
        let b = a.at(&hb.http());
        let id = a.session.clone().expect("a session");
        a.call("resources/subscribe", json!({"uri": "test://doc"}))
            .await;
        for _ in 0..written {
            update(&one, &store, &id).await;
        }
        let mut resumed = b.get("", &[("Last-Event-ID", "0-0")]).await;
        let want: Vec<String> = want.map(|n| format!("0-{n}")).collect();
        for _ in &want {
            resumed.next(PATIENCE).await.msg("a held event");
        }
        assert!(matches!(
            resumed.next(Duration::from_millis(300)).await,
            Next::Timeout
        ));
        assert_eq!(ids_in(resumed.raw()), want, "{written} written");
    }
}

/// (e) An id that is not an event id, one of a stream no server wrote (in the range of
/// another copy's numbers, too), and one past every stream: 400 on every server.
#[tokio::test]
async fn an_unknown_or_malformed_event_id_is_400_on_every_server() {
    let (store, fanout, gate) = (
        MemorySessionStore::default(),
        MemoryFanout::new(),
        Arc::new(Notify::new()),
    );
    let Pair {
        ha: _ha,
        hb: _hb,
        a,
        b,
        id: _,
    } = Pair::start(&store, &fanout, &gate).await;
    for to in [&a, &b] {
        for bad in ["junk", "1-x", "99-1", "1000000000001-1", "3000000000007-2"] {
            to.get("", &[("Last-Event-ID", bad)])
                .await
                .reply()
                .await
                .assert_error(400, -32600, None);
        }
    }
}

/// Last-Event-IDs at and just past the largest stream number and `seq` a store keeps
/// (PostgreSQL's `bigint`): each is 400 (none names a stream the session holds), never
/// a fault of the store.
async fn assert_ids_past_the_store_are_400(to: &Legacy) {
    let at = i64::MAX as u64;
    for last in [
        format!("{at}-1"),
        format!("{}-1", at + 1),
        format!("1-{at}"),
        format!("1-{}", at + 1),
    ] {
        to.get("", &[("Last-Event-ID", &last)])
            .await
            .reply()
            .await
            .assert_error(400, -32600, None);
    }
}

/// (e) Ids at and past the largest number a store keeps: 400 on every server.
#[tokio::test]
async fn event_ids_past_the_store_s_numbers_are_400_on_every_server() {
    let (store, fanout, gate) = (
        MemorySessionStore::default(),
        MemoryFanout::new(),
        Arc::new(Notify::new()),
    );
    let Pair {
        ha: _ha,
        hb: _hb,
        a,
        b,
        id: _,
    } = Pair::start(&store, &fanout, &gate).await;
    for to in [&a, &b] {
        assert_ids_past_the_store_are_400(to).await;
    }
}

/// A buffer bound past any queue's room (`usize::MAX` events and bytes) still serves
/// sessions on both servers: one is opened, copied to the other, and its events are
/// written through to the store and resumed there.
#[tokio::test]
async fn a_huge_buffer_bound_still_serves_sessions() {
    let (store, fanout, gate) = (
        MemorySessionStore::default(),
        MemoryFanout::new(),
        Arc::new(Notify::new()),
    );
    let config = HttpConfig::default().session_event_buffer(usize::MAX, usize::MAX);
    let one = streaming_replica(&store, &fanout, &gate);
    let ha = Harness::start_with(one.clone(), config.clone()).await;
    let hb = Harness::start_with(streaming_replica(&store, &fanout, &gate), config).await;
    let mut a = Legacy::open(&ha.http(), VERSION).await;
    let mut b = a.at(&hb.http());
    let id = a.session.clone().expect("a session");
    let r = b.call("tools/list", json!({})).await;
    assert!(result(&r)["tools"].is_array(), "{}", r.body);
    let r = a
        .call("resources/subscribe", json!({"uri": "test://doc"}))
        .await;
    assert_eq!(r.response()["result"], json!({}), "{}", r.body);
    update(&one, &store, &id).await;
    let mut resumed = b.get("", &[("Last-Event-ID", "0-0")]).await;
    assert_eq!(resumed.status, 200);
    resumed.next(PATIENCE).await.msg("the update");
    assert_eq!(ids_in(resumed.raw()), ["0-1"]);
}

/// A [`MemorySessionStore`] whose writes of request streams' events from the second on
/// wait until the test lets them through: a replica's queue to the store lagging its
/// live connection.
#[derive(Clone)]
struct Lagging {
    inner: MemorySessionStore,
    open: Arc<tokio::sync::watch::Sender<bool>>,
}

impl Lagging {
    fn new() -> Lagging {
        Lagging {
            inner: MemorySessionStore::default(),
            open: Arc::new(tokio::sync::watch::Sender::new(false)),
        }
    }
}

impl SessionStore for Lagging {
    fn create<'a>(
        &'a self,
        record: &'a presa::session::SessionRecord,
    ) -> presa::session::SessionFuture<'a, ()> {
        self.inner.create(record)
    }
    fn touch<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
        idle_ms: u64,
    ) -> presa::session::SessionFuture<'a, Option<presa::session::SessionRecord>> {
        self.inner.touch(id, now_ms, idle_ms)
    }
    fn load<'a>(
        &'a self,
        id: &'a str,
    ) -> presa::session::SessionFuture<'a, Option<presa::session::SessionRecord>> {
        self.inner.load(id)
    }
    fn set_log_level<'a>(
        &'a self,
        id: &'a str,
        level: LogLevel,
    ) -> presa::session::SessionFuture<'a, bool> {
        self.inner.set_log_level(id, level)
    }
    fn subscribe<'a>(
        &'a self,
        id: &'a str,
        uri: &'a str,
        on: bool,
    ) -> presa::session::SessionFuture<'a, bool> {
        self.inner.subscribe(id, uri, on)
    }
    fn end<'a>(&'a self, id: &'a str) -> presa::session::SessionFuture<'a, bool> {
        self.inner.end(id)
    }
    fn remove_stale(&self, before_ms: u64) -> presa::session::SessionFuture<'_, usize> {
        self.inner.remove_stale(before_ms)
    }
    fn claim_copy<'a>(&'a self, id: &'a str) -> presa::session::SessionFuture<'a, Option<u64>> {
        self.inner.claim_copy(id)
    }
    fn append_event<'a>(
        &'a self,
        id: &'a str,
        writer: u64,
        event: &'a presa::session::StreamEvent,
        bounds: presa::session::EventBounds,
    ) -> presa::session::SessionFuture<'a, bool> {
        Box::pin(async move {
            if event.stream != 0 && event.seq >= 2 {
                let mut open = self.open.subscribe();
                let _ = open.wait_for(|open| *open).await;
            }
            self.inner.append_event(id, writer, event, bounds).await
        })
    }
    fn end_stream<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        writer: u64,
    ) -> presa::session::SessionFuture<'a, bool> {
        self.inner.end_stream(id, stream, writer)
    }
    fn take_stream<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        writer: u64,
    ) -> presa::session::SessionFuture<'a, Option<u64>> {
        self.inner.take_stream(id, stream, writer)
    }
    fn read_stream<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        after: u64,
    ) -> presa::session::SessionFuture<'a, Option<presa::session::StreamRead>> {
        self.inner.read_stream(id, stream, after)
    }
}

/// A client that read a request stream's second event on A resumes on B before A wrote
/// that event to the store: B follows the stream after it all the same, so the client
/// gets what follows and never that event again.
#[tokio::test]
async fn a_resumption_ahead_of_the_store_replays_nothing_the_client_has() {
    let (store, fanout, gate) = (Lagging::new(), MemoryFanout::new(), Arc::new(Notify::new()));
    let Pair {
        ha: _ha,
        hb: _hb,
        a,
        b,
        id,
    } = Pair::start(&store, &fanout, &gate).await;
    let call = request(
        7,
        "tools/call",
        json!({"name": "steps", "arguments": {}, "_meta": {"progressToken": "p"}}),
    );
    let mut s = a.open_post(&call, &[]).await;
    assert!(s.is_sse());
    s.next(PATIENCE).await.msg("the first progress");
    let second = s.next(PATIENCE).await.msg("the second progress");
    assert_eq!(second["params"]["progress"], 2.0, "{second}");
    let last = s.last_event_id().expect("an event id");
    let stream = stream_of(&last);
    assert_eq!(last, format!("{stream}-2"));
    drop(s);
    until_stored(&store, &id, stream, 1).await;
    let held = store.read_stream(&id, stream, 0).await.ok().flatten();
    assert_eq!(held.map(|r| r.last_seq), Some(1), "the store lags");

    let mut resumed = b.get("tools/call", &[("Last-Event-ID", &last)]).await;
    assert_eq!(resumed.status, 200);
    store.open.send_replace(true);
    until_stored(&store, &id, stream, 2).await;
    gate.notify_one();
    let third = resumed.next(PATIENCE).await.msg("the third progress");
    assert_eq!(third["params"]["progress"], 3.0, "{third}");
    let done = resumed.next(PATIENCE).await.msg("the answer");
    assert_eq!(done["id"], 7, "{done}");
    assert!(matches!(resumed.next(PATIENCE).await, Next::End));
    assert_eq!(
        ids_in(resumed.raw()),
        [3, 4].map(|n| format!("{stream}-{n}")),
        "nothing the client read on A"
    );
}

/// The messages of a stream to its end, and its raw text.
async fn to_end(mut stream: presa_tests::http::Stream) -> (Vec<Value>, String) {
    let mut messages = Vec::new();
    loop {
        match stream.next(PATIENCE).await {
            Next::Msg(m) => messages.push(m),
            Next::End => break,
            Next::Timeout => panic!("the stream ends: {:?}", stream.raw()),
        }
    }
    (messages, stream.raw().to_owned())
}

/// Starts `slow_progress` through `on` (its steps far enough apart that the client drops
/// the connection before the next one is sent), reads its first progress and drops the
/// connection: the id of that event.
async fn begin_slow(on: &Legacy, id: i64) -> String {
    let call = request(
        id,
        "tools/call",
        json!({"name": "slow_progress", "arguments": {"steps": 3, "interval_ms": 400},
               "_meta": {"progressToken": id}}),
    );
    let mut s = on.open_post(&call, &[]).await;
    assert!(s.is_sse());
    let first = s.next(PATIENCE).await.msg("the first progress");
    assert_eq!(first["params"]["progress"], 1.0, "{first}");
    let last = s.last_event_id().expect("an event id");
    assert!(last.ends_with("-1"), "{last}");
    last
}

/// What a request stream resumed after `last` gives: the two progress left and the
/// answer, ids following `last`'s, and the end.
#[track_caller]
fn assert_rest(messages: &[Value], raw: &str, last: &str, id: i64) {
    let stream = stream_of(last);
    let progress: Vec<f64> = messages
        .iter()
        .filter_map(|m| m["params"].get("progress").and_then(Value::as_f64))
        .collect();
    assert_eq!(progress, [2.0, 3.0], "{raw}");
    let answer = messages.last().expect("messages");
    assert_eq!(answer["id"], id, "{raw}");
    assert_eq!(
        answer["result"]["content"][0]["text"], "Completed 3 steps",
        "{raw}"
    );
    assert_eq!(
        ids_in(raw),
        [2, 3, 4].map(|n| format!("{stream}-{n}")),
        "{raw}"
    );
}

/// Publishes an update of `test://watched-resource` through `on`.
async fn trigger(on: &mut Legacy) {
    let r = on
        .call(
            "tools/call",
            json!({"name": "test_trigger_resource_update", "arguments": {}}),
        )
        .await;
    assert!(r.response().get("result").is_some(), "{}", r.body);
}

/// (c) Three fixture replicas on PostgreSQL behind HAProxy: a request's stream begun on
/// A, dropped after its first progress and resumed on B, gives the rest of the stream
/// (read live from the store as A writes it) and the answer; so does one begun and
/// resumed through the balancer, wherever each lands. A GET stream dropped on A resumes
/// on C with the update it missed, byte for byte, then goes on with C's. An id that is
/// not an event id, or names no stream, is 400 on every replica.
#[tokio::test]
async fn streams_resume_on_any_replica_behind_the_balancer() {
    let Some((pg, replicas, lb)) = cluster(&[]).await else {
        return;
    };
    let [ra, rb, rc] = [0, 1, 2].map(|i| Http::at(&replicas.url(i)));
    let a = Legacy::open(&ra, VERSION).await;
    let (mut b, mut c) = (a.at(&rb), a.at(&rc));
    let through = a.at(&Http::at(&lb.url()));
    let id = a.session.clone().expect("a session");

    let last = begin_slow(&a, 1).await;
    let resumed = b.get("tools/call", &[("Last-Event-ID", &last)]).await;
    assert_eq!(resumed.status, 200);
    let (messages, raw) = to_end(resumed).await;
    assert_rest(&messages, &raw, &last, 1);

    let last = begin_slow(&through, 2).await;
    let resumed = through.get("tools/call", &[("Last-Event-ID", &last)]).await;
    assert_eq!(resumed.status, 200);
    let (messages, raw) = to_end(resumed).await;
    assert_rest(&messages, &raw, &last, 2);

    // The GET stream: open on A, which hears an update (the fan-out's listener may start
    // after the stream: B publishes until A hears).
    let r = c
        .call(
            "resources/subscribe",
            json!({"uri": "test://watched-resource"}),
        )
        .await;
    assert_eq!(result(&r), json!({}));
    let mut get = a.get("", &[]).await;
    assert_eq!(get.status, 200);
    let deadline = Deadline::new("A's stream hears B's resource update");
    loop {
        trigger(&mut b).await;
        match get.next(Duration::from_millis(500)).await {
            Next::Msg(m) => {
                assert_eq!(m["method"], "notifications/resources/updated", "{m}");
                break;
            }
            other => deadline.tick(format!("{other:?}")).await,
        }
    }
    let heard = get.last_event_id().expect("an event id");
    let seq: u64 = heard
        .strip_prefix("0-")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("an id of the standalone stream: {heard}"));
    let data = first_data(
        get.raw()
            .split(&format!("id: {heard}\n"))
            .nth(1)
            .unwrap_or(""),
    );
    drop(get);
    // One more while no connection is open: A writes it to the store.
    let store = presa::tasks::PgStore::builder(pg.url())
        .connect()
        .await
        .expect("the fixture's store");
    trigger(&mut b).await;
    until_stored(&store, &id, 0, seq + 1).await;
    let mut resumed = c.get("", &[("Last-Event-ID", &heard)]).await;
    assert_eq!(resumed.status, 200);
    resumed.next(PATIENCE).await.msg("the missed update");
    assert_eq!(
        resumed.raw(),
        format!("id: 0-{}\ndata: {data}\n\n", seq + 1),
        "the missed event, with its id"
    );
    trigger(&mut b).await;
    resumed.next(PATIENCE).await.msg("an update after it");
    assert_eq!(
        ids_in(resumed.raw()),
        [seq + 1, seq + 2].map(|n| format!("0-{n}"))
    );

    for to in [&a, &b, &c, &through] {
        for bad in ["junk", "1-x", "99-1", "5000000000000-1"] {
            to.get("", &[("Last-Event-ID", bad)])
                .await
                .reply()
                .await
                .assert_error(400, -32600, None);
        }
    }
}
