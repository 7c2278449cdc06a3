//! The cap that serves: an atomic counter of the places taken.

use super::Places;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A bound on how many of something the endpoint serves at once. It is only ever tried,
/// never waited for, so a counter does: a semaphore's release takes its waiters' lock
/// every time, and its size is capped (tokio panics on a bound past `usize::MAX >> 3`,
/// such as `usize::MAX` for "no bound").
pub(crate) struct Cap {
    max: usize,
    taken: AtomicUsize,
}

impl Cap {
    /// A cap of `max` places (`usize::MAX`: no bound).
    pub(crate) fn new(max: usize) -> Cap {
        Cap {
            max,
            taken: AtomicUsize::new(0),
        }
    }
}

impl Places for Cap {
    fn try_take(&self) -> bool {
        self.taken
            .fetch_update(Ordering::Acquire, Ordering::Relaxed, |n| {
                (n < self.max).then(|| n + 1)
            })
            .is_ok()
    }

    fn give_back(&self) {
        self.taken.fetch_sub(1, Ordering::Release);
    }
}
