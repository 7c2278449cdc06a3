//! [`PgStore`] as a [`SessionStore`]: the records of legacy sessions, one row of
//! `presa_sessions` each, in the database that keeps the tasks, so every replica serves
//! every session.
//!
//! The table is its own component in `presa_migrations` (`sessions`), migrated at
//! connect time in the tasks' transaction, under the same advisory lock. The
//! capabilities and the client info are JSON text (kept as the client sent them), the
//! subscriptions a `text[]` changed in place by one statement each (so changes made on
//! two replicas at once both hold). A touch is one `UPDATE … RETURNING`: it moves the
//! last use, or ends the session when it finds it expired, under the row's lock. An
//! ended session's row stays until the pruning removes it. Every wait is bounded as the
//! tasks' statements are; a fault is a [`SessionStoreError`], never a session that ended.

use super::super::rows::instant;
use super::{PgStore, timeout};
use crate::mrtr::token::PRUNE_BATCH;
use crate::session::{SessionFuture, SessionRecord, SessionStore, SessionStoreError};
use crate::wire::meta::LogLevel;
use serde_json::{Map, Value};
use sqlx::Row;
use sqlx::postgres::PgRow;

/// The schema of the session records, one entry per version, as the tasks' `MIGRATIONS`.
pub(super) const MIGRATIONS: &[&[&str]] = &[&[
    "CREATE TABLE presa_sessions (
        id text PRIMARY KEY,
        -- The id of the principal that opened the session; NULL: none.
        owner text,
        version text NOT NULL,
        -- JSON text, as the client sent them.
        capabilities text NOT NULL,
        client_info text NOT NULL,
        -- NULL: never set.
        log_level text,
        subscriptions text[] NOT NULL DEFAULT '{}',
        -- Unix milliseconds.
        created_at bigint NOT NULL,
        last_used bigint NOT NULL,
        ended boolean NOT NULL DEFAULT false
    )",
    "CREATE INDEX presa_sessions_by_use ON presa_sessions (last_used)",
]];

/// The session records' row in `presa_migrations`.
pub(super) const COMPONENT: &str = "sessions";

/// A store fault as the session layer reports it.
fn fault(e: super::StoreError) -> SessionStoreError {
    SessionStoreError::new(e.to_string())
}

impl PgStore {
    /// Runs `query` on a connection of the pool, within the store's bounds: the rows it
    /// touched.
    async fn execute_bounded(
        &self,
        query: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> Result<u64, SessionStoreError> {
        let mut conn = self.connection().await.map_err(fault)?;
        let answer = timeout(self.answer_within, query.execute(&mut *conn)).await;
        Ok(self
            .answered(&mut conn, answer)
            .map_err(fault)?
            .map_err(|e| fault(self.unavailable(&e)))?
            .rows_affected())
    }
}

/// A row of `presa_sessions` (its columns after `ended`, in the order `touch` returns
/// them) as a record.
fn record_of(id: &str, row: &PgRow) -> Result<SessionRecord, sqlx::Error> {
    let json = |text: String| -> Result<Value, sqlx::Error> {
        serde_json::from_str(&text).map_err(|e| sqlx::Error::Decode(Box::new(e)))
    };
    let capabilities = match json(row.try_get(2)?)? {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let level: Option<String> = row.try_get(4)?;
    let created: i64 = row.try_get(6)?;
    let used: i64 = row.try_get(7)?;
    let mut record = SessionRecord::new(
        id,
        row.try_get::<Option<String>, _>(0)?,
        row.try_get::<String, _>(1)?,
        capabilities,
        json(row.try_get(3)?)?,
        u64::try_from(created).unwrap_or_default(),
    );
    record.log_level = level.as_deref().and_then(LogLevel::parse);
    record.subscriptions = row.try_get(5)?;
    record.last_used_ms = u64::try_from(used).unwrap_or_default();
    Ok(record)
}

impl SessionStore for PgStore {
    fn create<'a>(&'a self, record: &'a SessionRecord) -> SessionFuture<'a, ()> {
        Box::pin(async move {
            let capabilities = Value::Object(record.capabilities.clone()).to_string();
            let query = sqlx::query(
                "INSERT INTO presa_sessions
                 (id, owner, version, capabilities, client_info, log_level, subscriptions,
                  created_at, last_used)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(&record.id)
            .bind(record.owner.as_deref())
            .bind(&record.version)
            .bind(capabilities)
            .bind(record.client_info.to_string())
            .bind(record.log_level.map(LogLevel::as_str))
            .bind(&record.subscriptions)
            .bind(instant(record.created_ms))
            .bind(instant(record.last_used_ms));
            self.execute_bounded(query).await.map(|_| ())
        })
    }

    fn touch<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
        idle_ms: u64,
    ) -> SessionFuture<'a, Option<SessionRecord>> {
        Box::pin(async move {
            let mut conn = self.connection().await.map_err(fault)?;
            // Every expression of SET reads the row as it was.
            let query = sqlx::query(
                "UPDATE presa_sessions SET
                   ended = last_used < $3,
                   last_used = CASE WHEN last_used < $3 THEN last_used
                                    ELSE GREATEST(last_used, $2) END
                 WHERE id = $1 AND NOT ended
                 RETURNING owner, version, capabilities, client_info, log_level,
                           subscriptions, created_at, last_used, ended",
            )
            .bind(id)
            .bind(instant(now_ms))
            .bind(instant(now_ms.saturating_sub(idle_ms)));
            let answer = timeout(self.answer_within, query.fetch_optional(&mut *conn)).await;
            let row = self
                .answered(&mut conn, answer)
                .map_err(fault)?
                .map_err(|e| fault(self.unavailable(&e)))?;
            let Some(row) = row else { return Ok(None) };
            let ended: bool = row.try_get(8).map_err(|e| fault(self.unavailable(&e)))?;
            if ended {
                return Ok(None);
            }
            record_of(id, &row)
                .map(Some)
                .map_err(|e| fault(self.unavailable(&e)))
        })
    }

    fn load<'a>(&'a self, id: &'a str) -> SessionFuture<'a, Option<SessionRecord>> {
        Box::pin(async move {
            let mut conn = self.connection().await.map_err(fault)?;
            let query = sqlx::query(
                "SELECT owner, version, capabilities, client_info, log_level,
                        subscriptions, created_at, last_used
                 FROM presa_sessions WHERE id = $1 AND NOT ended",
            )
            .bind(id);
            let answer = timeout(self.answer_within, query.fetch_optional(&mut *conn)).await;
            let row = self
                .answered(&mut conn, answer)
                .map_err(fault)?
                .map_err(|e| fault(self.unavailable(&e)))?;
            row.map(|row| record_of(id, &row))
                .transpose()
                .map_err(|e| fault(self.unavailable(&e)))
        })
    }

    fn set_log_level<'a>(&'a self, id: &'a str, level: LogLevel) -> SessionFuture<'a, bool> {
        Box::pin(async move {
            let query =
                sqlx::query("UPDATE presa_sessions SET log_level = $2 WHERE id = $1 AND NOT ended")
                    .bind(id)
                    .bind(level.as_str());
            self.execute_bounded(query).await.map(|n| n == 1)
        })
    }

    fn subscribe<'a>(&'a self, id: &'a str, uri: &'a str, on: bool) -> SessionFuture<'a, bool> {
        Box::pin(async move {
            let statement = if on {
                "UPDATE presa_sessions SET subscriptions = CASE
                   WHEN $2 = ANY(subscriptions) THEN subscriptions
                   ELSE array_append(subscriptions, $2) END
                 WHERE id = $1 AND NOT ended"
            } else {
                "UPDATE presa_sessions SET subscriptions = array_remove(subscriptions, $2)
                 WHERE id = $1 AND NOT ended"
            };
            let query = sqlx::query(statement).bind(id).bind(uri);
            self.execute_bounded(query).await.map(|n| n == 1)
        })
    }

    fn end<'a>(&'a self, id: &'a str) -> SessionFuture<'a, bool> {
        Box::pin(async move {
            let query =
                sqlx::query("UPDATE presa_sessions SET ended = true WHERE id = $1 AND NOT ended")
                    .bind(id);
            self.execute_bounded(query).await.map(|n| n == 1)
        })
    }

    fn remove_stale(&self, before_ms: u64) -> SessionFuture<'_, usize> {
        Box::pin(async move {
            let query = sqlx::query(
                "DELETE FROM presa_sessions WHERE id IN
                 (SELECT id FROM presa_sessions WHERE ended OR last_used < $1 LIMIT $2)",
            )
            .bind(instant(before_ms))
            .bind(PRUNE_BATCH);
            self.execute_bounded(query)
                .await
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
        })
    }
}
