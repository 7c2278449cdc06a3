//! The JSON-RPC envelope over Streamable HTTP (wire section 1, section 13.2 steps 6 to 8,
//! errata W-1 and W-8): `jsonrpc`, ids, batches, unparsable bodies, params, posted
//! responses and notifications. Every error asserts the HTTP status, the code, and the
//! echoed id or the absence of the `id` member; every body is schema-checked.

use crate::http_util::{BASE_HEADERS, result};
use presa_tests::http::Harness;
use presa_tests::{VERSION, fixture, raw_value_chain, request, with_meta};
use serde_json::{Value, json};

fn discover_with_id(id: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "server/discover", "params": with_meta(json!({}))})
}

#[tokio::test]
async fn wrong_jsonrpc_version_is_invalid_request_with_id() {
    let h = Harness::start(fixture()).await;
    let mut msg = request(11, "server/discover", json!({}));
    msg["jsonrpc"] = json!("1.0");
    h.post_unchecked(&msg, &[])
        .await
        .assert_error(400, -32600, Some(json!(11)));
    msg["jsonrpc"] = json!(2.0);
    h.post_unchecked(&msg, &[])
        .await
        .assert_error(400, -32600, Some(json!(11)));
}

#[tokio::test]
async fn missing_jsonrpc_is_invalid_request_with_id() {
    let h = Harness::start(fixture()).await;
    let mut msg = request("abc", "server/discover", json!({}));
    msg.as_object_mut().expect("object").remove("jsonrpc");
    h.post_unchecked(&msg, &[])
        .await
        .assert_error(400, -32600, Some(json!("abc")));
}

#[tokio::test]
async fn unreadable_ids_get_invalid_request_without_id_member() {
    let h = Harness::start(fixture()).await;
    for id in [
        json!(null),
        json!(1.5),
        json!(true),
        json!({"a": 1}),
        json!([1]),
    ] {
        let r = h.post_unchecked(&discover_with_id(id.clone()), &[]).await;
        r.assert_error(400, -32600, None);
        assert!(
            r.response()
                .as_object()
                .is_some_and(|m| !m.contains_key("id")),
            "no id member for id {id}: {}",
            r.body
        );
    }
}

#[tokio::test]
async fn over_long_string_id_is_refused_but_echoed() {
    let h = Harness::start(fixture()).await;
    let long = "x".repeat(257);
    h.post(&discover_with_id(json!(long)), &[])
        .await
        .assert_error(400, -32600, Some(json!(long)));
}

#[tokio::test]
async fn id_length_is_counted_in_bytes() {
    let h = Harness::start(fixture()).await;
    // 128 two-byte characters: 256 bytes, accepted.
    let ok = "\u{e9}".repeat(128);
    let r = h.post(&discover_with_id(json!(ok)), &[]).await;
    result(&r);
    assert_eq!(r.response()["id"], json!(ok));
    // 129 two-byte characters: 258 bytes, refused and echoed.
    let long = "\u{e9}".repeat(129);
    h.post(&discover_with_id(json!(long)), &[])
        .await
        .assert_error(400, -32600, Some(json!(long)));
}

#[tokio::test]
async fn id_of_256_bytes_and_int64_bounds_are_accepted() {
    let h = Harness::start(fixture()).await;
    for id in [
        json!("y".repeat(256)),
        json!(i64::MAX),
        json!(i64::MIN),
        json!(0),
        json!(""),
    ] {
        let r = h.post(&discover_with_id(id.clone()), &[]).await;
        result(&r);
        assert_eq!(r.response()["id"], id);
    }
}

#[tokio::test]
async fn integer_id_beyond_int64_is_refused_and_echoed() {
    let h = Harness::start(fixture()).await;
    let id = json!(u64::MAX);
    h.post(&discover_with_id(id.clone()), &[])
        .await
        .assert_error(400, -32600, Some(id));
}

#[tokio::test]
async fn batch_array_is_invalid_request_without_id() {
    let h = Harness::start(fixture()).await;
    let batch = json!([request(1, "server/discover", json!({}))]);
    let r = h.post_raw_unchecked(batch.to_string(), BASE_HEADERS).await;
    r.assert_error(400, -32600, None);
    let r = h.post_raw_unchecked("[]", BASE_HEADERS).await;
    r.assert_error(400, -32600, None);
}

#[tokio::test]
async fn json_that_is_not_an_object_is_invalid_request_without_id() {
    let h = Harness::start(fixture()).await;
    for body in ["42", "\"server/discover\"", "null", "true"] {
        h.post_raw_unchecked(body, BASE_HEADERS)
            .await
            .assert_error(400, -32600, None);
    }
}

#[tokio::test]
async fn unparsable_json_is_parse_error_without_id() {
    let h = Harness::start(fixture()).await;
    for body in [
        "{",
        "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ",
        "not json",
        "",
        "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"server/discover\"} {}",
    ] {
        h.post_raw_unchecked(body, BASE_HEADERS)
            .await
            .assert_error(400, -32700, None);
    }
}

/// serde_json's private RawValue key is refused (-32700) wherever it stands; a chain of
/// such objects nested in one another, which serde_json's own `Value` parse reads afresh
/// level after level, overflowed the stack before. The server answers and goes on.
#[tokio::test]
async fn raw_value_keys_are_parse_errors_and_serving_goes_on() {
    let h = Harness::start(fixture()).await;
    let chain = raw_value_chain(15);
    let call = request(
        1,
        "tools/call",
        json!({"name": "test_simple_text", "arguments": {"x": "PLACE"}}),
    )
    .to_string();
    for arguments in [
        chain.as_str(),
        r#"{"$serde_json::private::RawValue":"{}"}"#,
        r#"{"a":1,"$serde_json::private::RawValue":"1"}"#,
    ] {
        let body = call.replacen(r#""PLACE""#, arguments, 1);
        h.post_raw_unchecked(body, BASE_HEADERS)
            .await
            .assert_error(400, -32700, None);
    }
    result(&h.post(&discover_with_id(json!(2)), &[]).await);
}

#[tokio::test]
async fn non_utf8_body_is_parse_error_without_id() {
    let h = Harness::start(fixture()).await;
    let mut body =
        br#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"x":""#.to_vec();
    body.extend_from_slice(&[0xff, 0xfe]);
    body.extend_from_slice(br#""}}"#);
    h.post_raw_unchecked(body, BASE_HEADERS)
        .await
        .assert_error(400, -32700, None);
}

#[tokio::test]
async fn leading_utf8_bom_is_accepted() {
    let h = Harness::start(fixture()).await;
    let msg = request(3, "server/discover", json!({}));
    let mut body = b"\xEF\xBB\xBF".to_vec();
    body.extend_from_slice(msg.to_string().as_bytes());
    let headers = presa_tests::http::standard_headers(&msg);
    let refs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let r = h.post_raw_unchecked(body, &refs).await;
    result(&r);
    assert_eq!(r.response()["id"], json!(3));
}

#[tokio::test]
async fn method_that_is_not_a_string_is_invalid_request_with_id() {
    let h = Harness::start(fixture()).await;
    let msg = json!({"jsonrpc": "2.0", "id": 4, "method": 5, "params": with_meta(json!({}))});
    h.post_unchecked(&msg, &[])
        .await
        .assert_error(400, -32600, Some(json!(4)));
}

#[tokio::test]
async fn object_without_method_or_result_is_invalid_request_with_id() {
    let h = Harness::start(fixture()).await;
    let msg = json!({"jsonrpc": "2.0", "id": 5});
    h.post_raw_unchecked(msg.to_string(), BASE_HEADERS)
        .await
        .assert_error(400, -32600, Some(json!(5)));
}

#[tokio::test]
async fn params_that_are_not_an_object_are_invalid_params_with_id() {
    let h = Harness::start(fixture()).await;
    for params in [json!([]), json!("x"), json!(1), json!(null)] {
        let msg = json!({"jsonrpc": "2.0", "id": 6, "method": "server/discover", "params": params});
        h.post_unchecked(&msg, &[])
            .await
            .assert_error(400, -32602, Some(json!(6)));
    }
}

#[tokio::test]
async fn posted_response_objects_get_202_and_no_body() {
    // Sent with the 2026-07-28 version header (a response without it, and without the
    // 2026-07-28 header, answers a legacy session's request: see `legacy_http`).
    let h = Harness::start(fixture()).await;
    let mut headers = BASE_HEADERS.to_vec();
    headers.push(("MCP-Protocol-Version", VERSION));
    for msg in [
        json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        json!({"jsonrpc": "2.0", "id": "x", "error": {"code": -32603, "message": "m"}}),
    ] {
        h.post_raw_unchecked(msg.to_string(), &headers)
            .await
            .assert_accepted();
    }
}

#[tokio::test]
async fn notification_gets_202_and_no_body() {
    let h = Harness::start(fixture()).await;
    let msg = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    h.post_unchecked(&msg, &[]).await.assert_accepted();
    let msg =
        json!({"jsonrpc": "2.0", "method": "notifications/something", "params": {"_meta": {}}});
    h.post_unchecked(&msg, &[]).await.assert_accepted();
}

#[tokio::test]
async fn well_formed_cancelled_notification_gets_202() {
    let h = Harness::start(fixture()).await;
    for params in [
        json!({"requestId": 7}),
        json!({"requestId": "r-1", "reason": "User cancelled"}),
    ] {
        let msg = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params});
        h.post(&msg, &[]).await.assert_accepted();
    }
}

#[tokio::test]
async fn notification_without_mcp_headers_is_accepted() {
    // Errata W-9: header requirements for notification POSTs are not defined, so only
    // headers that are present are checked: no Mcp-Method here, only the version header
    // (as the TypeScript SDK sends it). A notification without the version header either
    // is a legacy session's (see `legacy_http`).
    let h = Harness::start(fixture()).await;
    let msg =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    let mut headers = BASE_HEADERS.to_vec();
    headers.push(("MCP-Protocol-Version", VERSION));
    h.post_raw_unchecked(msg.to_string(), &headers)
        .await
        .assert_accepted();
}

#[tokio::test]
async fn malformed_envelope_notification_gets_4xx_without_id() {
    // Errata W-8: a notification POST that cannot be accepted gets an HTTP error status.
    let h = Harness::start(fixture()).await;
    let msg = json!({"jsonrpc": "1.0", "method": "notifications/initialized"});
    h.post_unchecked(&msg, &[])
        .await
        .assert_error(400, -32600, None);
    let msg = json!({"method": "notifications/initialized"});
    h.post_unchecked(&msg, &[])
        .await
        .assert_error(400, -32600, None);
    let msg = json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1]});
    h.post_unchecked(&msg, &[])
        .await
        .assert_error(400, -32602, None);
}

#[tokio::test]
async fn cancelled_notification_with_bad_params_gets_4xx_without_id() {
    let h = Harness::start(fixture()).await;
    for params in [
        json!({}),
        json!({"requestId": null}),
        json!({"requestId": {"x": 1}}),
        json!({"requestId": 1.5}),
        json!({"requestId": "z".repeat(257)}),
        json!({"requestId": 1, "reason": 5}),
    ] {
        let msg = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params});
        h.post_unchecked(&msg, &[])
            .await
            .assert_error(400, -32602, None);
    }
}

#[tokio::test]
async fn notification_with_bad_meta_gets_4xx_without_id() {
    let h = Harness::start(fixture()).await;
    for meta in [json!("x"), json!({"bad key": 1})] {
        let msg = json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {"_meta": meta}});
        h.post_unchecked(&msg, &[])
            .await
            .assert_error(400, -32602, None);
    }
}

#[tokio::test]
async fn notification_with_mismatched_present_headers_gets_4xx_without_id() {
    // Errata W-9: headers that are present on a notification POST are still checked.
    let h = Harness::start(fixture()).await;
    let msg =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    h.post(&msg, &[("Mcp-Method", "notifications/other")])
        .await
        .assert_error(400, -32020, None);
    let msg = json!({"jsonrpc": "2.0", "method": "notifications/initialized",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
    h.post_unchecked(&msg, &[("MCP-Protocol-Version", "2025-06-18")])
        .await
        .assert_error(400, -32020, None);
}

#[tokio::test]
async fn string_and_integer_ids_are_echoed_exactly() {
    let h = Harness::start(fixture()).await;
    for id in [
        json!("req-\u{e9}-1"),
        json!(-3),
        json!(9_007_199_254_740_993_i64),
    ] {
        let r = h.post(&discover_with_id(id.clone()), &[]).await;
        result(&r);
        assert_eq!(r.response()["id"], id);
    }
}
