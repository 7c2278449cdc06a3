//! The HTTP side of one legacy session ([`Live`]): its event streams and the bounded
//! buffer that holds their events for resumption, and the connections that carry them.
//!
//! A session has one standalone stream (number 0, opened with GET; what belongs to no
//! request goes there) and one stream per request answered as SSE (numbers from 1). Every
//! event has the id `<stream>-<seq>`, `seq` counting from 1 within its stream, so ids are
//! unique within the session and name their stream; `<stream>-0` is the id of a stream's
//! priming event, which has no data.
//!
//! Every event goes into the session's buffer, bounded in events and bytes over all its
//! streams (the oldest go first; the newest is always held). A connection reads its
//! stream from the buffer after a cursor (the last id it wrote), so a client that reads
//! slowly costs nothing beyond the buffer, and a connection that resumes with
//! `Last-Event-ID` reads from the same place. At most one connection reads a stream: a
//! resumption replaces the one before (which ends), and a second plain GET of the
//! standalone stream is refused while one is attached.
//!
//! With a session store, the buffer is also written through to the store's, and a
//! stream another replica writes is read from there ([`super::shared`], which says how
//! stream numbers stay unique across replicas, and when the standalone stream's ids do
//! not: after another replica takes it over).

use super::shared::{Passed, Shared, Sharing, Write};
use crate::session::{Channel, EventBounds, Session, SessionStoreError, StreamEvent};
use serde_json::Value;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The standalone stream's number.
pub(super) const GET_STREAM: u64 = 0;

/// How many events, and bytes of them, a session holds.
#[derive(Clone, Copy)]
pub(super) struct Limits {
    pub(super) events: usize,
    pub(super) bytes: usize,
}

/// The HTTP side of one legacy session.
pub(super) struct Live {
    pub(super) session: Arc<Session>,
    /// Who opened the session (the principal's id), when the request had one: every
    /// later request of the session must come from the same principal.
    pub(super) owner: Option<String>,
    events: Mutex<Events>,
    /// The number of the next request stream.
    next_stream: AtomicU64,
    /// Requests running and connections open: a session with any is not idle.
    active: AtomicUsize,
    /// The store side, when the session's record is kept in a store.
    shared: Option<Shared>,
}

/// A session's streams and the events it holds.
struct Events {
    streams: HashMap<u64, Stream>,
    /// Events of every stream, oldest first.
    held: VecDeque<Held>,
    /// The bytes of `held`.
    bytes: usize,
    next_conn: u64,
    limits: Limits,
    /// The connections reading, from the store, a stream another replica writes.
    follows: HashMap<u64, Conn>,
    /// The streams this copy writes that a connection on another replica reads.
    followed: HashSet<u64>,
}

/// One event, written out (`id:` and `data:` lines and the blank line).
struct Held {
    stream: u64,
    seq: u64,
    text: String,
}

/// One stream of a session.
struct Stream {
    /// The `seq` of the stream's next event.
    next_seq: u64,
    /// The last `seq` a connection took: where a new GET of the standalone stream starts.
    delivered: u64,
    /// How many of its events the buffer holds.
    held: usize,
    /// No event follows (a request stream's answer was written, or the session ended).
    ended: bool,
    /// The connection reading it.
    conn: Option<Conn>,
    /// The connection is to end after the events so far, for the client to poll.
    poll: bool,
}

impl Stream {
    fn new() -> Stream {
        Stream {
            next_seq: 1,
            delivered: 0,
            held: 0,
            ended: false,
            conn: None,
            poll: false,
        }
    }

    /// Whether nothing of it is left to keep: ended, unread, with no event held.
    fn spent(&self) -> bool {
        self.ended && self.conn.is_none() && self.held == 0
    }
}

/// A connection attached to a stream, woken when something happens on it.
#[derive(Clone)]
pub(super) struct Conn {
    id: u64,
    wake: Arc<Notify>,
}

/// What a connection finds when it looks at its stream.
pub(super) enum Take {
    /// Events to write.
    Events(String),
    /// The events to write before the connection closes for polling (maybe none).
    Poll(String),
    /// Nothing yet.
    Idle,
    /// The connection is done: its stream ended and was read to its end, the session
    /// ended, or another connection took the stream over.
    Over,
}

/// Why a resumption was refused.
pub(super) enum Refused {
    /// The id is not `<stream>-<seq>`.
    Malformed,
    /// The session holds no stream by that number.
    Unknown,
}

impl Conn {
    /// The connection's number, unique within its session copy.
    pub(super) fn id(&self) -> u64 {
        self.id
    }

    /// Waits until something happens on the connection's stream.
    pub(super) async fn woken(&self) {
        self.wake.notified().await;
    }
}

impl Live {
    /// The HTTP side of `session`; its standalone stream exists from the start, holding
    /// what is sent before a GET opens it. With `sharing`, its events are written through
    /// to the session store.
    pub(super) fn new(
        session: Arc<Session>,
        limits: Limits,
        owner: Option<String>,
        sharing: Option<Sharing>,
    ) -> Arc<Live> {
        let mut streams = HashMap::new();
        streams.insert(GET_STREAM, Stream::new());
        let id = session.id().unwrap_or_default().to_owned();
        Arc::new_cyclic(|weak| Live {
            session,
            owner,
            events: Mutex::new(Events {
                streams,
                held: VecDeque::new(),
                bytes: 0,
                next_conn: 1,
                limits,
                follows: HashMap::new(),
                followed: HashSet::new(),
            }),
            next_stream: AtomicU64::new(1),
            active: AtomicUsize::new(0),
            shared: sharing.map(|sharing| {
                let bounds = EventBounds::new(limits.events, limits.bytes);
                Shared::start(sharing, weak.clone(), id, bounds)
            }),
        })
    }

    /// The store side, when the session's record is kept in a store.
    pub(super) fn shared(&self) -> Option<&Shared> {
        self.shared.as_ref()
    }

    /// The session id, as sent in `Mcp-Session-Id`.
    pub(super) fn id(&self) -> &str {
        self.session.id().unwrap_or_default()
    }

    fn events(&self) -> Option<MutexGuard<'_, Events>> {
        self.events.lock().ok()
    }

    /// The channel of what belongs to no request: the standalone stream.
    pub(super) fn channel(self: &Arc<Self>) -> Arc<dyn Channel> {
        Arc::new(Standalone(Arc::downgrade(self)))
    }

    /// Whether the session's streams begin with a priming event and may be closed for
    /// polling: a session that negotiated 2025-11-25 (2025-06-18 defines neither).
    pub(super) fn primes(&self) -> bool {
        self.session.version() == Some("2025-11-25")
    }

    /// A number for a request's stream, taken before it is known whether the request
    /// is answered as one.
    pub(super) fn reserve_stream(&self) -> u64 {
        let local = self.next_stream.fetch_add(1, Ordering::Relaxed);
        match &self.shared {
            None => local,
            Some(shared) => shared.stream_number(local),
        }
    }

    /// Whether this copy holds stream `stream` (writes it, or has it in its buffer).
    pub(super) fn holds(&self, stream: u64) -> bool {
        self.events()
            .is_some_and(|events| events.streams.contains_key(&stream))
    }

    /// Opens request stream `stream`, with the connection of its POST attached.
    pub(super) fn open_stream(&self, stream: u64) -> Option<Conn> {
        let mut events = self.events()?;
        let conn = events.new_conn();
        let mut s = Stream::new();
        s.ended = self.session.is_closed();
        s.conn = Some(conn.clone());
        events.streams.insert(stream, s);
        Some(conn)
    }

    /// Adds an event (one serialized message) to a stream and wakes its connection.
    /// False when the stream is gone or has ended.
    pub(super) fn push(&self, stream: u64, message: &str) -> bool {
        let Some(mut events) = self.events() else {
            return false;
        };
        let Some(s) = events.streams.get_mut(&stream) else {
            return false;
        };
        if s.ended {
            return false;
        }
        let seq = s.next_seq;
        if let Some(shared) = &self.shared {
            if stream == GET_STREAM && !shared.writes_standalone() {
                // Another replica's copy writes it: the frame is dropped (the writer
                // sends what every copy hears; what only this one would say is lost).
                return false;
            }
            // Under the buffer's lock, so the store is written in the order of the seqs.
            shared.write(Write::Event(StreamEvent::new(stream, seq, message)));
        }
        s.next_seq += 1;
        s.held += 1;
        if let Some(conn) = &s.conn {
            conn.wake.notify_one();
        }
        let text = format!("id: {stream}-{seq}\ndata: {message}\n\n");
        events.bytes += text.len();
        events.held.push_back(Held { stream, seq, text });
        events.evict();
        true
    }

    /// Ends a stream: its connection writes what is left and ends.
    pub(super) fn end_stream(&self, stream: u64) {
        if let Some(mut events) = self.events()
            && let Some(s) = events.streams.get_mut(&stream)
        {
            s.ended = true;
            if let Some(conn) = &s.conn {
                conn.wake.notify_one();
            }
            if s.spent() {
                events.streams.remove(&stream);
            }
            if let Some(shared) = &self.shared {
                shared.write(Write::End(stream));
            }
        }
    }

    /// Asks the connection reading `stream` to end after the events so far.
    pub(super) fn poll(&self, stream: u64) {
        if let Some(mut events) = self.events()
            && let Some(s) = events.streams.get_mut(&stream)
            && let Some(conn) = &s.conn
        {
            s.poll = true;
            conn.wake.notify_one();
        }
    }

    /// Attaches a GET's connection to the standalone stream, starting after what earlier
    /// connections took; `None` while another connection reads it.
    pub(super) fn listen(&self) -> Option<(Conn, u64)> {
        let mut events = self.events()?;
        let conn = events.new_conn();
        let s = events.streams.get_mut(&GET_STREAM)?;
        if s.conn.is_some() {
            return None;
        }
        s.conn = Some(conn.clone());
        s.poll = false;
        Some((conn, s.delivered))
    }

    /// Attaches a connection to the stream `last_event_id` names, after that event (or
    /// after the last event sent, when the id is past it), replacing the connection that
    /// read it.
    pub(super) fn resume(&self, last_event_id: &str) -> Result<(u64, Conn, u64), Refused> {
        let (stream, seq) = parse_event_id(last_event_id).ok_or(Refused::Malformed)?;
        let mut events = self.events().ok_or(Refused::Unknown)?;
        let conn = events.new_conn();
        let s = events.streams.get_mut(&stream).ok_or(Refused::Unknown)?;
        if let Some(old) = s.conn.replace(conn.clone()) {
            old.wake.notify_one();
        }
        s.poll = false;
        let after = seq.min(s.next_seq - 1);
        Ok((stream, conn, after))
    }

    /// What the connection `conn` of `stream` is to write next: the events after
    /// `cursor` (which moves past them), whether it is to close for polling, or whether
    /// it is done.
    pub(super) fn take(&self, stream: u64, conn: &Conn, cursor: &mut u64) -> Take {
        let Some(mut events) = self.events() else {
            return Take::Over;
        };
        let closed = self.session.is_closed();
        let Events { streams, held, .. } = &mut *events;
        let Some(s) = streams.get_mut(&stream) else {
            return Take::Over;
        };
        if s.conn.as_ref().is_none_or(|c| c.id != conn.id) {
            return Take::Over;
        }
        let mut out = String::new();
        let after = *cursor;
        for h in held.iter().filter(|h| h.stream == stream && h.seq > after) {
            out.push_str(&h.text);
            *cursor = h.seq;
        }
        s.delivered = s.delivered.max(*cursor);
        if s.poll {
            s.poll = false;
            s.conn = None;
            return Take::Poll(out);
        }
        if !out.is_empty() {
            return Take::Events(out);
        }
        if s.ended || closed {
            s.conn = None;
            if s.spent() && stream != GET_STREAM {
                streams.remove(&stream);
            }
            return Take::Over;
        }
        Take::Idle
    }

    /// Detaches a connection that ended (the client went away, or it was over).
    pub(super) fn detach(&self, stream: u64, conn: &Conn) {
        if let Some(mut events) = self.events()
            && let Some(s) = events.streams.get_mut(&stream)
            && s.conn.as_ref().is_some_and(|c| c.id == conn.id)
        {
            s.conn = None;
            if s.spent() && stream != GET_STREAM {
                events.streams.remove(&stream);
            }
        }
    }

    /// Ends the session: its requests are cancelled, its streams end, its connections
    /// finish what they hold and close.
    pub(super) fn close(&self) {
        self.session.close();
        if let Some(mut events) = self.events() {
            for s in events.streams.values_mut() {
                s.ended = true;
                if let Some(conn) = &s.conn {
                    conn.wake.notify_one();
                }
            }
            for conn in events.follows.values() {
                conn.wake.notify_one();
            }
        }
    }

    /// Attaches a connection that reads, from the store, `stream` (which another
    /// replica writes), replacing the one of this copy that read it.
    pub(super) fn follow(&self, stream: u64) -> Option<Conn> {
        let mut events = self.events()?;
        let conn = events.new_conn();
        if let Some(old) = events.follows.insert(stream, conn.clone()) {
            old.wake.notify_one();
        }
        Some(conn)
    }

    /// Whether `conn` still reads `stream` from the store (the session lives, and no
    /// other connection took the stream over).
    pub(super) fn follows(&self, stream: u64, conn: &Conn) -> bool {
        !self.session.is_closed()
            && self
                .events()
                .is_some_and(|e| e.follows.get(&stream).is_some_and(|c| c.id == conn.id))
    }

    /// Detaches a connection that read a stream from the store.
    pub(super) fn unfollow(&self, stream: u64, conn: &Conn) {
        if let Some(mut events) = self.events()
            && events.follows.get(&stream).is_some_and(|c| c.id == conn.id)
        {
            events.follows.remove(&stream);
        }
    }

    /// Whether a connection on another replica reads `stream`, which this copy writes;
    /// a stream that ended is forgotten as followed once this says so.
    pub(super) fn is_followed(&self, stream: u64, ended: bool) -> bool {
        let Some(mut events) = self.events() else {
            return false;
        };
        if ended {
            events.followed.remove(&stream)
        } else {
            events.followed.contains(&stream)
        }
    }

    /// This copy no longer writes the standalone stream: its connection ends.
    pub(super) fn lose_standalone(&self) {
        let Some(shared) = &self.shared else { return };
        if !shared.set_standalone(false) {
            return;
        }
        if let Some(mut events) = self.events()
            && let Some(s) = events.streams.get_mut(&GET_STREAM)
            && let Some(conn) = s.conn.take()
        {
            conn.wake.notify_one();
        }
    }

    /// Makes this copy the writer of the standalone stream in the store: the `seq` it
    /// goes on after, and whether the events before are to be read from the store (this
    /// copy did not write the stream, or wrote less of it than the store holds: its own
    /// are dropped). `None` when the session is not live in the store.
    pub(super) async fn take_standalone(&self) -> Result<Option<(u64, bool)>, SessionStoreError> {
        let Some(shared) = &self.shared else {
            return Ok(Some((0, false)));
        };
        let Some(last) = shared
            .store
            .take_stream(self.id(), GET_STREAM, shared.copy)
            .await?
        else {
            return Ok(None);
        };
        // The flag is set under the buffer's lock, where `push` reads it, and after the
        // stream's `seq` is moved: an event pushed meanwhile is numbered after the
        // store's, never with this copy's old `seq` (which the store would refuse, and
        // this copy then lose the stream it just took).
        let Some(mut events) = self.events() else {
            return Ok(None);
        };
        let Events {
            streams,
            held,
            bytes,
            ..
        } = &mut *events;
        let Some(s) = streams.get_mut(&GET_STREAM) else {
            return Ok(None);
        };
        let was = shared.writes_standalone();
        if was && s.next_seq > last {
            return Ok(Some((s.next_seq - 1, false)));
        }
        held.retain(|h| {
            if h.stream == GET_STREAM {
                *bytes -= h.text.len();
            }
            h.stream != GET_STREAM
        });
        s.next_seq = last + 1;
        s.delivered = last;
        s.held = 0;
        if let Some(conn) = s.conn.take() {
            conn.wake.notify_one();
        }
        shared.set_standalone(true);
        Ok(Some((last, true)))
    }

    /// Acts on what another replica passed about this session's streams.
    pub(super) fn passed(&self, message: &Value) {
        let (Some(shared), Some(passed)) = (&self.shared, Passed::read(message)) else {
            return;
        };
        let Some(mut events) = self.events() else {
            return;
        };
        match passed {
            Passed::Written { stream } => {
                if let Some(conn) = events.follows.get(&stream) {
                    conn.wake.notify_one();
                }
            }
            Passed::Taken { stream, copy, conn } => {
                let mine = copy == shared.copy;
                if events
                    .follows
                    .get(&stream)
                    .is_some_and(|c| !(mine && c.id == conn))
                    && let Some(old) = events.follows.remove(&stream)
                {
                    old.wake.notify_one();
                }
                if mine {
                    return;
                }
                if stream == GET_STREAM {
                    drop(events);
                    self.lose_standalone();
                    return;
                }
                if shared.writes(stream) {
                    if let Some(s) = events.streams.get_mut(&stream)
                        && let Some(old) = s.conn.take()
                    {
                        old.wake.notify_one();
                    }
                    events.followed.insert(stream);
                    // Once what is queued is written, the follower reads it.
                    shared.write(Write::Notice(stream));
                }
            }
        }
    }

    /// Counts a request or connection of the session until the guard drops (the session
    /// is then heard from again, so its idle time starts then).
    pub(super) fn activity(self: &Arc<Self>) -> Active {
        self.active.fetch_add(1, Ordering::AcqRel);
        self.session.touch();
        Active(Arc::clone(self))
    }

    /// Whether a request of the session runs or a connection of it is open.
    pub(super) fn busy(&self) -> bool {
        self.active.load(Ordering::Acquire) > 0
    }

    /// Whether the session has been idle for longer than `limit`, with nothing running.
    pub(super) fn expired(&self, limit: Duration) -> bool {
        self.active.load(Ordering::Acquire) == 0 && self.session.idle() > limit
    }
}

impl Events {
    fn new_conn(&mut self) -> Conn {
        let id = self.next_conn;
        self.next_conn += 1;
        Conn {
            id,
            wake: Arc::new(Notify::new()),
        }
    }

    /// Lets the oldest events go until the buffer is within its bounds, keeping the
    /// newest whatever its size. A stream with nothing left to keep goes with them.
    fn evict(&mut self) {
        while self.held.len() > 1
            && (self.held.len() > self.limits.events || self.bytes > self.limits.bytes)
        {
            let Some(old) = self.held.pop_front() else {
                return;
            };
            self.bytes -= old.text.len();
            if let Some(s) = self.streams.get_mut(&old.stream) {
                s.held -= 1;
                if s.spent() && old.stream != GET_STREAM {
                    self.streams.remove(&old.stream);
                }
            }
            tracing::trace!(
                stream = old.stream,
                seq = old.seq,
                "a legacy session's event left its buffer"
            );
        }
    }
}

/// Reads `<stream>-<seq>`.
pub(super) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.trim().split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(stream) || !digits(seq) {
        return None;
    }
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

/// The standalone stream as the session's [`Channel`].
struct Standalone(Weak<Live>);

impl Channel for Standalone {
    fn send(&self, frame: String) {
        if let Some(live) = self.0.upgrade() {
            live.push(GET_STREAM, &frame);
        }
    }

    /// Ends the session's streams (their connections write what they hold and close).
    fn ended(&self) {
        if let Some(live) = self.0.upgrade() {
            live.close();
        }
    }

    fn passed(&self, message: &Value) {
        if let Some(live) = self.0.upgrade() {
            live.passed(message);
        }
    }
}

/// A request or connection of a session, counted while it lasts.
pub(super) struct Active(Arc<Live>);

impl Drop for Active {
    fn drop(&mut self) {
        self.0.session.touch();
        self.0.active.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One connection reading one stream: its SSE body.
pub(super) struct Reader {
    pub(super) live: Arc<Live>,
    pub(super) stream: u64,
    pub(super) conn: Conn,
    /// The last `seq` written.
    pub(super) cursor: u64,
    /// Written first: the priming event, when there is one.
    pub(super) first: Option<String>,
    /// Keepalive comments, for the standalone stream.
    pub(super) keepalive: Option<tokio::time::Interval>,
    /// The endpoint shutting down.
    pub(super) closing: CancellationToken,
    /// The `retry:` named before a close for polling, in milliseconds.
    pub(super) retry_ms: u128,
    pub(super) done: bool,
    pub(super) _active: Active,
}

impl Reader {
    /// The next chunk of the body; `None` once it ends.
    pub(super) async fn next(&mut self) -> Option<String> {
        if self.done {
            return None;
        }
        if let Some(first) = self.first.take() {
            return Some(first);
        }
        loop {
            match self.live.take(self.stream, &self.conn, &mut self.cursor) {
                Take::Events(text) => {
                    if let Some(timer) = self.keepalive.as_mut() {
                        timer.reset();
                    }
                    return Some(text);
                }
                Take::Poll(mut text) => {
                    self.done = true;
                    text.push_str(&format!("retry: {}\n\n", self.retry_ms));
                    return Some(text);
                }
                Take::Over => return None,
                Take::Idle => {}
            }
            let tick = async {
                match self.keepalive.as_mut() {
                    Some(timer) => {
                        timer.tick().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            // A wake-up that came after the look above is kept by the `Notify` (one
            // connection waits on it), so nothing pushed in between is missed.
            tokio::select! {
                () = self.conn.wake.notified() => {}
                () = tick => return Some(": keepalive\n\n".to_owned()),
                () = self.closing.cancelled() => return None,
            }
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.live.detach(self.stream, &self.conn);
    }
}

/// The priming event of a stream read after `cursor`: an id and no data.
pub(super) fn priming(stream: u64, cursor: u64) -> String {
    format!("id: {stream}-{cursor}\ndata:\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionConfig;

    fn live(events: usize, bytes: usize) -> Arc<Live> {
        let session = Session::new(Some("s".into()), &SessionConfig::default());
        Live::new(session, Limits { events, bytes }, None, None)
    }

    #[test]
    fn event_ids_name_their_stream() {
        assert_eq!(parse_event_id("3-17"), Some((3, 17)));
        assert_eq!(parse_event_id("0-0"), Some((0, 0)));
        for bad in ["", "3", "-1", "3-", "a-1", "3-1-2", "3--1", "+3-1"] {
            assert_eq!(parse_event_id(bad), None, "{bad}");
        }
    }

    /// The buffer holds at most its count of events, oldest out first, and always the
    /// newest, even one larger than the byte bound.
    #[test]
    fn the_buffer_is_bounded_and_keeps_the_newest() {
        let l = live(2, 1 << 20);
        for i in 0..3 {
            assert!(l.push(GET_STREAM, &format!("{{\"n\":{i}}}")));
        }
        let (conn, cursor) = l.listen().expect("no GET yet");
        let mut cursor = cursor;
        let Take::Events(text) = l.take(GET_STREAM, &conn, &mut cursor) else {
            panic!("events");
        };
        assert_eq!(
            text,
            "id: 0-2\ndata: {\"n\":1}\n\nid: 0-3\ndata: {\"n\":2}\n\n"
        );
        let l = live(10, 8);
        assert!(l.push(GET_STREAM, "\"a large event\""));
        let mut cursor = 0;
        let (conn, _) = l.listen().expect("no GET yet");
        assert!(
            matches!(l.take(GET_STREAM, &conn, &mut cursor), Take::Events(t) if t.contains("a large event"))
        );
    }

    /// The byte bound holds at and past it: two events of `one` bytes fit in `2 * one`,
    /// a third pushes the oldest out.
    #[test]
    fn the_byte_bound_holds_at_and_past_it() {
        let one = "id: 0-1\ndata: {}\n\n".len();
        let l = live(100, 2 * one);
        assert!(l.push(GET_STREAM, "{}"));
        assert!(l.push(GET_STREAM, "{}"));
        let (conn, _) = l.listen().expect("no GET yet");
        let mut cursor = 0;
        assert!(
            matches!(l.take(GET_STREAM, &conn, &mut cursor), Take::Events(t) if t.matches("data:").count() == 2)
        );
        assert!(l.push(GET_STREAM, "{}"));
        let Ok((_, conn, after)) = l.resume("0-0") else {
            panic!("resumed");
        };
        let mut cursor = after;
        let Take::Events(text) = l.take(GET_STREAM, &conn, &mut cursor) else {
            panic!("events");
        };
        assert_eq!(ids(&text), ["0-2", "0-3"]);
    }

    fn ids(text: &str) -> Vec<&str> {
        text.lines()
            .filter_map(|l| l.strip_prefix("id: "))
            .collect()
    }

    /// A second GET is refused while one reads the stream; a resumption takes it over.
    #[test]
    fn one_connection_reads_a_stream() {
        let l = live(10, 1 << 20);
        let (first, _) = l.listen().expect("the first");
        assert!(l.listen().is_none(), "a second plain GET");
        let Ok((stream, second, after)) = l.resume("0-0") else {
            panic!("resumed");
        };
        assert_eq!((stream, after), (GET_STREAM, 0));
        assert!(matches!(l.take(GET_STREAM, &first, &mut 0), Take::Over));
        assert!(matches!(l.take(GET_STREAM, &second, &mut 0), Take::Idle));
        assert!(matches!(l.resume("7-1"), Err(Refused::Unknown)));
        assert!(matches!(l.resume("x"), Err(Refused::Malformed)));
    }

    /// A request stream read to its end is forgotten once none of its events is held.
    #[test]
    fn a_spent_stream_is_forgotten() {
        let l = live(1, 1 << 20);
        let stream = l.reserve_stream();
        let conn = l.open_stream(stream).expect("opened");
        assert!(l.push(stream, "{}"));
        l.end_stream(stream);
        let mut cursor = 0;
        assert!(matches!(
            l.take(stream, &conn, &mut cursor),
            Take::Events(_)
        ));
        assert!(matches!(l.take(stream, &conn, &mut cursor), Take::Over));
        let Ok((_, again, after)) = l.resume(&format!("{stream}-0")) else {
            panic!("its event is held");
        };
        assert_eq!(after, 0);
        assert!(l.push(GET_STREAM, "{}"), "evicts the stream's event");
        l.detach(stream, &again);
        assert!(matches!(
            l.resume(&format!("{stream}-1")),
            Err(Refused::Unknown)
        ));
    }
}
