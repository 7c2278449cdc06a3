//! The queue that serves: a deque under a lock, with the waker of the response waiting
//! for the next frame.

use super::Receive;
use crate::context::{Backlog, Cancellation, LazyBacklog, Outbound, Queued};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};

/// A new queue: the request's side, and the response's.
pub(crate) fn channel() -> (Arc<ChannelOutbound>, Notifications) {
    let outbound = Arc::new(ChannelOutbound::default());
    (Arc::clone(&outbound), Notifications(outbound))
}

/// A request's notifications on their way to the response body, each with its place in
/// the backlog until the body takes it. One allocation per request (tokio's channel
/// makes two and a block of slots); the backlog is made when first used.
#[derive(Default)]
pub(crate) struct ChannelOutbound {
    queue: Mutex<Queue>,
    backlog: LazyBacklog,
    /// The request's cancellation. Its token is made only for a request still running
    /// after its first poll or answered as a stream (the response's guard then fires
    /// it), or when a handler asks for one.
    cancel: Cancellation,
}

#[derive(Default)]
struct Queue {
    frames: VecDeque<(String, Queued)>,
    /// The response waiting for the next frame.
    waker: Option<Waker>,
    /// The response is gone: nothing more is queued.
    closed: bool,
}

impl Outbound for ChannelOutbound {
    fn cancellation(&self) -> &Cancellation {
        &self.cancel
    }

    fn send(&self, frame: String) -> bool {
        let queued = self.backlog.enqueue();
        let Ok(mut queue) = self.queue.lock() else {
            return false;
        };
        if queue.closed {
            return false;
        }
        queue.frames.push_back((frame, queued));
        if let Some(waker) = queue.waker.take() {
            waker.wake();
        }
        true
    }

    fn backlog(&self) -> Option<Arc<Backlog>> {
        Some(self.backlog.shared())
    }
}

/// The response's end of a [`ChannelOutbound`]. Dropping it (the response is done or the
/// client went away) closes the queue and frees what was still in it.
pub(crate) struct Notifications(Arc<ChannelOutbound>);

impl Receive for Notifications {
    fn try_recv(&mut self) -> Option<(String, Queued)> {
        self.0.queue.lock().ok()?.frames.pop_front()
    }

    async fn recv(&mut self) -> (String, Queued) {
        std::future::poll_fn(|cx| {
            let Ok(mut queue) = self.0.queue.lock() else {
                // Only after a panic while the queue was held: nothing will come.
                return Poll::Pending;
            };
            match queue.frames.pop_front() {
                Some(frame) => Poll::Ready(frame),
                None => {
                    if !queue
                        .waker
                        .as_ref()
                        .is_some_and(|w| w.will_wake(cx.waker()))
                    {
                        queue.waker = Some(cx.waker().clone());
                    }
                    Poll::Pending
                }
            }
        })
        .await
    }

    fn cancellation(&self) -> &Cancellation {
        &self.0.cancel
    }
}

impl Drop for Notifications {
    fn drop(&mut self) {
        let frames = match self.0.queue.lock() {
            Ok(mut queue) => {
                queue.closed = true;
                queue.waker = None;
                std::mem::take(&mut queue.frames)
            }
            Err(_) => VecDeque::new(),
        };
        // Freed outside the lock: dropping a frame's place wakes backlog waiters.
        drop(frames);
    }
}
