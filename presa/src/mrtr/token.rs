//! Signed request state (wire section 10.4): the opaque `requestState` token that carries
//! a multi round-trip request's progress from one round to the next.
//!
//! Format: `presa1.<key id>.<base64url(payload JSON)>.<base64url(HMAC-SHA256)>`. The MAC
//! covers the version, the key id and the payload. The payload binds the token to the
//! server's name (audience), the method, the params other than `_meta`, `inputResponses`
//! and `requestState` (canonical JSON), and the principal when there is one; it carries an
//! expiry, a random id (for single use), the answers accepted so far and the handler's own
//! state. Tokens are signed, not encrypted: put nothing secret in them.
//!
//! Every failure (format, unknown key, bad MAC, expiry, binding, replay) is the same
//! -32602 "Invalid or expired request state", with no detail.

use crate::error::Error;
use crate::wire::jsonrpc::RequestParams;
use crate::wire::write;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

type HmacSha256 = Hmac<Sha256>;

const VERSION: &str = "presa1";
/// Default lifetime of a token.
pub const DEFAULT_TTL: Duration = Duration::from_secs(300);
/// Longest lifetime a token may be given.
pub const MAX_TTL: Duration = Duration::from_secs(900);
/// Largest token accepted or issued, in bytes.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// Shortest key accepted, in bytes.
pub const MIN_KEY_BYTES: usize = 32;

/// The message of every request-state failure.
pub(crate) fn invalid() -> Error {
    Error::invalid_params("Invalid or expired request state")
}

/// One signing key with its id. Its secret is wiped from memory when the key is dropped.
#[derive(Clone)]
pub struct StateKey {
    id: String,
    secret: zeroize::Zeroizing<Vec<u8>>,
}

impl StateKey {
    /// A key. The id names it inside tokens (letters, digits, `-` and `_`); the secret
    /// must have at least 32 bytes.
    pub fn new(id: impl Into<String>, secret: impl Into<Vec<u8>>) -> Result<Self, String> {
        let id = id.into();
        let secret = secret.into();
        if id.is_empty()
            || id.len() > 32
            || !id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(format!(
                "request-state key id {id:?} must be 1 to 32 letters, digits, '-' or '_'"
            ));
        }
        if secret.len() < MIN_KEY_BYTES {
            return Err(format!(
                "request-state key {id:?} must have at least {MIN_KEY_BYTES} bytes"
            ));
        }
        Ok(StateKey {
            id,
            secret: zeroize::Zeroizing::new(secret),
        })
    }

    /// A random key, for a single process; `None` without OS randomness (a guessable
    /// key would let anyone forge request state, so there is no fallback).
    pub(crate) fn random() -> Option<Self> {
        Some(StateKey {
            id: "r".into(),
            secret: zeroize::Zeroizing::new(random_bytes(32)?),
        })
    }

    fn mac(&self) -> Option<HmacSha256> {
        HmacSha256::new_from_slice(&self.secret).ok()
    }

    /// The key's id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// The keys that sign and verify request state: the first signs, all verify, so keys can
/// rotate without breaking tokens in flight (add the new key first, keep the old one
/// until its tokens expire).
#[derive(Clone, Debug)]
pub struct Keyring {
    keys: Vec<StateKey>,
}

impl Keyring {
    /// A keyring; the first key signs. At least one key, and no two with one id (a token
    /// names its key by id).
    pub fn new(keys: Vec<StateKey>) -> Result<Self, String> {
        if keys.is_empty() {
            return Err("a request-state keyring needs at least one key".into());
        }
        // A token names its key by id: a second key with the same id could never verify.
        for (i, key) in keys.iter().enumerate() {
            if keys[..i].iter().any(|k| k.id == key.id) {
                return Err(format!(
                    "the request-state keyring has two keys with the id {:?}",
                    key.id
                ));
            }
        }
        Ok(Keyring { keys })
    }

    /// Reads `PRESA_STATE_KEYS`: `id:base64key` entries separated by commas, the signing
    /// key first. `None` when the variable is not set; an error when it is set but is not
    /// such a list (not UTF-8 among them): a server must not fall back to a random key
    /// when its operator meant to give it one.
    pub fn from_env() -> Option<Result<Self, String>> {
        let text = std::env::var_os("PRESA_STATE_KEYS")?;
        let Some(text) = text.to_str() else {
            return Some(Err("PRESA_STATE_KEYS is not valid UTF-8".into()));
        };
        let keys: Result<Vec<StateKey>, String> = text
            .split(',')
            .map(|entry| {
                let (id, key) = entry
                    .trim()
                    .split_once(':')
                    .ok_or("PRESA_STATE_KEYS entries are id:base64key")?;
                let secret = zeroize::Zeroizing::new(
                    base64::engine::general_purpose::STANDARD
                        .decode(key.trim())
                        .map_err(|_| format!("PRESA_STATE_KEYS key {id:?} is not base64"))?,
                );
                StateKey::new(id, secret.to_vec())
            })
            .collect();
        Some(keys.and_then(Keyring::new))
    }

    /// One random key, for a single process; `None` without OS randomness.
    pub(crate) fn random() -> Option<Self> {
        Some(Keyring {
            keys: vec![StateKey::random()?],
        })
    }

    fn signer(&self) -> &StateKey {
        &self.keys[0]
    }

    fn find(&self, id: &str) -> Option<&StateKey> {
        self.keys.iter().find(|k| k.id == id)
    }
}

/// What a token carries.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct Payload {
    /// Audience: the server's name.
    pub(crate) aud: String,
    /// SHA-256 of the canonical binding (method, params, principal), base64url.
    pub(crate) bind: String,
    /// Issued at, Unix seconds.
    pub(crate) iat: u64,
    /// Expires at, Unix seconds.
    pub(crate) exp: u64,
    /// Random id, for single use.
    pub(crate) jti: String,
    /// Whether the token may be used once only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) once: bool,
    /// The answers accepted so far, by input key.
    #[serde(
        default,
        skip_serializing_if = "Map::is_empty",
        deserialize_with = "read_answers"
    )]
    pub(crate) answers: Map<String, Value>,
    /// The handler's own state.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "read_data"
    )]
    pub(crate) data: Option<Value>,
    /// The W3C `traceparent` of the round that sealed the state (with `otel`, when that
    /// round's span was recorded): the next round's span links to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tp: Option<String>,
}

/// The values a state carries are read through `wire::Json`, not serde_json's own `Value`
/// parse, which would give the key `$serde_json::private::RawValue` a meaning: a handler
/// that carries a map keyed by what a client sent gets it back as it was, or the state is
/// refused (book/src/protocol-notes.md).
fn read_answers<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Map<String, Value>, D::Error> {
    match <crate::wire::Json as Deserialize>::deserialize(d)?.0 {
        Value::Object(answers) => Ok(answers),
        _ => Err(serde::de::Error::custom("answers must be an object")),
    }
}

/// [`read_answers`] for the handler's state (`null`, as serde reads an `Option`, is none).
fn read_data<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Ok(
        match <crate::wire::Json as Deserialize>::deserialize(d)?.0 {
            Value::Null => None,
            data => Some(data),
        },
    )
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The binding of a request: what a token is valid for.
pub(crate) fn binding(method: &str, params: &RequestParams, principal: Option<&str>) -> String {
    BindingText::new(method, params, principal).digest()
}

/// What a binding is the digest of: the method, the params without `_meta`,
/// `inputResponses` and `requestState` as canonical JSON, and the principal (after a
/// marker, so that no principal and an empty one differ). Written
/// once while the params are at hand (cheaper than keeping a copy of them), hashed only
/// if a handler asks for input.
pub(crate) struct BindingText(Vec<u8>);

impl BindingText {
    pub(crate) fn new(method: &str, params: &RequestParams, principal: Option<&str>) -> Self {
        let mut text = Vec::with_capacity(128);
        text.extend_from_slice(b"presa-bind-v2\0");
        text.extend_from_slice(method.as_bytes());
        text.push(0);
        let bound = |k: &str| !matches!(k, "_meta" | "inputResponses" | "requestState");
        // Every member, wherever the decoder put it (see `Lifted`), in key order.
        canonical_members(params.members().filter(|m| bound(m.0)), &mut text);
        text.push(0);
        // No principal and an empty one are told apart: a marker precedes a principal.
        if let Some(p) = principal {
            text.push(1);
            text.extend_from_slice(p.as_bytes());
        }
        BindingText(text)
    }

    /// The binding: base64 of the SHA-256 of the text.
    pub(crate) fn digest(&self) -> String {
        B64.encode(Sha256::digest(&self.0))
    }
}

/// JSON with object keys sorted, whatever map order serde_json was built with.
fn canonical(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(m) => canonical_object(m, out),
        Value::Array(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(x, out);
            }
            out.push(b']');
        }
        Value::String(s) => write::push_str(out, s),
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        // A number always serializes.
        Value::Number(n) => {
            let _ = write::push_json(out, n);
        }
    }
}

/// An object, keys sorted.
fn canonical_object(m: &Map<String, Value>, out: &mut Vec<u8>) {
    canonical_members(m.iter().map(|(k, v)| (k.as_str(), v)), out);
}

/// An object of these members (distinct keys), in key order: written as they come when
/// they already are in order (a map without serde_json's `preserve_order` always is),
/// sorted first otherwise.
fn canonical_members<'a>(
    members: impl Iterator<Item = (&'a str, &'a Value)> + Clone,
    out: &mut Vec<u8>,
) {
    if members.clone().is_sorted_by_key(|m| m.0) {
        write_members(members, out);
    } else {
        let mut sorted: Vec<(&str, &Value)> = members.collect();
        sorted.sort_unstable_by_key(|m| m.0);
        write_members(sorted, out);
    }
}

/// An object of these members, in the order given.
fn write_members<'a>(members: impl IntoIterator<Item = (&'a str, &'a Value)>, out: &mut Vec<u8>) {
    out.push(b'{');
    for (i, (k, v)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write::push_str(out, k);
        out.push(b':');
        canonical(v, out);
    }
    out.push(b'}');
}

/// `n` bytes from the OS's random source; `None` when it fails. Ids and keys must be
/// unguessable, so callers refuse to go on rather than fall back to anything weaker.
fn random_bytes(n: usize) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; n];
    match getrandom::fill(&mut buf) {
        Ok(()) => Some(buf),
        Err(e) => {
            tracing::error!("no OS randomness: {e}");
            None
        }
    }
}

/// A random id of `bytes` bytes, base64url; `None` without OS randomness.
pub(crate) fn random_id(bytes: usize) -> Option<String> {
    random_bytes(bytes).map(|b| B64.encode(b))
}

/// The error for a state past [`MAX_TOKEN_BYTES`]. When the state would fit without the
/// answers it carries, the client's answers are what made it too large (they are kept as
/// sent): -32602, so the client can answer shorter. Otherwise the handler carries too
/// much: a server bug, -32603, logged.
#[cold]
fn oversized(payload: &Payload, bytes: usize) -> Error {
    let without_answers = Payload {
        answers: Map::new(),
        ..payload.clone()
    };
    // The token's size from its payload's: base64 of the JSON, plus the version, the key
    // id and the tag (well under 128 bytes).
    let fits = serde_json::to_vec(&without_answers)
        .is_ok_and(|json| json.len().div_ceil(3) * 4 + 128 <= MAX_TOKEN_BYTES);
    if fits {
        return Error::invalid_params(format!(
            "The answers given are too large to carry to the next round (the request state is limited to {MAX_TOKEN_BYTES} bytes)"
        ));
    }
    tracing::error!(
        bytes,
        "request state exceeds {MAX_TOKEN_BYTES} bytes; carry less state"
    );
    Error::internal()
}

impl Keyring {
    /// Seals a payload into a token, filling its times and id.
    pub(crate) fn seal(&self, mut payload: Payload, ttl: Duration) -> Result<String, Error> {
        let ttl = ttl.min(MAX_TTL);
        payload.iat = now();
        payload.exp = payload.iat + ttl.as_secs().max(1);
        payload.jti = random_id(16).ok_or_else(Error::internal)?;
        let json = serde_json::to_vec(&payload).map_err(|_| Error::internal())?;
        let key = self.signer();
        let body = format!("{VERSION}.{}.{}", key.id, B64.encode(json));
        let mut mac = key.mac().ok_or_else(Error::internal)?;
        mac.update(body.as_bytes());
        let token = format!("{body}.{}", B64.encode(mac.finalize().into_bytes()));
        if token.len() > MAX_TOKEN_BYTES {
            return Err(oversized(&payload, token.len()));
        }
        Ok(token)
    }

    /// Opens a token: format, key, MAC (constant time), audience, expiry and binding.
    pub(crate) fn open(&self, token: &str, audience: &str, bind: &str) -> Result<Payload, Error> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(invalid());
        }
        let mut parts = token.split('.');
        let (Some(version), Some(kid), Some(body), Some(sig), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(invalid());
        };
        if version != VERSION {
            return Err(invalid());
        }
        let key = self.find(kid).ok_or_else(invalid)?;
        let sig = B64.decode(sig).map_err(|_| invalid())?;
        let mut mac = key.mac().ok_or_else(invalid)?;
        mac.update(version.as_bytes());
        mac.update(b".");
        mac.update(kid.as_bytes());
        mac.update(b".");
        mac.update(body.as_bytes());
        mac.verify_slice(&sig).map_err(|_| invalid())?;
        let json = B64.decode(body).map_err(|_| invalid())?;
        let payload: Payload = serde_json::from_slice(&json).map_err(|_| invalid())?;
        if payload.aud != audience || payload.bind != bind || payload.exp < now() {
            return Err(invalid());
        }
        Ok(payload)
    }
}

/// Why a [`ReplayStore`] could not say whether a state was used before: unreachable,
/// failing, timed out. The request is answered with a retryable -32603 (the state is
/// never taken as unused); the reason is logged, never sent to the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayError(String);

impl ReplayError {
    /// A fault, with what went wrong (for the log).
    pub fn new(reason: impl Into<String>) -> Self {
        ReplayError(reason.into())
    }

    /// What went wrong.
    pub fn reason(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the replay store is unavailable: {}", self.0)
    }
}

impl std::error::Error for ReplayError {}

/// What [`ReplayStore::first_use`] returns: a boxed future, so the trait stays usable as
/// `Arc<dyn ReplayStore>` and a networked store awaits its I/O without blocking the
/// runtime. Implement it as `Box::pin(async move { … })`, or `Box::pin(std::future::ready(…))`
/// for an answer at hand.
pub type ReplayFuture<'a> = Pin<Box<dyn Future<Output = Result<bool, ReplayError>> + Send + 'a>>;

/// Remembers the ids of single-use tokens until they expire, so a second use is refused.
/// In memory by default; share one store among replicas serving the same clients (presa's
/// `SqliteStore` and `PgStore` are replay stores too), so a state spent on one is refused
/// on all. It is asked only for states a handler made single-use.
///
/// [`contract`](super::contract) checks the rules below against any store.
pub trait ReplayStore: Send + Sync + 'static {
    /// Records `id` as used until `expires_at` (Unix seconds). `Ok(true)` when it was not
    /// recorded, or its record had expired (`expires_at` before now): the caller is its
    /// first user. `Ok(false)` when a live record exists. Of several calls with one id at
    /// once, at most one is `Ok(true)`. A fault is `Err`, never `Ok(true)`.
    fn first_use<'a>(&'a self, id: &'a str, expires_at: u64) -> ReplayFuture<'a>;
}

/// Whether a durable replay store prunes expired records after recording `id`: for one
/// id in 64 (a state's id is random base64url, so its first character is one of 64 at
/// random), so pruning is a bounded share of the work, and, at [`PRUNE_BATCH`] records
/// each time, outpaces the one record each use adds.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn prunes_after(id: &str) -> bool {
    id.starts_with('A')
}

/// The most expired records a durable replay store drops in one pruning.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) const PRUNE_BATCH: i64 = 256;

/// The default [`ReplayStore`]: a map in this process, pruned as entries expire.
///
/// It holds one entry per single-use state used within the state TTL (at most 900 s):
/// only states this server signed get in, so it grows with the rate the server issues
/// them, never with what a client sends. Expired entries are dropped whenever the map has
/// doubled since the last pruning, so the work is constant per use on average.
#[derive(Default)]
pub struct MemoryReplayStore {
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    ids: HashMap<String, u64>,
    /// The size at which expired entries are next dropped.
    prune_at: usize,
}

impl MemoryReplayStore {
    /// The answer of [`ReplayStore::first_use`], at once.
    fn record(&self, id: &str, expires_at: u64) -> Result<bool, ReplayError> {
        // A poisoned lock means a panic while the map was changed: no answer can be
        // trusted, so the request is refused as retryable rather than accepted.
        let mut guard = self
            .seen
            .lock()
            .map_err(|_| ReplayError::new("the in-memory record is poisoned"))?;
        let Seen {
            ids: seen,
            prune_at,
        } = &mut *guard;
        let t = now();
        if seen.len() >= (*prune_at).max(1024) {
            seen.retain(|_, exp| *exp >= t);
            *prune_at = seen.len() * 2;
        }
        if seen.get(id).is_some_and(|exp| *exp >= t) {
            return Ok(false);
        }
        seen.insert(id.to_owned(), expires_at);
        Ok(true)
    }
}

impl ReplayStore for MemoryReplayStore {
    fn first_use<'a>(&'a self, id: &'a str, expires_at: u64) -> ReplayFuture<'a> {
        Box::pin(std::future::ready(self.record(id, expires_at)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the in-memory store takes `id` as a first use.
    fn used(store: &MemoryReplayStore, id: &str, expires_at: u64) -> bool {
        store.record(id, expires_at) == Ok(true)
    }

    fn ring(id: &str, byte: u8) -> Keyring {
        Keyring::new(vec![StateKey::new(id, vec![byte; 32]).unwrap()]).unwrap()
    }

    /// A single-use id is refused while it lives, accepted again once expired, and the
    /// store drops expired ids instead of keeping them.
    /// A keyring with two keys of one id is refused: tokens name their key by id, so the
    /// second could never verify.
    #[test]
    fn key_ids_are_unique_in_a_keyring() {
        let key = |id: &str, byte: u8| StateKey::new(id, vec![byte; 32]).unwrap();
        let error = Keyring::new(vec![key("k1", 1), key("k2", 2), key("k1", 3)])
            .err()
            .unwrap_or_default();
        assert!(error.contains("two keys with the id \"k1\""), "{error}");
        assert!(Keyring::new(vec![key("k1", 1), key("k2", 2)]).is_ok());
    }

    #[test]
    fn replay_store_refuses_reuse_and_drops_expired_ids() {
        let store = MemoryReplayStore::default();
        let later = now() + 60;
        assert!(used(&store, "a", later));
        assert!(!used(&store, "a", later), "a second use is refused");
        assert!(used(&store, "old", 1));
        assert!(used(&store, "old", 1), "an expired id is not remembered");
        for i in 0..5000 {
            assert!(used(&store, &format!("gone{i}"), 1));
        }
        let kept = store.seen.lock().map(|s| s.ids.len()).unwrap_or(usize::MAX);
        assert!(kept < 2100, "expired ids are pruned: {kept} kept");
        assert!(!used(&store, "a", later), "live ids survive pruning");
    }

    /// Whatever TTL is asked, a state expires within `MAX_TTL`.
    #[test]
    fn state_ttl_is_capped_at_900_seconds() {
        let k = ring("a", 1);
        let t = k
            .seal(Payload::default(), Duration::from_secs(100_000))
            .unwrap();
        let p = k.open(&t, "", "").unwrap();
        assert_eq!(MAX_TTL, Duration::from_secs(900));
        assert!(p.exp - p.iat <= 900, "{} s", p.exp - p.iat);
        assert!(p.exp - p.iat >= 899);
    }

    #[test]
    fn seal_and_open() {
        let k = ring("a", 1);
        let p = Payload {
            aud: "s".into(),
            bind: "b".into(),
            ..Default::default()
        };
        let t = k.seal(p.clone(), DEFAULT_TTL).unwrap();
        let opened = k.open(&t, "s", "b").unwrap();
        assert_eq!(opened.aud, "s");
        assert!(k.open(&t, "other", "b").is_err(), "audience");
        assert!(k.open(&t, "s", "c").is_err(), "binding");
        assert!(k.open(&format!("{t}-TAMPERED"), "s", "b").is_err());
        assert!(ring("a", 2).open(&t, "s", "b").is_err(), "another key");
        let t2 = k.seal(p, DEFAULT_TTL).unwrap();
        assert_ne!(t, t2, "each round gets a fresh token");
    }

    /// What a state carries comes back as it was sealed (a carried `null` as none, as
    /// before), read through `wire::Json`: a carried map keyed by serde_json's private
    /// RawValue key is not given that key's meaning (serde_json's own parse returned
    /// `1` for the map below); the state is refused instead.
    #[test]
    fn carried_values_come_back_as_sealed() {
        let k = ring("a", 1);
        let round = |answers: Map<String, Value>, data: Option<Value>| {
            let p = Payload {
                aud: "s".into(),
                bind: "b".into(),
                answers,
                data,
                ..Default::default()
            };
            let t = k.seal(p, DEFAULT_TTL).expect("sealed");
            k.open(&t, "s", "b").map(|p| (p.answers, p.data))
        };
        let answers = serde_json::json!({"k": {"action": "accept", "content": {"a": [1, 2.5]}}});
        let Value::Object(answers) = answers else {
            panic!("an object");
        };
        let data = serde_json::json!({"step": 2, "seen": ["x"]});
        let (a, d) = round(answers.clone(), Some(data.clone())).expect("opens");
        assert_eq!((a, d), (answers, Some(data)));
        let (_, d) = round(Map::new(), Some(Value::Null)).expect("opens");
        assert_eq!(d, None);
        let raw = serde_json::json!({"$serde_json::private::RawValue": "1"});
        assert!(round(Map::new(), Some(raw.clone())).is_err());
        let mut keyed = Map::new();
        keyed.insert("k".into(), serde_json::json!([raw]));
        assert!(round(keyed, None).is_err());
    }

    #[test]
    fn rotation_keeps_old_tokens_valid() {
        let old = StateKey::new("old", vec![1; 32]).unwrap();
        let new = StateKey::new("new", vec![2; 32]).unwrap();
        let before = Keyring::new(vec![old.clone()]).unwrap();
        let t = before
            .seal(
                Payload {
                    aud: "s".into(),
                    bind: "b".into(),
                    ..Default::default()
                },
                DEFAULT_TTL,
            )
            .unwrap();
        let after = Keyring::new(vec![new, old]).unwrap();
        assert!(after.open(&t, "s", "b").is_ok());
        let t2 = after
            .seal(
                Payload {
                    aud: "s".into(),
                    bind: "b".into(),
                    ..Default::default()
                },
                DEFAULT_TTL,
            )
            .unwrap();
        assert!(t2.starts_with("presa1.new."));
    }

    #[test]
    fn binding_text_is_canonical_json_between_nuls() {
        let params = serde_json::json!({
            "name": "echo",
            "arguments": {"b": null, "a": [1, "x\"y", {"d": 2.5, "c": true}]},
            "_meta": {"ignored": 1},
            "inputResponses": {},
            "requestState": "..."
        });
        let Value::Object(params) = params else {
            unreachable!()
        };
        let text = BindingText::new("tools/call", &params.clone().into(), Some("alice"));
        assert_eq!(
            String::from_utf8_lossy(&text.0),
            "presa-bind-v2\0tools/call\0{\"arguments\":{\"a\":[1,\"x\\\"y\",{\"c\":true,\"d\":2.5}],\"b\":null},\"name\":\"echo\"}\0\u{1}alice"
        );
        // No principal and an empty one bind differently.
        let none = BindingText::new("tools/call", &params.clone().into(), None);
        let empty = BindingText::new("tools/call", &params.clone().into(), Some(""));
        assert_ne!(none.digest(), empty.digest());
        assert_eq!(
            text.digest(),
            binding("tools/call", &params.into(), Some("alice"))
        );
    }

    /// A request state issued for a tools/call decoded by the transports (its `name`
    /// and `arguments` held apart from the params map) is bound to the same text as
    /// the same call read into one map.
    #[test]
    fn binding_is_the_same_for_lifted_members() {
        let frame = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"task":{},"name":"echo","zz":1,"arguments":{"b":1,"a":[true]},"requestState":"s"}}"#;
        let read = |bytes: &[u8], lifting: bool| {
            let decoded = if lifting {
                crate::wire::jsonrpc::decode_lifting(bytes)
            } else {
                crate::wire::jsonrpc::decode(bytes)
            };
            match decoded {
                Ok(crate::wire::jsonrpc::Inbound::Request(r)) => {
                    crate::wire::jsonrpc::RequestParams::new(r.params, r.lifted)
                }
                _ => panic!("a request"),
            }
        };
        let lifted = read(frame.as_bytes(), true);
        let plain = read(frame.as_bytes(), false);
        let text = BindingText::new("tools/call", &lifted, None);
        assert_eq!(text.0, BindingText::new("tools/call", &plain, None).0);
        assert_eq!(
            String::from_utf8_lossy(&text.0),
            "presa-bind-v2\0tools/call\0{\"arguments\":{\"a\":[true],\"b\":1},\"name\":\"echo\",\"task\":{},\"zz\":1}\0"
        );
    }

    #[test]
    fn binding_ignores_meta_and_rounds() {
        let mut a = Map::new();
        a.insert("name".into(), Value::from("t"));
        let mut b = a.clone();
        b.insert("_meta".into(), serde_json::json!({"x": 1}));
        b.insert("requestState".into(), Value::from("..."));
        assert_eq!(
            binding("tools/call", &a.clone().into(), None),
            binding("tools/call", &b.clone().into(), None)
        );
        assert_ne!(
            binding("tools/call", &a.clone().into(), None),
            binding("prompts/get", &a.clone().into(), None)
        );
        assert_ne!(
            binding("tools/call", &a.clone().into(), None),
            binding("tools/call", &a.clone().into(), Some("alice"))
        );
    }

    #[test]
    fn single_use() {
        let store = MemoryReplayStore::default();
        assert!(used(&store, "x", now() + 10));
        assert!(!used(&store, "x", now() + 10));
    }
}
