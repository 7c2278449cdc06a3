//! The differential tests of the notification queue: generated sequences of sends, takes
//! (at once or awaited), frees of taken frames and closes of the response's side, applied
//! to the fast queue and its twin, get the same answers, the backlog's included.

use super::{Receive, fast, reference};
use crate::context::{Outbound, Queued};
use futures_util::FutureExt;
use proptest::prelude::*;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

/// One step on a queue.
#[derive(Clone, Debug)]
enum Op {
    /// The request sends a frame.
    Send,
    /// The response takes a frame if one is queued.
    TryRecv,
    /// The response polls `recv` once.
    Recv,
    /// The response is done with the oldest frame it took (it was written).
    Free,
    /// The response's side is dropped.
    Close,
}

/// What a step answered.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Sent(bool),
    Got(Option<String>),
    Freed(bool),
    Closed(bool),
}

/// Applies `ops` to a queue; after each, its answer and whether the backlog is drained.
fn run<S: Outbound, R: Receive>((tx, rx): (Arc<S>, R), ops: &[Op]) -> Vec<(Answer, bool)> {
    let mut rx = Some(rx);
    let mut taken: VecDeque<Queued> = VecDeque::new();
    let backlog = tx.backlog().expect("the queue tracks its backlog");
    let mut sent = 0;
    let mut answers = Vec::new();
    for op in ops {
        let answer = match op {
            Op::Send => {
                sent += 1;
                Answer::Sent(tx.send(format!("frame {sent}")))
            }
            Op::TryRecv => {
                let frame = rx.as_mut().and_then(|rx| rx.try_recv());
                Answer::Got(keep(&mut taken, frame))
            }
            Op::Recv => {
                let frame = rx.as_mut().and_then(|rx| rx.recv().now_or_never());
                Answer::Got(keep(&mut taken, frame))
            }
            Op::Free => Answer::Freed(taken.pop_front().is_some()),
            Op::Close => Answer::Closed(rx.take().is_some()),
        };
        let drained = backlog.drained().now_or_never().is_some();
        answers.push((answer, drained));
    }
    answers
}

/// A frame's text; its place is kept in `taken` until freed.
fn keep(taken: &mut VecDeque<Queued>, frame: Option<(String, Queued)>) -> Option<String> {
    frame.map(|(text, place)| {
        taken.push_back(place);
        text
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Send),
        2 => Just(Op::TryRecv),
        2 => Just(Op::Recv),
        2 => Just(Op::Free),
        1 => Just(Op::Close),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::wire::arbitrary::cases(1024)))]

    /// The fast queue and its twin answer any sequence of steps alike.
    #[test]
    fn the_notification_queue_answers_as_its_twin(
        ops in proptest::collection::vec(op(), 0..40),
    ) {
        let fast = run(fast::channel(), &ops);
        let twin = run(reference::channel(), &ops);
        prop_assert_eq!(fast, twin);
    }
}

/// Whether a waker was woken.
#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A response waiting on an empty queue is woken by the next frame, and gets it.
fn woken_by_the_next_frame<S: Outbound, R: Receive>((tx, mut rx): (Arc<S>, R)) {
    let flag = Arc::new(Flag::default());
    let waker = Waker::from(Arc::clone(&flag));
    let mut cx = Context::from_waker(&waker);
    let mut recv = std::pin::pin!(rx.recv());
    assert!(
        recv.as_mut().poll(&mut cx).is_pending(),
        "nothing queued yet"
    );
    assert!(!flag.0.load(Ordering::SeqCst));
    assert!(tx.send("frame".to_owned()));
    assert!(flag.0.load(Ordering::SeqCst), "the send wakes the response");
    match recv.as_mut().poll(&mut cx) {
        Poll::Ready((text, _place)) => assert_eq!(text, "frame"),
        Poll::Pending => panic!("the frame is there"),
    }
}

#[test]
fn a_waiting_response_is_woken_by_the_next_frame() {
    woken_by_the_next_frame(fast::channel());
    woken_by_the_next_frame(reference::channel());
}

/// Both sides see one cancellation: the request's.
fn one_cancellation<S: Outbound, R: Receive>((tx, rx): (Arc<S>, R)) {
    assert!(!rx.cancellation().is_cancelled());
    tx.cancellation().cancel();
    assert!(rx.cancellation().is_cancelled());
}

#[test]
fn the_response_sees_the_requests_cancellation() {
    one_cancellation(fast::channel());
    one_cancellation(reference::channel());
}
