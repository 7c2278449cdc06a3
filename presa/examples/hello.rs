//! The smallest useful presa server: two tools, served over stdio (or over Streamable HTTP
//! with `--http`). The Quickstart's server; the README shows its `greet` tool and `main`.
//!
//! ```sh
//! cargo run -p presa --example hello            # stdio
//! cargo run -p presa --example hello -- --http  # http://127.0.0.1:3000/mcp
//! ```

// ANCHOR: all
/// Adds two numbers.
#[presa::tool(annotations(read_only))]
async fn add(a: f64, b: f64) -> f64 {
    a + b
}

// ANCHOR: readme
/// Greets someone by name.
#[presa::tool]
async fn greet(name: String) -> String {
    format!("Hello, {name}!")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = presa::server!().registered().build()?; // every #[tool] in the program
    match std::env::args().nth(1).as_deref() {
        Some("--http") => server.serve_http("127.0.0.1:3000").await?,
        _ => server.serve_stdio().await?, // until stdin closes
    }
    Ok(())
}
// ANCHOR_END: readme
// ANCHOR_END: all

// ANCHOR: tests
#[cfg(test)]
mod tests {
    use presa::testing::TestClient;
    use serde_json::json;

    /// In process: the same pipeline as the transports, no socket.
    #[tokio::test]
    async fn both_tools_answer() {
        let server = presa::server!().registered().build().unwrap();
        let client = TestClient::new(&server);
        client
            .call_tool("add", json!({"a": 2, "b": 3}))
            .await
            .assert_text("5");
        client
            .call_tool("greet", json!({"name": "Ada"}))
            .await
            .assert_text("Hello, Ada!");
        // Arguments that break the input schema are a tool error the model can read.
        client
            .call_tool("add", json!({"a": "two"}))
            .await
            .assert_tool_error("Invalid arguments");
    }

    /// Over the stdio framing itself: newline-delimited JSON-RPC on a pipe.
    #[tokio::test]
    async fn over_stdio_framing() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let server = presa::server!().registered().build().unwrap();
        let (mut client, server_end) = tokio::io::duplex(64 * 1024);
        let (reader, writer) = tokio::io::split(server_end);
        let serving = tokio::spawn(async move {
            server
                .serve_io(reader, writer, presa::StdioConfig::default())
                .await
        });
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "greet", "arguments": {"name": "Ada"}, "_meta": meta}});
        client
            .write_all(format!("{call}\n").as_bytes())
            .await
            .unwrap();
        client.shutdown().await.unwrap(); // stdin closes: the server finishes, then exits
        let mut out = String::new();
        client.read_to_string(&mut out).await.unwrap();
        serving.await.unwrap().unwrap();
        let response: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(response["id"], 1);
        assert_eq!(response["result"]["content"][0]["text"], "Hello, Ada!");
    }
}
// ANCHOR_END: tests
