//! Task records and where they are kept. The [`TaskStore`] trait is small and
//! compare-and-set based, with records that serialize whole (no request-context values in
//! them), so a durable store (SQLite for one machine, PostgreSQL for several replicas)
//! can implement it without changing the trait. Its methods are async and fallible, so a
//! networked store never blocks the runtime and a fault is reported, not hidden.
//! [`MemoryStore`] is the default.
//!
//! A store may also offer a [`ChangeFeed`]: word, pushed to every subscriber in the
//! process, that a task changed, so workers and listeners see a change made through
//! another replica at once rather than at their next poll. A store without one (the
//! default) is polled, as before.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// A task's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for input (answered with `tasks/update`).
    InputRequired,
    /// Finished with a result (which may be a tool error).
    Completed,
    /// Ended by a protocol error.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl TaskStatus {
    /// Whether the status is final (terminal statuses never change).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// The status with this wire name (the inverse of [`as_str`](Self::as_str)), for a
    /// store that keeps the status in a column of its own.
    pub fn from_wire(name: &str) -> Option<TaskStatus> {
        [
            TaskStatus::Working,
            TaskStatus::InputRequired,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

/// What a task runs, serializable so another process could pick the work up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WorkDescriptor {
    /// The tool's name.
    pub tool: String,
    /// The validated arguments.
    pub arguments: Map<String, Value>,
    /// The creating request's client capabilities: the task may only park on input
    /// kinds these declare.
    pub client_capabilities: Map<String, Value>,
    /// The creating request's protocol version.
    pub protocol_version: String,
    /// The creating request's principal (its id, client, scopes and claims), so a run
    /// on another replica acts for the same caller. `None` for an anonymous caller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<crate::auth::Principal>,
    /// The key every run of this task reads as
    /// [`RequestContext::idempotency_key`](crate::RequestContext::idempotency_key):
    /// random, made when the task is created, and never the task id (which grants
    /// access to an anonymous caller's task).
    #[serde(default)]
    pub idempotency_key: String,
    /// The W3C `traceparent` of the creating request's span, when it was recorded (with
    /// `otel`): each run's span links to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// Which run of a task holds it, and until when: a replica claims a task with a lease of
/// a new generation, renews it while the task runs, and writes the task only while the
/// lease it holds is the record's (fencing). A task whose lease has expired while it is
/// `working` is claimed by another replica and run again from its stored work.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Lease {
    /// The replica holding it (random, made when its `Tasks` is built).
    pub owner: String,
    /// How many times the task has been claimed: 1 for the run started at creation.
    pub generation: u64,
    /// When it runs out unless renewed, Unix milliseconds.
    pub expires_at: u64,
}

impl Lease {
    /// A lease of `generation` for `owner`, running out at `expires_at`.
    pub fn new(owner: impl Into<String>, generation: u64, expires_at: u64) -> Lease {
        Lease {
            owner: owner.into(),
            generation,
            expires_at,
        }
    }
}

/// One task, as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The task id (random, unguessable).
    pub id: String,
    /// The access scope (the creating request's principal, or empty).
    pub scope: String,
    /// The status.
    pub status: TaskStatus,
    /// A human-readable status message.
    pub status_message: Option<String>,
    /// Creation time, Unix milliseconds.
    pub created_at: u64,
    /// Last change, Unix milliseconds.
    pub last_updated_at: u64,
    /// How long the task is kept after creation, in milliseconds (`None`: forever).
    pub ttl_ms: Option<u64>,
    /// How often clients should poll, in milliseconds.
    pub poll_interval_ms: u64,
    /// The pending input requests, by key (status `input_required`).
    pub input_requests: Map<String, Value>,
    /// Every answer given so far, by key (keys are never reused).
    pub answers: Map<String, Value>,
    /// The result (status `completed`): the `tools/call` result as a direct call gives it.
    pub result: Option<Value>,
    /// The error (status `failed`): a JSON-RPC error object.
    pub error: Option<Value>,
    /// The work.
    pub work: WorkDescriptor,
    /// Bumped by every change; compare-and-set checks it.
    pub revision: u64,
    /// The lease of the run that holds the task (`None`: no run holds it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Lease>,
}

impl TaskRecord {
    /// Whether the task is past its TTL at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        self.ttl_ms
            .is_some_and(|ttl| self.created_at.saturating_add(ttl) < now_ms)
    }

    /// Whether a replica may claim the task at `now_ms`: it is `working`, not expired,
    /// and no lease holds it (none, or one that ran out before `now_ms`).
    pub fn claimable(&self, now_ms: u64) -> bool {
        self.status == TaskStatus::Working
            && !self.expired(now_ms)
            && self.lease.as_ref().is_none_or(|l| l.expires_at < now_ms)
    }
}

/// Why a store did not do what it was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreError {
    /// [`TaskStore::insert`]: a task with this id exists (it is left unchanged).
    Duplicate,
    /// [`TaskStore::compare_and_set`]: the task changed (or vanished) since it was read,
    /// so nothing was written. The caller reads it again and retries; this is no fault.
    Conflict,
    /// The store could not answer: unreachable, failing, or holding a record this build
    /// cannot read. Requests that meet it are answered with a retryable -32603; the
    /// detail is logged, never sent to a client.
    Unavailable(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Duplicate => f.write_str("a task with this id exists"),
            StoreError::Conflict => f.write_str("the task changed since it was read"),
            StoreError::Unavailable(why) => write!(f, "the task store is unavailable: {why}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// What a [`TaskStore`] method returns: a boxed future, so the trait stays usable as
/// `Arc<dyn TaskStore>` and a networked store awaits its I/O without blocking the
/// runtime. Implement a method as `Box::pin(async move { … })`.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// What a [`ChangeFeed`] says.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// The task with this id was stored or replaced (by any handle on the store, in any
    /// process), after the change was committed.
    Task(String),
    /// Changes may have been missed (the feed's connection dropped and was made again):
    /// a subscriber reads again every task it cares about.
    Resync,
}

/// A subscription to a [`ChangeFeed`]. A subscriber that falls behind gets
/// [`broadcast::error::RecvError::Lagged`] and treats it as [`Change::Resync`]; one whose
/// feed is gone gets [`broadcast::error::RecvError::Closed`] and falls back to polling.
pub type Changes = broadcast::Receiver<Change>;

/// The change feed of a store that pushes changes ([`TaskStore::changes`]). Cheap to
/// clone; nothing is started until the first [`subscribe`](ChangeFeed::subscribe).
#[derive(Clone)]
pub struct ChangeFeed {
    subscribe: Arc<dyn Fn() -> Changes + Send + Sync>,
}

impl ChangeFeed {
    /// A feed whose subscriptions `subscribe` makes. It is called from within a Tokio
    /// runtime, so it may start a background task the first time.
    pub fn new(subscribe: impl Fn() -> Changes + Send + Sync + 'static) -> ChangeFeed {
        ChangeFeed {
            subscribe: Arc::new(subscribe),
        }
    }

    /// A new subscription: every change from now on. Call it before reading the store,
    /// so a change made between the read and the wait is not missed.
    pub fn subscribe(&self) -> Changes {
        (self.subscribe)()
    }
}

impl std::fmt::Debug for ChangeFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeFeed").finish_non_exhaustive()
    }
}

/// Where tasks are kept.
///
/// Every method may fail with [`StoreError::Unavailable`]; presa answers the request that
/// met the fault with a retryable -32603, and a worker retries on its next check. The
/// rules each method documents are what presa relies on; [`contract`](super::contract)
/// checks them all against any store.
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task; once this returns `Ok`, a `get` through any handle on the
    /// store sees it. A task with the same id is [`StoreError::Duplicate`], and is left as
    /// it was.
    fn insert(&self, record: TaskRecord) -> StoreFuture<'_, ()>;
    /// The task with this id, whole, as last stored; `Ok(None)` if there is none. Expired
    /// tasks not yet removed are returned (the caller checks [`TaskRecord::expired`]).
    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>>;
    /// The status of the task with this id, as [`get`](TaskStore::get) would give it.
    /// Every running or waiting task's worker asks it every
    /// [`REMOTE_CHECK`](super::REMOTE_CHECK), to see changes made through another
    /// replica. The default reads the whole record (its arguments and answers, up to
    /// `max_input_bytes`); a store that can read the status alone should.
    fn status<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskStatus>> {
        Box::pin(async move { Ok(self.get(id).await?.map(|r| r.status)) })
    }
    /// Replaces the task `record.id` if its stored revision is still `expected`, storing
    /// `record` with its revision set to `expected + 1`, and returns what was stored. A
    /// task whose revision differs, or that does not exist, is [`StoreError::Conflict`] and
    /// is left unchanged. Of several calls from the same revision, exactly one succeeds.
    fn compare_and_set(&self, expected: u64, record: TaskRecord) -> StoreFuture<'_, TaskRecord>;
    /// The number of tasks not [`expired`](TaskRecord::expired) at `now_ms`, only those
    /// whose scope is `scope` when given.
    fn count<'a>(&'a self, scope: Option<&'a str>, now_ms: u64) -> StoreFuture<'a, usize>;
    /// Deletes every task [`expired`](TaskRecord::expired) at `now_ms`, and no other;
    /// returns how many it deleted.
    fn remove_expired(&self, now_ms: u64) -> StoreFuture<'_, usize>;
    /// Up to `limit` tasks [claimable](TaskRecord::claimable) at `now_ms`, oldest lease
    /// first (any order among tasks without one): the tasks whose run has stopped
    /// renewing its lease, for another replica to run again.
    fn claimable(&self, now_ms: u64, limit: usize) -> StoreFuture<'_, Vec<TaskRecord>>;

    /// The store's change feed, when it pushes changes: presa then wakes a worker or
    /// publishes to listeners when a task changes, and polls only as a safety net (every
    /// [`TasksBuilder::remote_check`](super::TasksBuilder::remote_check)). The default,
    /// `None`, means the store is polled. Called once, when the extension is built: it
    /// must not block or start work.
    fn changes(&self) -> Option<ChangeFeed> {
        None
    }
}

/// The default [`TaskStore`]: a map in this process.
#[derive(Default)]
pub struct MemoryStore {
    tasks: Mutex<HashMap<String, TaskRecord>>,
}

impl MemoryStore {
    fn tasks(&self) -> Result<std::sync::MutexGuard<'_, HashMap<String, TaskRecord>>, StoreError> {
        // Poisoned only by a panic while the map was held; the map itself is whole (every
        // change under the lock is one insert, remove or retain).
        self.tasks
            .lock()
            .map_err(|_| StoreError::Unavailable("the task map's lock is poisoned".into()))
    }

    fn insert_now(&self, record: TaskRecord) -> Result<(), StoreError> {
        let mut tasks = self.tasks()?;
        if tasks.contains_key(&record.id) {
            return Err(StoreError::Duplicate);
        }
        tasks.insert(record.id.clone(), record);
        Ok(())
    }

    fn compare_and_set_now(
        &self,
        expected: u64,
        mut record: TaskRecord,
    ) -> Result<TaskRecord, StoreError> {
        let mut tasks = self.tasks()?;
        match tasks.get(&record.id) {
            Some(current) if current.revision == expected => {
                record.revision = expected + 1;
                tasks.insert(record.id.clone(), record.clone());
                Ok(record)
            }
            _ => Err(StoreError::Conflict),
        }
    }

    fn count_now(&self, scope: Option<&str>, now_ms: u64) -> Result<usize, StoreError> {
        Ok(self
            .tasks()?
            .values()
            .filter(|r| !r.expired(now_ms) && scope.is_none_or(|s| r.scope == s))
            .count())
    }

    fn claimable_now(&self, now_ms: u64, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        let mut found: Vec<TaskRecord> = self
            .tasks()?
            .values()
            .filter(|r| r.claimable(now_ms))
            .cloned()
            .collect();
        found.sort_by_key(|r| r.lease.as_ref().map_or(0, |l| l.expires_at));
        found.truncate(limit);
        Ok(found)
    }

    fn remove_expired_now(&self, now_ms: u64) -> Result<usize, StoreError> {
        let mut tasks = self.tasks()?;
        let before = tasks.len();
        tasks.retain(|_, r| !r.expired(now_ms));
        Ok(before - tasks.len())
    }
}

/// Each method does its work when called and returns a future that is already done.
impl TaskStore for MemoryStore {
    fn insert(&self, record: TaskRecord) -> StoreFuture<'_, ()> {
        Box::pin(std::future::ready(self.insert_now(record)))
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        let found = self.tasks().map(|t| t.get(id).cloned());
        Box::pin(std::future::ready(found))
    }

    fn status<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskStatus>> {
        let found = self.tasks().map(|t| t.get(id).map(|r| r.status));
        Box::pin(std::future::ready(found))
    }

    fn compare_and_set(&self, expected: u64, record: TaskRecord) -> StoreFuture<'_, TaskRecord> {
        Box::pin(std::future::ready(
            self.compare_and_set_now(expected, record),
        ))
    }

    fn count<'a>(&'a self, scope: Option<&'a str>, now_ms: u64) -> StoreFuture<'a, usize> {
        Box::pin(std::future::ready(self.count_now(scope, now_ms)))
    }

    fn remove_expired(&self, now_ms: u64) -> StoreFuture<'_, usize> {
        Box::pin(std::future::ready(self.remove_expired_now(now_ms)))
    }

    fn claimable(&self, now_ms: u64, limit: usize) -> StoreFuture<'_, Vec<TaskRecord>> {
        Box::pin(std::future::ready(self.claimable_now(now_ms, limit)))
    }
}
