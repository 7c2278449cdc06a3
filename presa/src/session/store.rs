//! Where the record of a legacy session is kept when several replicas serve its client
//! ([`SessionStore`]): what `initialize` established (the negotiated revision, the
//! client's capabilities and identity), what the client set since (its log level, its
//! resource subscriptions), who opened it, when it was made and last used, and whether
//! it ended.
//!
//! Without a store (the default) a session lives in the process that made it, and only
//! there. With one, every replica given the same store serves every session: a request
//! naming a session this replica does not hold loads its record, and is served as that
//! session; a request of any session first marks the record used, which is also how a
//! replica learns that the session ended (deleted, or idle past the limit) on another.
//! [`MemorySessionStore`] keeps records in this process (for tests, and for servers that
//! share one process); `PgStore` (feature `postgres`) keeps them in PostgreSQL.

use crate::wire::meta::LogLevel;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

/// The record of one legacy session.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SessionRecord {
    /// The session id, as sent in `Mcp-Session-Id`.
    pub id: String,
    /// The id of the principal that opened it, if the request had one: every later
    /// request must come from the same principal.
    pub owner: Option<String>,
    /// The negotiated revision.
    pub version: String,
    /// The capabilities the client declared.
    pub capabilities: Map<String, Value>,
    /// The `clientInfo` the client sent.
    pub client_info: Value,
    /// The level set with `logging/setLevel`, if any.
    pub log_level: Option<LogLevel>,
    /// The URIs the client subscribed to, in the order it subscribed.
    pub subscriptions: Vec<String>,
    /// When the session was made, in milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// When the client was last heard from, in milliseconds since the Unix epoch.
    pub last_used_ms: u64,
}

impl SessionRecord {
    /// The record of a session `initialize` just made, at `now_ms`.
    pub fn new(
        id: impl Into<String>,
        owner: Option<String>,
        version: impl Into<String>,
        capabilities: Map<String, Value>,
        client_info: Value,
        now_ms: u64,
    ) -> SessionRecord {
        SessionRecord {
            id: id.into(),
            owner,
            version: version.into(),
            capabilities,
            client_info,
            log_level: None,
            subscriptions: Vec::new(),
            created_ms: now_ms,
            last_used_ms: now_ms,
        }
    }
}

/// Why a [`SessionStore`] could not answer: unreachable, failing, timed out. The request
/// is answered with a retryable -32603; the reason is logged, never sent to the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionStoreError(String);

impl SessionStoreError {
    /// A fault, with what went wrong (for the log).
    pub fn new(reason: impl Into<String>) -> Self {
        SessionStoreError(reason.into())
    }

    /// What went wrong.
    pub fn reason(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SessionStoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the session store is unavailable: {}", self.0)
    }
}

impl std::error::Error for SessionStoreError {}

/// What a [`SessionStore`] call returns: a boxed future, so the trait stays usable as
/// `Arc<dyn SessionStore>`. Implement it as `Box::pin(async move { … })`.
pub type SessionFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, SessionStoreError>> + Send + 'a>>;

/// Keeps the records of legacy sessions, shared by the replicas of a server
/// ([`ServerBuilder::session_store`](crate::ServerBuilder::session_store)).
///
/// A session is live from [`create`](SessionStore::create) until it is
/// [`end`](SessionStore::end)ed or goes unused for longer than the idle limit a
/// [`touch`](SessionStore::touch) names. Every call is bounded in time by the store
/// (a networked store by its own timeouts); a fault is `Err`, and never reads as a
/// session that ended.
pub trait SessionStore: Send + Sync + 'static {
    /// Keeps the record of a new session.
    fn create<'a>(&'a self, record: &'a SessionRecord) -> SessionFuture<'a, ()>;

    /// The record of a live session, its last use set to `now_ms` first (never moved
    /// back). `None` when the session ended, was never made, or was last used more than
    /// `idle_ms` before `now_ms`: it has expired, and is ended then.
    fn touch<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
        idle_ms: u64,
    ) -> SessionFuture<'a, Option<SessionRecord>>;

    /// The record of a session that has not ended, as it is (its last use unchanged);
    /// `None` when it ended or was never made. Expiry is [`touch`](SessionStore::touch)'s
    /// to judge.
    fn load<'a>(&'a self, id: &'a str) -> SessionFuture<'a, Option<SessionRecord>>;

    /// Records the level set with `logging/setLevel`; false when the session is not live.
    fn set_log_level<'a>(&'a self, id: &'a str, level: LogLevel) -> SessionFuture<'a, bool>;

    /// Adds `uri` to the session's subscriptions (`on`) or removes it; adding one it holds
    /// or removing one it does not changes nothing. False when the session is not live.
    fn subscribe<'a>(&'a self, id: &'a str, uri: &'a str, on: bool) -> SessionFuture<'a, bool>;

    /// Ends a session everywhere; false when it was not live.
    fn end<'a>(&'a self, id: &'a str) -> SessionFuture<'a, bool>;

    /// Forgets, a bounded batch at a time, the records of sessions that ended or were
    /// last used before `before_ms`; how many it forgot.
    fn remove_stale(&self, before_ms: u64) -> SessionFuture<'_, usize>;
}

/// A [`SessionStore`] in this process: the servers that share one (clones share the
/// records) serve each other's sessions, as replicas sharing a database do.
#[derive(Clone, Default)]
pub struct MemorySessionStore {
    records: std::sync::Arc<Mutex<HashMap<String, Kept>>>,
}

/// A record, and whether its session ended.
struct Kept {
    record: SessionRecord,
    ended: bool,
}

impl std::fmt::Debug for MemorySessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemorySessionStore").finish_non_exhaustive()
    }
}

impl MemorySessionStore {
    /// Runs `f` on the live record `id`, if there is one.
    fn with_live<T>(
        &self,
        id: &str,
        f: impl FnOnce(&mut SessionRecord) -> T,
    ) -> Result<Option<T>, SessionStoreError> {
        let mut records = self
            .records
            .lock()
            .map_err(|_| SessionStoreError::new("the records' lock is poisoned"))?;
        Ok(records
            .get_mut(id)
            .filter(|k| !k.ended)
            .map(|k| f(&mut k.record)))
    }
}

impl SessionStore for MemorySessionStore {
    fn create<'a>(&'a self, record: &'a SessionRecord) -> SessionFuture<'a, ()> {
        let done = self
            .records
            .lock()
            .map_err(|_| SessionStoreError::new("the records' lock is poisoned"))
            .map(|mut records| {
                records.insert(
                    record.id.clone(),
                    Kept {
                        record: record.clone(),
                        ended: false,
                    },
                );
            });
        Box::pin(std::future::ready(done))
    }

    fn touch<'a>(
        &'a self,
        id: &'a str,
        now_ms: u64,
        idle_ms: u64,
    ) -> SessionFuture<'a, Option<SessionRecord>> {
        let found = self
            .records
            .lock()
            .map_err(|_| SessionStoreError::new("the records' lock is poisoned"))
            .map(|mut records| {
                let kept = records.get_mut(id).filter(|k| !k.ended)?;
                if kept.record.last_used_ms.saturating_add(idle_ms) < now_ms {
                    kept.ended = true;
                    return None;
                }
                kept.record.last_used_ms = kept.record.last_used_ms.max(now_ms);
                Some(kept.record.clone())
            });
        Box::pin(std::future::ready(found))
    }

    fn load<'a>(&'a self, id: &'a str) -> SessionFuture<'a, Option<SessionRecord>> {
        Box::pin(std::future::ready(self.with_live(id, |r| r.clone())))
    }

    fn set_log_level<'a>(&'a self, id: &'a str, level: LogLevel) -> SessionFuture<'a, bool> {
        let done = self.with_live(id, |r| r.log_level = Some(level));
        Box::pin(std::future::ready(done.map(|d| d.is_some())))
    }

    fn subscribe<'a>(&'a self, id: &'a str, uri: &'a str, on: bool) -> SessionFuture<'a, bool> {
        let done = self.with_live(id, |r| {
            let known = r.subscriptions.iter().position(|s| s == uri);
            match (on, known) {
                (true, None) => r.subscriptions.push(uri.to_owned()),
                (false, Some(at)) => {
                    r.subscriptions.remove(at);
                }
                _ => {}
            }
        });
        Box::pin(std::future::ready(done.map(|d| d.is_some())))
    }

    fn end<'a>(&'a self, id: &'a str) -> SessionFuture<'a, bool> {
        let done = self
            .records
            .lock()
            .map_err(|_| SessionStoreError::new("the records' lock is poisoned"))
            .map(|mut records| match records.get_mut(id) {
                Some(kept) if !kept.ended => {
                    kept.ended = true;
                    true
                }
                _ => false,
            });
        Box::pin(std::future::ready(done))
    }

    fn remove_stale(&self, before_ms: u64) -> SessionFuture<'_, usize> {
        let done = self
            .records
            .lock()
            .map_err(|_| SessionStoreError::new("the records' lock is poisoned"))
            .map(|mut records| {
                let before = records.len();
                records.retain(|_, k| !k.ended && k.record.last_used_ms >= before_ms);
                before - records.len()
            });
        Box::pin(std::future::ready(done))
    }
}
