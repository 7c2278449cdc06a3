//! The Tasks extension (`io.modelcontextprotocol/tasks`): long-running `tools/call`s that
//! answer at once with a task, run detached from the request, and are polled with
//! `tasks/get`, answered with `tasks/update` and cancelled with `tasks/cancel`.
//!
//! Built on the core's extension hooks: it owns the three methods, takes over `tools/call`
//! for tools whose [`TaskMode`] asks for it, mirrors `taskId` into `Mcp-Name`, and adds a
//! `taskIds` filter to `subscriptions/listen` (delivering `notifications/tasks`).
//!
//! Changes made through another replica sharing the store (a cancellation, an answer, a
//! new status) are seen by looking at the store: at once when the store pushes them
//! ([`TaskStore::changes`]; a worker wakes on its task's change, and listeners on this
//! replica are sent the new status), and every [`TasksBuilder::remote_check`] in any
//! case, as the only way for a store without push and as a safety net for one with it.
//!
//! A task's run holds a [`Lease`] on it, renewed every third of [`TasksBuilder::lease`]
//! while it runs or waits for input, and writes the task only while that lease is still
//! the record's (a run whose lease was taken over is fenced off). Each replica looks for
//! `working` tasks whose lease ran out (their replica died, or lost the store) as often
//! as it renews, claims them with a lease of the next generation, and runs them again
//! from their stored work: a task runs at least once, and every run reads the same
//! [`RequestContext::idempotency_key`].
//!
//! | mode | client declared Tasks | client did not |
//! | --- | --- | --- |
//! | `Sync` (default) | runs in the request | runs in the request |
//! | `Optional` | a task | runs in the request |
//! | `Required` | a task | -32021 |

pub mod contract;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod rows;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;
mod time;

#[cfg(feature = "postgres")]
pub use postgres::{ConnectError, PgFanout, PgStore, PgStoreBuilder};
#[cfg(feature = "sqlite")]
pub use sqlite::{OpenError, SqliteStore};
pub use store::{
    Change, ChangeFeed, Changes, Lease, MemoryStore, StoreError, StoreFuture, TaskRecord,
    TaskStatus, TaskStore, WorkDescriptor,
};

use crate::context::{Cancellation, ContextInit, Outbound, RequestContext, Run};
use crate::error::{Error, code};
use crate::extension::{
    Attached, Extension, Intercepted, ListenTopics, ToolInvocation, declared, missing,
};
use crate::mrtr;
use crate::registry::BoxFuture;
use crate::subscriptions::Event;
use crate::wire::jsonrpc::RequestId;
use futures_util::FutureExt;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit};
use tokio_util::sync::CancellationToken;

/// How many times a task's update is tried against the store's compare-and-set before
/// it is given up (each failure means another writer changed the task meanwhile).
const UPDATE_ATTEMPTS: usize = 1000;

/// The extension's identifier.
pub const ID: &str = "io.modelcontextprotocol/tasks";
/// Longest task id accepted, in bytes.
pub const MAX_TASK_ID_BYTES: usize = 256;
/// The default of [`TasksBuilder::remote_check`] for a store without a change feed: how
/// often a worker looks at the store for changes made through another replica.
pub const REMOTE_CHECK: Duration = Duration::from_millis(500);
/// The default of [`TasksBuilder::remote_check`] for a store with a change feed
/// ([`TaskStore::changes`]): changes are pushed, and the poll is a safety net for one
/// whose notification was lost.
pub const REMOTE_CHECK_WITH_CHANGES: Duration = Duration::from_secs(5);
/// Most tasks whose last published revision is remembered, so a change this replica
/// published is not published again when its notification comes back; past it the
/// memory is cleared (a duplicate notification may follow, never a lost one).
const MAX_PUBLISHED: usize = 4096;
/// The default of [`TasksBuilder::lease`].
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);
/// The shortest [`TasksBuilder::lease`]: renewed every third of it, a shorter lease
/// would renew faster than a store answers.
pub const MIN_LEASE: Duration = Duration::from_millis(30);
/// The default of [`TasksBuilder::max_result_bytes`].
pub const DEFAULT_MAX_RESULT_BYTES: usize = 4 * 1024 * 1024;

/// What a principal's scope starts with.
const PRINCIPAL_SCOPE: &str = "principal:";
/// What the scope of a task made without a principal starts with (its id follows).
const ANONYMOUS_SCOPE: &str = "anonymous:";

/// Most task ids one listen request may follow.
pub const MAX_LISTEN_TASK_IDS: usize = 100;
/// The default of [`TasksBuilder::max_input_bytes`].
pub const DEFAULT_MAX_INPUT_BYTES: usize = 262_144;

/// How a tool relates to tasks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TaskMode {
    /// Always runs in the request (the default).
    #[default]
    Sync,
    /// A task when the client declared Tasks, in the request otherwise.
    Optional,
    /// Always a task; a client that did not declare Tasks gets -32021.
    Required,
}

/// A per-call choice of [`TaskMode`], from the call's params.
pub type TaskModeFn = dyn Fn(&Map<String, Value>) -> TaskMode + Send + Sync;

/// A tool's task policy: one mode, or a choice per call.
#[derive(Clone, Default)]
pub enum TaskPolicy {
    /// The same mode for every call.
    Fixed(TaskMode),
    /// A mode chosen per call (for example: ask for input synchronously first, then
    /// become a task on the final round).
    PerCall(Arc<TaskModeFn>),
    /// [`TaskMode::Sync`].
    #[default]
    Default,
}

impl TaskPolicy {
    fn mode(&self, params: &Map<String, Value>) -> TaskMode {
        match self {
            TaskPolicy::Fixed(m) => *m,
            TaskPolicy::PerCall(f) => f(params),
            TaskPolicy::Default => TaskMode::Sync,
        }
    }
}

impl crate::Tool {
    /// Sets how the tool relates to the Tasks extension (default: always synchronous).
    pub fn task(self, mode: TaskMode) -> Self {
        self.with_extension_data(TaskPolicy::Fixed(mode))
    }

    /// Chooses the tool's task mode per call, from the call's params.
    pub fn task_per_call(
        self,
        choose: impl Fn(&Map<String, Value>) -> TaskMode + Send + Sync + 'static,
    ) -> Self {
        self.with_extension_data(TaskPolicy::PerCall(Arc::new(choose)))
    }
}

impl std::fmt::Debug for TaskPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskPolicy::Fixed(m) => write!(f, "Fixed({m:?})"),
            TaskPolicy::PerCall(_) => f.write_str("PerCall(..)"),
            TaskPolicy::Default => f.write_str("Default"),
        }
    }
}

/// The Tasks extension. Install it with `ServerBuilder::extension(Tasks::new())`.
#[derive(Clone)]
pub struct Tasks {
    inner: Arc<Inner>,
}

struct Inner {
    /// The settings it was built with.
    config: TasksBuilder,
    workers: Mutex<HashMap<String, Worker>>,
    /// One permit per task running its tool (`max_workers`): taken at creation, given
    /// back while the task waits for input, taken again (waiting for it) to resume.
    slots: Arc<tokio::sync::Semaphore>,
    /// Held while a task is checked against the limits and stored, so concurrent
    /// creations cannot both pass the same last slot.
    creating: tokio::sync::Mutex<()>,
    reaper: AtomicBool,
    /// The store's change feed, when it has one.
    changes: Option<ChangeFeed>,
    /// How often the store is looked at, whatever its feed says.
    remote_check: Duration,
    /// Whether the task that publishes changes made elsewhere to this replica's
    /// listeners runs.
    relay: AtomicBool,
    /// The last `lastUpdatedAt` published here of each task listened to (with a change
    /// feed).
    published: Mutex<HashMap<String, u64>>,
    /// This replica, as its leases name it (random, made at build).
    replica: String,
    /// The server the extension is installed in, once attached.
    attached: OnceLock<Attached>,
    /// Whether the task that claims tasks whose lease ran out runs.
    claimer: AtomicBool,
    /// Wakes the claimer before its next round.
    claim_now: Arc<Notify>,
}

/// The run of a task in this replica.
#[derive(Clone)]
struct Worker {
    /// Stops the run: the task was cancelled, or its lease lost.
    cancel: CancellationToken,
    wake: Arc<Notify>,
    /// The generation of the lease the run holds.
    generation: u64,
}

/// The knobs of [`Tasks`], with their defaults.
#[derive(Clone)]
#[must_use]
pub struct TasksBuilder {
    store: Arc<dyn TaskStore>,
    ttl_ms: Option<u64>,
    poll_interval_ms: u64,
    max_workers: usize,
    max_tasks: usize,
    max_tasks_per_scope: usize,
    max_input_bytes: usize,
    max_result_bytes: usize,
    remote_check: Option<Duration>,
    reap_every: Duration,
    lease: Duration,
}

impl Default for TasksBuilder {
    fn default() -> Self {
        TasksBuilder {
            store: Arc::new(MemoryStore::default()),
            ttl_ms: Some(3_600_000),
            poll_interval_ms: 250,
            max_workers: 64,
            max_tasks: 10_000,
            max_tasks_per_scope: 1_000,
            max_input_bytes: DEFAULT_MAX_INPUT_BYTES,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            remote_check: None,
            reap_every: Duration::from_secs(60),
            lease: DEFAULT_LEASE,
        }
    }
}

/// A duration as the schema's `ttlMs` and `pollIntervalMs` hold it: whole
/// milliseconds from 1 to 2^53 − 1 (longer durations are clamped rather than wrapped).
fn wire_ms(d: Duration) -> u64 {
    const MAX: u128 = crate::schema::MAX_HEADER_INTEGER as u128;
    d.as_millis().clamp(1, MAX) as u64
}

impl TasksBuilder {
    /// How long a task is kept after creation (default one hour; `None`: forever). At
    /// most 2^53 − 1 ms, the schema's bound for `ttlMs` (about 285,000 years).
    pub fn ttl(mut self, ttl: Option<Duration>) -> Self {
        self.ttl_ms = ttl.map(wire_ms);
        self
    }

    /// The poll interval suggested to clients (default 250 ms; at most 2^53 − 1 ms).
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll_interval_ms = wire_ms(every);
        self
    }

    /// Most tasks running their tool at once (default 64). Past it a new task is refused
    /// (-32603, `limit: "max_workers"`); a task waiting for input gives its slot back,
    /// and one resumed by its answers waits for a free slot before it runs again.
    pub fn max_workers(mut self, n: usize) -> Self {
        self.max_workers = n;
        self
    }

    /// Most tasks kept at once (default 10 000).
    pub fn max_tasks(mut self, n: usize) -> Self {
        self.max_tasks = n;
        self
    }

    /// Most tasks kept at once for one principal (default 1 000). Callers without a
    /// principal share no scope: each of their tasks is reachable by its (unguessable) id
    /// alone, by any caller without a principal, so none of them can use up a scope the
    /// others need; `max_tasks` bounds them all.
    pub fn max_tasks_per_scope(mut self, n: usize) -> Self {
        self.max_tasks_per_scope = n;
        self
    }

    /// Largest work input a task may keep, in bytes of JSON (default 262 144): the call's
    /// arguments, the answers gathered before it became a task or given to it with
    /// `tasks/update`, and the client's capabilities, all held by the task record until it
    /// expires. Past it, task creation (or the `tasks/update`) is -32602 and nothing is
    /// stored.
    pub fn max_input_bytes(mut self, bytes: usize) -> Self {
        self.max_input_bytes = bytes;
        self
    }

    /// Largest result a task keeps, in bytes of JSON (default 4 MiB): a tool whose result
    /// is larger fails its task (-32603, logged), since the record keeps the result until
    /// the task expires.
    pub fn max_result_bytes(mut self, bytes: usize) -> Self {
        self.max_result_bytes = bytes;
        self
    }

    /// How often a running or parked task looks at the store for a cancellation or an
    /// answer given through another replica sharing it, and a worker whose store failed
    /// tries it again (at least 10 ms). The default is [`REMOTE_CHECK`] (500 ms) for a
    /// store without a change feed, and [`REMOTE_CHECK_WITH_CHANGES`] (5 s) for one with
    /// it, whose changes wake the worker at once: then this is only the safety net for a
    /// lost notification. A value set here holds either way.
    pub fn remote_check(mut self, every: Duration) -> Self {
        self.remote_check = Some(every.max(Duration::from_millis(10)));
        self
    }

    /// How long a task's run holds it without renewing (default [`DEFAULT_LEASE`], 30 s;
    /// at least [`MIN_LEASE`]). The run renews its lease every third of this; a
    /// replica looks for tasks whose lease ran out as often, and runs them again. So a
    /// task whose replica died runs again within about 1⅓ leases; a shorter lease
    /// resumes sooner and writes the store more often. Replicas sharing a store compare
    /// their wall clocks through the leases: keep them in step (NTP) to well within a
    /// third of the lease.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(MIN_LEASE);
        self
    }

    /// Where tasks are kept (default: [`MemoryStore`]).
    pub fn store(mut self, store: impl TaskStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// How often expired tasks are deleted (default 60 s).
    pub fn reap_every(mut self, every: Duration) -> Self {
        self.reap_every = every.max(Duration::from_millis(10));
        self
    }

    /// The extension.
    pub fn build(self) -> Tasks {
        let slots = self.max_workers.min(tokio::sync::Semaphore::MAX_PERMITS);
        let changes = self.store.changes();
        let remote_check = self.remote_check.unwrap_or(if changes.is_some() {
            REMOTE_CHECK_WITH_CHANGES
        } else {
            REMOTE_CHECK
        });
        Tasks {
            inner: Arc::new(Inner {
                changes,
                remote_check,
                relay: AtomicBool::new(false),
                published: Mutex::default(),
                config: self,
                workers: Mutex::default(),
                slots: Arc::new(tokio::sync::Semaphore::new(slots)),
                creating: tokio::sync::Mutex::new(()),
                reaper: AtomicBool::new(false),
                replica: mrtr::token::random_id(12)
                    .unwrap_or_else(|| format!("pid-{}-{}", std::process::id(), time::now_ms())),
                attached: OnceLock::new(),
                claimer: AtomicBool::new(false),
                claim_now: Arc::new(Notify::new()),
            }),
        }
    }
}

impl Default for Tasks {
    fn default() -> Self {
        Tasks::builder().build()
    }
}

impl Tasks {
    /// The extension with its defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder for the knobs.
    pub fn builder() -> TasksBuilder {
        TasksBuilder::default()
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.inner.config.store
    }

    /// The scope of `ctx`'s principal; `None` for a caller without one (or with an empty
    /// one), whose tasks have a scope each.
    fn scope(ctx: &RequestContext) -> Option<String> {
        ctx.principal_id()
            .filter(|p| !p.is_empty())
            .map(|p| format!("{PRINCIPAL_SCOPE}{p}"))
    }

    /// The task `id` as `ctx`'s principal may see it: unknown, expired and other scopes'
    /// tasks are all the same -32602; a store fault is the retryable -32603.
    async fn lookup(&self, id: &str, ctx: &RequestContext) -> Result<TaskRecord, Error> {
        let found = self
            .store()
            .get(id)
            .await
            .map_err(|e| fault(Some(id), &e))?;
        Self::visible(found, ctx)
            .ok_or_else(|| Error::invalid_params("Unknown or inaccessible taskId"))
    }

    /// `record` if `ctx`'s principal may see it and it has not expired. A caller without
    /// a principal sees the tasks of callers without one.
    fn visible(record: Option<TaskRecord>, ctx: &RequestContext) -> Option<TaskRecord> {
        let record = record?;
        let visible = match Self::scope(ctx) {
            Some(scope) => record.scope == scope,
            None => record.scope.starts_with(ANONYMOUS_SCOPE),
        };
        (visible && !record.expired(time::now_ms())).then_some(record)
    }

    /// Applies `change` with compare-and-set until it sticks; `None` from `change` means
    /// nothing to do, and `Ok(None)` back means nothing was stored (the task is gone or
    /// terminal, or the store conflicted [`UPDATE_ATTEMPTS`] times). Terminal tasks never
    /// change. Publishes the new state. A store fault ends the attempt with the fault.
    async fn update(
        &self,
        server: &crate::Server,
        id: &str,
        mut change: impl FnMut(&TaskRecord) -> Option<TaskRecord>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        // A store that reports a conflict every time (a broken store) is given up on
        // rather than retried forever on a worker thread.
        let store = self.store();
        for _ in 0..UPDATE_ATTEMPTS {
            let Some(current) = store.get(id).await? else {
                return Ok(None);
            };
            if current.status.is_terminal() {
                return Ok(None);
            }
            let Some(mut next) = change(&current) else {
                return Ok(None);
            };
            // Every change a client can see moves `lastUpdatedAt` forward, so a write
            // that changes only the lease (which keeps it) is never published.
            next.last_updated_at = time::now_ms().max(current.last_updated_at.saturating_add(1));
            match store.compare_and_set(current.revision, next).await {
                Ok(stored) => {
                    if stored.status != current.status {
                        crate::observe::task_status(stored.status.as_str());
                    }
                    self.publish(server, &stored);
                    return Ok(Some(stored));
                }
                Err(StoreError::Conflict) => continue,
                Err(fault) => return Err(fault),
            }
        }
        tracing::error!(task = %id, "the task store reported a conflict on every attempt to update the task");
        Ok(None)
    }

    /// [`update`](Self::update) for the run holding the lease of `generation`, which has
    /// no request to report a store fault to: the fault is logged and the update tried
    /// again every [`TasksBuilder::remote_check`] until the store answers, so an outcome
    /// the run holds is never dropped while the process lives. Nothing is written once
    /// the task's lease is of another generation (the run was fenced off: another run
    /// holds the task).
    async fn settle(
        &self,
        server: &crate::Server,
        id: &str,
        generation: u64,
        mut change: impl FnMut(&TaskRecord) -> Option<TaskRecord>,
    ) -> Option<TaskRecord> {
        let mut fenced = |r: &TaskRecord| {
            if holds(r, generation) {
                change(r)
            } else {
                tracing::warn!(task = %id, generation, "a run whose lease was taken over wrote nothing");
                None
            }
        };
        loop {
            match self.update(server, id, &mut fenced).await {
                Ok(stored) => return stored,
                Err(e) => {
                    tracing::warn!(task = %id, "a task's update is retried: {e}");
                    tokio::time::sleep(self.inner.remote_check).await;
                }
            }
        }
    }

    /// The bound on what a task record keeps until it expires (Tasks reference section
    /// 3.2, step 5): its work input and every answer, as JSON, within `max_input_bytes`.
    fn input_within_limit(
        &self,
        work: &WorkDescriptor,
        answers: &Map<String, Value>,
    ) -> Result<(), Error> {
        let limit = self.inner.config.max_input_bytes;
        if crate::wire::json_len(work).saturating_add(crate::wire::json_len(answers)) > limit {
            return Err(Error::invalid_params(format!(
                "Task input is larger than {limit} bytes"
            )));
        }
        Ok(())
    }

    /// After an update that stored nothing: `Ok` when the task ended (or vanished)
    /// meanwhile, so there is nothing left to change; the retryable -32603 when the
    /// store refused every attempt ([`UPDATE_ATTEMPTS`]) or failed.
    async fn unstored(&self, id: &str) -> Result<(), Error> {
        match self.store().status(id).await {
            Ok(Some(status)) if !status.is_terminal() => Err(retryable(
                "The task store did not take the change; try again",
            )),
            Ok(_) => Ok(()),
            Err(e) => Err(fault(Some(id), &e)),
        }
    }

    /// Checks a new task against the limits, in the order their errors are reported;
    /// within them, the worker slot it will run in.
    async fn capacity(&self, scope: Option<&str>) -> Result<OwnedSemaphorePermit, Error> {
        let now = time::now_ms();
        let full = |limit: &str| {
            Error::new(code::INTERNAL_ERROR, "Task capacity exhausted")
                .with_data(json!({"retryable": true, "limit": limit}))
        };
        let slot = Arc::clone(&self.inner.slots)
            .try_acquire_owned()
            .map_err(|_| full("max_workers"))?;
        let count = |scope| async move {
            self.store()
                .count(scope, now)
                .await
                .map_err(|e| fault(None, &e))
        };
        if count(None).await? >= self.inner.config.max_tasks {
            return Err(full("max_tasks"));
        }
        if let Some(scope) = scope
            && count(Some(scope)).await? >= self.inner.config.max_tasks_per_scope
        {
            return Err(full("max_tasks_per_scope"));
        }
        Ok(slot)
    }

    fn start_reaper(&self) {
        if self.inner.reaper.swap(true, Ordering::SeqCst) {
            return;
        }
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            loop {
                let every = match weak.upgrade() {
                    Some(inner) => inner.config.reap_every,
                    None => return,
                };
                tokio::time::sleep(every).await;
                let Some(inner) = weak.upgrade() else { return };
                // A fault is tried again at the next round; an expired task meanwhile is
                // refused as unknown all the same.
                match inner.config.store.remove_expired(time::now_ms()).await {
                    Ok(0) => {}
                    Ok(reaped) => tracing::debug!(reaped, "expired tasks deleted"),
                    Err(e) => tracing::warn!("expired tasks were not deleted: {e}"),
                }
            }
        });
    }

    /// Creates a task for a validated call and starts its worker.
    async fn create(&self, invocation: ToolInvocation) -> Result<Map<String, Value>, Error> {
        let ctx = invocation.ctx().clone();
        // Unguessable (errata section 4); without OS randomness no task is made.
        let idempotency_key = mrtr::token::random_id(24).ok_or_else(Error::internal)?;
        let work = WorkDescriptor {
            tool: invocation.tool().name().to_owned(),
            arguments: invocation.arguments().clone(),
            client_capabilities: ctx.client_capabilities().clone(),
            protocol_version: ctx.meta().protocol_version.to_owned(),
            principal: ctx.principal().cloned(),
            idempotency_key,
            // The creating request's span (this runs inside it): the worker's links to it.
            traceparent: crate::observe::traceparent_of(&crate::observe::current()),
        };
        let answers = ctx.inputs().all_answers();
        // The record keeps the work input until it expires: bounded before anything is
        // stored (Tasks reference section 3.2, step 5).
        self.input_within_limit(&work, &answers)?;
        let principal = Self::scope(&ctx);
        let _creating = self.inner.creating.lock().await;
        let slot = self.capacity(principal.as_deref()).await?;
        let now = time::now_ms();
        let id = mrtr::token::random_id(24).ok_or_else(Error::internal)?;
        let scope = principal.unwrap_or_else(|| format!("{ANONYMOUS_SCOPE}{id}"));
        let record = TaskRecord {
            id,
            scope,
            status: TaskStatus::Working,
            status_message: Some("Task accepted".into()),
            created_at: now,
            last_updated_at: now,
            ttl_ms: self.inner.config.ttl_ms,
            poll_interval_ms: self.inner.config.poll_interval_ms,
            input_requests: Map::new(),
            // Answers gathered by synchronous rounds before the task was created.
            answers,
            result: None,
            error: None,
            work,
            revision: 0,
            lease: Some(Lease::new(
                self.inner.replica.clone(),
                1,
                now.saturating_add(self.lease_ms()),
            )),
        };
        // Stored before the response is written: a tasks/get right after sees it.
        self.store()
            .insert(record.clone())
            .await
            .map_err(|e| fault(Some(&record.id), &e))?;
        crate::observe::task_status(record.status.as_str());
        self.start_reaper();
        let server = invocation.server();
        self.start_claimer();
        self.publish(&server, &record);
        // The worker keeps none of the request's transport: its context is made from the
        // record, so the request's outbound (a stdio writer, an HTTP body) is released
        // when the response is written.
        let worker = Worker {
            cancel: CancellationToken::new(),
            wake: Arc::new(Notify::new()),
            generation: 1,
        };
        match run_context(&server, &record, &worker) {
            Some(ctx) => {
                let invocation = ToolInvocation { ctx, ..invocation };
                self.start_run(invocation, &record, worker, slot);
            }
            // The request's own version: always one this build serves.
            None => return Err(Error::internal()),
        }
        let mut result = base(&record);
        result.insert("resultType".into(), Value::from("task"));
        Ok(result)
    }

    /// Registers the run of `record` that `worker` holds the lease of, and starts it:
    /// the worker ([`work`](Self::work)) and the renewal of its lease
    /// ([`hold`](Self::hold)), which ends with the worker.
    fn start_run(
        &self,
        invocation: ToolInvocation,
        record: &TaskRecord,
        worker: Worker,
        slot: OwnedSemaphorePermit,
    ) {
        if let Ok(mut w) = self.inner.workers.lock() {
            w.insert(record.id.clone(), worker.clone());
        }
        let done = CancellationToken::new();
        let expires_at = record.lease.as_ref().map_or(0, |l| l.expires_at);
        tokio::spawn(self.clone().hold(
            record.id.clone(),
            worker.clone(),
            expires_at,
            done.clone(),
        ));
        let this = self.clone();
        let id = record.id.clone();
        // The worker's own span (it outlives the creating request), linked to the span of
        // the request that created the task.
        let span = crate::observe::task_span(&record.work.tool);
        if let Some(tp) = &record.work.traceparent {
            crate::observe::link(&span, tp);
        }
        // The span ends with the run (also when the run is dropped).
        tokio::spawn(crate::observe::Instrumented::ending(
            async move {
                let _done = done.drop_guard();
                this.work(invocation, id, worker, slot).await;
            },
            span,
        ));
    }

    /// The worker: runs the tool detached from the request, parks on input, and
    /// records the outcome. Cancellation (or the loss of its lease) drops the tool's
    /// future at once.
    async fn work(
        self,
        invocation: ToolInvocation,
        id: String,
        worker: Worker,
        slot: OwnedSemaphorePermit,
    ) {
        let generation = worker.generation;
        // Held while the tool runs; given back while the task waits for input.
        let mut slot = Some(slot);
        let server = invocation.server().clone();
        loop {
            let record = match self.store().get(&id).await {
                Ok(Some(record)) => record,
                Ok(None) => break,
                Err(e) => {
                    // The task was acknowledged: it runs once the store answers again.
                    tracing::warn!(task = %id, "a task's worker could not read it: {e}");
                    tokio::select! {
                        _ = worker.cancel.cancelled() => break,
                        () = tokio::time::sleep(self.inner.remote_check) => continue,
                    }
                }
            };
            if record.status.is_terminal() || !holds(&record, generation) {
                break;
            }
            let Some(ctx) = run_context(&server, &record, &worker) else {
                // Stored by a build serving a protocol version this one does not.
                let error = Error::internal();
                self.fail(&server, &id, generation, &error).await;
                break;
            };
            let run = AssertUnwindSafe(invocation.run_with(ctx.clone())).catch_unwind();
            let outcome = tokio::select! {
                _ = worker.cancel.cancelled() => None,
                () = self.cancelled_elsewhere(&id) => None,
                outcome = run => Some(outcome),
            };
            let Some(outcome) = outcome else {
                // The tool's future is dropped; a plain `fn` tool's closure runs on, and
                // holds the worker slot until it returns.
                ctx.blocking_done().await;
                break;
            };
            let inputs = ctx.inputs_outcome();
            if let Some(error) = inputs.failure {
                self.fail(&server, &id, generation, &error).await;
                break;
            }
            if inputs.demanded {
                let mut required = Map::new();
                for (_, _, needs) in &inputs.missing {
                    if let Some(n) = needs {
                        mrtr::inputs::merge(&mut required, n);
                    }
                }
                if !required.is_empty() {
                    // The task may only park on input kinds its creator declared.
                    let error = Error::missing_client_capability(Value::Object(required));
                    self.fail(&server, &id, generation, &error).await;
                    break;
                }
                let requests: Map<String, Value> = inputs
                    .missing
                    .into_iter()
                    .map(|(k, request, _)| (k, request))
                    .collect();
                let accepted = inputs.accepted;
                let parked = self
                    .settle(&server, &id, generation, |r| {
                        let mut next = r.clone();
                        next.answers.extend(accepted.clone());
                        // A key answered while this round ran is never requested again: the
                        // next round uses the answer.
                        next.input_requests = requests
                            .iter()
                            .filter(|(k, _)| !next.answers.contains_key(*k))
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect();
                        (next.status, next.status_message) = if next.input_requests.is_empty() {
                            (TaskStatus::Working, Some("Working".into()))
                        } else {
                            (TaskStatus::InputRequired, Some("Waiting for input".into()))
                        };
                        Some(next)
                    })
                    .await;
                match parked {
                    None => break,
                    Some(r) if r.status == TaskStatus::Working => continue,
                    Some(_) => {}
                }
                // Parked, the task holds no worker slot (a client that never answers
                // cannot starve others of workers).
                drop(slot.take());
                let resumed = tokio::select! {
                    _ = worker.cancel.cancelled() => false,
                    _ = worker.wake.notified() => true,
                    // Answered or cancelled through another replica sharing the store.
                    () = self.changed_elsewhere(&id, TaskStatus::InputRequired) => true,
                };
                if !resumed {
                    break;
                }
                // Back to work: it waits for a worker slot as a new task would find one,
                // so answering many parked tasks at once runs at most `max_workers`.
                let taken = tokio::select! {
                    _ = worker.cancel.cancelled() => break,
                    () = self.cancelled_elsewhere(&id) => break,
                    taken = Arc::clone(&self.inner.slots).acquire_owned() => taken,
                };
                match taken {
                    Ok(taken) => slot.replace(taken),
                    Err(_) => break,
                };
                continue;
            }
            let limit = self.inner.config.max_result_bytes;
            let outcome = match outcome {
                Ok(Ok(result)) if crate::wire::json_len(&result) > limit => {
                    tracing::error!(task = %id, limit, "a task's result is larger than max_result_bytes");
                    Ok(Err(Error::internal()))
                }
                other => other,
            };
            match outcome {
                Ok(Ok(result)) => {
                    self.settle(&server, &id, generation, |r| {
                        let mut next = r.clone();
                        next.status = TaskStatus::Completed;
                        next.status_message = None;
                        next.input_requests = Map::new();
                        next.result = Some(Value::Object(result.clone()));
                        Some(next)
                    })
                    .await;
                }
                Ok(Err(error)) => self.fail(&server, &id, generation, &error).await,
                Err(_panic) => {
                    tracing::error!(task = %id, "a task's tool panicked");
                    self.fail(&server, &id, generation, &Error::internal())
                        .await;
                }
            }
            break;
        }
        if let Ok(mut w) = self.inner.workers.lock()
            && w.get(&id).is_some_and(|w| w.generation == generation)
        {
            w.remove(&id);
        }
    }

    /// The length of a lease, in milliseconds.
    fn lease_ms(&self) -> u64 {
        wire_ms(self.inner.config.lease)
    }

    /// How often a lease is renewed, and tasks whose lease ran out are looked for.
    fn renew_every(&self) -> Duration {
        self.inner.config.lease / 3
    }

    /// Renews the lease `worker` holds on task `id` every [`renew_every`](Self::renew_every)
    /// until `done`. When the lease is no longer the task's (another run claimed it, or
    /// the task ended or vanished), or cannot be renewed before it runs out (the store
    /// fails), the run is stopped: another replica may run the task from then on.
    async fn hold(self, id: String, worker: Worker, expires_at: u64, done: CancellationToken) {
        let every = self.renew_every();
        let mut expires_at = expires_at;
        loop {
            tokio::select! {
                () = done.cancelled() => return,
                () = tokio::time::sleep(every) => {}
            }
            // Unless renewed a renewal interval before its lease runs out, the run stops
            // then, however long the store takes to answer: it never runs on past its
            // lease, when another replica may claim the task.
            let stop_at = expires_at.saturating_sub(wire_ms(every));
            let left = Duration::from_millis(stop_at.saturating_sub(time::now_ms()));
            let renewed = tokio::select! {
                () = done.cancelled() => return,
                renewed = self.renew(&id, worker.generation) => renewed,
                () = tokio::time::sleep(left) => {
                    tracing::error!(task = %id, "a task's run stops: its lease runs out before the store answers");
                    break;
                }
            };
            match renewed {
                Ok(Some(renewed)) => expires_at = renewed,
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(task = %id, "a task's lease was not renewed: {e}");
                    let next_try = time::now_ms().saturating_add(wire_ms(every));
                    if next_try >= expires_at {
                        tracing::error!(task = %id, "a task's run stops: its lease runs out before the store answers");
                        break;
                    }
                }
            }
        }
        worker.cancel.cancel();
    }

    /// Extends the lease of `generation` on task `id` by a whole lease from now: the new
    /// expiry, or `None` when the task no longer has that lease (or ended, or is gone).
    /// Neither `lastUpdatedAt` nor anything a client sees changes, so nothing is
    /// published.
    async fn renew(&self, id: &str, generation: u64) -> Result<Option<u64>, StoreError> {
        let store = self.store();
        for _ in 0..UPDATE_ATTEMPTS {
            let Some(current) = store.get(id).await? else {
                return Ok(None);
            };
            if current.status.is_terminal() || !holds(&current, generation) {
                return Ok(None);
            }
            let expires_at = time::now_ms().saturating_add(self.lease_ms());
            let mut next = current.clone();
            if let Some(lease) = next.lease.as_mut() {
                lease.expires_at = expires_at;
            }
            match store.compare_and_set(current.revision, next).await {
                Ok(_) => return Ok(Some(expires_at)),
                Err(StoreError::Conflict) => continue,
                Err(fault) => return Err(fault),
            }
        }
        Err(StoreError::Unavailable(
            "the task store reported a conflict on every attempt to renew a lease".into(),
        ))
    }

    /// Starts (once, on a runtime) the claimer: every [`renew_every`](Self::renew_every)
    /// (or at once when woken), it claims tasks whose lease ran out, as many as this
    /// replica has free worker slots, and runs them again. It holds the extension and the
    /// server weakly and ends with them.
    fn start_claimer(&self) {
        // Once it runs, this is one load (it is called on every `tools/call`).
        if self.inner.claimer.load(Ordering::Relaxed)
            || self.inner.attached.get().is_none()
            || tokio::runtime::Handle::try_current().is_err()
            || self.inner.claimer.swap(true, Ordering::SeqCst)
        {
            return;
        }
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            loop {
                let Some((every, wake)) = weak.upgrade().map(|inner| {
                    let this = Tasks { inner };
                    (this.renew_every(), Arc::clone(&this.inner.claim_now))
                }) else {
                    return;
                };
                tokio::select! {
                    () = tokio::time::sleep(every) => {}
                    () = wake.notified() => {}
                }
                let Some(inner) = weak.upgrade() else { return };
                let Some(server) = inner.attached.get().and_then(Attached::server) else {
                    return;
                };
                Tasks { inner }.claim(&server).await;
            }
        });
    }

    /// One round of the claimer: claims the tasks whose lease ran out that this replica
    /// has free worker slots for, and runs them.
    async fn claim(&self, server: &crate::Server) {
        let free = self.inner.slots.available_permits();
        if free == 0 {
            return;
        }
        let found = match self.store().claimable(time::now_ms(), free).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!("tasks whose lease ran out could not be looked for: {e}");
                return;
            }
        };
        for record in found {
            let Ok(slot) = Arc::clone(&self.inner.slots).try_acquire_owned() else {
                return;
            };
            self.resume(server, record, slot).await;
        }
    }

    /// Claims `record` (read as claimable) with a lease of the next generation and runs it
    /// from its stored work. Another replica claiming it first, or any change since it
    /// was read, leaves it alone.
    async fn resume(&self, server: &crate::Server, record: TaskRecord, slot: OwnedSemaphorePermit) {
        // A replica that cannot run the work (a build without its tool, or not serving
        // its protocol version) leaves it to one that can; it ends at its TTL otherwise.
        let runnable = server.has_tool(&record.work.tool)
            && crate::wire::meta::RequestMeta::detached(&record.work.protocol_version, Map::new())
                .is_some();
        if !runnable {
            tracing::warn!(task = %record.id, tool = %record.work.tool, "a task whose lease ran out is left to a replica that serves its tool and protocol version");
            return;
        }
        let generation = record
            .lease
            .as_ref()
            .map_or(1, |l| l.generation.saturating_add(1));
        let mut next = record.clone();
        next.lease = Some(Lease::new(
            self.inner.replica.clone(),
            generation,
            time::now_ms().saturating_add(self.lease_ms()),
        ));
        // A record stored before leases has neither a key nor its principal: it gets a
        // key of its own now (kept by the claim, so every later run reads it too), and
        // acts for the principal its scope names.
        if next.work.idempotency_key.is_empty() {
            let Some(key) = mrtr::token::random_id(24) else {
                return;
            };
            next.work.idempotency_key = key;
        }
        if next.work.principal.is_none()
            && let Some(id) = next.scope.strip_prefix(PRINCIPAL_SCOPE)
        {
            next.work.principal = Some(crate::auth::Principal::new(id));
        }
        let claimed = match self.store().compare_and_set(record.revision, next).await {
            Ok(claimed) => claimed,
            Err(StoreError::Conflict) => return,
            Err(e) => {
                tracing::warn!(task = %record.id, "a task whose lease ran out could not be claimed: {e}");
                return;
            }
        };
        tracing::info!(task = %claimed.id, generation, "a task whose lease ran out runs again here");
        let worker = Worker {
            cancel: CancellationToken::new(),
            wake: Arc::new(Notify::new()),
            generation,
        };
        let invocation = run_context(server, &claimed, &worker).and_then(|ctx| {
            server.invocation(&claimed.work.tool, claimed.work.arguments.clone(), ctx)
        });
        match invocation {
            Some(invocation) => self.start_run(invocation, &claimed, worker, slot),
            // Checked before the claim; the catalog changed since (the tool was removed
            // while the server runs). The lease runs out and another replica may run it.
            None => {
                tracing::warn!(task = %claimed.id, "a claimed task's tool is gone from this server")
            }
        }
    }

    /// Completes when the stored task is cancelled by someone else (another replica
    /// sharing the store) or gone. A store fault is no change: it is logged and checked
    /// again at the next look ([`next_look`](Self::next_look)).
    async fn cancelled_elsewhere(&self, id: &str) {
        self.until_status(id, |s| s == TaskStatus::Cancelled).await;
    }

    /// Completes when the stored task's status is no longer `status` (or it is gone); a
    /// store fault is checked again at the next look.
    async fn changed_elsewhere(&self, id: &str, status: TaskStatus) {
        self.until_status(id, |s| s != status).await;
    }

    /// Completes when the stored task is gone or its status meets `done`, looking at the
    /// store at each [`next_look`](Self::next_look). With a change feed it also looks
    /// once at the start, after subscribing: a change made since the caller's last read
    /// was notified before the subscription, and is seen all the same.
    async fn until_status(&self, id: &str, done: impl Fn(TaskStatus) -> bool) {
        let mut changes = self.inner.changes.as_ref().map(ChangeFeed::subscribe);
        let mut look_now = changes.is_some();
        loop {
            if !look_now {
                self.next_look(id, &mut changes).await;
            }
            look_now = false;
            match self.store().status(id).await {
                Ok(Some(s)) if !done(s) => {}
                Ok(_) => return,
                Err(e) => tracing::warn!(task = %id, "a task's status could not be read: {e}"),
            }
        }
    }

    /// Waits until the store should be looked at for task `id`: the
    /// [`TasksBuilder::remote_check`] has passed, or the feed (when subscribed) says the
    /// task changed or changes may have been missed. A closed feed is dropped, leaving the
    /// poll.
    async fn next_look(&self, id: &str, changes: &mut Option<Changes>) {
        let poll = tokio::time::sleep(self.inner.remote_check);
        let Some(feed) = changes else {
            return poll.await;
        };
        tokio::pin!(poll);
        loop {
            tokio::select! {
                () = &mut poll => return,
                change = feed.recv() => match change {
                    Ok(Change::Task(changed)) if changed != id => {}
                    // This task, a resync, or a lag (changes were dropped).
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                        *changes = None;
                        return poll.await;
                    }
                },
            }
        }
    }

    /// Publishes `r` to this replica's listeners. With a change feed, for a task listened
    /// to, its `lastUpdatedAt` is remembered, so the relay does not publish it again when
    /// its notification comes back; and if the relay has already published it (or a later
    /// change), it is not published again here.
    fn publish(&self, server: &crate::Server, r: &TaskRecord) {
        if self.inner.changes.is_some()
            && server.core.hub.wants_topic("taskIds", &r.id)
            && !self.remember(server, r)
        {
            return;
        }
        publish(server, r);
    }

    /// Records `r`'s `lastUpdatedAt` as published; `false` when that change (or a later
    /// one) was already, or `r` differs from it only in its lease. The memory is bounded by [`MAX_PUBLISHED`]: past it, tasks nobody
    /// listens to any more are forgotten, and if that is not enough, all are.
    fn remember(&self, server: &crate::Server, r: &TaskRecord) -> bool {
        let Ok(mut published) = self.inner.published.lock() else {
            return true;
        };
        if published
            .get(&r.id)
            .is_some_and(|&seen| seen >= r.last_updated_at)
        {
            return false;
        }
        if published.len() >= MAX_PUBLISHED && !published.contains_key(&r.id) {
            published.retain(|id, _| server.core.hub.wants_topic("taskIds", id));
            if published.len() >= MAX_PUBLISHED {
                published.clear();
            }
        }
        published.insert(r.id.clone(), r.last_updated_at);
        true
    }

    /// Starts (once) the relay: with a change feed, every change notified for a task
    /// this replica's listeners follow is read and published to them, unless this replica
    /// published that revision itself. A resync (or a lag) reads every task listened to.
    /// It holds the server weakly and ends with it.
    fn start_relay(&self, server: &crate::Server) {
        let Some(feed) = &self.inner.changes else {
            return;
        };
        if self.inner.relay.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut changes = feed.subscribe();
        let (tasks, core) = (Arc::downgrade(&self.inner), Arc::downgrade(&server.core));
        tokio::spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                let ids = match changes.recv().await {
                    Ok(Change::Task(id)) => vec![id],
                    Ok(_) | Err(RecvError::Lagged(_)) => Vec::new(),
                    Err(RecvError::Closed) => return,
                };
                let (Some(inner), Some(core)) = (tasks.upgrade(), core.upgrade()) else {
                    return;
                };
                let (this, server) = (Tasks { inner }, crate::Server { core });
                let ids = if ids.is_empty() {
                    server.core.hub.topic_ids("taskIds")
                } else {
                    ids
                };
                for id in ids {
                    if !server.core.hub.wants_topic("taskIds", &id) {
                        continue;
                    }
                    match this.store().get(&id).await {
                        Ok(Some(record)) => {
                            if this.remember(&server, &record) {
                                publish(&server, &record);
                            }
                        }
                        Ok(None) => {}
                        Err(e) => {
                            tracing::warn!(task = %id, "a changed task could not be read: {e}");
                        }
                    }
                }
            }
        });
    }

    /// Ends the task `failed` with `error` as the request itself would have answered it
    /// (the extension: "the `error` field MUST contain that JSON-RPC error"): its code,
    /// message and data, unchanged.
    async fn fail(&self, server: &crate::Server, id: &str, generation: u64, error: &Error) {
        self.settle(server, id, generation, |r| {
            let mut next = r.clone();
            next.status = TaskStatus::Failed;
            next.status_message = Some(error.message().to_owned());
            next.input_requests = Map::new();
            next.error = Some(error.to_object());
            Some(next)
        })
        .await;
    }

    fn task_id(params: &Map<String, Value>) -> Result<String, Error> {
        match params.get("taskId") {
            Some(Value::String(s)) if s.len() > MAX_TASK_ID_BYTES => {
                Err(Error::invalid_params("taskId is longer than 256 bytes"))
            }
            Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
            _ => Err(Error::invalid_params("A non-empty taskId is required")),
        }
    }

    async fn get(
        &self,
        params: &Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<Map<String, Value>, Error> {
        let id = Self::task_id(params)?;
        Ok(detailed(&self.lookup(&id, ctx).await?))
    }

    async fn answer(
        &self,
        params: &Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<Map<String, Value>, Error> {
        let id = Self::task_id(params)?;
        let responses = match params.get("inputResponses") {
            Some(Value::Object(r)) => r.clone(),
            _ => {
                return Err(Error::invalid_params(
                    "tasks/update requires an inputResponses object",
                ));
            }
        };
        if responses
            .iter()
            .any(|(k, v)| k.is_empty() || !v.is_object())
        {
            return Err(Error::invalid_params("inputResponses is invalid"));
        }
        let record = self.lookup(&id, ctx).await?;
        // Whether the answers taken leave nothing pending: only then does the tool run
        // again. A partial answer is kept and the task stays `input_required` (the
        // extension: "until the remaining responses arrive"), so a key still pending
        // keeps the request the client was shown: a run made now could word it anew, and
        // a key must never name two requests over a task's lifetime.
        let (mut took, mut complete) = (false, false);
        let mut too_large = None;
        let stored = self
            .update(&ctx.server(), &record.id, |r| {
                (took, complete) = (false, false);
                // Only answers to pending requests are taken; others are ignored.
                let taken: Vec<(&String, &Value)> = responses
                    .iter()
                    .filter(|(k, _)| r.input_requests.contains_key(*k))
                    .collect();
                if taken.is_empty() {
                    return None;
                }
                let mut next = r.clone();
                for (k, v) in taken {
                    next.input_requests.remove(k);
                    next.answers.insert(k.clone(), v.clone());
                }
                // The answers stay in the record until it expires: held to the bound its
                // creation was (the work input and every answer, as JSON).
                if let Err(e) = self.input_within_limit(&next.work, &next.answers) {
                    too_large = Some(e);
                    return None;
                }
                if next.input_requests.is_empty() {
                    next.status = TaskStatus::Working;
                    next.status_message = Some("Working".into());
                    complete = true;
                }
                took = true;
                Some(next)
            })
            .await
            .map_err(|e| fault(Some(&record.id), &e))?;
        if let Some(e) = too_large {
            return Err(e);
        }
        if took && stored.is_none() {
            // Taken in a try the store refused: nothing is stored, nothing to wake.
            self.unstored(&record.id).await?;
            return Ok(Map::new());
        }
        if took && complete && !self.wake(&record.id) {
            // No run here: the one holding the task wakes through the store, and if its
            // lease ran out, a claimer takes it now rather than at its next round.
            self.inner.claim_now.notify_one();
        }
        Ok(Map::new())
    }

    /// Wakes the run of task `id` in this replica; `false` when none runs here.
    fn wake(&self, id: &str) -> bool {
        let worker = self
            .inner
            .workers
            .lock()
            .ok()
            .and_then(|w| w.get(id).cloned());
        worker.is_some_and(|w| {
            w.wake.notify_one();
            true
        })
    }

    async fn cancel(
        &self,
        params: &Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<Map<String, Value>, Error> {
        let id = Self::task_id(params)?;
        let record = self.lookup(&id, ctx).await?;
        // Record the status first, then stop the work: a worker finishing at the same
        // moment cannot overwrite a terminal status. The acknowledgement does not wait.
        let stored = self
            .update(&ctx.server(), &record.id, |r| {
                let mut next = r.clone();
                next.status = TaskStatus::Cancelled;
                next.status_message = Some("Cancellation requested".into());
                next.input_requests = Map::new();
                Some(next)
            })
            .await
            .map_err(|e| fault(Some(&record.id), &e))?;
        if stored.is_none() {
            // Not recorded: the work goes on unless the task has ended anyway.
            self.unstored(&record.id).await?;
        }
        let worker = self
            .inner
            .workers
            .lock()
            .ok()
            .and_then(|w| w.get(&record.id).cloned());
        if let Some(w) = worker {
            w.cancel.cancel();
        }
        Ok(Map::new())
    }
}

impl Extension for Tasks {
    fn id(&self) -> &'static str {
        ID
    }

    fn methods(&self) -> &'static [&'static str] {
        &["tasks/get", "tasks/update", "tasks/cancel"]
    }

    fn routing_param(&self, method: &str) -> Option<&'static str> {
        self.methods().contains(&method).then_some("taskId")
    }

    fn attached(&self, server: Attached) {
        // Set once: an extension is attached to the one server it is installed in.
        let _ = self.inner.attached.set(server);
        self.start_claimer();
    }

    fn handle(
        &self,
        method: &str,
        params: Map<String, Value>,
        ctx: RequestContext,
    ) -> BoxFuture<Result<Map<String, Value>, Error>> {
        // A server built outside a runtime starts its claimer with its first task request.
        self.start_claimer();
        let this = self.clone();
        match method {
            "tasks/get" => Box::pin(async move { this.get(&params, &ctx).await }),
            "tasks/update" => Box::pin(async move { this.answer(&params, &ctx).await }),
            "tasks/cancel" => Box::pin(async move { this.cancel(&params, &ctx).await }),
            other => {
                let error = Error::method_not_found(other);
                Box::pin(async move { Err(error) })
            }
        }
    }

    fn intercept_tool_call(&self, call: ToolInvocation) -> Result<Intercepted, Error> {
        // A server built outside a runtime starts its claimer with its first call.
        self.start_claimer();
        let mode = call
            .tool()
            .extension_data()
            .get::<TaskPolicy>()
            .map_or(TaskMode::Sync, |policy| policy.mode(call.params()));
        // A client of a legacy revision (2025-11-25, 2025-06-18) cannot declare this
        // extension: an optional task runs in the request, and a required one is refused
        // as those revisions refuse a call of a tool whose task support it does not use.
        let legacy = call.ctx().meta().protocol_version != crate::wire::meta::PROTOCOL_VERSION;
        match (mode, declared(call.ctx(), ID)) {
            (TaskMode::Sync, _) | (TaskMode::Optional, false) => Ok(Intercepted::Continue(call)),
            (TaskMode::Required, false) if legacy => Err(Error::new(
                crate::error::code::METHOD_NOT_FOUND,
                format!(
                    "Tool {} runs only as a task, which this client's protocol revision ({}) cannot ask for",
                    call.tool().name(),
                    call.ctx().meta().protocol_version
                ),
            )),
            (TaskMode::Required, false) => Err(missing(ID)),
            (TaskMode::Optional | TaskMode::Required, true) => {
                let this = self.clone();
                Ok(Intercepted::Later(Box::pin(async move {
                    this.create(call).await
                })))
            }
        }
    }

    fn listen_filter(
        &self,
        notifications: &Map<String, Value>,
        ctx: &RequestContext,
    ) -> BoxFuture<Result<Option<ListenTopics>, Error>> {
        let asked = self.listen_ids(notifications, ctx);
        let (this, ctx) = (self.clone(), ctx.clone());
        Box::pin(async move {
            let Some(asked) = asked? else {
                return Ok(None);
            };
            let mut accepted = Vec::new();
            for id in asked {
                // Unknown or inaccessible ids are dropped without saying which; a store
                // fault fails the request (retryable) rather than drop a task it could
                // not read.
                let found = this
                    .store()
                    .get(&id)
                    .await
                    .map_err(|e| fault(Some(&id), &e))?;
                if let Some(record) = Self::visible(found, &ctx) {
                    // The stream starts from the task as read now: the relay publishes
                    // only what changes after it, never a notification of a change a
                    // client cannot see (a lease renewal).
                    if this.inner.changes.is_some() {
                        this.remember(&ctx.server(), &record);
                    }
                    accepted.push(id);
                }
            }
            if !accepted.is_empty() {
                this.start_relay(&ctx.server());
            }
            Ok(Some(("taskIds", accepted)))
        })
    }
}

impl Tasks {
    /// The distinct task ids a listen filter asks for, checked for shape; `None` when it
    /// asks for none.
    fn listen_ids(
        &self,
        notifications: &Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<Option<Vec<String>>, Error> {
        let Some(ids) = notifications.get("taskIds") else {
            return Ok(None);
        };
        if !declared(ctx, ID) {
            return Err(missing(ID));
        }
        let invalid = || {
            Error::invalid_params(format!(
                "subscriptions/listen taskIds must be at most {MAX_LISTEN_TASK_IDS} non-empty task ids"
            ))
        };
        let ids = ids.as_array().ok_or_else(invalid)?;
        if ids.len() > MAX_LISTEN_TASK_IDS {
            return Err(invalid());
        }
        let mut accepted = Vec::new();
        for id in ids {
            let id = id
                .as_str()
                .filter(|s| !s.is_empty() && s.len() <= MAX_TASK_ID_BYTES)
                .ok_or_else(invalid)?;
            if !accepted.iter().any(|a| a == id) {
                accepted.push(id.to_owned());
            }
        }
        Ok(Some(accepted))
    }
}

/// The -32603 a request gets when the task store cannot serve it now: `retryable`, so
/// the client tries again later. Nothing of the cause is sent.
fn retryable(message: &'static str) -> Error {
    Error::retryable(message)
}

/// A store fault met by a request (about task `id`, when one): logged with its detail,
/// answered with the [`retryable`] -32603. A duplicate id at creation comes here too: the
/// client's retry makes a new id.
fn fault(id: Option<&str>, error: &StoreError) -> Error {
    match id {
        Some(id) => tracing::error!(task = %id, "the task store failed: {error}"),
        None => tracing::error!("the task store failed: {error}"),
    }
    retryable("The task store is unavailable; try again")
}

/// The context of a run of `record` that `worker` holds: made from the stored work alone
/// (its protocol version, client capabilities and principal, its answers so far), so
/// every run, on any replica, sees the same; none of the creating request's transport,
/// id, progress token or cancellation. `None` when the work names a protocol version this
/// build does not serve.
fn run_context(
    server: &crate::Server,
    record: &TaskRecord,
    worker: &Worker,
) -> Option<RequestContext> {
    let work = &record.work;
    let meta = crate::wire::meta::RequestMeta::detached(
        &work.protocol_version,
        work.client_capabilities.clone(),
    )?;
    Some(RequestContext::new(ContextInit {
        id: RequestId::Str(record.id.clone()),
        method: "tools/call".into(),
        meta,
        outbound: Arc::new(Nowhere(Cancellation::seeded(worker.cancel.clone()))),
        logging_enabled: false,
        principal: work.principal.clone().map(Arc::new),
        host: server.host(),
        answers: Some(record.answers.clone()),
        carried: None,
        hold: false,
        run: Some(Run {
            idempotency_key: work.idempotency_key.clone(),
            attempt: worker.generation,
        }),
    }))
}

/// Whether `record`'s lease is of `generation`: the run holding that lease may write it.
fn holds(record: &TaskRecord, generation: u64) -> bool {
    record
        .lease
        .as_ref()
        .is_some_and(|l| l.generation == generation)
}

/// Tasks send no progress or log notifications; a task's context is cancelled with its
/// worker's token.
struct Nowhere(Cancellation);

impl Outbound for Nowhere {
    fn send(&self, _frame: String) -> bool {
        false
    }

    fn cancellation(&self) -> &Cancellation {
        &self.0
    }
}

/// The fields every task shape shares.
fn base(r: &TaskRecord) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("taskId".into(), Value::from(r.id.as_str()));
    m.insert("status".into(), Value::from(r.status.as_str()));
    if let Some(s) = &r.status_message {
        m.insert("statusMessage".into(), Value::from(s.as_str()));
    }
    m.insert("createdAt".into(), Value::from(time::iso(r.created_at)));
    m.insert(
        "lastUpdatedAt".into(),
        Value::from(time::iso(r.last_updated_at)),
    );
    m.insert("ttlMs".into(), r.ttl_ms.map_or(Value::Null, Value::from));
    m.insert("pollIntervalMs".into(), Value::from(r.poll_interval_ms));
    m
}

/// The DetailedTask of `tasks/get` (and of notifications, without `resultType`).
fn detailed(r: &TaskRecord) -> Map<String, Value> {
    let mut m = base(r);
    match r.status {
        TaskStatus::Completed => {
            if let Some(result) = &r.result {
                m.insert("result".into(), result.clone());
            }
        }
        TaskStatus::Failed => {
            if let Some(error) = &r.error {
                m.insert("error".into(), error.clone());
            }
        }
        TaskStatus::InputRequired => {
            m.insert(
                "inputRequests".into(),
                Value::Object(r.input_requests.clone()),
            );
        }
        TaskStatus::Working | TaskStatus::Cancelled => {}
    }
    m
}

fn publish(server: &crate::Server, r: &TaskRecord) {
    server.publish(Event::Topic {
        key: "taskIds",
        id: r.id.clone(),
        method: "notifications/tasks",
        params: detailed(r),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lease is at least [`MIN_LEASE`]: shorter ones are raised to it, one at it or
    /// just past it is kept.
    #[test]
    fn a_lease_is_at_least_its_minimum() {
        let ms = Duration::from_millis;
        for (asked, kept) in [(0, 30), (29, 30), (30, 30), (31, 31), (30_000, 30_000)] {
            let tasks = Tasks::builder().lease(ms(asked)).build();
            assert_eq!(tasks.inner.config.lease, ms(kept), "asked {asked} ms");
            assert_eq!(tasks.lease_ms(), kept);
            assert_eq!(tasks.renew_every(), ms(kept) / 3);
        }
        assert_eq!(Tasks::new().inner.config.lease, DEFAULT_LEASE);
    }
}
