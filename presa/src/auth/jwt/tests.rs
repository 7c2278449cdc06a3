//! The JWT verifier against tokens signed here with fixed test keys (`testdata/keys.json`),
//! its JWKS served by a loopback stub that counts fetches.

use super::*;
use crate::auth::fetch::tests::{Answer, Seen, Stub, invalid, unavailable};
use jsonwebtoken::{EncodingKey, encode};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};

const ISSUER: &str = "https://as.example.com";
const RESOURCE: &str = "https://mcp.example.com/mcp";

fn keys() -> Value {
    serde_json::from_str(include_str!("../testdata/keys.json")).expect("the test keys are JSON")
}

/// The public JWK of test key `name`, with `kid` and `alg` when given.
fn jwk(name: &str, kid: Option<&str>, alg: Option<&str>) -> Value {
    let mut jwk = keys()[name]["jwk"].clone();
    if let Some(kid) = kid {
        jwk["kid"] = json!(kid);
    }
    if let Some(alg) = alg {
        jwk["alg"] = json!(alg);
    }
    jwk
}

fn private_der(name: &str) -> Vec<u8> {
    let keys = keys();
    let b64 = keys[name]["private_pkcs1_der"]
        .as_str()
        .or(keys[name]["private_pkcs8_der"].as_str())
        .expect("a private key");
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("base64")
}

/// A token signed with test key `name` under `alg`, naming `kid`, typed `typ`.
fn sign(
    name: &str,
    alg: Algorithm,
    kid: Option<&str>,
    typ: Option<&str>,
    claims: &Value,
) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    header.typ = typ.map(str::to_owned);
    let der = private_der(name);
    let key = match alg.family() {
        AlgorithmFamily::Rsa => EncodingKey::from_rsa_der(&der),
        AlgorithmFamily::Ec => EncodingKey::from_ec_der(&der),
        AlgorithmFamily::Ed => EncodingKey::from_ed_der(&der),
        AlgorithmFamily::Hmac => EncodingKey::from_secret(&der).expect("an HMAC key"),
    };
    crypto_provider().expect("a provider");
    encode(&header, claims, &key).expect("the token signs")
}

fn now() -> i64 {
    i64::try_from(unix_now()).expect("now fits")
}

/// Valid claims, with `overrides` applied (`null` removes one).
fn claims(overrides: Value) -> Value {
    let mut claims = json!({
        "iss": ISSUER,
        "sub": "ada",
        "client_id": "app",
        "aud": RESOURCE,
        "scope": "notes:read notes:write",
        "iat": now(),
        "exp": now() + 600,
        "jti": "j1",
    });
    for (name, value) in overrides.as_object().expect("an object") {
        match value {
            Value::Null => claims.as_object_mut().expect("an object").remove(name),
            v => claims
                .as_object_mut()
                .expect("an object")
                .insert(name.clone(), v.clone()),
        };
    }
    claims
}

/// An RS256 token with key "rsa1" as "k1", typed at+jwt.
fn rs256(overrides: Value) -> String {
    sign(
        "rsa1",
        Algorithm::RS256,
        Some("k1"),
        Some("at+jwt"),
        &claims(overrides),
    )
}

/// A JWKS served at `/jwks` that a test changes, takes down, or holds.
struct Jwks {
    stub: Stub,
    keys: Arc<Mutex<Value>>,
    down: Arc<AtomicBool>,
}

impl Jwks {
    async fn serve(keys: Vec<Value>) -> Jwks {
        let document = Arc::new(Mutex::new(json!({ "keys": keys })));
        let down = Arc::new(AtomicBool::new(false));
        let (d, k) = (Arc::clone(&down), Arc::clone(&document));
        let stub = Stub::start(move |_: Seen| {
            let answer: Answer = if d.load(Ordering::SeqCst) {
                (503, "application/json", b"{}".to_vec())
            } else {
                let body = k.lock().expect("not poisoned").to_string().into_bytes();
                (200, "application/jwk-set+json", body)
            };
            async move { answer }
        })
        .await;
        Jwks {
            stub,
            keys: document,
            down,
        }
    }

    fn url(&self) -> String {
        format!("{}/jwks", self.stub.url)
    }

    fn set(&self, keys: Vec<Value>) {
        *self.keys.lock().expect("not poisoned") = json!({ "keys": keys });
    }

    fn set_raw(&self, document: Value) {
        *self.keys.lock().expect("not poisoned") = document;
    }

    fn down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    fn fetches(&self) -> usize {
        self.stub.hits()
    }

    fn verifier(&self) -> JwtVerifier {
        JwtVerifier::new(ISSUER).jwks_uri(self.url())
    }
}

/// The usual JWKS: RSA "k1" (RS256), P-256 "e1", P-384 "e3", Ed25519 "d1", each naming
/// its alg, and RSA "p1" for PS256.
async fn usual() -> Jwks {
    Jwks::serve(vec![
        jwk("rsa1", Some("k1"), Some("RS256")),
        jwk("ec256", Some("e1"), Some("ES256")),
        jwk("ec384", Some("e3"), Some("ES384")),
        jwk("ed25519", Some("d1"), Some("EdDSA")),
        jwk("rsa2", Some("p1"), Some("PS256")),
    ])
    .await
}

#[test]
fn the_algorithm_comes_from_the_key() {
    let alg = |jwk: Value| key_of(&jwk).map(|k| k.alg);
    assert_eq!(alg(jwk("rsa1", None, Some("PS384"))), Ok(Algorithm::PS384));
    assert_eq!(alg(jwk("rsa1", None, None)), Ok(Algorithm::RS256));
    assert_eq!(alg(jwk("ec256", None, None)), Ok(Algorithm::ES256));
    assert_eq!(alg(jwk("ec384", None, None)), Ok(Algorithm::ES384));
    assert_eq!(alg(jwk("ed25519", None, None)), Ok(Algorithm::EdDSA));
    let refused = |jwk: Value| key_of(&jwk).map(|k| k.alg).expect_err("refused");
    assert!(refused(jwk("rsa1", None, Some("HS256"))).contains("HS256 is not accepted"));
    assert!(refused(jwk("rsa1", None, Some("none"))).contains("none is not accepted"));
    assert!(refused(jwk("rsa1", None, Some("RSA-OAEP"))).contains("not accepted"));
    assert!(refused(jwk("rsa1", None, Some("ES256"))).contains("does not fit kty RSA"));
    assert!(refused(jwk("ec384", None, Some("ES256"))).contains("does not fit"));
    assert!(refused(jwk("ec256", None, Some("EdDSA"))).contains("does not fit"));
    assert!(refused(jwk("ed25519", None, Some("ES256"))).contains("does not fit"));
    assert!(refused(json!({"kty": "oct", "k": "c2VjcmV0"})).contains("implies none"));
    assert!(refused(json!({"kty": "oct", "k": "c2VjcmV0", "alg": "HS256"})).contains("HS256"));
    assert!(
        refused(json!({"kty": "EC", "crv": "P-521", "x": "AA", "y": "AA"}))
            .contains("implies none")
    );
    assert!(refused(jwk("rsa1024", None, None)).contains("1024 bits, under the 2048"));
    let mut enc = jwk("rsa1", None, None);
    enc["use"] = json!("enc");
    assert!(refused(enc).contains("use is \"enc\""));
    let mut sig = jwk("rsa1", None, None);
    sig["use"] = json!("sig");
    sig["key_ops"] = json!(["verify"]);
    assert_eq!(alg(sig), Ok(Algorithm::RS256));
    let mut ops = jwk("rsa1", None, None);
    ops["key_ops"] = json!(["encrypt"]);
    assert!(refused(ops).contains("key_ops"));
    let mut short = jwk("ec256", None, None);
    short["x"] = json!("AAAA");
    assert!(refused(short).contains("coordinates"));
}

#[test]
fn a_jwks_keeps_its_usable_keys_and_passes_over_the_rest() {
    let document = json!({"keys": [
        jwk("rsa1", Some("k1"), Some("RS256")),
        {"kty": "oct", "kid": "h", "k": "c2VjcmV0", "alg": "HS256"},
        {"kty": "weird"},
        "not an object",
        jwk("ed25519", Some("d1"), None),
    ]});
    let keys = parse_jwks(&document).expect("a JWKS");
    let kept: Vec<_> = keys.iter().map(|k| (k.kid.as_deref(), k.alg)).collect();
    assert_eq!(
        kept,
        [
            (Some("k1"), Algorithm::RS256),
            (Some("d1"), Algorithm::EdDSA)
        ]
    );
    assert!(parse_jwks(&json!({"keys": {}})).is_err());
    assert!(parse_jwks(&json!([])).is_err());
    assert_eq!(parse_jwks(&json!({"keys": []})).map(|k| k.len()), Ok(0));
}

#[test]
fn access_token_types() {
    for (typ, lenient, strict) in [
        (Some("at+jwt"), true, true),
        (Some("AT+JWT"), true, true),
        (Some("application/at+jwt"), true, true),
        (Some("Application/At+JWT"), true, true),
        (Some("JWT"), true, false),
        (Some("jwt"), true, false),
        (Some("application/jwt"), true, false),
        (None, true, false),
        (Some("dpop+jwt"), false, false),
        (Some("id_token+jwt"), false, false),
        (Some("application/"), false, false),
        (Some(""), false, false),
    ] {
        assert_eq!(typ_accepted(typ, false), lenient, "{typ:?} lenient");
        assert_eq!(typ_accepted(typ, true), strict, "{typ:?} strict");
    }
}

#[tokio::test]
async fn tokens_of_every_accepted_algorithm_verify() {
    let jwks = usual().await;
    let verifier = jwks.verifier();
    for (name, alg, kid) in [
        ("rsa1", Algorithm::RS256, "k1"),
        ("rsa2", Algorithm::PS256, "p1"),
        ("ec256", Algorithm::ES256, "e1"),
        ("ec384", Algorithm::ES384, "e3"),
        ("ed25519", Algorithm::EdDSA, "d1"),
    ] {
        let token = sign(name, alg, Some(kid), Some("at+jwt"), &claims(json!({})));
        let verified = verifier
            .verify(&token)
            .await
            .unwrap_or_else(|e| panic!("{alg:?}: {e}"));
        assert_eq!(verified.subject.as_deref(), Some("ada"));
        assert_eq!(verified.client_id.as_deref(), Some("app"));
        assert_eq!(verified.scopes, ["notes:read", "notes:write"]);
        assert_eq!(verified.audience, [RESOURCE]);
        assert_eq!(verified.issuer.as_deref(), Some(ISSUER));
        assert!(verified.expires_at.is_some());
        assert_eq!(verified.claims["jti"], "j1");
    }
    assert_eq!(jwks.fetches(), 1, "the JWKS is fetched once and kept");
}

#[tokio::test]
async fn the_audience_is_left_to_presa() {
    let jwks = usual().await;
    let verifier = jwks.verifier();
    let other = verifier
        .verify(&rs256(
            json!({"aud": ["https://other.example.com", RESOURCE]}),
        ))
        .await
        .expect("aud is not checked here");
    assert_eq!(other.audience, ["https://other.example.com", RESOURCE]);
    let none = verifier
        .verify(&rs256(json!({"aud": null})))
        .await
        .expect("nor required here");
    assert!(none.audience.is_empty());
}

#[tokio::test]
async fn none_and_hmac_are_never_accepted() {
    let jwks = usual().await;
    let verifier = jwks.verifier();
    let b64 = |v: Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let payload = b64(claims(json!({})));
    for header in [
        json!({"alg": "none", "kid": "k1"}),
        json!({"alg": "none"}),
        json!({"alg": "None", "typ": "JWT"}),
    ] {
        let token = format!("{}.{payload}.", b64(header.clone()));
        let why = invalid(verifier.verify(&token).await);
        assert!(why.starts_with("not a signed JWT"), "{header}: {why}");
    }
    // HS256 "signed" with the RSA key's public modulus, a classic confusion attack.
    let modulus = URL_SAFE_NO_PAD
        .decode(jwk("rsa1", None, None)["n"].as_str().expect("n"))
        .expect("base64url");
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("k1".into());
    let token = encode(
        &header,
        &claims(json!({})),
        &EncodingKey::from_secret(&modulus).expect("an HMAC key"),
    )
    .expect("signs");
    let why = invalid(verifier.verify(&token).await);
    assert_eq!(why, "HS256 (HMAC) is never accepted");
    // And a JWKS offering an HMAC key changes nothing.
    jwks.set(vec![
        json!({"kty": "oct", "kid": "k1", "k": URL_SAFE_NO_PAD.encode(&modulus), "alg": "HS256"}),
    ]);
    let why = invalid(jwks.verifier().verify(&token).await);
    assert_eq!(why, "HS256 (HMAC) is never accepted");
    assert_eq!(jwks.fetches(), 0, "refused before any key is looked for");
}

#[tokio::test]
async fn the_header_algorithm_must_be_its_keys() {
    let jwks = usual().await;
    let verifier = jwks.verifier();
    // Signed with k1's own private key, but under PS256 where the JWK says RS256.
    let token = sign(
        "rsa1",
        Algorithm::PS256,
        Some("k1"),
        None,
        &claims(json!({})),
    );
    assert_eq!(
        invalid(verifier.verify(&token).await),
        "its header says PS256, but its key Some(\"k1\") is RS256"
    );
    let token = sign(
        "ec256",
        Algorithm::ES256,
        Some("k1"),
        None,
        &claims(json!({})),
    );
    assert!(invalid(verifier.verify(&token).await).contains("its key Some(\"k1\") is RS256"));
    // A JWK without alg: RSA means RS256 only.
    jwks.set(vec![jwk("rsa1", Some("k1"), None)]);
    let verifier = jwks.verifier();
    let token = sign(
        "rsa1",
        Algorithm::RS512,
        Some("k1"),
        None,
        &claims(json!({})),
    );
    assert!(invalid(verifier.verify(&token).await).contains("is RS256"));
    let token = sign(
        "rsa1",
        Algorithm::RS256,
        Some("k1"),
        None,
        &claims(json!({})),
    );
    verifier.verify(&token).await.expect("RS256 fits");
}

#[tokio::test]
async fn a_bad_signature_is_invalid() {
    let jwks = usual().await;
    let verifier = jwks.verifier();
    let token = rs256(json!({}));
    let (rest, signature) = token.rsplit_once('.').expect("three parts");
    let mut bytes = URL_SAFE_NO_PAD.decode(signature).expect("base64url");
    bytes[0] ^= 1;
    let tampered = format!("{rest}.{}", URL_SAFE_NO_PAD.encode(&bytes));
    assert_eq!(
        invalid(verifier.verify(&tampered).await),
        "its signature does not verify"
    );
    // Claims changed under the same signature.
    let (header, _) = rest.split_once('.').expect("header and claims");
    let forged_claims = URL_SAFE_NO_PAD.encode(claims(json!({"sub": "root"})).to_string());
    let forged = format!("{header}.{forged_claims}.{signature}");
    assert_eq!(
        invalid(verifier.verify(&forged).await),
        "its signature does not verify"
    );
    // Signed by a key the JWKS does not have, under a kid it does.
    let other = sign(
        "rsa2",
        Algorithm::RS256,
        Some("k1"),
        None,
        &claims(json!({})),
    );
    assert_eq!(
        invalid(verifier.verify(&other).await),
        "its signature does not verify"
    );
    assert!(invalid(verifier.verify("not.a.jwt").await).starts_with("not a signed JWT"));
    assert!(invalid(verifier.verify("").await).starts_with("not a signed JWT"));
}

#[tokio::test]
async fn expiry_and_not_before_hold_within_the_leeway() {
    let jwks = usual().await;
    // Leeway 30 s (the default); each case stays 2 s clear of the bound and reads the
    // clock when it is made, so a slow machine between signing and checking changes
    // nothing (the whole test may take longer than the margin).
    let verifier = jwks.verifier();
    verifier
        .verify(&rs256(json!({"exp": now() - 28})))
        .await
        .expect("expired within the leeway");
    assert_eq!(
        invalid(verifier.verify(&rs256(json!({"exp": now() - 32}))).await),
        "it has expired (exp)"
    );
    assert_eq!(
        invalid(verifier.verify(&rs256(json!({"exp": null}))).await),
        "it has no numeric exp claim"
    );
    assert_eq!(
        invalid(verifier.verify(&rs256(json!({"exp": "soon"}))).await),
        "it has no numeric exp claim"
    );
    verifier
        .verify(&rs256(json!({"nbf": now() + 28})))
        .await
        .expect("not before, within the leeway");
    assert_eq!(
        invalid(verifier.verify(&rs256(json!({"nbf": now() + 32}))).await),
        "it is not valid yet (nbf)"
    );
    verifier
        .verify(&rs256(json!({"iat": now() + 28})))
        .await
        .expect("issued ahead, within the leeway");
    assert_eq!(
        invalid(verifier.verify(&rs256(json!({"iat": now() + 32}))).await),
        "it was issued in the future (iat)"
    );
    assert_eq!(
        invalid(verifier.verify(&rs256(json!({"iat": "now"}))).await),
        "its iat is not a number"
    );
    verifier
        .verify(&rs256(json!({"iat": null})))
        .await
        .expect("iat is optional");

    let strict = jwks.verifier().leeway(Duration::from_secs(5));
    strict
        .verify(&rs256(json!({"exp": now() - 3})))
        .await
        .expect("within 5 s");
    assert_eq!(
        invalid(strict.verify(&rs256(json!({"exp": now() - 7}))).await),
        "it has expired (exp)"
    );
    assert_eq!(
        invalid(strict.verify(&rs256(json!({"nbf": now() + 7}))).await),
        "it is not valid yet (nbf)"
    );
}

#[tokio::test]
async fn the_issuer_must_be_the_configured_one() {
    let jwks = usual().await;
    let verifier = jwks.verifier();
    assert_eq!(
        invalid(
            verifier
                .verify(&rs256(json!({"iss": "https://evil.example.com"})))
                .await
        ),
        "its iss \"https://evil.example.com\" is not the issuer \"https://as.example.com\""
    );
    assert!(
        invalid(
            verifier
                .verify(&rs256(json!({"iss": format!("{ISSUER}/")})))
                .await
        )
        .contains("is not the issuer")
    );
    assert!(
        invalid(verifier.verify(&rs256(json!({"iss": [ISSUER]}))).await)
            .contains("is not the issuer")
    );
    assert_eq!(
        invalid(verifier.verify(&rs256(json!({"iss": null}))).await),
        "its iss null is not the issuer \"https://as.example.com\""
    );
}

#[tokio::test]
async fn the_type_is_checked_as_configured() {
    let jwks = usual().await;
    let token = |typ: Option<&str>| {
        sign(
            "rsa1",
            Algorithm::RS256,
            Some("k1"),
            typ,
            &claims(json!({})),
        )
    };
    let lenient = jwks.verifier();
    for typ in [
        Some("at+jwt"),
        Some("application/at+jwt"),
        Some("JWT"),
        None,
    ] {
        lenient
            .verify(&token(typ))
            .await
            .unwrap_or_else(|e| panic!("{typ:?}: {e}"));
    }
    assert!(
        invalid(lenient.verify(&token(Some("dpop+jwt"))).await)
            .contains("not that of an access token")
    );
    let strict = jwks.verifier().require_at_jwt_type(true);
    strict.verify(&token(Some("at+jwt"))).await.expect("at+jwt");
    strict
        .verify(&token(Some("application/at+jwt")))
        .await
        .expect("application/at+jwt");
    for typ in [Some("JWT"), None] {
        let why = invalid(strict.verify(&token(typ)).await);
        assert!(why.ends_with("(at+jwt is required)"), "{typ:?}: {why}");
    }
}

#[tokio::test]
async fn a_token_without_kid_uses_a_key_of_its_algorithm() {
    let jwks = usual().await;
    let verifier = jwks.verifier();
    let token = sign("ec256", Algorithm::ES256, None, None, &claims(json!({})));
    verifier.verify(&token).await.expect("the one ES256 key");
    // Two RSA keys (RS256 k1, PS256 p1): the RS256 one verifies.
    let token = sign("rsa1", Algorithm::RS256, None, None, &claims(json!({})));
    verifier.verify(&token).await.expect("the RS256 key");
    let token = sign("rsa2", Algorithm::RS256, None, None, &claims(json!({})));
    assert_eq!(
        invalid(verifier.verify(&token).await),
        "its signature does not verify"
    );
    let token = sign("rsa1", Algorithm::RS384, None, None, &claims(json!({})));
    assert_eq!(
        invalid(verifier.verify(&token).await),
        "it names no key, and the JWKS has none for RS384"
    );
}

#[tokio::test]
async fn an_unknown_kid_refetches_at_most_once_per_interval() {
    // Every token is signed first (RSA signing is slow in a debug build), so the clock
    // runs only while verifying.
    let k1 = rs256(json!({}));
    let k2 = sign(
        "rsa2",
        Algorithm::RS256,
        Some("k2"),
        None,
        &claims(json!({})),
    );
    let made_up: Vec<String> = (0..50)
        .map(|i| {
            sign(
                "ed25519",
                Algorithm::EdDSA,
                Some(&format!("x{i}")),
                None,
                &claims(json!({})),
            )
        })
        .collect();
    let interval = Duration::from_millis(1000);
    let past_it = interval + Duration::from_millis(100);
    let jwks = Jwks::serve(vec![jwk("rsa1", Some("k1"), Some("RS256"))]).await;
    let verifier = jwks.verifier().refetch_interval(interval);
    verifier.verify(&k1).await.expect("k1");
    assert_eq!(jwks.fetches(), 1);
    // The AS rotates in k2; a token naming it right away finds the kept set (fetched
    // under the interval ago) without it.
    jwks.set(vec![
        jwk("rsa1", Some("k1"), Some("RS256")),
        jwk("rsa2", Some("k2"), Some("RS256")),
    ]);
    assert_eq!(
        invalid(verifier.verify(&k2).await),
        "the JWKS has no key \"k2\""
    );
    // A flood of made-up kids within the interval fetches nothing.
    for token in &made_up {
        assert!(invalid(verifier.verify(token).await).contains("has no key"));
    }
    assert_eq!(jwks.fetches(), 1);
    // Once the interval has passed, the next unknown kid fetches again, and k2 verifies.
    tokio::time::sleep(past_it).await;
    verifier.verify(&k2).await.expect("k2 after the refetch");
    assert_eq!(jwks.fetches(), 2);
    verifier.verify(&k2).await.expect("k2 kept");
    verifier.verify(&k1).await.expect("k1 kept");
    assert_eq!(jwks.fetches(), 2);
    // Past the interval, a kid that is still unknown costs one fetch, then is invalid.
    tokio::time::sleep(past_it).await;
    assert_eq!(
        invalid(verifier.verify(&made_up[0]).await),
        "the JWKS has no key \"x0\""
    );
    assert_eq!(jwks.fetches(), 3);
}

#[tokio::test]
async fn concurrent_verifications_share_one_fetch() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let arrived = Arc::new(tokio::sync::Notify::new());
    let document = json!({"keys": [jwk("rsa1", Some("k1"), Some("RS256"))]}).to_string();
    let (g, a) = (Arc::clone(&gate), Arc::clone(&arrived));
    let stub = Stub::start(move |_: Seen| {
        let (gate, arrived, body) = (Arc::clone(&g), Arc::clone(&a), document.clone());
        async move {
            arrived.notify_one();
            gate.acquire().await.expect("open").forget();
            (200, "application/json", body.into_bytes())
        }
    })
    .await;
    let verifier = Arc::new(
        JwtVerifier::new(ISSUER)
            .jwks_uri(format!("{}/jwks", stub.url))
            .refetch_interval(Duration::ZERO),
    );
    let token = Arc::new(rs256(json!({})));
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let (verifier, token) = (Arc::clone(&verifier), Arc::clone(&token));
            tokio::spawn(async move { verifier.verify(&token).await })
        })
        .collect();
    arrived.notified().await;
    gate.add_permits(100);
    for task in tasks {
        task.await.expect("joins").expect("verifies");
    }
    assert_eq!(stub.hits(), 1, "one fetch served all twenty");
}

#[tokio::test]
async fn an_unreachable_jwks_spares_the_kept_keys() {
    let jwks = usual().await;
    let verifier = jwks.verifier().refetch_interval(Duration::ZERO);
    verifier.verify(&rs256(json!({}))).await.expect("k1");
    jwks.down(true);
    verifier
        .verify(&rs256(json!({})))
        .await
        .expect("k1 is kept");
    let k2 = sign(
        "rsa2",
        Algorithm::RS256,
        Some("k2"),
        None,
        &claims(json!({})),
    );
    let why = unavailable(verifier.verify(&k2).await);
    assert!(why.ends_with("/jwks: it answered HTTP 503"), "{why}");
    // An answer that is no JWKS: the same, and the kept keys still serve.
    jwks.down(false);
    jwks.set_raw(json!({"not": "a jwks"}));
    let why = unavailable(verifier.verify(&k2).await);
    assert!(why.ends_with("it is not a JWKS (no keys array)"), "{why}");
    verifier
        .verify(&rs256(json!({})))
        .await
        .expect("k1 is still kept");
    // Back, with k2.
    jwks.set(vec![
        jwk("rsa1", Some("k1"), Some("RS256")),
        jwk("rsa2", Some("k2"), Some("RS256")),
    ]);
    verifier
        .verify(&k2)
        .await
        .expect("k2 once the JWKS answers");
    // A fetch that removes k1 drops it.
    jwks.set(vec![jwk("rsa2", Some("k2"), Some("RS256"))]);
    let made_up = sign(
        "rsa2",
        Algorithm::RS256,
        Some("x"),
        None,
        &claims(json!({})),
    );
    invalid(verifier.verify(&made_up).await);
    assert_eq!(
        invalid(verifier.verify(&rs256(json!({}))).await),
        "the JWKS has no key \"k1\""
    );
}

#[tokio::test]
async fn a_failed_fetch_is_not_retried_within_the_interval() {
    let jwks = usual().await;
    jwks.down(true);
    let verifier = jwks.verifier();
    let why = unavailable(verifier.verify(&rs256(json!({}))).await);
    assert!(why.contains("HTTP 503"), "{why}");
    jwks.down(false);
    let again = unavailable(verifier.verify(&rs256(json!({}))).await);
    assert_eq!(again, why, "the last failure stands for the interval");
    assert_eq!(jwks.fetches(), 1);
    let warm = verifier
        .warm()
        .await
        .expect_err("still within the interval");
    assert_eq!(warm, TokenError::Unavailable(why));
}

#[tokio::test]
async fn warm_fetches_once_and_reports_trouble() {
    let jwks = usual().await;
    let verifier = jwks.verifier();
    verifier.warm().await.expect("the keys are in hand");
    verifier.warm().await.expect("still");
    assert_eq!(jwks.fetches(), 1);
    verifier
        .verify(&rs256(json!({})))
        .await
        .expect("no fetch needed");
    assert_eq!(jwks.fetches(), 1);

    for (verifier, expected) in [
        (
            JwtVerifier::new("http://as.example.com"),
            "plain http is allowed only to a loopback host",
        ),
        (
            JwtVerifier::new(ISSUER).jwks_uri("http://10.0.0.1/jwks"),
            "plain http is allowed only to a loopback host",
        ),
        (JwtVerifier::new("as.example.com"), "not an https URL"),
    ] {
        let why = match verifier.warm().await {
            Err(TokenError::Unavailable(why)) => why,
            other => panic!("{verifier:?}: {other:?}"),
        };
        assert!(why.starts_with("JwtVerifier's configuration: "), "{why}");
        assert!(why.contains(expected), "{why}");
        let token = rs256(json!({}));
        assert_eq!(
            verifier.verify(&token).await,
            Err(TokenError::Unavailable(why))
        );
    }
    // With a JWKS URL configured, the issuer is only compared, never fetched.
    let verifier = JwtVerifier::new("urn:example:issuer").jwks_uri(jwks.url());
    let token = rs256(json!({"iss": "urn:example:issuer"}));
    verifier.verify(&token).await.expect("a URN issuer");
}

#[tokio::test]
async fn the_jwks_is_found_through_the_issuers_metadata() {
    let keys = json!({"keys": [jwk("rsa1", Some("k1"), Some("RS256"))]}).to_string();
    let own_url = Arc::new(OnceLock::<String>::new());
    let wrong_issuer = Arc::new(AtomicBool::new(false));
    let (url, wrong) = (Arc::clone(&own_url), Arc::clone(&wrong_issuer));
    let stub = Stub::start(move |seen: Seen| {
        let url = url.get().cloned().unwrap_or_default();
        let issuer = if wrong.load(Ordering::SeqCst) {
            format!("{url}/other")
        } else {
            url.clone()
        };
        let answer: Answer = match seen.path.as_str() {
            "/.well-known/oauth-authorization-server" => (404, "application/json", b"{}".to_vec()),
            "/.well-known/openid-configuration" => (
                200,
                "application/json",
                json!({"issuer": issuer, "jwks_uri": format!("{url}/keys")})
                    .to_string()
                    .into_bytes(),
            ),
            "/keys" => (200, "application/json", keys.clone().into_bytes()),
            _ => (404, "application/json", b"{}".to_vec()),
        };
        async move { answer }
    })
    .await;
    own_url.set(stub.url.clone()).expect("set once");
    let issuer = stub.url.clone();
    let token = rs256(json!({"iss": issuer}));
    let verifier = JwtVerifier::new(issuer.clone());
    verifier
        .verify(&token)
        .await
        .expect("found through OIDC discovery");
    let paths: Vec<String> = stub.seen().into_iter().map(|s| s.path).collect();
    assert_eq!(
        paths,
        [
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
            "/keys"
        ]
    );
    // Metadata naming another issuer is not believed.
    wrong_issuer.store(true, Ordering::SeqCst);
    let why = unavailable(JwtVerifier::new(issuer).verify(&token).await);
    assert!(why.contains("names another issuer"), "{why}");
}

#[tokio::test]
async fn a_jwks_over_the_size_cap_is_refused() {
    let jwks = usual().await;
    let verifier = jwks.verifier().max_response_bytes(100);
    let why = unavailable(verifier.verify(&rs256(json!({}))).await);
    assert!(
        why.ends_with("its answer is larger than 100 bytes"),
        "{why}"
    );
}

#[tokio::test]
async fn critical_extensions_and_bound_tokens_are_refused() {
    let jwks = usual().await;
    let verifier = jwks.verifier();
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("k1".into());
    header.crit = Some(vec!["b64".into()]);
    crypto_provider().expect("a provider");
    let key = EncodingKey::from_rsa_der(&private_der("rsa1"));
    let token = encode(&header, &claims(json!({})), &key).expect("signs");
    assert_eq!(
        invalid(verifier.verify(&token).await),
        "its header names critical extensions presa does not implement (crit [\"b64\"])"
    );
    let bound = rs256(json!({"cnf": {"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}}));
    assert_eq!(invalid(verifier.verify(&bound).await), SENDER_CONSTRAINED);
}

#[tokio::test]
async fn odd_header_and_claim_values_are_refused_or_read_without_panicking() {
    let jwks = usual().await;
    let verifier = jwks.verifier();
    // A `typ` as long as `application/at+jwt` with a character across byte 12.
    let typ = "applicationéat+jw";
    assert_eq!(typ.len(), "application/at+jwt".len());
    assert!(!typ_accepted(Some(typ), false));
    let token = sign(
        "rsa1",
        Algorithm::RS256,
        Some("k1"),
        Some(typ),
        &claims(json!({})),
    );
    assert!(invalid(verifier.verify(&token).await).contains("not that of an access token"));
    // An `exp` at the end of time: valid, and no expiry presa can represent.
    let far = verifier
        .verify(&rs256(json!({"exp": u64::MAX})))
        .await
        .expect("far in the future");
    assert_eq!(far.expires_at, None);
}

#[test]
fn a_jwks_is_kept_up_to_its_bound() {
    let document = |n: usize| {
        json!({"keys": (0..n)
            .map(|i| jwk("ed25519", Some(&format!("d{i}")), None))
            .collect::<Vec<_>>()})
    };
    assert_eq!(
        parse_jwks(&document(MAX_KEYS)).map(|k| k.len()),
        Ok(MAX_KEYS)
    );
    let kept = parse_jwks(&document(MAX_KEYS + 1)).expect("a JWKS");
    assert_eq!(kept.len(), MAX_KEYS);
    assert_eq!(kept[MAX_KEYS - 1].kid.as_deref(), Some("d31"));
}

#[tokio::test]
async fn one_deadline_covers_finding_and_fetching_the_keys() {
    // Each metadata place answers 404 after more than half the deadline of one exchange:
    // three in turn would pass it several times over, but the search and the fetch
    // share one deadline.
    let stub = Stub::start(|_: Seen| async {
        tokio::time::sleep(Duration::from_millis(250)).await;
        (404, "application/json", b"{}".to_vec())
    })
    .await;
    let verifier = JwtVerifier::new(format!("{}/t", stub.url)).timeout(Duration::from_millis(400));
    let started = Instant::now();
    let why = unavailable(verifier.verify(&rs256(json!({}))).await);
    assert!(why.ends_with("not fetched within 400ms"), "{why}");
    assert!(
        started.elapsed() < Duration::from_millis(700),
        "{:?}",
        started.elapsed()
    );
    assert!(stub.hits() <= 2, "the search went on past its deadline");
}
