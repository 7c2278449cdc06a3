//! The contract every [`ReplayStore`] keeps: one check per rule the trait documents, and
//! [`run_all`] to run them all. presa runs it on its own stores (memory, SQLite,
//! PostgreSQL); run it on yours from a test:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use presa::mrtr::{MemoryReplayStore, contract};
//!
//! contract::run_all(&MemoryReplayStore::default()).await;
//! # }
//! ```
//!
//! The checks use fresh random ids, so they run on a store that already holds records
//! (a shared database, another run's rows). Each panics with the rule it found broken,
//! so it reads as a failed test. Expiry is against the store's own clock (Unix seconds):
//! an id "expired" here expired in 1970, one "live" expires an hour from now.

use super::token::{ReplayError, ReplayStore, random_id};
use std::time::{SystemTime, UNIX_EPOCH};

/// How many uses of one id [`concurrent_first_uses_one_wins`] starts at once.
pub const CONCURRENT_USES: usize = 8;

/// Runs every check on `store`, in the order they are listed in this module.
pub async fn run_all(store: &dyn ReplayStore) {
    first_use_is_true(store).await;
    second_use_is_false(store).await;
    concurrent_first_uses_one_wins(store).await;
    expired_ids_may_be_used_again(store).await;
    distinct_ids_are_independent(store).await;
}

/// An id never seen, prefixed by the check's name (for a reader of the store).
fn fresh(check: &str) -> String {
    // The OS's randomness fails only on a broken system; the clock's nanoseconds still
    // make the id unlikely to collide in a test.
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "contract-{check}-{}",
        random_id(12).unwrap_or_else(|| nanos.to_string())
    )
}

/// An hour from now, Unix seconds.
fn live() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        + 3600
}

/// `first_use`'s answer, or a panic naming `rule` when the store failed.
fn answer(rule: &str, outcome: Result<bool, ReplayError>) -> bool {
    match outcome {
        Ok(first) => first,
        Err(e) => panic!("replay store contract, {rule}: the store failed: {e}"),
    }
}

/// An id never used is a first use.
pub async fn first_use_is_true(store: &dyn ReplayStore) {
    let rule = "an id never used is a first use";
    let id = fresh("first");
    assert!(
        answer(rule, store.first_use(&id, live()).await),
        "replay store contract: {rule}"
    );
}

/// A live id used once is refused after, however often it is tried.
pub async fn second_use_is_false(store: &dyn ReplayStore) {
    let rule = "a live id is refused after its first use";
    let id = fresh("second");
    assert!(answer(rule, store.first_use(&id, live()).await), "{rule}");
    for _ in 0..3 {
        assert!(
            !answer(rule, store.first_use(&id, live()).await),
            "replay store contract: {rule}"
        );
    }
}

/// Of [`CONCURRENT_USES`] first uses of one id started at once, exactly one is true.
pub async fn concurrent_first_uses_one_wins(store: &dyn ReplayStore) {
    let rule = "of concurrent first uses of one id exactly one is true";
    let id = fresh("race");
    let exp = live();
    let tries = (0..CONCURRENT_USES).map(|_| store.first_use(&id, exp));
    let outcomes = futures_util::future::join_all(tries).await;
    let won = outcomes
        .into_iter()
        .filter(|outcome| answer(rule, outcome.clone()))
        .count();
    assert_eq!(won, 1, "replay store contract: {rule}");
}

/// An id whose record has expired may be used again, once: its new record holds.
pub async fn expired_ids_may_be_used_again(store: &dyn ReplayStore) {
    let rule = "an expired id may be used again";
    let id = fresh("expired");
    assert!(answer(rule, store.first_use(&id, 1).await), "{rule}");
    assert!(
        answer(rule, store.first_use(&id, 1).await),
        "replay store contract: {rule}"
    );
    let rule = "an expired id used again is recorded anew";
    assert!(answer(rule, store.first_use(&id, live()).await), "{rule}");
    assert!(
        !answer(rule, store.first_use(&id, live()).await),
        "replay store contract: {rule}"
    );
}

/// Using one id says nothing of another.
pub async fn distinct_ids_are_independent(store: &dyn ReplayStore) {
    let rule = "distinct ids are independent";
    let ids: Vec<String> = (0..4).map(|i| fresh(&format!("distinct{i}"))).collect();
    for id in &ids {
        assert!(
            answer(rule, store.first_use(id, live()).await),
            "replay store contract: {rule}: {id}"
        );
    }
    for id in &ids {
        assert!(
            !answer(rule, store.first_use(id, live()).await),
            "replay store contract: {rule}: {id} again"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mrtr::MemoryReplayStore;

    #[tokio::test]
    async fn the_memory_store_keeps_the_contract() {
        run_all(&MemoryReplayStore::default()).await;
    }

    /// A store that takes every use as the first breaks the contract, and the contract
    /// says so.
    #[tokio::test]
    #[should_panic(expected = "a live id is refused after its first use")]
    async fn a_store_that_forgets_breaks_the_contract() {
        struct Forgetful;
        impl ReplayStore for Forgetful {
            fn first_use<'a>(
                &'a self,
                _: &'a str,
                _: u64,
            ) -> super::super::token::ReplayFuture<'a> {
                Box::pin(std::future::ready(Ok(true)))
            }
        }
        run_all(&Forgetful).await;
    }
}
