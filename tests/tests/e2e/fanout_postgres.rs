//! The event fan-out over PostgreSQL (`PgStore::fanout`), on a throwaway server each
//! test starts (skipped, saying so, where PostgreSQL is not installed): one replica's
//! messages heard by another in the order sent, at and past the notification payload's
//! bound (past it through `presa_events`); two servers over HTTP sharing one database,
//! where list changes and resource updates published on B reach the listen streams and
//! legacy sessions on A that asked for them, and no others; and a database outage, after
//! which A's streams hear every list change (the gap) and then B's events again.

use crate::subscriptions::{builder, method, plain_tool};
use presa::Server;
use presa::subscriptions::{Delivery, Fanout};
use presa::tasks::{PgFanout, PgStore};
use presa_tests::client::{Client, Kind};
use presa_tests::http::Harness;
use presa_tests::legacy::Legacy;
use presa_tests::postgres::Postgres;
use presa_tests::sse::Next;
use presa_tests::wait::{Deadline, PATIENCE};
use serde_json::{Value, json};
use tokio::sync::broadcast;

/// Waits until the fan-outs' listener connections are exactly `n`.
async fn listening(pg: &Postgres, n: usize) {
    let deadline = Deadline::new("the fan-outs listen");
    loop {
        let pids = pg.pids_of("presa-fanout").await;
        if pids.len() == n {
            return;
        }
        deadline.tick(format!("{pids:?}")).await;
    }
}

/// The number of rows of `presa_events`.
async fn stored(pg: &Postgres) -> i64 {
    let mut conn = pg.connection().await;
    sqlx::query_scalar("SELECT COUNT(*) FROM presa_events")
        .fetch_one(&mut conn)
        .await
        .expect("counted")
}

/// The next message `receiver` gets, within [`PATIENCE`] (gaps skipped).
async fn message(receiver: &mut broadcast::Receiver<Delivery>) -> String {
    loop {
        let got = tokio::time::timeout(PATIENCE, receiver.recv())
            .await
            .expect("a message within PATIENCE")
            .expect("the fan-out is open");
        match got {
            Delivery::Message(m) => return m,
            Delivery::Gap => {}
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// Two stores on one database, A's fan-out listening and B's sending: what B sends,
/// A's `received` gets. The stores and A's fan-out are held, so neither stops.
struct Pair {
    _stores: (PgStore, PgStore),
    _on_a: PgFanout,
    from_b: PgFanout,
    received: broadcast::Receiver<Delivery>,
}

impl Pair {
    /// The pair, once A's fan-out listens.
    async fn listening(pg: &Postgres) -> Pair {
        let a = PgStore::connect(&pg.url()).await.expect("connects");
        let b = PgStore::connect(&pg.url()).await.expect("connects");
        let (on_a, from_b) = (a.fanout(), b.fanout());
        let received = on_a.subscribe();
        listening(pg, 1).await;
        Pair {
            _stores: (a, b),
            _on_a: on_a,
            from_b,
            received,
        }
    }
}

/// One replica's messages reach another in the order sent, whatever their length: one of
/// [`PgFanout::MAX_INLINE_BYTES`] travels in the notification (nothing stored), one byte
/// more through a row of `presa_events`.
#[tokio::test]
async fn messages_arrive_in_order_at_and_past_the_payload_bound() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    // Every field bound: one left to `..` would be dropped here, ending the fan-out.
    let Pair {
        _stores,
        _on_a,
        from_b,
        mut received,
    } = Pair::listening(&pg).await;
    assert_eq!(
        tokio::time::timeout(PATIENCE, received.recv()).await.ok(),
        Some(Ok(Delivery::Gap)),
        "listening begins with a gap"
    );
    for n in 0..200 {
        from_b.send(n.to_string());
    }
    for n in 0..200 {
        assert_eq!(message(&mut received).await, n.to_string(), "in order");
    }
    let at = "a".repeat(PgFanout::MAX_INLINE_BYTES);
    from_b.send(at.clone());
    assert_eq!(message(&mut received).await, at, "at the bound");
    assert_eq!(stored(&pg).await, 0, "sent in the notification");
    let past = format!("{at}é");
    assert_eq!(past.len(), PgFanout::MAX_INLINE_BYTES + 2);
    let just_past = format!("{at}b");
    from_b.send(just_past.clone());
    from_b.send("after".into());
    assert_eq!(
        message(&mut received).await,
        just_past,
        "just past the bound"
    );
    assert_eq!(message(&mut received).await, "after", "still in order");
    assert_eq!(
        stored(&pg).await,
        1,
        "stored, and named by the notification"
    );
    from_b.send(past.clone());
    assert_eq!(
        message(&mut received).await,
        past,
        "whole, multibyte included"
    );
    assert_eq!(stored(&pg).await, 2);
}

/// A sender whose queue is not being sent (no runtime to send it on yet) keeps
/// [`PgFanout::MAX_QUEUED`] messages and drops the one past them; once it runs, the kept
/// ones are sent in order, and the dropped one never.
#[tokio::test]
async fn the_send_queue_keeps_its_bound_and_drops_past_it() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    // Every field bound: one left to `..` would be dropped here, ending the fan-out.
    let Pair {
        _stores,
        _on_a,
        from_b,
        mut received,
    } = Pair::listening(&pg).await;
    // The gap listening begins with, read first: the kept messages alone then fit in a
    // subscription's capacity, so a test descheduled while they arrive does not lag.
    assert_eq!(
        tokio::time::timeout(PATIENCE, received.recv()).await.ok(),
        Some(Ok(Delivery::Gap)),
        "listening begins with a gap"
    );
    let queued = from_b.clone();
    std::thread::spawn(move || {
        for n in 0..=PgFanout::MAX_QUEUED {
            queued.send(n.to_string());
        }
    })
    .join()
    .expect("queued outside the runtime");
    // Subscribing starts the sender (and B's listener).
    let _started = from_b.subscribe();
    for n in 0..PgFanout::MAX_QUEUED {
        assert_eq!(message(&mut received).await, n.to_string(), "in order");
    }
    from_b.send("after".into());
    assert_eq!(
        message(&mut received).await,
        "after",
        "the one past the bound was dropped"
    );
}

/// Stored messages are kept a minute for receivers to read: storing one first deletes
/// rows older than that, and keeps younger ones.
#[tokio::test]
async fn stored_messages_older_than_a_minute_are_deleted() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    // Every field bound: one left to `..` would be dropped here, ending the fan-out.
    let Pair {
        _stores,
        _on_a,
        from_b,
        mut received,
    } = Pair::listening(&pg).await;
    let mut conn = pg.connection().await;
    for (payload, age) in [("younger", 59), ("older", 61)] {
        sqlx::query(
            "INSERT INTO presa_events (payload, created_at)
             VALUES ($1, now() - make_interval(secs => $2))",
        )
        .bind(payload)
        .bind(f64::from(age))
        .execute(&mut conn)
        .await
        .expect("a row stored");
    }
    let long = "l".repeat(PgFanout::MAX_INLINE_BYTES + 1);
    from_b.send(long.clone());
    assert_eq!(message(&mut received).await, long);
    // Deleted before the message was stored, so before it was heard.
    let left: Vec<String> = sqlx::query_scalar("SELECT payload FROM presa_events ORDER BY id")
        .fetch_all(&mut conn)
        .await
        .expect("read");
    let left: Vec<&str> = left
        .iter()
        .map(|p| {
            if *p == long {
                "the message"
            } else {
                p.as_str()
            }
        })
        .collect();
    assert_eq!(left, ["younger", "the message"]);
}

/// A replica of one server over `store`'s database, with resource events on.
fn replica(store: &PgStore) -> Server {
    builder("fanout")
        .resource_notifications(true)
        .fanout(store.fanout())
        .build()
        .expect("builds")
}

/// Two replicas on one database, each with its own store, and a client of A over HTTP,
/// once both fan-outs' listener connections are open.
async fn replicas(pg: &Postgres) -> (Server, Server, Client) {
    let (sa, sb) = (
        PgStore::connect(&pg.url()).await.expect("connects"),
        PgStore::connect(&pg.url()).await.expect("connects"),
    );
    let (a, b) = (replica(&sa), replica(&sb));
    listening(pg, 2).await;
    let client = Client::start(Kind::Http, &a).await;
    (a, b, client)
}

/// The URI whose updates [`sync`] publishes.
const SYNC: &str = "test://docs/sync";

/// Publishes updates of [`SYNC`] on B until stream `id` on A (subscribed to it) hears
/// one, skipping the list changes before it: A's fan-out listens by then, and the gap
/// it reports when it starts listening, which comes before anything it hears, is
/// behind the stream.
async fn sync(b: &Server, c: &mut Client, id: &Value) {
    let deadline = Deadline::new("A hears B");
    loop {
        b.notify_resource_updated(SYNC);
        loop {
            match c.next(id, std::time::Duration::from_millis(500)).await {
                Next::Msg(m) if method(&m) == "notifications/resources/updated" => {
                    assert_eq!(m["params"]["uri"], SYNC, "{m}");
                    return;
                }
                Next::Msg(m) if method(&m).ends_with("/list_changed") => {}
                Next::Msg(m) => panic!("unexpected {m}"),
                Next::Timeout => break,
                Next::End => panic!("the stream ended"),
            }
        }
        deadline.tick("no update yet").await;
    }
}

/// The events of stream `id` until one is `notifications/resources/updated` of `uri`:
/// every message on the way, that one last.
async fn until_updated(c: &mut Client, id: &Value, uri: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        match c.next(id, PATIENCE).await {
            Next::Msg(m) => {
                let done =
                    method(&m) == "notifications/resources/updated" && m["params"]["uri"] == uri;
                seen.push(m);
                if done {
                    return seen;
                }
            }
            other => panic!("no update of {uri}: {other:?} after {seen:?}"),
        }
    }
}

/// A list change on B reaches a listen stream on A; updates of the resources it
/// subscribed to arrive in the order B published them, an unsubscribed one never; an
/// update whose URI makes the message longer than a notification's payload arrives
/// through the table.
#[tokio::test]
async fn list_changes_and_updates_on_one_replica_reach_streams_on_another() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let (_a, b, mut c) = replicas(&pg).await;
    let id = json!("fan");
    c.listen_to(
        id.clone(),
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://docs"]}),
    )
    .await;
    sync(&b, &mut c, &id).await;
    b.add_tool(plain_tool("from_b")).expect("adds");
    c.expect_event(&id, "notifications/tools/list_changed")
        .await;

    // Each awaited before the next is published, so coalescing cannot reorder them.
    for n in 1..=3 {
        b.notify_resource_updated("other://unsubscribed");
        let uri = format!("test://docs/{n}");
        b.notify_resource_updated(&uri);
        let seen = until_updated(&mut c, &id, &uri).await;
        assert_eq!(seen.len(), 1, "only the subscribed update: {seen:?}");
    }
    // Published at once: they arrive, the unsubscribed one never, in B's order (as the
    // stream's coalescing sorts them, B's order is chosen sorted too).
    for n in 4..=6 {
        b.notify_resource_updated(&format!("test://docs/{n}"));
        b.notify_resource_updated("other://unsubscribed");
    }
    let mut uris = Vec::new();
    while uris.len() < 3 {
        match c.next(&id, PATIENCE).await {
            Next::Msg(m) => {
                assert_eq!(method(&m), "notifications/resources/updated", "{m}");
                uris.push(m["params"]["uri"].as_str().unwrap_or_default().to_owned());
            }
            other => panic!("updates 4 to 6: {other:?} after {uris:?}"),
        }
    }
    assert_eq!(uris, ["test://docs/4", "test://docs/5", "test://docs/6"]);

    let long = format!("test://docs/{}", "x".repeat(PgFanout::MAX_INLINE_BYTES));
    b.notify_resource_updated(&long);
    let seen = until_updated(&mut c, &id, &long).await;
    assert_eq!(seen.len(), 1, "{}", seen.len());
    assert!(stored(&pg).await >= 1, "it went through presa_events");
    c.expect_quiet(&id).await;
}

/// A legacy session on A is fed from the same hub: its GET stream carries a list change
/// published on B.
#[tokio::test]
async fn a_legacy_session_on_one_replica_hears_list_changes_on_another() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let (a, b, _c) = replicas(&pg).await;
    let h = Harness::start(a.clone()).await;
    let mut session = Legacy::open(&h, "2025-11-25").await;
    let subscribed = session
        .call("resources/subscribe", json!({"uri": "test://docs"}))
        .await;
    assert_eq!(subscribed.response()["result"], json!({}));
    let mut get = session.get("", &[]).await;
    assert_eq!(get.status, 200);
    // As `sync`: A's fan-out listens, and its first gap is behind the session.
    let deadline = Deadline::new("A hears B");
    'synced: loop {
        b.notify_resource_updated(SYNC);
        loop {
            match get.next(std::time::Duration::from_millis(500)).await {
                Next::Msg(m) if m["method"] == "notifications/resources/updated" => break 'synced,
                Next::Msg(m) if m["method"] == "notifications/tools/list_changed" => {}
                Next::Msg(m) => panic!("unexpected {m}"),
                Next::Timeout => break,
                Next::End => panic!("the stream ended"),
            }
        }
        deadline.tick("no update yet").await;
    }
    b.add_tool(plain_tool("from_b")).expect("adds");
    let m = get.next(PATIENCE).await.msg("the list change");
    assert_eq!(
        m["method"],
        json!("notifications/tools/list_changed"),
        "{m}"
    );
}

/// PostgreSQL stopped and started again under both replicas: A's stream, still open,
/// hears every list change it asked for once A's fan-out listens again (events may have
/// been missed meanwhile), then B's events as before.
#[tokio::test]
async fn after_a_database_outage_streams_hear_the_gap_then_events_again() {
    let Some(pg) = Postgres::start().await else {
        return;
    };
    let (_a, b, mut c) = replicas(&pg).await;
    let id = json!("outage");
    c.listen_to(
        id.clone(),
        json!({"toolsListChanged": true, "promptsListChanged": true,
               "resourceSubscriptions": ["test://docs"]}),
    )
    .await;
    sync(&b, &mut c, &id).await;

    pg.stop().await;
    pg.start_again().await.expect("PostgreSQL starts again");
    listening(&pg, 2).await;
    let mut lists = std::collections::BTreeSet::new();
    while lists.len() < 2 {
        match c.next(&id, PATIENCE).await {
            Next::Msg(m) => {
                assert!(method(&m).ends_with("/list_changed"), "{m}");
                lists.insert(method(&m).to_owned());
            }
            other => panic!("the gap's list changes: {other:?} after {lists:?}"),
        }
    }
    assert_eq!(
        lists.into_iter().collect::<Vec<_>>(),
        [
            "notifications/prompts/list_changed",
            "notifications/tools/list_changed"
        ]
    );
    // B's pool reconnects on its next statement.
    let deadline = Deadline::new("B's events reach A again");
    let mut n = 0;
    loop {
        n += 1;
        let uri = format!("test://docs/after/{n}");
        b.notify_resource_updated(&uri);
        match c.next(&id, std::time::Duration::from_secs(2)).await {
            Next::Msg(m) if method(&m) == "notifications/resources/updated" => break,
            // A listener that had to try more than once to listen again reports a gap
            // each time.
            Next::Msg(m) if method(&m).ends_with("/list_changed") => {}
            Next::Msg(m) => panic!("unexpected {m}"),
            other => deadline.tick(format!("{other:?}")).await,
        }
    }
}
