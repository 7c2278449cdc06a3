//! Waiting in tests: on a condition becoming true ([`until`], [`until_async`], or
//! a loop ticking a [`Deadline`] of its own), bounded by a deadline
//! generous enough for a loaded machine, failing loudly when it passes and never
//! passing silently. The deadline bounds a wait for something that must happen; a
//! test never waits a fixed time for something to happen. [`QUIET`] is the one fixed
//! window, for the rules that say nothing is sent, and a test reads it only after
//! something proved that the channel it watches works.

use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// How long a test waits for something that must happen before it fails.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// How long a test watches for something that must not be sent, once the channel has
/// been shown to work.
pub const QUIET: Duration = Duration::from_millis(300);

/// How often a condition is polled.
const POLL: Duration = Duration::from_millis(2);

/// The deadline of one wait: every polling loop of the tests ticks one, so that each
/// waits as long, polls as often, and fails the same way.
pub struct Deadline {
    at: Instant,
    what: String,
}

impl Deadline {
    /// A deadline [`PATIENCE`] from now for waiting until `what`.
    pub fn new(what: impl Into<String>) -> Deadline {
        Deadline {
            at: Instant::now() + PATIENCE,
            what: what.into(),
        }
    }

    /// Fails if the deadline has passed (with `state`, what was seen last), else pauses
    /// before the next poll.
    #[track_caller]
    pub fn tick<'a>(&self, state: impl std::fmt::Display) -> impl Future<Output = ()> + 'a {
        assert!(
            Instant::now() < self.at,
            "timed out after {PATIENCE:?} waiting until {}; last seen: {state}",
            self.what
        );
        tokio::time::sleep(POLL)
    }
}

/// Waits until `cond` holds, failing after [`PATIENCE`] with `what`.
pub async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Deadline::new(what);
    while !cond() {
        deadline.tick("not yet").await;
    }
}

/// Waits until the async `probe` (a request, say) gives `Some`, and returns it; fails
/// after [`PATIENCE`].
pub async fn until_async<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Deadline::new(what);
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        deadline.tick("not yet").await;
    }
}

/// Runs `fut`, failing after [`PATIENCE`] with `what`.
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(PATIENCE, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out after {PATIENCE:?} waiting for {what}"),
    }
}
