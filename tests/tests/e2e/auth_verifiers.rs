//! presa's own token verifiers over Streamable HTTP, against a real authorization server
//! (`presa_tests::authz::AuthServer`, one per test; a machine without npm skips, saying
//! so): `JwtVerifier` with the server's JWKS, found through its metadata, and
//! `IntrospectionVerifier` with its RFC 7662 endpoint. Each refusal is checked to the
//! byte: status, `WWW-Authenticate` and body; the server's request counts show what was
//! fetched or asked, and when the verdict cache answered instead.

use crate::auth_http::{Lines, tools};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use presa::auth::{Authorization, IntrospectionVerifier, JwtVerifier};
use presa::{Implementation, Server};
use presa_tests::authz::{AuthServer, Counts, unix_now};
use presa_tests::http::{Harness, Reply};
use presa_tests::request;
use serde_json::{Value, json};
use std::time::Duration;

/// The canonical URI of the servers here: tokens name it as their audience.
const RESOURCE: &str = "https://mcp.example.test/mcp";
const METADATA_URL: &str = "https://mcp.example.test/.well-known/oauth-protected-resource/mcp";

/// The challenge of a request without a token.
fn missing_challenge() -> String {
    format!("Bearer resource_metadata=\"{METADATA_URL}\"")
}
const MISSING_BODY: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Unauthorized: a bearer token is required"}}"#;

/// The challenge of a malformed `Authorization` header.
fn malformed_challenge() -> String {
    format!("Bearer error=\"invalid_request\", resource_metadata=\"{METADATA_URL}\"")
}
const MALFORMED_BODY: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: the Authorization header must be one bearer token"}}"#;

/// The challenge of a token that is not valid.
fn invalid_challenge() -> String {
    format!(
        "Bearer error=\"invalid_token\", error_description=\"The access token is not valid\", \
         resource_metadata=\"{METADATA_URL}\""
    )
}
const INVALID_BODY: &str = r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Unauthorized: the access token is not valid"}}"#;

/// The answer to a token that cannot be checked now: no challenge.
const UNAVAILABLE_BODY: &str = r#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"The access token cannot be checked now; try again later","data":{"retryable":true}}}"#;

/// How long a request that cannot be checked may take to be answered 503: the
/// authorization server answers 503 at once, so this only keeps a hang from passing.
const NO_HANG: Duration = Duration::from_secs(15);

/// The authorization server, or `None` (said on stderr) where npm is missing.
async fn start(test: &str) -> Option<AuthServer> {
    AuthServer::start_or_skip(test).await
}

/// A server whose tools are `whoami`, `write` (`notes:write`) and `both` (`notes:read`
/// and `notes:write`), behind `auth` for `issuer`, with `notes:admin` implying both
/// scopes.
async fn serve(auth: Authorization, issuer: &str) -> Harness {
    let server = tools(Server::builder(Implementation::new("auth-verifiers", "1")))
        .canonical_uri(RESOURCE)
        .authorization(
            auth.authorization_server(issuer)
                .scope_implies("notes:admin", ["notes:write", "notes:read"]),
        )
        .build()
        .expect("builds");
    Harness::start(server).await
}

/// A server checking JWTs issued by `server`, whose JWKS is found through its metadata.
async fn jwt_server(
    server: &AuthServer,
    verifier: impl FnOnce(JwtVerifier) -> JwtVerifier,
) -> Harness {
    let verifier = verifier(JwtVerifier::new(server.issuer()));
    serve(Authorization::new(verifier), server.issuer()).await
}

/// A server asking `server`'s introspection endpoint (found through its metadata).
async fn introspecting_server(
    server: &AuthServer,
    auth: impl FnOnce(Authorization) -> Authorization,
) -> Harness {
    let client = server.introspection_client();
    let verifier = IntrospectionVerifier::new(server.issuer(), &client.id, &client.secret);
    serve(auth(Authorization::new(verifier)), server.issuer()).await
}

/// Calls tool `name` with `Authorization: Bearer <token>`.
async fn call_as(h: &Harness, token: &str, id: i64, name: &str) -> Reply {
    let auth = format!("Bearer {token}");
    let message = request(id, "tools/call", json!({"name": name, "arguments": {}}));
    h.post(&message, &[("Authorization", auth.as_str())]).await
}

/// Asserts a refusal to the byte: status, challenge (`None`: no header) and body.
#[track_caller]
fn assert_refused(r: &Reply, status: u16, challenge: Option<&str>, body: &str) {
    assert_eq!(r.status, status, "{}", r.body);
    assert_eq!(r.header("www-authenticate"), challenge, "{}", r.body);
    assert_eq!(r.body, body);
}

/// Asserts a 401 `invalid_token` refusal.
#[track_caller]
fn assert_invalid(r: &Reply) {
    assert_refused(r, 401, Some(&invalid_challenge()), INVALID_BODY);
}

/// Asserts a 503 with `Retry-After` and no challenge.
#[track_caller]
fn assert_unavailable(r: &Reply) {
    assert_refused(r, 503, None, UNAVAILABLE_BODY);
    assert_eq!(r.header("retry-after"), Some("5"));
}

/// Asserts that `whoami` answered, naming `who`.
#[track_caller]
fn assert_served(r: &Reply, who: &str) {
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.response()["result"]["content"][0]["text"],
        who,
        "{}",
        r.body
    );
}

/// `value` as JSON, base64url without padding (a JWT part).
fn part(value: &Value) -> String {
    URL_SAFE_NO_PAD.encode(value.to_string())
}

/// Claims valid for this resource, over the server's defaults.
fn valid_claims() -> Value {
    json!({"aud": RESOURCE, "scope": "notes:read"})
}

/// `token` with the first character of its signature changed.
fn tampered(token: &str) -> String {
    let (signed, signature) = token.rsplit_once('.').expect("a JWS");
    let mut chars: Vec<char> = signature.chars().collect();
    chars[0] = if chars[0] == 'A' { 'B' } else { 'A' };
    format!("{signed}.{}", chars.into_iter().collect::<String>())
}

/// An HS256 JWT over `claims` whose HMAC key is `secret`.
fn hs256(kid: &str, claims: &Value, secret: &[u8]) -> String {
    let signed = format!(
        "{}.{}",
        part(&json!({"alg": "HS256", "typ": "at+jwt", "kid": kid})),
        part(claims)
    );
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret).expect("any key length");
    mac.update(signed.as_bytes());
    format!(
        "{signed}.{}",
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    )
}

#[tokio::test]
async fn jwt_refusals_carry_their_exact_challenge_and_body() {
    let Some(server) = start("jwt_refusals_carry_their_exact_challenge_and_body").await else {
        return;
    };
    let h = jwt_server(&server, |v| v).await;
    let message = request(1, "tools/call", json!({"name": "whoami", "arguments": {}}));
    // No token: 401 naming where the metadata is.
    let r = h.post(&message, &[]).await;
    assert_refused(&r, 401, Some(&missing_challenge()), MISSING_BODY);
    // A malformed header: 400.
    for bad in ["Bearer", "Bearer a b", "Basic YWxpY2U6cHc=", "Bearer \"t\""] {
        let r = h.post(&message, &[("Authorization", bad)]).await;
        assert_refused(&r, 400, Some(&malformed_challenge()), MALFORMED_BODY);
    }
    let t = unix_now();
    let mut refused = vec![
        (
            "expired",
            server.mint(json!({"aud": RESOURCE, "exp": t - 120})).await,
        ),
        (
            "not yet valid",
            server.mint(json!({"aud": RESOURCE, "nbf": t + 600})).await,
        ),
        (
            "for another resource",
            server
                .mint(json!({"aud": "https://other.example.test/mcp"}))
                .await,
        ),
        ("without an audience", server.mint(json!({})).await),
        (
            "from another issuer",
            server
                .mint(json!({"aud": RESOURCE, "iss": "https://evil.example.test"}))
                .await,
        ),
    ];
    // alg none, with the claims of a valid token.
    let claims = json!({
        "iss": server.issuer(), "sub": "mallory", "aud": RESOURCE, "scope": "notes:admin",
        "iat": t, "exp": t + 600,
    });
    refused.push((
        "alg none",
        format!(
            "{}.{}.",
            part(&json!({"alg": "none", "typ": "at+jwt"})),
            part(&claims)
        ),
    ));
    // HS256 keyed with the RSA key's public parts, as served in the JWKS: its modulus,
    // and its JWK's JSON.
    let jwks = reqwest::get(server.jwks_uri())
        .await
        .expect("the JWKS answers")
        .text()
        .await
        .expect("the JWKS reads");
    let jwks: Value = serde_json::from_str(&jwks).expect("a JWKS");
    let kid = server.kids().rs256.clone();
    let jwk = jwks["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .find(|k| k["kid"] == kid.as_str())
        .expect("the RS256 key")
        .clone();
    let modulus = URL_SAFE_NO_PAD
        .decode(jwk["n"].as_str().expect("n"))
        .expect("base64url");
    refused.push((
        "HS256 keyed with the modulus",
        hs256(&kid, &claims, &modulus),
    ));
    refused.push((
        "HS256 keyed with the JWK",
        hs256(&kid, &claims, jwk.to_string().as_bytes()),
    ));
    refused.push((
        "a tampered signature",
        tampered(&server.mint(valid_claims()).await),
    ));
    // Claims changed under a valid signature.
    let genuine = server.mint(valid_claims()).await;
    let mut parts = genuine.split('.');
    let (header, _, signature) = (parts.next(), parts.next(), parts.next());
    refused.push((
        "claims swapped under a signature",
        format!(
            "{}.{}.{}",
            header.expect("a header"),
            part(&claims),
            signature.expect("a signature")
        ),
    ));
    for (id, (what, token)) in (2..).zip(&refused) {
        let r = call_as(&h, token, id, "whoami").await;
        assert_eq!(r.status, 401, "{what}: {}", r.body);
        assert_invalid(&r);
    }
    // And the same verifier serves a valid token.
    let r = call_as(&h, &server.mint(valid_claims()).await, 99, "whoami").await;
    assert_served(&r, "johndoe");
}

#[tokio::test]
async fn rs256_es256_and_eddsa_tokens_are_all_accepted() {
    let Some(server) = start("rs256_es256_and_eddsa_tokens_are_all_accepted").await else {
        return;
    };
    let h = jwt_server(&server, |v| v.require_at_jwt_type(true)).await;
    for (id, alg) in (1..).zip(["RS256", "ES256", "EdDSA"]) {
        let token = server
            .mint(json!({"alg": alg, "aud": RESOURCE, "sub": format!("user-{alg}")}))
            .await;
        assert_served(
            &call_as(&h, &token, id, "whoami").await,
            &format!("user-{alg}"),
        );
    }
    // A token from the token endpoint, by client_credentials for this resource.
    let token = server
        .token_via_client_credentials(RESOURCE, "notes:write")
        .await;
    let r = call_as(&h, &token, 4, "write").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        server.counts().await,
        Counts {
            jwks: 1,
            introspection: 0,
            metadata: 1
        },
        "the metadata and the JWKS were read once, and kept"
    );
}

#[tokio::test]
async fn an_unknown_kid_fetches_the_jwks_again_then_is_refused() {
    let Some(server) = start("an_unknown_kid_fetches_the_jwks_again_then_is_refused").await else {
        return;
    };
    // No interval between fetches, so that each unknown kid shows its own fetch (the
    // unit tests hold the interval itself).
    let h = jwt_server(&server, |v| v.refetch_interval(Duration::ZERO)).await;
    let r = call_as(&h, &server.mint(valid_claims()).await, 1, "whoami").await;
    assert_served(&r, "johndoe");
    assert_eq!(server.counts().await.jwks, 1);
    // A key rotated in after the JWKS was read: fetched again, and found.
    let kid = server.rotate().await;
    let rotated = server
        .mint(json!({"kid": kid, "aud": RESOURCE, "sub": "rotated"}))
        .await;
    assert_served(&call_as(&h, &rotated, 2, "whoami").await, "rotated");
    assert_eq!(server.counts().await.jwks, 2);
    // A key the JWKS never has: fetched again, not found, refused.
    let unknown = server
        .mint(json!({"unknown_kid": true, "aud": RESOURCE}))
        .await;
    assert_invalid(&call_as(&h, &unknown, 3, "whoami").await);
    assert_eq!(server.counts().await.jwks, 3);
}

#[tokio::test]
async fn the_jwks_down_with_an_uncached_kid_is_503_and_does_not_hang() {
    let Some(server) = start("the_jwks_down_with_an_uncached_kid_is_503_and_does_not_hang").await
    else {
        return;
    };
    let h = jwt_server(&server, |v| {
        v.refetch_interval(Duration::ZERO)
            .timeout(Duration::from_secs(5))
    })
    .await;
    let r = call_as(&h, &server.mint(valid_claims()).await, 1, "whoami").await;
    assert_served(&r, "johndoe");
    let kid = server.rotate().await;
    let rotated = server.mint(json!({"kid": kid, "aud": RESOURCE})).await;
    server.down().await;
    let r = tokio::time::timeout(NO_HANG, call_as(&h, &rotated, 2, "whoami"))
        .await
        .expect("answered without hanging");
    assert_unavailable(&r);
    // A token under the kept key is still served while the JWKS is down.
    let r = call_as(&h, &server.mint(valid_claims()).await, 3, "whoami").await;
    assert_served(&r, "johndoe");
    // Not kept as a verdict: once the JWKS is back, the same token is served.
    server.up().await;
    let r = call_as(&h, &rotated, 4, "whoami").await;
    assert_served(&r, "johndoe");
}

#[tokio::test]
async fn missing_scopes_are_named_in_one_challenge_and_broader_ones_cover() {
    let Some(server) =
        start("missing_scopes_are_named_in_one_challenge_and_broader_ones_cover").await
    else {
        return;
    };
    let h = jwt_server(&server, |v| v).await;
    // Some of `both`'s scopes: 403 naming all of them.
    let some = server
        .mint(json!({"aud": RESOURCE, "scope": "notes:read"}))
        .await;
    let r = call_as(&h, &some, 1, "both").await;
    let challenge = format!(
        "Bearer error=\"insufficient_scope\", scope=\"notes:read notes:write\", \
         resource_metadata=\"{METADATA_URL}\""
    );
    assert_refused(
        &r,
        403,
        Some(&challenge),
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Forbidden: this operation needs the scopes notes:read notes:write","data":{"requiredScopes":["notes:read","notes:write"]}}}"#,
    );
    // notes:admin implies both.
    let admin = server
        .mint(json!({"aud": RESOURCE, "scope": "notes:admin"}))
        .await;
    let r = call_as(&h, &admin, 2, "both").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.response()["result"]["content"][0]["text"],
        "read and written"
    );
}

#[tokio::test]
async fn introspection_serves_active_tokens_and_refuses_the_rest() {
    let Some(server) = start("introspection_serves_active_tokens_and_refuses_the_rest").await
    else {
        return;
    };
    let h = introspecting_server(&server, |a| a).await;
    let opaque = server.opaque(json!({"aud": RESOURCE, "sub": "ada"})).await;
    assert_served(&call_as(&h, &opaque, 1, "whoami").await, "ada");
    // A JWT is introspected too (the server knows the tokens it minted).
    let jwt = server.mint(json!({"aud": RESOURCE, "sub": "bob"})).await;
    assert_served(&call_as(&h, &jwt, 2, "whoami").await, "bob");
    // active: false, for a token revoked before it was ever seen, and one never issued.
    let revoked = server.opaque(json!({"aud": RESOURCE})).await;
    server.revoke(&revoked).await;
    assert_invalid(&call_as(&h, &revoked, 3, "whoami").await);
    assert_invalid(&call_as(&h, "never-issued", 4, "whoami").await);
    // Active, but for another resource: presa refuses it itself.
    let elsewhere = server
        .opaque(json!({"aud": "https://other.example.test/mcp"}))
        .await;
    assert_invalid(&call_as(&h, &elsewhere, 5, "whoami").await);
    assert_eq!(
        server.counts().await,
        Counts {
            jwks: 0,
            introspection: 5,
            metadata: 1
        }
    );
}

#[tokio::test]
async fn a_repeated_token_is_answered_from_the_verdict_cache() {
    let Some(server) = start("a_repeated_token_is_answered_from_the_verdict_cache").await else {
        return;
    };
    let h = introspecting_server(&server, |a| a).await;
    let token = server.opaque(json!({"aud": RESOURCE, "sub": "ada"})).await;
    for id in 1..=3 {
        assert_served(&call_as(&h, &token, id, "whoami").await, "ada");
    }
    assert_eq!(server.counts().await.introspection, 1, "asked once");
    // Revoked at the server: still served from the cache until its verdict's time is
    // up (Authorization::cache_ttl, 60 s by default).
    server.revoke(&token).await;
    assert_served(&call_as(&h, &token, 4, "whoami").await, "ada");
    // A refusal is kept too.
    for id in 5..=6 {
        assert_invalid(&call_as(&h, "never-issued", id, "whoami").await);
    }
    assert_eq!(server.counts().await.introspection, 2);
    // Without a cache, every request asks, and a revocation is seen at once.
    let uncached = introspecting_server(&server, |a| a.cache_ttl(Duration::ZERO)).await;
    let token = server.opaque(json!({"aud": RESOURCE, "sub": "ada"})).await;
    for id in 1..=2 {
        assert_served(&call_as(&uncached, &token, id, "whoami").await, "ada");
    }
    server.revoke(&token).await;
    assert_invalid(&call_as(&uncached, &token, 3, "whoami").await);
    assert_eq!(server.counts().await.introspection, 5);
    // The JWT verifier's verdicts are kept alike: a repeated JWT is not checked again,
    // and the JWKS is read once.
    let jwt_h = jwt_server(&server, |v| v).await;
    let jwt = server.mint(json!({"aud": RESOURCE, "sub": "cy"})).await;
    for id in 1..=3 {
        assert_served(&call_as(&jwt_h, &jwt, id, "whoami").await, "cy");
    }
    assert_eq!(server.counts().await.jwks, 1);
}

#[tokio::test]
async fn the_introspection_endpoint_down_is_503() {
    let Some(server) = start("the_introspection_endpoint_down_is_503").await else {
        return;
    };
    let h = introspecting_server(&server, |a| a).await;
    let first = server.opaque(json!({"aud": RESOURCE, "sub": "ada"})).await;
    assert_served(&call_as(&h, &first, 1, "whoami").await, "ada");
    let second = server.opaque(json!({"aud": RESOURCE, "sub": "bob"})).await;
    server.down().await;
    let r = tokio::time::timeout(NO_HANG, call_as(&h, &second, 2, "whoami"))
        .await
        .expect("answered without hanging");
    assert_unavailable(&r);
    // Not kept: once the server is back, the token is served.
    server.up().await;
    assert_served(&call_as(&h, &second, 3, "whoami").await, "bob");
    // A verifier that never found the endpoint (the metadata is down too): 503 as well.
    server.down().await;
    let fresh = introspecting_server(&server, |a| a).await;
    let r = tokio::time::timeout(NO_HANG, call_as(&fresh, &first, 4, "whoami"))
        .await
        .expect("answered without hanging");
    assert_unavailable(&r);
}

/// Whatever presa logs (every level) while both verifiers accept and refuse tokens
/// holds none of them, nor their signatures; nor does any response.
#[tokio::test]
async fn no_log_line_or_response_holds_a_token() {
    let Some(server) = start("no_log_line_or_response_holds_a_token").await else {
        return;
    };
    // The servers run on this test's one thread, so the capture sees it all.
    let (lines, _default) = Lines::capture();
    let jwt_h = jwt_server(&server, |v| v.refetch_interval(Duration::ZERO)).await;
    let introspecting = introspecting_server(&server, |a| a).await;
    let t = unix_now();
    let mut tokens = vec![
        server.mint(valid_claims()).await,
        server.mint(json!({"aud": RESOURCE, "exp": t - 120})).await,
        server
            .mint(json!({"aud": "https://other.example.test/mcp"}))
            .await,
        server
            .mint(json!({"aud": RESOURCE, "iss": "https://evil.example.test"}))
            .await,
        server
            .mint(json!({"unknown_kid": true, "aud": RESOURCE}))
            .await,
        tampered(&server.mint(valid_claims()).await),
    ];
    let mut bodies = String::new();
    let mut record = |r: Reply| {
        bodies.push_str(&r.body);
        for (name, value) in &r.headers {
            bodies.push_str(name.as_str());
            bodies.push_str(&String::from_utf8_lossy(value.as_bytes()));
        }
    };
    for (id, token) in (1..).zip(&tokens) {
        record(call_as(&jwt_h, token, id, "both").await);
    }
    let opaque = vec![
        server
            .opaque(json!({"aud": RESOURCE, "scope": "notes:read"}))
            .await,
        server
            .opaque(json!({"aud": "https://other.example.test/mcp"}))
            .await,
    ];
    for (id, token) in (1..).zip(opaque.iter().chain(&tokens)) {
        record(call_as(&introspecting, token, id, "both").await);
    }
    // And while the authorization server is down.
    server.down().await;
    let late = server
        .mint(json!({"unknown_kid": true, "aud": RESOURCE}))
        .await;
    record(call_as(&jwt_h, &late, 90, "whoami").await);
    let late_opaque = server.opaque(json!({"aud": RESOURCE})).await;
    record(call_as(&introspecting, &late_opaque, 91, "whoami").await);
    tokens.extend(opaque);
    tokens.push(late);
    tokens.push(late_opaque);
    let logged = lines.text();
    assert!(
        logged.contains("access token refused") && logged.contains("not checkable now"),
        "the refusals are logged: {logged}"
    );
    for token in &tokens {
        // A JWT's signature alone, or an opaque token whole.
        let secret = token.rsplit('.').next().unwrap_or(token);
        assert!(secret.len() >= 20, "{token}");
        assert!(
            !logged.contains(secret),
            "a log line holds {token}: {logged}"
        );
        assert!(
            !bodies.contains(secret),
            "a response holds {token}: {bodies}"
        );
    }
}

/// A verifier warmed before serving, and shared with the server, has its keys in hand:
/// serving a token fetches nothing more (the way the book and the fixture start).
#[tokio::test]
async fn a_warmed_verifier_serves_its_first_token_without_fetching() {
    let Some(server) = start("a_warmed_verifier_serves_its_first_token_without_fetching").await
    else {
        return;
    };
    let verifier = std::sync::Arc::new(JwtVerifier::new(server.issuer()));
    verifier.warm().await.expect("the keys are fetched");
    let fetched = server.counts().await;
    assert_eq!((fetched.metadata, fetched.jwks), (1, 1), "{fetched:?}");
    let h = serve(Authorization::with_verifier(verifier), server.issuer()).await;
    let token = server.mint(json!({"aud": RESOURCE, "sub": "ada"})).await;
    assert_served(&call_as(&h, &token, 1, "whoami").await, "ada");
    let after = server.counts().await;
    assert_eq!((after.metadata, after.jwks), (1, 1), "{after:?}");
}
