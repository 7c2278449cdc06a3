//! The `Authorization` header as a resource server reads it (RFC 6750 section 2.1) and
//! the `WWW-Authenticate` challenges it answers with (RFC 6750 section 3, RFC 9728
//! section 5.1, and the 2026-07-28 revision's step-up rules: every scope the operation
//! needs, in one challenge).

use crate::error::{Error, code};

/// Why a request's credentials were refused before the request was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Denied {
    /// No `Authorization` header: 401, a challenge without an error code.
    Missing,
    /// An `Authorization` header that is not one `Bearer` token: 400, `invalid_request`.
    Malformed,
    /// A token that is not valid (or not for this server): 401, `invalid_token`.
    Invalid,
    /// A token that cannot be checked now: 503, retryable, no challenge.
    Unavailable,
}

impl Denied {
    /// The HTTP status.
    pub(crate) fn status(self) -> u16 {
        match self {
            Denied::Missing | Denied::Invalid => 401,
            Denied::Malformed => 400,
            Denied::Unavailable => 503,
        }
    }

    /// The JSON-RPC error sent in the body.
    pub(crate) fn error(self) -> Error {
        match self {
            Denied::Missing => Error::invalid_request("Unauthorized: a bearer token is required"),
            Denied::Malformed => Error::invalid_request(
                "Invalid Request: the Authorization header must be one bearer token",
            ),
            Denied::Invalid => {
                Error::invalid_request("Unauthorized: the access token is not valid")
            }
            Denied::Unavailable => {
                Error::unavailable("The access token cannot be checked now; try again later")
                    .with_data(serde_json::json!({ "retryable": true }))
            }
        }
    }
}

/// The credentials of an `Authorization: Bearer <credentials>` value: the scheme in any
/// case, one or more spaces, then everything after them (not empty). Whether they are a
/// token is [`b64token`]'s to say.
pub(crate) fn bearer_credentials(value: &[u8]) -> Option<&[u8]> {
    let scheme = value.get(..6)?;
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let rest = value.get(6..)?;
    let credentials = rest.trim_ascii_start();
    (credentials.len() < rest.len() && !credentials.is_empty()).then_some(credentials)
}

/// `credentials` as a token, when they are an RFC 6750 `b64token`: letters, digits,
/// `-._~+/`, then any `=`.
pub(crate) fn b64token(credentials: &[u8]) -> Option<&str> {
    let body = credentials
        .iter()
        .position(|&b| b == b'=')
        .unwrap_or(credentials.len());
    let valid = body > 0
        && credentials[..body]
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
        && credentials[body..].iter().all(|&b| b == b'=');
    valid
        .then(|| std::str::from_utf8(credentials).ok())
        .flatten()
}

/// The token of an `Authorization: Bearer <token>` value.
#[cfg(test)]
fn bearer_token(value: &[u8]) -> Option<&str> {
    bearer_credentials(value).and_then(b64token)
}

/// A quoted-string parameter value (RFC 9110 section 5.6.4).
fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The challenge of a refusal before the request was read; `None` for one that has none.
pub(crate) fn header(denied: Denied, metadata_url: &str, required: &[String]) -> Option<String> {
    let mut parts = Vec::with_capacity(4);
    match denied {
        Denied::Missing => {}
        Denied::Malformed => parts.push("error=\"invalid_request\"".to_owned()),
        Denied::Invalid => {
            parts.push("error=\"invalid_token\"".to_owned());
            parts.push("error_description=\"The access token is not valid\"".to_owned());
        }
        Denied::Unavailable => return None,
    }
    parts.push(format!("resource_metadata={}", quoted(metadata_url)));
    if denied != Denied::Malformed && !required.is_empty() {
        parts.push(format!("scope={}", quoted(&required.join(" "))));
    }
    Some(format!("Bearer {}", parts.join(", ")))
}

/// The refusal of an operation whose scopes the token does not cover: 403 with
/// `insufficient_scope` and every scope the operation needs.
pub(crate) fn insufficient_scope(metadata_url: &str, scopes: &[&str]) -> Error {
    let listed = scopes.join(" ");
    let challenge = format!(
        "Bearer error=\"insufficient_scope\", scope={}, resource_metadata={}",
        quoted(&listed),
        quoted(metadata_url)
    );
    Error::new(
        code::INVALID_REQUEST,
        format!("Forbidden: this operation needs the scopes {listed}"),
    )
    .with_data(serde_json::json!({ "requiredScopes": scopes }))
    .with_challenge(403, challenge)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_read_as_rfc_6750_writes_them() {
        assert_eq!(
            bearer_token(b"Bearer abc.def-_~+/=="),
            Some("abc.def-_~+/==")
        );
        assert_eq!(bearer_token(b"bearer   t"), Some("t"));
        for bad in [
            &b"Bearer"[..],
            b"Bearer ",
            b"Bearerabc",
            b"Basic abc",
            b"Bearer a b",
            b"Bearer =abc",
            b"Bearer a=b",
            b"Bearer a\"b",
            b"Bearer \xff",
        ] {
            assert_eq!(
                bearer_token(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn challenges_carry_what_rfc_6750_and_9728_say() {
        let url = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
        let required = vec!["notes:read".to_owned()];
        assert_eq!(
            header(Denied::Missing, url, &required).as_deref(),
            Some(format!("Bearer resource_metadata=\"{url}\", scope=\"notes:read\"").as_str())
        );
        assert_eq!(
            header(Denied::Missing, url, &[]).as_deref(),
            Some(format!("Bearer resource_metadata=\"{url}\"").as_str())
        );
        assert!(
            header(Denied::Invalid, url, &required)
                .is_some_and(|h| h.starts_with("Bearer error=\"invalid_token\""))
        );
        assert!(
            header(Denied::Malformed, url, &required)
                .is_some_and(|h| h.contains("invalid_request") && !h.contains("scope="))
        );
        assert_eq!(header(Denied::Unavailable, url, &required), None);
        let refused = insufficient_scope(url, &["a", "b"]);
        assert_eq!(refused.http_status(), 403);
        assert_eq!(
            refused.challenge(),
            Some(format!("Bearer error=\"insufficient_scope\", scope=\"a b\", resource_metadata=\"{url}\"").as_str())
        );
        assert_eq!(quoted("a\"b\\c"), "\"a\\\"b\\\\c\"");
    }
}
