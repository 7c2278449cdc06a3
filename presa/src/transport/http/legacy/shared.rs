//! What a legacy session's streams share with the other replicas when its record is kept
//! in a session store ([`Shared`]): every event written through to the store's buffer,
//! in order, by one writer task per copy of the session; and the connections that read a
//! stream another replica writes, from the store ([`Follower`]).
//!
//! Each replica serving a session holds a copy of it, numbered by the store when the
//! copy is made ([`SessionStore::claim_copy`]; the copy `initialize` made is 0, and a
//! copy dropped for idleness and made again gets a new number). The number is the copy's
//! writer id in the store, and the range of its request stream numbers: copy `c` numbers
//! its request streams `c × 10^12 + 1`, `c × 10^12 + 2`, … (past `10^12 − 1` of them it
//! starts its range again), so two replicas never number a stream alike, every id is
//! still `<stream>-<seq>`, and numbering a request's stream costs no call to the store.
//! A server without a store numbers them 1, 2, … as copy 0 does.
//!
//! The standalone stream (0) has one writer at a time: the copy `initialize` made, then
//! the copy of the replica of the latest GET, which takes the stream over in the store
//! and goes on from the `seq` the store has; the store refuses the events of a copy that
//! lost it (which learns so through the fan-out, or from the refusal). The store's `seq`
//! is the last the copy before had written there, not the last it sent: the ids it sent
//! but had not yet written are given again, to the new writer's events, so the
//! standalone stream's ids are unique only while it keeps one writer. Every copy hears
//! the session's list changes and updates, and only the writer sends them; any other
//! frame for the standalone stream on a copy that does not write it is dropped (say, a
//! `notifications/cancelled` withdrawing a request it sent there before it lost the
//! stream). A plain GET that takes the stream over begins after its newest event (which
//! connection read what is known only where it was read); one with `Last-Event-ID`
//! replays what followed.
//!
//! A GET whose `Last-Event-ID` names a request stream this replica does not hold reads
//! it from the store: the events after that id, then each new one, until the stream
//! ends. The replica writing the stream is told through the fan-out that a connection
//! elsewhere took the stream over (its own connection to it ends) and from then on says,
//! through the fan-out, when it wrote more; the follower then reads the store again. It
//! also reads it every [`RECHECK`], in case a word was lost (or there is no fan-out).

use super::live::{Conn, GET_STREAM, Live};
use crate::pipeline::Core;
use crate::session::{EventBounds, SessionStore, StreamEvent};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How many request stream numbers each copy of a session has.
pub(super) const COPY_STREAMS: u64 = 1_000_000_000_000;

/// Longest a follower waits before reading the store again without being told.
pub(super) const RECHECK: Duration = Duration::from_secs(1);

/// Least room for writes waiting for the store, per session copy.
const MIN_QUEUE: usize = 64;

/// Most room for them: the buffer's event bound may be far larger than any queue
/// should be (a channel's room is allocated in blocks, and has a ceiling).
const MAX_QUEUE: usize = 4096;

/// What a session copy needs to share its streams: set by the request that made it.
pub(super) struct Sharing {
    pub(super) store: Arc<dyn SessionStore>,
    pub(super) core: Arc<Core>,
    /// The copy's number.
    pub(super) copy: u64,
    /// Whether the copy writes the standalone stream from the start (the one
    /// `initialize` made does).
    pub(super) standalone: bool,
}

/// The store side of a session copy.
pub(super) struct Shared {
    pub(super) store: Arc<dyn SessionStore>,
    pub(super) core: Arc<Core>,
    pub(super) copy: u64,
    writes: mpsc::Sender<Write>,
    /// Whether this copy writes the standalone stream.
    standalone: AtomicBool,
}

/// One write waiting for the store, in the order the copy made them.
pub(super) enum Write {
    Event(StreamEvent),
    End(u64),
    /// Tell a follower of the stream to read the store again, once what came before is
    /// written.
    Notice(u64),
}

impl Shared {
    /// The store side of copy `live` of a session, its writer task started.
    pub(super) fn start(
        sharing: Sharing,
        live: Weak<Live>,
        id: String,
        bounds: EventBounds,
    ) -> Shared {
        let (writes, rx) = mpsc::channel(queue_room(bounds.events));
        tokio::spawn(write_through(
            rx,
            Arc::clone(&sharing.store),
            Arc::clone(&sharing.core),
            id,
            sharing.copy,
            bounds,
            live,
        ));
        Shared {
            store: sharing.store,
            core: sharing.core,
            copy: sharing.copy,
            writes,
            standalone: AtomicBool::new(sharing.standalone),
        }
    }

    /// The number of this copy's `local`th request stream (from 1).
    pub(super) fn stream_number(&self, local: u64) -> u64 {
        stream_number(self.copy, local)
    }

    /// Whether this copy writes request stream `stream`.
    pub(super) fn writes(&self, stream: u64) -> bool {
        stream != GET_STREAM && stream / COPY_STREAMS == self.copy
    }

    /// Queues a write; past the queue's room it is dropped (the event stays in this
    /// replica's buffer, and a resumption elsewhere misses it).
    pub(super) fn write(&self, write: Write) {
        if self.writes.try_send(write).is_err() {
            tracing::warn!("a legacy session's event could not wait for the session store");
        }
    }

    /// Whether this copy writes the standalone stream.
    pub(super) fn writes_standalone(&self) -> bool {
        self.standalone.load(Ordering::Acquire)
    }

    /// Sets whether it does; whether it did.
    pub(super) fn set_standalone(&self, on: bool) -> bool {
        self.standalone.swap(on, Ordering::AcqRel)
    }

    /// Tells the other replicas that connection `conn` of this copy now reads `stream`:
    /// the one that read it before ends, and the replica writing it says when it wrote
    /// more.
    pub(super) fn announce_taken(&self, session: &str, stream: u64, conn: &Conn) {
        let message = json!({"stream": stream, "taken": {"copy": self.copy, "conn": conn.id()}});
        self.core.pass_to_session(session, message);
    }
}

/// The room for writes waiting for the store of a copy whose buffer holds `events`: as
/// many as the buffer, within [`MIN_QUEUE`] and [`MAX_QUEUE`].
fn queue_room(events: usize) -> usize {
    events.clamp(MIN_QUEUE, MAX_QUEUE)
}

/// The number of copy `copy`'s `local`th request stream (from 1): in its range, never
/// its first number (`copy × 10^12`, which is the standalone stream's for copy 0).
fn stream_number(copy: u64, local: u64) -> u64 {
    let within = 1 + local.saturating_sub(1) % (COPY_STREAMS - 1);
    copy.saturating_mul(COPY_STREAMS).saturating_add(within)
}

/// Writes a copy's events and ends to the store in order, each announced when a
/// connection on another replica follows its stream, until the copy is gone.
async fn write_through(
    mut rx: mpsc::Receiver<Write>,
    store: Arc<dyn SessionStore>,
    core: Arc<Core>,
    id: String,
    copy: u64,
    bounds: EventBounds,
    live: Weak<Live>,
) {
    while let Some(write) = rx.recv().await {
        let (stream, ended) = match write {
            Write::Event(event) => match store.append_event(&id, copy, &event, bounds).await {
                Ok(true) => (event.stream, false),
                Ok(false) => {
                    if event.stream == GET_STREAM
                        && let Some(live) = live.upgrade()
                    {
                        // Another copy took the stream over (or the session ended).
                        live.lose_standalone();
                    }
                    continue;
                }
                Err(fault) => {
                    tracing::warn!("a legacy session's event could not be kept: {fault}");
                    continue;
                }
            },
            Write::End(stream) => {
                if let Err(fault) = store.end_stream(&id, stream, copy).await {
                    tracing::warn!("a legacy session's stream could not be ended: {fault}");
                }
                (stream, true)
            }
            Write::Notice(stream) => (stream, false),
        };
        if live.upgrade().is_some_and(|l| l.is_followed(stream, ended)) {
            core.pass_to_session(&id, json!({"stream": stream, "written": true}));
        }
    }
}

/// A connection reading a stream another replica writes, from the store.
pub(super) struct Follower {
    pub(super) live: Arc<Live>,
    pub(super) stream: u64,
    pub(super) conn: Conn,
    /// The last `seq` written.
    pub(super) cursor: u64,
    /// Written first: what the store held after the client's last event.
    pub(super) first: Option<String>,
    /// The endpoint shutting down.
    pub(super) closing: CancellationToken,
    pub(super) _active: super::live::Active,
}

impl Follower {
    /// The next chunk of the body; `None` once the stream ended and was read to its end,
    /// the session ended, another connection took the stream over, or the store failed.
    pub(super) async fn next(&mut self) -> Option<String> {
        if let Some(first) = self.first.take().filter(|f| !f.is_empty()) {
            return Some(first);
        }
        let shared = self.live.shared()?;
        loop {
            if !self.live.follows(self.stream, &self.conn) {
                return None;
            }
            match shared
                .store
                .read_stream(self.live.id(), self.stream, self.cursor)
                .await
            {
                Ok(Some(read)) => {
                    if let Some(last) = read.events.last() {
                        self.cursor = last.seq;
                        return Some(read.events.iter().map(StreamEvent::wire).collect());
                    }
                    if read.ended {
                        return None;
                    }
                }
                Ok(None) => return None,
                Err(fault) => {
                    tracing::warn!("a legacy session's stream could not be read: {fault}");
                    return None;
                }
            }
            tokio::select! {
                () = self.conn.woken() => {}
                () = tokio::time::sleep(RECHECK) => {}
                () = self.closing.cancelled() => return None,
            }
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.live.unfollow(self.stream, &self.conn);
    }
}

/// What a message another replica passed says about a stream: its number, and who took
/// it over (copy and connection) or that more of it was written.
pub(super) enum Passed {
    Taken { stream: u64, copy: u64, conn: u64 },
    Written { stream: u64 },
}

impl Passed {
    /// Reads a message about a stream; `None` for anything else.
    pub(super) fn read(message: &Value) -> Option<Passed> {
        let stream = message.get("stream")?.as_u64()?;
        if let Some(taken) = message.get("taken") {
            return Some(Passed::Taken {
                stream,
                copy: taken.get("copy")?.as_u64()?,
                conn: taken.get("conn")?.as_u64()?,
            });
        }
        message.get("written").map(|_| Passed::Written { stream })
    }
}

#[cfg(test)]
mod tests {
    use super::{COPY_STREAMS, MAX_QUEUE, MIN_QUEUE, queue_room, stream_number};

    /// A copy's queue to the store has room for as many writes as its buffer holds
    /// events, at least [`MIN_QUEUE`], at most [`MAX_QUEUE`] however large the buffer.
    #[test]
    fn the_queue_to_the_store_is_bounded_both_ways() {
        assert_eq!(queue_room(1), MIN_QUEUE);
        assert_eq!(queue_room(MIN_QUEUE), MIN_QUEUE);
        assert_eq!(queue_room(MIN_QUEUE + 1), MIN_QUEUE + 1);
        assert_eq!(queue_room(MAX_QUEUE), MAX_QUEUE, "at the bound");
        assert_eq!(queue_room(MAX_QUEUE + 1), MAX_QUEUE, "just past it");
        assert_eq!(queue_room(usize::MAX), MAX_QUEUE);
    }

    /// A copy numbers its request streams in its own range, from its second number to
    /// its last; one past the last starts the range again (never on the range's first
    /// number, which for copy 0 is the standalone stream's).
    #[test]
    fn each_copy_numbers_its_streams_in_its_own_range() {
        assert_eq!(stream_number(0, 1), 1);
        assert_eq!(stream_number(0, 2), 2);
        assert_eq!(stream_number(2, 1), 2 * COPY_STREAMS + 1);
        let last = COPY_STREAMS - 1;
        assert_eq!(stream_number(2, last), 3 * COPY_STREAMS - 1, "at the bound");
        assert_eq!(
            stream_number(2, last + 1),
            2 * COPY_STREAMS + 1,
            "just past it"
        );
        assert_eq!(stream_number(0, last + 1), 1, "never the standalone stream");
        assert_eq!(stream_number(u64::MAX, 1), u64::MAX, "no overflow");
    }
}
