//! A request's way out: the sink its notifications go through ([`Outbound`]), its
//! cancellation, and the backlog long-lived streams wait on.

use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Where a request's notifications go: the transport's framing of one request.
pub(crate) trait Outbound: Send + Sync {
    /// Queues one serialized notification. Returns false when it was not queued.
    fn send(&self, frame: String) -> bool;

    /// The request's cancellation, which the transport fires.
    fn cancellation(&self) -> &Cancellation;

    /// How many queued frames the transport has not yet taken, when it tracks that
    /// (subscription streams wait for it to drain before sending more).
    fn backlog(&self) -> Option<Arc<Backlog>> {
        None
    }

    /// Ends the connection that carries the request's stream once what was sent so far
    /// is written, leaving the stream itself open for the client to resume (2025-11-25
    /// SSE polling). Only a legacy session's SSE stream on Streamable HTTP can; elsewhere
    /// nothing happens.
    fn close_for_polling(&self) {}
}

/// A request's cancellation: the `tokio_util` token the transport cancels, made only
/// when someone cancels the request, waits on it or asks for it. Most requests complete
/// before anyone does, and a token costs an allocation and a lock on every clone, drop
/// and check; until it is made, asking whether the request was cancelled is one atomic
/// load. HTTP makes the token only for a request still running after its first poll
/// or answered as a stream, and arms the response's drop guard with it (the client
/// going away cancels it). A task's worker, which has a token of its own, seeds the
/// cancellation with it instead.
///
/// The token is made once (`OnceLock`), so whoever makes it first, a cancel or a
/// handler asking for it, every later caller gets the same token: one made before a
/// cancel is cancelled by it, and one asked for after is born cancelled. Handlers are
/// handed a child of it ([`RequestContext::cancellation_token`]), so only the client (or
/// the transport) cancels a request.
///
/// Beside the token it carries the request's [`Blocking`] work, made (also once) when a
/// plain `fn` handler first runs: transport and handler both reach this cancellation,
/// so the transport can keep the request's slot for as long as that work runs.
///
/// [`RequestContext::cancellation_token`]: crate::RequestContext::cancellation_token
#[derive(Default)]
pub(crate) struct Cancellation {
    token: std::sync::OnceLock<CancellationToken>,
    blocking: std::sync::OnceLock<Arc<Blocking>>,
}

impl Cancellation {
    /// A cancellation that follows `token`.
    #[cfg_attr(
        not(feature = "tasks"),
        allow(dead_code, reason = "used by the Tasks extension and unit tests")
    )]
    pub(crate) fn seeded(token: CancellationToken) -> Cancellation {
        Cancellation {
            token: std::sync::OnceLock::from(token),
            blocking: std::sync::OnceLock::new(),
        }
    }

    /// Whether the request was cancelled: by the transport, or through a token handed
    /// out.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.token
            .get()
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// Cancels the request (and its token, made now if it was not yet).
    pub(crate) fn cancel(&self) {
        self.token_ref().cancel();
    }

    /// The token, made now if it was not yet (cancelled already when the request was).
    pub(crate) fn token(&self) -> CancellationToken {
        self.token_ref().clone()
    }

    /// Whether the token or the blocking work was made (handed out, waited on,
    /// cancelled, or a plain `fn` handler ran): a transport that reuses a cancellation
    /// for the next request makes a fresh one then.
    pub(crate) fn made(&self) -> bool {
        self.token.get().is_some() || self.blocking.get().is_some()
    }

    /// The request's blocking work, made now if it was not yet.
    pub(crate) fn blocking(&self) -> &Arc<Blocking> {
        self.blocking.get_or_init(Arc::default)
    }

    /// The request's blocking work, if a plain `fn` handler ever ran for it.
    pub(crate) fn blocking_made(&self) -> Option<&Arc<Blocking>> {
        self.blocking.get()
    }

    fn token_ref(&self) -> &CancellationToken {
        self.token.get_or_init(CancellationToken::new)
    }
}

/// The closures a request's plain (non-`async`) handlers run on tokio's blocking pool,
/// and what must stay held until they return.
///
/// A closure cannot be stopped: once the request's future is dropped (the client went
/// away or cancelled) the closure runs on to its end. Whatever bounds the transport's
/// concurrency (an HTTP in-flight slot, a stdio permit) must therefore outlive the
/// closure too, or a client that calls and goes away in a loop piles closures on the
/// pool past the bound. So a transport hands what it would give back to [`Blocking::keep`],
/// which drops it at once when no closure runs and otherwise when the last one returns;
/// and a transport that drives the request's future to its end waits on
/// [`Blocking::idle`] before concluding it. The handler sees the cancellation through
/// its context (`RequestContext::is_cancelled`), which it can poll.
#[derive(Default)]
pub(crate) struct Blocking {
    state: std::sync::Mutex<BlockingState>,
    idle: tokio::sync::Notify,
}

#[derive(Default)]
struct BlockingState {
    /// Closures started and not yet returned.
    running: usize,
    /// What is held until `running` is 0 again.
    kept: Vec<Box<dyn Send>>,
}

/// One closure of a request's blocking work, counted while it lives: moved into the
/// closure, it is dropped when the closure returns (or unwinds).
pub(crate) struct Running(Arc<Blocking>);

impl Blocking {
    /// Counts one more closure, until the returned guard is dropped.
    pub(crate) fn start(self: &Arc<Self>) -> Running {
        if let Ok(mut state) = self.state.lock() {
            state.running += 1;
        }
        Running(Arc::clone(self))
    }

    /// Keeps `held` until no closure runs: dropped now when none does. (A poisoned lock,
    /// after a panic while it was held, drops it now too: a slot given back early is
    /// better than one never given back.)
    pub(crate) fn keep(&self, held: impl Send + 'static) {
        if let Ok(mut state) = self.state.lock()
            && state.running > 0
        {
            state.kept.push(Box::new(held));
        }
    }

    /// Whether a closure runs now.
    pub(crate) fn is_running(&self) -> bool {
        self.state.lock().is_ok_and(|s| s.running > 0)
    }

    /// Waits until no closure runs.
    pub(crate) async fn idle(&self) {
        loop {
            let notified = self.idle.notified();
            if !self.is_running() {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Dropped outside the lock: what is kept may take locks of its own.
        let released = match self.0.state.lock() {
            Ok(mut state) => {
                state.running = state.running.saturating_sub(1);
                if state.running == 0 {
                    std::mem::take(&mut state.kept)
                } else {
                    Vec::new()
                }
            }
            Err(_) => Vec::new(),
        };
        drop(released);
        self.0.idle.notify_waiters();
    }
}

/// Frames a transport has queued but not yet written: long-lived streams wait on it, so
/// a slow client makes them coalesce instead of growing a queue.
#[derive(Default)]
pub(crate) struct Backlog {
    queued: std::sync::atomic::AtomicUsize,
    drained: tokio::sync::Notify,
}

/// A request's [`Backlog`], made when first used: most requests never queue a frame.
#[derive(Default)]
pub(crate) struct LazyBacklog(std::sync::OnceLock<Arc<Backlog>>);

impl LazyBacklog {
    fn get(&self) -> &Arc<Backlog> {
        self.0.get_or_init(Arc::default)
    }

    /// Takes a place for one more queued frame.
    pub(crate) fn enqueue(&self) -> Queued {
        self.get().enqueue()
    }

    /// The backlog, for [`Outbound::backlog`].
    pub(crate) fn shared(&self) -> Arc<Backlog> {
        Arc::clone(self.get())
    }

    /// Whether it was ever used: a frame was queued, or someone asked for the backlog.
    pub(crate) fn used(&self) -> bool {
        self.0.get().is_some()
    }
}

/// One queued frame's place in a [`Backlog`]; dropping it (once written) frees it.
pub(crate) struct Queued(Arc<Backlog>);

impl Backlog {
    pub(crate) fn enqueue(self: &Arc<Self>) -> Queued {
        self.queued
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Queued(Arc::clone(self))
    }

    /// Waits until nothing is queued.
    pub(crate) async fn drained(&self) {
        loop {
            let notified = self.drained.notified();
            if self.queued.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.0
            .queued
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        self.0.drained.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::{Blocking, Cancellation};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio_util::sync::CancellationToken;

    /// Counts its drops: what a transport would give back.
    struct Given(Arc<AtomicUsize>);

    impl Drop for Given {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// What is kept while no closure runs is given back at once; while closures run, it
    /// is given back when the last of them returns, not before.
    #[test]
    fn kept_things_outlive_the_last_running_closure() {
        let blocking = Arc::new(Blocking::default());
        let given = Arc::new(AtomicUsize::new(0));
        blocking.keep(Given(Arc::clone(&given)));
        assert_eq!(
            given.load(Ordering::SeqCst),
            1,
            "nothing runs: given back now"
        );

        let first = blocking.start();
        let second = blocking.start();
        blocking.keep(Given(Arc::clone(&given)));
        assert!(blocking.is_running());
        drop(first);
        assert_eq!(given.load(Ordering::SeqCst), 1, "one closure still runs");
        drop(second);
        assert_eq!(given.load(Ordering::SeqCst), 2, "the last one returned");
        assert!(!blocking.is_running());
    }

    /// A closure that unwinds counts as returned: its guard is dropped on the way out.
    #[test]
    fn a_closure_that_panics_returns_its_place() {
        let blocking = Arc::new(Blocking::default());
        let given = Arc::new(AtomicUsize::new(0));
        let running = blocking.start();
        blocking.keep(Given(Arc::clone(&given)));
        let panicked = std::thread::spawn(move || {
            let _running = running;
            panic!("a blocking handler that panics on purpose");
        })
        .join();
        assert!(panicked.is_err());
        assert_eq!(given.load(Ordering::SeqCst), 1);
    }

    /// `idle` completes once the last closure returns (at once when none runs).
    #[tokio::test]
    async fn idle_waits_for_the_last_closure() {
        let blocking = Arc::new(Blocking::default());
        blocking.idle().await;
        let running = blocking.start();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let closure = tokio::task::spawn_blocking(move || {
            let _running = running;
            let _ = rx.recv();
        });
        let waiter = {
            let blocking = Arc::clone(&blocking);
            tokio::spawn(async move { blocking.idle().await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished() && blocking.is_running());
        tx.send(()).expect("the closure waits");
        closure.await.expect("the closure returns");
        waiter.await.expect("idle completes");
    }

    /// A cancellation counts as made once its blocking work is, so a reused one is made
    /// afresh.
    #[test]
    fn blocking_work_makes_a_cancellation_made() {
        let c = Cancellation::default();
        assert!(!c.made() && c.blocking_made().is_none());
        let _ = c.blocking();
        assert!(c.made() && c.blocking_made().is_some());
        assert!(!c.is_cancelled(), "no token was made");
    }

    /// The token is made on demand and follows the flag whichever comes first.
    #[test]
    fn a_cancellation_makes_its_token_on_demand() {
        let before = Cancellation::default();
        assert!(!before.is_cancelled());
        assert!(before.token.get().is_none(), "asking makes no token");
        let token = before.token();
        assert!(!token.is_cancelled());
        before.cancel();
        assert!(before.is_cancelled());
        assert!(token.is_cancelled(), "a token made before is cancelled");

        let after = Cancellation::default();
        after.cancel();
        assert!(
            after.token().is_cancelled(),
            "a token made after is born cancelled"
        );
    }

    /// A seeded cancellation follows its token, fired from outside.
    #[test]
    fn a_seeded_cancellation_follows_its_token() {
        let seed = CancellationToken::new();
        let c = Cancellation::seeded(seed.clone());
        assert!(!c.is_cancelled());
        seed.cancel();
        assert!(c.is_cancelled());
        assert!(c.token().is_cancelled());
    }

    /// Cancelling while another thread makes the token never leaves a live token. The
    /// two threads are released together, but nothing makes both orders happen: this
    /// checks that neither order, whichever runs, can.
    #[test]
    fn cancel_and_token_race_to_a_cancelled_token() {
        for _ in 0..2000 {
            let c = std::sync::Arc::new(Cancellation::default());
            let start = std::sync::Arc::new(std::sync::Barrier::new(2));
            let (other, go) = (std::sync::Arc::clone(&c), std::sync::Arc::clone(&start));
            let maker = std::thread::spawn(move || {
                go.wait();
                other.token()
            });
            start.wait();
            c.cancel();
            let token = maker.join().expect("the maker thread");
            assert!(token.is_cancelled());
            assert!(c.token().is_cancelled());
        }
    }

    /// A token handed out and cancelled by whoever holds it cancels the request, as the
    /// token of the request itself did.
    #[test]
    fn cancelling_a_handed_out_token_cancels_the_request() {
        let c = Cancellation::default();
        c.token().cancel();
        assert!(c.is_cancelled());
        let seed = CancellationToken::new();
        let seeded = Cancellation::seeded(seed.clone());
        seeded.token().cancel();
        assert!(seeded.is_cancelled() && seed.is_cancelled());
    }
}
