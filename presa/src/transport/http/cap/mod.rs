//! The endpoint's caps: how many subscription streams, other requests, and bodies being
//! read it serves at once. A cap is only ever tried, never waited for (past it the
//! answer is 503). A place is taken by [`Places::try_take`] and given back once: by a
//! [`Held`] guard at the end of a borrow, or by a request's [`Slot`] when its reply (or
//! stream) is done.
//!
//! The cap exists twice. The one that serves (`fast`) is an atomic counter. Its twin
//! (`reference`) is tokio's `Semaphore`, its permits taken and forgotten, and added back
//! when given back. The two answer alike, which the differential tests below hold them
//! to. Building presa without its `fast` feature serves with the twin.

#[cfg(any(test, feature = "fast"))]
mod fast;
#[cfg(any(test, not(feature = "fast")))]
mod reference;
#[cfg(test)]
mod tests;

#[cfg(feature = "fast")]
pub(super) use fast::Cap;
#[cfg(not(feature = "fast"))]
pub(super) use reference::Cap;

use super::Endpoint;
use super::budget::Charge;
use crate::context::Outbound;
use std::sync::Arc;

/// A bound on how many of something are served at once: the interface both forms
/// implement (each also has `Cap::new(max)`, `usize::MAX` meaning no bound).
pub(super) trait Places: Sized {
    /// Takes a place, unless all are taken.
    fn try_take(&self) -> bool;

    /// Gives back a place [`Places::try_take`] took.
    fn give_back(&self);

    /// A place for the span of a borrow, given back when the guard drops. (The guard
    /// is made only once the place is taken: a guard made and discarded would give back
    /// a place never taken.)
    fn try_hold(&self) -> Option<Held<'_, Self>> {
        self.try_take().then(|| Held(self))
    }
}

/// A place under a cap, given back when dropped.
pub(super) struct Held<'a, C: Places>(&'a C);

impl<C: Places> Drop for Held<'_, C> {
    fn drop(&mut self) {
        self.0.give_back();
    }
}

/// A request's place under its cap (the streams' for a subscription stream, the
/// requests' otherwise), held until its reply is ready (for an SSE response, until the
/// stream ends) and given back when dropped; or, when the request's plain `fn` handler
/// still runs on the blocking pool (its client went away), once that returns (the
/// request's blocking work keeps it).
pub(super) struct Slot {
    endpoint: Endpoint,
    listen: bool,
    /// The request's charge against the memory budget, given back with the slot.
    charge: Option<Charge>,
    /// The request's way out, for a request still running after its first poll: through
    /// it the slot finds the request's blocking work when dropped.
    outbound: Option<Arc<dyn Outbound>>,
}

impl Slot {
    pub(super) fn try_take(endpoint: &Endpoint, listen: bool) -> Option<Slot> {
        Slot::cap_of(endpoint, listen).try_take().then(|| Slot {
            endpoint: endpoint.clone(),
            listen,
            charge: None,
            outbound: None,
        })
    }

    /// Holds the request's charge against the memory budget for as long as the slot.
    pub(super) fn keep(&mut self, charge: Charge) {
        self.charge = Some(charge);
    }

    /// Ties the slot to a request that waits (one answered at its first poll runs
    /// nothing on after it, so its slot is not tied, and costs no reference count).
    pub(super) fn tie(&mut self, outbound: Arc<dyn Outbound>) {
        self.outbound = Some(outbound);
    }

    fn cap_of(endpoint: &Endpoint, listen: bool) -> &Cap {
        if listen {
            &endpoint.streams
        } else {
            &endpoint.requests
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(blocking) = self
            .outbound
            .as_ref()
            .and_then(|o| o.cancellation().blocking_made())
        {
            // Given back now when nothing runs, else when the last closure returns.
            blocking.keep(Given {
                endpoint: self.endpoint.clone(),
                listen: self.listen,
                _charge: self.charge.take(),
            });
            return;
        }
        Slot::cap_of(&self.endpoint, self.listen).give_back();
    }
}

/// A slot's place, given back when dropped: what a slot leaves to its request's blocking
/// work to hold.
struct Given {
    endpoint: Endpoint,
    listen: bool,
    /// The request's charge: its arguments live on in the closure.
    _charge: Option<Charge>,
}

impl Drop for Given {
    fn drop(&mut self) {
        Slot::cap_of(&self.endpoint, self.listen).give_back();
    }
}
