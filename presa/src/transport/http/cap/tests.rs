//! The differential tests of the caps: generated sequences of takes, holds and gives
//! back under generated bounds get the same answers from the fast cap and its twin.

use super::{Held, Places, fast, reference};
use proptest::prelude::*;
use tokio::sync::Semaphore;

/// One step on a cap.
#[derive(Clone, Debug)]
enum Op {
    /// Takes a place.
    Take,
    /// Gives back a place taken with `Take`, when one is.
    GiveBack,
    /// Holds a place with a guard.
    Hold,
    /// Drops one of the guards held (by its index, wrapping), when there are any.
    Release(usize),
}

/// Applies `ops` to `cap`; the answer of each (whether it took or gave back a place).
fn run<C: Places>(cap: &C, ops: &[Op]) -> Vec<bool> {
    let mut taken = 0usize;
    let mut held: Vec<Held<'_, C>> = Vec::new();
    ops.iter()
        .map(|op| match op {
            Op::Take => {
                let took = cap.try_take();
                taken += usize::from(took);
                took
            }
            Op::GiveBack => {
                let some = taken > 0;
                if some {
                    taken -= 1;
                    cap.give_back();
                }
                some
            }
            Op::Hold => cap.try_hold().map(|guard| held.push(guard)).is_some(),
            Op::Release(i) => {
                let some = !held.is_empty();
                if some {
                    drop(held.swap_remove(i % held.len()));
                }
                some
            }
        })
        .collect()
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Take),
        2 => Just(Op::GiveBack),
        3 => Just(Op::Hold),
        2 => any::<usize>().prop_map(Op::Release),
    ]
}

/// A bound: mostly small, sometimes none (`usize::MAX`) or about the semaphore's most.
fn bound() -> impl Strategy<Value = usize> {
    prop_oneof![
        6 => 0usize..6,
        1 => Just(usize::MAX),
        1 => Just(Semaphore::MAX_PERMITS),
        1 => Just(Semaphore::MAX_PERMITS + 1),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::wire::arbitrary::cases(1024)))]

    /// The fast cap and its twin answer any sequence of steps alike.
    #[test]
    fn the_cap_answers_as_its_twin(max in bound(), ops in proptest::collection::vec(op(), 0..40)) {
        let fast = run(&fast::Cap::new(max), &ops);
        let twin = run(&reference::Cap::new(max), &ops);
        prop_assert_eq!(fast, twin);
    }
}

/// A cap hands out at most `max` places; a refused take or hold gives nothing back, and
/// a dropped guard frees its place.
fn counts_places<C: Places>(new: impl Fn(usize) -> C) {
    let cap = new(2);
    let first = cap.try_hold().expect("a place");
    let second = cap.try_hold().expect("a second place");
    for _ in 0..3 {
        assert!(cap.try_hold().is_none(), "past the cap");
        assert!(!cap.try_take(), "past the cap");
    }
    drop(first);
    let third = cap.try_hold().expect("the freed place");
    assert!(cap.try_hold().is_none(), "one place was freed, not more");
    drop((second, third));
    assert!(cap.try_take() && cap.try_take() && !cap.try_take());
    cap.give_back();
    assert!(cap.try_take(), "the place given back");
    let none = new(0);
    assert!(!none.try_take());
    assert!(none.try_hold().is_none());
    let unbounded = new(usize::MAX);
    assert!((0..1000).all(|_| unbounded.try_take()));
}

#[test]
fn a_cap_counts_places() {
    counts_places(fast::Cap::new);
    counts_places(reference::Cap::new);
}
