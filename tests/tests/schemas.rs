//! The input and output schemas `#[tool]` generates for a representative set of
//! signatures, compared with the expected JSON. Every schema is also compiled as JSON
//! Schema 2020-12 when the server is built.

use presa::Json;
use presa::testing::TestClient;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Primitives.
#[presa::tool]
async fn primitives(text: String, count: i32, ratio: f64, flag: bool) -> String {
    format!("{text}{count}{ratio}{flag}")
}

/// Options are not required.
#[presa::tool]
async fn options(required: String, optional: Option<String>) -> String {
    format!("{required}{optional:?}")
}

/// Lists.
#[presa::tool]
async fn lists(tags: Vec<String>) -> String {
    tags.join(",")
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// Enums.
#[presa::tool]
async fn enums(unit: Unit) -> String {
    match unit {
        Unit::Celsius => "c".into(),
        Unit::Fahrenheit => "f".into(),
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Point {
    x: i64,
    y: i64,
}

/// Nested structs.
#[presa::tool]
async fn nested(from: Point, to: Point) -> i64 {
    (to.x - from.x) + (to.y - from.y)
}

/// Defaults, renames and descriptions.
#[presa::tool]
async fn described(
    #[arg(description = "How many results")] limit: Option<u32>,
    #[arg(default = 10)] page_size: u32,
    #[arg(rename = "userId", description = "The user")] user_id: String,
) -> String {
    format!("{limit:?}{page_size}{user_id}")
}

/// Headers.
#[presa::tool]
async fn headers(
    #[header("Region")] region: String,
    #[header("Zone")] zone: Option<String>,
    #[header("Count")] count: i64,
    #[header("Dry-Run")] dry_run: bool,
) -> String {
    format!("{region}{zone:?}{count}{dry_run}")
}

/// Header integers of narrower types keep their own bounds within ±(2^53 − 1).
#[presa::tool]
async fn narrow_headers(#[header("Days")] days: u8, #[header("Page")] page: u32) -> String {
    format!("{days}{page}")
}

/// Any JSON, described (its schema is `true`, made an object to carry the description).
#[presa::tool]
async fn any_json(#[arg(description = "Any JSON value")] data: Value) -> String {
    data.to_string()
}

#[derive(Serialize, schemars::JsonSchema)]
struct Total {
    sum: i64,
}

/// Structured output.
#[presa::tool]
async fn output(a: i64) -> Json<Total> {
    Json(Total { sum: a })
}

async fn listing() -> Vec<Value> {
    let server = presa::server!()
        .add::<primitives>()
        .add::<options>()
        .add::<lists>()
        .add::<enums>()
        .add::<nested>()
        .add::<described>()
        .add::<headers>()
        .add::<narrow_headers>()
        .add::<any_json>()
        .add::<output>()
        .build()
        .expect("every schema compiles");
    let r = TestClient::new(&server).list_tools().await;
    r.result()["tools"].as_array().cloned().unwrap_or_default()
}

fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

#[tokio::test]
async fn generated_schemas() {
    let tools = listing().await;
    let input = |name: &str| tool(&tools, name)["inputSchema"].clone();
    assert_eq!(
        input("primitives"),
        json!({
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "count": {"type": "integer", "format": "int32",
                          "minimum": -2_147_483_648_i64, "maximum": 2_147_483_647},
                "ratio": {"type": "number", "format": "double"},
                "flag": {"type": "boolean"}
            },
            "required": ["text", "count", "ratio", "flag"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        input("options"),
        json!({
            "type": "object",
            "properties": {
                "required": {"type": "string"},
                "optional": {"type": ["string", "null"]}
            },
            "required": ["required"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        input("lists"),
        json!({
            "type": "object",
            "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
            "required": ["tags"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        input("enums"),
        json!({
            "type": "object",
            "properties": {"unit": {"$ref": "#/$defs/Unit"}},
            "required": ["unit"],
            "additionalProperties": false,
            "$defs": {"Unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}
        })
    );
    assert_eq!(
        input("nested"),
        json!({
            "type": "object",
            "properties": {
                "from": {"$ref": "#/$defs/Point"},
                "to": {"$ref": "#/$defs/Point"}
            },
            "required": ["from", "to"],
            "additionalProperties": false,
            "$defs": {"Point": {
                "type": "object",
                "properties": {
                    "x": {"type": "integer", "format": "int64",
                          "minimum": i64::MIN, "maximum": i64::MAX},
                    "y": {"type": "integer", "format": "int64",
                          "minimum": i64::MIN, "maximum": i64::MAX}
                },
                "required": ["x", "y"]
            }}
        })
    );
    assert_eq!(
        input("described"),
        json!({
            "type": "object",
            "properties": {
                "limit": {"type": ["integer", "null"], "format": "uint32", "minimum": 0,
                          "maximum": 4_294_967_295_u32, "description": "How many results"},
                "page_size": {"type": "integer", "format": "uint32", "minimum": 0,
                              "maximum": 4_294_967_295_u32, "default": 10},
                "userId": {"type": "string", "description": "The user"}
            },
            "required": ["userId"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        input("headers"),
        json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "zone": {"type": "string", "x-mcp-header": "Zone"},
                "count": {"type": "integer", "format": "int64", "x-mcp-header": "Count",
                          "minimum": -9_007_199_254_740_991_i64, "maximum": 9_007_199_254_740_991_i64},
                "dry_run": {"type": "boolean", "x-mcp-header": "Dry-Run"}
            },
            "required": ["region", "count", "dry_run"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        input("narrow_headers"),
        json!({
            "type": "object",
            "properties": {
                "days": {"type": "integer", "format": "uint8", "x-mcp-header": "Days",
                         "minimum": 0, "maximum": 255},
                "page": {"type": "integer", "format": "uint32", "x-mcp-header": "Page",
                         "minimum": 0, "maximum": 4_294_967_295_u32}
            },
            "required": ["days", "page"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        input("any_json"),
        json!({
            "type": "object",
            "properties": {"data": {"description": "Any JSON value"}},
            "required": ["data"],
            "additionalProperties": false
        })
    );
    let out = tool(&tools, "output");
    assert_eq!(
        out["outputSchema"],
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Total",
            "type": "object",
            "properties": {"sum": {"type": "integer", "format": "int64"}},
            "required": ["sum"]
        })
    );
    assert!(tool(&tools, "primitives").get("outputSchema").is_none());
}

#[tokio::test]
async fn header_integers_are_bounded_at_run_time() {
    let server = presa::server!().add::<headers>().build().expect("builds");
    let c = TestClient::new(&server);
    let r = c
        .call_tool(
            "headers",
            json!({"region": "eu", "count": 9_007_199_254_740_992_i64, "dry_run": false}),
        )
        .await;
    presa_tests::assert_tool_error_text(
        &r,
        "Invalid arguments for tool headers: /count: 9007199254740992 is greater than \
         9007199254740991",
    );
    c.call_tool(
        "headers",
        json!({"region": "eu", "count": 9_007_199_254_740_991_i64, "dry_run": false}),
    )
    .await
    .assert_text("euNone9007199254740991false");
}
