//! Transport-independent catalog rules through `presa::testing::TestClient` (and a few
//! over both real transports with the shared client): resources
//! (wire sections 5.3, 5.4; errata W-5), prompts (5.5), completion (5.6; errata W-15),
//! pagination (section 6; errata W-17) and caching hints (section 7; errata W-10).

use crate::mrtr::{Client, Got, KINDS};
use crate::pipeline::{
    build, builder, expect_error, expect_result, server_info, simple_prompt, text_tool,
};
use presa::testing::{TestClient, TestResponse};
use presa::{
    CachePolicy, CacheScope, Cacheable, Completion, CompletionRequest, Prompt, PromptArgument,
    PromptGet, Resource, ResourceContents, ResourceRead, ResourceTemplate, Server, ServerBuilder,
};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// Resources.
// ---------------------------------------------------------------------------------------

fn resource_server() -> Server {
    build(
        builder()
            .resource(
                Resource::new("mem://text", "text")
                    .description("A text")
                    .mime_type("text/plain")
                    .handler(|_: ResourceRead| async { "hello" }),
            )
            .resource(
                Resource::new("mem://bin", "bin")
                    .mime_type("application/octet-stream")
                    .size(4)
                    .handler(|_: ResourceRead| async { vec![0u8, 1, 2, 255] }),
            )
            .resource(
                Resource::new("mem://multi", "multi").handler(|r: ResourceRead| async move {
                    vec![
                        ResourceContents::text(r.uri.clone(), "one"),
                        ResourceContents::text(format!("{}/part", r.uri), "two"),
                    ]
                }),
            )
            .resource_template(
                ResourceTemplate::new("notes://{id}", "note")
                    .mime_type("text/markdown")
                    .handler(|r: ResourceRead| async move {
                        format!("note {}", r.var("id").unwrap_or("?"))
                    }),
            )
            .resource_template(
                ResourceTemplate::new("files://{dir}/{name}", "file").handler(
                    |r: ResourceRead| async move {
                        format!(
                            "{}|{}",
                            r.var("dir").unwrap_or("?"),
                            r.var("name").unwrap_or("?")
                        )
                    },
                ),
            ),
    )
}

async fn read(c: &TestClient, uri: &str) -> TestResponse {
    c.read_resource(uri).await
}

fn text_of(result: &Value) -> &str {
    result["contents"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn static_resources_are_read() {
    let server = resource_server();
    let c = TestClient::new(&server);
    let r = expect_result(&read(&c, "mem://text").await, "resources/read");
    assert_eq!(
        r["contents"],
        json!([{"uri": "mem://text", "mimeType": "text/plain", "text": "hello"}])
    );
    assert_eq!(r["ttlMs"], 0);
    assert_eq!(r["cacheScope"], "private");
    let r = expect_result(&read(&c, "mem://bin").await, "resources/read");
    assert_eq!(
        r["contents"],
        json!([{"uri": "mem://bin", "mimeType": "application/octet-stream", "blob": "AAEC/w=="}])
    );
    let r = expect_result(&read(&c, "mem://multi").await, "resources/read");
    assert_eq!(r["contents"].as_array().map(Vec::len), Some(2));
    let list = expect_result(
        &c.request("resources/list", json!({})).await,
        "resources/list",
    );
    let uris: Vec<&str> = list["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert_eq!(
        uris,
        ["mem://bin", "mem://multi", "mem://text"],
        "sorted by URI"
    );
    assert_eq!(list["resources"][0]["size"], 4);
    let list = expect_result(
        &c.request("resources/templates/list", json!({})).await,
        "resources/templates/list",
    );
    assert_eq!(
        list["resourceTemplates"],
        json!([
            {"uriTemplate": "files://{dir}/{name}", "name": "file"},
            {"uriTemplate": "notes://{id}", "name": "note", "mimeType": "text/markdown"}
        ])
    );
}

/// Template variables are extracted and percent-decoded; the template's MIME type is
/// carried on the contents.
#[tokio::test]
async fn template_variables_are_percent_decoded() {
    let server = resource_server();
    let c = TestClient::new(&server);
    for (uri, text) in [
        ("notes://plain", "note plain"),
        ("notes://a%20b", "note a b"),
        ("notes://caf%C3%A9", "note café"),
        ("notes://50%25", "note 50%"),
        ("files://x%2Fy/z", "x/y|z"),
        ("files://docs/read%20me.txt", "docs|read me.txt"),
    ] {
        let r = expect_result(&read(&c, uri).await, "resources/read");
        assert_eq!(text_of(&r), text, "{uri}");
        assert_eq!(r["contents"][0]["uri"], uri);
    }
    let r = expect_result(&read(&c, "notes://1").await, "resources/read");
    assert_eq!(r["contents"][0]["mimeType"], "text/markdown");
}

/// A URI that matches nothing is -32602 with data.uri (errata W-5: MUST, never -32002).
#[tokio::test]
async fn unknown_resources_are_32602_with_the_uri() {
    let server = resource_server();
    let c = TestClient::new(&server);
    for uri in [
        "mem://nope",
        "mem://TEXT",
        "notes://",
        "files://a/b/c",
        "files://a",
        "notes://%zz",
        "notes://%C3",
        "other://x",
    ] {
        let r = read(&c, uri).await;
        let e = expect_error(&r, -32602, Some("Resource not found"));
        assert_eq!(e["data"], json!({"uri": uri}), "{uri}");
    }
}

#[tokio::test]
async fn resource_uri_validation() {
    let server = resource_server();
    let c = TestClient::new(&server);
    let absolute = "resources/read uri must be an absolute URI";
    let required = "resources/read requires a non-empty string uri";
    for (params, message) in [
        (json!({"uri": "relative/path"}), absolute),
        (json!({"uri": "/abs/path"}), absolute),
        (json!({"uri": "noscheme"}), absolute),
        (json!({"uri": "1abc://x"}), absolute),
        (json!({"uri": ":x"}), absolute),
        (json!({}), required),
        (json!({"uri": ""}), required),
        (json!({"uri": 5}), required),
        (json!({"uri": null}), required),
    ] {
        let r = c.request("resources/read", params.clone()).await;
        let e = expect_error(&r, -32602, Some(message));
        assert!(e.get("data").is_none(), "{params}: {e}");
    }
}

// ---------------------------------------------------------------------------------------
// Prompts.
// ---------------------------------------------------------------------------------------

fn prompt_server() -> Server {
    build(
        builder()
            .prompt(
                Prompt::new("greet")
                    .description("Greets someone")
                    .argument(
                        PromptArgument::new("name")
                            .description("Who")
                            .required(true),
                    )
                    .argument(PromptArgument::new("style").title("Style"))
                    .handler(|g: PromptGet| async move {
                        format!(
                            "Hello {} ({})",
                            g.arg("name").unwrap_or("?"),
                            g.arg("style").unwrap_or("plain")
                        )
                    })
                    .complete("name", |req: CompletionRequest| async move {
                        let names = ["alice", "albert", "bob"];
                        Ok(Completion::new(
                            names.into_iter().filter(|n| n.starts_with(&req.value)),
                        ))
                    }),
            )
            .prompt(
                Prompt::new("two")
                    .description("Needs two")
                    .argument(PromptArgument::new("a").required(true))
                    .argument(PromptArgument::new("b").required(true))
                    .handler(|g: PromptGet| async move {
                        format!("{}{}", g.arg("a").unwrap_or(""), g.arg("b").unwrap_or(""))
                    }),
            ),
    )
}

#[tokio::test]
async fn prompts_get_renders_messages() {
    let server = prompt_server();
    let c = TestClient::new(&server);
    let r = c.get_prompt("greet", json!({"name": "Ann"})).await;
    let result = expect_result(&r, "prompts/get");
    assert_eq!(
        result["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Hello Ann (plain)"}}])
    );
    assert!(result.get("ttlMs").is_none() && result.get("cacheScope").is_none());
    let r = c
        .get_prompt("greet", json!({"name": "Ann", "style": "formal"}))
        .await;
    let result = expect_result(&r, "prompts/get");
    assert_eq!(
        result["messages"][0]["content"]["text"],
        "Hello Ann (formal)"
    );
    // An argument the prompt does not declare (a misspelt `style`) is refused, named,
    // instead of being dropped without a word (`server/prompts.mdx`: servers SHOULD
    // validate prompt arguments).
    let r = c
        .get_prompt(
            "greet",
            json!({"name": "Ann", "styel": "formal", "extra": "x"}),
        )
        .await;
    let e = expect_error(&r, -32602, Some("Unknown prompt arguments"));
    assert_eq!(e["data"], json!({"unknown": ["extra", "styel"]}));

    let list = expect_result(&c.request("prompts/list", json!({})).await, "prompts/list");
    assert_eq!(
        list["prompts"][0],
        json!({"name": "greet", "description": "Greets someone", "arguments": [
            {"name": "name", "description": "Who", "required": true},
            {"name": "style", "title": "Style", "required": false}
        ]})
    );
}

#[tokio::test]
async fn missing_required_prompt_arguments_are_listed() {
    let server = prompt_server();
    let c = TestClient::new(&server);
    for (name, args, missing) in [
        ("greet", json!({}), json!(["name"])),
        ("greet", json!({"style": "x"}), json!(["name"])),
        ("two", json!({}), json!(["a", "b"])),
        ("two", json!({"b": "1"}), json!(["a"])),
        ("two", Value::Null, json!(["a", "b"])),
    ] {
        let r = c
            .request("prompts/get", json!({"name": name, "arguments": args}))
            .await;
        let e = expect_error(&r, -32602, Some("Missing required prompt arguments"));
        assert_eq!(e["data"]["missing"], missing, "{name} {args}");
    }
    let r = c.request("prompts/get", json!({"name": "two"})).await;
    let e = expect_error(&r, -32602, None);
    assert_eq!(e["data"]["missing"], json!(["a", "b"]));
}

#[tokio::test]
async fn prompt_params_validation() {
    let server = prompt_server();
    let c = TestClient::new(&server);
    let strings = "prompts/get arguments must map strings to strings";
    let name = "prompts/get requires a non-empty string name";
    for (params, message) in [
        (json!({"name": "greet", "arguments": {"name": 1}}), strings),
        (
            json!({"name": "greet", "arguments": {"name": null}}),
            strings,
        ),
        (
            json!({"name": "greet", "arguments": {"name": "a", "style": true}}),
            strings,
        ),
        (
            json!({"name": "greet", "arguments": {"name": ["a"]}}),
            strings,
        ),
        (json!({"name": "greet", "arguments": "x"}), strings),
        (json!({"name": "greet", "arguments": []}), strings),
        (json!({}), name),
        (json!({"name": ""}), name),
        (json!({"name": 3}), name),
        (json!({"name": "nope"}), "Unknown prompt: nope"),
        (
            json!({"name": "Greet", "arguments": {"name": "a"}}),
            "Unknown prompt: Greet",
        ),
    ] {
        let r = c.request("prompts/get", params.clone()).await;
        expect_error(&r, -32602, Some(message));
    }
}

/// The fixture's prompts through the test client (section 16.3).
#[tokio::test]
async fn fixture_prompts() {
    let server = presa_tests::fixture();
    let c = TestClient::new(&server);
    let r = c
        .get_prompt(
            "test_prompt_with_arguments",
            json!({"arg1": "testValue1", "arg2": "testValue2"}),
        )
        .await;
    let text = r.message.to_string();
    assert!(text.contains("testValue1") && text.contains("testValue2"));
    presa_tests::schema::check_response("prompts/get", &r.message);
    let r = c
        .get_prompt(
            "test_prompt_with_embedded_resource",
            json!({"resourceUri": "test://example-resource"}),
        )
        .await;
    presa_tests::schema::check_response("prompts/get", &r.message);
    assert_eq!(r.result()["messages"][0]["content"]["type"], "resource");
    let r = c.get_prompt("test_prompt_with_image", json!({})).await;
    presa_tests::schema::check_response("prompts/get", &r.message);
    assert_eq!(r.result()["messages"][0]["content"]["type"], "image");
}

// ---------------------------------------------------------------------------------------
// completion/complete (section 5.6).
// ---------------------------------------------------------------------------------------

fn completion_server() -> Server {
    let ids = |req: CompletionRequest| async move {
        if let Some(x) = req.context.get("x") {
            return Ok(Completion::new([format!("ctx:{x}")]));
        }
        let all = ["alpha", "alphabet", "beta"];
        Ok(Completion::new(
            all.into_iter().filter(|v| v.starts_with(&req.value)),
        ))
    };
    build(
        builder()
            .prompt(
                simple_prompt("p")
                    .argument(PromptArgument::new("a"))
                    .argument(PromptArgument::new("plain"))
                    .complete("a", ids),
            )
            .prompt(
                simple_prompt("many")
                    .argument(PromptArgument::new("v"))
                    .argument(PromptArgument::new("w"))
                    .argument(PromptArgument::new("low"))
                    .complete("v", |_| async {
                        Ok(Completion::new((0..150).map(|i| format!("v{i:03}"))))
                    })
                    .complete("w", |_| async {
                        let mut c = Completion::default();
                        c.values = (0..120).map(|i| format!("w{i}")).collect();
                        Ok(c)
                    })
                    .complete("low", |_| async {
                        let mut c = Completion::new(["a", "b", "c"]);
                        c.total = Some(1);
                        Ok(c)
                    }),
            )
            .resource_template(
                ResourceTemplate::new("notes://{id}", "note")
                    .handler(|_: ResourceRead| async { "n" })
                    .complete("id", ids),
            )
            .resource_template(
                ResourceTemplate::new("plain://{id}", "plain")
                    .handler(|_: ResourceRead| async { "n" }),
            ),
    )
}

async fn complete(c: &TestClient, reference: Value, argument: &str, value: &str) -> TestResponse {
    c.request(
        "completion/complete",
        json!({"ref": reference, "argument": {"name": argument, "value": value}}),
    )
    .await
}

fn values(result: &Value) -> Vec<&str> {
    result["completion"]["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

#[tokio::test]
async fn completion_for_prompt_arguments() {
    let server = completion_server();
    let c = TestClient::new(&server);
    let r = complete(&c, json!({"type": "ref/prompt", "name": "p"}), "a", "al").await;
    let result = expect_result(&r, "completion/complete");
    assert_eq!(
        result["completion"],
        json!({"values": ["alpha", "alphabet"], "total": 2, "hasMore": false})
    );
    assert!(result.get("ttlMs").is_none() && result.get("cacheScope").is_none());
    // Context arguments reach the provider.
    let r = c
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "p"},
                   "argument": {"name": "a", "value": ""},
                   "context": {"arguments": {"x": "42"}}}),
        )
        .await;
    assert_eq!(
        values(&expect_result(&r, "completion/complete")),
        ["ctx:42"]
    );
    // The fixture's completion target.
    let fixture = presa_tests::fixture();
    let r = complete(
        &TestClient::new(&fixture),
        json!({"type": "ref/prompt", "name": "test_prompt_with_arguments"}),
        "arg1",
        "te",
    )
    .await;
    presa_tests::schema::check_response("completion/complete", &r.message);
    assert_eq!(values(r.result()), ["test", "testing"]);
}

/// A `ref/resource` names a URI template, or a concrete URI matched against the
/// templates (errata W-15).
#[tokio::test]
async fn completion_for_resource_templates() {
    let server = completion_server();
    let c = TestClient::new(&server);
    for uri in ["notes://{id}", "notes://anything", "notes://a%20b"] {
        let r = complete(&c, json!({"type": "ref/resource", "uri": uri}), "id", "b").await;
        assert_eq!(
            values(&expect_result(&r, "completion/complete")),
            ["beta"],
            "{uri}"
        );
    }
    for uri in ["nope://{x}", "nope://x", "notes:/"] {
        let r = complete(&c, json!({"type": "ref/resource", "uri": uri}), "id", "").await;
        let e = expect_error(&r, -32602, Some("Unknown completion resource template"));
        assert_eq!(e["data"]["uri"], uri);
    }
}

#[tokio::test]
async fn completion_errors() {
    let server = completion_server();
    let c = TestClient::new(&server);
    let r = complete(&c, json!({"type": "ref/prompt", "name": "nope"}), "a", "").await;
    expect_error(&r, -32602, Some("Unknown completion prompt: nope"));
    let unsupported = "Argument does not support completion";
    for (reference, arg) in [
        (json!({"type": "ref/prompt", "name": "p"}), "plain"),
        (
            json!({"type": "ref/prompt", "name": "p"}),
            "not_an_argument",
        ),
        (json!({"type": "ref/resource", "uri": "plain://{id}"}), "id"),
        (
            json!({"type": "ref/resource", "uri": "notes://{id}"}),
            "other",
        ),
    ] {
        let r = complete(&c, reference.clone(), arg, "").await;
        expect_error(&r, -32602, Some(unsupported));
    }
    let no_ref = "Completion requires a prompt or resource-template reference";
    let bad_arg = "Completion argument requires string name and value";
    let p = json!({"type": "ref/prompt", "name": "p"});
    let arg = json!({"name": "a", "value": ""});
    for (params, message) in [
        (json!({"argument": arg}), no_ref),
        (json!({"ref": "p", "argument": arg}), no_ref),
        (
            json!({"ref": {"type": "ref/prompt"}, "argument": arg}),
            no_ref,
        ),
        (
            json!({"ref": {"type": "ref/resource"}, "argument": arg}),
            no_ref,
        ),
        (
            json!({"ref": {"type": "ref/other", "name": "p"}, "argument": arg}),
            "Completion reference type is not supported",
        ),
        (
            json!({"ref": {"name": "p"}, "argument": arg}),
            "Completion reference type is not supported",
        ),
        (json!({"ref": p}), bad_arg),
        (json!({"ref": p, "argument": {"name": "a"}}), bad_arg),
        (json!({"ref": p, "argument": {"value": ""}}), bad_arg),
        (
            json!({"ref": p, "argument": {"name": "a", "value": 5}}),
            bad_arg,
        ),
        (json!({"ref": p, "argument": "a"}), bad_arg),
        (
            json!({"ref": p, "argument": arg, "context": "x"}),
            "Completion context must be an object",
        ),
        (
            json!({"ref": p, "argument": arg, "context": {"arguments": {"x": 1}}}),
            "Completion context arguments must map strings to strings",
        ),
        (
            json!({"ref": p, "argument": arg, "context": {"arguments": []}}),
            "Completion context arguments must map strings to strings",
        ),
    ] {
        let r = c.request("completion/complete", params.clone()).await;
        expect_error(&r, -32602, Some(message));
    }
}

/// Asserts a result over the wire as [`expect_result`] does in process: resultType
/// `complete`, serverInfo `_meta` (the client checked it against the schema).
#[track_caller]
fn expect_wire_result(got: &Got) -> Value {
    let result = got.result().clone();
    assert_eq!(result["resultType"], "complete", "{:?}: {result}", got.kind);
    assert_eq!(
        result["_meta"][crate::pipeline::SERVER_INFO_KEY],
        server_info(),
        "{:?}: {result}",
        got.kind
    );
    result
}

/// At most 100 values are sent; the rest set hasMore, and total is never below the
/// number of values sent (the completer's own total, 150, when it gave one). Over both
/// transports.
#[tokio::test]
async fn completion_values_are_capped_at_100() {
    let server = completion_server();
    let many = json!({"type": "ref/prompt", "name": "many"});
    let complete =
        |argument: &str| json!({"ref": many, "argument": {"name": argument, "value": ""}});
    for kind in KINDS {
        let mut c = Client::start(kind, &server).await;
        let result = expect_wire_result(&c.call(1, "completion/complete", complete("v")).await);
        let got = values(&result);
        assert_eq!(got.len(), 100, "{kind:?}");
        assert_eq!(got[0], "v000");
        assert_eq!(got[99], "v099");
        assert_eq!(result["completion"]["hasMore"], true, "{kind:?}");
        assert_eq!(
            result["completion"]["total"],
            json!(150),
            "{kind:?}: {result}"
        );

        let result = expect_wire_result(&c.call(2, "completion/complete", complete("w")).await);
        assert_eq!(values(&result).len(), 100, "{kind:?}");
        assert_eq!(result["completion"]["hasMore"], true, "{kind:?}");
        if let Some(total) = result["completion"].get("total") {
            assert!(total.as_u64().is_some_and(|t| t >= 100), "{result}");
        }

        let result = expect_wire_result(&c.call(3, "completion/complete", complete("low")).await);
        assert_eq!(values(&result), ["a", "b", "c"], "{kind:?}");
        assert!(
            result["completion"]["total"]
                .as_u64()
                .is_some_and(|t| t >= 3),
            "{kind:?}: {result}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Pagination (section 6; errata W-17).
// ---------------------------------------------------------------------------------------

fn paged_server() -> Server {
    build(paged_builder())
}

fn paged_builder() -> ServerBuilder {
    let mut b = builder().page_size(2);
    for i in 1..=5 {
        b = b.tool(text_tool(&format!("t{i}"), "x"));
        b = b.resource(
            Resource::new(format!("mem://r{i}"), format!("r{i}"))
                .handler(|_: ResourceRead| async { "r" }),
        );
        b = b.resource_template(
            ResourceTemplate::new(format!("tpl{i}://{{id}}"), format!("tpl{i}"))
                .handler(|_: ResourceRead| async { "t" }),
        );
    }
    for i in 1..=3 {
        b = b.prompt(simple_prompt(&format!("p{i}")));
    }
    b
}

/// Walks a list to its end; returns every page's result.
async fn walk(c: &TestClient, method: &str) -> Vec<Value> {
    let mut pages = Vec::new();
    let mut cursor: Option<Value> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = expect_result(&c.request(method, params).await, method);
        cursor = page.get("nextCursor").cloned();
        pages.push(page);
        if cursor.is_none() {
            return pages;
        }
        assert!(pages.len() < 20, "the walk ends");
    }
}

fn keys(page: &Value, list: &str, key: &str) -> Vec<String> {
    page[list]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i[key].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn every_list_pages_to_its_end() {
    let server = paged_server();
    let c = TestClient::new(&server);
    for (method, list, key, expected) in [
        (
            "tools/list",
            "tools",
            "name",
            vec!["t1", "t2", "t3", "t4", "t5"],
        ),
        ("prompts/list", "prompts", "name", vec!["p1", "p2", "p3"]),
        (
            "resources/list",
            "resources",
            "uri",
            vec!["mem://r1", "mem://r2", "mem://r3", "mem://r4", "mem://r5"],
        ),
        (
            "resources/templates/list",
            "resourceTemplates",
            "uriTemplate",
            vec![
                "tpl1://{id}",
                "tpl2://{id}",
                "tpl3://{id}",
                "tpl4://{id}",
                "tpl5://{id}",
            ],
        ),
    ] {
        let pages = walk(&c, method).await;
        let sizes: Vec<usize> = pages.iter().map(|p| keys(p, list, key).len()).collect();
        let all: Vec<String> = pages.iter().flat_map(|p| keys(p, list, key)).collect();
        assert_eq!(all, expected, "{method}");
        assert!(sizes.iter().all(|s| *s <= 2), "{method}: {sizes:?}");
        assert_eq!(pages.len(), expected.len().div_ceil(2), "{method}");
        for p in &pages {
            assert_eq!(p["cacheScope"], "private", "the same scope on every page");
            assert!(p["ttlMs"].is_u64());
            assert!(p["nextCursor"].is_string() || p.get("nextCursor").is_none());
        }
    }
}

/// Checks a result as written: it has exactly `members`, and `_meta` holding serverInfo
/// alone when `info` (none otherwise), and each of them is written in `raw` once: a
/// member written twice would parse last-wins and go unseen.
#[track_caller]
fn assert_written_members(raw: &str, result: &Value, members: &[&str], info: bool) {
    let mut expected = members.to_vec();
    if info {
        expected.push("_meta");
        assert_eq!(
            result["_meta"],
            json!({"io.modelcontextprotocol/serverInfo": server_info()}),
            "{raw}"
        );
    }
    for name in expected.iter().chain(["_meta"].iter()) {
        let written = raw.matches(&format!("\"{name}\":")).count();
        let present = result.get(name).is_some();
        assert_eq!(written, usize::from(present), "{name} in {raw}");
    }
    let mut got: Vec<&str> = result
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    got.sort_unstable();
    expected.sort_unstable();
    assert_eq!(got, expected, "{raw}");
}

/// Sends `method` with `params` (and the client's `_meta`) as bytes, and returns the
/// answer as written, parsed, and checked against the official schema.
async fn written(c: &TestClient, method: &str, mut params: Value) -> (String, Value) {
    params["_meta"] = Value::Object(c.meta());
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let bytes = serde_json::to_vec(&message).expect("JSON");
    let raw = c.send_raw(&bytes).await.message.expect("answered");
    let reply: Value = serde_json::from_str(&raw).expect("one JSON value");
    presa_tests::schema::check_response(method, &reply);
    (raw, reply)
}

/// Every page of every list as written, byte for byte, with serverInfo in results and
/// without: one JSON object with no member twice, exactly the members a page has (the
/// next cursor on all but the last), valid against the official schema, and the walk
/// reaches every item.
#[tokio::test]
async fn every_page_is_written_whole_with_and_without_server_info() {
    for info in [true, false] {
        let server = build(paged_builder().server_info_in_results(info));
        let c = TestClient::new(&server);
        for (method, list, total) in [
            ("tools/list", "tools", 5),
            ("prompts/list", "prompts", 3),
            ("resources/list", "resources", 5),
            ("resources/templates/list", "resourceTemplates", 5),
        ] {
            let mut cursor: Option<String> = None;
            let mut seen = 0;
            for page_no in 0.. {
                assert!(page_no < 10, "{method}: the walk ends");
                let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
                let (raw, reply) = written(&c, method, params).await;
                let result = &reply["result"];
                cursor = result["nextCursor"].as_str().map(str::to_owned);
                seen += result[list].as_array().map_or(0, Vec::len);
                let mut members = vec![list, "cacheScope", "resultType", "ttlMs"];
                if cursor.is_some() {
                    members.push("nextCursor");
                }
                assert_written_members(&raw, result, &members, info);
                if cursor.is_none() {
                    break;
                }
            }
            assert_eq!(seen, total, "{method} (serverInfo {info})");
        }
    }
}

/// A `resources/read` answer as written, byte for byte, for a resource and a template,
/// with serverInfo in results and without: one JSON object with no member written twice,
/// exactly a read result's members, valid against the official schema.
#[tokio::test]
async fn a_read_is_written_whole_with_and_without_server_info() {
    for info in [true, false] {
        let server = build(paged_builder().server_info_in_results(info));
        let c = TestClient::new(&server);
        for (uri, text) in [("mem://r1", "r"), ("tpl2://7", "t")] {
            let (raw, reply) = written(&c, "resources/read", json!({"uri": uri})).await;
            let result = &reply["result"];
            let members = ["contents", "cacheScope", "resultType", "ttlMs"];
            assert_written_members(&raw, result, &members, info);
            assert_eq!(result["contents"][0]["text"], text, "{raw}");
            assert_eq!(result["contents"][0]["uri"], uri, "{raw}");
        }
    }
}

/// A `server/discover` answer as written, byte for byte, with serverInfo in results and
/// without, and with its caching hints configured: one JSON object with no member
/// written twice, exactly a discover result's members with the hints configured, valid
/// against the official schema.
#[tokio::test]
async fn discover_is_written_whole_with_and_without_server_info() {
    for info in [true, false] {
        let server = build(
            paged_builder()
                .server_info_in_results(info)
                .instructions("Use \"t1\" first.")
                .cache(
                    Cacheable::Discover,
                    CachePolicy::new(1500, CacheScope::Public),
                ),
        );
        let c = TestClient::new(&server);
        let (raw, reply) = written(&c, "server/discover", json!({})).await;
        let result = &reply["result"];
        let members = [
            "supportedVersions",
            "capabilities",
            "instructions",
            "ttlMs",
            "cacheScope",
            "resultType",
        ];
        assert_written_members(&raw, result, &members, info);
        assert_eq!(result["ttlMs"], 1500, "{raw}");
        assert_eq!(result["cacheScope"], "public", "{raw}");
        assert_eq!(result["resultType"], "complete", "{raw}");
        assert_eq!(result["instructions"], "Use \"t1\" first.", "{raw}");
        assert_eq!(result["supportedVersions"], json!(["2026-07-28"]), "{raw}");
    }
}

/// Cursors name the last key served: they survive items added before them and the
/// removal of items already served, including the one they name.
#[tokio::test]
async fn keyset_cursors_survive_unrelated_changes() {
    let server = paged_server();
    let c = TestClient::new(&server);
    let first = expect_result(&c.list_tools().await, "tools/list");
    assert_eq!(keys(&first, "tools", "name"), ["t1", "t2"]);
    let cursor = first["nextCursor"].clone();
    server.add_tool(text_tool("t0", "x")).expect("added");
    assert!(server.remove_tool("t1"));
    assert!(server.remove_tool("t2"));
    let next = c.request("tools/list", json!({"cursor": cursor})).await;
    let next = expect_result(&next, "tools/list");
    assert_eq!(keys(&next, "tools", "name"), ["t3", "t4"]);
    // An item added after the cursor position shows up in the later pages.
    server.add_tool(text_tool("t9", "x")).expect("added");
    let last = c
        .request("tools/list", json!({"cursor": next["nextCursor"].clone()}))
        .await;
    let last = expect_result(&last, "tools/list");
    assert_eq!(keys(&last, "tools", "name"), ["t5", "t9"]);
    assert!(last.get("nextCursor").is_none());
}

/// A key so long that the cursor after it is past `MAX_CURSOR_BYTES` (a resource URI of
/// 1,600 bytes) still pages on: presa reads back every cursor it issues. A cursor longer
/// than any presa could issue for this catalog is still refused.
#[tokio::test]
async fn cursors_after_very_long_keys_are_read_back() {
    use base64::Engine;
    let long = format!("https://example.com/{}", "a".repeat(1600));
    let short = "https://example.com/z".to_owned();
    let mut b = builder().page_size(1);
    for (i, uri) in [&long, &short].into_iter().enumerate() {
        b = b.resource(
            Resource::new(uri.clone(), format!("r{i}")).handler(|_: ResourceRead| async { "r" }),
        );
    }
    let server = build(b);
    let c = TestClient::new(&server);
    let pages = walk(&c, "resources/list").await;
    assert!(
        pages[0]["nextCursor"]
            .as_str()
            .is_some_and(|c| c.len() > presa::registry::MAX_CURSOR_BYTES),
        "the first page's cursor is past the usual bound"
    );
    let uris: Vec<String> = pages
        .iter()
        .flat_map(|p| keys(p, "resources", "uri"))
        .collect();
    assert_eq!(uris, [long.clone(), short]);
    let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(format!("presa1\nresources\n{long}b"));
    expect_error(
        &c.request("resources/list", json!({"cursor": forged})).await,
        -32602,
        Some("Invalid pagination cursor"),
    );
}

/// A cursor that is not one of the server's is -32602 `Invalid pagination cursor`, one
/// that is not a string -32602 `Cursor must be a string` (HTTP 400, the id echoed), for
/// every list; a cursor of one list is not a cursor of another. Over both transports.
#[tokio::test]
async fn invalid_cursors_are_32602() {
    let server = paged_server();
    let invalid = "Invalid pagination cursor";
    let garbage = [
        json!("garbage!!"),
        json!("bm90IGEgY3Vyc29y"),
        json!("x".repeat(3000)),
        json!("%%%"),
    ];
    for kind in KINDS {
        let mut c = Client::start(kind, &server).await;
        let tools_cursor =
            expect_wire_result(&c.call(1, "tools/list", json!({})).await)["nextCursor"].clone();
        let prompts_cursor =
            expect_wire_result(&c.call(2, "prompts/list", json!({})).await)["nextCursor"].clone();
        assert!(tools_cursor.is_string() && prompts_cursor.is_string());
        let mut id = 10;
        for method in [
            "tools/list",
            "prompts/list",
            "resources/list",
            "resources/templates/list",
        ] {
            for cursor in &garbage {
                id += 1;
                let got = c.call(id, method, json!({"cursor": cursor})).await;
                got.invalid_params(invalid);
                assert_eq!(
                    got.response()["id"],
                    json!(id),
                    "{kind:?}: the id is echoed"
                );
            }
            for cursor in [json!(5), json!(null), json!({}), json!(true), json!(["a"])] {
                id += 1;
                let got = c
                    .call_unchecked(id, method, json!({"cursor": cursor}))
                    .await;
                got.invalid_params("Cursor must be a string");
                assert_eq!(
                    got.response()["id"],
                    json!(id),
                    "{kind:?}: the id is echoed"
                );
            }
        }
        // A cursor of one list is not a cursor of another.
        for (method, cursor) in [
            ("prompts/list", &tools_cursor),
            ("resources/list", &tools_cursor),
            ("resources/templates/list", &tools_cursor),
            ("tools/list", &prompts_cursor),
        ] {
            id += 1;
            c.call(id, method, json!({"cursor": cursor}))
                .await
                .invalid_params(invalid);
        }
    }
}

#[tokio::test]
async fn the_default_page_size_is_100() {
    let mut b = builder();
    for i in 0..150 {
        b = b.tool(text_tool(&format!("tool{i:03}"), "x"));
    }
    let server = build(b);
    let c = TestClient::new(&server);
    let pages = walk(&c, "tools/list").await;
    let sizes: Vec<usize> = pages
        .iter()
        .map(|p| keys(p, "tools", "name").len())
        .collect();
    assert_eq!(sizes, [100, 50]);
}

// ---------------------------------------------------------------------------------------
// Caching hints (section 7; errata W-10).
// ---------------------------------------------------------------------------------------

fn cached_server(configure: bool) -> Server {
    let mut b = builder()
        .tool(text_tool("t", "x"))
        .prompt(
            simple_prompt("p")
                .argument(PromptArgument::new("a"))
                .complete("a", |_| async { Ok(Completion::new(["x"])) }),
        )
        .resource(Resource::new("mem://default", "d").handler(|_: ResourceRead| async { "d" }))
        .resource(
            Resource::new("mem://own", "o")
                .cache(CachePolicy::new(7000, CacheScope::Private))
                .handler(|_: ResourceRead| async { "o" }),
        )
        .resource_template(
            ResourceTemplate::new("own://{id}", "own")
                .cache(CachePolicy::new(8000, CacheScope::Public))
                .handler(|_: ResourceRead| async { "t" }),
        )
        .resource_template(
            ResourceTemplate::new("plain://{id}", "plain").handler(|_: ResourceRead| async { "t" }),
        );
    if configure {
        b = b
            .cache(
                Cacheable::Discover,
                CachePolicy::new(1000, CacheScope::Public),
            )
            .cache(
                Cacheable::Tools,
                CachePolicy::new(2000, CacheScope::Private),
            )
            .cache(
                Cacheable::Prompts,
                CachePolicy::new(3000, CacheScope::Public),
            )
            .cache(
                Cacheable::Resources,
                CachePolicy::new(4000, CacheScope::Private),
            )
            .cache(
                Cacheable::ResourceTemplates,
                CachePolicy::new(5000, CacheScope::Public),
            )
            .cache(
                Cacheable::ResourceRead,
                CachePolicy::new(6000, CacheScope::Public),
            );
    }
    build(b)
}

async fn hints(c: &TestClient, method: &str, params: Value) -> (Value, Value) {
    let r = expect_result(&c.request(method, params).await, method);
    (r["ttlMs"].clone(), r["cacheScope"].clone())
}

#[tokio::test]
async fn caching_hints_default_to_zero_and_private() {
    let server = cached_server(false);
    let c = TestClient::new(&server);
    for (method, params) in [
        ("server/discover", json!({})),
        ("tools/list", json!({})),
        ("prompts/list", json!({})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({"uri": "mem://default"})),
        ("resources/read", json!({"uri": "plain://1"})),
    ] {
        assert_eq!(
            hints(&c, method, params.clone()).await,
            (json!(0), json!("private")),
            "{method} {params}"
        );
    }
}

#[tokio::test]
async fn caching_hints_follow_the_configured_policies() {
    let server = cached_server(true);
    let c = TestClient::new(&server);
    for (method, params, ttl, scope) in [
        ("server/discover", json!({}), 1000, "public"),
        ("tools/list", json!({}), 2000, "private"),
        ("prompts/list", json!({}), 3000, "public"),
        ("resources/list", json!({}), 4000, "private"),
        ("resources/templates/list", json!({}), 5000, "public"),
        (
            "resources/read",
            json!({"uri": "mem://default"}),
            6000,
            "public",
        ),
        (
            "resources/read",
            json!({"uri": "plain://1"}),
            6000,
            "public",
        ),
        // A resource's or template's own policy wins over the server's.
        (
            "resources/read",
            json!({"uri": "mem://own"}),
            7000,
            "private",
        ),
        ("resources/read", json!({"uri": "own://1"}), 8000, "public"),
    ] {
        assert_eq!(
            hints(&c, method, params.clone()).await,
            (json!(ttl), json!(scope)),
            "{method} {params}"
        );
    }
    // A resource's own policy holds even with the server default.
    let server = cached_server(false);
    let c = TestClient::new(&server);
    assert_eq!(
        hints(&c, "resources/read", json!({"uri": "mem://own"})).await,
        (json!(7000), json!("private"))
    );
}

/// Results that are not cacheable carry no hints.
#[tokio::test]
async fn no_caching_hints_on_other_results() {
    let server = cached_server(true);
    let c = TestClient::new(&server);
    for (method, params) in [
        ("tools/call", json!({"name": "t"})),
        ("prompts/get", json!({"name": "p"})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "p"},
                                       "argument": {"name": "a", "value": ""}}),
        ),
    ] {
        let r = expect_result(&c.request(method, params).await, method);
        assert!(r.get("ttlMs").is_none(), "{method}: {r}");
        assert!(r.get("cacheScope").is_none(), "{method}: {r}");
    }
}
