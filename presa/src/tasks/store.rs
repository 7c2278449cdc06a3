//! Task records and where they are kept. The [`TaskStore`] trait is small and
//! compare-and-set based, with records that serialize whole (no request-context values in
//! them), so a durable store (SQLite for one machine, PostgreSQL for several replicas)
//! can implement it without changing the trait. [`MemoryStore`] is the default.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Mutex;

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
}

impl TaskRecord {
    /// Whether the task is past its TTL at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        self.ttl_ms
            .is_some_and(|ttl| self.created_at.saturating_add(ttl) < now_ms)
    }
}

/// Why a store refused to insert.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreError {
    /// A task with this id exists.
    Duplicate,
    /// The store is unavailable.
    Unavailable(String),
}

/// A compare-and-set lost: the task changed (or vanished) since it was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conflict;

/// Where tasks are kept.
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task; when this returns, a `get` anywhere must see it.
    fn insert(&self, record: TaskRecord) -> Result<(), StoreError>;
    /// The task with this id, if any.
    fn get(&self, id: &str) -> Option<TaskRecord>;
    /// The status of the task with this id, if any. Every running or waiting task's
    /// worker asks it every [`REMOTE_CHECK`](super::REMOTE_CHECK), to see changes made
    /// through another replica. The default reads the whole record (its arguments and
    /// answers, up to `max_input_bytes`); a store that can read the status alone should.
    fn status(&self, id: &str) -> Option<TaskStatus> {
        self.get(id).map(|r| r.status)
    }
    /// Replaces the task if its revision is still `expected`; returns the stored record
    /// (revision bumped), or [`Conflict`] when it changed meanwhile.
    fn compare_and_set(&self, expected: u64, record: TaskRecord) -> Result<TaskRecord, Conflict>;
    /// The number of tasks not yet expired at `now_ms`, in `scope` when given.
    fn count(&self, scope: Option<&str>, now_ms: u64) -> usize;
    /// Deletes tasks expired at `now_ms`; returns how many.
    fn remove_expired(&self, now_ms: u64) -> usize;
}

/// The default [`TaskStore`]: a map in this process.
#[derive(Default)]
pub struct MemoryStore {
    tasks: Mutex<HashMap<String, TaskRecord>>,
}

impl TaskStore for MemoryStore {
    fn insert(&self, record: TaskRecord) -> Result<(), StoreError> {
        let mut tasks = self
            .tasks
            .lock()
            .map_err(|_| StoreError::Unavailable("poisoned".into()))?;
        if tasks.contains_key(&record.id) {
            return Err(StoreError::Duplicate);
        }
        tasks.insert(record.id.clone(), record);
        Ok(())
    }

    fn get(&self, id: &str) -> Option<TaskRecord> {
        self.tasks.lock().ok()?.get(id).cloned()
    }

    fn status(&self, id: &str) -> Option<TaskStatus> {
        self.tasks.lock().ok()?.get(id).map(|r| r.status)
    }

    fn compare_and_set(
        &self,
        expected: u64,
        mut record: TaskRecord,
    ) -> Result<TaskRecord, Conflict> {
        let mut tasks = self.tasks.lock().map_err(|_| Conflict)?;
        match tasks.get(&record.id) {
            Some(current) if current.revision == expected => {
                record.revision = expected + 1;
                tasks.insert(record.id.clone(), record.clone());
                Ok(record)
            }
            _ => Err(Conflict),
        }
    }

    fn count(&self, scope: Option<&str>, now_ms: u64) -> usize {
        self.tasks
            .lock()
            .map(|t| {
                t.values()
                    .filter(|r| !r.expired(now_ms) && scope.is_none_or(|s| r.scope == s))
                    .count()
            })
            .unwrap_or(0)
    }

    fn remove_expired(&self, now_ms: u64) -> usize {
        let Ok(mut tasks) = self.tasks.lock() else {
            return 0;
        };
        let before = tasks.len();
        tasks.retain(|_, r| !r.expired(now_ms));
        before - tasks.len()
    }
}
