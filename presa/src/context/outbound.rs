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
#[derive(Default)]
pub(crate) struct Cancellation(std::sync::OnceLock<CancellationToken>);

impl Cancellation {
    /// A cancellation that follows `token`.
    #[cfg_attr(
        not(feature = "tasks"),
        allow(dead_code, reason = "used by the Tasks extension and unit tests")
    )]
    pub(crate) fn seeded(token: CancellationToken) -> Cancellation {
        Cancellation(std::sync::OnceLock::from(token))
    }

    /// Whether the request was cancelled: by the transport, or through a token handed
    /// out.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.0.get().is_some_and(CancellationToken::is_cancelled)
    }

    /// Cancels the request (and its token, made now if it was not yet).
    pub(crate) fn cancel(&self) {
        self.token_ref().cancel();
    }

    /// The token, made now if it was not yet (cancelled already when the request was).
    pub(crate) fn token(&self) -> CancellationToken {
        self.token_ref().clone()
    }

    /// Whether the token was made (handed out, waited on or cancelled).
    pub(crate) fn made(&self) -> bool {
        self.0.get().is_some()
    }

    fn token_ref(&self) -> &CancellationToken {
        self.0.get_or_init(CancellationToken::new)
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
    use super::Cancellation;
    use tokio_util::sync::CancellationToken;

    /// The token is made on demand and follows the flag whichever comes first.
    #[test]
    fn a_cancellation_makes_its_token_on_demand() {
        let before = Cancellation::default();
        assert!(!before.is_cancelled());
        assert!(before.0.get().is_none(), "asking makes no token");
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
