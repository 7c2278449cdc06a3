//! A request's notifications on their way to its HTTP response: the request's side
//! (`ChannelOutbound`, the request's [`Outbound`](crate::context::Outbound)) queues them,
//! each holding its place in the request's backlog until the response takes it; the
//! response's side (`Notifications`) takes them in order, and once dropped (the response
//! is done, or the client went away) closes the queue: later sends are refused and what
//! was still queued is freed.
//!
//! The queue exists twice. The one that serves (`fast`) is a deque under a lock with one
//! waker, made in one allocation with the request's side. Its twin (`reference`) is
//! tokio's unbounded `mpsc` channel. The two answer alike, which the differential tests
//! below hold them to. Building presa without its `fast` feature serves with the twin.

#[cfg(any(test, feature = "fast"))]
mod fast;
#[cfg(any(test, not(feature = "fast")))]
mod reference;
#[cfg(test)]
mod tests;

#[cfg(feature = "fast")]
pub(super) use fast::{Notifications, channel};
#[cfg(not(feature = "fast"))]
pub(super) use reference::{Notifications, channel};

use crate::context::{Cancellation, Queued};

/// The response's side of a request's queue: the interface both forms implement (each
/// also has `channel()`, which makes a queue and gives its two sides, the request's
/// behind an `Arc`).
pub(super) trait Receive {
    /// The next frame, if one is queued, with its place in the backlog.
    fn try_recv(&mut self) -> Option<(String, Queued)>;

    /// The next frame, whenever one is queued.
    async fn recv(&mut self) -> (String, Queued);

    /// The request's cancellation.
    fn cancellation(&self) -> &Cancellation;
}
