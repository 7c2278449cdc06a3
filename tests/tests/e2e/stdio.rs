//! stdio end to end (wire section 14), against the fixture as a child process.

use presa_tests::stdio::Session;
use serde_json::json;

#[tokio::test]
async fn discover_over_stdio() {
    let mut s = Session::fixture(env!("CARGO_BIN_EXE_fixture")).await;
    let m = s.call(1, "server/discover", json!({})).await;
    assert_eq!(m.len(), 1);
    assert!(s.finish().await);
}
