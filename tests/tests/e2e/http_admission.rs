//! Request `_meta` admission over Streamable HTTP (wire section 2, section 13.4, errata
//! W-14 and W-16): each check with its code and HTTP status, the order of the checks, and
//! what must be accepted (no clientInfo, W3C trace keys, extension capabilities).

use crate::http_util::{meta_with, request_with_meta, result};
use presa_tests::http::Harness;
use presa_tests::{VERSION, fixture};
use serde_json::{Value, json};

const PV: &str = "io.modelcontextprotocol/protocolVersion";
const CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
const INFO: &str = "io.modelcontextprotocol/clientInfo";
const LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// A server/discover request whose `_meta` is the full valid one changed by `changes`.
fn discover(id: i64, changes: Value) -> Value {
    request_with_meta(id, "server/discover", json!({}), Some(meta_with(changes)))
}

#[tokio::test]
async fn empty_params_are_invalid_params_400() {
    let h = Harness::start(fixture()).await;
    let msg = request_with_meta(1, "server/discover", json!({}), None);
    h.post_unchecked(&msg, &[])
        .await
        .assert_error(400, -32602, Some(json!(1)));
}

#[tokio::test]
async fn absent_params_are_invalid_params_400() {
    let h = Harness::start(fixture()).await;
    let msg = json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover"});
    h.post_unchecked(&msg, &[])
        .await
        .assert_error(400, -32602, Some(json!(2)));
}

#[tokio::test]
async fn missing_protocol_version_is_invalid_params_400() {
    let h = Harness::start(fixture()).await;
    h.post_unchecked(&discover(3, json!({PV: null})), &[])
        .await
        .assert_error(400, -32602, Some(json!(3)));
}

#[tokio::test]
async fn protocol_version_not_a_string_is_invalid_params_400() {
    let h = Harness::start(fixture()).await;
    for v in [
        json!(20260728),
        json!(["2026-07-28"]),
        json!({"v": "2026-07-28"}),
    ] {
        h.post_unchecked(&discover(4, json!({ PV: v })), &[])
            .await
            .assert_error(400, -32602, Some(json!(4)));
    }
}

#[tokio::test]
async fn missing_client_capabilities_is_invalid_params_400() {
    let h = Harness::start(fixture()).await;
    h.post_unchecked(&discover(5, json!({CAPS: null})), &[])
        .await
        .assert_error(400, -32602, Some(json!(5)));
}

#[tokio::test]
async fn client_capabilities_not_an_object_is_invalid_params_400() {
    let h = Harness::start(fixture()).await;
    for caps in [json!("all"), json!([]), json!(true), json!(1)] {
        h.post_unchecked(&discover(6, json!({ CAPS: caps })), &[])
            .await
            .assert_error(400, -32602, Some(json!(6)));
    }
}

#[tokio::test]
async fn client_capability_sub_shapes_are_checked() {
    let h = Harness::start(fixture()).await;
    for caps in [
        json!({"roots": true}),
        json!({"sampling": "yes"}),
        json!({"sampling": {"tools": 1}}),
        json!({"elicitation": {"form": []}}),
        json!({"experimental": {"x": 1}}),
        json!({"extensions": {"noprefix": {}}}),
        json!({"extensions": {"com.example/ext": 1}}),
    ] {
        h.post_unchecked(&discover(7, json!({ CAPS: caps.clone() })), &[])
            .await
            .assert_error(400, -32602, Some(json!(7)));
    }
}

#[tokio::test]
async fn well_formed_client_capabilities_are_accepted() {
    let h = Harness::start(fixture()).await;
    for caps in [
        json!({}),
        json!({"roots": {}, "sampling": {"context": {}, "tools": {}}, "elicitation": {"form": {}, "url": {}}}),
        json!({"experimental": {"x": {}}, "extensions": {"com.example/ext": {"a": 1}}}),
    ] {
        result(&h.post(&discover(8, json!({ CAPS: caps })), &[]).await);
    }
}

#[tokio::test]
async fn meta_not_an_object_is_invalid_params_400() {
    let h = Harness::start(fixture()).await;
    for meta in [json!([]), json!("meta"), json!(1), json!(null)] {
        let msg = request_with_meta(9, "server/discover", json!({}), Some(meta));
        h.post_unchecked(&msg, &[])
            .await
            .assert_error(400, -32602, Some(json!(9)));
    }
}

#[tokio::test]
async fn invalid_meta_keys_are_invalid_params_400() {
    let h = Harness::start(fixture()).await;
    for key in ["bad key", "/x", "1a/x", "a..b/x", "-x", "x-", "a/b/c"] {
        let mut changes = serde_json::Map::new();
        changes.insert(key.to_owned(), json!(1));
        h.post(&discover(10, Value::Object(changes)), &[])
            .await
            .assert_error(400, -32602, Some(json!(10)));
    }
}

#[tokio::test]
async fn valid_meta_keys_and_trace_context_are_accepted() {
    let h = Harness::start(fixture()).await;
    let msg = discover(
        11,
        json!({
            "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "tracestate": "congo=t61rcWkgMzE",
            "baggage": "userId=alice",
            "com.example.mcp/custom": {"anything": [1, 2]},
            "plain_name": "x"
        }),
    );
    result(&h.post(&msg, &[]).await);
}

#[tokio::test]
async fn bad_progress_tokens_are_invalid_params_400() {
    let h = Harness::start(fixture()).await;
    for token in [
        json!({"t": 1}),
        json!("p".repeat(257)),
        json!(1.5),
        json!(true),
        json!(null),
        json!([1]),
    ] {
        let mut meta = meta_with(json!({}));
        meta["progressToken"] = token.clone();
        let msg = request_with_meta(12, "server/discover", json!({}), Some(meta));
        h.post_unchecked(&msg, &[])
            .await
            .assert_error(400, -32602, Some(json!(12)));
    }
}

#[tokio::test]
async fn good_progress_tokens_are_accepted() {
    let h = Harness::start(fixture()).await;
    for token in [json!("p".repeat(256)), json!(0), json!(i64::MAX), json!("")] {
        result(
            &h.post(&discover(13, json!({ "progressToken": token })), &[])
                .await,
        );
    }
}

#[tokio::test]
async fn bad_log_levels_are_invalid_params_400() {
    let h = Harness::start(fixture()).await;
    for level in [
        json!("verbose"),
        json!("WARNING"),
        json!(3),
        json!(null),
        json!({}),
    ] {
        let mut meta = meta_with(json!({}));
        meta[LEVEL] = level;
        let msg = request_with_meta(14, "server/discover", json!({}), Some(meta));
        h.post_unchecked(&msg, &[])
            .await
            .assert_error(400, -32602, Some(json!(14)));
    }
}

#[tokio::test]
async fn every_known_log_level_is_accepted() {
    let h = Harness::start(fixture()).await;
    for level in [
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    ] {
        result(&h.post(&discover(15, json!({ LEVEL: level })), &[]).await);
    }
}

#[tokio::test]
async fn bad_client_info_is_invalid_params_400() {
    let h = Harness::start(fixture()).await;
    for info in [
        json!("presa"),
        json!({}),
        json!({"name": "x"}),
        json!({"version": "1"}),
        json!({"name": 1, "version": "1"}),
        json!({"name": "x", "version": 1}),
        json!({"name": "x", "version": "1", "title": 5}),
        json!({"name": "x", "version": "1", "icons": "nope"}),
        json!({"name": "x", "version": "1", "icons": [{"mimeType": "image/png"}]}),
    ] {
        let mut meta = meta_with(json!({}));
        meta[INFO] = info;
        let msg = request_with_meta(16, "server/discover", json!({}), Some(meta));
        h.post_unchecked(&msg, &[])
            .await
            .assert_error(400, -32602, Some(json!(16)));
    }
}

#[tokio::test]
async fn missing_client_info_is_fine() {
    let h = Harness::start(fixture()).await;
    let r = h.post(&discover(17, json!({INFO: null})), &[]).await;
    result(&r);
    let msg = discover(
        18,
        json!({INFO: {"name": "c", "version": "1", "title": "C", "description": "d",
            "websiteUrl": "https://example.com", "icons": [{"src": "https://example.com/i.png"}]}}),
    );
    result(&h.post(&msg, &[]).await);
}

#[tokio::test]
async fn unsupported_version_in_header_and_body_is_32022_with_data() {
    let h = Harness::start(fixture()).await;
    let msg = discover(19, json!({PV: "v999.0.0"}));
    let r = h.post(&msg, &[("MCP-Protocol-Version", "v999.0.0")]).await;
    r.assert_error(400, -32022, Some(json!(19)));
    let data = &r.response()["error"]["data"];
    assert_eq!(data["requested"], json!("v999.0.0"));
    assert_eq!(data["supported"], json!([VERSION]));
}

#[tokio::test]
async fn header_version_differing_from_body_is_32020() {
    let h = Harness::start(fixture()).await;
    // Header 2026-07-28, body v999.0.0 (the runner's probe).
    let msg = discover(20, json!({PV: "v999.0.0"}));
    h.post(&msg, &[])
        .await
        .assert_error(400, -32020, Some(json!(20)));
    // Header v999.0.0, body 2026-07-28.
    let msg = discover(21, json!({}));
    h.post(&msg, &[("MCP-Protocol-Version", "v999.0.0")])
        .await
        .assert_error(400, -32020, Some(json!(21)));
    // Values differing only in case or padding are still different versions.
    let msg = discover(22, json!({PV: "2026-07-28 "}));
    h.post(&msg, &[])
        .await
        .assert_error(400, -32020, Some(json!(22)));
}

#[tokio::test]
async fn order_missing_header_before_missing_meta() {
    // The runner's order: a missing MCP-Protocol-Version header is reported first. (A
    // request with neither the header nor any 2026-07-28 `_meta` key is a legacy
    // session's, which `legacy_http` covers; this one carries `clientCapabilities`.)
    let h = Harness::start(fixture()).await;
    let meta = json!({"io.modelcontextprotocol/clientCapabilities": {}});
    let msg = request_with_meta(23, "server/discover", json!({}), Some(meta));
    h.post_unchecked(&msg, &[("MCP-Protocol-Version", "")])
        .await
        .assert_error(400, -32020, Some(json!(23)));
}

#[tokio::test]
async fn order_missing_body_version_is_32602_not_header_mismatch() {
    // With no version in the body there is nothing to compare the header with.
    let h = Harness::start(fixture()).await;
    let msg = discover(24, json!({PV: null}));
    h.post_unchecked(&msg, &[("MCP-Protocol-Version", "v999.0.0")])
        .await
        .assert_error(400, -32602, Some(json!(24)));
}

#[tokio::test]
async fn order_shape_checks_before_version_checks() {
    // Steps 2-4 (keys, progressToken, logLevel) run before step 6 and 7.
    let h = Harness::start(fixture()).await;
    let headers = [("MCP-Protocol-Version", "v999.0.0")];
    for changes in [
        json!({PV: "v999.0.0", "bad key": 1}),
        json!({PV: "v999.0.0", "progressToken": 1.5}),
        json!({PV: "v999.0.0", LEVEL: "loud"}),
    ] {
        h.post_unchecked(&discover(25, changes), &headers)
            .await
            .assert_error(400, -32602, Some(json!(25)));
    }
    // Not-a-string version (step 5) before the header comparison (step 6).
    h.post_unchecked(&discover(26, json!({PV: 1})), &[])
        .await
        .assert_error(400, -32602, Some(json!(26)));
}

#[tokio::test]
async fn order_version_checks_before_client_info_and_capabilities() {
    let h = Harness::start(fixture()).await;
    // Header mismatch (step 6) before clientInfo (8) and clientCapabilities (9).
    h.post_unchecked(
        &discover(27, json!({PV: "v999.0.0", INFO: 1, CAPS: null})),
        &[],
    )
    .await
    .assert_error(400, -32020, Some(json!(27)));
    // Unsupported version (step 7) before clientInfo (8) and clientCapabilities (9).
    let headers = [("MCP-Protocol-Version", "v999.0.0")];
    let r = h
        .post_unchecked(
            &discover(28, json!({PV: "v999.0.0", INFO: 1, CAPS: null})),
            &headers,
        )
        .await;
    r.assert_error(400, -32022, Some(json!(28)));
}

#[tokio::test]
async fn admission_runs_before_the_method_gate() {
    // An unknown method with invalid _meta is refused by admission (-32602), not -32601.
    let h = Harness::start(fixture()).await;
    let msg = request_with_meta(29, "nope/nope", json!({}), None);
    h.post_unchecked(&msg, &[])
        .await
        .assert_error(400, -32602, Some(json!(29)));
}

#[tokio::test]
async fn capabilities_are_per_request() {
    // A request that declared capabilities does not make the next one inherit them: each
    // request is admitted on its own `_meta` only.
    // The fixture's test_missing_capability asks for sampling: declared, the call is
    // asked for input; the same call declaring nothing right after is -32021, not
    // served with the capabilities the first request declared.
    let h = Harness::start(fixture()).await;
    let call = |id: i64, caps: Value| {
        request_with_meta(
            id,
            "tools/call",
            json!({"name": "test_missing_capability", "arguments": {}}),
            Some(meta_with(json!({CAPS: caps}))),
        )
    };
    let asked = h.post(&call(30, json!({"sampling": {}})), &[]).await;
    assert_eq!(
        result(&asked)["resultType"],
        "input_required",
        "{}",
        asked.body
    );
    let refused = h.post(&call(31, json!({})), &[]).await;
    refused.assert_error(400, -32021, Some(json!(31)));
    assert_eq!(
        refused.response()["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}}),
        "{}",
        refused.body
    );
    // And a request that leaves the capabilities out is refused on its own `_meta`.
    h.post_unchecked(&discover(32, json!({CAPS: null})), &[])
        .await
        .assert_error(400, -32602, Some(json!(32)));
}
