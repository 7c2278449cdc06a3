//! The introspection verifier against a loopback stub endpoint that records what it is
//! sent and answers as each test needs.

use super::*;
use crate::auth::fetch::tests::{Answer, Seen, Stub, invalid, unavailable};
use base64::Engine as _;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const ISSUER: &str = "https://as.example.com";
const RESOURCE: &str = "https://mcp.example.com/mcp";
const TOKEN: &str = "opaque-token-1";

/// A stub answering every request with `answer`.
async fn answering(answer: Answer) -> Stub {
    Stub::start(move |_: Seen| {
        let answer = answer.clone();
        async move { answer }
    })
    .await
}

fn json_answer(body: Value) -> Answer {
    (200, "application/json", body.to_string().into_bytes())
}

fn verifier(stub: &Stub) -> IntrospectionVerifier {
    IntrospectionVerifier::with_endpoint(format!("{}/introspect", stub.url), "rs", "s3cret")
        .issuer(ISSUER)
}

fn active() -> Value {
    json!({
        "active": true,
        "token_type": "Bearer",
        "iss": ISSUER,
        "sub": "ada",
        "client_id": "app",
        "aud": RESOURCE,
        "scope": "notes:read notes:write",
        "exp": 4_000_000_000_u64,
    })
}

#[tokio::test]
async fn an_active_answer_becomes_the_verified_token() {
    let stub = answering(json_answer(active())).await;
    let verified = verifier(&stub).verify(TOKEN).await.expect("active");
    assert_eq!(verified.subject.as_deref(), Some("ada"));
    assert_eq!(verified.client_id.as_deref(), Some("app"));
    assert_eq!(verified.scopes, ["notes:read", "notes:write"]);
    assert_eq!(verified.audience, [RESOURCE]);
    assert_eq!(verified.issuer.as_deref(), Some(ISSUER));
    assert_eq!(
        verified.expires_at,
        Some(std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(4_000_000_000))
    );
    assert!(!verified.claims.contains_key("active"));
    assert_eq!(verified.claims["token_type"], "Bearer");
    // What was sent: the token with its hint, authenticated with HTTP Basic.
    let seen = stub.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].path, "/introspect");
    assert_eq!(
        seen[0].body,
        "token=opaque-token-1&token_type_hint=access_token"
    );
    let basic = base64::engine::general_purpose::STANDARD.encode("rs:s3cret");
    assert_eq!(seen[0].authorization, Some(format!("Basic {basic}")));
}

#[tokio::test]
async fn client_secret_post_puts_the_credentials_in_the_form() {
    let stub = answering(json_answer(active())).await;
    verifier(&stub)
        .client_authentication(ClientAuthentication::SecretPost)
        .verify(TOKEN)
        .await
        .expect("active");
    let seen = stub.seen();
    assert_eq!(
        seen[0].body,
        "token=opaque-token-1&token_type_hint=access_token&client_id=rs&client_secret=s3cret"
    );
    assert_eq!(seen[0].authorization, None);
}

#[tokio::test]
async fn answers_the_token_fails_are_invalid() {
    for (answer, expected) in [
        (
            json!({"active": false}),
            "the authorization server says it is not active".to_owned(),
        ),
        (
            json!({"active": false, "sub": "ada"}),
            "the authorization server says it is not active".to_owned(),
        ),
        (
            {
                let mut a = active();
                a["token_type"] = json!("DPoP");
                a
            },
            "its token_type \"DPoP\" is not Bearer".to_owned(),
        ),
        (
            {
                let mut a = active();
                a["cnf"] = json!({"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"});
                a
            },
            SENDER_CONSTRAINED.to_owned(),
        ),
        (
            {
                let mut a = active();
                a["iss"] = json!("https://evil.example.com");
                a
            },
            "its iss \"https://evil.example.com\" is not the issuer \"https://as.example.com\""
                .to_owned(),
        ),
    ] {
        let stub = answering(json_answer(answer.clone())).await;
        assert_eq!(
            invalid(verifier(&stub).verify(TOKEN).await),
            expected,
            "{answer}"
        );
    }
    // Without `iss` in the answer, or without an issuer configured, there is nothing
    // to compare.
    let mut no_iss = active();
    no_iss.as_object_mut().expect("an object").remove("iss");
    let stub = answering(json_answer(no_iss)).await;
    verifier(&stub).verify(TOKEN).await.expect("no iss");
    let mut elsewhere = active();
    elsewhere["iss"] = json!("https://elsewhere.example.com");
    let stub = answering(json_answer(elsewhere)).await;
    IntrospectionVerifier::with_endpoint(format!("{}/introspect", stub.url), "rs", "s3cret")
        .verify(TOKEN)
        .await
        .expect("no issuer configured");
}

#[tokio::test]
async fn an_endpoint_in_trouble_makes_the_token_uncheckable() {
    for (answer, expected) in [
        (
            (
                401,
                "application/json",
                b"{\"error\":\"invalid_client\"}".to_vec(),
            ),
            "/introspect: it answered HTTP 401",
        ),
        (
            (500, "application/json", b"{}".to_vec()),
            "/introspect: it answered HTTP 500",
        ),
        (
            (200, "text/html", b"<html>".to_vec()),
            "its answer is not JSON (content-type \"text/html\")",
        ),
        (
            json_answer(json!({"active": "true"})),
            "the introspection answer has no boolean active",
        ),
        (
            json_answer(json!({"sub": "ada"})),
            "the introspection answer has no boolean active",
        ),
        (
            json_answer(json!([true])),
            "the introspection answer is not a JSON object",
        ),
    ] {
        let stub = answering(answer).await;
        let why = unavailable(verifier(&stub).verify(TOKEN).await);
        assert!(why.ends_with(expected), "{why}");
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let url = format!(
        "http://{}/introspect",
        listener.local_addr().expect("an address")
    );
    drop(listener);
    let why = unavailable(
        IntrospectionVerifier::with_endpoint(url, "rs", "s3cret")
            .verify(TOKEN)
            .await,
    );
    assert!(why.contains("no answer"), "{why}");
}

#[tokio::test]
async fn an_answer_over_the_cap_is_refused() {
    // `{"active":false,"pad":"…"}`: 25 bytes and the padding.
    let answer = |pad: usize| json!({"active": false, "pad": "x".repeat(pad)});
    assert_eq!(answer(11).to_string().len(), 36);
    let at = answering(json_answer(answer(11))).await;
    let cap = |stub: &Stub| verifier(stub).max_response_bytes(36);
    invalid(cap(&at).verify(TOKEN).await);
    let past = answering(json_answer(answer(12))).await;
    let why = unavailable(cap(&past).verify(TOKEN).await);
    assert!(why.ends_with("its answer is larger than 36 bytes"), "{why}");
}

#[tokio::test]
async fn introspections_in_flight_are_bounded() {
    let gate = Arc::new(Semaphore::new(0));
    let arrived = Arc::new(Semaphore::new(0));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (g, a, i, m) = (
        Arc::clone(&gate),
        Arc::clone(&arrived),
        Arc::clone(&in_flight),
        Arc::clone(&most),
    );
    let stub = Stub::start(move |_: Seen| {
        let (gate, arrived, in_flight, most) = (
            Arc::clone(&g),
            Arc::clone(&a),
            Arc::clone(&i),
            Arc::clone(&m),
        );
        async move {
            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            arrived.add_permits(1);
            gate.acquire().await.expect("open").forget();
            in_flight.fetch_sub(1, Ordering::SeqCst);
            json_answer(active())
        }
    })
    .await;
    let verifier = Arc::new(verifier(&stub).max_concurrent(2));
    let tasks: Vec<_> = (0..6)
        .map(|_| {
            let verifier = Arc::clone(&verifier);
            tokio::spawn(async move { verifier.verify(TOKEN).await })
        })
        .collect();
    // Two arrive (at the bound); nothing more does while they are held. A negative can
    // only be watched for a while: a third introspection would go out at once, so a
    // window many times a loopback exchange shows it.
    arrived.acquire_many(2).await.expect("open").forget();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(stub.hits(), 2, "a third introspection went out");
    gate.add_permits(6);
    for task in tasks {
        task.await.expect("joins").expect("active");
    }
    assert_eq!(stub.hits(), 6);
    assert_eq!(most.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn waiting_for_a_turn_counts_against_the_timeout() {
    let stub = Stub::start(|_: Seen| async {
        std::future::pending::<()>().await;
        json_answer(active())
    })
    .await;
    let verifier = Arc::new(
        verifier(&stub)
            .max_concurrent(1)
            .timeout(Duration::from_millis(300)),
    );
    let started = Instant::now();
    let (first, second) = tokio::join!(verifier.verify(TOKEN), verifier.verify(TOKEN));
    // The first's exchange and the verification's deadline end at once: either says so.
    for result in [first, second] {
        let why = unavailable(result);
        assert!(why.contains(" within 300ms"), "{why}");
    }
    // Both end by the one deadline (the second's wait for a turn included), well under
    // two exchanges' worth.
    assert!(
        started.elapsed() < Duration::from_millis(550),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(stub.hits(), 1, "the second never had a turn");
}

#[tokio::test]
async fn the_endpoint_is_found_through_the_issuers_metadata_once() {
    let own_url = Arc::new(OnceLock::<String>::new());
    let url = Arc::clone(&own_url);
    let stub = Stub::start(move |seen: Seen| {
        let url = url.get().cloned().unwrap_or_default();
        let answer = match seen.path.as_str() {
            "/.well-known/oauth-authorization-server" => json_answer(json!({
                "issuer": url,
                "introspection_endpoint": format!("{url}/introspect"),
            })),
            "/introspect" => {
                let mut a = active();
                a["iss"] = json!(url);
                json_answer(a)
            }
            _ => (404, "application/json", b"{}".to_vec()),
        };
        async move { answer }
    })
    .await;
    own_url.set(stub.url.clone()).expect("set once");
    let verifier = IntrospectionVerifier::new(stub.url.clone(), "rs", "s3cret");
    verifier.warm().await.expect("found");
    verifier.verify(TOKEN).await.expect("active");
    verifier.verify("another-token").await.expect("active");
    let paths: Vec<String> = stub.seen().into_iter().map(|s| s.path).collect();
    assert_eq!(
        paths,
        [
            "/.well-known/oauth-authorization-server",
            "/introspect",
            "/introspect"
        ]
    );
}

#[tokio::test]
async fn a_failed_search_for_the_endpoint_stands_for_a_while() {
    let own_url = Arc::new(OnceLock::<String>::new());
    let url = Arc::clone(&own_url);
    // Metadata without an introspection endpoint.
    let stub = Stub::start(move |_: Seen| {
        let answer = json_answer(json!({"issuer": url.get()}));
        async move { answer }
    })
    .await;
    own_url.set(stub.url.clone()).expect("set once");
    let verifier = IntrospectionVerifier::new(stub.url.clone(), "rs", "s3cret");
    let why = unavailable(verifier.verify(TOKEN).await);
    assert!(why.ends_with("names no introspection_endpoint"), "{why}");
    assert_eq!(stub.hits(), 1);
    assert_eq!(unavailable(verifier.verify(TOKEN).await), why);
    assert_eq!(verifier.warm().await, Err(TokenError::Unavailable(why)));
    assert_eq!(stub.hits(), 1, "not searched again within the interval");
}

#[tokio::test]
async fn configuration_errors_are_reported() {
    for (verifier, expected) in [
        (
            IntrospectionVerifier::new("http://as.example.com", "rs", "s"),
            "plain http is allowed only to a loopback host",
        ),
        (
            IntrospectionVerifier::with_endpoint("http://10.0.0.1/introspect", "rs", "s"),
            "plain http is allowed only to a loopback host",
        ),
        (
            IntrospectionVerifier::new(ISSUER, "rs", "s").endpoint("/introspect"),
            "not an absolute URL",
        ),
    ] {
        let why = match verifier.warm().await {
            Err(TokenError::Unavailable(why)) => why,
            other => panic!("{verifier:?}: {other:?}"),
        };
        assert!(
            why.starts_with("IntrospectionVerifier's configuration: "),
            "{why}"
        );
        assert!(why.contains(expected), "{why}");
        assert_eq!(
            verifier.verify(TOKEN).await,
            Err(TokenError::Unavailable(why))
        );
    }
}

#[test]
fn the_secret_is_not_shown() {
    let verifier = IntrospectionVerifier::new(ISSUER, "rs", "hunter2").max_concurrent(0);
    let shown = format!("{verifier:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("max_concurrent: 1"), "{shown}");
}

#[tokio::test]
async fn the_search_for_the_endpoint_has_a_deadline() {
    // Each metadata place answers 404 after more than half the deadline of one exchange:
    // two in turn would pass it, so the search as a whole must end at the deadline, and
    // its failure stands.
    let stub = Stub::start(|_: Seen| async {
        tokio::time::sleep(Duration::from_millis(250)).await;
        (404, "application/json", b"{}".to_vec())
    })
    .await;
    let verifier = IntrospectionVerifier::new(format!("{}/t", stub.url), "rs", "s3cret")
        .timeout(Duration::from_millis(400));
    let started = Instant::now();
    let why = unavailable(verifier.verify(TOKEN).await);
    assert!(why.ends_with("not found within 400ms"), "{why}");
    assert!(
        started.elapsed() < Duration::from_millis(700),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(unavailable(verifier.verify(TOKEN).await), why);
    assert!(stub.hits() <= 2, "the search went on past its deadline");
}
