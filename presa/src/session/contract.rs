//! The contract every [`SessionStore`] keeps, as one check per rule the trait documents,
//! run by [`run_all`] on an empty store. presa runs it on its own stores; run it on yours
//! from a test:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use presa::session::{MemorySessionStore, contract};
//!
//! contract::run_all(&MemorySessionStore::default()).await;
//! # }
//! ```
//!
//! A broken rule panics, naming it (so it reads as a failed test). Times are fixed Unix
//! milliseconds, not the clock: a store must take `now_ms` from its caller.

use super::{EventBounds, LogLevel, SessionRecord, SessionStore, StreamEvent};
use serde_json::{Map, json};

/// The idle limit the checks use, in milliseconds.
const IDLE: u64 = 1_000;

/// A record made at `now`, with a capability, a client info and an owner.
fn record(id: &str, now: u64) -> SessionRecord {
    let mut caps = Map::new();
    caps.insert("elicitation".into(), json!({"form": {}}));
    SessionRecord::new(
        id,
        Some("alice".into()),
        "2025-11-25",
        caps,
        json!({"name": "c", "version": "1"}),
        now,
    )
}

/// Runs every check on `store`, which must hold no record.
pub async fn run_all(store: &dyn SessionStore) {
    created_then_touched(store).await;
    the_idle_bound_holds_at_and_past_it(store).await;
    changes_are_kept(store).await;
    an_ended_session_is_gone_for_every_call(store).await;
    stale_records_are_removed(store).await;
    events_are_read_in_order_after_a_seq(store).await;
    the_event_bounds_hold_at_and_past_them(store).await;
    a_stream_has_one_writer_and_ends(store).await;
    copies_are_numbered_once_each(store).await;
    events_go_with_their_session(store).await;
}

/// Roomy bounds, for the checks that are not about them.
const ROOMY: EventBounds = EventBounds {
    events: 100,
    bytes: 1 << 20,
};

/// Appends events `seqs` of `stream` with data `"<stream>.<seq>"`, as `writer`, each
/// accepted.
async fn append_all(store: &dyn SessionStore, id: &str, writer: u64, stream: u64, seqs: &[u64]) {
    for &seq in seqs {
        let event = StreamEvent::new(stream, seq, format!("\"{stream}.{seq}\""));
        assert_eq!(
            store.append_event(id, writer, &event, ROOMY).await,
            Ok(true),
            "event {stream}-{seq} is added"
        );
    }
}

/// The `<stream>-<seq>` ids of the events of `stream` held after `after`.
async fn ids(store: &dyn SessionStore, id: &str, stream: u64, after: u64) -> Vec<String> {
    let read = store
        .read_stream(id, stream, after)
        .await
        .expect("the store answers")
        .expect("the stream is held");
    read.events
        .iter()
        .map(|e| format!("{}-{}", e.stream, e.seq))
        .collect()
}

/// A stream's events are read back in order, whole, after any `seq`, apart from the
/// other streams' events; a stream never written is not held; the last `seq` is the
/// stream's.
pub async fn events_are_read_in_order_after_a_seq(store: &dyn SessionStore) {
    let s = record("contract-events", 60_000);
    store.create(&s).await.expect("created");
    append_all(store, &s.id, 0, 0, &[1, 2]).await;
    append_all(store, &s.id, 0, 7, &[1]).await;
    append_all(store, &s.id, 0, 0, &[3]).await;
    let read = store
        .read_stream(&s.id, 0, 0)
        .await
        .expect("ok")
        .expect("held");
    assert_eq!(
        read.events,
        [1, 2, 3].map(|n| StreamEvent::new(0, n, format!("\"0.{n}\""))),
        "every event of the stream, in order, whole"
    );
    assert_eq!((read.last_seq, read.ended), (3, false));
    assert_eq!(ids(store, &s.id, 0, 1).await, ["0-2", "0-3"], "after a seq");
    assert!(ids(store, &s.id, 0, 3).await.is_empty(), "after the last");
    assert_eq!(ids(store, &s.id, 7, 0).await, ["7-1"], "another stream's");
    assert_eq!(
        store.read_stream(&s.id, 8, 0).await,
        Ok(None),
        "a stream never written is not held"
    );
    let again = StreamEvent::new(0, 2, "\"twice\"");
    assert_eq!(
        store.append_event(&s.id, 0, &again, ROOMY).await,
        Ok(false),
        "a seq held already is refused"
    );
    assert_eq!(ids(store, &s.id, 0, 1).await, ["0-2", "0-3"]);
}

/// The session's buffer holds at most its bound of events and of bytes over all its
/// streams: at either bound every event stays; one past it, the oldest goes; the newest
/// stays whatever its size.
pub async fn the_event_bounds_hold_at_and_past_them(store: &dyn SessionStore) {
    let s = record("contract-bounds", 61_000);
    store.create(&s).await.expect("created");
    let three = EventBounds::new(3, 1 << 20);
    for (stream, seq) in [(0, 1), (5, 1), (0, 2)] {
        let e = StreamEvent::new(stream, seq, "{}");
        assert_eq!(store.append_event(&s.id, 0, &e, three).await, Ok(true));
    }
    assert_eq!(
        ids(store, &s.id, 0, 0).await,
        ["0-1", "0-2"],
        "at the bound"
    );
    assert_eq!(ids(store, &s.id, 5, 0).await, ["5-1"], "at the bound");
    let e = StreamEvent::new(5, 2, "{}");
    assert_eq!(store.append_event(&s.id, 0, &e, three).await, Ok(true));
    assert_eq!(
        ids(store, &s.id, 0, 0).await,
        ["0-2"],
        "one past: the oldest went"
    );
    assert_eq!(ids(store, &s.id, 5, 0).await, ["5-1", "5-2"]);

    let b = record("contract-bytes", 62_000);
    store.create(&b).await.expect("created");
    let one = StreamEvent::new(0, 1, "{}").size();
    let two = EventBounds::new(100, 2 * one);
    for seq in [1, 2] {
        let e = StreamEvent::new(0, seq, "{}");
        assert_eq!(store.append_event(&b.id, 0, &e, two).await, Ok(true));
    }
    assert_eq!(
        ids(store, &b.id, 0, 0).await,
        ["0-1", "0-2"],
        "at the byte bound"
    );
    let e = StreamEvent::new(0, 3, "{}");
    assert_eq!(store.append_event(&b.id, 0, &e, two).await, Ok(true));
    assert_eq!(
        ids(store, &b.id, 0, 0).await,
        ["0-2", "0-3"],
        "one byte past"
    );
    let large = StreamEvent::new(0, 4, format!("\"{}\"", "x".repeat(4 * one)));
    assert_eq!(store.append_event(&b.id, 0, &large, two).await, Ok(true));
    let read = store
        .read_stream(&b.id, 0, 0)
        .await
        .expect("ok")
        .expect("held");
    assert_eq!(
        read.events,
        [large],
        "the newest stays, larger than the bound"
    );
    assert_eq!(read.last_seq, 4);

    // Bounds past any count a store keeps hold every event, and each append under them
    // is answered as any other; a later append under smaller bounds trims to those.
    let h = record("contract-huge-bounds", 62_500);
    store.create(&h).await.expect("created");
    let huge = EventBounds::new(usize::MAX, usize::MAX);
    for seq in 1..=3 {
        let e = StreamEvent::new(0, seq, "{}");
        assert_eq!(
            store.append_event(&h.id, 0, &e, huge).await,
            Ok(true),
            "an append under bounds of usize::MAX"
        );
    }
    assert_eq!(ids(store, &h.id, 0, 0).await, ["0-1", "0-2", "0-3"]);
    let e = StreamEvent::new(0, 4, "{}");
    let two = EventBounds::new(2, usize::MAX);
    assert_eq!(store.append_event(&h.id, 0, &e, two).await, Ok(true));
    assert_eq!(ids(store, &h.id, 0, 0).await, ["0-3", "0-4"]);
}

/// A stream is written by one writer: the first to add to it, until another takes it
/// over (and goes on from its last `seq`); the other's events and ends are refused. An
/// ended stream takes no more events, reads as ended, and is not held once none of its
/// events is.
pub async fn a_stream_has_one_writer_and_ends(store: &dyn SessionStore) {
    let s = record("contract-writers", 63_000);
    store.create(&s).await.expect("created");
    append_all(store, &s.id, 0, 0, &[1, 2]).await;
    let by_other = StreamEvent::new(0, 3, "{}");
    assert_eq!(
        store.append_event(&s.id, 4, &by_other, ROOMY).await,
        Ok(false),
        "another writer's event"
    );
    assert_eq!(store.take_stream(&s.id, 0, 4).await, Ok(Some(2)));
    assert_eq!(
        store.append_event(&s.id, 0, &by_other, ROOMY).await,
        Ok(false),
        "the writer taken over"
    );
    append_all(store, &s.id, 4, 0, &[3]).await;
    assert_eq!(ids(store, &s.id, 0, 0).await, ["0-1", "0-2", "0-3"]);
    assert_eq!(
        store.take_stream(&s.id, 9, 4).await,
        Ok(Some(0)),
        "a stream never written, taken: made empty"
    );
    let read = store.read_stream(&s.id, 9, 0).await.expect("ok");
    assert_eq!(read.map(|r| (r.events.len(), r.last_seq)), Some((0, 0)));

    append_all(store, &s.id, 2, 3, &[1, 2]).await;
    assert_eq!(
        store.end_stream(&s.id, 3, 4).await,
        Ok(false),
        "not its writer"
    );
    assert_eq!(store.end_stream(&s.id, 3, 2).await, Ok(true));
    assert_eq!(
        store.end_stream(&s.id, 3, 2).await,
        Ok(false),
        "ended already"
    );
    assert_eq!(
        store.end_stream(&s.id, 11, 2).await,
        Ok(false),
        "never written"
    );
    let after_end = StreamEvent::new(3, 3, "{}");
    assert_eq!(
        store.append_event(&s.id, 2, &after_end, ROOMY).await,
        Ok(false),
        "an ended stream takes nothing more"
    );
    let read = store
        .read_stream(&s.id, 3, 1)
        .await
        .expect("ok")
        .expect("held");
    assert!(read.ended, "reads as ended");
    assert_eq!((read.events.len(), read.last_seq), (1, 2));
    // One event allowed: the ended stream's events go, and with them the stream.
    let e = StreamEvent::new(0, 4, "{}");
    assert_eq!(
        store
            .append_event(&s.id, 4, &e, EventBounds::new(1, 1 << 20))
            .await,
        Ok(true)
    );
    assert_eq!(
        store.read_stream(&s.id, 3, 0).await,
        Ok(None),
        "an ended stream with no event held"
    );
    assert_eq!(ids(store, &s.id, 0, 0).await, ["0-4"]);
}

/// Each copy of a live session gets a number of its own, never 0; a session that is not
/// live gets none.
pub async fn copies_are_numbered_once_each(store: &dyn SessionStore) {
    let s = record("contract-copies", 64_000);
    store.create(&s).await.expect("created");
    let first = store.claim_copy(&s.id).await.expect("ok").expect("live");
    let second = store.claim_copy(&s.id).await.expect("ok").expect("live");
    assert!(
        first != 0 && second != 0 && first != second,
        "{first}, {second}"
    );
    assert_eq!(store.claim_copy("contract-never").await, Ok(None));
    assert_eq!(store.end(&s.id).await, Ok(true));
    assert_eq!(store.claim_copy(&s.id).await, Ok(None));
}

/// A session's events go when it ends or expires: nothing is read or added after.
pub async fn events_go_with_their_session(store: &dyn SessionStore) {
    let s = record("contract-events-end", 65_000);
    store.create(&s).await.expect("created");
    append_all(store, &s.id, 0, 0, &[1]).await;
    assert_eq!(store.end(&s.id).await, Ok(true));
    assert_eq!(store.read_stream(&s.id, 0, 0).await, Ok(None));
    let e = StreamEvent::new(0, 2, "{}");
    assert_eq!(store.append_event(&s.id, 0, &e, ROOMY).await, Ok(false));
    assert_eq!(store.take_stream(&s.id, 0, 1).await, Ok(None));
    assert_eq!(store.end_stream(&s.id, 0, 0).await, Ok(false));

    let x = record("contract-events-idle", 66_000);
    store.create(&x).await.expect("created");
    append_all(store, &x.id, 0, 0, &[1]).await;
    assert_eq!(store.touch(&x.id, 66_000 + IDLE + 1, IDLE).await, Ok(None));
    assert_eq!(store.read_stream(&x.id, 0, 0).await, Ok(None), "expired");
    assert_eq!(store.append_event(&x.id, 0, &e, ROOMY).await, Ok(false));
    assert_eq!(
        store.read_stream("contract-never", 0, 0).await,
        Ok(None),
        "a session never made"
    );
}

/// A record made is read back whole by a touch, its last use moved to the touch's time;
/// an id never made is `None`.
pub async fn created_then_touched(store: &dyn SessionStore) {
    let a = record("contract-a", 10_000);
    store.create(&a).await.expect("created");
    let got = store.touch(&a.id, 10_500, IDLE).await.expect("touched");
    let mut want = a.clone();
    want.last_used_ms = 10_500;
    assert_eq!(got, Some(want), "a touch reads the record back");
    assert_eq!(
        store.touch("contract-never", 10_500, IDLE).await,
        Ok(None),
        "an id never made is no session"
    );
}

/// A session last used `IDLE` ago is live; one millisecond later it has expired, and
/// stays so.
pub async fn the_idle_bound_holds_at_and_past_it(store: &dyn SessionStore) {
    let b = record("contract-idle", 20_000);
    store.create(&b).await.expect("created");
    assert!(
        store
            .touch(&b.id, 20_000 + IDLE, IDLE)
            .await
            .expect("ok")
            .is_some(),
        "live at the bound"
    );
    assert_eq!(
        store.touch(&b.id, 20_000 + 2 * IDLE + 1, IDLE).await,
        Ok(None),
        "expired just past it"
    );
    assert_eq!(
        store.touch(&b.id, 20_000 + 2 * IDLE, IDLE).await,
        Ok(None),
        "an expired session stays expired"
    );
}

/// The log level and the subscriptions are kept, and read back by a touch; subscribing
/// twice holds the URI once, unsubscribing from one not held changes nothing.
pub async fn changes_are_kept(store: &dyn SessionStore) {
    let c = record("contract-changes", 30_000);
    store.create(&c).await.expect("created");
    assert_eq!(
        store.set_log_level(&c.id, LogLevel::Warning).await,
        Ok(true)
    );
    for uri in ["test://x", "test://y", "test://x"] {
        assert_eq!(store.subscribe(&c.id, uri, true).await, Ok(true));
    }
    assert_eq!(store.subscribe(&c.id, "test://x", false).await, Ok(true));
    assert_eq!(store.subscribe(&c.id, "test://z", false).await, Ok(true));
    let got = store
        .touch(&c.id, 30_001, IDLE)
        .await
        .expect("ok")
        .expect("live");
    assert_eq!(got.log_level, Some(LogLevel::Warning));
    assert_eq!(got.subscriptions, ["test://y"]);
    assert_eq!(got.capabilities, c.capabilities);
    assert_eq!(got.client_info, c.client_info);
    assert_eq!(got.owner.as_deref(), Some("alice"));
    assert_eq!(got.created_ms, 30_000);
    let loaded = store.load(&c.id).await.expect("ok").expect("live");
    assert_eq!(
        loaded, got,
        "a load reads what the touch did, and moves nothing"
    );
}

/// An ended session is gone for every call, and ending it again says it was not live.
pub async fn an_ended_session_is_gone_for_every_call(store: &dyn SessionStore) {
    let d = record("contract-ended", 40_000);
    store.create(&d).await.expect("created");
    assert_eq!(store.end(&d.id).await, Ok(true));
    assert_eq!(store.end(&d.id).await, Ok(false));
    assert_eq!(store.touch(&d.id, 40_001, IDLE).await, Ok(None));
    assert_eq!(store.load(&d.id).await, Ok(None));
    assert_eq!(store.load("contract-never").await, Ok(None));
    assert_eq!(store.set_log_level(&d.id, LogLevel::Debug).await, Ok(false));
    assert_eq!(store.subscribe(&d.id, "test://y", true).await, Ok(false));
    assert_eq!(store.end("contract-never").await, Ok(false));
}

/// Records of sessions that ended or were last used before the bound go; a live one
/// used at the bound stays.
pub async fn stale_records_are_removed(store: &dyn SessionStore) {
    let e = record("contract-recent", 50_000);
    store.create(&e).await.expect("created");
    let removed = store.remove_stale(50_000).await.expect("removed");
    assert!(removed >= 1, "the ended and expired records go ({removed})");
    assert!(
        store
            .touch(&e.id, 50_001, IDLE)
            .await
            .expect("ok")
            .is_some(),
        "a record used at the bound stays"
    );
    assert_eq!(
        store.touch("contract-ended", 50_001, u64::MAX).await,
        Ok(None)
    );
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn the_memory_store_keeps_the_contract() {
        super::run_all(&super::super::MemorySessionStore::default()).await;
    }
}
