//! [`SqliteStore`]: tasks kept in a SQLite file, the durable store for a server on one
//! machine (feature `sqlite`). SQLite is compiled in; nothing needs installing.
//!
//! The file is in WAL mode (readers never wait for the writer) with `synchronous=FULL`
//! (a write that returned survives a power cut) and a busy timeout (a writer waits that
//! long for another one). Each task is one row: the columns presa queries by (the id, the
//! scope, the status, the creation and expiry times, the revision), indexed for `count`
//! and `remove_expired`, and the whole record as JSON. A compare-and-set is one `UPDATE`
//! conditioned on the revision, so it needs no transaction of its own.
//!
//! The schema is versioned by `PRAGMA user_version` and migrated when the file is opened,
//! inside one `BEGIN IMMEDIATE` transaction: the open takes the write lock, so it proves
//! the file writable and not held by another writer, and two processes opening one file
//! at once migrate it once.

use super::rows::{Columns, claimable_records, instant, parse, status_named};
use super::store::{StoreError, StoreFuture, TaskRecord, TaskStatus, TaskStore};
use sqlx::Row;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The schema, one entry per version: applying entry `n` takes a file from version `n`
/// to `n + 1`. Entries are never changed once released; a change is a new entry.
const MIGRATIONS: &[&[&str]] = &[
    &[
        "CREATE TABLE tasks (
        id TEXT PRIMARY KEY NOT NULL,
        scope TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        -- created_at + ttl_ms, at most i64::MAX; NULL: never expires.
        expires_at INTEGER,
        revision INTEGER NOT NULL,
        -- The whole TaskRecord, as JSON.
        record TEXT NOT NULL
    )",
        "CREATE INDEX tasks_by_expiry ON tasks (expires_at) WHERE expires_at IS NOT NULL",
        "CREATE INDEX tasks_by_scope ON tasks (scope, expires_at)",
    ],
    replay::MIGRATION,
    &[
        // When the lease of the run holding a task runs out (NULL: none holds it).
        "ALTER TABLE tasks ADD COLUMN lease_expires_at INTEGER",
        "CREATE INDEX tasks_claimable ON tasks (lease_expires_at) WHERE status = 'working'",
    ],
];

/// The schema version this build writes (and the newest it can read).
const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The busy timeout of [`SqliteStore::open`].
const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Most connections a store keeps open: reads go on in parallel, writes take turns.
const MAX_CONNECTIONS: u32 = 8;

/// A [`TaskStore`] in a SQLite file. Cheap to clone (clones share the connections).
#[derive(Clone, Debug)]
pub struct SqliteStore {
    pool: SqlitePool,
    path: PathBuf,
}

/// Why [`SqliteStore::open`] could not open a task database. Each names the file.
#[derive(Debug)]
#[non_exhaustive]
pub enum OpenError {
    /// Another connection held the write lock for longer than the busy timeout.
    Locked {
        /// The file.
        path: PathBuf,
        /// How long the open waited.
        waited: Duration,
    },
    /// The file cannot be created or written: its folder is missing or not a folder, the
    /// path is a folder, or the file or its file system is read-only.
    Unwritable {
        /// The file.
        path: PathBuf,
        /// What SQLite said.
        reason: String,
    },
    /// The file is not a SQLite database, or is damaged.
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What SQLite said.
        reason: String,
    },
    /// The file's schema is newer than this build knows: a newer presa wrote it.
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// The file's schema version.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// Anything else SQLite refused.
    Other {
        /// The file.
        path: PathBuf,
        /// What SQLite said.
        reason: String,
    },
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Locked { path, waited } => write!(
                f,
                "the task database {} is locked by another writer (waited {waited:?})",
                path.display()
            ),
            OpenError::Unwritable { path, reason } => write!(
                f,
                "the task database {} cannot be created or written: {reason}",
                path.display()
            ),
            OpenError::Corrupt { path, reason } => write!(
                f,
                "the task database {} is not a SQLite database or is damaged: {reason}",
                path.display()
            ),
            OpenError::NewerSchema { path, found, known } => write!(
                f,
                "the task database {} has schema version {found}, newer than this build's {known}: \
                 it was written by a newer presa",
                path.display()
            ),
            OpenError::Other { path, reason } => write!(
                f,
                "the task database {} could not be opened: {reason}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for OpenError {}

/// SQLite's primary result code of `error`, if it is SQLite's.
fn primary_code(error: &sqlx::Error) -> Option<i32> {
    let code = error.as_database_error()?.code()?;
    code.parse::<i32>().ok().map(|c| c & 0xff)
}

const SQLITE_BUSY: i32 = 5;
const SQLITE_LOCKED: i32 = 6;
const SQLITE_READONLY: i32 = 8;
const SQLITE_CORRUPT: i32 = 11;
const SQLITE_CANTOPEN: i32 = 14;
const SQLITE_NOTADB: i32 = 26;

impl OpenError {
    fn from_sqlx(path: &Path, waited: Duration, error: &sqlx::Error) -> OpenError {
        let path = path.to_owned();
        let reason = error.to_string();
        match primary_code(error) {
            Some(SQLITE_BUSY | SQLITE_LOCKED) => OpenError::Locked { path, waited },
            Some(SQLITE_READONLY | SQLITE_CANTOPEN) => OpenError::Unwritable { path, reason },
            Some(SQLITE_CORRUPT | SQLITE_NOTADB) => OpenError::Corrupt { path, reason },
            _ => OpenError::Other { path, reason },
        }
    }
}

impl SqliteStore {
    /// Opens the task database at `path`, creating it (and its schema) if it does not
    /// exist, with a busy timeout of 5 s. Its folder must exist.
    pub async fn open(path: impl AsRef<Path>) -> Result<SqliteStore, OpenError> {
        SqliteStore::open_with(path, DEFAULT_BUSY_TIMEOUT).await
    }

    /// [`open`](Self::open), with a writer waiting at most `busy_timeout` for another
    /// writer (at the open, and at every write after it).
    pub async fn open_with(
        path: impl AsRef<Path>,
        busy_timeout: Duration,
    ) -> Result<SqliteStore, OpenError> {
        let path = path.as_ref().to_owned();
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(busy_timeout);
        let failed = |e: sqlx::Error| OpenError::from_sqlx(&path, busy_timeout, &e);
        let pool = SqlitePoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            // Waiting for a connection is bounded like waiting for the lock, plus the
            // time a connection takes to open.
            .acquire_timeout(busy_timeout + Duration::from_secs(5))
            .connect_with(options)
            .await
            .map_err(failed)?;
        let migrated = migrate(&pool, &path, busy_timeout).await;
        if let Err(e) = migrated {
            pool.close().await;
            return Err(e);
        }
        Ok(SqliteStore { pool, path })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Closes every connection, waiting for the writes under way to finish. The store
    /// (and its clones) fail every call afterwards.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Brings the schema to [`SCHEMA_VERSION`] under the write lock.
async fn migrate(pool: &SqlitePool, path: &Path, waited: Duration) -> Result<(), OpenError> {
    let failed = |e: sqlx::Error| OpenError::from_sqlx(path, waited, &e);
    let mut conn = pool.acquire().await.map_err(failed)?;
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut *conn)
        .await
        .map_err(failed)?;
    let outcome = async {
        let found: i64 = sqlx::query_scalar("PRAGMA user_version")
            .fetch_one(&mut *conn)
            .await
            .map_err(failed)?;
        if found > SCHEMA_VERSION {
            return Err(OpenError::NewerSchema {
                path: path.to_owned(),
                found,
                known: SCHEMA_VERSION,
            });
        }
        let applied = usize::try_from(found).unwrap_or(0);
        for step in MIGRATIONS.iter().skip(applied) {
            for statement in *step {
                sqlx::query(statement)
                    .execute(&mut *conn)
                    .await
                    .map_err(failed)?;
            }
        }
        if found < SCHEMA_VERSION {
            // A pragma takes no bound parameters; the value is this build's constant.
            sqlx::query(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
                .execute(&mut *conn)
                .await
                .map_err(failed)?;
        }
        Ok(())
    }
    .await;
    let end = if outcome.is_ok() {
        "COMMIT"
    } else {
        "ROLLBACK"
    };
    let ended = sqlx::query(end).execute(&mut *conn).await;
    outcome?;
    ended.map(|_| ()).map_err(failed)
}

/// A fault of the database, as the store reports it.
fn unavailable(e: &sqlx::Error) -> StoreError {
    StoreError::Unavailable(format!("SQLite: {e}"))
}

impl TaskStore for SqliteStore {
    fn insert(&self, record: TaskRecord) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let c = Columns::of(&record)?;
            let inserted = sqlx::query(
                "INSERT INTO tasks
                 (id, scope, status, created_at, expires_at, revision, lease_expires_at, record)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(&record.id)
            .bind(c.scope)
            .bind(c.status)
            .bind(c.created_at)
            .bind(c.expires_at)
            .bind(c.revision)
            .bind(c.lease_expires_at)
            .bind(c.json)
            .execute(&self.pool)
            .await;
            match inserted {
                Ok(_) => Ok(()),
                Err(e)
                    if e.as_database_error()
                        .is_some_and(|d| d.is_unique_violation()) =>
                {
                    Err(StoreError::Duplicate)
                }
                Err(e) => Err(unavailable(&e)),
            }
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            let row = sqlx::query("SELECT record FROM tasks WHERE id = ?")
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err(|e| unavailable(&e))?;
            let Some(row) = row else { return Ok(None) };
            let json: String = row.try_get(0).map_err(|e| unavailable(&e))?;
            parse(&json).map(Some)
        })
    }

    fn status<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskStatus>> {
        Box::pin(async move {
            let status: Option<String> =
                sqlx::query_scalar("SELECT status FROM tasks WHERE id = ?")
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| unavailable(&e))?;
            status.as_deref().map(status_named).transpose()
        })
    }

    fn compare_and_set(
        &self,
        expected: u64,
        mut record: TaskRecord,
    ) -> StoreFuture<'_, TaskRecord> {
        Box::pin(async move {
            // No stored revision is past SQLite's integers, so none can match.
            let (Ok(expected_column), Some(next)) =
                (i64::try_from(expected), expected.checked_add(1))
            else {
                return Err(StoreError::Conflict);
            };
            record.revision = next;
            let c = Columns::of(&record)?;
            let updated = sqlx::query(
                "UPDATE tasks SET scope = ?, status = ?, created_at = ?, expires_at = ?,
                 revision = ?, lease_expires_at = ?, record = ? WHERE id = ? AND revision = ?",
            )
            .bind(c.scope)
            .bind(c.status)
            .bind(c.created_at)
            .bind(c.expires_at)
            .bind(c.revision)
            .bind(c.lease_expires_at)
            .bind(c.json)
            .bind(&record.id)
            .bind(expected_column)
            .execute(&self.pool)
            .await
            .map_err(|e| unavailable(&e))?;
            if updated.rows_affected() == 1 {
                Ok(record)
            } else {
                Err(StoreError::Conflict)
            }
        })
    }

    fn count<'a>(&'a self, scope: Option<&'a str>, now_ms: u64) -> StoreFuture<'a, usize> {
        Box::pin(async move {
            let now = instant(now_ms);
            let counted: i64 =
                match scope {
                    Some(scope) => {
                        sqlx::query_scalar(
                            "SELECT COUNT(*) FROM tasks
                         WHERE scope = ? AND (expires_at IS NULL OR expires_at >= ?)",
                        )
                        .bind(scope)
                        .bind(now)
                        .fetch_one(&self.pool)
                        .await
                    }
                    None => sqlx::query_scalar(
                        "SELECT COUNT(*) FROM tasks WHERE expires_at IS NULL OR expires_at >= ?",
                    )
                    .bind(now)
                    .fetch_one(&self.pool)
                    .await,
                }
                .map_err(|e| unavailable(&e))?;
            Ok(usize::try_from(counted).unwrap_or(0))
        })
    }

    fn remove_expired(&self, now_ms: u64) -> StoreFuture<'_, usize> {
        Box::pin(async move {
            let removed = sqlx::query("DELETE FROM tasks WHERE expires_at < ?")
                .bind(instant(now_ms))
                .execute(&self.pool)
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(usize::try_from(removed.rows_affected()).unwrap_or(usize::MAX))
        })
    }

    fn claimable(&self, now_ms: u64, limit: usize) -> StoreFuture<'_, Vec<TaskRecord>> {
        Box::pin(async move {
            let now = instant(now_ms);
            let records: Vec<String> = sqlx::query_scalar(
                "SELECT record FROM tasks WHERE status = 'working'
                 AND (lease_expires_at IS NULL OR lease_expires_at < ?)
                 AND (expires_at IS NULL OR expires_at >= ?)
                 ORDER BY COALESCE(lease_expires_at, 0) LIMIT ?",
            )
            .bind(now)
            .bind(now)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| unavailable(&e))?;
            Ok(claimable_records(&records))
        })
    }
}

mod replay;
#[cfg(test)]
mod tests;
