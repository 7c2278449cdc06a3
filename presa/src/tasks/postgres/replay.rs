//! [`PgStore`] as a [`ReplayStore`]: the single-use request states spent on any replica,
//! one row of `presa_replay` each, in the database that keeps the tasks, so a state spent
//! on one replica is refused on all.
//!
//! The table is its own component in `presa_migrations` (`replay`), migrated at connect
//! time in the tasks' transaction, under the same advisory lock. A first use is one
//! `INSERT … ON CONFLICT … DO UPDATE … WHERE` the row there has expired: PostgreSQL
//! decides a conflict under the row's lock, so of concurrent uses of one id on any
//! replicas exactly one writes a row, and the rows written say which. Expired rows are
//! dropped a bounded batch at a time, after one use in 64. Every wait is bounded as the
//! tasks' statements are; a fault is a [`ReplayError`], never a first use.

use super::super::rows::instant;
use super::{PgStore, timeout};
use crate::mrtr::token::{self, PRUNE_BATCH, ReplayError, ReplayFuture, ReplayStore};

/// The schema of the replay record, one entry per version, as the tasks' `MIGRATIONS`.
pub(super) const MIGRATIONS: &[&[&str]] = &[&[
    "CREATE TABLE presa_replay (
        id text PRIMARY KEY,
        -- Unix seconds; the record holds until then.
        expires_at bigint NOT NULL
    )",
    "CREATE INDEX presa_replay_by_expiry ON presa_replay (expires_at)",
]];

/// The replay record's row in `presa_migrations`.
pub(super) const COMPONENT: &str = "replay";

impl ReplayStore for PgStore {
    fn first_use<'a>(&'a self, id: &'a str, expires_at: u64) -> ReplayFuture<'a> {
        Box::pin(async move {
            let fault = |e: super::StoreError| ReplayError::new(e.to_string());
            let mut conn = self.connection().await.map_err(fault)?;
            let now = instant(token::now());
            let query = sqlx::query(
                "INSERT INTO presa_replay (id, expires_at) VALUES ($1, $2)
                 ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at
                 WHERE presa_replay.expires_at < $3",
            )
            .bind(id)
            .bind(instant(expires_at))
            .bind(now);
            let answer = timeout(self.answer_within, query.execute(&mut *conn)).await;
            let written = self
                .answered(&mut conn, answer)
                .map_err(fault)?
                .map_err(|e| fault(self.unavailable(&e)))?
                .rows_affected();
            if token::prunes_after(id) {
                let query = sqlx::query(
                    "DELETE FROM presa_replay WHERE id IN
                     (SELECT id FROM presa_replay WHERE expires_at < $1 LIMIT $2)",
                )
                .bind(now)
                .bind(PRUNE_BATCH);
                let answer = timeout(self.answer_within, query.execute(&mut *conn)).await;
                // The use is recorded already; a failed pruning is retried by a later one.
                match self.answered(&mut conn, answer) {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => {
                        tracing::warn!("expired replay records could not be dropped: {e}")
                    }
                    Err(e) => tracing::warn!("expired replay records could not be dropped: {e}"),
                }
            }
            Ok(written == 1)
        })
    }
}
