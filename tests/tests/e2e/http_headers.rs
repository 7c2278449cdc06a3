//! Streamable HTTP admission and header rules (wire sections 13.1 to 13.7, errata W-9,
//! W-12 and the "Earlier Streamable HTTP Revisions" rules): HTTP methods and paths,
//! Origin and Host, Content-Type, Accept, body size, MCP-Protocol-Version, Mcp-Method,
//! Mcp-Name and Mcp-Param-* mirrors. Every error asserts status, code and id.

use crate::http_util::{BASE_HEADERS, builder, first_text, result};
use presa::{HttpConfig, Prompt, PromptGet, PromptMessage, Tool, ToolCall};
use presa_tests::http::Harness;
use presa_tests::{fixture, request};
use reqwest::Method;
use serde_json::{Value, json};

fn discover(id: i64) -> Value {
    request(id, "server/discover", json!({}))
}

fn region_call(id: i64, arguments: Value) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": "custom_header_region", "arguments": arguments}),
    )
}

// ---- 13.1: one endpoint, POST only ----
//
// On a server that serves 2026-07-28 alone ("Earlier Streamable HTTP Revisions": GET and
// DELETE 405, `Mcp-Session-Id` ignored). A server that also serves legacy clients (the
// default, and the fixture) answers GET and DELETE as their sessions need: see
// `legacy_http`.

/// A server that serves 2026-07-28 clients only.
fn modern_only() -> presa::Server {
    builder()
        .tool(crate::http_util::text_tool("t", "text"))
        .legacy_clients(false)
        .build()
        .expect("builds")
}

#[tokio::test]
async fn get_is_405_with_allow_post_and_jsonrpc_body() {
    let h = Harness::start(modern_only()).await;
    let r = h
        .request(Method::GET, &h.url, &[("Accept", "text/event-stream")])
        .await;
    r.assert_error(405, -32600, None);
    assert_eq!(r.header("allow"), Some("POST"));
}

#[tokio::test]
async fn delete_is_405_with_allow_post_and_jsonrpc_body() {
    let h = Harness::start(modern_only()).await;
    let r = h
        .request(Method::DELETE, &h.url, &[("Mcp-Session-Id", "abc")])
        .await;
    r.assert_error(405, -32600, None);
    assert_eq!(r.header("allow"), Some("POST"));
}

#[tokio::test]
async fn put_and_patch_are_405() {
    let h = Harness::start(modern_only()).await;
    for m in [Method::PUT, Method::PATCH] {
        let r = h.request(m, &h.url, BASE_HEADERS).await;
        r.assert_error(405, -32600, None);
        assert_eq!(r.header("allow"), Some("POST"));
    }
    // Where legacy sessions are served, GET and DELETE are allowed too.
    let h = Harness::start(fixture()).await;
    for m in [Method::PUT, Method::PATCH] {
        let r = h.request(m, &h.url, BASE_HEADERS).await;
        r.assert_error(405, -32600, None);
        assert_eq!(r.header("allow"), Some("GET, POST, DELETE"));
    }
}

/// The Origin rule holds on every request (errata W-12): a disallowed Origin is 403
/// also where the answer would otherwise be 405 or 404; an allowed one changes nothing.
#[tokio::test]
async fn a_disallowed_origin_is_403_on_every_method_and_path() {
    let h = Harness::start(fixture()).await;
    let other = format!("{}/other", h.base);
    for (method, url) in [
        (Method::GET, &h.url),
        (Method::DELETE, &h.url),
        (Method::GET, &other),
        (Method::POST, &other),
    ] {
        let evil = h
            .request(
                method.clone(),
                url,
                &[("Origin", "http://evil.example.com")],
            )
            .await;
        evil.assert_error(403, -32600, None);
        // An allowed Origin changes nothing: 404 off the endpoint, and on it 400 for a
        // GET or DELETE that names no legacy session.
        let local = h
            .request(method.clone(), url, &[("Origin", "http://localhost:3000")])
            .await;
        let expected = if url == &h.url { 400 } else { 404 };
        assert_eq!(local.status, expected, "{method} {url}: {}", local.body);
    }
}

#[tokio::test]
async fn unknown_path_is_404_with_jsonrpc_body() {
    let h = Harness::start(fixture()).await;
    for path in ["/", "/mcp/extra", "/other"] {
        let url = format!("{}{path}", h.base);
        let r = h.request(Method::POST, &url, BASE_HEADERS).await;
        assert_eq!(r.status, 404, "{path}: {}", r.body);
        assert!(
            r.error_code().is_some(),
            "{path}: a JSON-RPC error body, got {:?}",
            r.body
        );
        assert!(r.response().get("id").is_none(), "{}", r.body);
        let r = h.request(Method::GET, &url, &[]).await;
        assert_eq!(r.status, 404, "{path}: {}", r.body);
        assert!(r.error_code().is_some(), "{path}: {:?}", r.body);
    }
}

#[tokio::test]
async fn configured_path_is_served() {
    let h = Harness::start_with(fixture(), HttpConfig::default().path("/custom/mcp")).await;
    assert!(h.url.ends_with("/custom/mcp"));
    result(&h.post(&discover(1), &[]).await);
    let r = h
        .request(Method::POST, &format!("{}/mcp", h.base), BASE_HEADERS)
        .await;
    assert_eq!(r.status, 404);
}

// ---- 13.2: Content-Type and Accept ----

#[tokio::test]
async fn wrong_content_type_is_415() {
    let h = Harness::start(fixture()).await;
    for ct in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/json-seq",
    ] {
        h.post(&discover(2), &[("Content-Type", ct)])
            .await
            .assert_error(415, -32600, None);
    }
    h.post(&discover(2), &[("Content-Type", "")])
        .await
        .assert_error(415, -32600, None);
}

#[tokio::test]
async fn content_type_with_parameters_is_accepted() {
    let h = Harness::start(fixture()).await;
    for ct in ["application/json; charset=utf-8", "Application/JSON"] {
        result(&h.post(&discover(3), &[("Content-Type", ct)]).await);
    }
}

#[tokio::test]
async fn missing_or_incomplete_accept_is_406() {
    let h = Harness::start(fixture()).await;
    for accept in [
        "application/json",
        "text/event-stream",
        "text/html",
        "application/*",
    ] {
        h.post(&discover(4), &[("Accept", accept)])
            .await
            .assert_error(406, -32600, None);
    }
    // An empty Accept value.
    let msg = discover(4);
    let mut headers = presa_tests::http::standard_headers(&msg);
    headers.retain(|(k, _)| k != "Accept");
    headers.push(("Accept".to_owned(), String::new()));
    let refs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    h.post_raw_unchecked(msg.to_string(), &refs)
        .await
        .assert_error(406, -32600, None);
}

#[tokio::test]
async fn absent_accept_is_406() {
    // reqwest adds `Accept: */*` when none is set, so this request goes over plain TCP.
    let h = Harness::start(fixture()).await;
    let msg = discover(5);
    let (status, body) = h
        .post_over_tcp_unchecked(
            &[
                ("Content-Type", "application/json"),
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "server/discover"),
            ],
            &msg.to_string(),
        )
        .await;
    assert_eq!(status, 406, "{body}");
    let reply: Value = serde_json::from_str(&body).expect("a JSON-RPC body");
    presa_tests::schema::check_response("", &reply);
    assert_eq!(reply["error"]["code"], json!(-32600));
    assert!(reply.get("id").is_none());
}

#[tokio::test]
async fn accept_in_any_order_or_split_is_accepted() {
    let h = Harness::start(fixture()).await;
    for accept in [
        "text/event-stream, application/json",
        "application/json;q=0.9, text/event-stream;q=0.5",
        // Media types are case-insensitive, and wildcards cover what they name.
        "APPLICATION/JSON, Text/Event-Stream",
        "*/*",
        "application/*, text/*",
        " application/json ; q=1 ,text/event-stream ",
    ] {
        result(&h.post(&discover(5), &[("Accept", accept)]).await);
    }
    // The two media types on two Accept lines.
    let msg = discover(6);
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json"),
        ("Accept", "text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "server/discover"),
    ];
    result(&h.post_raw_unchecked(msg.to_string(), &headers).await);
}

// ---- 13.7: Origin and Host ----

#[tokio::test]
async fn foreign_origin_is_403() {
    let h = Harness::start(fixture()).await;
    for origin in [
        "http://evil.example.com",
        "null",
        "http://localhost.evil.com",
        "http://user@localhost",
        "ftp://localhost",
        "https://app.example.com",
    ] {
        h.post(&discover(7), &[("Origin", origin)])
            .await
            .assert_error(403, -32600, None);
    }
}

#[tokio::test]
async fn dns_rebinding_probe_is_refused_and_real_host_accepted() {
    // The runner's dns-rebinding-protection scenario.
    let h = Harness::start(fixture()).await;
    h.post(
        &discover(8),
        &[
            ("Host", "evil.example.com"),
            ("Origin", "http://evil.example.com"),
        ],
    )
    .await
    .assert_error(403, -32600, None);
    let host = h.base.trim_start_matches("http://").to_owned();
    let origin = h.base.clone();
    result(
        &h.post(&discover(9), &[("Host", &host), ("Origin", &origin)])
            .await,
    );
}

#[tokio::test]
async fn loopback_origins_are_accepted() {
    let h = Harness::start(fixture()).await;
    for origin in [
        "http://localhost",
        "http://localhost:3000",
        "http://127.0.0.1:8080",
        "https://127.0.0.1",
        "http://[::1]:9000",
        h.base.as_str(),
    ] {
        result(&h.post(&discover(10), &[("Origin", origin)]).await);
    }
}

#[tokio::test]
async fn missing_origin_is_accepted() {
    let h = Harness::start(fixture()).await;
    result(&h.post(&discover(11), &[("Origin", "")]).await);
}

#[tokio::test]
async fn repeated_origin_is_403() {
    let h = Harness::start(fixture()).await;
    h.post_appending(
        &discover(12),
        &[
            ("Origin", "http://localhost"),
            ("Origin", "http://localhost"),
        ],
    )
    .await
    .assert_error(403, -32600, None);
}

#[tokio::test]
async fn configured_extra_origin_is_accepted() {
    let config = HttpConfig::default().allow_origin("https://app.example.com");
    let h = Harness::start_with(fixture(), config).await;
    result(
        &h.post(&discover(13), &[("Origin", "https://app.example.com")])
            .await,
    );
    h.post(&discover(14), &[("Origin", "https://other.example.com")])
        .await
        .assert_error(403, -32600, None);
    // Loopback stays allowed next to the extra origin.
    result(
        &h.post(&discover(15), &[("Origin", "http://localhost:1")])
            .await,
    );
}

#[tokio::test]
async fn loopback_origins_can_be_turned_off() {
    let config = HttpConfig::default().allow_loopback_origins(false);
    let h = Harness::start_with(fixture(), config).await;
    h.post(&discover(16), &[("Origin", "http://localhost")])
        .await
        .assert_error(403, -32600, None);
    // Origin validation stays on, but a request without Origin passes.
    result(&h.post(&discover(17), &[]).await);
}

#[tokio::test]
async fn host_allow_list_refuses_other_hosts() {
    let config = HttpConfig::default().allowed_hosts(["mcp.local", "mcp.local:8443"]);
    let h = Harness::start_with(fixture(), config).await;
    // reqwest's own Host (127.0.0.1:<port>) is not on the list.
    h.post(&discover(18), &[])
        .await
        .assert_error(403, -32600, None);
    h.post(&discover(19), &[("Host", "evil.example.com")])
        .await
        .assert_error(403, -32600, None);
    result(&h.post(&discover(20), &[("Host", "mcp.local")]).await);
    result(&h.post(&discover(21), &[("Host", "MCP.local:8443")]).await);
}

#[tokio::test]
async fn host_is_not_checked_without_an_allow_list() {
    let h = Harness::start(fixture()).await;
    result(
        &h.post(&discover(22), &[("Host", "anything.example.com")])
            .await,
    );
}

#[tokio::test]
async fn origin_is_checked_even_with_a_host_allow_list() {
    // Errata W-12: Origin validation is always on.
    let host = "mcp.local";
    let h = Harness::start_with(fixture(), HttpConfig::default().allowed_hosts([host])).await;
    h.post(
        &discover(23),
        &[("Host", host), ("Origin", "http://evil.example.com")],
    )
    .await
    .assert_error(403, -32600, None);
}

#[tokio::test]
async fn origin_is_checked_on_notifications_and_bad_bodies() {
    let h = Harness::start(fixture()).await;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    h.post_unchecked(&note, &[("Origin", "http://evil.example.com")])
        .await
        .assert_error(403, -32600, None);
    let mut headers = BASE_HEADERS.to_vec();
    headers.push(("Origin", "http://evil.example.com"));
    h.post_raw_unchecked("{", &headers)
        .await
        .assert_error(403, -32600, None);
}

#[tokio::test]
async fn admission_order_method_origin_content_type_accept_body() {
    // Section 13.2 steps 1 to 6, each failure masking the later ones; but Origin comes
    // before the method (errata W-12: Origin is validated on every request, so a GET
    // with a disallowed Origin is 403; the book's protocol notes say so). On a server of
    // 2026-07-28 alone, where GET is 405.
    let h = Harness::start(modern_only()).await;
    let evil = ("Origin", "http://evil.example.com");
    let r = h.request(Method::GET, &h.url, &[evil]).await;
    r.assert_error(403, -32600, None);
    let r = h.request(Method::GET, &h.url, &[]).await;
    assert_eq!(r.status, 405, "then the HTTP method: {}", r.body);
    let headers = [
        evil,
        ("Content-Type", "text/plain"),
        ("Accept", "text/html"),
    ];
    h.post_raw_unchecked("{", &headers)
        .await
        .assert_error(403, -32600, None);
    let headers = [("Content-Type", "text/plain"), ("Accept", "text/html")];
    h.post_raw_unchecked("{", &headers)
        .await
        .assert_error(415, -32600, None);
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "text/html"),
    ];
    h.post_raw_unchecked("{", &headers)
        .await
        .assert_error(406, -32600, None);
    h.post_raw_unchecked("{", BASE_HEADERS)
        .await
        .assert_error(400, -32700, None);
}

// ---- body size ----

#[tokio::test]
async fn oversize_body_is_413() {
    let config = HttpConfig::default().max_body_bytes(1024);
    let h = Harness::start_with(fixture(), config).await;
    let big = request(
        24,
        "tools/call",
        json!({"name": "test_simple_text", "arguments": {"pad": "p".repeat(2000)}}),
    );
    h.post(&big, &[]).await.assert_error(413, -32600, None);
    // A body under the limit is served.
    result(&h.post(&discover(25), &[]).await);
}

#[tokio::test]
async fn body_over_two_mib_is_accepted_by_default() {
    // The documented default limit is 4 MiB (above axum's 2 MiB extractor default).
    let h = Harness::start(fixture()).await;
    let big = request(
        26,
        "tools/call",
        json!({"name": "test_simple_text", "arguments": {"pad": "p".repeat(3 * 1024 * 1024)}}),
    );
    let r = h.post(&big, &[]).await;
    // The tool takes no arguments: a tool error, not a transport one.
    assert_eq!(r.status, 200, "{}", &r.body[..r.body.len().min(300)]);
    assert_eq!(r.response()["result"]["isError"], json!(true));
}

// ---- 13.4: MCP-Protocol-Version ----

#[tokio::test]
async fn missing_protocol_version_header_is_32020() {
    let h = Harness::start(fixture()).await;
    h.post(&discover(30), &[("MCP-Protocol-Version", "")])
        .await
        .assert_error(400, -32020, Some(json!(30)));
    let call = request(31, "tools/call", json!({"name": "test_simple_text"}));
    h.post(&call, &[("MCP-Protocol-Version", "")])
        .await
        .assert_error(400, -32020, Some(json!(31)));
}

#[tokio::test]
async fn repeated_protocol_version_header_is_32020() {
    let h = Harness::start(fixture()).await;
    h.post_appending(&discover(32), &[("MCP-Protocol-Version", "2026-07-28")])
        .await
        .assert_error(400, -32020, Some(json!(32)));
}

// ---- 13.5: Mcp-Method and Mcp-Name ----

#[tokio::test]
async fn missing_mcp_method_is_32020() {
    let h = Harness::start(fixture()).await;
    h.post(&request(33, "tools/list", json!({})), &[("Mcp-Method", "")])
        .await
        .assert_error(400, -32020, Some(json!(33)));
}

#[tokio::test]
async fn mismatched_mcp_method_is_32020() {
    let h = Harness::start(fixture()).await;
    for value in [
        "tools/call",
        "TOOLS/LIST",
        "Tools/List",
        "tools/list/",
        "prompts/list",
    ] {
        h.post(
            &request(34, "tools/list", json!({})),
            &[("Mcp-Method", value)],
        )
        .await
        .assert_error(400, -32020, Some(json!(34)));
    }
}

#[tokio::test]
async fn repeated_mcp_method_is_32020() {
    let h = Harness::start(fixture()).await;
    h.post_appending(
        &request(35, "tools/list", json!({})),
        &[("Mcp-Method", "tools/list")],
    )
    .await
    .assert_error(400, -32020, Some(json!(35)));
}

#[tokio::test]
async fn lower_case_header_names_are_accepted() {
    let h = Harness::start(fixture()).await;
    let msg = request(
        36,
        "tools/call",
        json!({"name": "a_header_probe", "arguments": {}}),
    );
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "a_header_probe"),
    ];
    let r = h.post_raw_unchecked(msg.to_string(), &headers).await;
    assert_eq!(first_text(result(&r)), "header probe ok");
    // reqwest writes every header name in lower case; over plain TCP the names reach
    // the server exactly as written here.
    let headers = [
        ("CONTENT-TYPE", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("Mcp-Protocol-Version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("MCP-NAME", "a_header_probe"),
    ];
    let (status, body) = h.post_over_tcp_unchecked(&headers, &msg.to_string()).await;
    assert_eq!(status, 200, "{body}");
    let reply: Value = serde_json::from_str(&body).expect("a JSON body");
    presa_tests::schema::check_response("tools/call", &reply);
    assert_eq!(first_text(&reply["result"]), "header probe ok");
}

#[tokio::test]
async fn whitespace_around_header_values_is_accepted() {
    let h = Harness::start(fixture()).await;
    let msg = request(
        37,
        "tools/call",
        json!({"name": "a_header_probe", "arguments": {}}),
    );
    let r = h
        .post(
            &msg,
            &[
                ("MCP-Protocol-Version", " 2026-07-28 "),
                ("Mcp-Method", "\ttools/call "),
                ("Mcp-Name", "  a_header_probe\t"),
            ],
        )
        .await;
    result(&r);
    // The same over plain TCP, with extra spaces and tabs exactly as written.
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "   2026-07-28   "),
        ("Mcp-Method", "\t tools/call \t"),
        ("Mcp-Name", "  a_header_probe  "),
    ];
    let (status, body) = h.post_over_tcp_unchecked(&headers, &msg.to_string()).await;
    assert_eq!(status, 200, "{body}");
    let reply: Value = serde_json::from_str(&body).expect("a JSON body");
    presa_tests::schema::check_response("tools/call", &reply);
    assert!(reply.get("result").is_some(), "{reply}");
}

#[tokio::test]
async fn mcp_name_missing_is_32020_for_each_named_method() {
    let h = Harness::start(fixture()).await;
    for msg in [
        request(38, "tools/call", json!({"name": "test_simple_text"})),
        request(38, "prompts/get", json!({"name": "test_simple_prompt"})),
        request(38, "resources/read", json!({"uri": "test://static-text"})),
    ] {
        h.post(&msg, &[("Mcp-Name", "")])
            .await
            .assert_error(400, -32020, Some(json!(38)));
    }
}

#[tokio::test]
async fn mcp_name_mismatched_is_32020_for_each_named_method() {
    let h = Harness::start(fixture()).await;
    for (msg, wrong) in [
        (
            request(39, "tools/call", json!({"name": "test_simple_text"})),
            "test_image_content",
        ),
        (
            request(39, "tools/call", json!({"name": "test_simple_text"})),
            "TEST_SIMPLE_TEXT",
        ),
        (
            request(39, "prompts/get", json!({"name": "test_simple_prompt"})),
            "test_prompt_with_image",
        ),
        (
            request(39, "resources/read", json!({"uri": "test://static-text"})),
            "test://static-binary",
        ),
    ] {
        h.post(&msg, &[("Mcp-Name", wrong)])
            .await
            .assert_error(400, -32020, Some(json!(39)));
    }
}

#[tokio::test]
async fn repeated_mcp_name_is_32020() {
    let h = Harness::start(fixture()).await;
    let msg = request(40, "tools/call", json!({"name": "test_simple_text"}));
    h.post_appending(&msg, &[("Mcp-Name", "test_simple_text")])
        .await
        .assert_error(400, -32020, Some(json!(40)));
}

#[tokio::test]
async fn mcp_name_base64_wrapped_is_accepted() {
    let h = Harness::start(fixture()).await;
    // "test_simple_text" and "test://static-text" in the =?base64?…?= wrapper.
    let msg = request(41, "tools/call", json!({"name": "test_simple_text"}));
    let r = h
        .post(&msg, &[("Mcp-Name", "=?base64?dGVzdF9zaW1wbGVfdGV4dA==?=")])
        .await;
    assert_eq!(
        first_text(result(&r)),
        "This is a simple text response for testing."
    );
    let msg = request(42, "resources/read", json!({"uri": "test://static-text"}));
    let r = h
        .post(&msg, &[("Mcp-Name", "=?base64?dGVzdDovL3N0YXRpYy10ZXh0?=")])
        .await;
    result(&r);
}

#[tokio::test]
async fn mcp_name_with_inner_spaces_matches() {
    let server = builder()
        .prompt(
            Prompt::new("my spaced prompt")
                .description("A prompt whose name has spaces")
                .handler(|_: PromptGet| async { vec![PromptMessage::user("spaced")] }),
        )
        .build()
        .expect("the server builds");
    let h = Harness::start(server).await;
    let msg = request(43, "prompts/get", json!({"name": "my spaced prompt"}));
    let r = h.post(&msg, &[]).await;
    assert_eq!(
        result(&r)["messages"][0]["content"]["text"],
        json!("spaced")
    );
    h.post(&msg, &[("Mcp-Name", "my  spaced prompt")])
        .await
        .assert_error(400, -32020, Some(json!(43)));
}

#[tokio::test]
async fn mcp_name_not_required_for_other_methods() {
    let h = Harness::start(fixture()).await;
    // A stray Mcp-Name on a method without a name is not compared.
    result(
        &h.post(&request(44, "tools/list", json!({})), &[("Mcp-Name", "x")])
            .await,
    );
}

#[tokio::test]
async fn stray_session_id_and_last_event_id_are_ignored() {
    let h = Harness::start(fixture()).await;
    let r = h
        .post(
            &request(45, "tools/list", json!({})),
            &[("Mcp-Session-Id", "session-123"), ("Last-Event-ID", "17")],
        )
        .await;
    result(&r);
    assert!(
        r.header("mcp-session-id").is_none(),
        "no session id is minted or echoed"
    );
}

// ---- 13.6: Mcp-Param-* ----

#[tokio::test]
async fn param_header_equal_value_is_accepted() {
    let h = Harness::start(fixture()).await;
    let r = h
        .post(
            &region_call(50, json!({"region": "us-west-2"})),
            &[("Mcp-Param-Region", "us-west-2")],
        )
        .await;
    assert_eq!(first_text(result(&r)), "region: us-west-2");
    // Header names are case-insensitive.
    let r = h
        .post(
            &region_call(51, json!({"region": "eu"})),
            &[("mcp-param-region", "eu")],
        )
        .await;
    result(&r);
    // Internal spaces stay plain.
    let r = h
        .post(
            &region_call(52, json!({"region": "us west"})),
            &[("Mcp-Param-Region", "us west")],
        )
        .await;
    assert_eq!(first_text(result(&r)), "region: us west");
}

#[tokio::test]
async fn param_header_base64_is_decoded_before_comparison() {
    let h = Harness::start(fixture()).await;
    let r = h
        .post(
            &region_call(53, json!({"region": "Hello"})),
            &[("Mcp-Param-Region", "=?base64?SGVsbG8=?=")],
        )
        .await;
    assert_eq!(first_text(result(&r)), "region: Hello");
    // Non-ASCII values travel base64-wrapped ("Zürich").
    let r = h
        .post(
            &region_call(54, json!({"region": "Z\u{fc}rich"})),
            &[("Mcp-Param-Region", "=?base64?WsO8cmljaA==?=")],
        )
        .await;
    result(&r);
    // Leading/trailing whitespace in the value travels base64-wrapped (" padded ").
    let r = h
        .post(
            &region_call(55, json!({"region": " padded "})),
            &[("Mcp-Param-Region", "=?base64?IHBhZGRlZCA=?=")],
        )
        .await;
    assert_eq!(first_text(result(&r)), "region:  padded ");
}

#[tokio::test]
async fn param_header_malformed_base64_is_32020() {
    let h = Harness::start(fixture()).await;
    for value in [
        "=?base64?SGVsbG8?=",   // unpadded
        "=?base64?SGV sbG8=?=", // not base64
        "=?base64?//79?=",      // not UTF-8 once decoded
    ] {
        h.post(
            &region_call(56, json!({"region": "Hello"})),
            &[("Mcp-Param-Region", value)],
        )
        .await
        .assert_error(400, -32020, Some(json!(56)));
    }
}

#[tokio::test]
async fn param_header_raw_non_ascii_is_32020() {
    // A plain value must be visible ASCII; "Zürich" must be sent base64-wrapped.
    let h = Harness::start(fixture()).await;
    h.post(
        &region_call(57, json!({"region": "Z\u{fc}rich"})),
        &[("Mcp-Param-Region", "Z\u{fc}rich")],
    )
    .await
    .assert_error(400, -32020, Some(json!(57)));
}

#[tokio::test]
async fn param_header_missing_when_argument_present_is_32020() {
    let h = Harness::start(fixture()).await;
    h.post(&region_call(58, json!({"region": "us"})), &[])
        .await
        .assert_error(400, -32020, Some(json!(58)));
}

#[tokio::test]
async fn param_header_mismatched_is_32020() {
    let h = Harness::start(fixture()).await;
    for value in ["eu", "US", "u s", "=?base64?ZXU=?="] {
        h.post(
            &region_call(59, json!({"region": "us"})),
            &[("Mcp-Param-Region", value)],
        )
        .await
        .assert_error(400, -32020, Some(json!(59)));
    }
}

#[tokio::test]
async fn param_header_repeated_is_32020() {
    let h = Harness::start(fixture()).await;
    h.post_appending(
        &region_call(60, json!({"region": "us"})),
        &[("Mcp-Param-Region", "us"), ("Mcp-Param-Region", "us")],
    )
    .await
    .assert_error(400, -32020, Some(json!(60)));
}

#[tokio::test]
async fn param_header_not_expected_for_absent_or_null_argument() {
    let server = builder()
        .tool(
            Tool::new("optional_region")
                .description("Takes an optional region mirrored into Mcp-Param-Region")
                .input_schema(json!({
                    "type": "object",
                    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}
                }))
                .handler(|call: ToolCall| async move {
                    format!(
                        "region: {}",
                        call.arguments
                            .get("region")
                            .and_then(Value::as_str)
                            .unwrap_or("none")
                    )
                }),
        )
        .build()
        .expect("the server builds");
    let h = Harness::start(server).await;
    let call = |id: i64, args: Value| call_tool(id, "optional_region", args);
    let r = h.post(&call(61, json!({})), &[]).await;
    assert_eq!(first_text(result(&r)), "region: none");
    let r = h
        .post(&call(62, json!({})), &[("Mcp-Param-Region", "ignored")])
        .await;
    assert_eq!(first_text(result(&r)), "region: none");
    // With the fixture, a null region needs no header either: the schema then fails,
    // which is a tool error, not a header error.
    let h = Harness::start(fixture()).await;
    let r = h.post(&region_call(63, json!({"region": null})), &[]).await;
    assert_eq!(result(&r)["isError"], json!(true));
    let r = h.post(&region_call(64, json!({})), &[]).await;
    assert_eq!(result(&r)["isError"], json!(true));
}

/// A property nested in an object, reached through `properties` alone, may be mirrored
/// (`basic/transports/streamable-http.mdx`, "Schema Extension"): its header is checked
/// against the value at its path, required when the value is there, and not expected
/// when it is not.
#[tokio::test]
async fn nested_param_header_is_checked_at_its_path() {
    let server = arguments_echo_server(
        "nested_region",
        json!({
            "type": "object",
            "properties": {"target": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}}}}
        }),
    );
    let h = Harness::start(server).await;
    let call = |id: i64, args: Value| call_tool(id, "nested_region", args);
    let body = json!({"target": {"region": "eu-central1"}});
    let r = h
        .post(
            &call(90, body.clone()),
            &[("Mcp-Param-Region", "eu-central1")],
        )
        .await;
    assert_eq!(
        first_text(result(&r)),
        r#"{"target":{"region":"eu-central1"}}"#
    );
    // The header says one region, the body executes another: refused.
    h.post(&call(91, body.clone()), &[("Mcp-Param-Region", "us-west1")])
        .await
        .assert_error(400, -32020, Some(json!(91)));
    // The value is in the body, the header is not.
    h.post(&call(92, body), &[])
        .await
        .assert_error(400, -32020, Some(json!(92)));
    // No value at the path (no target, or a target without a region): no header needed.
    for (id, args) in [
        (93, json!({})),
        (94, json!({"target": {}})),
        (95, json!({"target": null})),
    ] {
        result(&h.post(&call(id, args), &[]).await);
    }
}

/// An integer mirrored from a hand-written schema (which sets no bounds) must still be
/// within ±(2^53 − 1): beyond it the header cannot be compared exactly, so the request is
/// refused even when the header spells the same digits.
#[tokio::test]
async fn integer_param_header_beyond_the_safe_range_is_32020() {
    let h = Harness::start(typed_header_server()).await;
    let big = 9_007_199_254_740_993_i64;
    h.post(
        &typed_call(96, json!({"count": big})),
        &[("Mcp-Param-Count", &big.to_string())],
    )
    .await
    .assert_error(400, -32020, Some(json!(96)));
    let edge = 9_007_199_254_740_991_i64;
    result(
        &h.post(
            &typed_call(97, json!({"count": edge})),
            &[("Mcp-Param-Count", &edge.to_string())],
        )
        .await,
    );
}

/// A recognized `Mcp-Param-*` header with invalid characters is refused even when its
/// argument is absent (`basic/transports/streamable-http.mdx`: servers "MUST reject
/// requests with a recognized `Mcp-Param-{Name}` header that contains invalid
/// characters").
#[tokio::test]
async fn param_header_with_invalid_characters_is_32020_without_its_argument() {
    let h = Harness::start(typed_header_server()).await;
    // Raw non-ASCII (it must be sent base64-wrapped); the body has no `count` at all.
    h.post(
        &typed_call(98, json!({})),
        &[("Mcp-Param-Count", "4\u{e9}2")],
    )
    .await
    .assert_error(400, -32020, Some(json!(98)));
    // An unrecognized Mcp-Param-* header is ignored, whatever it holds.
    result(
        &h.post(
            &typed_call(99, json!({})),
            &[("Mcp-Param-Other", "4\u{e9}2")],
        )
        .await,
    );
}

/// A server with one tool, `name`, of input schema `schema`, that answers with its
/// arguments as JSON text.
fn arguments_echo_server(name: &str, schema: Value) -> presa::Server {
    builder()
        .tool(
            Tool::new(name)
                .description("Answers with its arguments")
                .input_schema(schema)
                .handler(|call: ToolCall| async move { Value::Object(call.arguments).to_string() }),
        )
        .build()
        .expect("the server builds")
}

/// A `tools/call` of `name` with `arguments`.
fn call_tool(id: i64, name: &str, arguments: Value) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
}

fn typed_header_server() -> presa::Server {
    arguments_echo_server(
        "typed_headers",
        json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "x-mcp-header": "Count"},
                "flag": {"type": "boolean", "x-mcp-header": "Flag"}
            }
        }),
    )
}

fn typed_call(id: i64, args: Value) -> Value {
    call_tool(id, "typed_headers", args)
}

#[tokio::test]
async fn integer_param_header_compares_numerically() {
    let h = Harness::start(typed_header_server()).await;
    let r = h
        .post(
            &typed_call(70, json!({"count": 42})),
            &[("Mcp-Param-Count", "42")],
        )
        .await;
    assert_eq!(first_text(result(&r)), r#"{"count":42}"#);
    result(
        &h.post(
            &typed_call(71, json!({"count": 42})),
            &[("Mcp-Param-Count", "042")],
        )
        .await,
    );
    result(
        &h.post(
            &typed_call(72, json!({"count": -7})),
            &[("Mcp-Param-Count", "-7")],
        )
        .await,
    );
    for value in ["43", "forty-two", "4 2", "42abc"] {
        let extra = [("Mcp-Param-Count", value)];
        h.post(&typed_call(73, json!({"count": 42})), &extra)
            .await
            .assert_error(400, -32020, Some(json!(73)));
    }
}

#[tokio::test]
async fn integer_written_as_a_float_compares_numerically() {
    // 42.0 is an integer for JSON Schema and numerically equal to the header "42".
    let h = Harness::start(typed_header_server()).await;
    let r = h
        .post(
            &typed_call(78, json!({"count": 42.0})),
            &[("Mcp-Param-Count", "42")],
        )
        .await;
    result(&r);
}

#[tokio::test]
async fn boolean_param_header_must_match() {
    let h = Harness::start(typed_header_server()).await;
    result(
        &h.post(
            &typed_call(74, json!({"flag": true})),
            &[("Mcp-Param-Flag", "true")],
        )
        .await,
    );
    result(
        &h.post(
            &typed_call(75, json!({"flag": false})),
            &[("Mcp-Param-Flag", "false")],
        )
        .await,
    );
    for value in ["false", "1", "yes"] {
        h.post(
            &typed_call(76, json!({"flag": true})),
            &[("Mcp-Param-Flag", value)],
        )
        .await
        .assert_error(400, -32020, Some(json!(76)));
    }
    h.post(
        &typed_call(77, json!({"flag": true, "count": 1})),
        &[("Mcp-Param-Count", "1")],
    )
    .await
    .assert_error(400, -32020, Some(json!(77)));
}
