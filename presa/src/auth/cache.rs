//! Verdicts on tokens, kept so a repeated token costs a digest and a lookup rather than a
//! signature check or a call to the authorization server. Keyed by the token's SHA-256
//! digest: the token itself is never stored, and a digest cannot be made to collide with
//! another client's token.

use super::{Denied, Principal};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How long a token found invalid is remembered as such: a client repeating a bad token
/// costs a lookup, not a verification each time.
const INVALID_TTL: Duration = Duration::from_secs(30);

/// A token found valid: who it names, and when it expires.
pub(super) struct Verdict {
    pub(super) principal: Arc<Principal>,
    pub(super) expires_at: Option<SystemTime>,
}

struct Entry {
    /// The principal, or `None` for a token found invalid.
    principal: Option<Arc<Principal>>,
    until: Instant,
}

/// The verdicts, bounded in number and in age.
pub(super) struct TokenCache {
    entries: Mutex<HashMap<[u8; 32], Entry>>,
    most: usize,
    ttl: Duration,
}

impl TokenCache {
    pub(super) fn new(most: usize, ttl: Duration) -> TokenCache {
        TokenCache {
            entries: Mutex::new(HashMap::new()),
            most: most.max(1),
            ttl,
        }
    }

    /// The kept verdict on `token`, while it holds.
    pub(super) fn get(&self, token: &[u8]) -> Option<Result<Arc<Principal>, Denied>> {
        let key = digest(token);
        let entries = self.entries.lock().ok()?;
        let entry = entries.get(&key)?;
        (Instant::now() < entry.until).then(|| entry.principal.clone().ok_or(Denied::Invalid))
    }

    /// Keeps a verdict on `token`: a valid one until the token expires or the cache's
    /// time runs out, whichever is first; an invalid one for a short while. A token that
    /// could not be checked is not kept.
    pub(super) fn put(&self, token: &[u8], verdict: &Result<Verdict, Denied>) {
        let now = Instant::now();
        let entry = match verdict {
            Ok(v) => {
                let left = match v.expires_at {
                    None => self.ttl,
                    Some(exp) => match exp.duration_since(SystemTime::now()) {
                        Ok(left) => left.min(self.ttl),
                        // Expired already: nothing to keep.
                        Err(_) => return,
                    },
                };
                if left.is_zero() {
                    return;
                }
                Entry {
                    principal: Some(Arc::clone(&v.principal)),
                    until: now + left,
                }
            }
            Err(Denied::Invalid) => Entry {
                principal: None,
                until: now + INVALID_TTL.min(self.ttl.max(Duration::from_secs(1))),
            },
            Err(_) => return,
        };
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= self.most {
            entries.retain(|_, e| e.until > now);
        }
        if entries.len() >= self.most {
            // Still full of live verdicts: half go, whichever (they are verified again
            // when their tokens come back).
            let drop: Vec<[u8; 32]> = entries.keys().take(self.most / 2 + 1).copied().collect();
            for key in drop {
                entries.remove(&key);
            }
        }
        entries.insert(digest(token), entry);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or(0)
    }
}

fn digest(token: &[u8]) -> [u8; 32] {
    Sha256::digest(token).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(id: &str, expires_in: Option<Duration>) -> Result<Verdict, Denied> {
        Ok(Verdict {
            principal: Arc::new(Principal::new(id)),
            expires_at: expires_in.map(|d| SystemTime::now() + d),
        })
    }

    #[test]
    fn verdicts_are_kept_by_digest_and_bounded() {
        let cache = TokenCache::new(4, Duration::from_secs(60));
        cache.put(b"t1", &valid("ada", None));
        cache.put(b"t2", &Err(Denied::Invalid));
        cache.put(b"t3", &Err(Denied::Unavailable));
        assert_eq!(
            cache
                .get(b"t1")
                .and_then(Result::ok)
                .map(|p| p.id().to_owned()),
            Some("ada".into())
        );
        assert_eq!(
            cache.get(b"t2").map(|v| v.err()),
            Some(Some(Denied::Invalid))
        );
        assert!(
            cache.get(b"t3").is_none(),
            "an unavailable verdict is not kept"
        );
        assert!(cache.get(b"t4").is_none());
        // At the bound and past it: never more than `most` kept.
        for i in 0..10 {
            cache.put(format!("x{i}").as_bytes(), &valid("bob", None));
            assert!(cache.len() <= 4, "{}", cache.len());
        }
    }

    #[test]
    fn a_verdict_lasts_no_longer_than_its_token() {
        let cache = TokenCache::new(10, Duration::from_secs(60));
        cache.put(b"gone", &valid("ada", Some(Duration::ZERO)));
        assert!(
            cache.get(b"gone").is_none(),
            "an expired token's verdict is not kept"
        );
        let cache = TokenCache::new(10, Duration::ZERO);
        cache.put(b"t", &valid("ada", Some(Duration::from_secs(60))));
        assert!(cache.get(b"t").is_none(), "nor one past the cache's time");
    }
}
