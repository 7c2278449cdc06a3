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
//!
//! The store also keeps each session's event buffer: the events of its streams (the
//! standalone stream 0 and the streams of requests answered as SSE), so a client that
//! resumes with `Last-Event-ID` on any replica finds them. Each stream has one writer at
//! a time (a number the store hands out per copy of the session, [`claim_copy`]): the
//! store refuses an event or an end from any other, so two replicas never write the same
//! id. The buffer is bounded per session in events and bytes ([`EventBounds`]): the
//! oldest go first, the newest is always held. It goes with its session.
//!
//! [`claim_copy`]: SessionStore::claim_copy

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

/// How many events, and bytes of them (each as written on the wire, [`StreamEvent::size`]),
/// a session's buffer holds over all its streams. At least one event is always held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventBounds {
    /// Most events.
    pub events: usize,
    /// Most bytes.
    pub bytes: usize,
}

impl EventBounds {
    /// Bounds of `events` events and `bytes` bytes.
    pub fn new(events: usize, bytes: usize) -> EventBounds {
        EventBounds { events, bytes }
    }

    /// Whether a buffer of `held` events of `bytes` bytes is past the bounds, and may
    /// let its oldest go (never its last).
    pub fn exceeded(&self, held: usize, bytes: usize) -> bool {
        held > 1 && (held > self.events || bytes > self.bytes)
    }
}

/// One event of a session's stream: its place (`<stream>-<seq>` is its id) and its data,
/// one serialized JSON-RPC message.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamEvent {
    /// The stream's number (0: the standalone stream).
    pub stream: u64,
    /// Its place in the stream, from 1.
    pub seq: u64,
    /// The message.
    pub data: String,
}

impl StreamEvent {
    /// The event `seq` of `stream`, carrying `data`.
    pub fn new(stream: u64, seq: u64, data: impl Into<String>) -> StreamEvent {
        StreamEvent {
            stream,
            seq,
            data: data.into(),
        }
    }

    /// The event as written on the wire: its `id:` and `data:` lines and a blank line.
    pub fn wire(&self) -> String {
        format!("id: {}-{}\ndata: {}\n\n", self.stream, self.seq, self.data)
    }

    /// The bytes of [`wire`](StreamEvent::wire), which the bounds count.
    pub fn size(&self) -> usize {
        let digits = |n: u64| n.checked_ilog10().map_or(1, |d| d as usize + 1);
        "id: -\ndata: \n\n".len() + digits(self.stream) + digits(self.seq) + self.data.len()
    }
}

/// What a store holds of one stream after a given `seq` ([`SessionStore::read_stream`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamRead {
    /// The events held after it, oldest first.
    pub events: Vec<StreamEvent>,
    /// The `seq` of the stream's last event written (held or let go); 0 before any.
    pub last_seq: u64,
    /// Whether the stream ended: no event follows.
    pub ended: bool,
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

    /// Ends a session everywhere, its events with it; false when it was not live.
    fn end<'a>(&'a self, id: &'a str) -> SessionFuture<'a, bool>;

    /// Forgets, a bounded batch at a time, the records of sessions that ended or were
    /// last used before `before_ms`; how many it forgot.
    fn remove_stale(&self, before_ms: u64) -> SessionFuture<'_, usize>;

    /// A number for a new copy of a live session (a replica that serves it without
    /// having made it), unique within the session and never 0 (the copy `initialize`
    /// made is 0): the copy writes its streams as that writer, and numbers them in its
    /// own range. `None` when the session is not live.
    fn claim_copy<'a>(&'a self, id: &'a str) -> SessionFuture<'a, Option<u64>>;

    /// Adds `event` to the buffer of live session `id`, as `writer`, then lets the
    /// oldest events of the session go until it is within `bounds` (the newest always
    /// stays). The first writer to add to a stream (or [`take_stream`]) becomes its
    /// writer. False, and nothing added, when the session is not live, the stream has
    /// another writer or has ended, or the event's `seq` is held already.
    ///
    /// [`take_stream`]: SessionStore::take_stream
    fn append_event<'a>(
        &'a self,
        id: &'a str,
        writer: u64,
        event: &'a StreamEvent,
        bounds: EventBounds,
    ) -> SessionFuture<'a, bool>;

    /// Ends a stream of live session `id` that `writer` writes: nothing is added to it
    /// after. False when the session is not live, or the stream has no events' record,
    /// has another writer, or ended already.
    fn end_stream<'a>(&'a self, id: &'a str, stream: u64, writer: u64) -> SessionFuture<'a, bool>;

    /// Makes `writer` the writer of a stream of live session `id` (made with no events
    /// when it has none): the `seq` of its last event written, from which the new
    /// writer goes on. `None` when the session is not live.
    fn take_stream<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        writer: u64,
    ) -> SessionFuture<'a, Option<u64>>;

    /// The events of a stream of live session `id` held after `after`, oldest first.
    /// `None` when the session is not live, or it holds no such stream: never written,
    /// or ended with none of its events held any more.
    fn read_stream<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        after: u64,
    ) -> SessionFuture<'a, Option<StreamRead>>;
}

/// A [`SessionStore`] in this process: the servers that share one (clones share the
/// records) serve each other's sessions, as replicas sharing a database do.
#[derive(Clone, Default)]
pub struct MemorySessionStore {
    records: std::sync::Arc<Mutex<HashMap<String, Kept>>>,
}

/// A record, whether its session ended, and its event buffer.
struct Kept {
    record: SessionRecord,
    ended: bool,
    /// The last copy number handed out.
    copies: u64,
    buffer: Buffer,
}

/// A session's streams and their events.
#[derive(Default)]
struct Buffer {
    streams: HashMap<u64, StreamState>,
    /// Every stream's events, oldest first.
    events: std::collections::VecDeque<StreamEvent>,
    /// The bytes of `events`, each as [`StreamEvent::size`] counts it.
    bytes: usize,
}

/// One stream's writer, last `seq`, and whether it ended.
struct StreamState {
    writer: u64,
    last_seq: u64,
    ended: bool,
}

impl Buffer {
    fn append(&mut self, writer: u64, event: &StreamEvent, bounds: EventBounds) -> bool {
        let stream = self.streams.entry(event.stream).or_insert(StreamState {
            writer,
            last_seq: 0,
            ended: false,
        });
        if stream.writer != writer || stream.ended {
            return false;
        }
        let known = self
            .events
            .iter()
            .any(|e| e.stream == event.stream && e.seq == event.seq);
        if known {
            return false;
        }
        stream.last_seq = stream.last_seq.max(event.seq);
        self.bytes += event.size();
        self.events.push_back(event.clone());
        let mut evicted = false;
        while bounds.exceeded(self.events.len(), self.bytes) {
            let Some(old) = self.events.pop_front() else {
                break;
            };
            self.bytes -= old.size();
            evicted = true;
        }
        if evicted {
            // An ended stream with no event left is no longer held.
            let events = &self.events;
            self.streams
                .retain(|n, s| !s.ended || events.iter().any(|e| e.stream == *n));
        }
        true
    }

    fn read(&self, stream: u64, after: u64) -> Option<StreamRead> {
        let state = self.streams.get(&stream)?;
        let held: Vec<&StreamEvent> = self.events.iter().filter(|e| e.stream == stream).collect();
        if state.ended && held.is_empty() {
            return None;
        }
        Some(StreamRead {
            events: held
                .into_iter()
                .filter(|e| e.seq > after)
                .cloned()
                .collect(),
            last_seq: state.last_seq,
            ended: state.ended,
        })
    }
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
        self.with_kept(id, |k| f(&mut k.record))
    }

    /// Runs `f` on what is kept of live session `id`, if it is live.
    fn with_kept<T>(
        &self,
        id: &str,
        f: impl FnOnce(&mut Kept) -> T,
    ) -> Result<Option<T>, SessionStoreError> {
        let mut records = self
            .records
            .lock()
            .map_err(|_| SessionStoreError::new("the records' lock is poisoned"))?;
        Ok(records.get_mut(id).filter(|k| !k.ended).map(f))
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
                        copies: 0,
                        buffer: Buffer::default(),
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
                    kept.buffer = Buffer::default();
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
                    kept.buffer = Buffer::default();
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

    fn claim_copy<'a>(&'a self, id: &'a str) -> SessionFuture<'a, Option<u64>> {
        let done = self.with_kept(id, |k| {
            k.copies += 1;
            k.copies
        });
        Box::pin(std::future::ready(done))
    }

    fn append_event<'a>(
        &'a self,
        id: &'a str,
        writer: u64,
        event: &'a StreamEvent,
        bounds: EventBounds,
    ) -> SessionFuture<'a, bool> {
        let done = self.with_kept(id, |k| k.buffer.append(writer, event, bounds));
        Box::pin(std::future::ready(done.map(|d| d == Some(true))))
    }

    fn end_stream<'a>(&'a self, id: &'a str, stream: u64, writer: u64) -> SessionFuture<'a, bool> {
        let done = self.with_kept(id, |k| match k.buffer.streams.get_mut(&stream) {
            Some(s) if s.writer == writer && !s.ended => {
                s.ended = true;
                true
            }
            _ => false,
        });
        Box::pin(std::future::ready(done.map(|d| d == Some(true))))
    }

    fn take_stream<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        writer: u64,
    ) -> SessionFuture<'a, Option<u64>> {
        let done = self.with_kept(id, |k| {
            let s = k.buffer.streams.entry(stream).or_insert(StreamState {
                writer,
                last_seq: 0,
                ended: false,
            });
            s.writer = writer;
            s.last_seq
        });
        Box::pin(std::future::ready(done))
    }

    fn read_stream<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        after: u64,
    ) -> SessionFuture<'a, Option<StreamRead>> {
        let done = self.with_kept(id, |k| k.buffer.read(stream, after));
        Box::pin(std::future::ready(done.map(Option::flatten)))
    }
}
