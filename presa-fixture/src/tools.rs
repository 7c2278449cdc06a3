//! The fixture's tools (wire reference section 16.1), declared with `#[tool]`.

use presa::extract::Args;
use presa::{CallToolResult, Content, LogLevel, RequestContext, ResourceContents, ServerBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::time::Duration;

/// A 1x1 PNG.
pub(crate) const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mP8/x8AAusB9Y9Z4p8AAAAASUVORK5CYII=";
/// A tiny WAV file.
pub(crate) const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .add::<test_simple_text>()
        .add::<test_image_content>()
        .add::<test_audio_content>()
        .add::<test_embedded_resource>()
        .add::<test_multiple_content_types>()
        .add::<test_error_handling>()
        .add::<test_tool_with_progress>()
        .add::<slow_progress>()
        .add::<test_logging_tool>()
        .add::<custom_header_region>()
        .add::<json_schema_2020_12_tool>()
        .add::<a_header_probe>()
        .add::<plan_trip>()
}

/// Returns one text content item.
#[presa::tool]
async fn test_simple_text() -> &'static str {
    "This is a simple text response for testing."
}

/// Returns one image content item (a 1x1 PNG).
#[presa::tool]
async fn test_image_content() -> Content {
    Content::image_base64(PNG, "image/png")
}

/// Returns one audio content item (a WAV file).
#[presa::tool]
async fn test_audio_content() -> Content {
    Content::audio_base64(WAV, "audio/wav")
}

/// Returns one embedded text resource.
#[presa::tool]
async fn test_embedded_resource() -> Content {
    Content::resource(
        ResourceContents::text(
            "test://embedded-resource",
            "This is an embedded resource content.",
        )
        .mime_type("text/plain"),
    )
}

/// Returns text, image and embedded resource content together.
#[presa::tool]
async fn test_multiple_content_types() -> Vec<Content> {
    vec![
        Content::text("Multiple content types test:"),
        Content::image_base64(PNG, "image/png"),
        Content::resource(
            ResourceContents::text(
                "test://mixed-content-resource",
                json!({"test": "data", "value": 123}).to_string(),
            )
            .mime_type("application/json"),
        ),
    ]
}

/// Always fails with a tool error (isError: true).
#[presa::tool]
async fn test_error_handling() -> CallToolResult {
    CallToolResult::error("This tool intentionally returns an error for testing")
}

/// Reports progress three times, then returns.
#[presa::tool(live_notifications)]
async fn test_tool_with_progress(ctx: RequestContext) -> String {
    ctx.progress(0.0, Some(100.0), Some("Starting computation"));
    tokio::time::sleep(Duration::from_millis(20)).await;
    ctx.progress(50.0, Some(100.0), Some("First half complete"));
    tokio::time::sleep(Duration::from_millis(20)).await;
    ctx.progress(100.0, Some(100.0), Some("Computation complete"));
    let sum: u32 = (1..=100).sum();
    format!("Progress computation completed: {sum}")
}

/// Reports progress `steps` times (default 3, at most 100), `interval_ms` apart (default
/// 500, at most 10 000), then answers: a request whose stream a client may drop and
/// resume while it runs.
#[presa::tool(live_notifications)]
async fn slow_progress(
    steps: Option<u32>,
    interval_ms: Option<u64>,
    ctx: RequestContext,
) -> String {
    let steps = steps.unwrap_or(3).min(100);
    let pause = Duration::from_millis(interval_ms.unwrap_or(500).min(10_000));
    for step in 1..=steps {
        if step > 1 {
            tokio::time::sleep(pause).await;
        }
        ctx.progress(
            f64::from(step),
            Some(f64::from(steps)),
            Some(&format!("Step {step}")),
        );
    }
    tokio::time::sleep(pause).await;
    format!("Completed {steps} steps")
}

/// Logs one message at every level (sent only at or above the request's logLevel).
#[presa::tool]
async fn test_logging_tool(ctx: RequestContext) -> &'static str {
    for level in LogLevel::ALL {
        ctx.log_with_logger(level, Some("conformance"), format!("{level} message"));
    }
    "Logged at every level"
}

/// Echoes its region argument, which clients mirror into the Mcp-Param-Region header.
#[presa::tool]
async fn custom_header_region(
    #[header("Region")]
    #[arg(description = "A region name")]
    region: String,
) -> String {
    format!("region: {region}")
}

/// Tool with JSON Schema 2020-12 features
#[presa::tool(input_schema = r##"{
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
}"##)]
async fn json_schema_2020_12_tool(Args(arguments): Args<Map<String, Value>>) -> String {
    format!("received: {}", Value::Object(arguments))
}

/// Accepts empty arguments; the first tool in the listing, probed by the header validation scenario.
#[presa::tool]
async fn a_header_probe() -> &'static str {
    "header probe ok"
}

/// A cabin class.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Cabin {
    Economy,
    Business,
    First,
}

/// Plans a trip through the cities given: an enum, a boolean, an array and a default,
/// shapes the catalog page builds its forms for.
#[presa::tool]
async fn plan_trip(
    #[arg(description = "The cabin class")] cabin: Cabin,
    #[arg(description = "Whether to sit by the window")] window: bool,
    #[arg(description = "The cities on the way, in order")] stops: Vec<String>,
    #[arg(description = "Nights in each city", default = 2)] nights: u32,
) -> String {
    let seat = if window { "window" } else { "aisle" };
    format!(
        "{cabin:?} trip, {seat} seat, {nights} nights each in: {}",
        stops.join(" -> ")
    )
}
