//! The fixture's `--auth` mode: an OAuth 2.1 resource server in front of the same items,
//! for clients that go through the authorization flow (the interop lane's OAuth clients).
//!
//! Every request needs [`READ_SCOPE`] (the protected resource metadata advertises it, so a
//! client asks for it first); [`test_scoped_write`] needs [`WRITE_SCOPE`] too, so calling
//! it with a first token is answered 403 `insufficient_scope` and makes the client step up.

use presa::auth::{Authorization, JwtVerifier, TokenError};
use presa::{Principal, ServerBuilder};
use std::sync::Arc;

/// The scope every request needs.
pub const READ_SCOPE: &str = "mcp:read";
/// The scope [`test_scoped_write`] needs besides [`READ_SCOPE`].
pub const WRITE_SCOPE: &str = "mcp:write";

/// Where the fixture's tokens come from and whom they are for.
#[derive(Clone, Debug)]
pub struct AuthSettings {
    /// The authorization server's issuer URL (tokens' `iss`; its metadata names the JWKS).
    pub issuer: String,
    /// The fixture's canonical URI (tokens' `aud`), such as `http://127.0.0.1:3000/mcp`.
    pub canonical_uri: String,
}

impl AuthSettings {
    /// The verifier of the fixture's tokens, with the authorization server's metadata
    /// and keys fetched: an unreachable or misnamed authorization server is reported at
    /// startup, and the first request finds the keys in hand.
    pub async fn warmed_verifier(&self) -> Result<Arc<JwtVerifier>, TokenError> {
        let verifier = Arc::new(JwtVerifier::new(&self.issuer));
        verifier.warm().await?;
        Ok(verifier)
    }
}

/// Makes `builder` a resource server for `settings`, checking tokens with `verifier`,
/// with the tools of this mode.
pub(crate) fn register(
    builder: ServerBuilder,
    settings: &AuthSettings,
    verifier: Arc<JwtVerifier>,
) -> ServerBuilder {
    let authorization = Authorization::with_verifier(verifier)
        .authorization_server(&settings.issuer)
        .required_scopes([READ_SCOPE])
        .resource_name("presa conformance fixture");
    builder
        .canonical_uri(&settings.canonical_uri)
        .authorization(authorization)
        .add::<test_whoami>()
        .add::<test_scoped_write>()
}

/// Says who the token was issued to, and which scopes it grants.
#[presa::tool]
async fn test_whoami(principal: Principal) -> String {
    format!("{} [{}]", principal.id(), principal.scopes().join(" "))
}

/// Needs the `mcp:write` scope: a token without it is answered 403 `insufficient_scope`.
#[presa::tool(scopes("mcp:write"))]
async fn test_scoped_write(principal: Principal) -> String {
    format!("written by {}", principal.id())
}
