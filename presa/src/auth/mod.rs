//! Authorization: presa as an OAuth 2.1 resource server, as the 2026-07-28 revision's
//! `basic/authorization/` describes it for Streamable HTTP (the same for clients of the
//! earlier revisions, whose HTTP authorization has the same shape).
//!
//! - [`Authorization`] is what a server is configured with: a [`TokenVerifier`], the
//!   authorization servers its protected resource metadata names, the scopes every
//!   request needs, and how scopes imply one another.
//! - [`Principal`] is who a request acts for: from a verified token over HTTP, from the
//!   server's principal function, or set for stdio (where credentials come from the
//!   environment, not from OAuth).
//! - The guard (built with the server) checks a request's token (`Authorization:
//!   Bearer`), caching verdicts by a digest of the token, and the scopes an operation
//!   needs; its refusals carry the `WWW-Authenticate` challenge the transport sends.
//!
//! A token is never logged, never stored (only its SHA-256 digest is), and never sent
//! anywhere: presa does not pass a client's token on.

mod cache;
mod challenge;
#[cfg(feature = "oauth")]
mod fetch;
#[cfg(feature = "oauth")]
mod introspect;
#[cfg(feature = "oauth")]
mod jwt;
mod scopes;
mod verify;

pub(crate) use challenge::Denied;
#[cfg(feature = "oauth")]
pub use introspect::{ClientAuthentication, IntrospectionVerifier};
#[cfg(feature = "oauth")]
pub use jwt::JwtVerifier;
pub(crate) use scopes::ScopeRules;
pub use scopes::is_scope_token;
pub use verify::{TokenError, TokenVerifier, VerifiedToken, Verifying};

use crate::error::BuildError;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// Who a request acts for: the subject of a verified access token (or its client, for a
/// token without a subject), with the scopes the token grants and its claims.
///
/// Request state is bound to it, tasks are scoped to it, and subscription streams are
/// counted against it. Handlers read it with [`RequestContext::principal`](crate::RequestContext::principal)
/// or take it as an argument (`principal: Principal`, or `Option<Principal>`).
///
/// It serializes whole (a task's stored work keeps it, so a run on another replica acts
/// for the same caller).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Principal {
    id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    scopes: Vec<String>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    claims: Map<String, Value>,
}

impl Principal {
    /// A principal named `id`, with no scopes and no claims: what a server's principal
    /// function or a stdio server's configured principal makes.
    pub fn new(id: impl Into<String>) -> Principal {
        Principal {
            id: id.into(),
            client_id: None,
            scopes: Vec::new(),
            claims: Map::new(),
        }
    }

    /// The same principal, granted `scopes`.
    pub fn with_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The same principal, acting through the client `client_id`.
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// The same principal, with `claims`.
    pub fn with_claims(mut self, claims: Map<String, Value>) -> Self {
        self.claims = claims;
        self
    }

    /// From a verified token: its subject, or, for a token without one (a client acting
    /// for itself), `client:` and its client id. `None` for a token that names neither.
    pub(crate) fn from_token(token: VerifiedToken) -> Option<Principal> {
        let id = match (&token.subject, &token.client_id) {
            (Some(subject), _) if !subject.is_empty() => subject.clone(),
            (_, Some(client)) if !client.is_empty() => format!("client:{client}"),
            _ => return None,
        };
        Some(Principal {
            id,
            client_id: token.client_id,
            scopes: token.scopes,
            claims: token.claims,
        })
    }

    /// Who this is: the token's subject, `client:<id>` for a client acting for itself,
    /// or what the principal function returned.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The OAuth client the token was issued to, when known.
    pub fn client_id(&self) -> Option<&str> {
        self.client_id.as_deref()
    }

    /// The scopes granted, as the token lists them (implied scopes are not added).
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// Every claim of the token, as the verifier read it (empty for a principal not made
    /// from a token).
    pub fn claims(&self) -> &Map<String, Value> {
        &self.claims
    }

    /// One claim of the token.
    pub fn claim(&self, name: &str) -> Option<&Value> {
        self.claims.get(name)
    }
}

impl From<String> for Principal {
    fn from(id: String) -> Principal {
        Principal::new(id)
    }
}

impl From<&str> for Principal {
    fn from(id: &str) -> Principal {
        Principal::new(id)
    }
}

/// How long a verdict on a token is kept, unless the token expires first.
const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(60);

/// How many token verdicts are kept.
const DEFAULT_CACHE_ENTRIES: usize = 10_000;

/// A server's authorization: build one with a verifier and give it to
/// [`ServerBuilder::authorization`](crate::ServerBuilder::authorization), together with
/// the server's [`canonical URI`](crate::ServerBuilder::canonical_uri), which tokens must
/// name as their audience.
///
/// ```no_run
/// # #[cfg(feature = "oauth")] {
/// use presa::auth::{Authorization, JwtVerifier};
/// let auth = Authorization::new(JwtVerifier::new("https://auth.example.com"))
///     .authorization_server("https://auth.example.com")
///     .required_scopes(["notes:read"])
///     .scope_implies("notes:admin", ["notes:write", "notes:read"]);
/// # }
/// ```
#[derive(Clone)]
pub struct Authorization {
    verifier: Arc<dyn TokenVerifier>,
    authorization_servers: Vec<String>,
    required_scopes: Vec<String>,
    scopes_supported: Option<Vec<String>>,
    implies: Vec<(String, Vec<String>)>,
    resource_name: Option<String>,
    resource_documentation: Option<String>,
    cache_ttl: Duration,
    cache_entries: usize,
}

impl std::fmt::Debug for Authorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorization")
            .field("authorization_servers", &self.authorization_servers)
            .field("required_scopes", &self.required_scopes)
            .field("scopes_supported", &self.scopes_supported)
            .finish_non_exhaustive()
    }
}

impl Authorization {
    /// Authorization with `verifier` checking the tokens.
    pub fn new(verifier: impl TokenVerifier) -> Authorization {
        Authorization::with_verifier(Arc::new(verifier))
    }

    /// [`Authorization::new`] with a shared verifier.
    pub fn with_verifier(verifier: Arc<dyn TokenVerifier>) -> Authorization {
        Authorization {
            verifier,
            authorization_servers: Vec::new(),
            required_scopes: Vec::new(),
            scopes_supported: None,
            implies: Vec::new(),
            resource_name: None,
            resource_documentation: None,
            cache_ttl: DEFAULT_CACHE_TTL,
            cache_entries: DEFAULT_CACHE_ENTRIES,
        }
    }

    /// Names an authorization server (its issuer URL) in the protected resource metadata,
    /// where clients find where to get a token. At least one is required.
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// Scopes every request needs, whatever it asks for (default none).
    pub fn required_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// `scopes_supported` of the protected resource metadata: the scopes a client asks
    /// for when a challenge names none (default: the required scopes; the document
    /// leaves it out when there are none). The specification means it as the minimal
    /// set for basic use: further scopes come by step-up, when an operation needs them.
    pub fn scopes_supported(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes_supported = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// Declares that a token granted `broad` may do what any of `narrower` allows (and,
    /// transitively, what they imply): a tool needing `notes:read` then accepts a token
    /// with only `notes:admin`. Challenges still name the scopes an operation needs.
    pub fn scope_implies(
        mut self,
        broad: impl Into<String>,
        narrower: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.implies
            .push((broad.into(), narrower.into_iter().map(Into::into).collect()));
        self
    }

    /// `resource_name` of the protected resource metadata: a name for people.
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// `resource_documentation` of the protected resource metadata: a URL for people.
    pub fn resource_documentation(mut self, url: impl Into<String>) -> Self {
        self.resource_documentation = Some(url.into());
        self
    }

    /// How long a verdict on a token is kept (default 60 s), unless the token expires
    /// first. A token revoked at its authorization server may be accepted for this long.
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache_ttl = ttl;
        self
    }

    /// How many token verdicts are kept (default 10,000; at least 1).
    pub fn cache_entries(mut self, n: usize) -> Self {
        self.cache_entries = n.max(1);
        self
    }

    /// The guard for a server whose canonical URI is `canonical`: the configuration
    /// checked, the metadata document written, the scope rules closed.
    pub(crate) fn guard(self, canonical: Option<&str>) -> Result<Guard, BuildError> {
        let canonical = canonical.ok_or_else(|| {
            BuildError::new(
                "authorization needs the server's canonical URI (ServerBuilder::canonical_uri): \
                 tokens must name it as their audience",
            )
        })?;
        if self.authorization_servers.is_empty() {
            return Err(BuildError::new(
                "authorization needs at least one authorization server \
                 (Authorization::authorization_server), named in the protected resource metadata",
            ));
        }
        for issuer in &self.authorization_servers {
            if !is_web_url(issuer) {
                return Err(BuildError::new(format!(
                    "authorization server {issuer:?} is not an http or https URL"
                )));
            }
        }
        let declared = self
            .required_scopes
            .iter()
            .chain(self.scopes_supported.iter().flatten())
            .chain(
                self.implies
                    .iter()
                    .flat_map(|(b, n)| std::iter::once(b).chain(n)),
            );
        for scope in declared {
            if !is_scope_token(scope) {
                return Err(BuildError::new(format!(
                    "{scope:?} is not a scope: one or more printable ASCII characters, no space, `\"` or `\\`"
                )));
            }
        }
        let resource = Resource::parse(canonical)?;
        let supported = self
            .scopes_supported
            .clone()
            .unwrap_or_else(|| self.required_scopes.clone());
        let mut metadata = Map::new();
        metadata.insert("resource".into(), Value::from(canonical));
        metadata.insert(
            "authorization_servers".into(),
            Value::from(self.authorization_servers.clone()),
        );
        if !supported.is_empty() {
            metadata.insert("scopes_supported".into(), Value::from(supported));
        }
        metadata.insert(
            "bearer_methods_supported".into(),
            serde_json::json!(["header"]),
        );
        if let Some(name) = &self.resource_name {
            metadata.insert("resource_name".into(), Value::from(name.as_str()));
        }
        if let Some(url) = &self.resource_documentation {
            metadata.insert("resource_documentation".into(), Value::from(url.as_str()));
        }
        Ok(Guard {
            cache: cache::TokenCache::new(self.cache_entries, self.cache_ttl),
            verifier: self.verifier,
            rules: ScopeRules::new(&self.implies),
            required: self.required_scopes,
            metadata_url: resource.metadata_url(),
            metadata_paths: resource.metadata_paths(),
            metadata: Value::Object(metadata).to_string(),
            resource,
        })
    }
}

/// Whether `url` is an absolute `http` or `https` URL with a host.
fn is_web_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    rest.is_some_and(|r| !r.is_empty() && !r.starts_with('/'))
}

/// The server's canonical URI, as tokens name it in `aud` (RFC 8707): compared with the
/// scheme and host in lowercase, without a fragment, and without one trailing slash.
#[derive(Debug)]
struct Resource {
    /// `scheme://authority`, the scheme and host in lowercase.
    origin: String,
    /// The path, without a trailing slash (empty for the root).
    path: String,
}

impl Resource {
    fn parse(uri: &str) -> Result<Resource, BuildError> {
        let bad = || {
            BuildError::new(format!(
                "the canonical URI {uri:?} is not an absolute http or https URI without a fragment"
            ))
        };
        let (scheme, rest) = uri.split_once("://").ok_or_else(bad)?;
        let scheme = scheme.to_ascii_lowercase();
        if !(scheme == "https" || scheme == "http") || rest.contains('#') {
            return Err(bad());
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains('@') || path.contains('?') {
            return Err(bad());
        }
        Ok(Resource {
            origin: format!("{scheme}://{}", authority.to_ascii_lowercase()),
            path: path.strip_suffix('/').unwrap_or(path).to_owned(),
        })
    }

    /// Whether an audience names this resource.
    fn named_by(&self, audience: &str) -> bool {
        let Some(other) = Resource::parse(audience).ok() else {
            return false;
        };
        other.origin == self.origin && other.path == self.path
    }

    /// The protected resource metadata's URL: the well-known path with the resource's
    /// path after it (RFC 9728 section 3.1).
    fn metadata_url(&self) -> String {
        format!(
            "{}/.well-known/oauth-protected-resource{}",
            self.origin, self.path
        )
    }

    /// The paths the metadata is served at: with the resource's path after the
    /// well-known one, and the well-known one alone (clients try both).
    fn metadata_paths(&self) -> Vec<String> {
        let root = "/.well-known/oauth-protected-resource".to_owned();
        if self.path.is_empty() {
            vec![root]
        } else {
            vec![format!("{root}{}", self.path), root]
        }
    }
}

/// A server's authorization at run time: the verifier behind its cache, the scope rules,
/// the metadata document and the challenges.
pub(crate) struct Guard {
    verifier: Arc<dyn TokenVerifier>,
    cache: cache::TokenCache,
    rules: ScopeRules,
    required: Vec<String>,
    resource: Resource,
    metadata_url: String,
    metadata_paths: Vec<String>,
    metadata: String,
}

impl Guard {
    /// The principal of a request's `Authorization` header values, or why not.
    pub(crate) async fn authenticate<'a>(
        &self,
        mut values: impl Iterator<Item = &'a [u8]>,
    ) -> Result<Arc<Principal>, Denied> {
        let Some(value) = values.next() else {
            return Err(Denied::Missing);
        };
        if values.next().is_some() {
            return Err(Denied::Malformed);
        }
        let credentials = challenge::bearer_credentials(value).ok_or(Denied::Malformed)?;
        // Only credentials that passed the token syntax below ever get a verdict kept, so
        // a kept one needs no second look at their characters.
        if let Some(kept) = self.cache.get(credentials) {
            return kept;
        }
        let token = challenge::b64token(credentials).ok_or(Denied::Malformed)?;
        let verdict = self.check(token).await;
        self.cache.put(credentials, &verdict);
        verdict.map(|v| v.principal)
    }

    /// Verifies a token the cache has no verdict on, then holds it to presa's own rules:
    /// not expired, for this resource, naming someone.
    async fn check(&self, token: &str) -> Result<cache::Verdict, Denied> {
        let verified = match self.verifier.verify(token).await {
            Ok(verified) => verified,
            Err(TokenError::Invalid(why)) => {
                tracing::debug!("access token refused: {why}");
                return Err(Denied::Invalid);
            }
            Err(TokenError::Unavailable(why)) => {
                tracing::warn!("access token not checkable now: {why}");
                return Err(Denied::Unavailable);
            }
        };
        let now = std::time::SystemTime::now();
        if verified.expires_at.is_some_and(|exp| exp <= now) {
            tracing::debug!("access token refused: expired");
            return Err(Denied::Invalid);
        }
        if !verified.audience.iter().any(|a| self.resource.named_by(a)) {
            tracing::debug!(
                "access token refused: its audience {:?} does not name this resource",
                verified.audience
            );
            return Err(Denied::Invalid);
        }
        let expires_at = verified.expires_at;
        let Some(principal) = Principal::from_token(verified) else {
            tracing::debug!("access token refused: it names no subject and no client");
            return Err(Denied::Invalid);
        };
        Ok(cache::Verdict {
            principal: Arc::new(principal),
            expires_at,
        })
    }

    /// The scopes an operation needs that `principal` lacks, after the server-wide ones:
    /// `Ok` when none, else the refusal naming every scope the operation needs.
    pub(crate) fn authorize(
        &self,
        principal: Option<&Principal>,
        needed: &[String],
    ) -> Result<(), crate::error::Error> {
        let all = || self.required.iter().chain(needed);
        let granted = principal.map_or(&[][..], Principal::scopes);
        if all().all(|scope| self.rules.covers(granted, scope)) {
            return Ok(());
        }
        let mut scopes: Vec<&str> = all().map(String::as_str).collect();
        scopes.dedup();
        Err(challenge::insufficient_scope(&self.metadata_url, &scopes))
    }

    /// The scopes every request needs.
    pub(crate) fn required_scopes(&self) -> &[String] {
        &self.required
    }

    /// The challenge for a refusal before the request was read.
    pub(crate) fn challenge(&self, denied: Denied) -> Option<String> {
        challenge::header(denied, &self.metadata_url, &self.required)
    }

    /// The protected resource metadata document (JSON).
    pub(crate) fn metadata(&self) -> &str {
        &self.metadata
    }

    /// The paths the metadata document is served at.
    pub(crate) fn metadata_paths(&self) -> &[String] {
        &self.metadata_paths
    }
}

/// The refusal of an operation whose scopes the request's principal lacks, on a server
/// without authorization (its principal function or stdio principal grants scopes): 403,
/// naming them, without a challenge (there is no authorization server to send it to).
pub(crate) fn unauthorized_without_challenge(needed: &[String]) -> crate::error::Error {
    crate::error::Error::invalid_request(format!(
        "Forbidden: this operation needs the scopes {}",
        needed.join(" ")
    ))
    .with_data(serde_json::json!({ "requiredScopes": needed }))
    .with_status(403)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canonical_uri_is_compared_as_rfc_8707_says() {
        let r = Resource::parse("https://MCP.example.com/mcp").expect("parses");
        assert!(r.named_by("https://mcp.example.com/mcp"));
        assert!(r.named_by("HTTPS://mcp.example.com/mcp/"));
        assert!(!r.named_by("https://mcp.example.com/mcp2"));
        assert!(!r.named_by("https://mcp.example.com"));
        assert!(!r.named_by("https://other.example.com/mcp"));
        assert!(!r.named_by("mcp"));
        assert_eq!(
            r.metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            r.metadata_paths(),
            [
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource"
            ]
        );
        for bad in [
            "ftp://x/mcp",
            "https://x/mcp#f",
            "https:///mcp",
            "https://u@x/mcp",
            "x",
        ] {
            assert!(Resource::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_principal_is_the_subject_or_the_client() {
        let mut t = VerifiedToken::default();
        assert!(Principal::from_token(t.clone()).is_none());
        t.client_id = Some("app".into());
        assert_eq!(
            Principal::from_token(t.clone()).map(|p| p.id),
            Some("client:app".into())
        );
        t.subject = Some("ada".into());
        assert_eq!(Principal::from_token(t).map(|p| p.id), Some("ada".into()));
    }
}
