//! Tools built without the attributes (the book's "Without the attribute"): two tools,
//! served over stdio by default or over Streamable HTTP with `--http`.
//!
//! ```sh
//! cargo run -p presa --example getting_started            # stdio
//! cargo run -p presa --example getting_started -- --http  # http://127.0.0.1:3000/mcp
//! ```

// ANCHOR: all
use presa::{CallToolResult, Tool, ToolCall, ToolError};
use serde_json::json;

/// Builds the server: a greeting tool and an adder.
fn server() -> Result<presa::Server, presa::BuildError> {
    presa::server!() // named after this crate: CARGO_PKG_NAME and CARGO_PKG_VERSION
        .tool(
            Tool::new("greet")
                .description("Greets someone by name")
                .input_schema(json!({
                    "type": "object",
                    "properties": {"name": {"type": "string", "description": "Who to greet"}},
                    "required": ["name"]
                }))
                .handler(|call: ToolCall| async move {
                    let name = call.arguments["name"].as_str().unwrap_or("world");
                    format!("Hello, {name}!")
                }),
        )
        .tool(
            Tool::new("divide")
                .description("Divides a by b")
                .input_schema(json!({
                    "type": "object",
                    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                    "required": ["a", "b"]
                }))
                .output_schema(json!({
                    "type": "object",
                    "properties": {"quotient": {"type": "number"}},
                    "required": ["quotient"]
                }))
                .handler(|call: ToolCall| async move {
                    let a = call.arguments["a"].as_f64().unwrap_or_default();
                    let b = call.arguments["b"].as_f64().unwrap_or_default();
                    if b == 0.0 {
                        // A tool error: the model reads it (`isError: true`).
                        return Err(ToolError::new("cannot divide by zero"));
                    }
                    Ok(CallToolResult::structured(json!({ "quotient": a / b })))
                }),
        )
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Logs go to stderr: on stdio, stdout carries protocol messages only.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let server = server()?;
    if std::env::args().any(|a| a == "--http") {
        eprintln!("serving on http://127.0.0.1:3000/mcp");
        server.serve_http("127.0.0.1:3000").await?;
    } else {
        server.serve_stdio().await?;
    }
    Ok(())
}
// ANCHOR_END: all

// ANCHOR: tests
#[cfg(test)]
mod tests {
    use super::*;
    use presa::testing::TestClient;

    #[tokio::test]
    async fn the_tools_work() {
        let client = TestClient::new(&server().unwrap());
        client
            .call_tool("greet", json!({"name": "Ada"}))
            .await
            .assert_text("Hello, Ada!");
        let r = client.call_tool("divide", json!({"a": 1, "b": 4})).await;
        assert_eq!(r.result()["structuredContent"], json!({"quotient": 0.25}));
        client
            .call_tool("divide", json!({"a": 1, "b": 0}))
            .await
            .assert_tool_error("cannot divide by zero");
    }
}
// ANCHOR_END: tests
