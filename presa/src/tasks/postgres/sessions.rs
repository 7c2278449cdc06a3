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
//!
//! The sessions' event buffers are two more tables of the component (its second
//! version): `presa_session_streams`, one row per stream (its writer, its last `seq`,
//! whether it ended), and `presa_session_events`, one row per event held, numbered in
//! the order they were added (`n`), which is the order the bounds let them go in. Both
//! go with their session's row (`ON DELETE CASCADE`), and an ended session's are
//! dropped when it ends (deleted, or found expired by a touch). An event is added by one
//! statement that makes the stream's row when it has none and checks its writer under
//! the row's lock; a second one, in the same transaction, then lets the session's oldest
//! events go past the bounds (a window over its rows, newest first; a bound past
//! `bigint` counts as its largest), and with them the rows of ended streams that hold no
//! event any more. Two of those at once on one session keep the bounds all the same: each
//! deletes only what is past them in what it sees, which a newer event only pushes
//! further past. A session's copy numbers count up in its row (`copies`).

use super::super::rows::instant;
use super::{PgStore, timeout};
use crate::mrtr::token::PRUNE_BATCH;
use crate::session::{
    EventBounds, SessionFuture, SessionRecord, SessionStore, SessionStoreError, StreamEvent,
    StreamRead,
};
use crate::wire::meta::LogLevel;
use serde_json::{Map, Value};
use sqlx::Row;
use sqlx::postgres::PgRow;

/// The schema of the session records, one entry per version, as the tasks' `MIGRATIONS`.
pub(super) const MIGRATIONS: &[&[&str]] = &[
    &[
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
    ],
    &[
        "ALTER TABLE presa_sessions ADD COLUMN copies bigint NOT NULL DEFAULT 0",
        "CREATE TABLE presa_session_streams (
        session text NOT NULL REFERENCES presa_sessions (id) ON DELETE CASCADE,
        stream bigint NOT NULL,
        -- The copy of the session that writes it.
        writer bigint NOT NULL,
        -- The seq of its last event written; 0 before any.
        last_seq bigint NOT NULL,
        ended boolean NOT NULL DEFAULT false,
        PRIMARY KEY (session, stream)
    )",
        "CREATE TABLE presa_session_events (
        -- The order events were added in, which is the order the bounds let them go.
        n bigserial PRIMARY KEY,
        session text NOT NULL,
        stream bigint NOT NULL,
        seq bigint NOT NULL,
        -- The serialized message.
        data text NOT NULL,
        -- The event's bytes as written on the wire, which the bounds count.
        bytes bigint NOT NULL,
        UNIQUE (session, stream, seq),
        FOREIGN KEY (session, stream) REFERENCES presa_session_streams (session, stream)
            ON DELETE CASCADE
    )",
        "CREATE INDEX presa_session_events_by_session ON presa_session_events (session, n)",
    ],
];

/// The session records' row in `presa_migrations`.
pub(super) const COMPONENT: &str = "sessions";

/// A store fault as the session layer reports it.
fn fault(e: super::StoreError) -> SessionStoreError {
    SessionStoreError::new(e.to_string())
}

impl PgStore {
    /// Runs `query` on a connection of the pool, within the store's bounds: the rows it
    /// returned.
    async fn fetch_bounded(
        &self,
        query: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> Result<Vec<PgRow>, SessionStoreError> {
        let mut conn = self.connection().await.map_err(fault)?;
        let answer = timeout(self.answer_within, query.fetch_all(&mut *conn)).await;
        self.answered(&mut conn, answer)
            .map_err(fault)?
            .map_err(|e| fault(self.unavailable(&e)))
    }

    /// Runs `query`, within the store's bounds: the first column of its first row, a
    /// count (`None` when it returned no row).
    async fn first_count(
        &self,
        query: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> Result<Option<u64>, SessionStoreError> {
        let rows = self.fetch_bounded(query).await?;
        rows.first()
            .map(|row| self.column::<i64>(row, 0).map(uint))
            .transpose()
    }

    /// Reads column `at` of `row`, a fault when it cannot.
    fn column<'r, T>(&self, row: &'r PgRow, at: usize) -> Result<T, SessionStoreError>
    where
        T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
    {
        row.try_get(at).map_err(|e| fault(self.unavailable(&e)))
    }

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

/// A number of the buffer's as PostgreSQL's `bigint`: a fault past its range.
fn int(n: u64) -> Result<i64, SessionStoreError> {
    i64::try_from(n).map_err(|_| SessionStoreError::new(format!("{n} is past PostgreSQL's bigint")))
}

/// A `bigint` read back as a number of the buffer's (never negative as written).
fn uint(n: i64) -> u64 {
    u64::try_from(n).unwrap_or_default()
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
            // Every expression of SET reads the row as it was; a session found expired
            // loses its streams (and their events with them) as `end` has it.
            let query = sqlx::query(
                "WITH touched AS (
                   UPDATE presa_sessions SET
                     ended = last_used < $3,
                     last_used = CASE WHEN last_used < $3 THEN last_used
                                      ELSE GREATEST(last_used, $2) END
                   WHERE id = $1 AND NOT ended
                   RETURNING owner, version, capabilities, client_info, log_level,
                             subscriptions, created_at, last_used, ended),
                 dropped AS (
                   DELETE FROM presa_session_streams
                   WHERE session = $1 AND EXISTS (SELECT 1 FROM touched WHERE touched.ended))
                 SELECT * FROM touched",
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
            // The streams' rows take their events with them.
            let query = sqlx::query(
                "WITH ended AS (
                   UPDATE presa_sessions SET ended = true WHERE id = $1 AND NOT ended
                   RETURNING id),
                 dropped AS (DELETE FROM presa_session_streams WHERE session = $1)
                 SELECT count(*) FROM ended",
            )
            .bind(id);
            let rows = self.fetch_bounded(query).await?;
            let ended: i64 = match rows.first() {
                Some(row) => self.column(row, 0)?,
                None => 0,
            };
            Ok(ended == 1)
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

    fn claim_copy<'a>(&'a self, id: &'a str) -> SessionFuture<'a, Option<u64>> {
        Box::pin(async move {
            let query = sqlx::query(
                "UPDATE presa_sessions SET copies = copies + 1 WHERE id = $1 AND NOT ended
                 RETURNING copies",
            )
            .bind(id);
            self.first_count(query).await
        })
    }

    fn append_event<'a>(
        &'a self,
        id: &'a str,
        writer: u64,
        event: &'a StreamEvent,
        bounds: EventBounds,
    ) -> SessionFuture<'a, bool> {
        Box::pin(async move {
            // Bounds past `bigint` hold as much as it counts: read before anything is
            // written, so an append that adds also trims.
            let most = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
            let (most_events, most_bytes) = (most(bounds.events), most(bounds.bytes));
            // The stream's row is made, or locked and its last seq moved when the writer
            // is its own, then the event added when the row says so.
            let add = sqlx::query(
                "WITH live AS (SELECT id FROM presa_sessions WHERE id = $1 AND NOT ended),
                 stream AS (
                   INSERT INTO presa_session_streams (session, stream, writer, last_seq)
                   SELECT id, $2, $3, $4 FROM live
                   ON CONFLICT (session, stream) DO UPDATE SET last_seq = CASE
                     WHEN presa_session_streams.writer = EXCLUDED.writer
                          AND NOT presa_session_streams.ended
                     THEN GREATEST(presa_session_streams.last_seq, EXCLUDED.last_seq)
                     ELSE presa_session_streams.last_seq END
                   RETURNING writer, ended)
                 INSERT INTO presa_session_events (session, stream, seq, data, bytes)
                 SELECT $1, $2, $4, $5, $6 FROM stream WHERE writer = $3 AND NOT ended
                 ON CONFLICT (session, stream, seq) DO NOTHING",
            )
            .bind(id)
            .bind(int(event.stream)?)
            .bind(int(writer)?)
            .bind(int(event.seq)?)
            .bind(&event.data)
            .bind(most(event.size()));
            let trim = sqlx::query(
                "WITH gone AS (
                   DELETE FROM presa_session_events WHERE n IN (
                     SELECT n FROM (
                       SELECT n, row_number() OVER newest AS k, sum(bytes) OVER newest AS b
                       FROM presa_session_events WHERE session = $1
                       WINDOW newest AS (ORDER BY n DESC)) t
                     WHERE k > 1 AND (k > $2 OR b > $3))
                   RETURNING n, stream)
                 DELETE FROM presa_session_streams s
                 WHERE s.session = $1 AND s.ended
                   AND s.stream IN (SELECT stream FROM gone)
                   AND NOT EXISTS (
                     SELECT 1 FROM presa_session_events e
                     WHERE e.session = $1 AND e.stream = s.stream
                       AND e.n NOT IN (SELECT n FROM gone))",
            )
            .bind(id)
            .bind(most_events)
            .bind(most_bytes);
            // One transaction: an event added is trimmed to the bounds, or not added.
            let mut conn = self.connection().await.map_err(fault)?;
            let work = async {
                let mut tx = sqlx::Connection::begin(&mut *conn).await?;
                if add.execute(&mut *tx).await?.rows_affected() != 1 {
                    tx.rollback().await?;
                    return Ok(false);
                }
                trim.execute(&mut *tx).await?;
                tx.commit().await?;
                Ok::<_, sqlx::Error>(true)
            };
            let answer = timeout(self.answer_within, work).await;
            self.answered(&mut conn, answer)
                .map_err(fault)?
                .map_err(|e| fault(self.unavailable(&e)))
        })
    }

    fn end_stream<'a>(&'a self, id: &'a str, stream: u64, writer: u64) -> SessionFuture<'a, bool> {
        Box::pin(async move {
            let query = sqlx::query(
                "UPDATE presa_session_streams SET ended = true
                 WHERE session = $1 AND stream = $2 AND writer = $3 AND NOT ended
                   AND EXISTS (SELECT 1 FROM presa_sessions WHERE id = $1 AND NOT ended)",
            )
            .bind(id)
            .bind(int(stream)?)
            .bind(int(writer)?);
            self.execute_bounded(query).await.map(|n| n == 1)
        })
    }

    fn take_stream<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        writer: u64,
    ) -> SessionFuture<'a, Option<u64>> {
        Box::pin(async move {
            let query = sqlx::query(
                "INSERT INTO presa_session_streams (session, stream, writer, last_seq)
                 SELECT id, $2, $3, 0 FROM presa_sessions WHERE id = $1 AND NOT ended
                 ON CONFLICT (session, stream) DO UPDATE SET writer = EXCLUDED.writer
                 RETURNING last_seq",
            )
            .bind(id)
            .bind(int(stream)?)
            .bind(int(writer)?);
            self.first_count(query).await
        })
    }

    fn read_stream<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        after: u64,
    ) -> SessionFuture<'a, Option<StreamRead>> {
        Box::pin(async move {
            // One row per event after `after`, or one with no event when there is none;
            // none at all when the stream is not there.
            let query = sqlx::query(
                "SELECT st.last_seq, st.ended,
                        EXISTS (SELECT 1 FROM presa_session_events h
                                WHERE h.session = st.session AND h.stream = st.stream),
                        e.seq, e.data
                 FROM presa_session_streams st
                 JOIN presa_sessions s ON s.id = st.session AND NOT s.ended
                 LEFT JOIN presa_session_events e
                   ON e.session = st.session AND e.stream = st.stream AND e.seq > $3
                 WHERE st.session = $1 AND st.stream = $2
                 ORDER BY e.seq",
            )
            .bind(id)
            .bind(int(stream)?)
            .bind(int(after)?);
            let rows = self.fetch_bounded(query).await?;
            let Some(first) = rows.first() else {
                return Ok(None);
            };
            let last_seq = uint(self.column(first, 0)?);
            let ended: bool = self.column(first, 1)?;
            let holds: bool = self.column(first, 2)?;
            if ended && !holds {
                return Ok(None);
            }
            let mut events = Vec::with_capacity(rows.len());
            for row in &rows {
                let seq: Option<i64> = self.column(row, 3)?;
                let data: Option<String> = self.column(row, 4)?;
                if let (Some(seq), Some(data)) = (seq, data) {
                    events.push(StreamEvent::new(stream, uint(seq), data));
                }
            }
            Ok(Some(StreamRead {
                events,
                last_seq,
                ended,
            }))
        })
    }
}
