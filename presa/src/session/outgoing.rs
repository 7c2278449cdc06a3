//! Requests the server sends a legacy client (`elicitation/create`, `sampling/createMessage`,
//! `roots/list`) and the answers it awaits: each has an id of its own, a bounded wait, and
//! a place in a bounded table until its answer arrives or the wait ends.

use super::SessionConfig;
use crate::context::Outbound;
use crate::wire::jsonrpc::{RequestId, Response, encode_notification, encode_request};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// Why an ask got no answer to use.
#[derive(Debug, PartialEq)]
pub(crate) enum AskFailure {
    /// The session awaits the most answers it may at once.
    Busy,
    /// The request could not be sent (its stream is gone).
    Unsent,
    /// No answer within the wait; the server cancelled its request.
    TimedOut,
    /// The asking request was cancelled, or the session ended.
    Cancelled,
    /// The client answered with an error.
    Refused(Value),
}

/// The requests a session awaits answers to.
pub(super) struct Outgoing {
    next: AtomicI64,
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, Value>>>>,
    max_pending: usize,
    timeout: Duration,
}

impl Outgoing {
    pub(super) fn new(config: &SessionConfig) -> Outgoing {
        Outgoing {
            next: AtomicI64::new(1),
            pending: Mutex::default(),
            max_pending: config.max_pending_asks,
            timeout: config.ask_timeout,
        }
    }

    /// Sends `method` through `sink` and waits for the answer, the wait's end, the
    /// asking request's cancellation, or the session's end (`closed`). On any but the
    /// answer, the server's request is forgotten and the client is told with
    /// `notifications/cancelled`: on the wait's end through `sink` (the asking request
    /// goes on, to fail); otherwise through `withdraw` (the session's own channel), also
    /// when this future is dropped unfinished, as a cancelled request's is, because the
    /// asking request's stream takes nothing more once it is cancelled.
    pub(super) async fn ask(
        &self,
        sink: &dyn Outbound,
        method: &str,
        params: Value,
        closed: &CancellationToken,
        withdraw: &(dyn Fn(Value) + Sync),
    ) -> Result<Value, AskFailure> {
        let id = RequestId::Int(self.next.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        {
            let Ok(mut pending) = self.pending.lock() else {
                return Err(AskFailure::Busy);
            };
            if pending.len() >= self.max_pending {
                return Err(AskFailure::Busy);
            }
            pending.insert(id.clone(), tx);
        }
        // Removes the entry however the wait ends (the future may be dropped), and
        // withdraws the request unless the wait settled it.
        let mut forget = Forget {
            outgoing: self,
            id: &id,
            withdraw: None,
        };
        if !sink.send(encode_request(&id, method, &params)) {
            return Err(AskFailure::Unsent);
        }
        forget.withdraw = Some(withdraw);
        let cancelled = sink.cancellation().token();
        tokio::select! {
            answer = rx => match answer {
                Ok(Ok(value)) => {
                    forget.withdraw = None;
                    Ok(value)
                }
                Ok(Err(error)) => {
                    forget.withdraw = None;
                    Err(AskFailure::Refused(error))
                }
                // The table dropped the sender: the session ended.
                Err(_) => Err(AskFailure::Cancelled),
            },
            () = tokio::time::sleep(self.timeout) => {
                forget.withdraw = None;
                sink.send(encode_notification(
                    "notifications/cancelled",
                    &json!({
                        "requestId": id.to_value(),
                        "reason": "The server stopped waiting for an answer"
                    }),
                ));
                Err(AskFailure::TimedOut)
            }
            () = cancelled.cancelled() => Err(AskFailure::Cancelled),
            () = closed.cancelled() => Err(AskFailure::Cancelled),
        }
    }

    /// Hands a response to the request it answers; false when none awaits it.
    pub(super) fn deliver(&self, response: Response) -> bool {
        let Some(id) = response.id else {
            return false;
        };
        let waiting = self.pending.lock().ok().and_then(|mut p| p.remove(&id));
        match waiting {
            Some(tx) => tx.send(response.outcome).is_ok(),
            None => false,
        }
    }
}

/// Forgets a request's entry when its wait ends, however it ends; and, while the client
/// holds the request unsettled (`withdraw` set), withdraws it.
struct Forget<'a> {
    outgoing: &'a Outgoing,
    id: &'a RequestId,
    withdraw: Option<&'a (dyn Fn(Value) + Sync)>,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        if let Ok(mut p) = self.outgoing.pending.lock() {
            p.remove(self.id);
        }
        if let Some(withdraw) = self.withdraw {
            withdraw(json!({
                "requestId": self.id.to_value(),
                "reason": "The request that asked was cancelled"
            }));
        }
    }
}
