//! Tool schemas over the wire: presa's own 2020-12 validator decides which arguments
//! reach a tool and words the problems the model reads, the same over HTTP and stdio;
//! and a schema it cannot validate, or a malformed one, is refused when the server is
//! built (book: tools.md, "Schema validation").

use crate::mrtr::{Client, KINDS};
use crate::pipeline::{build, build_error, builder};
use presa::{Tool, ToolCall};
use serde_json::{Value, json};

/// A tool whose schema uses the keywords `#[tool]` rarely writes but hand-written
/// schemas do: `pattern`, `uniqueItems`, `anyOf`, `prefixItems`, `multipleOf`. (Its
/// properties are written sorted: problems come in the schema's order, the written one
/// under serde_json's `preserve_order`.)
fn order_tool() -> Tool {
    Tool::new("order")
        .description("Places an order")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}], "items": false},
                "price": {"type": "number", "multipleOf": 0.01},
                "size": {"anyOf": [{"type": "integer", "minimum": 1}, {"enum": ["small", "large"]}]},
                "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}
            },
            "required": ["sku"],
            "additionalProperties": false
        }))
        .handler(|call: ToolCall| async move { Value::Object(call.arguments).to_string() })
}

#[tokio::test]
async fn arguments_are_checked_and_problems_worded_on_both_transports() {
    let server = builder()
        .tool(order_tool())
        .build()
        .expect("the server builds");
    for kind in KINDS {
        let mut w = Client::start(kind, &server).await;
        let good = json!({"sku": "ABC-1234", "tags": ["a", "b"], "size": "small", "point": [1, 2.5], "price": 19.99});
        let got = w
            .call(
                1,
                "tools/call",
                json!({"name": "order", "arguments": good.clone()}),
            )
            .await;
        assert_eq!(got.text(), good.to_string(), "{kind:?}");

        let bad = json!({"sku": "abc", "tags": ["a", "a"], "size": 0, "point": [1, 2, 3], "price": 0.001, "x": 1});
        let got = w
            .call(2, "tools/call", json!({"name": "order", "arguments": bad}))
            .await;
        assert_eq!(
            got.result(),
            &json!({
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "t", "version": "1"}},
                "resultType": "complete",
                "content": [{
                    "type": "text",
                    "text": "Invalid arguments for tool order: /point/2: no value is allowed here; \
                             /price: 0.001 is not a multiple of 0.01; \
                             /size: 0 matches none of the `anyOf` schemas; \
                             /sku: \"abc\" does not match the pattern \"^[A-Z]{3}-[0-9]{4}$\"; \
                             /tags: the array's items are not unique"
                }],
                "isError": true
            }),
            "{kind:?}"
        );

        let got = w
            .call(
                3,
                "tools/call",
                json!({"name": "order", "arguments": {"tags": []}}),
            )
            .await;
        assert_eq!(
            got.result()["content"][0]["text"],
            "Invalid arguments for tool order: \"sku\" is a required property",
            "{kind:?}"
        );
    }
}

/// Under serde_json's `arbitrary_precision` (CI runs this suite under it too), an
/// argument can carry an exponent past any float's. `multipleOf` decides it at once, on
/// both transports; it used to loop once per unit of the exponent, stalling the server
/// for a minute on this one. Without the feature such a number does not parse: nothing
/// to check.
#[tokio::test]
async fn a_huge_exponent_is_checked_at_once() {
    let (Ok(huge), Ok(largest)) = (
        serde_json::from_str::<Value>("1e2000000000"),
        serde_json::from_str::<Value>("1e2147483647"),
    ) else {
        return;
    };
    let server = builder()
        .tool(
            Tool::new("multiples")
                .input_schema(json!({
                    "type": "object",
                    "properties": {
                        "five": {"multipleOf": 5},
                        "half": {"multipleOf": 0.5},
                        "three": {"multipleOf": 3}
                    }
                }))
                .handler(|_: ToolCall| async { "ok" }),
        )
        .build()
        .expect("the server builds");
    for kind in KINDS {
        let mut w = Client::start(kind, &server).await;
        // The exponents' difference overflowed an `i32` for the last: a panic in a
        // debug build.
        let cases = [
            (1, "five", &huge, false),
            (2, "three", &huge, true),
            (3, "half", &largest, false),
        ];
        for (id, member, number, error) in cases {
            let params = json!({"name": "multiples", "arguments": {member: number}});
            let got = tokio::time::timeout(
                std::time::Duration::from_secs(10),
                w.call(id, "tools/call", params),
            )
            .await
            .expect("answered at once");
            assert_eq!(got.result()["isError"], error, "{kind:?} {member}");
        }
    }
}

/// A schema presa's validator leaves out fails the build, naming the keyword and the
/// feature that would validate it; it is never silently skipped. (The workspace builds
/// presa without its `jsonschema` feature, as a default dependency does; with this
/// package's `jsonschema` feature, which turns presa's on, the same schemas build.)
#[test]
fn a_schema_the_validator_leaves_out_fails_the_build() {
    for (schema, keyword) in [
        (
            json!({"type": "object", "unevaluatedProperties": false}),
            "unevaluatedProperties",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "(?=x)"}}}),
            "(?=x)",
        ),
        (
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}),
            "draft-07",
        ),
    ] {
        let server = builder().tool(
            Tool::new("t")
                .input_schema(schema)
                .handler(|_: ToolCall| async { "" }),
        );
        if cfg!(feature = "jsonschema") {
            build(server);
            continue;
        }
        let message = build_error(server);
        assert!(message.contains(keyword), "{message}");
        assert!(message.contains("`jsonschema` feature"), "{message}");
    }
}

/// A malformed schema fails the build, input or output.
#[test]
fn a_malformed_schema_fails_the_build() {
    let message = build_error(
        builder().tool(
            Tool::new("t")
                .input_schema(json!({"type": "object", "properties": {"a": {"type": "strin"}}}))
                .handler(|_: ToolCall| async { "" }),
        ),
    );
    assert!(
        message.contains("schema does not compile: type \"strin\" is not a JSON Schema type"),
        "{message}"
    );
    let message = build_error(
        builder().tool(
            Tool::new("t")
                .output_schema(json!({"type": "object", "required": "a"}))
                .handler(|_: ToolCall| async { "" }),
        ),
    );
    assert!(
        message.contains("output schema does not compile: required must be an array"),
        "{message}"
    );
}

/// A page request, with integer fields.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Page {
    page: u32,
    size: Option<u16>,
}

/// Integer fields through `Args<T>`.
#[presa::tool]
async fn paged(presa::extract::Args(p): presa::extract::Args<Page>) -> String {
    format!("{} {:?}", p.page, p.size)
}

/// Integer parameters of `#[tool]`s, taking numbers written with a fraction of zero.
#[presa::tool]
async fn counts(id: u64, delta: i32, ids: Vec<u32>, ratio: f64, raw: Value) -> String {
    format!("{id} {delta} {ids:?} {ratio} {raw}")
}

/// JSON Schema counts `3.0` as an integer, so the input schema lets it through to an
/// integer parameter: the function receives the integer (before, serde refused it with
/// "invalid type: floating point `3.0`, expected u64" after the schema had accepted
/// it). A parameter that can hold the float as sent (`f64`, `Value`) gets it unchanged,
/// and a fraction or a number out of the type's range is still refused.
#[tokio::test]
async fn integer_arguments_take_whole_numbers_written_with_a_fraction() {
    let server = builder()
        .add::<counts>()
        .add::<paged>()
        .build()
        .expect("the server builds");
    for kind in KINDS {
        let mut w = Client::start(kind, &server).await;
        let args = json!({"id": 3.0, "delta": -2.0, "ids": [1.0, 2], "ratio": 4.0, "raw": 5.0});
        let got = w
            .call(
                1,
                "tools/call",
                json!({"name": "counts", "arguments": args}),
            )
            .await;
        assert_eq!(got.text(), "3 -2 [1, 2] 4 5.0", "{kind:?}");
        let got = w
            .call(
                5,
                "tools/call",
                json!({"name": "paged", "arguments": {"page": 2.0, "size": 10.0}}),
            )
            .await;
        assert_eq!(got.text(), "2 Some(10)", "{kind:?}");
        for (id, bad) in [
            (
                2,
                json!({"id": 3.5, "delta": 0, "ids": [], "ratio": 0, "raw": 0}),
            ),
            (
                3,
                json!({"id": -1.0, "delta": 0, "ids": [], "ratio": 0, "raw": 0}),
            ),
            (
                4,
                json!({"id": 1, "delta": 3e9, "ids": [], "ratio": 0, "raw": 0}),
            ),
        ] {
            let got = w
                .call(
                    id,
                    "tools/call",
                    json!({"name": "counts", "arguments": bad}),
                )
                .await;
            assert_eq!(got.result()["isError"], json!(true), "{kind:?}: {bad}");
        }
        // Out of the type's range: the schema carries the range, and refuses it.
        let bad = json!({"id": 1, "delta": 3e9, "ids": [4_294_967_296_u64], "ratio": 0, "raw": 0});
        let got = w
            .call(6, "tools/call", json!({"name": "counts", "arguments": bad}))
            .await;
        let text = got.result()["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        assert!(
            text.starts_with("Invalid arguments for tool counts")
                && text.contains("delta")
                && text.contains("ids"),
            "{kind:?}: {text}"
        );
    }
}

/// `Args<T>` beside another argument parameter.
#[presa::tool]
async fn args_and_more(presa::extract::Args(p): presa::extract::Args<Page>, limit: u32) -> String {
    format!("{} {limit}", p.page)
}

/// Two `Args<T>` parameters.
#[presa::tool]
async fn two_args(
    presa::extract::Args(a): presa::extract::Args<Page>,
    presa::extract::Args(b): presa::extract::Args<Page>,
) -> String {
    format!("{} {}", a.page, b.page)
}

/// `Args<T>` takes every argument and its `T` is the whole input schema, so it stands
/// alone: beside another argument parameter (whose property would be missing from the
/// schema, and which then failed to extract on every call) or a second `Args<T>`, the
/// tool is refused when the server is built, naming it. Injected parameters may stand
/// beside it.
#[test]
fn args_stands_alone_among_argument_parameters() {
    let e = build_error(builder().add::<args_and_more>());
    assert!(
        e.contains("\"args_and_more\"") && e.contains("`limit`"),
        "{e}"
    );
    let e = build_error(builder().add::<two_args>());
    assert!(
        e.contains("\"two_args\"") && e.contains("one `Args<T>`"),
        "{e}"
    );
    builder()
        .add::<paged>()
        .add::<args_with_context>()
        .build()
        .expect("Args<T> alone, or beside injected parameters, builds");
}

/// `Args<T>` beside an injected parameter.
#[presa::tool]
async fn args_with_context(
    presa::extract::Args(p): presa::extract::Args<Page>,
    ctx: presa::RequestContext,
) -> String {
    format!("{} {}", p.page, ctx.method())
}

/// A default that does not survive its JSON form.
#[presa::tool]
async fn infinite_default(#[arg(default = f64::INFINITY)] max: f64) -> String {
    max.to_string()
}

/// A default that does.
#[presa::tool]
async fn finite_default(#[arg(default = 2.5)] max: f64) -> String {
    max.to_string()
}

/// A default is kept as JSON and read back as its type on every call that leaves the
/// argument out: `f64::INFINITY` is written as `null`, which no `f64` reads, so every
/// such call failed with "invalid type: null". build() now refuses it, naming the
/// argument; a default that reads back builds and is used.
#[tokio::test]
async fn a_default_that_does_not_read_back_is_refused_at_build() {
    let e = build_error(builder().add::<infinite_default>());
    assert!(
        e.contains("\"infinite_default\"") && e.contains("`max`"),
        "{e}"
    );
    let server = builder()
        .add::<finite_default>()
        .build()
        .expect("a default that reads back builds");
    for kind in KINDS {
        let mut w = Client::start(kind, &server).await;
        let got = w
            .call(
                1,
                "tools/call",
                json!({"name": "finite_default", "arguments": {}}),
            )
            .await;
        assert_eq!(got.text(), "2.5", "{kind:?}");
    }
}
