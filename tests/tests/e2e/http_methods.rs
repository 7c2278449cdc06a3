//! The methods of 2026-07-28 over Streamable HTTP (wire sections 3 to 7, errata W-5,
//! W-13, W-15, W-17): server/discover and capabilities, result `_meta`, unknown and
//! removed methods, tools, resources, prompts, completion, pagination and caching hints.
//! Every reply is schema-checked; every error asserts status, code and id.

use crate::http_util::{builder, first_text, result, serve_tool, text_tool};
use presa::{
    CachePolicy, CacheScope, Cacheable, Completion, Error, Prompt, PromptArgument, PromptGet,
    PromptMessage, Resource, ResourceRead, ResourceTemplate, Tool, ToolCall,
};
use presa_tests::http::Harness;
use presa_tests::{VERSION, fixture, request};
use serde_json::{Value, json};

const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// Posts a request with the full `_meta`, checked both ways.
#[track_caller]
fn call<'a>(
    h: &'a Harness,
    id: i64,
    method: &'a str,
    params: Value,
) -> impl std::future::Future<Output = presa_tests::http::Reply> + 'a {
    h.call(id, method, params)
}

/// [`call`] of a request invalid on purpose: sent unchecked.
async fn call_unchecked(
    h: &Harness,
    id: i64,
    method: &str,
    params: Value,
) -> presa_tests::http::Reply {
    h.post_unchecked(&request(id, method, params), &[]).await
}

// ---- 4: server/discover ----

#[tokio::test]
async fn discover_result_shape() {
    let h = Harness::start(fixture()).await;
    let r = h.call(1, "server/discover", json!({})).await;
    let res = result(&r);
    assert!(
        r.header("content-type")
            .is_some_and(|c| c.starts_with("application/json")),
        "an ordinary result is plain JSON"
    );
    assert_eq!(res["resultType"], json!("complete"));
    assert_eq!(res["supportedVersions"], json!([VERSION]));
    assert_eq!(
        res["capabilities"],
        json!({"tools": {"listChanged": true}, "prompts": {"listChanged": true},
               "resources": {"listChanged": true, "subscribe": true}, "completions": {}, "logging": {},
               "extensions": {"io.modelcontextprotocol/tasks": {},
                              "io.modelcontextprotocol/skills": {"directoryRead": true}}})
    );
    assert_eq!(res["ttlMs"], json!(0));
    assert_eq!(res["cacheScope"], json!("private"));
    assert!(res["instructions"].as_str().is_some_and(|s| !s.is_empty()));
    let info = &res["_meta"][SERVER_INFO];
    assert_eq!(info["name"], json!("presa-conformance"));
    assert!(info["version"].is_string());
}

#[tokio::test]
async fn discover_advertises_only_what_is_registered() {
    let tools_only = builder()
        .tool(text_tool("only_tool", "x"))
        .build()
        .expect("builds");
    let h = Harness::start(tools_only).await;
    let r = h.call(2, "server/discover", json!({})).await;
    assert_eq!(
        result(&r)["capabilities"],
        json!({"tools": {"listChanged": true}, "logging": {}})
    );
    assert!(result(&r).get("instructions").is_none());

    let no_logging = builder()
        .tool(text_tool("only_tool", "x"))
        .logging(false)
        .build()
        .expect("builds");
    let h = Harness::start(no_logging).await;
    let r = h.call(3, "server/discover", json!({})).await;
    assert_eq!(
        result(&r)["capabilities"],
        json!({"tools": {"listChanged": true}})
    );

    let empty = builder().logging(false).build().expect("builds");
    let h = Harness::start(empty).await;
    let r = h.call(4, "server/discover", json!({})).await;
    assert_eq!(result(&r)["capabilities"], json!({}));
}

#[tokio::test]
async fn completions_capability_only_with_a_completion_provider() {
    let plain_prompt = Prompt::new("p")
        .description("A prompt")
        .argument(PromptArgument::new("a"))
        .handler(|_: PromptGet| async { vec![PromptMessage::user("hi")] });
    let server = builder()
        .prompt(plain_prompt.clone())
        .logging(false)
        .build()
        .expect("builds");
    let h = Harness::start(server).await;
    let r = h.call(5, "server/discover", json!({})).await;
    assert_eq!(
        result(&r)["capabilities"],
        json!({"prompts": {"listChanged": true}})
    );

    let completing = plain_prompt.complete("a", |_| async { Ok(Completion::new(["x"])) });
    let server = builder()
        .prompt(completing)
        .logging(false)
        .build()
        .expect("builds");
    let h = Harness::start(server).await;
    let r = h.call(6, "server/discover", json!({})).await;
    assert_eq!(
        result(&r)["capabilities"],
        json!({"prompts": {"listChanged": true}, "completions": {}})
    );

    let template = ResourceTemplate::new("notes://{id}", "note")
        .handler(|read: ResourceRead| async move { read.var("id").unwrap_or_default().to_owned() })
        .complete("id", |_| async { Ok(Completion::new(["1", "2"])) });
    let server = builder()
        .resource_template(template)
        .logging(false)
        .build()
        .expect("builds");
    let h = Harness::start(server).await;
    let r = h.call(7, "server/discover", json!({})).await;
    assert_eq!(
        result(&r)["capabilities"],
        json!({"resources": {}, "completions": {}})
    );
}

// ---- 3: resultType and serverInfo on every result ----

/// One successful request of every method the fixture serves.
fn every_method() -> Vec<(&'static str, Value)> {
    vec![
        ("server/discover", json!({})),
        ("tools/list", json!({})),
        ("tools/call", json!({"name": "test_simple_text"})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({"uri": "test://static-text"})),
        ("prompts/list", json!({})),
        ("prompts/get", json!({"name": "test_simple_prompt"})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                   "argument": {"name": "arg1", "value": "te"}}),
        ),
    ]
}

#[tokio::test]
async fn every_result_has_result_type_and_server_info() {
    let h = Harness::start(fixture()).await;
    for (i, (method, params)) in every_method().into_iter().enumerate() {
        let r = h.call(i as i64 + 10, method, params).await;
        let res = result(&r);
        assert_eq!(res["resultType"], json!("complete"), "{method}: {res}");
        assert_eq!(
            res["_meta"][SERVER_INFO]["name"],
            json!("presa-conformance"),
            "{method}: {res}"
        );
    }
}

#[tokio::test]
async fn server_info_can_be_left_out_of_results() {
    let server = presa_fixture_like_without_server_info();
    let h = Harness::start(server).await;
    for (i, (method, params)) in [
        ("server/discover", json!({})),
        ("tools/list", json!({})),
        ("tools/call", json!({"name": "t"})),
        ("resources/read", json!({"uri": "test://r"})),
        ("prompts/get", json!({"name": "p"})),
    ]
    .into_iter()
    .enumerate()
    {
        let r = h.call(i as i64 + 30, method, params).await;
        let res = result(&r);
        assert!(
            res.get("_meta").and_then(|m| m.get(SERVER_INFO)).is_none(),
            "{method}: {res}"
        );
        assert_eq!(res["resultType"], json!("complete"));
    }
}

fn presa_fixture_like_without_server_info() -> presa::Server {
    builder()
        .tool(text_tool("t", "x"))
        .resource(Resource::new("test://r", "r").handler(|_: ResourceRead| async { "r" }))
        .prompt(
            Prompt::new("p")
                .description("p")
                .handler(|_: PromptGet| async { vec![PromptMessage::user("p")] }),
        )
        .server_info_in_results(false)
        .build()
        .expect("builds")
}

// ---- 5.7: unknown and removed methods ----

#[tokio::test]
async fn unknown_method_is_32601_404_with_id() {
    let h = Harness::start(fixture()).await;
    call_unchecked(&h, 40, "nope/nope", json!({}))
        .await
        .assert_error(404, -32601, Some(json!(40)));
    let r = h
        .post_unchecked(&request("str-id", "tools/unknown", json!({})), &[])
        .await;
    r.assert_error(404, -32601, Some(json!("str-id")));
    // Method names are case-sensitive.
    call_unchecked(&h, 41, "Tools/List", json!({}))
        .await
        .assert_error(404, -32601, Some(json!(41)));
}

#[tokio::test]
async fn removed_methods_are_32601_404() {
    let h = Harness::start(fixture()).await;
    for (i, method) in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "notifications/initialized",
    ]
    .into_iter()
    .enumerate()
    {
        let id = 50 + i as i64;
        let params = match method {
            "initialize" => json!({"protocolVersion": VERSION, "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"}}),
            "logging/setLevel" => json!({"level": "info"}),
            "resources/subscribe" | "resources/unsubscribe" => json!({"uri": "test://static-text"}),
            _ => json!({}),
        };
        call_unchecked(&h, id, method, params)
            .await
            .assert_error(404, -32601, Some(json!(id)));
    }
}

#[tokio::test]
async fn initialize_with_modern_meta_names_supported_versions() {
    // Errata W-13: an error answering initialize should name the supported versions.
    let h = Harness::start(fixture()).await;
    let r = call_unchecked(&h, 60, "initialize", json!({})).await;
    r.assert_error(404, -32601, Some(json!(60)));
    let e = &r.response()["error"];
    assert_eq!(
        e["data"],
        json!({"supported": [VERSION]}),
        "the error names the supported versions: {e}"
    );
}

#[tokio::test]
async fn legacy_initialize_is_32022_with_requested_and_supported() {
    let h = Harness::start(fixture()).await;
    let msg = json!({"jsonrpc": "2.0", "id": 61, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "legacy", "version": "1.0"}
    }});
    let r = h.post_unchecked(&msg, &[]).await;
    r.assert_error(400, -32022, Some(json!(61)));
    let data = &r.response()["error"]["data"];
    assert_eq!(data["requested"], json!("2025-06-18"));
    assert_eq!(data["supported"], json!([VERSION]));
    // A real legacy client sends no MCP headers at all: on a server that serves
    // 2026-07-28 alone, still a 400 that names versions. (A server that serves legacy
    // clients too opens a session: see `legacy_http`.)
    let h = Harness::start(
        crate::http_util::builder()
            .tool(crate::http_util::text_tool("t", "text"))
            .legacy_clients(false)
            .build()
            .expect("builds"),
    )
    .await;
    let r = h
        .post_unchecked(&msg, &[("MCP-Protocol-Version", ""), ("Mcp-Method", "")])
        .await;
    r.assert_error(400, -32022, Some(json!(61)));
    assert_eq!(
        r.response()["error"]["data"],
        json!({"requested": "2025-06-18", "supported": [VERSION]}),
        "{}",
        r.body
    );
    // With a `_meta` of its own (a progress token) and no MCP headers: the same answer.
    let mut with_meta = msg;
    with_meta["params"]["_meta"] = json!({"progressToken": 7});
    let r = h
        .post_unchecked(
            &with_meta,
            &[("MCP-Protocol-Version", ""), ("Mcp-Method", "")],
        )
        .await;
    r.assert_error(400, -32022, Some(json!(61)));
    assert_eq!(
        r.response()["error"]["data"],
        json!({"requested": "2025-06-18", "supported": [VERSION]}),
        "{}",
        r.body
    );
}

#[tokio::test]
async fn methods_of_unregistered_capabilities_are_32601() {
    let prompts_only = builder()
        .prompt(
            Prompt::new("p")
                .description("p")
                .handler(|_: PromptGet| async { vec![PromptMessage::user("p")] }),
        )
        .build()
        .expect("builds");
    let h = Harness::start(prompts_only).await;
    for (i, (method, params)) in [
        ("tools/list", json!({})),
        ("tools/call", json!({"name": "t"})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({"uri": "test://x"})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "p"},
            "argument": {"name": "a", "value": ""}}),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let id = 70 + i as i64;
        call(&h, id, method, params)
            .await
            .assert_error(404, -32601, Some(json!(id)));
    }
    let tools_only = builder().tool(text_tool("t", "x")).build().expect("builds");
    let h = Harness::start(tools_only).await;
    for method in ["prompts/list", "resources/list"] {
        call(&h, 79, method, json!({}))
            .await
            .assert_error(404, -32601, Some(json!(79)));
    }
    call(&h, 79, "prompts/get", json!({"name": "p"}))
        .await
        .assert_error(404, -32601, Some(json!(79)));
}

// ---- 5.1, 5.2: tools ----

#[tokio::test]
async fn tools_list_is_sorted_and_complete() {
    let h = Harness::start(fixture()).await;
    let r = h.call(80, "tools/list", json!({})).await;
    let tools = result(&r)["tools"].as_array().expect("tools").clone();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    assert_eq!(names.first(), Some(&"a_header_probe"));
    assert_eq!(names.len(), 41, "{names:?}");
    assert!(result(&r).get("nextCursor").is_none());
    for t in &tools {
        assert!(t["description"].is_string(), "{t}");
        assert_eq!(t["inputSchema"]["type"], json!("object"), "{t}");
    }
    let region = tools
        .iter()
        .find(|t| t["name"] == "custom_header_region")
        .expect("listed");
    assert_eq!(
        region["inputSchema"]["properties"]["region"]["x-mcp-header"],
        json!("Region")
    );
    let schema = tools
        .iter()
        .find(|t| t["name"] == "json_schema_2020_12_tool")
        .expect("listed");
    assert_eq!(
        schema["inputSchema"]["$defs"]["address"]["$anchor"],
        json!("addressDef")
    );
    assert_eq!(schema["inputSchema"]["additionalProperties"], json!(false));
}

#[tokio::test]
async fn tools_call_content_kinds() {
    let h = Harness::start(fixture()).await;
    let r = h
        .call(81, "tools/call", json!({"name": "test_simple_text"}))
        .await;
    let res = result(&r);
    assert_eq!(
        first_text(res),
        "This is a simple text response for testing."
    );
    assert_eq!(
        res.get("isError").cloned().unwrap_or(json!(false)),
        json!(false)
    );
    let r = h
        .call(
            82,
            "tools/call",
            json!({"name": "test_image_content", "arguments": {}}),
        )
        .await;
    assert_eq!(result(&r)["content"][0]["type"], json!("image"));
    assert_eq!(result(&r)["content"][0]["mimeType"], json!("image/png"));
    let r = h
        .call(
            83,
            "tools/call",
            json!({"name": "test_audio_content", "arguments": {}}),
        )
        .await;
    assert_eq!(result(&r)["content"][0]["mimeType"], json!("audio/wav"));
    let r = h
        .call(
            84,
            "tools/call",
            json!({"name": "test_embedded_resource", "arguments": {}}),
        )
        .await;
    assert_eq!(
        result(&r)["content"][0]["resource"]["uri"],
        json!("test://embedded-resource")
    );
    let r = h
        .call(
            85,
            "tools/call",
            json!({"name": "test_multiple_content_types", "arguments": {}}),
        )
        .await;
    let kinds: Vec<&str> = result(&r)["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|c| c["type"].as_str())
        .collect();
    assert_eq!(kinds, ["text", "image", "resource"]);
    let r = h
        .call(
            86,
            "tools/call",
            json!({"name": "test_error_handling", "arguments": {}}),
        )
        .await;
    assert_eq!(result(&r)["isError"], json!(true));
    assert!(!first_text(result(&r)).is_empty());
}

#[tokio::test]
async fn unknown_tool_is_32602_400() {
    let h = Harness::start(fixture()).await;
    call(
        &h,
        87,
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    )
    .await
    .assert_error(400, -32602, Some(json!(87)));
}

#[tokio::test]
async fn tools_call_without_a_usable_name_is_32602() {
    let h = Harness::start(fixture()).await;
    for params in [
        json!({}),
        json!({"name": ""}),
        json!({"name": 5}),
        json!({"name": null}),
    ] {
        call_unchecked(&h, 88, "tools/call", params)
            .await
            .assert_error(400, -32602, Some(json!(88)));
    }
}

#[tokio::test]
async fn tools_call_arguments_not_an_object_is_32602() {
    let h = Harness::start(fixture()).await;
    for args in [json!([]), json!("x"), json!(1), json!(true)] {
        call_unchecked(
            &h,
            89,
            "tools/call",
            json!({"name": "test_simple_text", "arguments": args}),
        )
        .await
        .assert_error(400, -32602, Some(json!(89)));
    }
}

#[tokio::test]
async fn arguments_failing_the_input_schema_are_a_tool_error() {
    let h = Harness::start(fixture()).await;
    for params in [
        json!({"name": "test_simple_text", "arguments": {"unexpected": 1}}),
        json!({"name": "json_schema_2020_12_tool", "arguments": {}}),
        json!({"name": "json_schema_2020_12_tool", "arguments": {"contactMethod": "phone", "email": "a@b.c"}}),
    ] {
        let r = h.call(90, "tools/call", params.clone()).await;
        let res = result(&r);
        assert_eq!(res["isError"], json!(true), "{params}: {res}");
        assert!(!first_text(res).is_empty());
    }
    let r = h
        .call(
            91,
            "tools/call",
            json!({"name": "json_schema_2020_12_tool", "arguments":
                {"name": "n", "contactMethod": "phone", "phone": "1", "address": {"city": "c"}}}),
        )
        .await;
    assert_eq!(
        result(&r).get("isError").cloned().unwrap_or(json!(false)),
        json!(false)
    );
}

#[tokio::test]
async fn handler_protocol_error_keeps_its_code_and_status() {
    let h = serve_tool(
        Tool::new("refuses")
            .description("Fails with invalid params")
            .handler(|_: ToolCall| async {
                Err::<String, _>(Error::invalid_params("bad input").with_data(json!({"why": 1})))
            }),
    )
    .await;
    let r = call(&h, 93, "tools/call", json!({"name": "refuses"})).await;
    r.assert_error(400, -32602, Some(json!(93)));
    assert_eq!(r.response()["error"]["data"], json!({"why": 1}));
}

// ---- 5.3, 5.4: resources ----

#[tokio::test]
async fn resources_list_and_templates_list() {
    let h = Harness::start(fixture()).await;
    let r = h.call(100, "resources/list", json!({})).await;
    let uris: Vec<&str> = result(&r)["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    // The resource that needs input is listed after the plain ones (the caching scenario
    // reads the first).
    // The fixture's skill files (the Skills extension) sort first.
    assert_eq!(
        uris,
        [
            "skill://fixture-guide/SKILL.md",
            "skill://fixture-guide/references/REFERENCE.md",
            "skill://fixture-guide/scripts/list.py",
            "skill://tools/echo-usage/SKILL.md",
            "test://static-binary",
            "test://static-text",
            "test://watched-resource",
            "z-mrtr://input-required-preview"
        ]
    );
    let r = h.call(101, "resources/templates/list", json!({})).await;
    assert_eq!(
        result(&r)["resourceTemplates"][0]["uriTemplate"],
        json!("test://template/{id}/data")
    );
}

#[tokio::test]
async fn resources_read_text_binary_and_template() {
    let h = Harness::start(fixture()).await;
    let r = h
        .call(102, "resources/read", json!({"uri": "test://static-text"}))
        .await;
    let c = &result(&r)["contents"][0];
    assert_eq!(c["uri"], json!("test://static-text"));
    assert_eq!(c["mimeType"], json!("text/plain"));
    assert_eq!(
        c["text"],
        json!("This is a static text resource for testing.")
    );
    let r = h
        .call(
            103,
            "resources/read",
            json!({"uri": "test://static-binary"}),
        )
        .await;
    let c = &result(&r)["contents"][0];
    assert_eq!(c["blob"], json!("AAECA3+A/v8="));
    assert_eq!(c["mimeType"], json!("application/octet-stream"));
    let r = h
        .call(
            104,
            "resources/read",
            json!({"uri": "test://template/123/data"}),
        )
        .await;
    let c = &result(&r)["contents"][0];
    assert_eq!(c["uri"], json!("test://template/123/data"));
    assert_eq!(c["text"], json!("Template resource data for id 123"));
}

/// A handler that finds nothing to return (empty `contents`) is answered as not found:
/// an empty `contents` is what the revision forbids for a missing resource.
#[tokio::test]
async fn a_resource_with_no_contents_is_not_found() {
    let server = builder()
        .resource(
            Resource::new("test://empty", "empty")
                .handler(|_: ResourceRead| async { presa::ReadResourceResult::new([]) }),
        )
        .build()
        .expect("builds");
    let h = Harness::start(server).await;
    let r = call(&h, 7, "resources/read", json!({"uri": "test://empty"})).await;
    r.assert_error(400, -32602, Some(json!(7)));
    assert_eq!(r.response()["error"]["data"]["uri"], json!("test://empty"));
}

#[tokio::test]
async fn unknown_resource_is_32602_with_data_uri() {
    let h = Harness::start(fixture()).await;
    let uri = "test://nonexistent-resource-for-conformance-testing";
    let r = call(&h, 105, "resources/read", json!({"uri": uri})).await;
    r.assert_error(400, -32602, Some(json!(105)));
    assert_eq!(r.response()["error"]["data"]["uri"], json!(uri));
    // A URI that almost matches the template is not found either.
    let r = call(
        &h,
        106,
        "resources/read",
        json!({"uri": "test://template/123"}),
    )
    .await;
    r.assert_error(400, -32602, Some(json!(106)));
    assert_eq!(
        r.response()["error"]["data"]["uri"],
        json!("test://template/123")
    );
}

#[tokio::test]
async fn resource_uri_must_be_a_non_empty_absolute_uri() {
    let h = Harness::start(fixture()).await;
    for params in [
        json!({"uri": "static-text"}),
        json!({"uri": "/test/static-text"}),
        json!({"uri": "1test://x"}),
        json!({"uri": ""}),
        json!({"uri": 5}),
        json!({}),
    ] {
        call_unchecked(&h, 107, "resources/read", params.clone())
            .await
            .assert_error(400, -32602, Some(json!(107)));
    }
}

// ---- 5.5: prompts ----

#[tokio::test]
async fn prompts_list_and_get() {
    let h = Harness::start(fixture()).await;
    let r = h.call(110, "prompts/list", json!({})).await;
    let prompts = result(&r)["prompts"].as_array().expect("prompts").clone();
    assert_eq!(prompts.len(), 5);
    for p in &prompts {
        assert!(p["description"].is_string(), "{p}");
    }
    let with_args = prompts
        .iter()
        .find(|p| p["name"] == "test_prompt_with_arguments")
        .expect("listed");
    assert_eq!(with_args["arguments"][0]["name"], json!("arg1"));
    assert_eq!(with_args["arguments"][0]["required"], json!(true));
    let r = h
        .call(
            111,
            "prompts/get",
            json!({"name": "test_prompt_with_arguments",
                   "arguments": {"arg1": "testValue1", "arg2": "testValue2"}}),
        )
        .await;
    let text = result(&r)["messages"].to_string();
    assert!(
        text.contains("testValue1") && text.contains("testValue2"),
        "{text}"
    );
    let r = h
        .call(
            112,
            "prompts/get",
            json!({"name": "test_prompt_with_embedded_resource",
                   "arguments": {"resourceUri": "test://example-resource"}}),
        )
        .await;
    assert_eq!(
        result(&r)["messages"][0]["content"]["type"],
        json!("resource")
    );
    let r = h
        .call(
            113,
            "prompts/get",
            json!({"name": "test_prompt_with_image"}),
        )
        .await;
    assert_eq!(result(&r)["messages"][0]["content"]["type"], json!("image"));
}

#[tokio::test]
async fn prompts_get_missing_required_arguments_lists_them() {
    let h = Harness::start(fixture()).await;
    let r = call(
        &h,
        114,
        "prompts/get",
        json!({"name": "test_prompt_with_arguments"}),
    )
    .await;
    r.assert_error(400, -32602, Some(json!(114)));
    assert_eq!(
        r.response()["error"]["data"]["missing"],
        json!(["arg1", "arg2"])
    );
    let r = call(
        &h,
        115,
        "prompts/get",
        json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "x"}}),
    )
    .await;
    r.assert_error(400, -32602, Some(json!(115)));
    assert_eq!(r.response()["error"]["data"]["missing"], json!(["arg2"]));
}

#[tokio::test]
async fn prompts_get_arguments_must_be_strings() {
    let h = Harness::start(fixture()).await;
    for args in [
        json!({"arg1": 1, "arg2": "b"}),
        json!({"arg1": null, "arg2": "b"}),
        json!({"arg1": ["a"], "arg2": "b"}),
        json!(["a", "b"]),
        json!("a"),
    ] {
        call_unchecked(
            &h,
            116,
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": args}),
        )
        .await
        .assert_error(400, -32602, Some(json!(116)));
    }
}

#[tokio::test]
async fn prompts_get_unknown_or_unnamed_is_32602() {
    let h = Harness::start(fixture()).await;
    for params in [
        json!({"name": "no_such_prompt"}),
        json!({}),
        json!({"name": ""}),
        json!({"name": 3}),
    ] {
        call_unchecked(&h, 117, "prompts/get", params)
            .await
            .assert_error(400, -32602, Some(json!(117)));
    }
}

// ---- 5.6: completion ----

fn complete_params(reference: Value, argument: Value) -> Value {
    json!({"ref": reference, "argument": argument})
}

fn prompt_ref() -> Value {
    json!({"type": "ref/prompt", "name": "test_prompt_with_arguments"})
}

#[tokio::test]
async fn completion_happy_path() {
    let h = Harness::start(fixture()).await;
    let r = h
        .call(
            120,
            "completion/complete",
            complete_params(prompt_ref(), json!({"name": "arg1", "value": "te"})),
        )
        .await;
    let c = &result(&r)["completion"];
    assert_eq!(c["values"], json!(["test", "testing"]));
    assert_eq!(c["total"], json!(2));
    assert_eq!(c["hasMore"], json!(false));
    assert!(result(&r).get("ttlMs").is_none());
    let mut with_context = complete_params(prompt_ref(), json!({"name": "arg1", "value": "pa"}));
    with_context["context"] = json!({"arguments": {"arg2": "x"}});
    let r = h.call(121, "completion/complete", with_context).await;
    assert_eq!(result(&r)["completion"]["values"], json!(["paris", "park"]));
}

#[tokio::test]
async fn completion_errors_are_32602() {
    let h = Harness::start(fixture()).await;
    let arg = json!({"name": "arg1", "value": "t"});
    let cases = [
        json!({"argument": arg}),
        complete_params(json!("ref/prompt"), arg.clone()),
        complete_params(json!({"type": "ref/other", "name": "x"}), arg.clone()),
        complete_params(json!({"type": "ref/prompt"}), arg.clone()),
        complete_params(
            json!({"type": "ref/prompt", "name": "no_such_prompt"}),
            arg.clone(),
        ),
        complete_params(prompt_ref(), json!({"name": "arg2", "value": "t"})),
        complete_params(prompt_ref(), json!({"name": "arg1"})),
        complete_params(prompt_ref(), json!({"name": "arg1", "value": 5})),
        complete_params(prompt_ref(), json!("arg1")),
        json!({"ref": prompt_ref()}),
        json!({"ref": prompt_ref(), "argument": arg, "context": "x"}),
        json!({"ref": prompt_ref(), "argument": arg, "context": {"arguments": {"a": 1}}}),
        complete_params(json!({"type": "ref/resource"}), arg.clone()),
    ];
    for (i, params) in cases.into_iter().enumerate() {
        let id = 130 + i as i64;
        call_unchecked(&h, id, "completion/complete", params.clone())
            .await
            .assert_error(400, -32602, Some(json!(id)));
    }
}

#[tokio::test]
async fn completion_unknown_resource_template_has_data_uri() {
    let h = Harness::start(fixture()).await;
    let r = call(
        &h,
        150,
        "completion/complete",
        complete_params(
            json!({"type": "ref/resource", "uri": "test://nothing/{x}"}),
            json!({"name": "x", "value": ""}),
        ),
    )
    .await;
    r.assert_error(400, -32602, Some(json!(150)));
    assert_eq!(
        r.response()["error"]["data"]["uri"],
        json!("test://nothing/{x}")
    );
}

#[tokio::test]
async fn completion_of_a_resource_template_by_template_or_uri() {
    // Errata W-15: ref/resource takes a URI or a URI template.
    let template = ResourceTemplate::new("notes://{id}", "note")
        .handler(|read: ResourceRead| async move { read.var("id").unwrap_or_default().to_owned() })
        .complete("id", |req| async move {
            Ok(Completion::new(
                ["alpha", "beta", "alps"]
                    .into_iter()
                    .filter(|v| v.starts_with(req.value.as_str())),
            ))
        });
    let server = builder()
        .resource_template(template)
        .build()
        .expect("builds");
    let h = Harness::start(server).await;
    for uri in ["notes://{id}", "notes://al"] {
        let r = h
            .call(
                151,
                "completion/complete",
                complete_params(
                    json!({"type": "ref/resource", "uri": uri}),
                    json!({"name": "id", "value": "al"}),
                ),
            )
            .await;
        assert_eq!(
            result(&r)["completion"]["values"],
            json!(["alpha", "alps"]),
            "{uri}"
        );
    }
}

// ---- 6: pagination ----

fn paged_server() -> presa::Server {
    let mut b = builder().page_size(2);
    for name in ["echo", "alpha", "delta", "charlie", "bravo"] {
        b = b.tool(text_tool(name, "x"));
    }
    for name in ["p3", "p1", "p2"] {
        b = b.prompt(
            Prompt::new(name)
                .description("p")
                .handler(|_: PromptGet| async { vec![PromptMessage::user("p")] }),
        );
    }
    b.build().expect("builds")
}

async fn walk(h: &Harness, method: &str, key: &str) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    for i in 0..20 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let r = h.call(200 + i, method, params).await;
        let res = result(&r).clone();
        pages.push(
            res[key]
                .as_array()
                .expect("items")
                .iter()
                .map(|t| t["name"].as_str().expect("name").to_owned())
                .collect(),
        );
        match res.get("nextCursor") {
            None => return pages,
            Some(Value::String(c)) => cursor = Some(c.clone()),
            Some(other) => panic!("nextCursor must be a string, got {other}"),
        }
    }
    panic!("pagination of {method} does not end");
}

#[tokio::test]
async fn tools_list_pages_until_next_cursor_is_absent() {
    let h = Harness::start(paged_server()).await;
    let pages = walk(&h, "tools/list", "tools").await;
    assert_eq!(
        pages,
        [
            vec!["alpha", "bravo"],
            vec!["charlie", "delta"],
            vec!["echo"]
        ]
    );
    let pages = walk(&h, "prompts/list", "prompts").await;
    assert_eq!(pages, [vec!["p1", "p2"], vec!["p3"]]);
}

#[tokio::test]
async fn cursor_survives_unrelated_catalog_changes() {
    // Errata W-17: cursors should be stable.
    let server = paged_server();
    let h = Harness::start(server.clone()).await;
    let r = h.call(220, "tools/list", json!({})).await;
    let cursor = result(&r)["nextCursor"]
        .as_str()
        .expect("a cursor")
        .to_owned();
    server.add_tool(text_tool("zulu", "z")).expect("added");
    assert!(server.remove_tool("echo"));
    let r = h.call(221, "tools/list", json!({"cursor": cursor})).await;
    let names: Vec<&str> = result(&r)["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["charlie", "delta"]);
    let next = result(&r)["nextCursor"].as_str().expect("more").to_owned();
    let r = h.call(222, "tools/list", json!({"cursor": next})).await;
    assert_eq!(result(&r)["tools"][0]["name"], json!("zulu"));
    assert!(result(&r).get("nextCursor").is_none());
    // The removed tool is gone and the added one callable.
    call(&h, 223, "tools/call", json!({"name": "echo"}))
        .await
        .assert_error(400, -32602, Some(json!(223)));
    let r = h.call(224, "tools/call", json!({"name": "zulu"})).await;
    assert_eq!(first_text(result(&r)), "z");
}

#[tokio::test]
async fn every_page_carries_the_same_cache_scope() {
    let server = {
        let mut b = builder()
            .page_size(1)
            .cache(Cacheable::Tools, CachePolicy::new(5000, CacheScope::Public));
        for name in ["a", "b", "c"] {
            b = b.tool(text_tool(name, "x"));
        }
        b.build().expect("builds")
    };
    let h = Harness::start(server).await;
    let mut cursor: Option<String> = None;
    for i in 0..3 {
        let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
        let r = h.call(230 + i, "tools/list", params).await;
        let res = result(&r);
        assert_eq!(res["cacheScope"], json!("public"));
        assert_eq!(res["ttlMs"], json!(5000));
        cursor = res["nextCursor"].as_str().map(str::to_owned);
    }
    assert!(cursor.is_none());
}

// ---- 7: caching hints ----

#[tokio::test]
async fn caching_hints_on_the_six_cacheable_results_and_nowhere_else() {
    let h = Harness::start(fixture()).await;
    for (i, (method, params)) in every_method().into_iter().enumerate() {
        let r = h.call(240 + i as i64, method, params).await;
        let res = result(&r);
        let cacheable = matches!(
            method,
            "server/discover"
                | "tools/list"
                | "prompts/list"
                | "resources/list"
                | "resources/templates/list"
                | "resources/read"
        );
        if cacheable {
            assert_eq!(res["ttlMs"], json!(0), "{method}: {res}");
            assert_eq!(res["cacheScope"], json!("private"), "{method}: {res}");
        } else {
            assert!(res.get("ttlMs").is_none(), "{method}: {res}");
            assert!(res.get("cacheScope").is_none(), "{method}: {res}");
        }
    }
}

#[tokio::test]
async fn configured_cache_policies_appear() {
    let server = builder()
        .tool(text_tool("t", "x"))
        .prompt(
            Prompt::new("p")
                .description("p")
                .handler(|_: PromptGet| async { vec![PromptMessage::user("p")] }),
        )
        .resource(Resource::new("test://default", "d").handler(|_: ResourceRead| async { "d" }))
        .resource(
            Resource::new("test://own", "o")
                .cache(CachePolicy::new(7, CacheScope::Private))
                .handler(|_: ResourceRead| async { "o" }),
        )
        .resource_template(
            ResourceTemplate::new("test://t/{x}", "t")
                .cache(CachePolicy::new(9, CacheScope::Public))
                .handler(|_: ResourceRead| async { "t" }),
        )
        .cache(
            Cacheable::Discover,
            CachePolicy::new(1000, CacheScope::Public),
        )
        .cache(Cacheable::Tools, CachePolicy::new(2000, CacheScope::Public))
        .cache(
            Cacheable::Prompts,
            CachePolicy::new(3000, CacheScope::Private),
        )
        .cache(
            Cacheable::Resources,
            CachePolicy::new(4000, CacheScope::Public),
        )
        .cache(
            Cacheable::ResourceTemplates,
            CachePolicy::new(5000, CacheScope::Public),
        )
        .cache(
            Cacheable::ResourceRead,
            CachePolicy::new(6000, CacheScope::Public),
        )
        .build()
        .expect("builds");
    let h = Harness::start(server).await;
    for (i, (method, params, ttl, scope)) in [
        ("server/discover", json!({}), 1000, "public"),
        ("tools/list", json!({}), 2000, "public"),
        ("prompts/list", json!({}), 3000, "private"),
        ("resources/list", json!({}), 4000, "public"),
        ("resources/templates/list", json!({}), 5000, "public"),
        (
            "resources/read",
            json!({"uri": "test://default"}),
            6000,
            "public",
        ),
        ("resources/read", json!({"uri": "test://own"}), 7, "private"),
        ("resources/read", json!({"uri": "test://t/1"}), 9, "public"),
    ]
    .into_iter()
    .enumerate()
    {
        let r = h.call(250 + i as i64, method, params.clone()).await;
        let res = result(&r);
        assert_eq!(res["ttlMs"], json!(ttl), "{method} {params}: {res}");
        assert_eq!(res["cacheScope"], json!(scope), "{method} {params}: {res}");
    }
    for (method, params) in [
        ("tools/call", json!({"name": "t"})),
        ("prompts/get", json!({"name": "p"})),
    ] {
        let r = h.call(260, method, params).await;
        assert!(result(&r).get("ttlMs").is_none(), "{method}");
        assert!(result(&r).get("cacheScope").is_none(), "{method}");
    }
}
