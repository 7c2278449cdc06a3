//! The queue's plain twin: tokio's unbounded `mpsc` channel.

use super::Receive;
use crate::context::{Backlog, Cancellation, LazyBacklog, Outbound, Queued};
use std::sync::Arc;
use tokio::sync::mpsc;

/// A new queue: the request's side, and the response's.
pub(crate) fn channel() -> (Arc<ChannelOutbound>, Notifications) {
    let (tx, rx) = mpsc::unbounded_channel();
    let outbound = Arc::new(ChannelOutbound {
        tx,
        backlog: LazyBacklog::default(),
        cancel: Cancellation::default(),
    });
    let notifications = Notifications {
        rx,
        outbound: Arc::clone(&outbound),
    };
    (outbound, notifications)
}

/// The request's side: the channel's sender, the backlog and the cancellation.
pub(crate) struct ChannelOutbound {
    tx: mpsc::UnboundedSender<(String, Queued)>,
    backlog: LazyBacklog,
    cancel: Cancellation,
}

impl Outbound for ChannelOutbound {
    fn cancellation(&self) -> &Cancellation {
        &self.cancel
    }

    fn send(&self, frame: String) -> bool {
        // Refused once the receiver is gone; the frame's place goes with it.
        self.tx.send((frame, self.backlog.enqueue())).is_ok()
    }

    fn backlog(&self) -> Option<Arc<Backlog>> {
        Some(self.backlog.shared())
    }
}

/// The response's side: the channel's receiver, whose drop closes the channel and drops
/// what it still holds, so the frames' places are freed.
pub(crate) struct Notifications {
    rx: mpsc::UnboundedReceiver<(String, Queued)>,
    /// The request's side, for its cancellation. It holds a sender, so the channel never
    /// ends while this is alive.
    outbound: Arc<ChannelOutbound>,
}

impl Receive for Notifications {
    fn try_recv(&mut self) -> Option<(String, Queued)> {
        self.rx.try_recv().ok()
    }

    async fn recv(&mut self) -> (String, Queued) {
        match self.rx.recv().await {
            Some(frame) => frame,
            // The channel never ends while this holds a sender: nothing will come.
            None => std::future::pending().await,
        }
    }

    fn cancellation(&self) -> &Cancellation {
        &self.outbound.cancel
    }
}
