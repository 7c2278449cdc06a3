//! Bounds on `subscriptions/listen` streams that hold over every transport
//! (`SubscriptionConfig`): how many streams one principal, and all anonymous callers
//! together, may hold open, each at the bound and just past it (refused as the
//! transport's own stream cap refuses: -32603 `Too many open subscription streams; try
//! again later`, HTTP 503), a place freeing when its stream ends; and a stream's longest
//! life, past which the server ends it gracefully, as at shutdown. (That the end comes
//! exactly at the lifetime, not a moment before, is held with a paused clock in presa's
//! unit tests.)

use crate::subscriptions::{Client, KINDS, Kind, Next, PATIENCE, SUB_ID, builder, method};
use presa::{Server, SubscriptionConfig};
use presa_tests::wait::{Deadline, until};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// What a listen past a bound is refused with.
const TOO_MANY: &str = "Too many open subscription streams; try again later";

/// A server with `config`, whose principal is the `x-principal` header over HTTP and,
/// when `stdio_principal` is given, that name for a caller without headers (stdio).
fn limited(config: SubscriptionConfig, stdio_principal: Option<&'static str>) -> Server {
    builder("subs")
        .resource_notifications(true)
        .principal(move |headers| match headers {
            Some(headers) => headers
                .get("x-principal")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            None => stdio_principal.map(str::to_owned),
        })
        .subscriptions(config)
        .build()
        .expect("builds")
}

fn tools() -> Value {
    json!({"notifications": {"toolsListChanged": true}})
}

/// Listens as `principal` (over HTTP; stdio sends no headers), which must be acknowledged.
async fn opens(c: &mut Client, id: Value, principal: &[(&str, &str)]) {
    if let Err(got) = c.try_listen(id.clone(), tools(), principal).await {
        panic!("{:?}: listen {id} was refused: {got:?}", c.kind);
    }
}

/// Listens as `principal`, which must be refused past the bound.
async fn refused(c: &mut Client, id: Value, principal: &[(&str, &str)]) {
    match c.try_listen(id.clone(), tools(), principal).await {
        Ok(ack) => panic!(
            "{:?}: listen {id} was accepted past the bound: {ack}",
            c.kind
        ),
        Err(got) => {
            let error = got.error(-32603, 503);
            assert_eq!(error["message"], TOO_MANY, "{error}");
            assert_eq!(got.response()["id"], id);
        }
    }
}

/// Listens as `principal` until it is acknowledged: a place frees once the server has
/// seen a stream end (a refusal until then), which a place never given back fails at the
/// deadline.
async fn opens_once_freed(c: &mut Client, first_id: i64, principal: &[(&str, &str)]) -> Value {
    let deadline = Deadline::new("a place frees once a stream ends");
    let mut id = first_id;
    loop {
        match c.try_listen(json!(id), tools(), principal).await {
            Ok(_) => return json!(id),
            Err(got) => {
                got.error(-32603, 503);
                deadline.tick(format!("{:?}", got.messages)).await;
            }
        }
        id += 1;
    }
}

/// Callers without a principal (every caller of a server without a principal function,
/// every stdio caller) share one bound: the second stream is accepted, the third is
/// refused and not opened; once a stream ends, one more fits, and no more.
#[tokio::test]
async fn anonymous_callers_share_one_bound() {
    for kind in KINDS {
        let server = limited(SubscriptionConfig::default().max_anonymous(2), None);
        let mut c = Client::start(kind, &server).await;
        opens(&mut c, json!("a"), &[]).await;
        opens(&mut c, json!("b"), &[]).await;
        refused(&mut c, json!("c"), &[]).await;
        assert_eq!(
            server.open_streams(),
            2,
            "{kind:?}: the refused stream is not open"
        );
        // Other requests are not bounded by it.
        c.ok(1, "tools/list", json!({})).await;
        c.end_listen(&json!("a")).await;
        opens_once_freed(&mut c, 100, &[]).await;
        refused(&mut c, json!("d"), &[]).await;
        assert_eq!(server.open_streams(), 2, "{kind:?}");
    }
}

/// Each principal has a bound of its own, apart from other principals' and from the
/// anonymous callers'.
#[tokio::test]
async fn each_principal_has_a_bound_of_its_own() {
    let server = limited(SubscriptionConfig::default().max_per_principal(2), None);
    let mut c = Client::start(Kind::Http, &server).await;
    let alice: &[(&str, &str)] = &[("x-principal", "alice")];
    let bob: &[(&str, &str)] = &[("x-principal", "bob")];
    opens(&mut c, json!("alice-1"), alice).await;
    opens(&mut c, json!("alice-2"), alice).await;
    refused(&mut c, json!("alice-3"), alice).await;
    opens(&mut c, json!("bob-1"), bob).await;
    opens(&mut c, json!("bob-2"), bob).await;
    refused(&mut c, json!("bob-3"), bob).await;
    // The anonymous callers' bound is none by default: the transport's alone.
    for id in 0..5 {
        opens(&mut c, json!(format!("anonymous-{id}")), &[]).await;
    }
    assert_eq!(server.open_streams(), 9);
    c.end_listen(&json!("alice-1")).await;
    opens_once_freed(&mut c, 100, alice).await;
    refused(&mut c, json!("alice-4"), alice).await;
    refused(&mut c, json!("bob-4"), bob).await;
}

/// The bound holds over stdio for a principal that the principal function names
/// without headers.
#[tokio::test]
async fn a_principal_named_for_stdio_is_bounded_there() {
    let server = limited(
        SubscriptionConfig::default().max_per_principal(1),
        Some("local"),
    );
    let mut c = Client::start(Kind::Stdio, &server).await;
    opens(&mut c, json!(1), &[]).await;
    refused(&mut c, json!(2), &[]).await;
    c.end_listen(&json!(1)).await;
    opens_once_freed(&mut c, 100, &[]).await;
}

/// Asserts that `m` is the server's graceful end of stream `id`: over HTTP the empty
/// listen result, then the end of the body; over stdio `notifications/cancelled` for the
/// listen id.
async fn assert_ended(c: &mut Client, m: &Value, id: &Value) {
    match c.kind {
        Kind::Http => {
            assert!(m.get("method").is_none(), "the listen result: {m}");
            assert_eq!(m["id"], *id, "{m}");
            assert_eq!(m["result"]["_meta"][SUB_ID], *id, "{m}");
            assert!(
                matches!(c.next(id, PATIENCE).await, Next::End),
                "the stream closes after the listen result"
            );
        }
        Kind::Stdio => {
            assert_eq!(method(m), "notifications/cancelled", "{m}");
            assert_eq!(m["params"]["requestId"], *id, "{m}");
        }
    }
}

/// A stream with a longest life is ended gracefully once it is over, never before, and
/// the client can listen anew.
#[tokio::test]
async fn a_stream_ends_gracefully_once_its_lifetime_is_over() {
    const LIFE: Duration = Duration::from_millis(400);
    for kind in KINDS {
        let server = limited(SubscriptionConfig::default().max_lifetime(Some(LIFE)), None);
        let mut c = Client::start(kind, &server).await;
        let id = json!("short");
        let began = Instant::now();
        opens(&mut c, id.clone(), &[]).await;
        let m = c.next(&id, PATIENCE).await.msg("the end of the stream");
        let lived = began.elapsed();
        assert!(
            lived >= LIFE,
            "{kind:?}: ended after {lived:?}, before {LIFE:?}"
        );
        assert_ended(&mut c, &m, &id).await;
        until("the stream is gone", || server.open_streams() == 0).await;
        // The client listens anew: another stream, with a whole life of its own.
        opens(&mut c, json!("again"), &[]).await;
        assert_eq!(server.open_streams(), 1, "{kind:?}");
    }
}
