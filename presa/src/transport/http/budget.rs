//! The endpoint's memory budget: the bytes of request bodies being read and of decoded
//! requests being served, counted together against `HttpConfig::memory_budget`.
//!
//! A body is charged before it is read: its `Content-Length`, or `max_body_bytes` when
//! it has none (a chunked body), so a body the budget cannot hold is refused before any
//! of it is buffered. Once decoded, the charge becomes [`decoded_cost`] of the body and
//! stays until the request's reply (or stream) is done. Past the budget the request gets
//! 503 with -32603 and `data.retryable`.

use super::Endpoint;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What one decoded JSON value is counted as, besides its bytes: `serde_json::Value` is
/// 32 bytes, an array slot or a map entry's key and node add to it.
const VALUE_BYTES: usize = 80;

/// Bodies up to this size are not scanned: they are counted as holding the most values
/// a body of their size can (one per two bytes).
const SCAN_FROM: usize = 4096;

/// The deepest nesting a body can have (the decoder's limit), each level a value that no
/// separator counts.
const MAX_DEPTH: usize = 128;

/// An upper bound of the memory a body decodes to: its bytes, plus [`VALUE_BYTES`] for
/// every value it can hold. Every value but a container's first, and the first of the
/// top level, follows a `,` or a `:`; counting those (in strings too) over-counts,
/// never under-counts.
pub(super) fn decoded_cost(body: &[u8]) -> usize {
    let values = if body.len() <= SCAN_FROM {
        body.len() / 2 + 1
    } else {
        memchr::memchr2_iter(b',', b':', body).count() + MAX_DEPTH + 1
    };
    body.len()
        .saturating_add(values.saturating_mul(VALUE_BYTES))
}

/// The bytes in use against the budget.
pub(super) struct Budget {
    used: AtomicUsize,
    limit: usize,
}

impl Budget {
    pub(super) fn new(limit: usize) -> Budget {
        Budget {
            used: AtomicUsize::new(0),
            limit,
        }
    }

    /// Takes `bytes` if they fit.
    fn try_take(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&total| total <= self.limit)
            })
            .is_ok()
    }

    fn give_back(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
    }

    /// The bytes in use now.
    #[cfg(test)]
    fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}

/// Bytes taken from the endpoint's budget, given back when dropped.
pub(super) struct Charge {
    endpoint: Endpoint,
    bytes: usize,
}

impl Charge {
    /// Takes `bytes` from the endpoint's budget, unless they do not fit.
    pub(super) fn try_take(endpoint: &Endpoint, bytes: usize) -> Option<Charge> {
        endpoint.budget.try_take(bytes).then(|| Charge {
            endpoint: endpoint.clone(),
            bytes,
        })
    }

    /// Makes the charge `bytes`: gives back what it held beyond them, or takes what
    /// more they need; false (the charge unchanged) when that does not fit.
    pub(super) fn resize(&mut self, bytes: usize) -> bool {
        let budget = &self.endpoint.budget;
        if bytes > self.bytes {
            if !budget.try_take(bytes - self.bytes) {
                return false;
            }
        } else {
            budget.give_back(self.bytes - bytes);
        }
        self.bytes = bytes;
        true
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.endpoint.budget.give_back(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_holds_at_and_past_its_limit() {
        let b = Budget::new(100);
        assert!(b.try_take(60));
        assert!(b.try_take(40), "up to the limit fits");
        assert!(!b.try_take(1), "one byte past it does not");
        b.give_back(40);
        assert!(!b.try_take(41));
        assert!(b.try_take(40));
        assert_eq!(b.used(), 100);
        assert!(!b.try_take(usize::MAX), "no overflow");
    }

    /// The cost bounds what serde_json's tree takes for the shapes that cost the most
    /// per byte (one-byte values in an array, short keys in an object), and the scan
    /// and the flat rule agree on where they meet.
    #[test]
    fn decoded_cost_bounds_the_dense_shapes() {
        let dense = |n: usize| format!("[{}0]", "0,".repeat(n));
        let small = dense(100);
        assert!(decoded_cost(small.as_bytes()) >= small.len() + 101 * 32);
        let large = dense(100_000);
        assert!(decoded_cost(large.as_bytes()) >= large.len() + 100_001 * 32);
        let keys: String = (0..10_000).map(|i| format!("\"{i}\":0,")).collect();
        let object = format!("{{{keys}\"x\":0}}");
        assert!(decoded_cost(object.as_bytes()) >= object.len() + 10_001 * (32 + 24));
        let text = format!("\"{}\"", "a".repeat(1 << 20));
        let cost = decoded_cost(text.as_bytes());
        assert!(
            cost <= text.len() + (MAX_DEPTH + 1) * VALUE_BYTES,
            "a long string costs its bytes and no more than the deepest nesting: {cost}"
        );
    }
}
