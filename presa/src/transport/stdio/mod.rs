//! The stdio transport (wire section 14): one JSON-RPC message per line on stdin, one per
//! line on stdout, nothing else on stdout (logs go to stderr through `tracing`).
//!
//! Requests run concurrently, at most [`StdioConfig::max_in_flight`] at once: past the
//! bound the reader stops reading stdin, so memory stays bounded under a pipelined flood.
//! Queued output holds slots too, so a client that stops reading makes the server stop
//! reading: an answer queued on its own holds its request's slot until written, and so
//! does a request that queued notifications; a batch of answers made in the read loop
//! holds one slot for the answers of requests that queued nothing (see `Answers`). So at
//! most `max_in_flight` frames hold slots, each an answer, a batch of about 64 KiB, or a
//! cancelled request's release, behind what its requests queued before it. The writer
//! flushes whenever no further message is queued: a waiting client never sits on an
//! unflushed response, and a flood is not paid for with one flush per line. Answers made
//! in the read loop itself (most requests complete at their first poll) reach the writer
//! in those batches, handed over before the loop waits for input or for a slot.
//!
//! Past the in-flight bound stdin is not read, so a `notifications/cancelled` that arrives
//! behind waiting requests is read once a slot frees: keep handlers finite, or raise the
//! bound, when clients pipeline more than it.
//!
//! Serving stops at stdin's end or, for [`Server::serve_stdio`], on SIGINT or SIGTERM
//! (`transport::shutdown`); the read loop is raced against the signal, so it stops whether it
//! waits for input or for a slot. From then on nothing more is read, and everything ends
//! within [`StdioConfig::shutdown_grace`]: requests in flight finish or are cancelled at
//! its end, and the writer writes what they queued until then (or for `LAST_WRITE`, when
//! the requests took the whole grace), and past that while the client keeps reading,
//! for at most `MOST_PAST_GRACE` (5 s); serving ends as soon as nothing is in flight and
//! everything queued is written. A client that stops reading is given up on between two lines, what was not
//! written dropped whole: a client that reads never gets half a line (only one that
//! took no byte of a line begun for `STALLED` is left it). Pipes are read and written
//! on the reactor;
//! anything else through threads of its own (`threaded`); so neither a read nor a write
//! can outlast serving's end.

mod lines;
mod threaded;

use crate::context::{Backlog, Cancellation, LazyBacklog, Outbound, Queued};
use crate::pipeline::{Era, Exchange, NotificationEffect, Reply, Served, Transport};
use crate::server::Server;
use crate::session::{Channel, Session};
use crate::transport::shutdown::{DEFAULT_DRAIN, Stop};
use crate::wire::jsonrpc::{self, Inbound, RequestId};
use lines::{Line, Lines, ReadLines};
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::time::Instant;

/// Settings of the stdio transport.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StdioConfig {
    /// Longest line accepted, in bytes (default 4 MiB), counting a `\r` before the
    /// `\n` but not the `\n`; longer lines get -32600.
    pub max_line_bytes: usize,
    /// Most requests served at once (default 64), counting those whose answer is not
    /// yet written; a batch of answers made in the read loop, of requests that queued no
    /// notification, counts as one (about 64 KiB). Past it stdin is not read.
    pub max_in_flight: usize,
    /// How long serving may go on once it stops (stdin closed, or a stop signal):
    /// requests in flight may finish until then and are cancelled after; what they queued
    /// for stdout is written until then too, and after it while the client keeps reading,
    /// for at most 5 s more (`MOST_PAST_GRACE`), so a stop always ends within the grace
    /// and 5 s (default 10 s).
    pub shutdown_grace: Duration,
    /// Whether [`Server::serve_stdio`] stops on SIGINT and SIGTERM (Ctrl-C off Unix)
    /// (default on). Off, the signals are left to the program; [`Server::serve_io`] never
    /// listens for them.
    pub stop_on_signals: bool,
}

impl Default for StdioConfig {
    fn default() -> Self {
        StdioConfig {
            max_line_bytes: 4 * 1024 * 1024,
            max_in_flight: 64,
            shutdown_grace: DEFAULT_DRAIN,
            stop_on_signals: true,
        }
    }
}

impl StdioConfig {
    /// Sets the longest line accepted, in bytes.
    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes;
        self
    }

    /// Sets the most requests served at once (at least 1; `usize::MAX`: no bound).
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    /// Sets how long serving may go on once it stops (stdin closed, or a stop signal).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Sets whether [`Server::serve_stdio`] stops on SIGINT and SIGTERM.
    pub fn stop_on_signals(mut self, on: bool) -> Self {
        self.stop_on_signals = on;
        self
    }
}

/// A line queued for stdout (or, from the read loop's [`Answers`], several lines), with
/// the in-flight permit it holds until written.
struct Frame {
    text: String,
    /// Whether `text` ends with its own newline (a batch of answers); otherwise the
    /// writer adds one.
    ended: bool,
    _permit: Option<OwnedSemaphorePermit>,
    _queued: Option<Queued>,
}

impl Frame {
    /// The answer to a request (its response or an error): holds the request's in-flight
    /// slot until written.
    fn answer(text: String, permit: Option<OwnedSemaphorePermit>) -> Frame {
        Frame {
            text,
            ended: false,
            _permit: permit,
            _queued: None,
        }
    }

    /// No text, only the in-flight slot of a request that ends unanswered (cancelled):
    /// freed once what the request queued before it is written, as the slot of an answer
    /// queued on its own is.
    /// Otherwise a client that stops reading could cancel requests that notify and send
    /// new ones, each round leaving its notifications queued with no slot held for them.
    fn release(permit: Option<OwnedSemaphorePermit>) -> Frame {
        Frame {
            text: String::new(),
            ended: true,
            _permit: permit,
            _queued: None,
        }
    }
}

/// One request's in-flight slot, taken from the semaphore only when something has to
/// hold it: a request that waits, a batch's first answer, an answer whose request queued
/// notifications. An answer that joins the loop's batch when its request queued nothing
/// frees its slot at once, so it need not take one at all: under a pipelined flood most
/// requests never touch the semaphore (a compare-and-swap, a reference count, and a lock
/// when the permit is given back, saved for each). The read loop makes a free slot only
/// when a permit is available, and only the loop takes permits (everyone else gives them
/// back), so the permit is still there when the slot is taken.
enum Slot<'a> {
    /// A permit the loop already holds (it waited for it).
    Held(OwnedSemaphorePermit),
    /// A permit available in this semaphore, taken on demand.
    Free(&'a Arc<Semaphore>),
}

impl Slot<'_> {
    /// The permit, taken now if it was not yet. `None` would mean a broken invariant
    /// (another taker of permits): the request then runs without a slot rather than
    /// failing.
    fn take(self) -> Option<OwnedSemaphorePermit> {
        match self {
            Slot::Held(permit) => Some(permit),
            Slot::Free(permits) => {
                let permit = Arc::clone(permits).try_acquire_owned().ok();
                debug_assert!(permit.is_some(), "a free slot found no permit");
                permit
            }
        }
    }
}

/// The answers made in the read loop itself (a request that completed at its first
/// poll, an error reply), gathered into one frame: one queue entry, one wake-up of the
/// writer and one write per batch instead of one per answer. The batch keeps its first
/// answer's slot until it is written. A later answer whose request queued nothing frees
/// its slot as it joins: that request is over, and the batch's size is bounded by bytes
/// instead ([`BATCH_BYTES`] past its last answer). A later answer whose request queued
/// notifications merges its slot into the batch's, freed once the batch (behind those
/// notifications) is written, so what such requests queue stays bounded by slots as it
/// would be without the batch. A pipelined burst of plain calls is so written about 64
/// KiB at a time rather than `max_in_flight` answers at a time. The loop hands the batch
/// over before anything that may wait: a read of stdin (so a waiting client is never
/// left without its answer), a wait for a slot (the batch holds slots itself), the end of
/// input; and when it reaches [`BATCH_BYTES`]. So no batch is held while the loop is
/// suspended, and one dropped all the same (by a panic unwinding the loop) is handed
/// over.
///
/// An answer waits in the batch while the loop serves the lines after it that are
/// already read (at most a read's worth, 64 KiB), so one handler that computes for long
/// before it first returns holds back the answers made just before it, as it holds
/// back the reading of the next lines (the transports chapter of the book says so).
struct Answers {
    text: String,
    /// The last answer's own buffer, emptied, for the next answer to be written in
    /// ([`Exchange::buffer`]).
    spare: String,
    permit: Option<OwnedSemaphorePermit>,
    /// The size of the last batch handed over, to make the next one that size at once.
    last_len: usize,
    /// The writer's queue. Dropped with the batch, which must then go before the loop
    /// waits for the writer to end.
    tx: mpsc::UnboundedSender<Frame>,
}

impl Answers {
    fn new(tx: mpsc::UnboundedSender<Frame>) -> Self {
        Answers {
            text: String::new(),
            spare: String::new(),
            permit: None,
            last_len: 0,
            tx,
        }
    }

    /// Adds one answer, which holds `slot`. The batch keeps the first answer's slot
    /// until it is written; a later one's is kept with it when `queued` (its request
    /// queued frames, which the slot must outlast), and freed at once otherwise (a free
    /// slot is then never taken).
    fn push(&mut self, answer: &str, slot: Slot<'_>, queued: bool) {
        if self.text.is_empty() {
            self.permit = slot.take();
            self.text.reserve(self.last_len);
        } else if queued && let Some(permit) = slot.take() {
            match &mut self.permit {
                Some(held) => held.merge(permit),
                None => self.permit = Some(permit),
            }
        }
        self.text.push_str(answer);
        self.text.push('\n');
        if self.text.len() >= BATCH_BYTES {
            self.hand_over();
        }
    }

    /// Keeps an answer's buffer, once copied into the batch, for the next answer to be
    /// written in (one that grew large is let go).
    #[inline]
    fn recycle(&mut self, answer: String) {
        if answer.capacity() <= SPARE_BYTES {
            self.spare = answer;
        }
    }

    /// Queues the batch for the writer, when there is one.
    fn hand_over(&mut self) {
        if !self.text.is_empty() {
            self.last_len = self.text.len().min(BATCH_BYTES);
            let _ = self.tx.send(Frame {
                ended: true,
                ..Frame::answer(std::mem::take(&mut self.text), self.permit.take())
            });
        }
    }
}

impl Drop for Answers {
    fn drop(&mut self) {
        self.hand_over();
    }
}

/// Past this many bytes, queued output is written (the writer) or handed over (the read
/// loop's [`Answers`]) before more is gathered.
const BATCH_BYTES: usize = 64 * 1024;

/// The largest answer buffer the read loop keeps for the next answer.
const SPARE_BYTES: usize = 16 * 1024;

/// The gate of one in-flight request: once closed (on cancellation, or when its response
/// is queued or batched), nothing more is queued for it, neither notifications nor the
/// response.
///
/// A request answered in the read loop leaves its gate to the next request when nothing
/// else holds it (no handler kept its context): the loop closes it then, while no one
/// else can reach it, and opens it afresh for the next request (see [`Gate::retire`]).
/// Under a pipelined flood of plain calls one gate so serves request after request, with
/// no allocation, no clone of the writer's queue, and no lock unless a request sends
/// notifications.
struct Gate {
    open: Mutex<bool>,
    /// Made lazily: most requests complete before anyone waits on it.
    cancel: Cancellation,
    tx: mpsc::UnboundedSender<Frame>,
    /// Whether this is a subscription stream (ended at once when stdin closes). Set by
    /// the read loop before the request starts; read only for waiting requests, under
    /// the waiting map's lock.
    listen: AtomicBool,
    /// This request's frames not yet written (made when first used).
    backlog: LazyBacklog,
}

impl Gate {
    fn new(tx: &mpsc::UnboundedSender<Frame>) -> Gate {
        Gate {
            open: Mutex::new(true),
            cancel: Cancellation::default(),
            tx: tx.clone(),
            listen: AtomicBool::new(false),
            backlog: LazyBacklog::default(),
        }
    }

    /// Closes the gate of a request that has ended, when the read loop is the only holder
    /// left (`Arc::get_mut` proves it: no context or clone of it is left, so nothing can
    /// queue through it any more), and makes it fresh for the next request: open, with no
    /// backlog and a cancellation of its own (tokens handed out belong to the old one,
    /// which the next request's cancellation does not reach). Says what [`Gate::close`]
    /// and [`LazyBacklog::used`] would have; `None` when someone else still holds it.
    #[inline]
    fn retire(gate: &mut Arc<Gate>) -> Option<Retired> {
        let gate = Arc::get_mut(gate)?;
        // A poisoned flag reads as closed, as `close` reads it.
        let open = gate
            .open
            .get_mut()
            .is_ok_and(|open| std::mem::replace(open, true));
        if gate.open.is_poisoned() {
            gate.open.clear_poison();
            if let Ok(open) = gate.open.get_mut() {
                *open = true;
            }
        }
        let queued = gate.backlog.used();
        // Frames still queued hold the old backlog themselves; the next request starts
        // with none.
        if queued {
            gate.backlog = LazyBacklog::default();
        }
        if gate.cancel.made() {
            gate.cancel = Cancellation::default();
        }
        Some(Retired { open, queued })
    }

    fn send(&self, text: String) -> bool {
        let Ok(open) = self.open.lock() else {
            return false;
        };
        *open
            && self
                .tx
                .send(Frame {
                    text,
                    ended: false,
                    _permit: None,
                    _queued: Some(self.backlog.enqueue()),
                })
                .is_ok()
    }

    /// Queues the response (`None`: none, the request was cancelled) and closes the gate
    /// in one step: nothing more is written for this request afterwards (notifications
    /// must stop at completion). Either way the request's slot is freed only once what it
    /// queued is written.
    fn finish(&self, text: Option<String>, permit: Option<OwnedSemaphorePermit>) {
        let open = self.close();
        let frame = match text {
            Some(text) if open => Frame::answer(text, permit),
            _ => Frame::release(permit),
        };
        let _ = self.tx.send(frame);
    }

    /// Closes the gate, saying whether it was open: the response of a request answered in
    /// the read loop then goes into the loop's [`Answers`] instead of the queue. Every
    /// frame the request queued before is ahead of that batch in the queue, so its
    /// notifications still come before its response.
    fn close(&self) -> bool {
        self.open
            .lock()
            .is_ok_and(|mut open| std::mem::replace(&mut *open, false))
    }

    fn close_and_cancel(&self) {
        if let Ok(mut open) = self.open.lock() {
            *open = false;
        }
        self.cancel.cancel();
    }
}

impl Outbound for Gate {
    fn cancellation(&self) -> &Cancellation {
        &self.cancel
    }

    fn send(&self, frame: String) -> bool {
        Gate::send(self, frame)
    }

    fn backlog(&self) -> Option<Arc<Backlog>> {
        Some(self.backlog.shared())
    }
}

/// What a request's gate said when it was closed: whether it was still open (so the
/// response is written) and whether the request queued frames (so the response's slot
/// must outlast them).
struct Retired {
    open: bool,
    queued: bool,
}

/// Where the read loop gets each request's gate: the one the last request answered in the
/// loop left behind ([`Gate::retire`]), or a new one.
struct Gates {
    tx: mpsc::UnboundedSender<Frame>,
    spare: Option<Arc<Gate>>,
}

impl Gates {
    fn new(tx: &mpsc::UnboundedSender<Frame>) -> Gates {
        Gates {
            tx: tx.clone(),
            spare: None,
        }
    }

    /// An open gate for the next request.
    fn take(&mut self, listen: bool) -> Arc<Gate> {
        let gate = self
            .spare
            .take()
            .unwrap_or_else(|| Arc::new(Gate::new(&self.tx)));
        gate.listen.store(listen, Ordering::Relaxed);
        gate
    }

    /// Keeps a retired gate for the next request.
    fn give_back(&mut self, gate: Arc<Gate>) {
        self.spare = Some(gate);
    }
}

type InFlight = Arc<Waiting>;

/// The requests that wait (served by a task of their own), by id: for duplicate ids and
/// cancellation. A request answered in the read loop is never in it, so under a
/// pipelined flood of plain calls it stays empty, and `len` lets the loop see that
/// without taking the lock (two atomic read-modify-writes per request). Only the loop
/// inserts, so it never reads 0 while an entry remains; a task's removal it may see
/// late, and then it takes the lock for nothing.
#[derive(Default)]
struct Waiting {
    map: Mutex<HashMap<RequestId, Arc<Gate>>>,
    /// The map's length, stored under the lock after each change.
    len: std::sync::atomic::AtomicUsize,
}

impl Waiting {
    fn lock(
        &self,
    ) -> std::sync::LockResult<std::sync::MutexGuard<'_, HashMap<RequestId, Arc<Gate>>>> {
        self.map.lock()
    }

    fn maybe_any(&self) -> bool {
        self.len.load(std::sync::atomic::Ordering::Acquire) > 0
    }

    /// The gate of a waiting request (`None` also when the map is unusable, after a
    /// panic while it was held).
    fn get(&self, id: &RequestId) -> Option<Arc<Gate>> {
        if !self.maybe_any() {
            return None;
        }
        self.lock().ok().and_then(|m| m.get(id).cloned())
    }

    #[inline]
    fn contains(&self, id: &RequestId) -> bool {
        self.maybe_any() && self.lock().is_ok_and(|m| m.contains_key(id))
    }

    /// Registers a waiting request; `Err` when the map is unusable.
    fn insert(&self, id: RequestId, gate: Arc<Gate>) -> Result<(), ()> {
        let mut map = self.lock().map_err(|_| ())?;
        map.insert(id, gate);
        self.len
            .store(map.len(), std::sync::atomic::Ordering::Release);
        Ok(())
    }

    fn remove(&self, id: &RequestId) {
        if let Ok(mut map) = self.lock() {
            map.remove(id);
            self.len
                .store(map.len(), std::sync::atomic::Ordering::Release);
        }
    }

    fn clear(&self) {
        if let Ok(mut map) = self.lock() {
            map.clear();
            self.len.store(0, std::sync::atomic::Ordering::Release);
        }
    }
}

impl Server {
    /// Serves this server on the process's stdin and stdout until stdin closes or SIGINT
    /// or SIGTERM arrives (see [`Server::serve_stdio_with`]).
    pub async fn serve_stdio(&self) -> io::Result<()> {
        self.serve_stdio_with(StdioConfig::default()).await
    }

    /// Like [`Server::serve_stdio`], with settings.
    ///
    /// Serving stops when stdin closes, or on SIGINT or SIGTERM (Ctrl-C off Unix) unless
    /// [`StdioConfig::stop_on_signals`] is off. Their handlers are installed when this
    /// future is first polled: from then on neither signal ends the process by itself
    /// (tokio keeps the handlers for the life of the process). Once serving stops, stdin
    /// is not read any more; requests in flight may finish until
    /// [`StdioConfig::shutdown_grace`] has passed, and are cancelled then; what was queued
    /// for stdout is written within that grace too (or, past it, for a short while once
    /// the requests are over, and for as long as the client keeps reading), whole lines
    /// only: a client that stops reading is given up on between two lines, what it did
    /// not take dropped whole; then this returns `Ok`. On a signal the client is still
    /// there, so subscription streams end gracefully, each with its
    /// `notifications/cancelled` (as [`Server::close_streams`] ends them, which ends the
    /// server's streams on every transport); when stdin closes they end at once.
    ///
    /// No read of stdin or write of stdout can hold the process once this returns: pipes
    /// are read and written without blocking, and anything else (a socket, a terminal, a
    /// file) by threads of their own that no shutdown waits for.
    ///
    /// Fails when the signal handlers cannot be installed, or when writing stdout fails.
    /// Needs a runtime with its IO and time drivers on (as `#[tokio::main]` builds one):
    /// tokio panics without them.
    pub async fn serve_stdio_with(&self, config: StdioConfig) -> io::Result<()> {
        let stop = Stop::new(std::future::pending(), config.stop_on_signals)?;
        // The read loop runs as a task of the runtime, beside the writer and the request
        // tasks, rather than on the thread that awaits this (under `#[tokio::main]`, the
        // main thread): hand-offs between them then stay on one worker instead of waking
        // another thread for every batch.
        let server = self.clone();
        let stopped = Arc::new(AtomicBool::new(false));
        let stop_flag = Arc::clone(&stopped);
        let serving = tokio::spawn(async move {
            let (reader, writer) = stdio_streams()?;
            server
                .serve_lines(reader, writer, config, &stop_flag, stop.wait())
                .await
        });
        // Dropping this future (a `select!` against Ctrl-C, a timeout) stops serving, as
        // it would if the loop ran here: the loop dispatches no line read after the drop,
        // even one it reads before the abort reaches it. Nothing is drained then.
        let _stop_on_drop = StopOnDrop {
            stopped,
            serving: serving.abort_handle(),
        };
        match serving.await {
            Ok(result) => result,
            Err(e) => Err(io::Error::other(e)),
        }
    }

    /// Serves newline-delimited JSON-RPC on any reader and writer (stdio, a pipe, a
    /// socket). Returns when the reader reaches its end and the requests in flight have
    /// finished (or the grace period ran out), or, once the writer has failed, before the
    /// next line is read (with the writer's error).
    ///
    /// It listens for no signal ([`StdioConfig::stop_on_signals`] is not looked at): the
    /// program that hands it its streams decides when serving ends, by ending the reader
    /// (which drains as stdin's end does) or by dropping this future (which drains
    /// nothing).
    pub async fn serve_io<R, W>(&self, reader: R, writer: W, config: StdioConfig) -> io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.serve_lines(
            reader,
            writer,
            config,
            &AtomicBool::new(false),
            std::future::pending(),
        )
        .await
    }

    /// [`Server::serve_io`], stopping before the next line is dispatched once `stopped`
    /// is set, and draining as on a signal once `stop` completes.
    async fn serve_lines<R, W>(
        &self,
        reader: R,
        writer: W,
        config: StdioConfig,
        stopped: &AtomicBool,
        stop: impl Future<Output = ()>,
    ) -> io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.core.start_fanout();
        let (tx, rx) = mpsc::unbounded_channel::<Frame>();
        // Told to end once serving is over: a request context a handler kept (in a task
        // of its own) holds a sender of the queue, so the queue may never close.
        // It is also told then by when it may give up on a client that does not read.
        let (end_writer, writer_ends) = watch::channel(None);
        let writer_task = tokio::spawn(write_frames(writer, rx, writer_ends));
        // Past `Semaphore::MAX_PERMITS` (`usize::MAX >> 3`) tokio panics: a larger bound,
        // such as `usize::MAX` for none, is that many, unreachable all the same.
        let most = config.max_in_flight.clamp(1, Semaphore::MAX_PERMITS);
        let permits = Arc::new(Semaphore::new(most));
        let in_flight: InFlight = Arc::default();
        let mut tasks = tokio::task::JoinSet::new();
        let mut lines = Lines::new(reader, config.max_line_bytes);
        let mut answers = Answers::new(tx.clone());
        let mut gates = Gates::new(&tx);
        let mut era = Pinned::Open;

        // The read loop, raced against `stop`: it waits only to read and for a slot, and
        // either wait ends when `stop` completes (a line read and not yet served then
        // goes unanswered, as one still unread does).
        let read = async {
            loop {
                // Reap finished tasks so the set does not grow with the session.
                while tasks.try_join_next().is_some() {}
                // The writer ended (it failed): stop serving, and return its error below.
                if tx.is_closed() {
                    break;
                }
                let read = lines.next_line(&mut || answers.hand_over()).await;
                if stopped.load(Ordering::Acquire) {
                    break;
                }
                let next = match read {
                    Ok(Line::Eof) => break,
                    Ok(Line::TooLong) => Some(Next::Reply(too_long(config.max_line_bytes))),
                    Ok(Line::Text(line)) => self.read_message(line, &in_flight, &mut era, &tx),
                    Err(e) => return Err(e),
                };
                let Some(next) = next else {
                    continue;
                };
                // Backpressure, the one wait of the loop besides reading: everything that
                // is answered (error replies too, so a client that never reads cannot make
                // them pile up) holds an in-flight slot until its answer is written, or,
                // in the loop's batch and when its request queued nothing, until it joins
                // the batch (which holds a slot until written); past the bound stdin is
                // not read. Notifications take no slot: one is acted on as soon as it is
                // read, but one queued behind a request that waits here is read only once
                // a slot frees (the module doc says so). The loop's batch holds slots, so
                // it is handed to the writer before waiting. A slot is taken from the
                // semaphore only when something must hold it ([`Slot`]).
                let slot = if permits.available_permits() > 0 {
                    Slot::Free(&permits)
                } else {
                    answers.hand_over();
                    Slot::Held(
                        Arc::clone(&permits)
                            .acquire_owned()
                            .await
                            .map_err(io::Error::other)?,
                    )
                };
                match next {
                    Next::Request(incoming) => self.start_request(
                        incoming,
                        slot,
                        &mut gates,
                        &mut answers,
                        &in_flight,
                        &mut tasks,
                    ),
                    Next::Reply(text) => answers.push(&text, slot, false),
                }
            }
            Ok(())
        };
        let signalled = tokio::select! {
            // The loop first: under a flood it is polled without `stop` being polled too.
            biased;
            read = read => {
                read?;
                false
            }
            () = stop => true,
        };
        // Serving is over: everything below ends within the grace (or soon after it, for
        // the last writes).
        let grace_from = Instant::now();
        // A legacy session ends (its feed holds a sender of the queue).
        if let Pinned::Legacy(session) = &era {
            session.close();
        }
        drop(era);
        // Handed over now, and its sender dropped before the writer is awaited (as the
        // spare gate's).
        drop(answers);
        drop(gates);

        if signalled {
            // The client is still there: its subscription streams end gracefully (each
            // answered with its `notifications/cancelled`), with the requests' drain.
            self.close_streams();
        } else if let Ok(map) = in_flight.lock() {
            // stdin closed: subscription streams end now (their client is gone).
            for gate in map.values().filter(|g| g.listen.load(Ordering::Relaxed)) {
                gate.close_and_cancel();
            }
        }
        // Other requests in flight may finish within the grace, then are cancelled.
        let drained = tokio::time::timeout(config.shutdown_grace, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            if let Ok(map) = in_flight.lock() {
                for gate in map.values() {
                    gate.close_and_cancel();
                }
            }
            tasks.shutdown().await;
        }
        // The gates hold senders of the writer's queue: drop them so the writer ends.
        in_flight.clear();
        drop(tx);
        // Every request has ended (each gate is closed, so a context kept elsewhere can
        // queue nothing more): the writer writes what is queued and ends. It may give up
        // on the client once what is left of the grace has passed, but no sooner than
        // `LAST_WRITE` from now, and only while the client takes nothing (see `Pace`): a
        // client that reads gets every answer made, one that does not cannot hold serving
        // for ever, and none is ever left half a line while it reads.
        let left = config
            .shutdown_grace
            .saturating_sub(grace_from.elapsed())
            .max(LAST_WRITE);
        let _ = end_writer.send(Some(Instant::now() + left));
        match writer_task.await {
            Ok(result) => result,
            Err(e) => Err(io::Error::other(e)),
        }
    }
}

/// The least time the writer gets, once every request has ended, to write what they
/// queued (when the grace has run out by then); and, past that, how long a client may
/// take no byte, between two lines, before the writer gives up on it.
const LAST_WRITE: Duration = Duration::from_millis(200);

/// The longest the writer goes on past its deadline for a client that keeps reading (too
/// slowly to take everything queued): so that a stop always ends within a known time (a
/// supervisor's stop timeout can count on the grace and this). A client still reading
/// then may be left part of a line.
const MOST_PAST_GRACE: Duration = Duration::from_secs(5);

/// How long a client may take no byte of a line begun, past the writer's deadline,
/// before the writer gives up on it: longer than [`LAST_WRITE`], since giving up then
/// leaves the client half a line. Only a client that has stopped reading gets there.
const STALLED: Duration = Duration::from_secs(1);

/// What one line of input asks the read loop to answer.
enum Next {
    /// A request to serve, in its era.
    Request(Incoming),
    /// A reply already made (an error), to queue.
    Reply(String),
}

impl Server {
    /// Reads one complete line: a request to serve, an error to answer, or nothing to
    /// answer (`None`: a notification, a response, a blank line; a notification is acted
    /// on here: a cancellation closes its request's gate).
    #[inline]
    fn read_message(
        &self,
        line: &[u8],
        in_flight: &InFlight,
        era: &mut Pinned,
        tx: &mpsc::UnboundedSender<Frame>,
    ) -> Option<Next> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        match jsonrpc::decode_lifting(line) {
            Ok(Inbound::Request(request)) => self.era_of(request, era, tx),
            Err(rejection) if !rejection.notification => Some(Next::Reply(rejection.to_response())),
            Err(_) => None,
            Ok(Inbound::Response(response)) => {
                if let Pinned::Legacy(session) = era
                    && !session.deliver(response)
                {
                    tracing::debug!("the client answered a request the server did not send");
                }
                None
            }
            Ok(Inbound::Notification(n)) => {
                let effect = match era {
                    Pinned::Legacy(session) => self.core.accept_legacy_notification(&n, session),
                    _ => self.core.accept_notification(&n, &Transport::Stdio),
                };
                if let Ok(NotificationEffect::Cancel(id)) = effect
                    && let Some(gate) = in_flight.get(&id)
                {
                    gate.close_and_cancel();
                }
                None
            }
        }
    }

    /// The era a request is served in, which the process's first `initialize` or first
    /// 2026-07-28 request decides for good (`basic/versioning.mdx`): a request carrying
    /// the modern `_meta` pins the process to 2026-07-28, an `initialize` without it to a
    /// legacy session. Until then a `ping` is answered as the legacy revisions answer it,
    /// and any other request is served as 2026-07-28 would serve it.
    #[inline]
    fn era_of(
        &self,
        request: jsonrpc::Request,
        era: &mut Pinned,
        tx: &mpsc::UnboundedSender<Frame>,
    ) -> Option<Next> {
        let chosen = match era {
            Pinned::Modern => Era::Modern,
            Pinned::Legacy(session) => Era::Legacy(Arc::clone(session)),
            Pinned::Open => {
                let claimed = request.meta.claims_modern();
                if claimed {
                    *era = Pinned::Modern;
                    Era::Modern
                } else if request.method == "initialize" && self.core.legacy {
                    let session = Session::new(None, &self.core.sessions);
                    session.set_channel(Arc::new(Stdout(tx.clone())));
                    *era = Pinned::Legacy(Arc::clone(&session));
                    Era::Legacy(session)
                } else if request.method == "ping" {
                    return Some(Next::Reply(jsonrpc::encode_result(&request.id, "{}")));
                } else {
                    Era::Modern
                }
            }
        };
        Some(Next::Request(Incoming {
            request,
            era: chosen,
        }))
    }

    /// Starts serving a request that holds `slot`. A request that completes without
    /// waiting (most do) is answered here, without a task, a map entry or a wake-up;
    /// only one that waits becomes a task, registered for cancellation and duplicate
    /// checks.
    #[inline]
    fn start_request(
        &self,
        Incoming { request, era }: Incoming,
        slot: Slot<'_>,
        gates: &mut Gates,
        answers: &mut Answers,
        in_flight: &InFlight,
        tasks: &mut tokio::task::JoinSet<()>,
    ) {
        let id = request.id.clone();
        // A map poisoned by a panic is not a reason to refuse the id: the request is
        // served, and answered -32603 below if it has to be registered.
        if in_flight.contains(&id) {
            answers.push(&duplicate_id(&id), slot, false);
            return;
        }
        let mut gate = gates.take(request.method == "subscriptions/listen");
        let exchange = Exchange {
            transport: Transport::Stdio,
            era,
            outbound: Arc::clone(&gate) as Arc<dyn Outbound>,
            buffer: std::mem::take(&mut answers.spare),
            principal: None,
        };
        let fut = match self.core.serve(request, exchange) {
            Served::Now(reply) => {
                // Unanswered only when cancelled before it started, with nothing queued:
                // its slot is free at once. The gate goes to the next request when no one
                // else holds it; otherwise it is closed for whoever does.
                let Retired { open, queued } = match Gate::retire(&mut gate) {
                    Some(retired) => {
                        gates.give_back(gate);
                        retired
                    }
                    None => Retired {
                        open: gate.close(),
                        queued: gate.backlog.used(),
                    },
                };
                if open && let Some(text) = answer_text(reply) {
                    answers.push(&text, slot, queued);
                    answers.recycle(text);
                }
                return;
            }
            // It waits: it registers its task's own waker at its next poll, in the task.
            Served::Later(rest) => rest,
        };
        // It holds its slot until its answer is written.
        let permit = slot.take();
        if in_flight.insert(id.clone(), Arc::clone(&gate)).is_err() {
            // Only after a panic while the map was held; the request still gets an
            // answer.
            gate.finish(Some(internal_error(&id)), permit);
            return;
        }
        let in_flight = Arc::clone(in_flight);
        tasks.spawn(async move {
            let reply = fut.await;
            // The id is free again before the client can see the answer.
            in_flight.remove(&id);
            finish(&gate, reply, permit);
        });
    }
}

/// The -32600 reply to a line longer than the bound. Error replies are built out of line
/// (`#[cold]`), so the read loop's common path stays small.
#[cold]
fn too_long(max_line_bytes: usize) -> String {
    let error = crate::Error::invalid_request(format!(
        "Invalid Request: message exceeds {max_line_bytes} bytes"
    ));
    jsonrpc::encode_error(None, &error)
}

/// The -32600 reply to a request whose id is already in flight.
#[cold]
fn duplicate_id(id: &RequestId) -> String {
    let error = crate::Error::invalid_request(
        "Invalid Request: a request with this id is already in flight",
    );
    jsonrpc::encode_error(Some(&id.to_value()), &error)
}

/// The -32603 reply when the in-flight map is unusable (after a panic while it was held).
#[cold]
fn internal_error(id: &RequestId) -> String {
    jsonrpc::encode_error(Some(&id.to_value()), &crate::Error::internal())
}

/// Queues a request's reply (closing its gate). On stdio the server ends a subscription
/// stream with `notifications/cancelled` for its id (errata W-2); a cancelled request
/// gets nothing.
fn finish(gate: &Gate, reply: Reply, permit: Option<OwnedSemaphorePermit>) {
    gate.finish(answer_text(reply), permit);
}

/// The line a request's reply writes, if any (see [`finish`]).
#[inline]
fn answer_text(reply: Reply) -> Option<String> {
    match reply {
        Reply::Response { body, .. } => Some(body),
        Reply::StreamEnded { id, .. } => Some(jsonrpc::encode_notification(
            "notifications/cancelled",
            &serde_json::json!({
                "requestId": id.to_value(),
                "reason": "The server ended the subscription"
            }),
        )),
        Reply::Cancelled => None,
    }
}

/// Aborts a task when dropped.
/// A request read from stdin, with the era it is served in.
struct Incoming {
    request: jsonrpc::Request,
    era: Era,
}

/// The era of a stdio process, decided by its first `initialize` or 2026-07-28 request.
enum Pinned {
    /// Not decided yet.
    Open,
    /// 2026-07-28.
    Modern,
    /// A legacy session, for the life of the process.
    Legacy(Arc<Session>),
}

/// A legacy session's messages that belong to no request, written to stdout.
struct Stdout(mpsc::UnboundedSender<Frame>);

impl Channel for Stdout {
    fn send(&self, frame: String) {
        // The writer is gone only when serving ends; the message then has nowhere to go.
        let _ = self.0.send(Frame::answer(frame, None));
    }
}

/// Stops the serving task when dropped: first the flag its loop looks at after each
/// line, then the abort, which takes effect at the task's next wait.
struct StopOnDrop {
    stopped: Arc<AtomicBool>,
    serving: tokio::task::AbortHandle,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::Release);
        self.serving.abort();
    }
}

type Reader = Box<dyn AsyncRead + Unpin + Send>;
type Writer = Box<dyn AsyncWrite + Unpin + Send>;

/// stdin and stdout. When they are pipes (as when a client spawns the server), each is
/// reopened through `/proc/self/fd` as a non-blocking pipe on the runtime's reactor, a new
/// open file of its own, so the flag touches nothing the process shares. (Input that the
/// program already read into `std::io::stdin()`'s buffer before serving is not seen
/// then; read nothing from stdin before `serve_stdio`.) Otherwise (a socket, a terminal,
/// a file, no `/proc`), each is read or written by a thread of its own ([`threaded`]),
/// which nothing waits for: a read or write there cannot be cancelled.
fn stdio_streams() -> io::Result<(Reader, Writer)> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsFd;
        use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
        use tokio::net::unix::pipe;
        // Only a pipe is reopened (checked on a duplicate of the descriptor, so nothing
        // is opened for a terminal or a device). O_NONBLOCK also keeps the open from
        // waiting for the other end; O_NOCTTY, belt and braces, from ever adopting a
        // terminal.
        let reopen = |fd: std::os::fd::BorrowedFd<'_>, n: u8, write: bool| {
            let is_pipe = fd
                .try_clone_to_owned()
                .ok()
                .map(std::fs::File::from)
                .and_then(|f| f.metadata().ok())
                .is_some_and(|m| m.file_type().is_fifo());
            if !is_pipe {
                return None;
            }
            std::fs::OpenOptions::new()
                .read(!write)
                .write(write)
                .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
                .open(format!("/proc/self/fd/{n}"))
                .ok()
        };
        let stdin = std::io::stdin();
        let reader: Reader = match reopen(stdin.as_fd(), 0, false).map(pipe::Receiver::from_file) {
            Some(Ok(rx)) => Box::new(rx),
            _ => Box::new(threaded::stdin()?),
        };
        let stdout = std::io::stdout();
        let writer: Writer = match reopen(stdout.as_fd(), 1, true).map(pipe::Sender::from_file) {
            Some(Ok(tx)) => Box::new(tx),
            _ => Box::new(threaded::stdout()?),
        };
        Ok((reader, writer))
    }
    #[cfg(not(target_os = "linux"))]
    {
        Ok((Box::new(threaded::stdin()?), Box::new(threaded::stdout()?)))
    }
}

/// Writes queued frames, flushing whenever the queue runs dry. Frames queued together
/// are copied into one buffer and written with one call (a batch of the read loop's
/// answers alone in the queue is written from where it lies); each frame (and the
/// permit it carries) is dropped only once the write that holds its bytes has completed.
///
/// Once `ending` holds a deadline (or its sender is gone: serving was dropped), only the
/// frames already queued are written, and the writer may give up on a client that stops
/// reading ([`Pace`]); what it did not write is then dropped whole.
async fn write_frames<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut rx: mpsc::UnboundedReceiver<Frame>,
    ending: watch::Receiver<Option<Instant>>,
) -> io::Result<()> {
    let mut pace = Pace::new(ending);
    let mut batch: Vec<u8> = Vec::with_capacity(BATCH_BYTES);
    let mut written: Vec<Frame> = Vec::new();
    loop {
        // Until told to end (or the server's loop is gone), frames as they come; then
        // only those already queued.
        let frame = if pace.deadline().is_some() {
            match rx.try_recv() {
                Ok(frame) => frame,
                Err(_) => break,
            }
        } else {
            tokio::select! {
                biased;
                frame = rx.recv() => match frame {
                    Some(frame) => frame,
                    None => break,
                },
                () = pace.told() => continue,
            }
        };
        let mut next = Some(frame);
        while let Some(frame) = next.take() {
            // `batch` is under BATCH_BYTES here: it is written as soon as it reaches it.
            next = rx.try_recv().ok();
            if batch.is_empty() && next.is_none() && frame.ended {
                // Alone and whole (a batch of the read loop's answers, as under a
                // pipelined flood): written from where it lies, without a copy.
                if !pace.write_lines(&mut writer, frame.text.as_bytes()).await? {
                    return Ok(());
                }
                continue;
            }
            batch.extend_from_slice(frame.text.as_bytes());
            if !frame.ended {
                batch.push(b'\n');
            }
            written.push(frame);
            if next.is_none() || batch.len() >= BATCH_BYTES {
                if !pace.write_lines(&mut writer, &batch).await? {
                    return Ok(());
                }
                batch.clear();
                written.clear();
                // A large response grew the buffer: give the memory back.
                if batch.capacity() > 2 * BATCH_BYTES {
                    batch.shrink_to(BATCH_BYTES);
                }
            }
        }
        if !pace.flush(&mut writer).await? {
            return Ok(());
        }
    }
    if pace.flush(&mut writer).await? {
        // A threaded stdout's shutdown is its flush; a pipe's does nothing.
        let _ = writer.shutdown().await;
    }
    Ok(())
}

/// When the writer gives up on its client. Before serving ends, never. Once told a
/// deadline, it gives up on a client that has taken no byte for [`LAST_WRITE`] (past the
/// deadline), between two lines; within a line, only one that has taken no byte of it
/// for [`STALLED`]. A client that keeps reading is written everything queued (which is
/// finite: the frames still queued when serving ends, nothing after), for at most
/// [`MOST_PAST_GRACE`] past the deadline.
struct Pace {
    ending: watch::Receiver<Option<Instant>>,
    /// The deadline, once told (the moment serving was dropped, if it was).
    deadline: Option<Instant>,
    /// When the client last took bytes (or the writer began).
    taken: Instant,
}

impl Pace {
    fn new(ending: watch::Receiver<Option<Instant>>) -> Pace {
        let deadline = *ending.borrow();
        Pace {
            ending,
            deadline,
            taken: Instant::now(),
        }
    }

    fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Completes once the deadline is told (or its sender is gone), and records it.
    async fn told(&mut self) {
        if self.deadline.is_some() {
            return;
        }
        self.deadline = match self.ending.wait_for(Option::is_some).await {
            Ok(deadline) => *deadline,
            Err(_) => Some(Instant::now()),
        };
    }

    /// When to give up waiting for the client, at a line's start or within one.
    fn give_up_at(&self, line_start: bool) -> Option<Instant> {
        let patience = if line_start { LAST_WRITE } else { STALLED };
        self.deadline
            .map(|d| d.max(self.taken + patience).min(d + MOST_PAST_GRACE))
    }

    /// Waits for `io` until the client is given up on (`None` then).
    async fn within<T>(
        &mut self,
        line_start: bool,
        io: impl Future<Output = io::Result<T>>,
    ) -> Option<io::Result<T>> {
        let mut io = std::pin::pin!(io);
        loop {
            match self.give_up_at(line_start) {
                None => tokio::select! {
                    biased;
                    done = &mut io => return Some(done),
                    () = self.told() => {}
                },
                Some(at) => tokio::select! {
                    biased;
                    done = &mut io => return Some(done),
                    () = tokio::time::sleep_until(at) => return None,
                },
            }
        }
    }

    /// Writes `bytes`, whole lines each ending with `\n`, and says whether all of them
    /// were: `false` when the client was given up on, the lines not begun dropped whole
    /// (logged).
    async fn write_lines<W: AsyncWrite + Unpin>(
        &mut self,
        writer: &mut W,
        bytes: &[u8],
    ) -> io::Result<bool> {
        let mut at = 0;
        while at < bytes.len() {
            let line_start = at == 0 || bytes[at - 1] == b'\n';
            let Some(wrote) = self.within(line_start, writer.write(&bytes[at..])).await else {
                if line_start {
                    tracing::warn!(
                        "stdout was not read once serving had ended: output still queued was dropped"
                    );
                } else {
                    tracing::warn!(
                        "stdout was not read once serving had ended: the line being written was left unfinished"
                    );
                }
                return Ok(false);
            };
            let wrote = wrote?;
            if wrote == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            at += wrote;
            self.taken = Instant::now();
        }
        Ok(true)
    }

    /// Flushes (a threaded stdout waits for whole lines already handed over to be
    /// written), and says whether it did before the client was given up on.
    async fn flush<W: AsyncWrite + Unpin>(&mut self, writer: &mut W) -> io::Result<bool> {
        match self.within(true, writer.flush()).await {
            Some(flushed) => flushed.map(|()| true),
            None => Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Answers, Arc, Gate, Retired, SPARE_BYTES, mpsc};

    /// An answer's buffer is kept for the next answer up to `SPARE_BYTES` of capacity;
    /// one that grew past it (a large result) is let go, not held by the loop for good.
    #[test]
    fn only_a_small_answer_buffer_is_kept_for_the_next() {
        let (tx, _rx) = mpsc::unbounded_channel();
        let mut answers = Answers::new(tx);
        answers.recycle(String::with_capacity(SPARE_BYTES + 1));
        assert_eq!(answers.spare.capacity(), 0, "a large buffer is not kept");
        answers.recycle(String::with_capacity(320));
        assert!(answers.spare.capacity() >= 320, "a small one is");
    }

    /// A gate handed on is fresh: open, with no backlog, and a cancellation of its own
    /// (a token the last request handed out is not cancelled with the next request); and
    /// it is not handed on while anyone else holds it.
    #[test]
    fn a_retired_gate_is_fresh_for_the_next_request() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut gate = Arc::new(Gate::new(&tx));
        assert!(gate.send("a notification".to_owned()));
        let token = gate.cancel.token();
        let holder = Arc::clone(&gate);
        assert!(Gate::retire(&mut gate).is_none(), "held elsewhere");
        drop(holder);
        let Some(Retired { open, queued }) = Gate::retire(&mut gate) else {
            panic!("held by no one else");
        };
        assert!(open && queued);
        assert!(gate.open.lock().is_ok_and(|open| *open));
        assert!(!gate.backlog.used());
        assert!(!gate.cancel.made());
        gate.cancel.cancel();
        assert!(!token.is_cancelled(), "the old request's token");
        // The frame queued before still holds the old backlog, not the gate.
        let frame = rx.try_recv().expect("the notification");
        assert_eq!(frame.text, "a notification");
    }

    /// A gate whose flag was poisoned (a panic while it was held) reads as closed, as
    /// `close` reads it, and is handed on mended.
    #[test]
    fn a_poisoned_gate_reads_closed_and_is_handed_on_mended() {
        let (tx, _rx) = mpsc::unbounded_channel();
        let mut gate = Arc::new(Gate::new(&tx));
        let poisoned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _held = gate.open.lock();
            panic!("poisons the gate's flag on purpose");
        }));
        assert!(poisoned.is_err() && gate.open.is_poisoned());
        let Some(Retired { open, queued }) = Gate::retire(&mut gate) else {
            panic!("held by no one else");
        };
        assert!(!open && !queued);
        assert!(gate.open.lock().is_ok_and(|open| *open));
    }
}
