//! The test authorization server itself (`presa_tests::authz`): its metadata and keys, the
//! tokens it mints and issues through real flows, introspection with revocation and
//! opaque tokens, taking its JWKS and introspection down and up, counting the requests
//! they get, and its exit when its stdin closes. Each
//! test starts its own server; on a machine without npm they say so and return.

use presa_tests::authz::{
    AuthServer, Counts, TEST_CLIENT_ID, TEST_CLIENT_SECRET, jwt_parts, unix_now,
};
use serde_json::{Value, json};

const RESOURCE: &str = "http://127.0.0.1:8080/mcp";

async fn get(url: &str) -> (u16, Value) {
    let response = reqwest::get(url).await.expect("GET answers");
    let status = response.status().as_u16();
    let text = response.text().await.expect("the body reads");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// POSTs `token` to the introspection endpoint with `auth` (id, secret) as HTTP Basic.
async fn introspect(
    server: &AuthServer,
    token: &str,
    auth: Option<(&str, &str)>,
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(server.introspection_endpoint())
        .form(&[("token", token)]);
    if let Some((id, secret)) = auth {
        request = request.basic_auth(id, Some(secret));
    }
    request
        .send()
        .await
        .expect("the introspection endpoint answers")
}

/// The introspection answer for `token`, as the resource server asks.
async fn introspection(server: &AuthServer, token: &str) -> Value {
    let client = server.introspection_client();
    let response = introspect(server, token, Some((&client.id, &client.secret))).await;
    assert_eq!(response.status(), 200);
    serde_json::from_str(&response.text().await.expect("the body reads")).expect("JSON")
}

#[tokio::test]
async fn metadata_at_both_paths_and_three_keys() {
    let Some(server) = AuthServer::start_or_skip("metadata_at_both_paths_and_three_keys").await
    else {
        return;
    };
    let iss = server.issuer();
    let (status, rfc8414) = get(&format!("{iss}/.well-known/oauth-authorization-server")).await;
    assert_eq!(status, 200);
    let (status, oidc) = get(&format!("{iss}/.well-known/openid-configuration")).await;
    assert_eq!(status, 200);
    assert_eq!(rfc8414, oidc, "one document at both paths");
    assert_eq!(rfc8414["issuer"], iss);
    assert_eq!(rfc8414["jwks_uri"], server.jwks_uri());
    assert_eq!(rfc8414["token_endpoint"], server.token_endpoint());
    assert_eq!(
        rfc8414["authorization_endpoint"],
        server.authorization_endpoint()
    );
    assert_eq!(
        rfc8414["introspection_endpoint"],
        server.introspection_endpoint()
    );
    assert_eq!(rfc8414["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(
        rfc8414["token_endpoint_auth_methods_supported"],
        json!(["client_secret_basic", "client_secret_post", "none"])
    );
    assert_eq!(
        rfc8414["introspection_endpoint_auth_methods_supported"],
        json!(["client_secret_basic"])
    );

    let (status, jwks) = get(server.jwks_uri()).await;
    assert_eq!(status, 200);
    let keys = jwks["keys"].as_array().expect("keys");
    assert_eq!(keys.len(), 3, "{jwks}");
    let kids = server.kids();
    let expected = [
        (&kids.rs256, "RS256", "RSA", None),
        (&kids.es256, "ES256", "EC", Some("P-256")),
        (&kids.eddsa, "EdDSA", "OKP", Some("Ed25519")),
    ];
    for (kid, alg, kty, crv) in expected {
        let key = keys
            .iter()
            .find(|k| k["kid"] == kid.as_str())
            .unwrap_or_else(|| panic!("{alg} key {kid} in {jwks}"));
        assert_eq!(key["alg"], alg);
        assert_eq!(key["kty"], kty);
        assert_eq!(key["crv"].as_str(), crv);
        assert!(key.get("d").is_none(), "no private member: {key}");
    }
}

#[tokio::test]
async fn minted_tokens_carry_the_defaults_and_the_overrides() {
    let Some(server) =
        AuthServer::start_or_skip("minted_tokens_carry_the_defaults_and_the_overrides").await
    else {
        return;
    };
    let before = unix_now();
    let token = server
        .mint(json!({"aud": RESOURCE, "scope": "mcp:read"}))
        .await;
    let (header, claims) = jwt_parts(&token);
    assert_eq!(header["alg"], "RS256");
    assert_eq!(header["kid"], server.kids().rs256.as_str());
    assert_eq!(header["typ"], "at+jwt");
    assert_eq!(claims["iss"], server.issuer());
    assert_eq!(claims["aud"], RESOURCE);
    assert_eq!(claims["scope"], "mcp:read");
    assert_eq!(claims["sub"], "johndoe");
    assert_eq!(claims["client_id"], "presa-test-client");
    assert!(claims["jti"].is_string());
    let iat = claims["iat"].as_i64().expect("iat");
    assert!((before..=unix_now()).contains(&iat), "iat {iat} is now");
    assert_eq!(claims["exp"].as_i64(), Some(iat + 3600));
    assert!(claims.get("nbf").is_none());
    assert_ne!(
        token,
        server
            .mint(json!({"aud": RESOURCE, "scope": "mcp:read"}))
            .await,
        "each token is its own"
    );

    let (_, claims) = jwt_parts(&server.mint(json!({})).await);
    assert!(claims.get("aud").is_none(), "no aud unless given: {claims}");
    assert!(
        claims.get("scope").is_none(),
        "no scope unless given: {claims}"
    );

    let (header, _) = jwt_parts(&server.mint(json!({"alg": "ES256"})).await);
    assert_eq!(header["alg"], "ES256");
    assert_eq!(header["kid"], server.kids().es256.as_str());
    let (header, _) = jwt_parts(&server.mint(json!({"alg": "EdDSA", "typ": null})).await);
    assert_eq!(header["alg"], "EdDSA");
    assert_eq!(header["kid"], server.kids().eddsa.as_str());
    assert!(header.get("typ").is_none(), "typ left out: {header}");

    let now = unix_now();
    let overrides = json!({
        "iss": "http://evil.example", "aud": ["https://other.example", RESOURCE],
        "exp": now - 60, "nbf": now + 3600, "sub": "alice", "jti": null, "client_id": null,
    });
    let (_, claims) = jwt_parts(&server.mint(overrides).await);
    assert_eq!(claims["iss"], "http://evil.example");
    assert_eq!(claims["aud"], json!(["https://other.example", RESOURCE]));
    assert_eq!(claims["exp"], now - 60);
    assert_eq!(claims["nbf"], now + 3600);
    assert_eq!(claims["sub"], "alice");
    assert!(claims.get("jti").is_none() && claims.get("client_id").is_none());
    let (_, claims) = jwt_parts(&server.mint(json!({"exp": null})).await);
    assert!(claims.get("exp").is_none(), "exp removed: {claims}");

    // A key the JWKS never serves, then one rotated in.
    let (_, jwks) = get(server.jwks_uri()).await;
    let served = |jwks: &Value, kid: &str| {
        jwks["keys"]
            .as_array()
            .expect("keys")
            .iter()
            .any(|k| k["kid"] == kid)
    };
    let (header, _) = jwt_parts(
        &server
            .mint(json!({"unknown_kid": true, "alg": "ES256"}))
            .await,
    );
    assert_eq!(header["alg"], "ES256");
    let unknown = header["kid"].as_str().expect("kid");
    assert!(!served(&jwks, unknown), "{unknown} is not in {jwks}");
    assert!(!served(&get(server.jwks_uri()).await.1, unknown));

    let kid = server.rotate().await;
    let (_, jwks) = get(server.jwks_uri()).await;
    assert!(served(&jwks, &kid), "{kid} is served: {jwks}");
    assert_eq!(jwks["keys"].as_array().expect("keys").len(), 4);
    let (header, _) = jwt_parts(&server.mint(json!({"kid": kid})).await);
    assert_eq!(header["kid"], kid.as_str());
    assert_eq!(header["alg"], "RS256");
}

#[tokio::test]
async fn introspection_authenticates_and_tracks_tokens() {
    let Some(server) =
        AuthServer::start_or_skip("introspection_authenticates_and_tracks_tokens").await
    else {
        return;
    };
    let token = server
        .mint(json!({"aud": RESOURCE, "scope": "mcp:read mcp:write"}))
        .await;

    let unauthenticated = introspect(&server, &token, None).await;
    assert_eq!(unauthenticated.status(), 401);
    assert_eq!(
        unauthenticated.headers()["www-authenticate"],
        "Basic realm=\"introspection\""
    );
    let id = server.introspection_client().id.clone();
    let wrong = introspect(&server, &token, Some((&id, "wrong"))).await;
    assert_eq!(wrong.status(), 401);
    let other = introspect(&server, &token, Some((TEST_CLIENT_ID, TEST_CLIENT_SECRET))).await;
    assert_eq!(
        other.status(),
        401,
        "only the resource server may introspect"
    );

    let (_, claims) = jwt_parts(&token);
    let answer = introspection(&server, &token).await;
    assert_eq!(answer["active"], true);
    for claim in [
        "scope",
        "sub",
        "client_id",
        "exp",
        "iat",
        "aud",
        "iss",
        "jti",
    ] {
        assert_eq!(answer[claim], claims[claim], "{claim}: {answer}");
    }
    server.revoke(&token).await;
    assert_eq!(
        introspection(&server, &token).await,
        json!({"active": false})
    );

    let now = unix_now();
    for inactive in [json!({"exp": now - 60}), json!({"nbf": now + 3600})] {
        let token = server.mint(inactive.clone()).await;
        assert_eq!(
            introspection(&server, &token).await,
            json!({"active": false}),
            "{inactive}"
        );
    }
    let never_issued = server.mint(json!({})).await.replace('.', "x");
    assert_eq!(
        introspection(&server, &never_issued).await,
        json!({"active": false})
    );

    let opaque = server
        .opaque(json!({"aud": RESOURCE, "scope": "mcp:admin", "sub": "bob"}))
        .await;
    assert!(!opaque.contains('.'), "not a JWT: {opaque}");
    let answer = introspection(&server, &opaque).await;
    assert_eq!(answer["active"], true);
    assert_eq!(answer["scope"], "mcp:admin");
    assert_eq!(answer["sub"], "bob");
    assert_eq!(answer["aud"], RESOURCE);
    assert_eq!(answer["iss"], server.issuer());
    assert!(answer["exp"].as_i64().expect("exp") > now);
    server.revoke(&opaque).await;
    assert_eq!(
        introspection(&server, &opaque).await,
        json!({"active": false})
    );
}

#[tokio::test]
async fn real_flows_issue_tokens_for_the_resource_and_scope() {
    let Some(server) =
        AuthServer::start_or_skip("real_flows_issue_tokens_for_the_resource_and_scope").await
    else {
        return;
    };
    let token = server
        .token_via_client_credentials(RESOURCE, "mcp:read mcp:write")
        .await;
    let (header, claims) = jwt_parts(&token);
    assert_eq!(header["typ"], "at+jwt");
    assert_eq!(claims["aud"], RESOURCE);
    assert_eq!(claims["scope"], "mcp:read mcp:write");
    assert_eq!(claims["client_id"], TEST_CLIENT_ID);
    assert_eq!(claims["sub"], TEST_CLIENT_ID);
    assert_eq!(claims["iss"], server.issuer());
    assert!(claims["exp"].as_i64().expect("exp") > unix_now());
    assert_eq!(introspection(&server, &token).await["active"], true);

    let token = server
        .token_via_authorization_code(RESOURCE, "mcp:read")
        .await;
    let (header, claims) = jwt_parts(&token);
    assert_eq!(header["typ"], "at+jwt");
    assert_eq!(claims["aud"], RESOURCE);
    assert_eq!(claims["scope"], "mcp:read");
    assert_eq!(claims["client_id"], TEST_CLIENT_ID);
    assert_eq!(claims["sub"], "johndoe");
    assert_eq!(claims["iss"], server.issuer());
    assert_eq!(introspection(&server, &token).await["scope"], "mcp:read");
}

#[tokio::test]
async fn down_takes_the_jwks_metadata_and_introspection_away_until_up() {
    let Some(server) =
        AuthServer::start_or_skip("down_takes_the_jwks_metadata_and_introspection_away_until_up")
            .await
    else {
        return;
    };
    let iss = server.issuer().to_owned();
    let urls = [
        server.jwks_uri().to_owned(),
        format!("{iss}/.well-known/oauth-authorization-server"),
        format!("{iss}/.well-known/openid-configuration"),
    ];
    let token = server.opaque(json!({})).await;
    let client = server.introspection_client().clone();
    let auth = Some((client.id.as_str(), client.secret.as_str()));
    server.down().await;
    for url in &urls {
        assert_eq!(get(url).await.0, 503, "{url} while down");
    }
    assert_eq!(introspect(&server, &token, auth).await.status(), 503);
    server.up().await;
    for url in &urls {
        assert_eq!(get(url).await.0, 200, "{url} after up");
    }
    assert_eq!(introspection(&server, &token).await["active"], true);
}

#[tokio::test]
async fn requests_to_the_jwks_introspection_and_metadata_are_counted() {
    let Some(server) =
        AuthServer::start_or_skip("requests_to_the_jwks_introspection_and_metadata_are_counted")
            .await
    else {
        return;
    };
    let iss = server.issuer().to_owned();
    assert_eq!(server.counts().await, Counts::default());
    get(server.jwks_uri()).await;
    get(&format!("{iss}/.well-known/oauth-authorization-server")).await;
    get(&format!("{iss}/.well-known/openid-configuration")).await;
    let token = server.mint(json!({})).await;
    introspection(&server, &token).await;
    // Refused or down, a request still counts.
    introspect(&server, &token, None).await;
    server.down().await;
    get(server.jwks_uri()).await;
    assert_eq!(
        server.counts().await,
        Counts {
            jwks: 2,
            introspection: 2,
            metadata: 2
        }
    );
}

#[tokio::test]
async fn exits_when_its_stdin_closes() {
    let Some(server) = AuthServer::start_or_skip("exits_when_its_stdin_closes").await else {
        return;
    };
    let jwks = server.jwks_uri().to_owned();
    let status = server.shutdown().await;
    assert!(status.success(), "{status}");
    assert!(
        reqwest::get(&jwks).await.is_err(),
        "nothing listens any more"
    );
}
