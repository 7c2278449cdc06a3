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

use super::{LogLevel, SessionRecord, SessionStore};
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
