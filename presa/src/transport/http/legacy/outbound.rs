//! Where a legacy session's request sends its notifications and its own requests to the
//! client ([`PostOutbound`]), and how its answer reaches the POST that asked.
//!
//! The answer is JSON when the request sent nothing before it, and an event stream
//! otherwise: the first message the request sends opens its stream in the session
//! ([`super::live`]), and the POST answers with a connection reading it. From then on
//! everything the request sends, its answer last, goes into the stream, whether or not
//! the POST's connection is still there: a client that went away reconnects with
//! `Last-Event-ID`. The request runs on until it is answered or the client cancels it
//! with `notifications/cancelled`: a closed connection does not cancel it.

use super::live::{Conn, Live};
use crate::context::{Cancellation, Outbound};
use crate::pipeline::Reply;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// How a request's POST is answered: decided by the first of its messages or its reply.
pub(super) enum Start {
    /// The reply, sent as JSON.
    Json(Reply),
    /// An event stream, read by this connection.
    Stream(Conn),
}

/// A legacy request's way out.
pub(super) struct PostOutbound {
    live: Arc<Live>,
    /// The number of the request's stream, if it gets one.
    stream: u64,
    cancel: Cancellation,
    state: Mutex<State>,
}

enum State {
    /// Nothing sent yet; the POST waits for how it is answered.
    Waiting(oneshot::Sender<Start>),
    /// Answered as a stream, which is open.
    Streaming,
    /// Answered: nothing more is sent for the request.
    Done,
}

impl PostOutbound {
    /// A request's way out in `live`, with its stream number, and what its POST waits on.
    pub(super) fn new(live: Arc<Live>) -> (Arc<PostOutbound>, oneshot::Receiver<Start>) {
        let (tx, rx) = oneshot::channel();
        let stream = live.reserve_stream();
        let outbound = PostOutbound {
            live,
            stream,
            cancel: Cancellation::default(),
            state: Mutex::new(State::Waiting(tx)),
        };
        (Arc::new(outbound), rx)
    }

    /// The number of the request's stream.
    pub(super) fn stream(&self) -> u64 {
        self.stream
    }

    /// Makes sure the answer is a stream: opens it and tells the POST, when nothing was
    /// sent yet. False once the request was answered.
    fn streaming(&self, state: &mut State) -> bool {
        match std::mem::replace(state, State::Streaming) {
            State::Waiting(tx) => {
                if let Some(conn) = self.live.open_stream(self.stream) {
                    // The POST may be gone (the client went away): the stream is there
                    // for it to resume all the same.
                    let _ = tx.send(Start::Stream(conn));
                }
                true
            }
            State::Streaming => true,
            State::Done => {
                *state = State::Done;
                false
            }
        }
    }

    /// Delivers the request's reply: to the POST as JSON when nothing came before it,
    /// else as the stream's last event (a cancelled request's stream ends without one).
    pub(super) fn conclude(&self, reply: Reply) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        match std::mem::replace(&mut *state, State::Done) {
            State::Waiting(tx) => {
                if tx.send(Start::Json(reply)).is_err() {
                    tracing::debug!("the client left before its legacy request was answered");
                }
            }
            State::Streaming => {
                match reply {
                    Reply::Response { body, .. } | Reply::StreamEnded { body, .. } => {
                        self.live.push(self.stream, &body);
                    }
                    Reply::Cancelled => {}
                }
                self.live.end_stream(self.stream);
            }
            State::Done => {}
        }
    }
}

impl Outbound for PostOutbound {
    fn send(&self, frame: String) -> bool {
        let Ok(mut state) = self.state.lock() else {
            return false;
        };
        self.streaming(&mut state) && self.live.push(self.stream, &frame)
    }

    fn cancellation(&self) -> &Cancellation {
        &self.cancel
    }

    fn close_for_polling(&self) {
        if !self.live.primes() {
            return;
        }
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if self.streaming(&mut state) {
            self.live.poll(self.stream);
        }
    }
}
