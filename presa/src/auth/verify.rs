//! What a token verifier is: the seam between presa's authorization and whatever checks
//! an access token (a JWT's signature against the authorization server's keys, an
//! introspection call, an application's own lookup).

use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::time::SystemTime;

/// What a verifier learned from a valid access token. presa then checks its audience
/// and its expiry itself, whatever verifier made it, so every verifier is held to the
/// same rules.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct VerifiedToken {
    /// The subject (`sub`): who the token acts for.
    pub subject: Option<String>,
    /// The client the token was issued to (`client_id`, or `azp`).
    pub client_id: Option<String>,
    /// The scopes granted (`scope`, space-separated in the token).
    pub scopes: Vec<String>,
    /// The audiences the token was issued for (`aud`). presa refuses a token that does
    /// not name the server's canonical URI among them (RFC 8707).
    pub audience: Vec<String>,
    /// The issuer (`iss`).
    pub issuer: Option<String>,
    /// When the token expires (`exp`); a token already expired is refused.
    pub expires_at: Option<SystemTime>,
    /// Every claim, as the verifier read them (handlers may read them through
    /// [`Principal::claims`](super::Principal::claims)).
    pub claims: Map<String, Value>,
}

impl VerifiedToken {
    /// Reads the registered claims from a JSON claims object (a JWT's payload, an
    /// introspection answer): `sub`, `client_id` (or `azp`), `scope`, `aud` (a string or
    /// an array), `iss` and `exp` (a NumericDate; one too far off to be represented, or
    /// not a number, is left out).
    pub fn from_claims(claims: Map<String, Value>) -> VerifiedToken {
        let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
        let scopes = claims
            .get("scope")
            .and_then(Value::as_str)
            .map(|s| {
                s.split(' ')
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let audience = match claims.get("aud") {
            Some(Value::String(a)) => vec![a.clone()],
            Some(Value::Array(all)) => all
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        let expires_at = claims.get("exp").and_then(numeric_date);
        VerifiedToken {
            subject: text("sub"),
            client_id: text("client_id").or_else(|| text("azp")),
            scopes,
            audience,
            issuer: text("iss"),
            expires_at,
            claims,
        }
    }
}

/// A NumericDate (RFC 7519 section 2: seconds since the epoch, possibly with a fraction)
/// as a time: `None` for anything else, and for a date too far off to be represented
/// (which then bounds nothing: the verdict cache's own time does).
fn numeric_date(value: &Value) -> Option<SystemTime> {
    let seconds = value.as_f64().filter(|s| s.is_finite())?;
    if seconds <= 0.0 {
        return Some(SystemTime::UNIX_EPOCH);
    }
    let since = std::time::Duration::try_from_secs_f64(seconds).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(since)
}

/// Why a token was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenError {
    /// The token is not valid (malformed, badly signed, expired, not yet valid, revoked,
    /// for another issuer or audience): the client gets 401 `invalid_token`. The reason
    /// is logged at debug level and never sent; it must not contain the token.
    Invalid(String),
    /// The token could not be checked now (the authorization server's keys or its
    /// introspection endpoint did not answer): the client gets 503 and may retry with
    /// the same token. The reason is logged at warn level.
    Unavailable(String),
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenError::Invalid(why) => write!(f, "invalid token: {why}"),
            TokenError::Unavailable(why) => write!(f, "token not checkable now: {why}"),
        }
    }
}

impl std::error::Error for TokenError {}

/// The future a verifier returns.
pub type Verifying<'a> =
    Pin<Box<dyn Future<Output = Result<VerifiedToken, TokenError>> + Send + 'a>>;

/// Checks an access token. presa calls it for a token whose verdict it holds no longer
/// (its cache keeps a digest of the token, never the token), and checks the audience and
/// expiry of what comes back itself.
///
/// presa ships [`JwtVerifier`](super::JwtVerifier) and
/// [`IntrospectionVerifier`](super::IntrospectionVerifier) (feature `oauth`); implement
/// this for anything else, such as tokens an application issues itself.
pub trait TokenVerifier: Send + Sync + 'static {
    /// Checks `token`. The token must never be logged or sent anywhere but to the
    /// authorization server that issued it.
    fn verify<'a>(&'a self, token: &'a str) -> Verifying<'a>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn expiry_is_read_as_a_numeric_date() {
        let exp = |v: Value| {
            let mut claims = Map::new();
            claims.insert("exp".into(), v);
            VerifiedToken::from_claims(claims).expires_at
        };
        let at = |secs: u64| Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(exp(json!(1_700_000_000)), at(1_700_000_000));
        assert_eq!(
            exp(json!(1_700_000_000.5)),
            at(1_700_000_000).map(|t| t + Duration::from_millis(500))
        );
        assert_eq!(exp(json!(-5)), at(0), "before the epoch: long expired");
        assert_eq!(exp(json!(u64::MAX)), None, "past what a time can hold");
        assert_eq!(exp(json!(1e300)), None);
        assert_eq!(exp(json!("1700000000")), None);
    }
}
