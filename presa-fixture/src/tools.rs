//! The fixture's tools (wire reference section 16.1).

use presa::{CallToolResult, Content, LogLevel, ResourceContents, ServerBuilder, Tool, ToolCall};
use serde_json::json;
use std::time::Duration;

/// A 1x1 PNG.
pub(crate) const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mP8/x8AAusB9Y9Z4p8AAAAASUVORK5CYII=";
/// A tiny WAV file.
pub(crate) const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .tool(
            Tool::new("test_simple_text")
                .description("Returns one text content item")
                .handler(|_: ToolCall| async {
                    "This is a simple text response for testing."
                }),
        )
        .tool(
            Tool::new("test_image_content")
                .description("Returns one image content item (a 1x1 PNG)")
                .handler(|_: ToolCall| async { Content::image_base64(PNG, "image/png") }),
        )
        .tool(
            Tool::new("test_audio_content")
                .description("Returns one audio content item (a WAV file)")
                .handler(|_: ToolCall| async { Content::audio_base64(WAV, "audio/wav") }),
        )
        .tool(
            Tool::new("test_embedded_resource")
                .description("Returns one embedded text resource")
                .handler(|_: ToolCall| async {
                    Content::resource(
                        ResourceContents::text(
                            "test://embedded-resource",
                            "This is an embedded resource content.",
                        )
                        .mime_type("text/plain"),
                    )
                }),
        )
        .tool(
            Tool::new("test_multiple_content_types")
                .description("Returns text, image and embedded resource content together")
                .handler(|_: ToolCall| async {
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
                }),
        )
        .tool(
            Tool::new("test_error_handling")
                .description("Always fails with a tool error (isError: true)")
                .handler(|_: ToolCall| async {
                    CallToolResult::error("This tool intentionally returns an error for testing")
                }),
        )
        .tool(
            Tool::new("test_tool_with_progress")
                .description("Reports progress three times, then returns")
                .handler(|call: ToolCall| async move {
                    let ctx = call.ctx;
                    ctx.progress(0.0, Some(100.0), Some("Starting computation"));
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    ctx.progress(50.0, Some(100.0), Some("First half complete"));
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    ctx.progress(100.0, Some(100.0), Some("Computation complete"));
                    let sum: u32 = (1..=100).sum();
                    format!("Progress computation completed: {sum}")
                }),
        )
        .tool(
            Tool::new("test_logging_tool")
                .description("Logs one message at every level (sent only at or above the request's logLevel)")
                .handler(|call: ToolCall| async move {
                    for level in LogLevel::ALL {
                        call.ctx.log_with_logger(
                            level,
                            Some("conformance"),
                            format!("{level} message"),
                        );
                    }
                    "Logged at every level"
                }),
        )
        .tool(
            Tool::new("custom_header_region")
                .description("Echoes its region argument, which clients mirror into the Mcp-Param-Region header")
                .input_schema(json!({
                    "type": "object",
                    "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region", "description": "A region name"}
                    },
                    "required": ["region"]
                }))
                .handler(|call: ToolCall| async move {
                    let region = call.arguments.get("region").and_then(|r| r.as_str()).unwrap_or_default();
                    format!("region: {region}")
                }),
        )
        .tool(
            Tool::new("json_schema_2020_12_tool")
                .description("Tool with JSON Schema 2020-12 features")
                .input_schema(json_schema_2020_12())
                .handler(|call: ToolCall| async move {
                    format!("received: {}", serde_json::Value::Object(call.arguments))
                }),
        )
        .tool(
            Tool::new("a_header_probe")
                .description("Accepts empty arguments; the first tool in the listing, probed by the header validation scenario")
                .handler(|_: ToolCall| async { "header probe ok" }),
        )
}

/// A schema using 2020-12 features, listed exactly as written: `$schema`, `$defs` with an
/// `$anchor`, `$ref`, composition, conditionals and `additionalProperties: false`.
fn json_schema_2020_12() -> serde_json::Value {
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
}
