//! [`IntrospectionVerifier`]: access tokens checked by asking the authorization server that
//! issued them (OAuth 2.0 Token Introspection, RFC 7662): opaque tokens, and JWTs whose
//! revocation must be seen.

use super::fetch::{self, Basic, Endpoint, HttpClient};
use super::jwt::SENDER_CONSTRAINED;
use super::verify::{TokenError, TokenVerifier, VerifiedToken, Verifying};
use serde_json::Value;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use zeroize::Zeroizing;

/// How many introspection requests may be in flight at once, unless configured.
const DEFAULT_MAX_CONCURRENT: usize = 16;

/// The largest introspection answer (or metadata document) read, unless configured: an
/// answer is a few hundred bytes of claims.
const DEFAULT_MAX_ANSWER: usize = 64 * 1024;

/// How long a failed search for the introspection endpoint stands before the metadata is
/// read again: a flood of requests while the authorization server is down costs it one
/// search per interval, not one per request.
const REDISCOVER_AFTER: Duration = Duration::from_secs(30);

/// How the verifier authenticates to the introspection endpoint as a client (RFC 6749
/// section 2.3.1, RFC 8414's `token_endpoint_auth_method` names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientAuthentication {
    /// `client_secret_basic`: HTTP Basic with the client id and secret, each
    /// form-encoded first (the default; the one every authorization server supports).
    #[default]
    SecretBasic,
    /// `client_secret_post`: `client_id` and `client_secret` in the request's form body.
    SecretPost,
}

/// Verifies access tokens by asking the authorization server's introspection endpoint
/// (RFC 7662), as a client of it with a client id and secret.
///
/// For each token it POSTs `token=<token>&token_type_hint=access_token`, authenticated as
/// configured ([`ClientAuthentication`], HTTP Basic by default), and reads the answer:
/// - `active: false`: the token is not valid (expired, revoked, unknown): 401;
/// - `active: true`: the token is valid unless its `token_type` (when given) is not
///   `Bearer`, it has a `cnf` (it is bound to a key of its client, and presa checks no
///   proof of possession), or its `iss` (when given) is not the configured issuer. Its
///   members but `active` become the [`VerifiedToken`] (see
///   [`VerifiedToken::from_claims`]): `sub`, `client_id`, `scope`, `aud`, `iss`, `exp`.
///   presa then checks the audience and the expiry itself, as for every verifier: an
///   answer without an `aud` naming the server's canonical URI is refused (RFC 8707);
/// - anything else (no answer within the [`timeout`](IntrospectionVerifier::timeout), a
///   non-2xx status, including 401 when the authorization server refuses the
///   verifier's own credentials, an answer that is not JSON, is over
///   [`max_response_bytes`](IntrospectionVerifier::max_response_bytes), or has no
///   boolean `active`): the token cannot be checked now, [`TokenError::Unavailable`],
///   which presa answers with 503 and a `Retry-After`, not 401.
///
/// **Answers are kept by presa, not here.** Every verifier sits behind the server's
/// verdict cache, which keeps each verdict by the SHA-256 digest of its token, for at
/// most [`Authorization::cache_ttl`](super::Authorization::cache_ttl) (default 60 s) and
/// never past the answer's `exp`, in at most
/// [`Authorization::cache_entries`](super::Authorization::cache_entries) entries: a
/// repeated token is not introspected again meanwhile. So a token revoked at the
/// authorization server may be accepted for up to that time; `cache_ttl(Duration::ZERO)`
/// introspects on every request. Refusals are kept briefly too; a token that could not
/// be checked is not kept.
///
/// **Bounded.** At most [`max_concurrent`](IntrospectionVerifier::max_concurrent)
/// introspection requests are in flight at once (default 16); waiting for a turn counts
/// against the same [`timeout`](IntrospectionVerifier::timeout) as the exchange (default
/// 10 s), so that a slow authorization server makes requests fail with 503 rather than
/// pile up.
///
/// **The endpoint** is the issuer metadata's `introspection_endpoint` (RFC 8414's
/// `/.well-known/oauth-authorization-server`, then OpenID Connect Discovery's
/// `/.well-known/openid-configuration`, whose `issuer` must be exactly the configured
/// one), found on first use (or by [`warm`](IntrospectionVerifier::warm)) and kept; a
/// failed search is tried again 30 s later at the soonest. Or it is configured, with
/// [`endpoint`](IntrospectionVerifier::endpoint) or
/// [`with_endpoint`](IntrospectionVerifier::with_endpoint). It must be `https` (or `http`
/// to a loopback host): the token and the client secret travel to it.
///
/// The token is sent to the introspection endpoint and nowhere else, and is never logged.
///
/// ```no_run
/// # async fn run() -> Result<(), presa::auth::TokenError> {
/// use presa::auth::{Authorization, IntrospectionVerifier};
///
/// let verifier = IntrospectionVerifier::new("https://auth.example.com", "mcp-server", "s3cret")
///     .max_concurrent(32);
/// verifier.warm().await?;
/// let auth = Authorization::new(verifier).authorization_server("https://auth.example.com");
/// # Ok(()) }
/// ```
pub struct IntrospectionVerifier {
    issuer: Option<String>,
    endpoint: Option<String>,
    client_id: String,
    client_secret: Zeroizing<String>,
    authentication: ClientAuthentication,
    max_concurrent: usize,
    timeout: Duration,
    max_body: usize,
    /// The HTTP client and the configured endpoint, made on first use.
    setup: OnceLock<Result<Setup, String>>,
    /// One permit per introspection request in flight.
    permits: Semaphore,
    /// The endpoint found through the issuer's metadata, behind a lock held while
    /// searching (one search at a time).
    discovery: tokio::sync::Mutex<Discovery>,
}

impl std::fmt::Debug for IntrospectionVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the secret.
        f.debug_struct("IntrospectionVerifier")
            .field("issuer", &self.issuer)
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.client_id)
            .field("authentication", &self.authentication)
            .field("max_concurrent", &self.max_concurrent)
            .field("timeout", &self.timeout)
            .field("max_response_bytes", &self.max_body)
            .finish_non_exhaustive()
    }
}

/// What a verifier needs to ask, made once from its configuration.
struct Setup {
    http: HttpClient,
    /// The configured endpoint; `None`: found through the issuer's metadata.
    endpoint: Option<Endpoint>,
}

/// The search for the endpoint through the issuer's metadata.
#[derive(Default)]
struct Discovery {
    found: Option<Endpoint>,
    /// When the last search failed, and why.
    failed: Option<(Instant, String)>,
}

impl IntrospectionVerifier {
    /// A verifier asking the introspection endpoint that the metadata of `issuer` (the
    /// authorization server's issuer identifier) names, as the client `client_id` with
    /// `client_secret`. An answer's `iss`, when it has one, must be `issuer`.
    pub fn new(
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> IntrospectionVerifier {
        IntrospectionVerifier::configured(Some(issuer.into()), None, client_id, client_secret)
    }

    /// A verifier asking the introspection endpoint at `url`, as the client `client_id`
    /// with `client_secret`, with no issuer to hold answers to (set one with
    /// [`issuer`](IntrospectionVerifier::issuer)).
    pub fn with_endpoint(
        url: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> IntrospectionVerifier {
        IntrospectionVerifier::configured(None, Some(url.into()), client_id, client_secret)
    }

    fn configured(
        issuer: Option<String>,
        endpoint: Option<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> IntrospectionVerifier {
        IntrospectionVerifier {
            issuer,
            endpoint,
            client_id: client_id.into(),
            client_secret: Zeroizing::new(client_secret.into()),
            authentication: ClientAuthentication::default(),
            max_concurrent: DEFAULT_MAX_CONCURRENT,
            timeout: fetch::DEFAULT_TIMEOUT,
            max_body: DEFAULT_MAX_ANSWER,
            setup: OnceLock::new(),
            permits: Semaphore::new(DEFAULT_MAX_CONCURRENT),
            discovery: tokio::sync::Mutex::new(Discovery::default()),
        }
    }

    /// Asks the introspection endpoint at `url` instead of the one the issuer's metadata
    /// names (which is then not read).
    pub fn endpoint(self, url: impl Into<String>) -> Self {
        IntrospectionVerifier {
            endpoint: Some(url.into()),
            ..self
        }
        .reset()
    }

    /// The issuer an answer's `iss`, when it has one, must be.
    pub fn issuer(self, issuer: impl Into<String>) -> Self {
        IntrospectionVerifier {
            issuer: Some(issuer.into()),
            ..self
        }
        .reset()
    }

    /// How the verifier authenticates to the endpoint (default
    /// [`ClientAuthentication::SecretBasic`]).
    pub fn client_authentication(self, authentication: ClientAuthentication) -> Self {
        IntrospectionVerifier {
            authentication,
            ..self
        }
        .reset()
    }

    /// How many introspection requests may be in flight at once (default 16; at least 1).
    /// Further verifications wait for a turn, within the
    /// [`timeout`](IntrospectionVerifier::timeout).
    pub fn max_concurrent(self, n: usize) -> Self {
        IntrospectionVerifier {
            max_concurrent: n.clamp(1, Semaphore::MAX_PERMITS),
            ..self
        }
        .reset()
    }

    /// How long one verification may take, waiting for a turn and connecting included
    /// (default 10 s); the search for the endpoint through the issuer's metadata, on
    /// first use, has a deadline of its own as long.
    pub fn timeout(self, timeout: Duration) -> Self {
        IntrospectionVerifier { timeout, ..self }.reset()
    }

    /// The largest introspection answer or metadata document read, in bytes (default
    /// 64 KiB).
    pub fn max_response_bytes(self, max: usize) -> Self {
        IntrospectionVerifier {
            max_body: max,
            ..self
        }
        .reset()
    }

    /// The same configuration with nothing made or found yet (called after a field
    /// changed: the semaphore takes `max_concurrent` as it is).
    fn reset(self) -> Self {
        IntrospectionVerifier {
            setup: OnceLock::new(),
            permits: Semaphore::new(self.max_concurrent),
            discovery: tokio::sync::Mutex::new(Discovery::default()),
            ..self
        }
    }

    /// Checks the configuration and finds the introspection endpoint now, unless it is
    /// configured or was found already: `Ok` when it is known. A failure is what a
    /// verification would meet.
    pub async fn warm(&self) -> Result<(), TokenError> {
        let setup = self.setup()?;
        self.endpoint_of(setup).await.map(|_| ())
    }

    /// The HTTP client and the checked endpoint, made on first use.
    fn setup(&self) -> Result<&Setup, TokenError> {
        self.setup
            .get_or_init(|| {
                let endpoint = self.endpoint.as_deref().map(Endpoint::parse).transpose()?;
                match (&endpoint, &self.issuer) {
                    // Checked now: the issuer is fetched from.
                    (None, Some(issuer)) => {
                        Endpoint::parse(issuer)?;
                    }
                    (None, None) => return Err("no endpoint and no issuer to find one".into()),
                    (Some(_), _) => {}
                }
                let http = HttpClient::new(self.timeout, self.max_body)?;
                Ok(Setup { http, endpoint })
            })
            .as_ref()
            .map_err(|why| {
                TokenError::Unavailable(format!("IntrospectionVerifier's configuration: {why}"))
            })
    }

    /// The introspection endpoint: the configured one, or the one the issuer's metadata
    /// names (searched for once, or again once a failed search is old enough).
    async fn endpoint_of(&self, setup: &Setup) -> Result<Endpoint, TokenError> {
        if let Some(configured) = &setup.endpoint {
            return Ok(configured.clone());
        }
        let mut discovery = self.discovery.lock().await;
        if let Some(found) = &discovery.found {
            return Ok(found.clone());
        }
        if let Some((when, why)) = &discovery.failed
            && when.elapsed() < REDISCOVER_AFTER
        {
            return Err(TokenError::Unavailable(why.clone()));
        }
        let searched = tokio::time::timeout(self.timeout, self.discover(setup))
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "the metadata of {:?}: not found within {:?}",
                    self.issuer.as_deref().unwrap_or_default(),
                    self.timeout
                ))
            });
        match searched {
            Ok(found) => {
                discovery.failed = None;
                discovery.found = Some(found.clone());
                Ok(found)
            }
            Err(why) => {
                discovery.failed = Some((Instant::now(), why.clone()));
                Err(TokenError::Unavailable(why))
            }
        }
    }

    /// The `introspection_endpoint` of the issuer's metadata.
    async fn discover(&self, setup: &Setup) -> Result<Endpoint, String> {
        // `setup` made sure there is an issuer when no endpoint is configured.
        let issuer = self.issuer.as_deref().unwrap_or_default();
        let metadata = fetch::discover(&setup.http, issuer).await?;
        let url = metadata
            .get("introspection_endpoint")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("the metadata of {issuer:?} names no introspection_endpoint"))?;
        Endpoint::parse(url)
    }

    async fn check(&self, token: &str) -> Result<VerifiedToken, TokenError> {
        let setup = self.setup()?;
        let endpoint = self.endpoint_of(setup).await?;
        let mut form = vec![("token", token), ("token_type_hint", "access_token")];
        let basic = match self.authentication {
            ClientAuthentication::SecretBasic => Some(Basic {
                id: &self.client_id,
                secret: &self.client_secret,
            }),
            ClientAuthentication::SecretPost => {
                form.push(("client_id", &self.client_id));
                form.push(("client_secret", &self.client_secret));
                None
            }
        };
        let asked = async {
            // The semaphore is never closed, so acquiring fails never; were it to, the
            // verification would fail rather than go unbounded.
            let _turn = self.permits.acquire().await.map_err(|_| {
                TokenError::Unavailable("the introspection verifier is shut".into())
            })?;
            setup
                .http
                .post_form(&endpoint, &form, basic)
                .await
                .map_err(|e| {
                    TokenError::Unavailable(format!("the introspection endpoint {endpoint}: {e}"))
                })
        };
        let answer = tokio::time::timeout(self.timeout, asked)
            .await
            .map_err(|_| {
                TokenError::Unavailable(format!(
                    "the introspection endpoint {endpoint}: no answer within {:?} \
                     ({} introspections at once at most)",
                    self.timeout, self.max_concurrent
                ))
            })??;
        read_answer(answer, self.issuer.as_deref())
    }
}

impl TokenVerifier for IntrospectionVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> Verifying<'a> {
        Box::pin(self.check(token))
    }
}

/// The verdict of an introspection answer (RFC 7662 section 2.2), whose `iss`, when it
/// has one, must be `issuer` when that is given.
fn read_answer(answer: Value, issuer: Option<&str>) -> Result<VerifiedToken, TokenError> {
    let invalid = |why: String| Err(TokenError::Invalid(why));
    let Value::Object(mut claims) = answer else {
        return Err(TokenError::Unavailable(
            "the introspection answer is not a JSON object".into(),
        ));
    };
    match claims.remove("active") {
        Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => {
            return invalid("the authorization server says it is not active".into());
        }
        _ => {
            return Err(TokenError::Unavailable(
                "the introspection answer has no boolean active".into(),
            ));
        }
    }
    if let Some(kind) = claims.get("token_type")
        && !kind
            .as_str()
            .is_some_and(|k| k.eq_ignore_ascii_case("bearer"))
    {
        return invalid(format!("its token_type {kind} is not Bearer"));
    }
    if claims.contains_key("cnf") {
        return invalid(SENDER_CONSTRAINED.into());
    }
    if let (Some(issuer), Some(iss)) = (issuer, claims.get("iss"))
        && iss.as_str() != Some(issuer)
    {
        return invalid(format!("its iss {iss} is not the issuer {issuer:?}"));
    }
    Ok(VerifiedToken::from_claims(claims))
}

#[cfg(test)]
mod tests;
