//! Legacy sessions (clients that open with `initialize`) served by several replicas that
//! share a session store: a session made on one replica is served by every other, as
//! the same session (revision, capabilities, log level, subscriptions), wherever each
//! request lands; a DELETE on any replica ends it on all; a fault of the store is a
//! retryable -32603 and serving comes back with the store.
//!
//! Two servers in this process sharing a `MemorySessionStore` check the rules quickly;
//! three fixture replicas sharing a throwaway PostgreSQL behind a real HAProxy check them
//! as deployed (skipped, saying so, where PostgreSQL or HAProxy is missing).

use crate::subscriptions::{builder, plain_resource, plain_tool};
use presa::session::{MemorySessionStore, SessionStore};
use presa::{HttpConfig, LogLevel, Server};
use presa_tests::haproxy::Haproxy;
use presa_tests::http::{Harness, Http};
use presa_tests::legacy::{Legacy, request};
use presa_tests::postgres::Postgres;
use presa_tests::replicas::Replicas;
use presa_tests::sse::Next;
use presa_tests::wait::{Deadline, PATIENCE};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

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

/// PostgreSQL stopped: a request of a session, on a replica that holds it and on one
/// that does not, is a 503 with the retryable -32603 within the store timeout (never a
/// hang); PostgreSQL back, the session is served again, within 5 s, on every replica.
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
