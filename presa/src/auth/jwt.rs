//! [`JwtVerifier`]: JWT access tokens (RFC 9068) checked against the signing keys the
//! authorization server publishes (its JWKS), which it fetches, caches and refetches.

use super::fetch::{self, Endpoint, HttpClient};
use super::verify::{TokenError, TokenVerifier, VerifiedToken, Verifying};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Header, Validation};
use serde_json::{Map, Value};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// How far a token's `exp`, `nbf` and `iat` may be off, unless configured: clocks drift.
const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);

/// How often the JWKS is fetched again at most, unless configured.
const DEFAULT_REFETCH_INTERVAL: Duration = Duration::from_secs(30);

/// The most keys kept from one JWKS: a token without a `kid` is tried against every
/// key of its algorithm, so the set bounds the work one token can cause. Authorization
/// servers publish a handful (the current keys and those being rotated in or out).
const MAX_KEYS: usize = 32;

/// The smallest RSA modulus accepted, in bytes: 2048 bits (RFC 7518 section 3.3).
const MIN_RSA_MODULUS: usize = 256;

/// Verifies JWT access tokens (RFC 9068) signed by one authorization server, with the
/// keys of its JWKS. Keys named in a token (`jku`, `jwk`, `x5u`, `x5c`) are never used.
///
/// A token is valid when all of these hold:
/// - it is a JWS whose header `alg` is that of the key it names: RS256, RS384, RS512,
///   PS256, PS384, PS512, ES256, ES384 or EdDSA (Ed25519). The algorithm is the key's (its
///   JWK `alg`, or for a JWK without one: RS256 for RSA, ES256 for P-256, ES384 for
///   P-384, EdDSA for Ed25519), never the token's: a token whose header names another
///   algorithm than its key's is refused. `none` and the HMAC algorithms (HS256, …) are
///   always refused, and so are RSA keys under 2048 bits and keys whose `use` is not
///   `sig`;
/// - its signature verifies with the key its header `kid` names (a token without a `kid`:
///   with any key of the header's algorithm);
/// - its header has no `crit` (RFC 7515 section 4.1.11: presa implements no extension a
///   token could require it to understand);
/// - its header `typ`, when present, is `at+jwt` or `application/at+jwt` (RFC 9068), or
///   `JWT`; with [`require_at_jwt_type`](JwtVerifier::require_at_jwt_type), only the first
///   two, and it must be present. Many authorization servers issue access tokens typed
///   `JWT` or untyped, hence the lenient default;
/// - its `iss` is exactly the configured issuer;
/// - it has an `exp` that has not passed, and its `nbf` (when present) has come and its
///   `iat` (when present) is not in the future, each within the
///   [`leeway`](JwtVerifier::leeway) (default 30 s);
/// - it has no `cnf` claim: a token bound to a key of its client (DPoP, mutual TLS) is
///   not accepted as a bearer token, since presa checks no proof of possession.
///
/// Its audience (`aud`) is not checked here: presa checks it afterwards, for every
/// verifier alike (RFC 8707: it must name the server's canonical URI). The claims become
/// the [`VerifiedToken`] (see [`VerifiedToken::from_claims`]).
///
/// **Keys.** The JWKS is found through the issuer's metadata (RFC 8414's
/// `/.well-known/oauth-authorization-server`, then OpenID Connect Discovery's
/// `/.well-known/openid-configuration`, whose `issuer` must be exactly the configured
/// one), or is configured with [`jwks_uri`](JwtVerifier::jwks_uri). It is fetched on
/// first use (or by [`warm`](JwtVerifier::warm)) and kept. A token naming a key the kept
/// set lacks (a rotated key) makes it fetch the JWKS again, at most once per
/// [`refetch_interval`](JwtVerifier::refetch_interval) (default 30 s), so that a flood of
/// tokens with made-up `kid`s cannot make presa hammer the authorization server; if the
/// key is still missing, the token is invalid. Fetches are coalesced: one at a time, and
/// verifications waiting on one use its result.
///
/// **When the authorization server is unreachable** (its metadata or JWKS does not answer,
/// answers an error, or answers something that is not a JWKS), a token whose key is kept
/// still verifies; a token whose key is not is refused with [`TokenError::Unavailable`],
/// which presa answers with 503, not 401: the token may well be valid, and a client that
/// threw it away on a 401 would have to authorize again for nothing. The same holds until
/// the next fetch is allowed. A set once fetched is replaced only by one fetched
/// successfully.
///
/// **Configuration errors** (an issuer or JWKS URL that is not `https`, or `http` to
/// another host than a loopback one) are reported by [`warm`](JwtVerifier::warm) and by
/// every verification, as [`TokenError::Unavailable`]. Call `warm` at startup to find
/// them, and the authorization server's trouble, before the first request does.
///
/// Fetching is bounded: finding and fetching the JWKS takes at most
/// [`timeout`](JwtVerifier::timeout) altogether (default 10 s, connecting included), and
/// each answer read is at most
/// [`max_response_bytes`](JwtVerifier::max_response_bytes) (default 1 MiB); only a 2xx
/// JSON answer counts. TLS is rustls with the Mozilla root certificates.
///
/// Signatures are checked by the `jsonwebtoken` crate with its RustCrypto backend. That
/// crate chooses its backend once per process: if another crate in the program enables its
/// other backend (`aws_lc_rs`) and no backend was installed, this verifier installs the
/// RustCrypto one; one the program installed itself serves as it is.
///
/// ```no_run
/// # async fn run() -> Result<(), presa::auth::TokenError> {
/// use presa::auth::{Authorization, JwtVerifier};
/// use std::time::Duration;
///
/// let verifier = JwtVerifier::new("https://auth.example.com")
///     .leeway(Duration::from_secs(10))
///     .require_at_jwt_type(true);
/// verifier.warm().await?;
/// let auth = Authorization::new(verifier).authorization_server("https://auth.example.com");
/// # Ok(()) }
/// ```
pub struct JwtVerifier {
    issuer: String,
    jwks_uri: Option<String>,
    leeway: u64,
    require_at_jwt: bool,
    refetch_interval: Duration,
    timeout: Duration,
    max_body: usize,
    /// The HTTP client and the checked URLs, made on first use.
    setup: OnceLock<Result<Setup, String>>,
    /// The keys kept; replaced whole by each successful fetch.
    keys: Mutex<Arc<KeySet>>,
    /// Held while fetching: one fetch at a time.
    refresh: tokio::sync::Mutex<Refresh>,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.issuer)
            .field("jwks_uri", &self.jwks_uri)
            .field("leeway", &self.leeway)
            .field("require_at_jwt_type", &self.require_at_jwt)
            .field("refetch_interval", &self.refetch_interval)
            .field("timeout", &self.timeout)
            .field("max_response_bytes", &self.max_body)
            .finish_non_exhaustive()
    }
}

/// What a verifier needs to fetch, made once from its configuration.
struct Setup {
    http: HttpClient,
    /// The configured JWKS URL; `None`: found through the issuer's metadata.
    jwks: Option<Endpoint>,
}

/// The fetching state, behind the fetch lock.
#[derive(Default)]
struct Refresh {
    /// When the last fetch ended.
    last: Option<Instant>,
    /// Why the last fetch failed, if it did.
    error: Option<String>,
    /// The JWKS URL the issuer's metadata named (forgotten when fetching it fails, so the
    /// metadata is read again).
    discovered: Option<Endpoint>,
}

/// The keys of one fetched JWKS.
#[derive(Default)]
struct KeySet {
    /// 0 before the first fetch; one more with each successful fetch.
    generation: u64,
    keys: Vec<Key>,
}

/// One usable signing key.
struct Key {
    kid: Option<String>,
    alg: Algorithm,
    decoding: DecodingKey,
}

/// The keys a token may be checked with.
enum Selection<'a> {
    Keys(Vec<&'a Key>),
    /// Its `kid` names keys, none of the header's algorithm.
    WrongAlgorithm(Algorithm),
    /// No key fits: its `kid` is not in the set (or, without a `kid`, no key has the
    /// header's algorithm).
    Unknown,
}

impl KeySet {
    fn select(&self, header: &Header) -> Selection<'_> {
        match &header.kid {
            Some(kid) => {
                let named: Vec<&Key> = self
                    .keys
                    .iter()
                    .filter(|k| k.kid.as_deref() == Some(kid))
                    .collect();
                let fitting: Vec<&Key> = named
                    .iter()
                    .copied()
                    .filter(|k| k.alg == header.alg)
                    .collect();
                match (named.first(), fitting.is_empty()) {
                    (None, _) => Selection::Unknown,
                    (Some(key), true) => Selection::WrongAlgorithm(key.alg),
                    (Some(_), false) => Selection::Keys(fitting),
                }
            }
            None => {
                let fitting: Vec<&Key> = self.keys.iter().filter(|k| k.alg == header.alg).collect();
                if fitting.is_empty() {
                    Selection::Unknown
                } else {
                    Selection::Keys(fitting)
                }
            }
        }
    }
}

impl JwtVerifier {
    /// A verifier of tokens issued by `issuer` (the authorization server's issuer
    /// identifier, exactly as its tokens' `iss` and its metadata's `issuer` write it),
    /// whose JWKS is found through its metadata.
    pub fn new(issuer: impl Into<String>) -> JwtVerifier {
        JwtVerifier {
            issuer: issuer.into(),
            jwks_uri: None,
            leeway: DEFAULT_LEEWAY.as_secs(),
            require_at_jwt: false,
            refetch_interval: DEFAULT_REFETCH_INTERVAL,
            timeout: fetch::DEFAULT_TIMEOUT,
            max_body: fetch::DEFAULT_MAX_BODY,
            setup: OnceLock::new(),
            keys: Mutex::new(Arc::default()),
            refresh: tokio::sync::Mutex::new(Refresh::default()),
        }
    }

    /// Fetches the JWKS from `url` instead of the one the issuer's metadata names (which
    /// is then not read).
    pub fn jwks_uri(self, url: impl Into<String>) -> Self {
        JwtVerifier {
            jwks_uri: Some(url.into()),
            ..self.reset()
        }
    }

    /// How far `exp`, `nbf` and `iat` may be off (default 30 s; whole seconds).
    pub fn leeway(self, leeway: Duration) -> Self {
        JwtVerifier {
            leeway: leeway.as_secs(),
            ..self.reset()
        }
    }

    /// Whether a token's header must say `typ: at+jwt` (or `application/at+jwt`), as RFC
    /// 9068 has it (default `false`: `JWT`, or no `typ`, are accepted too; any other
    /// `typ` never is).
    pub fn require_at_jwt_type(self, required: bool) -> Self {
        JwtVerifier {
            require_at_jwt: required,
            ..self.reset()
        }
    }

    /// How often, at most, the JWKS is fetched again because a token names a key it does
    /// not have, or after a fetch failed (default 30 s).
    pub fn refetch_interval(self, interval: Duration) -> Self {
        JwtVerifier {
            refetch_interval: interval,
            ..self.reset()
        }
    }

    /// How long finding and fetching the JWKS may take altogether, connecting included
    /// (default 10 s).
    pub fn timeout(self, timeout: Duration) -> Self {
        JwtVerifier {
            timeout,
            ..self.reset()
        }
    }

    /// The largest metadata document or JWKS read, in bytes (default 1 MiB).
    pub fn max_response_bytes(self, max: usize) -> Self {
        JwtVerifier {
            max_body: max,
            ..self.reset()
        }
    }

    /// The same configuration with nothing made or fetched yet.
    fn reset(self) -> Self {
        JwtVerifier {
            setup: OnceLock::new(),
            keys: Mutex::new(Arc::default()),
            refresh: tokio::sync::Mutex::new(Refresh::default()),
            ..self
        }
    }

    /// Checks the configuration and fetches the JWKS now, unless it was fetched already:
    /// `Ok` when the keys are in hand. A failure is what a verification would meet (it
    /// counts as a fetch for [`refetch_interval`](JwtVerifier::refetch_interval)).
    pub async fn warm(&self) -> Result<(), TokenError> {
        let setup = self.setup()?;
        let kept = self.kept();
        if kept.generation > 0 {
            return Ok(());
        }
        self.refreshed(setup, kept.generation).await.map(|_| ())
    }

    /// The HTTP client and the checked URLs, made on first use.
    fn setup(&self) -> Result<&Setup, TokenError> {
        self.setup
            .get_or_init(|| {
                crypto_provider()?;
                let jwks = self.jwks_uri.as_deref().map(Endpoint::parse).transpose()?;
                if jwks.is_none() {
                    // Checked now: the issuer is fetched from.
                    Endpoint::parse(&self.issuer)?;
                }
                let http = HttpClient::new(self.timeout, self.max_body)?;
                Ok(Setup { http, jwks })
            })
            .as_ref()
            .map_err(|why| TokenError::Unavailable(format!("JwtVerifier's configuration: {why}")))
    }

    /// The keys kept now.
    fn kept(&self) -> Arc<KeySet> {
        Arc::clone(&self.keys.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The keys after fetching them again, for a verification that found the set of
    /// `seen` lacking: the set another fetch made meanwhile if there was one, the kept set
    /// if the last fetch is too recent (or its error, if it failed), else a new fetch's.
    async fn refreshed(&self, setup: &Setup, seen: u64) -> Result<Arc<KeySet>, TokenError> {
        let mut state = self.refresh.lock().await;
        let kept = self.kept();
        if kept.generation != seen {
            return Ok(kept);
        }
        if let Some(last) = state.last
            && last.elapsed() < self.refetch_interval
        {
            return match &state.error {
                Some(why) => Err(TokenError::Unavailable(why.clone())),
                None => Ok(kept),
            };
        }
        // One deadline over the search for the metadata and the JWKS together: each
        // exchange has its own, but a server answering each slowly must not hold the
        // verifications waiting on this fetch for several of them.
        let fetched = tokio::time::timeout(self.timeout, self.fetch(setup, &mut state))
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "the JWKS of {:?}: not fetched within {:?}",
                    self.issuer, self.timeout
                ))
            });
        state.last = Some(Instant::now());
        match fetched {
            Ok(keys) => {
                state.error = None;
                let set = Arc::new(KeySet {
                    generation: kept.generation + 1,
                    keys,
                });
                *self.keys.lock().unwrap_or_else(PoisonError::into_inner) = Arc::clone(&set);
                Ok(set)
            }
            Err(why) => {
                state.error = Some(why.clone());
                Err(TokenError::Unavailable(why))
            }
        }
    }

    /// Fetches the JWKS (finding it through the metadata first when needed): its usable
    /// keys.
    async fn fetch(&self, setup: &Setup, state: &mut Refresh) -> Result<Vec<Key>, String> {
        let jwks = match (&setup.jwks, &state.discovered) {
            (Some(configured), _) => configured.clone(),
            (None, Some(found)) => found.clone(),
            (None, None) => {
                let metadata = fetch::discover(&setup.http, &self.issuer).await?;
                let url = metadata
                    .get("jwks_uri")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        format!("the metadata of {:?} names no jwks_uri", self.issuer)
                    })?;
                let found = Endpoint::parse(url)?;
                state.discovered = Some(found.clone());
                found
            }
        };
        match setup.http.get_json(&jwks).await {
            Ok(document) => {
                parse_jwks(&document).map_err(|why| format!("the JWKS at {jwks}: {why}"))
            }
            Err(e) => {
                state.discovered = None;
                Err(format!("the JWKS at {jwks}: {e}"))
            }
        }
    }

    async fn check(&self, token: &str) -> Result<VerifiedToken, TokenError> {
        let setup = self.setup()?;
        let invalid = |why: String| Err(TokenError::Invalid(why));
        let header = match jsonwebtoken::decode_header(token) {
            Ok(header) => header,
            Err(e) => return invalid(format!("not a signed JWT with an accepted header: {e}")),
        };
        if header.alg.family() == AlgorithmFamily::Hmac {
            return invalid(format!("{:?} (HMAC) is never accepted", header.alg));
        }
        if !ALGORITHMS.contains(&header.alg) {
            return invalid(format!("{:?} is not an accepted algorithm", header.alg));
        }
        if let Some(crit) = &header.crit {
            // RFC 7515 section 4.1.11: a recipient refuses a JWS naming critical
            // extensions it does not understand, and presa understands none.
            return invalid(format!(
                "its header names critical extensions presa does not implement (crit {crit:?})"
            ));
        }
        if !typ_accepted(header.typ.as_deref(), self.require_at_jwt) {
            return invalid(format!(
                "its typ {:?} is not that of an access token{}",
                header.typ,
                if self.require_at_jwt {
                    " (at+jwt is required)"
                } else {
                    ""
                }
            ));
        }
        let mut keys = self.kept();
        if matches!(keys.select(&header), Selection::Unknown) {
            keys = self.refreshed(setup, keys.generation).await?;
        }
        let candidates = match keys.select(&header) {
            Selection::Keys(candidates) => candidates,
            Selection::WrongAlgorithm(alg) => {
                return invalid(format!(
                    "its header says {:?}, but its key {:?} is {alg:?}",
                    header.alg, header.kid
                ));
            }
            Selection::Unknown => {
                return invalid(match &header.kid {
                    Some(kid) => format!("the JWKS has no key {kid:?}"),
                    None => format!(
                        "it names no key, and the JWKS has none for {:?}",
                        header.alg
                    ),
                });
            }
        };
        let claims = self.decode(token, &candidates)?;
        if claims.get("iss").and_then(Value::as_str) != Some(self.issuer.as_str()) {
            return invalid(format!(
                "its iss {} is not the issuer {:?}",
                claims.get("iss").unwrap_or(&Value::Null),
                self.issuer
            ));
        }
        if claims.contains_key("cnf") {
            return invalid(SENDER_CONSTRAINED.into());
        }
        match claims.get("iat") {
            None => {}
            Some(iat) => match iat.as_f64() {
                Some(iat) if iat <= (unix_now() + self.leeway) as f64 => {}
                Some(_) => return invalid("it was issued in the future (iat)".into()),
                None => return invalid("its iat is not a number".into()),
            },
        }
        Ok(VerifiedToken::from_claims(claims))
    }

    /// The token's claims, its signature checked with one of `keys` (all of the header's
    /// algorithm) and its `exp` and `nbf` with the leeway.
    fn decode(&self, token: &str, keys: &[&Key]) -> Result<Map<String, Value>, TokenError> {
        let mut last = None;
        for key in keys {
            let mut validation = Validation::new(key.alg);
            validation.leeway = self.leeway;
            validation.validate_exp = true;
            validation.validate_nbf = true;
            validation.validate_aud = false;
            validation.set_required_spec_claims(&["exp"]);
            match jsonwebtoken::decode::<Map<String, Value>>(token, &key.decoding, &validation) {
                Ok(data) => return Ok(data.claims),
                Err(e) if matches!(e.kind(), ErrorKind::InvalidSignature) => last = Some(e),
                Err(e) => return Err(TokenError::Invalid(refusal(e.kind()))),
            }
        }
        Err(TokenError::Invalid(last.map_or_else(
            || "no key to check it with".into(),
            |e| refusal(e.kind()),
        )))
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> Verifying<'a> {
        Box::pin(self.check(token))
    }
}

/// The algorithms a key may have, and a token therefore.
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Why a token bound to a key of its client (a `cnf` claim: DPoP, RFC 9449, or mutual
/// TLS, RFC 8705) is refused: presa checks no proof of possession, and accepting such a
/// token as a bearer token would undo its binding.
pub(super) const SENDER_CONSTRAINED: &str =
    "it is bound to a key of its client (cnf), and presa accepts bearer tokens only";

/// Why jsonwebtoken refused a token, in presa's words.
fn refusal(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::InvalidSignature => "its signature does not verify".into(),
        ErrorKind::ExpiredSignature => "it has expired (exp)".into(),
        ErrorKind::ImmatureSignature => "it is not valid yet (nbf)".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("it has no numeric {claim} claim"),
        ErrorKind::InvalidClaimFormat(claim) => format!("its {claim} claim is malformed"),
        other => format!("{other:?}"),
    }
}

/// Whether a header `typ` is one an access token may have: `at+jwt` (RFC 9068, also as
/// `application/at+jwt`), and unless `at+jwt` is required, `JWT` or none. Media types
/// compare without regard to case (RFC 7515 section 4.1.9).
fn typ_accepted(typ: Option<&str>, require_at_jwt: bool) -> bool {
    // Compared as bytes: a `typ` is any JSON string, and slicing it as text could cut a
    // character in two.
    let is = |t: &str, name: &str| {
        let t = t.as_bytes();
        t.eq_ignore_ascii_case(name.as_bytes())
            || t.len() == name.len() + 12
                && t[..12].eq_ignore_ascii_case(b"application/")
                && t[12..].eq_ignore_ascii_case(name.as_bytes())
    };
    match typ {
        Some(t) if is(t, "at+jwt") => true,
        Some(t) => !require_at_jwt && is(t, "jwt"),
        None => !require_at_jwt,
    }
}

/// The usable signing keys of a JWKS document; the others are passed over (and logged at
/// debug level), so that one key presa cannot use does not take the others with it.
fn parse_jwks(document: &Value) -> Result<Vec<Key>, String> {
    let entries = document
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("it is not a JWKS (no keys array)")?;
    let mut keys = Vec::new();
    for entry in entries {
        match key_of(entry) {
            Ok(_) if keys.len() == MAX_KEYS => {
                tracing::warn!(
                    "the JWKS has more than {MAX_KEYS} usable keys; the first {MAX_KEYS} are kept"
                );
                break;
            }
            Ok(key) => keys.push(key),
            Err(why) => {
                let kid = entry.get("kid").map(ToString::to_string);
                tracing::debug!("a key of the JWKS is passed over: {why} (kid {kid:?})");
            }
        }
    }
    if keys.is_empty() && !entries.is_empty() {
        tracing::warn!("the JWKS has no key presa can verify signatures with");
    }
    Ok(keys)
}

/// One JWK as a usable signing key, or why not.
fn key_of(jwk: &Value) -> Result<Key, String> {
    let text = |name: &str| jwk.get(name).and_then(Value::as_str);
    match jwk.get("use") {
        None => {}
        Some(u) if u == "sig" => {}
        Some(u) => return Err(format!("its use is {u}, not sig")),
    }
    if let Some(ops) = jwk.get("key_ops") {
        let verifies = ops
            .as_array()
            .is_some_and(|ops| ops.iter().any(|op| op == "verify"));
        if !verifies {
            return Err("its key_ops do not include verify".into());
        }
    }
    let kty = text("kty").ok_or("it has no kty")?;
    let crv = text("crv");
    let alg = match text("alg") {
        Some(name) => {
            algorithm_named(name).ok_or_else(|| format!("its alg {name} is not accepted"))?
        }
        None => match (kty, crv) {
            ("RSA", _) => Algorithm::RS256,
            ("EC", Some("P-256")) => Algorithm::ES256,
            ("EC", Some("P-384")) => Algorithm::ES384,
            ("OKP", Some("Ed25519")) => Algorithm::EdDSA,
            _ => {
                return Err(format!(
                    "it has no alg, and kty {kty} with crv {crv:?} implies none accepted"
                ));
            }
        },
    };
    let member = |name: &str| -> Result<(&str, Vec<u8>), String> {
        let value = text(name).ok_or_else(|| format!("it has no {name}"))?;
        let bytes = URL_SAFE_NO_PAD
            .decode(value)
            .map_err(|_| format!("its {name} is not base64url"))?;
        Ok((value, bytes))
    };
    let unfit = || format!("its alg {alg:?} does not fit kty {kty} with crv {crv:?}");
    let decoding = match alg.family() {
        AlgorithmFamily::Rsa if kty == "RSA" => {
            let (n, modulus) = member("n")?;
            let (e, _) = member("e")?;
            let significant = modulus.iter().skip_while(|&&b| b == 0).count();
            if significant < MIN_RSA_MODULUS {
                return Err(format!(
                    "its modulus has {} bits, under the 2048 required",
                    significant * 8
                ));
            }
            DecodingKey::from_rsa_components(n, e).map_err(|e| e.to_string())?
        }
        AlgorithmFamily::Ec if kty == "EC" => {
            let size = match (alg, crv) {
                (Algorithm::ES256, Some("P-256")) => 32,
                (Algorithm::ES384, Some("P-384")) => 48,
                _ => return Err(unfit()),
            };
            let (x, xb) = member("x")?;
            let (y, yb) = member("y")?;
            if xb.len() != size || yb.len() != size {
                return Err("its coordinates do not fit its curve".into());
            }
            DecodingKey::from_ec_components(x, y).map_err(|e| e.to_string())?
        }
        AlgorithmFamily::Ed if kty == "OKP" && crv == Some("Ed25519") => {
            let (x, xb) = member("x")?;
            if xb.len() != 32 {
                return Err("its x is not an Ed25519 public key".into());
            }
            DecodingKey::from_ed_components(x).map_err(|e| e.to_string())?
        }
        _ => return Err(unfit()),
    };
    Ok(Key {
        kid: text("kid").map(str::to_owned),
        alg,
        decoding,
    })
}

/// The accepted algorithm named `name` (a JWK's `alg`): none for HMAC, `none` and the
/// encryption algorithms.
fn algorithm_named(name: &str) -> Option<Algorithm> {
    name.parse::<Algorithm>()
        .ok()
        .filter(|alg| ALGORITHMS.contains(alg))
}

/// Makes sure jsonwebtoken has its process-wide crypto provider: the one its features
/// select, else (both of its backends enabled by the program's crates, none installed)
/// the RustCrypto one, installed here.
fn crypto_provider() -> Result<(), String> {
    use jsonwebtoken::crypto::CryptoProvider;
    if CryptoProvider::try_get_default().is_some() {
        return Ok(());
    }
    // Another thread may install one between the check and this: its provider serves
    // then, and this one's refusal is of no consequence.
    let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
    CryptoProvider::try_get_default()
        .map(|_| ())
        .ok_or_else(|| "jsonwebtoken has no crypto provider".into())
}

/// Now, in seconds since the Unix epoch.
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests;
