//! Transport-independent rules, through the public in-process client
//! `presa::testing::TestClient` (so these tests also exercise the tool users get):
//! request `_meta` admission (wire section 2), `server/discover` and capabilities
//! (section 4), results and serverInfo (section 3), `tools/call` (section 5.2), the
//! multi-round-trip structure checks (section 10.3), registration refusals, application
//! error codes (errata W-4), progress (section 8.2, errata W-18), logging (section 8.1)
//! and handler panics. Resources, prompts, completion, pagination and caching are in
//! `pipeline_catalog`.

use presa::testing::{TestClient, TestResponse};
use presa::{
    CallToolResult, Content, Error, Icon, Implementation, LogLevel, Prompt, PromptArgument,
    PromptGet, Resource, ResourceRead, ResourceTemplate, Server, ServerBuilder, Tool, ToolCall,
};
use presa_tests::schema::{check_notification, check_response};
use serde_json::{Map, Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};

pub(crate) const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const CAPS_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
pub(crate) const LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
pub(crate) const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// A builder for a server named `t` version `1`.
pub(crate) fn builder() -> ServerBuilder {
    Server::builder(Implementation::new("t", "1"))
}

/// What every result's `_meta` must carry for [`builder`]'s servers.
pub(crate) fn server_info() -> Value {
    json!({"name": "t", "version": "1"})
}

#[track_caller]
pub(crate) fn build(b: ServerBuilder) -> Server {
    match b.build() {
        Ok(s) => s,
        Err(e) => panic!("the server should build: {e}"),
    }
}

/// The message of the `BuildError` that building `b` must give.
#[track_caller]
pub(crate) fn build_error(b: ServerBuilder) -> String {
    match b.build() {
        Ok(_) => panic!("the server should be refused at build"),
        Err(e) => e.to_string(),
    }
}

/// A tool answering `text`.
pub(crate) fn text_tool(name: &str, text: &'static str) -> Tool {
    Tool::new(name)
        .description("Answers a fixed text")
        .handler(move |_: ToolCall| async move { text })
}

/// A prompt answering one user message.
pub(crate) fn simple_prompt(name: &str) -> Prompt {
    Prompt::new(name)
        .description("A prompt")
        .handler(|_: PromptGet| async { "hello".to_owned() })
}

/// Sends a request exactly as given (no `_meta` is added).
pub(crate) async fn raw(client: &TestClient, id: i64, method: &str, params: Value) -> TestResponse {
    client
        .send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .await
}

/// A complete, valid `_meta` as a map, to take apart.
pub(crate) fn meta_map() -> Map<String, Value> {
    match presa_tests::meta() {
        Value::Object(m) => m,
        _ => unreachable!("meta() is an object"),
    }
}

/// The valid `_meta` with `key` set to `value` (or removed when `value` is `None`).
pub(crate) fn meta_with(key: &str, value: Option<Value>) -> Value {
    let mut m = meta_map();
    match value {
        Some(v) => m.insert(key.to_owned(), v),
        None => m.remove(key),
    };
    Value::Object(m)
}

/// Asserts a protocol error with `code` (and `message`, when given), valid against the
/// schema, echoing an id; returns the error object.
#[track_caller]
pub(crate) fn expect_error(r: &TestResponse, code: i64, message: Option<&str>) -> Value {
    r.assert_error(code);
    let m = &r.message;
    if let Some(message) = message {
        assert_eq!(m["error"]["message"], json!(message), "{m}");
    }
    assert!(
        m.get("id").is_some_and(|id| !id.is_null()),
        "the id is echoed: {m}"
    );
    assert!(r.notifications.is_empty(), "{:?}", r.notifications);
    check_response("", m);
    m["error"].clone()
}

/// Asserts a result valid for `method` (schema), with `resultType` and serverInfo `_meta`;
/// returns the result.
#[track_caller]
pub(crate) fn expect_result(r: &TestResponse, method: &str) -> Value {
    let result = r.result().clone();
    check_response(method, &r.message);
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(result["_meta"][SERVER_INFO_KEY], server_info(), "{result}");
    for n in &r.notifications {
        check_notification(n);
    }
    result
}

// ---------------------------------------------------------------------------------------
// Request _meta admission (wire section 2) and its order.
// ---------------------------------------------------------------------------------------

fn one_tool_server() -> Server {
    build(builder().tool(text_tool("t", "ok")))
}

/// Every -32602 of section 2, each with its exact message.
#[tokio::test]
async fn meta_admission_messages() {
    let server = one_tool_server();
    let c = TestClient::new(&server);
    let pv_missing = "Missing required io.modelcontextprotocol/protocolVersion metadata";
    let pv_type = "io.modelcontextprotocol/protocolVersion must be a string";
    let bad_token = "progressToken must be a string of at most 256 bytes or an int64 integer";
    let bad_key = "_meta contains an invalid key or non-JSON value";
    let bad_level = "Invalid MCP request log level";
    let bad_info = "Client info must include string name and version";
    let caps_missing = "Missing required client capabilities metadata";
    let caps_type = "Client capabilities must be an object";
    let cases: Vec<(&str, Value, &str)> = vec![
        ("no params", Value::Null, pv_missing),
        ("params without _meta", json!({}), pv_missing),
        ("_meta empty", json!({"_meta": {}}), pv_missing),
        (
            "_meta a string",
            json!({"_meta": "x"}),
            "_meta must be an object",
        ),
        (
            "_meta an array",
            json!({"_meta": []}),
            "_meta must be an object",
        ),
        (
            "_meta null",
            json!({"_meta": null}),
            "_meta must be an object",
        ),
        (
            "key with a space",
            json!({"_meta": meta_with("bad key", Some(json!(1)))}),
            bad_key,
        ),
        (
            "key with an empty prefix",
            json!({"_meta": meta_with("/x", Some(json!(1)))}),
            bad_key,
        ),
        (
            "key with a bad label",
            json!({"_meta": meta_with("a..b/x", Some(json!(1)))}),
            bad_key,
        ),
        (
            "key ending in -",
            json!({"_meta": meta_with("x-", Some(json!(1)))}),
            bad_key,
        ),
        (
            "token a float",
            json!({"_meta": meta_with("progressToken", Some(json!(1.5)))}),
            bad_token,
        ),
        (
            "token a bool",
            json!({"_meta": meta_with("progressToken", Some(json!(true)))}),
            bad_token,
        ),
        (
            "token null",
            json!({"_meta": meta_with("progressToken", Some(json!(null)))}),
            bad_token,
        ),
        (
            "token an object",
            json!({"_meta": meta_with("progressToken", Some(json!({})))}),
            bad_token,
        ),
        (
            "token too long",
            json!({"_meta": meta_with("progressToken", Some(json!("x".repeat(257))))}),
            bad_token,
        ),
        (
            "token beyond int64",
            json!({"_meta": meta_with("progressToken", Some(json!(u64::MAX)))}),
            bad_token,
        ),
        (
            "level unknown",
            json!({"_meta": meta_with(LEVEL_KEY, Some(json!("verbose")))}),
            bad_level,
        ),
        (
            "level upper case",
            json!({"_meta": meta_with(LEVEL_KEY, Some(json!("INFO")))}),
            bad_level,
        ),
        (
            "level a number",
            json!({"_meta": meta_with(LEVEL_KEY, Some(json!(3)))}),
            bad_level,
        ),
        (
            "level null",
            json!({"_meta": meta_with(LEVEL_KEY, Some(json!(null)))}),
            bad_level,
        ),
        (
            "version missing",
            json!({"_meta": meta_with(VERSION_KEY, None)}),
            pv_missing,
        ),
        (
            "version a number",
            json!({"_meta": meta_with(VERSION_KEY, Some(json!(20260728)))}),
            pv_type,
        ),
        (
            "version null",
            json!({"_meta": meta_with(VERSION_KEY, Some(json!(null)))}),
            pv_type,
        ),
        (
            "clientInfo a string",
            json!({"_meta": meta_with(INFO_KEY, Some(json!("x")))}),
            bad_info,
        ),
        (
            "clientInfo empty",
            json!({"_meta": meta_with(INFO_KEY, Some(json!({})))}),
            bad_info,
        ),
        (
            "clientInfo no version",
            json!({"_meta": meta_with(INFO_KEY, Some(json!({"name": "a"})))}),
            bad_info,
        ),
        (
            "clientInfo name a number",
            json!({"_meta": meta_with(INFO_KEY, Some(json!({"name": 1, "version": "1"})))}),
            bad_info,
        ),
        (
            "caps missing",
            json!({"_meta": meta_with(CAPS_KEY, None)}),
            caps_missing,
        ),
        (
            "caps a string",
            json!({"_meta": meta_with(CAPS_KEY, Some(json!("x")))}),
            caps_type,
        ),
        (
            "caps an array",
            json!({"_meta": meta_with(CAPS_KEY, Some(json!([])))}),
            caps_type,
        ),
        (
            "caps null",
            json!({"_meta": meta_with(CAPS_KEY, Some(json!(null)))}),
            caps_type,
        ),
    ];
    for (i, (what, params, message)) in cases.into_iter().enumerate() {
        let mut msg = json!({"jsonrpc": "2.0", "id": i, "method": "tools/list"});
        if !params.is_null() {
            msg["params"] = params;
        }
        let r = c.send(msg).await;
        assert_eq!(r.message["id"], json!(i), "{what}: {}", r.message);
        let e = expect_error(&r, -32602, None);
        assert_eq!(e["message"], message, "{what}: {}", r.message);
    }
}

/// The other clientInfo and clientCapabilities shapes that are refused with -32602.
#[tokio::test]
async fn client_info_and_capability_shapes() {
    let server = one_tool_server();
    let c = TestClient::new(&server);
    let bad_info = [
        json!({"name": "a", "version": "1", "title": 5}),
        json!({"name": "a", "version": "1", "description": []}),
        json!({"name": "a", "version": "1", "websiteUrl": 5}),
        json!({"name": "a", "version": "1", "icons": "x"}),
        json!({"name": "a", "version": "1", "icons": [{"src": 1}]}),
        json!({"name": "a", "version": "1", "icons": [{}]}),
    ];
    for info in bad_info {
        let r = raw(
            &c,
            1,
            "tools/list",
            json!({"_meta": meta_with(INFO_KEY, Some(info.clone()))}),
        )
        .await;
        expect_error(&r, -32602, None);
    }
    let bad_caps = [
        json!({"roots": true}),
        json!({"roots": []}),
        json!({"sampling": "x"}),
        json!({"sampling": {"context": true}}),
        json!({"sampling": {"tools": 1}}),
        json!({"elicitation": []}),
        json!({"elicitation": {"form": true}}),
        json!({"elicitation": {"url": "x"}}),
        json!({"experimental": []}),
        json!({"experimental": {"thing": 1}}),
        json!({"extensions": []}),
        json!({"extensions": {"noprefix": {}}}),
        json!({"extensions": {"com.example/ext": 1}}),
        json!({"extensions": {"com.example/ext": null}}),
        json!({"extensions": {"bad label/ext": {}}}),
        json!({"extensions": {"1com.example/ext": {}}}),
    ];
    for caps in bad_caps {
        let r = raw(
            &c,
            2,
            "tools/list",
            json!({"_meta": meta_with(CAPS_KEY, Some(caps.clone()))}),
        )
        .await;
        let e = expect_error(&r, -32602, None);
        assert!(
            e["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("Client capability")),
            "{caps}: {e}"
        );
    }
    // Well-formed shapes are accepted.
    let good_caps = json!({
        "roots": {"listChanged": true},
        "sampling": {"context": {}, "tools": {}},
        "elicitation": {"form": {}, "url": {}},
        "experimental": {"thing": {"x": 1}},
        "extensions": {"com.example/ext": {}, "io.modelcontextprotocol/tasks": {}, "a/": {}}
    });
    let r = raw(
        &c,
        3,
        "tools/list",
        json!({"_meta": meta_with(CAPS_KEY, Some(good_caps))}),
    )
    .await;
    expect_result(&r, "tools/list");
    let good_info = json!({"name": "a", "version": "1", "title": "A", "description": "d",
                           "websiteUrl": "https://example.com",
                           "icons": [{"src": "https://example.com/i.png", "mimeType": "image/png"}]});
    let r = raw(
        &c,
        4,
        "tools/list",
        json!({"_meta": meta_with(INFO_KEY, Some(good_info))}),
    )
    .await;
    expect_result(&r, "tools/list");
}

/// Requests that are admitted: clientInfo is optional; reserved W3C keys, prefixed keys,
/// every log level and every kind of valid progress token pass.
#[tokio::test]
async fn meta_that_is_admitted() {
    let server = one_tool_server();
    let c = TestClient::new(&server);
    let mut cases = vec![
        meta_with(INFO_KEY, None),
        meta_with(
            "traceparent",
            Some(json!(
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
            )),
        ),
        meta_with("tracestate", Some(json!("rojo=00f067aa0ba902b7"))),
        meta_with("baggage", Some(json!("userId=alice"))),
        meta_with("com.example.mcp/anything", Some(json!({"nested": [1, 2]}))),
        meta_with("progressToken", Some(json!("x".repeat(256)))),
        meta_with("progressToken", Some(json!(i64::MAX))),
        meta_with("progressToken", Some(json!(-5))),
        meta_with("progressToken", Some(json!(""))),
    ];
    for level in LogLevel::ALL {
        cases.push(meta_with(LEVEL_KEY, Some(json!(level.as_str()))));
    }
    for (i, meta) in cases.into_iter().enumerate() {
        let r = raw(&c, i as i64, "tools/list", json!({"_meta": meta.clone()})).await;
        assert!(
            r.message.get("result").is_some(),
            "{meta} must be admitted: {}",
            r.message
        );
        expect_result(&r, "tools/list");
    }
}

/// An unsupported version is -32022 with data.requested and data.supported (a subset of
/// discover's supportedVersions).
#[tokio::test]
async fn unsupported_version_is_32022_with_data() {
    let server = one_tool_server();
    let c = TestClient::new(&server);
    for version in ["2025-11-25", "2025-06-18", "v999.0.0", ""] {
        let r = raw(
            &c,
            1,
            "tools/list",
            json!({"_meta": meta_with(VERSION_KEY, Some(json!(version)))}),
        )
        .await;
        let e = expect_error(&r, -32022, None);
        assert_eq!(e["data"]["requested"], version);
        assert_eq!(e["data"]["supported"], json!(["2026-07-28"]));
    }
    let d = expect_result(&c.discover().await, "server/discover");
    assert_eq!(d["supportedVersions"], json!(["2026-07-28"]));
}

/// Admission runs in the order of section 2: with two problems, the earlier check wins.
#[tokio::test]
async fn meta_admission_order() {
    let server = one_tool_server();
    let c = TestClient::new(&server);
    let with = |pairs: &[(&str, Option<Value>)]| {
        let mut m = meta_map();
        for (k, v) in pairs {
            match v {
                Some(v) => m.insert((*k).to_owned(), v.clone()),
                None => m.remove(*k),
            };
        }
        json!({"_meta": m})
    };
    let bad_key = ("bad key", Some(json!(1)));
    let bad_token = ("progressToken", Some(json!(1.5)));
    let bad_level = (LEVEL_KEY, Some(json!("loud")));
    let no_version = (VERSION_KEY, None);
    let old_version = (VERSION_KEY, Some(json!("2025-11-25")));
    let bad_info = (INFO_KEY, Some(json!({"name": "a"})));
    let no_caps = (CAPS_KEY, None);
    let cases = [
        (
            with(&[bad_key.clone(), bad_token.clone()]),
            -32602,
            "_meta contains an invalid key or non-JSON value",
        ),
        (
            with(&[bad_token.clone(), bad_level.clone()]),
            -32602,
            "progressToken must be a string of at most 256 bytes or an int64 integer",
        ),
        (
            with(&[bad_level.clone(), no_version.clone()]),
            -32602,
            "Invalid MCP request log level",
        ),
        (
            with(&[no_version.clone(), no_caps.clone()]),
            -32602,
            "Missing required io.modelcontextprotocol/protocolVersion metadata",
        ),
        (with(&[old_version.clone(), bad_info.clone()]), -32022, ""),
        (with(&[old_version.clone(), no_caps.clone()]), -32022, ""),
        (
            with(&[bad_info.clone(), no_caps.clone()]),
            -32602,
            "Client info must include string name and version",
        ),
    ];
    for (params, code, message) in cases {
        let r = raw(&c, 1, "tools/list", params.clone()).await;
        let e = expect_error(&r, code, None);
        if !message.is_empty() {
            assert_eq!(e["message"], message, "{params}");
        }
    }
}

/// Admission runs before the method gate and before params validation: an unknown method
/// or a bad call with bad `_meta` is -32602 for the `_meta`.
#[tokio::test]
async fn admission_precedes_the_method_gate_and_params() {
    let server = one_tool_server();
    let c = TestClient::new(&server);
    let r = raw(&c, 1, "nope/nope", json!({})).await;
    expect_error(
        &r,
        -32602,
        Some("Missing required io.modelcontextprotocol/protocolVersion metadata"),
    );
    let r = raw(&c, 2, "tools/call", json!({"name": 5, "_meta": "x"})).await;
    expect_error(&r, -32602, Some("_meta must be an object"));
    let r = raw(
        &c,
        3,
        "nope/nope",
        json!({"_meta": meta_with(VERSION_KEY, Some(json!("1999-01-01")))}),
    )
    .await;
    expect_error(&r, -32022, None);
}

/// Unknown and removed methods are -32601 `Method not found: <m>`; `initialize` names the
/// supported versions (errata W-13), with -32022 for a legacy client without `_meta`.
#[tokio::test]
async fn unknown_removed_and_legacy_methods() {
    let server = one_tool_server();
    let c = TestClient::new(&server);
    for method in [
        "nope/nope",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "tasks/list",
        "",
    ] {
        let r = c.request(method, json!({})).await;
        expect_error(&r, -32601, Some(&format!("Method not found: {method}")));
    }
    let r = c.request("initialize", json!({})).await;
    let e = expect_error(&r, -32601, None);
    assert_eq!(e["data"]["supported"], json!(["2026-07-28"]));
    let legacy = json!({"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "old", "version": "1"}});
    let r = raw(&c, 9, "initialize", legacy.clone()).await;
    let e = expect_error(&r, -32022, None);
    assert_eq!(e["data"]["requested"], "2025-06-18");
    assert_eq!(e["data"]["supported"], json!(["2026-07-28"]));
    // A 2025-era client may send a `_meta` of its own (a progress token) on `initialize`:
    // without a 2026-07-28 protocol version in it, it is still told the versions.
    let mut with_meta = legacy;
    with_meta["_meta"] = json!({"progressToken": 1});
    let r = raw(&c, 10, "initialize", with_meta).await;
    let e = expect_error(&r, -32022, None);
    assert_eq!(e["data"]["requested"], "2025-06-18");
    assert_eq!(e["data"]["supported"], json!(["2026-07-28"]));
}

/// Envelope rules hold in process too: a batch is -32600 without id, notifications and
/// posted responses get nothing.
#[tokio::test]
async fn envelope_rules_in_process() {
    let server = one_tool_server();
    let c = TestClient::new(&server);
    let r = c
        .send(json!([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]))
        .await;
    assert_eq!(r.message["error"]["code"], -32600);
    assert!(r.message.get("id").is_none(), "{}", r.message);
    check_response("", &r.message);
    let r = c
        .send(json!({"jsonrpc": "2.0", "id": null, "method": "tools/list"}))
        .await;
    assert_eq!(r.message["error"]["code"], -32600);
    assert!(r.message.get("id").is_none(), "errata W-1: {}", r.message);
    for silent in [
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": "bad"}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
    ] {
        let r = c.send(silent.clone()).await;
        assert!(
            r.message.is_null(),
            "{silent} is not answered: {}",
            r.message
        );
        assert!(r.notifications.is_empty());
    }
}

// ---------------------------------------------------------------------------------------
// server/discover and capabilities (section 4); serverInfo on results (section 3).
// ---------------------------------------------------------------------------------------

/// A server with nothing registered offers only logging; every catalog method is -32601.
#[tokio::test]
async fn an_empty_server_offers_no_catalog_capabilities() {
    let server = build(builder());
    let c = TestClient::new(&server);
    let d = expect_result(&c.discover().await, "server/discover");
    assert_eq!(d["capabilities"], json!({"logging": {}}), "{d}");
    assert_eq!(d["ttlMs"], 0);
    assert_eq!(d["cacheScope"], "private");
    for (method, params) in [
        ("tools/list", json!({})),
        ("tools/call", json!({"name": "x"})),
        ("prompts/list", json!({})),
        ("prompts/get", json!({"name": "x"})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({"uri": "a://b"})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "x"},
                                       "argument": {"name": "a", "value": ""}}),
        ),
    ] {
        let r = c.request(method, params).await;
        expect_error(&r, -32601, Some(&format!("Method not found: {method}")));
    }
}

/// Capabilities follow what is registered, and each advertised one has working methods.
#[tokio::test]
async fn capabilities_follow_the_catalog() {
    let tools_only = build(builder().tool(text_tool("a", "a")));
    let d = expect_result(
        &TestClient::new(&tools_only).discover().await,
        "server/discover",
    );
    assert_eq!(
        d["capabilities"],
        json!({"tools": {"listChanged": true}, "logging": {}})
    );

    let prompt_no_completion = build(builder().prompt(simple_prompt("p")));
    let c = TestClient::new(&prompt_no_completion);
    let d = expect_result(&c.discover().await, "server/discover");
    assert_eq!(
        d["capabilities"],
        json!({"prompts": {"listChanged": true}, "logging": {}})
    );
    let r = c
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "p"},
                                               "argument": {"name": "a", "value": ""}}),
        )
        .await;
    expect_error(&r, -32601, None);
    expect_result(&c.request("prompts/list", json!({})).await, "prompts/list");

    let with_completion = build(
        builder().prompt(
            simple_prompt("p")
                .argument(PromptArgument::new("a"))
                .complete("a", |_| async { Ok(presa::Completion::new(["x"])) }),
        ),
    );
    let d = expect_result(
        &TestClient::new(&with_completion).discover().await,
        "server/discover",
    );
    assert_eq!(
        d["capabilities"],
        json!({"prompts": {"listChanged": true}, "completions": {}, "logging": {}})
    );

    let template_only = build(builder().resource_template(
        ResourceTemplate::new("notes://{id}", "note").handler(|_: ResourceRead| async { "n" }),
    ));
    let c = TestClient::new(&template_only);
    let d = expect_result(&c.discover().await, "server/discover");
    assert_eq!(d["capabilities"], json!({"resources": {}, "logging": {}}));
    let list = expect_result(
        &c.request("resources/list", json!({})).await,
        "resources/list",
    );
    assert_eq!(list["resources"], json!([]));
    expect_result(
        &c.request("resources/templates/list", json!({})).await,
        "resources/templates/list",
    );

    let no_logging = build(builder().tool(text_tool("a", "a")).logging(false));
    let d = expect_result(
        &TestClient::new(&no_logging).discover().await,
        "server/discover",
    );
    assert_eq!(d["capabilities"], json!({"tools": {"listChanged": true}}));
}

#[tokio::test]
async fn discover_carries_instructions_when_set() {
    let server = build(builder().instructions("Use the tools wisely."));
    let d = expect_result(
        &TestClient::new(&server).discover().await,
        "server/discover",
    );
    assert_eq!(d["instructions"], "Use the tools wisely.");
    let server = build(builder());
    let d = expect_result(
        &TestClient::new(&server).discover().await,
        "server/discover",
    );
    assert!(d.get("instructions").is_none());
}

fn everything_server(server_info: bool) -> Server {
    build(
        builder()
            .server_info_in_results(server_info)
            .tool(text_tool("a", "a"))
            .tool(
                Tool::new("with_meta")
                    .description("Has result _meta")
                    .handler(|_: ToolCall| async {
                        let mut r = CallToolResult::text("m");
                        let mut meta = Map::new();
                        meta.insert("com.example/trace".into(), json!("abc"));
                        r.meta = Some(meta);
                        r
                    }),
            )
            .prompt(
                simple_prompt("p")
                    .argument(PromptArgument::new("a"))
                    .complete("a", |_| async { Ok(presa::Completion::new(["x"])) }),
            )
            .resource(Resource::new("mem://r", "r").handler(|_: ResourceRead| async { "r" }))
            .resource_template(
                ResourceTemplate::new("notes://{id}", "note")
                    .handler(|_: ResourceRead| async { "n" }),
            ),
    )
}

fn every_method() -> Vec<(&'static str, Value)> {
    vec![
        ("server/discover", json!({})),
        ("tools/list", json!({})),
        ("tools/call", json!({"name": "a"})),
        ("prompts/list", json!({})),
        ("prompts/get", json!({"name": "p"})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({"uri": "mem://r"})),
        ("resources/read", json!({"uri": "notes://1"})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "p"},
                                       "argument": {"name": "a", "value": ""}}),
        ),
    ]
}

/// Every result carries resultType and `_meta.io.modelcontextprotocol/serverInfo`.
#[tokio::test]
async fn server_info_is_on_every_result() {
    let server = everything_server(true);
    let c = TestClient::new(&server);
    for (method, params) in every_method() {
        let r = c.request(method, params).await;
        expect_result(&r, method);
    }
    // A handler's own result _meta is kept beside serverInfo.
    let r = expect_result(&c.call_tool("with_meta", json!({})).await, "tools/call");
    assert_eq!(r["_meta"]["com.example/trace"], "abc");
}

/// `.server_info_in_results(false)` leaves serverInfo out everywhere.
#[tokio::test]
async fn server_info_can_be_turned_off() {
    let server = everything_server(false);
    let c = TestClient::new(&server);
    for (method, params) in every_method() {
        let r = c.request(method, params.clone()).await;
        let result = r.result();
        check_response(method, &r.message);
        assert_eq!(result["resultType"], "complete");
        assert!(
            result
                .get("_meta")
                .and_then(|m| m.get(SERVER_INFO_KEY))
                .is_none(),
            "{method} {params}: {result}"
        );
    }
    let r = c.call_tool("with_meta", json!({})).await;
    assert_eq!(r.result()["_meta"], json!({"com.example/trace": "abc"}));
}

// ---------------------------------------------------------------------------------------
// tools/call (section 5.2) and the multi-round-trip structure checks (section 10.3).
// ---------------------------------------------------------------------------------------

fn echo_server() -> Server {
    build(
        builder()
            .tool(
                Tool::new("echo")
                    .description("Echoes its text")
                    .input_schema(json!({
                        "type": "object",
                        "properties": {"text": {"type": "string", "minLength": 1}},
                        "required": ["text"],
                        "additionalProperties": false
                    }))
                    .handler(|call: ToolCall| async move {
                        let text = call.arguments.get("text").and_then(Value::as_str);
                        text.unwrap_or_default().to_owned()
                    }),
            )
            .tool(text_tool("noargs", "no arguments")),
    )
}

#[tokio::test]
async fn tools_call_params_validation() {
    let server = echo_server();
    let c = TestClient::new(&server);
    let name_msg = "tools/call requires a non-empty string name";
    let args_msg = "tools/call arguments must be an object";
    for (params, message) in [
        (json!({}), name_msg),
        (json!({"name": ""}), name_msg),
        (json!({"name": 5}), name_msg),
        (json!({"name": null}), name_msg),
        (json!({"name": ["echo"]}), name_msg),
        (json!({"name": "echo", "arguments": "x"}), args_msg),
        (json!({"name": "echo", "arguments": []}), args_msg),
        (json!({"name": "echo", "arguments": 1}), args_msg),
        // An unknown tool is reported after the arguments' shape is checked.
        (json!({"name": "x", "arguments": "x"}), args_msg),
        (json!({"name": "x", "arguments": {}}), "Unknown tool: x"),
        (json!({"name": "Echo"}), "Unknown tool: Echo"),
    ] {
        let r = c.request("tools/call", params.clone()).await;
        let e = expect_error(&r, -32602, Some(message));
        assert!(e.get("data").is_none(), "{params}: {e}");
    }
    // Absent or null arguments are {}.
    let r = c.request("tools/call", json!({"name": "noargs"})).await;
    r.assert_text("no arguments");
    let r = c
        .request("tools/call", json!({"name": "noargs", "arguments": null}))
        .await;
    r.assert_text("no arguments");
    c.call_tool("echo", json!({"text": "hi"}))
        .await
        .assert_text("hi");
}

/// Arguments that fail the input schema are a tool error the model can read, not a
/// protocol error.
#[tokio::test]
async fn input_schema_failure_is_a_tool_error_result() {
    let server = echo_server();
    let c = TestClient::new(&server);
    for (args, why) in [
        (json!({}), r#""text" is a required property"#),
        (json!({"text": 5}), r#"/text: 5 is not of type "string""#),
        (
            json!({"text": ""}),
            r#"/text: "" is shorter than 1 characters"#,
        ),
        (
            json!({"text": "a", "extra": true}),
            r#"the property "extra" is not allowed"#,
        ),
    ] {
        let r = c.call_tool("echo", args.clone()).await;
        expect_result(&r, "tools/call");
        presa_tests::assert_tool_error_text(&r, &format!("Invalid arguments for tool echo: {why}"));
    }
    // The default input schema takes no arguments.
    let r = c.call_tool("noargs", json!({"x": 1})).await;
    presa_tests::assert_tool_error_text(
        &r,
        r#"Invalid arguments for tool noargs: the property "x" is not allowed"#,
    );
}

fn structured_server() -> Server {
    let schema = json!({
        "type": "object",
        "properties": {"sum": {"type": "integer"}},
        "required": ["sum"],
        "additionalProperties": false
    });
    build(
        builder()
            .tool(
                Tool::new("add")
                    .description("Adds two integers")
                    .input_schema(json!({
                        "type": "object",
                        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                        "required": ["a", "b"]
                    }))
                    .output_schema(schema.clone())
                    .handler(|call: ToolCall| async move {
                        let int = |k: &str| call.arguments.get(k).and_then(Value::as_i64);
                        let (a, b) = (int("a").unwrap_or_default(), int("b").unwrap_or_default());
                        CallToolResult::structured(json!({"sum": a + b}))
                    }),
            )
            .tool(
                Tool::new("liar")
                    .description("Returns structured content that breaks its outputSchema")
                    .output_schema(schema.clone())
                    .handler(|_: ToolCall| async {
                        CallToolResult::structured(json!({"sum": "not a number"}))
                    }),
            )
            .tool(
                Tool::new("silent")
                    .description("Declares an outputSchema but returns no structured content")
                    .output_schema(schema.clone())
                    .handler(|_: ToolCall| async { "just text" }),
            )
            .tool(
                Tool::new("failing")
                    .description("A tool error is not checked against the outputSchema")
                    .output_schema(schema)
                    .handler(|_: ToolCall| async { CallToolResult::error("it failed") }),
            )
            .tool(
                Tool::new("listing")
                    .description("An outputSchema need not be an object")
                    .output_schema(json!({"type": "array", "items": {"type": "string"}}))
                    .handler(|_: ToolCall| async { CallToolResult::structured(json!(["a", "b"])) }),
            ),
    )
}

#[tokio::test]
async fn structured_results_and_output_schema() {
    let server = structured_server();
    let c = TestClient::new(&server);
    let list = expect_result(&c.list_tools().await, "tools/list");
    let add = list["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "add"))
        .expect("add is listed");
    assert_eq!(add["outputSchema"]["required"], json!(["sum"]));

    let r = c.call_tool("add", json!({"a": 2, "b": 3})).await;
    let result = expect_result(&r, "tools/call");
    assert_eq!(result["structuredContent"], json!({"sum": 5}));
    assert_eq!(result["isError"], false);
    // The same JSON as a text block (server/tools.mdx, "Structured Content").
    let text: Value = serde_json::from_str(&r.text()).expect("the text block is JSON");
    assert_eq!(text, json!({"sum": 5}));

    let r = c.call_tool("listing", json!({})).await;
    assert_eq!(
        expect_result(&r, "tools/call")["structuredContent"],
        json!(["a", "b"])
    );

    let r = c.call_tool("failing", json!({})).await;
    expect_result(&r, "tools/call");
    presa_tests::assert_tool_error_text(&r, "it failed");
}

/// A structured result that breaks its outputSchema (or is missing) is the server's
/// fault: -32603 with no detail.
#[tokio::test]
async fn output_schema_violation_is_an_internal_error() {
    let server = structured_server();
    let c = TestClient::new(&server);
    for tool in ["liar", "silent"] {
        let r = c.call_tool(tool, json!({})).await;
        let e = expect_error(&r, -32603, Some("Internal error"));
        assert!(e.get("data").is_none(), "{tool}: {e}");
    }
}

/// Content a handler annotates with a `priority` outside 0 to 1 (the schema's bounds) is
/// the server's fault too: -32603 with no detail, for a tool's result (an error result
/// as well) and for a prompt's messages. A priority within the bounds goes out as made.
#[tokio::test]
async fn content_annotations_outside_the_schema_are_an_internal_error() {
    fn annotated(priority: f64) -> Content {
        let mut a = presa::Annotations::default();
        a.priority = Some(priority);
        Content::Text {
            text: "x".into(),
            annotations: Some(a),
        }
    }
    let server = build(
        builder()
            .tool(Tool::new("high").handler(|_: ToolCall| async {
                CallToolResult::new(vec![Content::text("fine"), annotated(1.5)])
            }))
            .tool(Tool::new("failing_low").handler(|_: ToolCall| async {
                let mut r = CallToolResult::error("it failed");
                r.content.push(annotated(-0.1));
                r
            }))
            .tool(
                Tool::new("within")
                    .handler(|_: ToolCall| async { CallToolResult::new(vec![annotated(0.5)]) }),
            )
            .prompt(Prompt::new("low").handler(|_: PromptGet| async {
                vec![presa::PromptMessage::user(annotated(-0.1))]
            }))
            .prompt(Prompt::new("edge").handler(|_: PromptGet| async {
                vec![presa::PromptMessage::user(annotated(1.0))]
            })),
    );
    let c = TestClient::new(&server);
    for tool in ["high", "failing_low"] {
        let r = c.call_tool(tool, json!({})).await;
        let e = expect_error(&r, -32603, Some("Internal error"));
        assert!(e.get("data").is_none(), "{tool}: {e}");
    }
    let r = c.get_prompt("low", json!({})).await;
    expect_error(&r, -32603, Some("Internal error"));

    let r = c.call_tool("within", json!({})).await;
    let result = expect_result(&r, "tools/call");
    assert_eq!(result["content"][0]["annotations"]["priority"], 0.5);
    let r = c.get_prompt("edge", json!({})).await;
    let result = expect_result(&r, "prompts/get");
    assert_eq!(
        result["messages"][0]["content"]["annotations"]["priority"],
        1.0
    );
}

/// `inputResponses` and `requestState` are checked at admission for the three methods
/// that may take part in a multi round-trip request.
#[tokio::test]
async fn input_responses_and_request_state_structure() {
    let server = build(
        builder()
            .tool(text_tool("t", "ok"))
            .prompt(simple_prompt("p"))
            .resource(Resource::new("mem://r", "r").handler(|_: ResourceRead| async { "r" })),
    );
    let c = TestClient::new(&server);
    let targets = [
        ("tools/call", json!({"name": "t"})),
        ("prompts/get", json!({"name": "p"})),
        ("resources/read", json!({"uri": "mem://r"})),
    ];
    let cases = [
        (
            json!({"inputResponses": "x"}),
            "inputResponses must be an object",
        ),
        (
            json!({"inputResponses": []}),
            "inputResponses must be an object",
        ),
        (
            json!({"inputResponses": null}),
            "inputResponses must be an object",
        ),
        (
            json!({"inputResponses": 1}),
            "inputResponses must be an object",
        ),
        (
            json!({"inputResponses": {"user_name": 12345}}),
            "inputResponses must map string IDs to bare result objects",
        ),
        (
            json!({"inputResponses": {"a": {}, "b": "x"}}),
            "inputResponses must map string IDs to bare result objects",
        ),
        (
            json!({"inputResponses": {"a": []}}),
            "inputResponses must map string IDs to bare result objects",
        ),
        (json!({"requestState": 5}), "requestState must be a string"),
        (json!({"requestState": {}}), "requestState must be a string"),
        (
            json!({"requestState": null}),
            "requestState must be a string",
        ),
    ];
    for (method, base) in &targets {
        for (extra, message) in &cases {
            let mut params = base.clone();
            for (k, v) in extra.as_object().expect("an object") {
                params[k] = v.clone();
            }
            let r = c.request(method, params.clone()).await;
            expect_error(&r, -32602, Some(message));
        }
        // Well-formed answers are accepted (unknown ids are ignored).
        let mut params = base.clone();
        params["inputResponses"] = json!({"unasked": {"action": "accept"}});
        let r = c.request(method, params.clone()).await;
        expect_result(&r, method);
        // A request state presa did not sign is refused, with no detail.
        params["requestState"] = json!("opaque");
        let r = c.request(method, params).await;
        expect_error(&r, -32602, Some("Invalid or expired request state"));
    }
}

// ---------------------------------------------------------------------------------------
// Runtime changes to the catalog; registration refusals.
// ---------------------------------------------------------------------------------------

fn names(result: &Value, key: &str) -> Vec<String> {
    result[key]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn tools_added_and_removed_at_runtime() {
    let server = build(builder().tool(text_tool("b", "b")));
    let c = TestClient::new(&server);
    server
        .add_tool(text_tool("a", "a"))
        .expect("a new name is accepted");
    server
        .add_tool(text_tool("c", "c"))
        .expect("a new name is accepted");
    let list = expect_result(&c.list_tools().await, "tools/list");
    assert_eq!(names(&list, "tools"), ["a", "b", "c"]);
    c.call_tool("a", json!({})).await.assert_text("a");
    assert_eq!(server.tool_names(), ["a", "b", "c"]);

    let dup = server.add_tool(text_tool("b", "again"));
    let e = dup.expect_err("a duplicate name is refused");
    assert!(e.to_string().contains("\"b\""), "{e}");
    c.call_tool("b", json!({})).await.assert_text("b");

    assert!(server.remove_tool("b"));
    assert!(!server.remove_tool("b"));
    let list = expect_result(&c.list_tools().await, "tools/list");
    assert_eq!(names(&list, "tools"), ["a", "c"]);
    expect_error(
        &c.call_tool("b", json!({})).await,
        -32602,
        Some("Unknown tool: b"),
    );

    // With no tool left, the capability and its methods go away.
    assert!(server.remove_tool("a") && server.remove_tool("c"));
    let d = expect_result(&c.discover().await, "server/discover");
    assert!(d["capabilities"].get("tools").is_none(), "{d}");
    expect_error(&c.list_tools().await, -32601, None);
    server.add_tool(text_tool("z", "z")).expect("added back");
    let d = expect_result(&c.discover().await, "server/discover");
    assert!(d["capabilities"].get("tools").is_some(), "{d}");
}

#[tokio::test]
async fn prompts_added_and_removed_at_runtime() {
    let server = build(builder().prompt(simple_prompt("m")));
    let c = TestClient::new(&server);
    server
        .add_prompt(simple_prompt("k"))
        .expect("a new name is accepted");
    let list = expect_result(&c.request("prompts/list", json!({})).await, "prompts/list");
    assert_eq!(names(&list, "prompts"), ["k", "m"]);
    let e = server
        .add_prompt(simple_prompt("k"))
        .expect_err("duplicate refused");
    assert!(e.to_string().contains("\"k\""), "{e}");
    assert!(server.remove_prompt("m"));
    assert!(!server.remove_prompt("m"));
    let list = expect_result(&c.request("prompts/list", json!({})).await, "prompts/list");
    assert_eq!(names(&list, "prompts"), ["k"]);
    let r = c.get_prompt("m", json!({})).await;
    expect_error(&r, -32602, Some("Unknown prompt: m"));
}

#[test]
fn duplicate_names_are_refused_at_build() {
    let e = build_error(
        builder()
            .tool(text_tool("twice", "1"))
            .tool(text_tool("twice", "2")),
    );
    assert!(e.contains("\"twice\"") && e.contains("twice"), "{e}");
    let e = build_error(
        builder()
            .prompt(simple_prompt("p"))
            .prompt(simple_prompt("p")),
    );
    assert!(e.contains("\"p\""), "{e}");
    let r = || Resource::new("mem://same", "r").handler(|_: ResourceRead| async { "r" });
    let e = build_error(builder().resource(r()).resource(r()));
    assert!(e.contains("mem://same"), "{e}");
    let t = || ResourceTemplate::new("notes://{id}", "n").handler(|_: ResourceRead| async { "n" });
    let e = build_error(builder().resource_template(t()).resource_template(t()));
    assert!(e.contains("notes://{id}"), "{e}");
}

#[test]
fn invalid_tool_names_are_refused_at_build() {
    let long = "x".repeat(129);
    for name in ["", "has space", "slash/name", "ünï", "a:b", long.as_str()] {
        let e = build_error(builder().tool(text_tool(name, "x")));
        assert!(
            e.contains(&format!("{name:?}")),
            "the error names the tool {name:?}: {e}"
        );
    }
    let longest = "x".repeat(128);
    for name in ["a", "A-b_c.d", longest.as_str()] {
        build(builder().tool(text_tool(name, "x")));
    }
}

#[test]
fn invalid_header_annotations_are_refused_at_build() {
    let tool = |props: Value| {
        Tool::new("h")
            .description("x")
            .input_schema(json!({"type": "object", "properties": props}))
            .handler(|_: ToolCall| async { "x" })
    };
    for props in [
        json!({"r": {"type": "number", "x-mcp-header": "R"}}),
        json!({"r": {"type": "object", "x-mcp-header": "R"}}),
        json!({"r": {"type": "array", "x-mcp-header": "R"}}),
        json!({"r": {"x-mcp-header": "R"}}),
        json!({"r": {"type": "string", "x-mcp-header": "a b"}}),
        json!({"r": {"type": "string", "x-mcp-header": "a:b"}}),
        json!({"r": {"type": "string", "x-mcp-header": ""}}),
        json!({"r": {"type": "string", "x-mcp-header": "Régión"}}),
        json!({"r": {"type": "string", "x-mcp-header": 5}}),
        json!({"a": {"type": "string", "x-mcp-header": "Region"},
               "b": {"type": "string", "x-mcp-header": "region"}}),
        json!({"a": {"type": "string", "x-mcp-header": "Region"},
               "b": {"type": "integer", "x-mcp-header": "Region"}}),
        // Annotations not reached through `properties` alone make the tool invalid.
        json!({"l": {"type": "array", "items": {"type": "string", "x-mcp-header": "R"}}}),
        json!({"u": {"anyOf": [{"type": "string", "x-mcp-header": "R"}, {"type": "null"}]}}),
        json!({"o": {"type": "object",
                     "additionalProperties": {"type": "string", "x-mcp-header": "R"}}}),
        json!({"o": {"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "Region"},
            "b": {"type": "object", "properties": {
                "c": {"type": "string", "x-mcp-header": "REGION"}}}}}}),
    ] {
        let e = build_error(builder().tool(tool(props.clone())));
        assert!(e.contains("\"h\""), "{props}: {e}");
    }
    let e = build_error(
        builder().tool(
            Tool::new("h")
                .description("x")
                .input_schema(json!({"type": "object",
                "$defs": {"r": {"type": "string", "x-mcp-header": "R"}},
                "properties": {"r": {"$ref": "#/$defs/r"}}}))
                .handler(|_: ToolCall| async { "x" }),
        ),
    );
    assert!(e.contains("through `properties` alone"), "{e}");
    for props in [
        json!({"r": {"type": "string", "x-mcp-header": "Region"}}),
        json!({"n": {"type": "integer", "x-mcp-header": "Count"},
               "b": {"type": "boolean", "x-mcp-header": "Flag"}}),
        json!({"t": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}}}}),
    ] {
        build(builder().tool(tool(props)));
    }
}

#[test]
fn network_refs_in_schemas_are_refused_at_build() {
    let input = |schema: Value| {
        Tool::new("r")
            .description("x")
            .input_schema(schema)
            .handler(|_: ToolCall| async { "x" })
    };
    for r in [
        "http://example.com/s.json",
        "https://example.com/s.json#/x",
        "other.json",
    ] {
        let e = build_error(builder().tool(input(json!({
            "type": "object", "properties": {"a": {"$ref": r}}
        }))));
        assert!(e.contains("\"r\""), "{e}");
        let e = build_error(builder().tool(text_tool("o", "x").output_schema(json!({"$ref": r}))));
        assert!(e.contains("\"o\""), "{e}");
    }
    build(builder().tool(input(json!({
        "type": "object",
        "$defs": {"s": {"type": "string"}},
        "properties": {"a": {"$ref": "#/$defs/s"}}
    }))));
}

#[test]
fn input_schemas_must_be_objects() {
    for schema in [json!({"type": "string"}), json!(true), json!([]), json!({})] {
        let e = build_error(
            builder().tool(
                Tool::new("s")
                    .description("x")
                    .input_schema(schema.clone())
                    .handler(|_: ToolCall| async { "x" }),
            ),
        );
        assert!(e.contains("\"s\""), "{schema}: {e}");
    }
}

#[test]
fn icons_must_be_https_or_data() {
    let http = || Icon::new("http://example.com/i.png");
    let e = build_error(builder().tool(text_tool("i", "x").icon(http())));
    assert!(e.contains("\"i\""), "{e}");
    let e = build_error(builder().prompt(simple_prompt("p").icon(http())));
    assert!(e.contains("\"p\""), "{e}");
    let e = build_error(
        builder().resource(
            Resource::new("mem://i", "i")
                .icon(http())
                .handler(|_: ResourceRead| async { "x" }),
        ),
    );
    assert!(e.contains("mem://i"), "{e}");
    let e = build_error(
        builder().resource_template(
            ResourceTemplate::new("n://{x}", "n")
                .icon(Icon::new("ftp://x/i.png"))
                .handler(|_: ResourceRead| async { "x" }),
        ),
    );
    assert!(e.contains("n://{x}"), "{e}");
    build(
        builder()
            .tool(
                text_tool("a", "x")
                    .icon(Icon::new("https://example.com/i.png").mime_type("image/png")),
            )
            .tool(text_tool("b", "x").icon(Icon::new("data:image/png;base64,iVBORw0KGgo="))),
    );
}

/// The server's own icons are served on every result's serverInfo: they are held to the
/// same rule (errata section 5, `basic/index.mdx`, "icons").
#[test]
fn server_info_icons_must_be_https_or_data() {
    let mut info = Implementation::new("t", "1");
    info.icons.push(Icon::new("http://example.com/i.png"));
    let e = match Server::builder(info).build() {
        Ok(_) => panic!("a serverInfo icon over http: should be refused at build"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("http://example.com/i.png"), "{e}");
}

/// An extension stands for nothing else than what basic/versioning.mdx allows: an
/// identifier with the `_meta` key syntax and a mandatory prefix, installed once, with
/// settings that are a JSON object. Otherwise build() refuses it (before, an id such
/// as `acme` was advertised, and any client declaring it was refused at admission).
#[test]
fn extensions_are_checked_at_build() {
    struct Ext(&'static str, Value);
    impl presa::extension::Extension for Ext {
        fn id(&self) -> &'static str {
            self.0
        }
        fn settings(&self) -> Value {
            self.1.clone()
        }
    }
    for (id, settings, says) in [
        ("acme", json!({}), "prefixed"),
        ("-acme.example/x", json!({}), "prefixed"),
        ("acme.example/x y", json!({}), "prefixed"),
        ("acme.example/x", json!([1]), "JSON object"),
        ("acme.example/x", json!(true), "JSON object"),
    ] {
        let e = build_error(builder().extension(Ext(id, settings)));
        assert!(e.contains(says), "{id}: {e}");
    }
    let e = build_error(
        builder()
            .extension(Ext("acme.example/x", json!({})))
            .extension(Ext("acme.example/x", json!({}))),
    );
    assert!(e.contains("twice"), "{e}");
    build(builder().extension(Ext("acme.example/x", json!({"level": 2}))));
}

#[tokio::test]
async fn registration_errors_for_prompts_and_templates() {
    // A completion for something that is not an argument / variable.
    let e = build_error(builder().prompt(
        simple_prompt("p").complete("nope", |_| async { Ok(presa::Completion::new(["x"])) }),
    ));
    assert!(e.contains("\"p\"") && e.contains("nope"), "{e}");
    let e = build_error(
        builder().resource_template(
            ResourceTemplate::new("n://{id}", "n")
                .handler(|_: ResourceRead| async { "x" })
                .complete("nope", |_| async { Ok(presa::Completion::new(["x"])) }),
        ),
    );
    assert!(e.contains("nope"), "{e}");
    // A relative resource URI, a bad template, a missing handler.
    build_error(
        builder()
            .resource(Resource::new("relative/path", "r").handler(|_: ResourceRead| async { "x" })),
    );
    build_error(builder().resource_template(
        ResourceTemplate::new("n://{a}{b}", "n").handler(|_: ResourceRead| async { "x" }),
    ));
    build_error(builder().tool(Tool::new("nohandler").description("x")));
    // A URI with what RFC 3986 does not allow in one.
    for uri in [
        "notes://a b",
        "notes://a%zz",
        "notes://a<b>",
        "notes://a\u{7f}",
        "notes://{x}",
        "notes://caf\u{e9}",
        "file:///a[1].txt",
        "notes://a#b#c",
    ] {
        let e = build_error(
            builder().resource(Resource::new(uri, "r").handler(|_: ResourceRead| async { "x" })),
        );
        assert!(e.contains("RFC 3986"), "{uri}: {e}");
    }
    // What RFC 3986 allows builds, and lists as the schema's `format: "uri"` accepts.
    let server = build(
        builder()
            .resource(
                Resource::new("notes://a%20b/caf%C3%A9?q=1&r=(2)#f", "r")
                    .handler(|_: ResourceRead| async { "x" }),
            )
            .resource(
                Resource::new("https://[::1]:8080/x", "v6")
                    .handler(|_: ResourceRead| async { "x" }),
            ),
    );
    let list = TestClient::new(&server)
        .request("resources/list", json!({}))
        .await;
    check_response("resources/list", &list.message);
    assert_eq!(
        list.message["result"]["resources"].as_array().map(Vec::len),
        Some(2)
    );
    // Template literals follow RFC 6570: none of "'<>\^`| and no stray %.
    for template in ["notes://a|b/{id}", "notes://100%/{id}", "notes://<x>/{id}"] {
        let e = build_error(builder().resource_template(
            ResourceTemplate::new(template, "t").handler(|_: ResourceRead| async { "x" }),
        ));
        assert!(e.contains("RFC 6570"), "{template}: {e}");
    }
    // An icon's src is a URI too.
    let e = build_error(
        builder().tool(text_tool("t", "x").icon(presa::Icon::new("https://example.com/a b.png"))),
    );
    assert!(e.contains("RFC 3986"), "{e}");
    // Annotations and icons the schema would refuse in the listing.
    for priority in [1.5, -0.1, f64::NAN] {
        let mut a = presa::Annotations::default();
        a.priority = Some(priority);
        let e = build_error(
            builder().resource(
                Resource::new("notes://p", "r")
                    .annotations(a)
                    .handler(|_: ResourceRead| async { "x" }),
            ),
        );
        assert!(e.contains("priority"), "{priority}: {e}");
    }
    let mut icon = presa::Icon::new("https://example.com/i.png");
    icon.theme = Some("blue".into());
    let e = build_error(builder().tool(text_tool("t", "x").icon(icon)));
    assert!(e.contains("theme"), "{e}");
    // An output schema that is not an object, and a `$schema` that is not a string.
    let e = build_error(builder().tool(text_tool("t", "x").output_schema(json!(true))));
    assert!(e.contains("output schema must be a JSON object"), "{e}");
    let e = build_error(
        builder().tool(text_tool("t", "x").output_schema(json!({"type": "object", "$schema": 7}))),
    );
    assert!(e.contains("$schema"), "{e}");
    // A template of relative URIs, or one no URI could match, as a resource's would be.
    for (template, says) in [
        ("rel/{id}", "absolute"),
        ("{scheme}://x", "absolute"),
        ("n://{%zz}", "not a level 1 variable"),
        ("n://a b/{id}", "space"),
    ] {
        let e = build_error(builder().resource_template(
            ResourceTemplate::new(template, "t").handler(|_: ResourceRead| async { "x" }),
        ));
        assert!(e.contains(says), "{template}: {e}");
    }
}

// ---------------------------------------------------------------------------------------
// Application errors (errata W-4) and handler panics.
// ---------------------------------------------------------------------------------------

#[test]
fn application_codes_in_reserved_ranges_are_refused() {
    for code in [
        -32000, -32001, -32002, -32019, -32020, -32042, -32050, -32099, -32600, -32700, -32768,
    ] {
        let refused = Error::application(code, "x");
        assert_eq!(
            refused.map(|e| e.code()).map_err(|r| r.0),
            Err(code),
            "{code}"
        );
    }
    for code in [-31999, -32769, 0, 1, 42, 40_000] {
        assert_eq!(Error::application(code, "x").map(|e| e.code()), Ok(code));
    }
}

#[tokio::test]
async fn an_application_error_reaches_the_client() {
    let server = build(
        builder().tool(
            Tool::new("app")
                .description("x")
                .handler(|_: ToolCall| async {
                    let e =
                        Error::application(4242, "quota exceeded").expect("an application code");
                    Err::<CallToolResult, _>(e.with_data(json!({"retryAfterMs": 1000})))
                }),
        ),
    );
    let r = TestClient::new(&server).call_tool("app", json!({})).await;
    let e = expect_error(&r, 4242, Some("quota exceeded"));
    assert_eq!(e["data"], json!({"retryAfterMs": 1000}));
}

/// A panic in any handler is -32603 with a fixed message and no detail; the server goes
/// on serving.
#[tokio::test]
async fn handler_panics_are_internal_errors_without_detail() {
    fn boom() -> &'static str {
        panic!("secret detail of the failure")
    }
    let server = build(
        builder()
            .tool(
                Tool::new("t")
                    .description("x")
                    .handler(|_: ToolCall| async { boom() }),
            )
            .tool(text_tool("fine", "fine"))
            .prompt(
                Prompt::new("p")
                    .description("x")
                    .argument(PromptArgument::new("a"))
                    .handler(|_: PromptGet| async { boom().to_owned() })
                    .complete("a", |_| async { Ok(presa::Completion::new([boom()])) }),
            )
            .resource(Resource::new("mem://r", "r").handler(|_: ResourceRead| async { boom() })),
    );
    let c = TestClient::new(&server);
    for (method, params) in [
        ("tools/call", json!({"name": "t"})),
        ("prompts/get", json!({"name": "p"})),
        ("resources/read", json!({"uri": "mem://r"})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "p"},
                                       "argument": {"name": "a", "value": ""}}),
        ),
    ] {
        let r = c.request(method, params).await;
        let e = expect_error(&r, -32603, Some("Internal error"));
        assert!(e.get("data").is_none(), "{method}: {e}");
        assert!(
            !r.message.to_string().contains("secret"),
            "{method}: {}",
            r.message
        );
    }
    c.call_tool("fine", json!({})).await.assert_text("fine");
}

#[tokio::test]
async fn state_is_shared_with_handlers() {
    struct Hits(AtomicUsize);
    let server = build(
        builder().state(Hits(AtomicUsize::new(0))).tool(
            Tool::new("hit")
                .description("Counts calls")
                .handler(|call: ToolCall| async move {
                    let hits = call.ctx.state::<Hits>().expect("the state is there");
                    (hits.0.fetch_add(1, Ordering::SeqCst) + 1).to_string()
                }),
        ),
    );
    let c = TestClient::new(&server);
    c.call_tool("hit", json!({})).await.assert_text("1");
    c.call_tool("hit", json!({})).await.assert_text("2");
    let other = TestClient::new(&server);
    other.call_tool("hit", json!({})).await.assert_text("3");
}

// ---------------------------------------------------------------------------------------
// Progress (section 8.2, errata W-18) and logging (section 8.1).
// ---------------------------------------------------------------------------------------

/// A tool that reports each of `arguments.values` ("nan", "inf" for the non-finite ones)
/// with `arguments.total` and `arguments.message`, and answers which reports were sent.
fn progress_server() -> Server {
    let parse = |v: &Value| match v {
        Value::String(s) if s == "nan" => f64::NAN,
        Value::String(s) if s == "inf" => f64::INFINITY,
        Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        other => other.as_f64().unwrap_or_default(),
    };
    build(
        builder().tool(
            Tool::new("progress")
                .description("Reports the given progress values")
                .input_schema(json!({"type": "object"}))
                .handler(move |call: ToolCall| async move {
                    let total = call.arguments.get("total").map(parse);
                    let message = call.arguments.get("message").and_then(Value::as_str);
                    let sent: Vec<String> = call
                        .arguments
                        .get("values")
                        .and_then(Value::as_array)
                        .map(|vs| {
                            vs.iter()
                                .map(|v| {
                                    u8::from(call.ctx.progress(parse(v), total, message))
                                        .to_string()
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    sent.join(",")
                }),
        ),
    )
}

async fn progress(c: &TestClient, token: Option<Value>, args: Value) -> TestResponse {
    let mut params = json!({"name": "progress", "arguments": args});
    if let Some(token) = token {
        params["_meta"] = json!({"progressToken": token});
    }
    let r = c.request("tools/call", params).await;
    expect_result(&r, "tools/call");
    r
}

fn progress_values(r: &TestResponse) -> Vec<f64> {
    r.notifications
        .iter()
        .map(|n| {
            assert_eq!(n["method"], "notifications/progress");
            n["params"]["progress"].as_f64().expect("a number")
        })
        .collect()
}

#[tokio::test]
async fn progress_is_not_sent_without_a_token() {
    let server = progress_server();
    let c = TestClient::new(&server);
    let r = progress(&c, None, json!({"values": [1, 2, 3]})).await;
    assert!(r.notifications.is_empty(), "{:?}", r.notifications);
    r.assert_text("0,0,0");
}

#[tokio::test]
async fn progress_carries_the_token_total_and_message() {
    let server = progress_server();
    let c = TestClient::new(&server);
    for token in [json!("tok"), json!(7), json!(-1)] {
        let r = progress(
            &c,
            Some(token.clone()),
            json!({"values": [0, 0.5, 1], "total": 1, "message": "working"}),
        )
        .await;
        r.assert_text("1,1,1");
        assert_eq!(progress_values(&r), [0.0, 0.5, 1.0]);
        for n in &r.notifications {
            check_notification(n);
            assert_eq!(n["params"]["progressToken"], token);
            assert_eq!(n["params"]["total"].as_f64(), Some(1.0));
            assert_eq!(n["params"]["message"], "working");
        }
    }
}

/// Values that do not strictly increase, and non-finite values, are dropped.
#[tokio::test]
async fn progress_values_strictly_increase() {
    let server = progress_server();
    let c = TestClient::new(&server);
    let r = progress(
        &c,
        Some(json!("t")),
        json!({"values": [1, 1, 0.5, 2, "nan", 2, "inf", "-inf", 3, 2.5, 10]}),
    )
    .await;
    r.assert_text("1,0,0,1,0,0,0,0,1,0,1");
    assert_eq!(progress_values(&r), [1.0, 2.0, 3.0, 10.0]);
    // A non-finite total drops the report.
    let r = progress(&c, Some(json!("t")), json!({"values": [1], "total": "nan"})).await;
    r.assert_text("0");
    assert!(r.notifications.is_empty());
}

#[tokio::test]
async fn progress_messages_are_cut_to_4096_bytes() {
    let server = progress_server();
    let c = TestClient::new(&server);
    let long = "a".repeat(5000);
    let r = progress(
        &c,
        Some(json!("t")),
        json!({"values": [1], "message": long}),
    )
    .await;
    let m = r.notifications[0]["params"]["message"]
        .as_str()
        .expect("a message");
    assert_eq!(m, &long[..4096]);
    // Cut at a character boundary: 3-byte characters, 4096 is not a multiple of 3.
    let euros = "€".repeat(2000);
    let r = progress(
        &c,
        Some(json!("t")),
        json!({"values": [1], "message": euros}),
    )
    .await;
    let m = r.notifications[0]["params"]["message"]
        .as_str()
        .expect("a message");
    assert!(m.len() <= 4096 && m.len() > 4090, "{} bytes", m.len());
    assert!(euros.starts_with(m));
    check_notification(&r.notifications[0]);
    // Short messages are untouched.
    let r = progress(
        &c,
        Some(json!("t")),
        json!({"values": [1], "message": "é✓"}),
    )
    .await;
    assert_eq!(r.notifications[0]["params"]["message"], "é✓");
}

fn logging_server(logging: bool) -> Server {
    build(
        builder().logging(logging).tool(
            Tool::new("log").description("Logs at every level").handler(
                |call: ToolCall| async move {
                    let sent: Vec<String> = LogLevel::ALL
                        .into_iter()
                        .map(|level| {
                            let ok = call.ctx.log_with_logger(
                                level,
                                Some("l"),
                                json!({"at": level.as_str()}),
                            );
                            u8::from(ok).to_string()
                        })
                        .collect();
                    sent.join("")
                },
            ),
        ),
    )
}

/// No `logLevel`: no log message at all; with one: messages at or above it, in order.
#[tokio::test]
async fn logging_thresholds() {
    let server = logging_server(true);
    let r = TestClient::new(&server).call_tool("log", json!({})).await;
    expect_result(&r, "tools/call");
    assert!(
        r.notifications.is_empty(),
        "no logLevel, no log: {:?}",
        r.notifications
    );
    r.assert_text("00000000");
    for (i, level) in LogLevel::ALL.into_iter().enumerate() {
        let c = TestClient::new(&server).with_log_level(level);
        let r = c.call_tool("log", json!({})).await;
        expect_result(&r, "tools/call");
        let got: Vec<&str> = r
            .notifications
            .iter()
            .map(|n| {
                check_notification(n);
                assert_eq!(n["method"], "notifications/message");
                assert_eq!(n["params"]["logger"], "l");
                assert_eq!(n["params"]["data"]["at"], n["params"]["level"]);
                n["params"]["level"].as_str().unwrap_or_default()
            })
            .collect();
        let expected: Vec<&str> = LogLevel::ALL[i..].iter().map(|l| l.as_str()).collect();
        assert_eq!(got, expected, "threshold {level}");
        r.assert_text(&format!("{}{}", "0".repeat(i), "1".repeat(8 - i)));
    }
}

/// With logging turned off, nothing is logged even when the request asks for it.
#[tokio::test]
async fn logging_off_sends_nothing() {
    let server = logging_server(false);
    let c = TestClient::new(&server).with_log_level(LogLevel::Debug);
    let r = c.call_tool("log", json!({})).await;
    expect_result(&r, "tools/call");
    assert!(r.notifications.is_empty(), "{:?}", r.notifications);
    r.assert_text("00000000");
}

/// Capabilities are per request (schema RequestMetaObject): a handler sees exactly what
/// this request declared.
#[tokio::test]
async fn client_capabilities_are_per_request() {
    let server = build(
        builder().tool(
            Tool::new("caps")
                .description("Shows the declared capabilities")
                .handler(|call: ToolCall| async move {
                    Value::Object(call.ctx.client_capabilities().clone()).to_string()
                }),
        ),
    );
    let c = TestClient::new(&server).with_capabilities(json!({"sampling": {}}));
    c.call_tool("caps", json!({}))
        .await
        .assert_text(r#"{"sampling":{}}"#);
    TestClient::new(&server)
        .call_tool("caps", json!({}))
        .await
        .assert_text("{}");
    let r = c
        .request(
            "tools/call",
            json!({"name": "caps", "_meta": {CAPS_KEY: {"roots": {}}}}),
        )
        .await;
    r.assert_text(r#"{"roots":{}}"#);
}

/// Content blocks of every kind validate against the schema.
#[tokio::test]
async fn content_blocks_validate() {
    let server = build(
        builder().tool(Tool::new("all").description("Every content kind").handler(
            |_: ToolCall| async {
                vec![
                    Content::text("t"),
                    Content::image(b"\x89PNG", "image/png"),
                    Content::audio(b"RIFF", "audio/wav"),
                    Content::resource_link("mem://r", "r"),
                    Content::resource(
                        presa::ResourceContents::text("mem://r", "x").mime_type("text/plain"),
                    ),
                    Content::resource(presa::ResourceContents::blob("mem://b", [0u8, 255])),
                ]
            },
        )),
    );
    let r = TestClient::new(&server).call_tool("all", json!({})).await;
    let result = expect_result(&r, "tools/call");
    assert_eq!(result["content"].as_array().map(Vec::len), Some(6));
    assert_eq!(result["content"][1]["data"], "iVBORw==");
    assert_eq!(result["content"][5]["resource"]["blob"], "AP8=");
}

/// The test client's assertions fail when they should (users rely on them).
#[tokio::test]
async fn test_client_assertions_fail_when_they_should() {
    let server = echo_server();
    let c = TestClient::new(&server);
    let ok = c.call_tool("echo", json!({"text": "hi"})).await;
    let tool_error = c.call_tool("echo", json!({})).await;
    let protocol_error = c.call_tool("nope", json!({})).await;
    let fails = |f: &dyn Fn()| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err();
    assert!(!fails(&|| {
        ok.assert_text("hi");
    }));
    assert!(fails(&|| {
        ok.assert_text("other");
    }));
    assert!(fails(&|| {
        ok.assert_tool_error("hi");
    }));
    assert!(fails(&|| {
        ok.assert_error(-32602);
    }));
    assert!(!fails(&|| {
        tool_error.assert_tool_error("Invalid arguments");
    }));
    assert!(fails(&|| {
        tool_error.assert_text("");
    }));
    assert!(fails(&|| {
        tool_error.assert_tool_error("something else");
    }));
    assert!(!fails(&|| {
        protocol_error.assert_error(-32602);
    }));
    assert!(fails(&|| {
        protocol_error.assert_error(-32601);
    }));
    assert!(fails(&|| {
        protocol_error.assert_text("");
    }));
    assert!(fails(&|| {
        let _ = protocol_error.result();
    }));
}

/// A JSON Schema 2020-12 input schema is listed exactly as written (wire section 16.1,
/// `json_schema_2020_12_tool`), and still validates arguments.
#[tokio::test]
async fn input_schemas_are_listed_unchanged() {
    let server = presa_tests::fixture();
    let c = TestClient::new(&server);
    let list = expect_tools_list(&c).await;
    let tool = list
        .iter()
        .find(|t| t["name"] == "json_schema_2020_12_tool")
        .expect("listed");
    assert_eq!(
        tool["inputSchema"],
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        })
    );
    let header = list
        .iter()
        .find(|t| t["name"] == "custom_header_region")
        .expect("listed");
    assert_eq!(
        header["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Region"
    );
    let r = c
        .call_tool(
            "json_schema_2020_12_tool",
            json!({"contactMethod": "phone", "phone": "1", "address": {"city": "X"}}),
        )
        .await;
    assert!(r.text().starts_with("received: "), "{}", r.message);
    let r = c
        .call_tool(
            "json_schema_2020_12_tool",
            json!({"contactMethod": "phone", "email": "a@b"}),
        )
        .await;
    presa_tests::assert_tool_error_text(
        &r,
        r#"Invalid arguments for tool json_schema_2020_12_tool: "phone" is a required property"#,
    );
    let r = c
        .call_tool(
            "json_schema_2020_12_tool",
            json!({"email": "a@b", "address": {"city": 5}}),
        )
        .await;
    presa_tests::assert_tool_error_text(
        &r,
        r#"Invalid arguments for tool json_schema_2020_12_tool: /address/city: 5 is not of type "string""#,
    );
}

async fn expect_tools_list(c: &TestClient) -> Vec<Value> {
    let r = c.list_tools().await;
    let result = r.result().clone();
    check_response("tools/list", &r.message);
    let tools = result["tools"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "tools are listed in a stable, sorted order");
    tools
}

/// A handler reads the request's `clientInfo` as the client sent it, unknown members
/// and escapes included, over both transports (RequestMeta::client_info).
#[tokio::test]
async fn client_info_reaches_the_handler_as_sent() {
    use crate::mrtr::{Client, KINDS};
    let server = builder()
        .tool(Tool::new("who").handler(|call: ToolCall| async move {
            Value::from(call.ctx.meta().client_info()).to_string()
        }))
        .build()
        .expect("the server builds");
    let info = json!({
        "name": "caf\u{e9}",
        "version": "1.2",
        "title": "A \"client\"",
        "icons": [{"src": "https://example.com/i.png", "sizes": ["48x48"]}],
        "com.example/extra": {"n": [1, 2.5, null]}
    });
    for kind in KINDS {
        let mut w = Client::start(kind, &server).await;
        let got = w
            .call(
                1,
                "tools/call",
                json!({"name": "who", "_meta": {INFO_KEY: info.clone()}}),
            )
            .await;
        assert_eq!(got.text(), info.to_string(), "{kind:?}");
    }
    // Without clientInfo (it is optional), the handler sees none.
    let mut meta = meta_map();
    meta.remove(INFO_KEY);
    let r = raw(
        &TestClient::new(&server),
        2,
        "tools/call",
        json!({"name": "who", "_meta": meta}),
    )
    .await;
    r.assert_text("null");
}
