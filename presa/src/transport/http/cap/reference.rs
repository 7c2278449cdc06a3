//! The cap's plain twin: tokio's `Semaphore`.

use super::Places;
use tokio::sync::{Semaphore, SemaphorePermit};

/// A cap as a semaphore whose permits are taken and forgotten, and added back when given
/// back. Its size is at most `Semaphore::MAX_PERMITS` (`usize::MAX >> 3`; tokio panics
/// past it): a larger bound, such as `usize::MAX` for none, is that many, out of reach
/// all the same.
pub(crate) struct Cap {
    permits: Semaphore,
}

impl Cap {
    /// A cap of `max` places (`usize::MAX`: no bound).
    pub(crate) fn new(max: usize) -> Cap {
        Cap {
            permits: Semaphore::new(max.min(Semaphore::MAX_PERMITS)),
        }
    }
}

impl Places for Cap {
    fn try_take(&self) -> bool {
        // Never closed, so the only refusal is "no permits".
        self.permits
            .try_acquire()
            .map(SemaphorePermit::forget)
            .is_ok()
    }

    fn give_back(&self) {
        self.permits.add_permits(1);
    }
}
