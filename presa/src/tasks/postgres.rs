//! [`PgStore`]: tasks kept in a PostgreSQL database, the store several replicas of a
//! server share (feature `postgres`). Any replica answers for any task; a task's work
//! runs in the replica that holds its lease (the one that created it, or the one that
//! claimed it after that one stopped renewing the lease).
//!
//! Each task is one row of `presa_tasks`, laid out like the SQLite store's: the columns
//! presa queries by (the id, the scope, the status, the creation and expiry times, the
//! revision), indexed for `count` and `remove_expired`, and the whole record as JSON text
//! (kept byte for byte, where `jsonb` would rewrite numbers and key order). A
//! compare-and-set is one `UPDATE … WHERE id = $1 AND revision = $2`; the rows it touched
//! say whether it won.
//!
//! The same database keeps the record of spent request states (`replay`), the fan-out's
//! long events (`events`) and the records of legacy sessions (`sessions`, the store's
//! side of [`SessionStore`](crate::session::SessionStore)), each a component of its own.
//!
//! The schema is versioned in `presa_migrations` (one row per component; this store's is
//! `tasks`) and migrated at connect time inside one transaction that first takes a
//! transaction-scoped advisory lock, so replicas starting at once migrate once and the
//! others find the work done. A database whose recorded version is newer than this build
//! knows is refused, and left as it is.
//!
//! Every wait is bounded: taking a connection from the pool (opening one included) by
//! the acquire timeout, every statement by the server's `statement_timeout`, set on each
//! connection as it opens, and the wait for its answer by that timeout and one second
//! more, for a server that cannot keep its own bound (stopped, or behind a network that
//! drops packets; the connection is then closed). A store call that meets any of them,
//! or any other fault of the driver, is [`StoreError::Unavailable`]; only a unique
//! violation at insert is [`StoreError::Duplicate`].
//!
//! The store pushes changes ([`TaskStore::changes`]): every insert and compare-and-set
//! notifies a channel named after the schema, in the same statement, and one listener
//! per store fans the notifications out in the process (see `feed`).
//!
//! The connection is plain: this build of the driver has no TLS, so a URL asking for it
//! (`sslmode=require` or stricter) is refused at connect time. Reach the database on the
//! same host or over a private network.

use super::rows::{Columns, claimable_records, instant, parse, status_named};
use super::store::{ChangeFeed, StoreError, StoreFuture, TaskRecord, TaskStatus, TaskStore};
use feed::Feed;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, Postgres};
use sqlx::{Connection, Row};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::timeout;

/// The schema, one entry per version: applying entry `n` takes a database from version
/// `n` to `n + 1`. Entries are never changed once released; a change is a new entry.
const MIGRATIONS: &[&[&str]] = &[
    &[
        "CREATE TABLE presa_tasks (
        id text PRIMARY KEY,
        scope text NOT NULL,
        status text NOT NULL,
        created_at bigint NOT NULL,
        -- created_at + ttl_ms, at most i64::MAX; NULL: never expires.
        expires_at bigint,
        revision bigint NOT NULL,
        -- The whole TaskRecord, as JSON.
        record text NOT NULL
    )",
        "CREATE INDEX presa_tasks_by_expiry ON presa_tasks (expires_at) WHERE expires_at IS NOT NULL",
        "CREATE INDEX presa_tasks_by_scope ON presa_tasks (scope, expires_at)",
    ],
    &[
        // When the lease of the run holding a task runs out (NULL: none holds it).
        "ALTER TABLE presa_tasks ADD COLUMN lease_expires_at bigint",
        "CREATE INDEX presa_tasks_claimable ON presa_tasks (lease_expires_at) WHERE status = 'working'",
    ],
];

/// The schema version this build writes (and the newest it can read): one per entry of
/// [`MIGRATIONS`], as `migrate_component` counts them.
#[cfg(test)]
const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// This store's row in `presa_migrations`.
const COMPONENT: &str = "tasks";

/// The advisory lock the migration holds for its transaction: one key for every presa
/// schema in a database (the bytes of "presa" and a 1), so migrations never run at once.
const MIGRATION_LOCK: i64 = 0x7072_6573_6100_0001;

/// The default of [`PgStoreBuilder::max_connections`].
const DEFAULT_MAX_CONNECTIONS: u32 = 16;
/// The default of [`PgStoreBuilder::acquire_timeout`].
const DEFAULT_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);
/// The default of [`PgStoreBuilder::statement_timeout`].
const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest statement timeout PostgreSQL takes, in milliseconds: its int, 2^31 − 1.
const MAX_STATEMENT_TIMEOUT_MS: u64 = i32::MAX as u64;
/// How much longer than the statement timeout a statement's answer is awaited before the
/// server is taken for silent (stopped, or cut off by a network that drops packets): the
/// statement timeout is the server's own bound, this one holds when the server cannot
/// keep it.
const GRACE: Duration = Duration::from_secs(1);
/// The longest schema name PostgreSQL keeps whole (`NAMEDATALEN` − 1 bytes).
const MAX_SCHEMA_BYTES: usize = 63;

/// A [`TaskStore`] in a PostgreSQL database. Cheap to clone (clones share the pool).
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    acquire_timeout: Duration,
    /// How long a statement's answer is awaited: the statement timeout and [`GRACE`].
    answer_within: Duration,
    /// The change feed: its channel, and its listener once subscribed.
    feed: Arc<Feed>,
    /// How connections are made (for a fan-out's listener), and the schema. Shared, so
    /// the store stays small to move and clone.
    options: Arc<PgConnectOptions>,
    schema: Option<String>,
}

/// Shows the settings, never the URL (it may hold a password).
impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("connections", &self.pool.size())
            .field("acquire_timeout", &self.acquire_timeout)
            .field("answer_within", &self.answer_within)
            .finish_non_exhaustive()
    }
}

/// The settings of a [`PgStore`], then [`connect`](PgStoreBuilder::connect).
#[derive(Clone)]
pub struct PgStoreBuilder {
    url: String,
    max_connections: u32,
    acquire_timeout: Duration,
    statement_timeout: Duration,
    schema: Option<String>,
}

/// Shows the settings, never the URL (it may hold a password).
impl std::fmt::Debug for PgStoreBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStoreBuilder")
            .field("max_connections", &self.max_connections)
            .field("acquire_timeout", &self.acquire_timeout)
            .field("statement_timeout", &self.statement_timeout)
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

/// Why [`PgStore::connect`] could not give a store.
#[derive(Debug)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL is not a PostgreSQL connection URL the driver reads.
    InvalidUrl {
        /// What the driver said.
        reason: String,
    },
    /// The schema name is not a lowercase SQL identifier (`[a-z_][a-z0-9_]*`, at most 63
    /// bytes).
    InvalidSchema {
        /// The name given.
        name: String,
    },
    /// No connection could be opened within the acquire timeout: the server is down or
    /// unreachable.
    Unreachable {
        /// How long the connect waited.
        waited: Duration,
        /// What the driver said.
        reason: String,
    },
    /// The database's schema is newer than this build knows: a newer presa migrated it.
    NewerSchema {
        /// The database's schema version.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// Anything else the server or the driver refused: authentication, a missing
    /// database, a missing privilege, TLS asked of this plain build.
    Other {
        /// What the driver said.
        reason: String,
    },
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::InvalidUrl { reason } => {
                write!(f, "the PostgreSQL URL is invalid: {reason}")
            }
            ConnectError::InvalidSchema { name } => write!(
                f,
                "the schema name {name:?} is not a lowercase identifier ([a-z_][a-z0-9_]*, \
                 at most {MAX_SCHEMA_BYTES} bytes)"
            ),
            ConnectError::Unreachable { waited, reason } => write!(
                f,
                "the task database could not be reached within {waited:?}: {reason}"
            ),
            ConnectError::NewerSchema { found, known } => write!(
                f,
                "the task database has schema version {found}, newer than this build's \
                 {known}: it was migrated by a newer presa"
            ),
            ConnectError::Other { reason } => {
                write!(f, "the task database refused the connection: {reason}")
            }
        }
    }
}

impl std::error::Error for ConnectError {}

impl ConnectError {
    fn from_sqlx(waited: Duration, error: sqlx::Error) -> ConnectError {
        let reason = error.to_string();
        match error {
            sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) => {
                ConnectError::Unreachable { waited, reason }
            }
            _ => ConnectError::Other { reason },
        }
    }
}

impl PgStoreBuilder {
    /// At most `n` connections open at once (default 16; at least 1, so 0 is 1). A call finding them all busy waits for one, up to the
    /// acquire timeout. Count every replica's pool against the server's
    /// `max_connections`.
    pub fn max_connections(mut self, n: u32) -> PgStoreBuilder {
        self.max_connections = n.max(1);
        self
    }

    /// How long a call waits for a connection, opening one included (default 5 s); past it the call is [`StoreError::Unavailable`] (and
    /// [`connect`](Self::connect) is [`ConnectError::Unreachable`]). A server that refuses
    /// connections is tried again until then, so a restart shorter than it goes unseen.
    pub fn acquire_timeout(mut self, timeout: Duration) -> PgStoreBuilder {
        self.acquire_timeout = timeout;
        self
    }

    /// How long the server lets one statement run, waiting for locks included (default
    /// 5 s): PostgreSQL's `statement_timeout`, set on every connection, in whole
    /// milliseconds rounded up, from 1 ms (0 would turn it off) to 2^31 − 1 ms (its
    /// largest; about 24.8 days). Past it the statement is cancelled and the call is
    /// [`StoreError::Unavailable`].
    pub fn statement_timeout(mut self, timeout: Duration) -> PgStoreBuilder {
        self.statement_timeout = timeout;
        self
    }

    /// Keeps the tables in this PostgreSQL schema (created if missing) rather than the
    /// first of the connection's `search_path` (`public` by default): several stores, or
    /// several applications, can then share one database. A lowercase identifier,
    /// checked at [`connect`](Self::connect).
    pub fn schema(mut self, name: impl Into<String>) -> PgStoreBuilder {
        self.schema = Some(name.into());
        self
    }

    /// The statement timeout in whole milliseconds, as the server is given it.
    fn statement_timeout_ms(&self) -> u64 {
        let ms = self.statement_timeout.as_nanos().div_ceil(1_000_000);
        u64::try_from(ms)
            .unwrap_or(u64::MAX)
            .clamp(1, MAX_STATEMENT_TIMEOUT_MS)
    }

    /// Opens the pool (one connection, to prove the database reachable) and brings the
    /// schema up to date.
    pub async fn connect(self) -> Result<PgStore, ConnectError> {
        if let Some(name) = &self.schema
            && !is_identifier(name)
        {
            return Err(ConnectError::InvalidSchema { name: name.clone() });
        }
        let mut options = PgConnectOptions::from_str(&self.url)
            .map_err(|e| ConnectError::InvalidUrl {
                reason: e.to_string(),
            })?
            .application_name("presa");
        let mut settings = vec![("statement_timeout", self.statement_timeout_ms().to_string())];
        if let Some(schema) = &self.schema {
            settings.push(("search_path", schema.clone()));
        }
        options = options.options(settings);
        let answer_within = Duration::from_millis(self.statement_timeout_ms()) + GRACE;
        let feed = Feed::new(
            options.clone(),
            feed::channel(feed::TASKS, self.schema.as_deref()),
            self.acquire_timeout,
            answer_within,
        );
        let waited = self.acquire_timeout;
        let pool = PgPoolOptions::new()
            .max_connections(self.max_connections)
            .acquire_timeout(self.acquire_timeout)
            .connect_with(options.clone())
            .await
            .map_err(|e| ConnectError::from_sqlx(waited, e))?;
        if let Err(e) = migrate(&pool, self.schema.as_deref(), waited).await {
            pool.close().await;
            return Err(e);
        }
        Ok(PgStore {
            pool,
            acquire_timeout: self.acquire_timeout,
            answer_within,
            feed,
            options: Arc::new(options),
            schema: self.schema,
        })
    }
}

/// Whether `name` is a lowercase SQL identifier PostgreSQL keeps whole, safe to write
/// between double quotes.
fn is_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    let first_ok = bytes
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b == b'_');
    first_ok
        && name.len() <= MAX_SCHEMA_BYTES
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/database`)
    /// with the default settings, creating the schema or bringing it up to date.
    pub async fn connect(url: &str) -> Result<PgStore, ConnectError> {
        PgStore::builder(url).connect().await
    }

    /// A store on the database at `url`, with settings to choose before
    /// [`connect`](PgStoreBuilder::connect).
    pub fn builder(url: impl Into<String>) -> PgStoreBuilder {
        PgStoreBuilder {
            url: url.into(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            acquire_timeout: DEFAULT_ACQUIRE_TIMEOUT,
            statement_timeout: DEFAULT_STATEMENT_TIMEOUT,
            schema: None,
        }
    }

    /// Closes every connection, waiting for the calls under way to finish. The store (and
    /// its clones) fail every call afterwards.
    pub async fn close(&self) {
        self.feed.close().await;
        self.pool.close().await;
    }

    /// A fault of the driver, as the store reports it.
    fn unavailable(&self, e: &sqlx::Error) -> StoreError {
        match e {
            sqlx::Error::PoolTimedOut => StoreError::Unavailable(format!(
                "PostgreSQL: no connection within {:?}",
                self.acquire_timeout
            )),
            _ => StoreError::Unavailable(format!("PostgreSQL: {e}")),
        }
    }

    /// A connection of the pool, within the acquire timeout.
    async fn connection(&self) -> Result<PoolConnection<Postgres>, StoreError> {
        self.pool.acquire().await.map_err(|e| self.unavailable(&e))
    }

    /// The answer of a statement run on `conn` under `tokio::time::timeout(answer_within)`:
    /// past it the server is silent, and the connection, which may yet receive the
    /// answer, is closed rather than given back to the pool.
    fn answered<T>(
        &self,
        conn: &mut PoolConnection<Postgres>,
        answer: Result<Result<T, sqlx::Error>, tokio::time::error::Elapsed>,
    ) -> Result<Result<T, sqlx::Error>, StoreError> {
        answer.map_err(|_| {
            conn.close_on_drop();
            StoreError::Unavailable(format!(
                "PostgreSQL: no answer within {:?}",
                self.answer_within
            ))
        })
    }
}

/// Brings every component's tables up to date, in one transaction under the advisory lock.
async fn migrate(
    pool: &PgPool,
    schema: Option<&str>,
    waited: Duration,
) -> Result<(), ConnectError> {
    let failed = |e: sqlx::Error| ConnectError::from_sqlx(waited, e);
    let mut conn = pool.acquire().await.map_err(failed)?;
    let mut tx = conn.begin().await.map_err(failed)?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(MIGRATION_LOCK)
        .execute(&mut *tx)
        .await
        .map_err(failed)?;
    if let Some(schema) = schema {
        // Checked by `is_identifier`: quoting it is enough.
        sqlx::query(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
    }
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS presa_migrations (
            component text PRIMARY KEY,
            version bigint NOT NULL
        )",
    )
    .execute(&mut *tx)
    .await
    .map_err(failed)?;
    migrate_component(&mut tx, COMPONENT, MIGRATIONS, &failed).await?;
    migrate_component(&mut tx, replay::COMPONENT, replay::MIGRATIONS, &failed).await?;
    migrate_component(&mut tx, fanout::COMPONENT, fanout::MIGRATIONS, &failed).await?;
    migrate_component(&mut tx, sessions::COMPONENT, sessions::MIGRATIONS, &failed).await?;
    tx.commit().await.map_err(failed)
}

/// Brings one component's tables up to date inside the connect's migration transaction
/// (which holds the advisory lock and has made `presa_migrations`): entry `n` of
/// `migrations` takes the component from version `n` to `n + 1`, and a version past the
/// last entry is refused (the transaction is then rolled back, changing nothing).
async fn migrate_component(
    tx: &mut sqlx::Transaction<'_, Postgres>,
    component: &str,
    migrations: &[&[&str]],
    failed: &impl Fn(sqlx::Error) -> ConnectError,
) -> Result<(), ConnectError> {
    let known = i64::try_from(migrations.len()).unwrap_or(i64::MAX);
    let found: Option<i64> =
        sqlx::query_scalar("SELECT version FROM presa_migrations WHERE component = $1")
            .bind(component)
            .fetch_optional(&mut **tx)
            .await
            .map_err(failed)?;
    let found = found.unwrap_or(0);
    if found > known {
        return Err(ConnectError::NewerSchema { found, known });
    }
    let applied = usize::try_from(found).unwrap_or(0);
    for step in migrations.iter().skip(applied) {
        for statement in *step {
            sqlx::query(statement)
                .execute(&mut **tx)
                .await
                .map_err(failed)?;
        }
    }
    if found < known {
        sqlx::query(
            "INSERT INTO presa_migrations (component, version) VALUES ($1, $2)
             ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version",
        )
        .bind(component)
        .bind(known)
        .execute(&mut **tx)
        .await
        .map_err(failed)?;
    }
    Ok(())
}

/// Each call takes a connection within the acquire timeout and awaits its statement's
/// answer at most the statement timeout and one second more.
impl TaskStore for PgStore {
    fn insert(&self, record: TaskRecord) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let c = Columns::of(&record)?;
            let mut conn = self.connection().await?;
            // The notification is sent when, and only if, the insert commits.
            let query = sqlx::query(
                "WITH inserted AS (
                     INSERT INTO presa_tasks
                     (id, scope, status, created_at, expires_at, revision, record,
                      lease_expires_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $9) RETURNING id
                 )
                 SELECT pg_notify($8, id) FROM inserted",
            )
            .bind(&record.id)
            .bind(c.scope)
            .bind(c.status)
            .bind(c.created_at)
            .bind(c.expires_at)
            .bind(c.revision)
            .bind(c.json)
            .bind(self.feed.channel())
            .bind(c.lease_expires_at);
            let answer = timeout(self.answer_within, query.execute(&mut *conn)).await;
            match self.answered(&mut conn, answer)? {
                Ok(_) => Ok(()),
                Err(e)
                    if e.as_database_error()
                        .is_some_and(|d| d.is_unique_violation()) =>
                {
                    Err(StoreError::Duplicate)
                }
                Err(e) => Err(self.unavailable(&e)),
            }
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            let mut conn = self.connection().await?;
            let query = sqlx::query("SELECT record FROM presa_tasks WHERE id = $1").bind(id);
            let answer = timeout(self.answer_within, query.fetch_optional(&mut *conn)).await;
            let row = self
                .answered(&mut conn, answer)?
                .map_err(|e| self.unavailable(&e))?;
            let Some(row) = row else { return Ok(None) };
            let json: String = row.try_get(0).map_err(|e| self.unavailable(&e))?;
            parse(&json).map(Some)
        })
    }

    fn status<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskStatus>> {
        Box::pin(async move {
            let mut conn = self.connection().await?;
            let query =
                sqlx::query_scalar::<_, String>("SELECT status FROM presa_tasks WHERE id = $1")
                    .bind(id);
            let answer = timeout(self.answer_within, query.fetch_optional(&mut *conn)).await;
            let status = self
                .answered(&mut conn, answer)?
                .map_err(|e| self.unavailable(&e))?;
            status.as_deref().map(status_named).transpose()
        })
    }

    fn compare_and_set(
        &self,
        expected: u64,
        mut record: TaskRecord,
    ) -> StoreFuture<'_, TaskRecord> {
        Box::pin(async move {
            // No stored revision is past bigint, so none can match.
            let (Ok(expected_column), Some(next)) =
                (i64::try_from(expected), expected.checked_add(1))
            else {
                return Err(StoreError::Conflict);
            };
            record.revision = next;
            let c = Columns::of(&record)?;
            let mut conn = self.connection().await?;
            // One row back (and one notification, at commit) when the update won.
            let query = sqlx::query(
                "WITH updated AS (
                     UPDATE presa_tasks SET scope = $1, status = $2, created_at = $3,
                     expires_at = $4, revision = $5, record = $6, lease_expires_at = $10
                     WHERE id = $7 AND revision = $8 RETURNING id
                 )
                 SELECT pg_notify($9, id) FROM updated",
            )
            .bind(c.scope)
            .bind(c.status)
            .bind(c.created_at)
            .bind(c.expires_at)
            .bind(c.revision)
            .bind(c.json)
            .bind(&record.id)
            .bind(expected_column)
            .bind(self.feed.channel())
            .bind(c.lease_expires_at);
            let answer = timeout(self.answer_within, query.execute(&mut *conn)).await;
            let updated = self
                .answered(&mut conn, answer)?
                .map_err(|e| self.unavailable(&e))?;
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
            let query = match scope {
                Some(scope) => sqlx::query_scalar::<_, i64>(
                    "SELECT COUNT(*) FROM presa_tasks
                     WHERE scope = $1 AND (expires_at IS NULL OR expires_at >= $2)",
                )
                .bind(scope)
                .bind(now),
                None => sqlx::query_scalar::<_, i64>(
                    "SELECT COUNT(*) FROM presa_tasks
                     WHERE expires_at IS NULL OR expires_at >= $1",
                )
                .bind(now),
            };
            let mut conn = self.connection().await?;
            let answer = timeout(self.answer_within, query.fetch_one(&mut *conn)).await;
            let counted = self
                .answered(&mut conn, answer)?
                .map_err(|e| self.unavailable(&e))?;
            Ok(usize::try_from(counted).unwrap_or(0))
        })
    }

    fn remove_expired(&self, now_ms: u64) -> StoreFuture<'_, usize> {
        Box::pin(async move {
            let mut conn = self.connection().await?;
            let query =
                sqlx::query("DELETE FROM presa_tasks WHERE expires_at < $1").bind(instant(now_ms));
            let answer = timeout(self.answer_within, query.execute(&mut *conn)).await;
            let removed = self
                .answered(&mut conn, answer)?
                .map_err(|e| self.unavailable(&e))?;
            Ok(usize::try_from(removed.rows_affected()).unwrap_or(usize::MAX))
        })
    }

    fn claimable(&self, now_ms: u64, limit: usize) -> StoreFuture<'_, Vec<TaskRecord>> {
        Box::pin(async move {
            let now = instant(now_ms);
            let query = sqlx::query_scalar::<_, String>(
                "SELECT record FROM presa_tasks WHERE status = 'working'
                 AND (lease_expires_at IS NULL OR lease_expires_at < $1)
                 AND (expires_at IS NULL OR expires_at >= $1)
                 ORDER BY COALESCE(lease_expires_at, 0) LIMIT $2",
            )
            .bind(now)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX));
            let mut conn = self.connection().await?;
            let answer = timeout(self.answer_within, query.fetch_all(&mut *conn)).await;
            let records = self
                .answered(&mut conn, answer)?
                .map_err(|e| self.unavailable(&e))?;
            Ok(claimable_records(&records))
        })
    }

    fn changes(&self) -> Option<ChangeFeed> {
        Some(self.feed.change_feed())
    }
}

mod fanout;
mod feed;
mod replay;
mod sessions;

pub use fanout::PgFanout;
#[cfg(test)]
mod tests;
