//! Streamable HTTP end to end (wire sections 1-9, 12, 13).

use presa_tests::http::Harness;
use presa_tests::{fixture, request};
use serde_json::json;

#[tokio::test]
async fn discover_over_http() {
    let h = Harness::start(fixture()).await;
    let r = h.call(1, "server/discover", json!({})).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.response()["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
}

#[tokio::test]
async fn unknown_method_is_404() {
    let h = Harness::start(fixture()).await;
    let r = h
        .post_unchecked(&request(7, "nope/nope", json!({})), &[])
        .await;
    r.assert_error(404, -32601, Some(json!(7)));
}
