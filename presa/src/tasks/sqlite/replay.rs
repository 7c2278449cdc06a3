//! [`SqliteStore`] as a [`ReplayStore`]: the single-use request states spent, one row of
//! `presa_replay` each, in the file that keeps the tasks (schema version 2).
//!
//! A first use is one upsert that writes a row only when none exists or the one there
//! has expired; the rows it wrote say whether it was first. Expired rows are dropped a
//! bounded batch at a time, after one use in 64.

use super::SqliteStore;
use crate::mrtr::token::{self, PRUNE_BATCH, ReplayError, ReplayFuture, ReplayStore};

/// The schema entry that adds the replay record.
pub(super) const MIGRATION: &[&str] = &[
    "CREATE TABLE presa_replay (
        id TEXT PRIMARY KEY NOT NULL,
        -- Unix seconds; the record holds until then.
        expires_at INTEGER NOT NULL
    )",
    "CREATE INDEX presa_replay_by_expiry ON presa_replay (expires_at)",
];

/// A time as SQLite's INTEGER holds it: past i64::MAX is i64::MAX.
fn seconds(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl ReplayStore for SqliteStore {
    fn first_use<'a>(&'a self, id: &'a str, expires_at: u64) -> ReplayFuture<'a> {
        Box::pin(async move {
            let failed = |e: sqlx::Error| ReplayError::new(format!("SQLite: {e}"));
            let now = seconds(token::now());
            let written = sqlx::query(
                "INSERT INTO presa_replay (id, expires_at) VALUES (?1, ?2)
                 ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at
                 WHERE presa_replay.expires_at < ?3",
            )
            .bind(id)
            .bind(seconds(expires_at))
            .bind(now)
            .execute(&self.pool)
            .await
            .map_err(failed)?
            .rows_affected();
            if token::prunes_after(id) {
                // The use is recorded already; a failed pruning is retried by a later one.
                let pruned = sqlx::query(
                    "DELETE FROM presa_replay WHERE id IN
                     (SELECT id FROM presa_replay WHERE expires_at < ?1 LIMIT ?2)",
                )
                .bind(now)
                .bind(PRUNE_BATCH)
                .execute(&self.pool)
                .await;
                if let Err(e) = pruned {
                    tracing::warn!("expired replay records could not be dropped: {e}");
                }
            }
            Ok(written == 1)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::SCHEMA_VERSION;
    use super::*;
    use crate::mrtr::contract;
    use sqlx::Connection;

    async fn expired_rows(store: &SqliteStore) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM presa_replay WHERE expires_at < ?1")
            .bind(seconds(token::now()))
            .fetch_one(&store.pool)
            .await
            .expect("counted")
    }

    #[tokio::test]
    async fn the_sqlite_store_keeps_the_replay_contract() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let store = SqliteStore::open(dir.path().join("replay.db"))
            .await
            .expect("opens");
        contract::run_all(&store).await;
    }

    /// A file of schema version 1 (tasks only) gains the replay record when opened, its
    /// tasks kept.
    #[tokio::test]
    async fn a_tasks_only_file_gains_the_replay_record() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("old.db");
        let conn = super::super::tests::older_file(&path, 1).await;
        conn.close().await.expect("closed");
        let store = SqliteStore::open(&path).await.expect("opens");
        assert_eq!(SCHEMA_VERSION, 3);
        let version: i64 = sqlx::query_scalar("PRAGMA user_version")
            .fetch_one(&store.pool)
            .await
            .expect("read");
        assert_eq!(version, SCHEMA_VERSION);
        assert_eq!(store.first_use("A-new", token::now() + 60).await, Ok(true));
    }

    /// Expired rows are dropped after a use whose id starts with `A` (one in 64 of a
    /// state's random ids), at most [`PRUNE_BATCH`] at a time.
    #[tokio::test]
    async fn expired_records_are_pruned_a_batch_at_a_time() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let store = SqliteStore::open(dir.path().join("replay.db"))
            .await
            .expect("opens");
        let expired = PRUNE_BATCH + 44;
        for i in 0..expired {
            assert_eq!(store.first_use(&format!("old{i}"), 1).await, Ok(true));
        }
        assert_eq!(store.first_use("b-live", token::now() + 60).await, Ok(true));
        assert_eq!(expired_rows(&store).await, expired, "no pruning after `b…`");
        assert_eq!(store.first_use("A-live", token::now() + 60).await, Ok(true));
        assert_eq!(expired_rows(&store).await, 44, "one batch, no more");
        assert_eq!(store.first_use("A-two", token::now() + 60).await, Ok(true));
        assert_eq!(expired_rows(&store).await, 0);
        assert_eq!(
            store.first_use("A-live", token::now() + 60).await,
            Ok(false),
            "live records are kept"
        );
    }

    /// A store that cannot answer is a fault, never a first use.
    #[tokio::test]
    async fn a_closed_store_is_a_fault() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let store = SqliteStore::open(dir.path().join("replay.db"))
            .await
            .expect("opens");
        store.close().await;
        let outcome = store.first_use("x", token::now() + 60).await;
        assert!(
            outcome
                .as_ref()
                .is_err_and(|e| e.reason().starts_with("SQLite:")),
            "{outcome:?}"
        );
    }
}
