//! An MCP endpoint mounted in an existing axum application, beside its own routes: the
//! app answers `GET /health` itself and serves MCP at `POST /mcp`.
//!
//! ```sh
//! cargo run -p presa --example axum_app   # http://127.0.0.1:3000/health and /mcp
//! ```

use axum::Router;
use axum::routing::get;
use presa::HttpConfig;

/// Looks up the opening hours of a shop.
#[presa::tool(annotations(read_only))]
async fn opening_hours(shop: String) -> String {
    format!("{shop} is open from 9:00 to 18:00")
}

// ANCHOR: app
/// The application: its own routes, and the MCP endpoint beside them.
fn app() -> Result<Router, presa::BuildError> {
    let mcp = presa::server!().registered().build()?;
    let config = HttpConfig::default()
        .path("/mcp") // the default
        .allow_origin("https://app.example.com") // a browser app allowed to call it
        .max_body_bytes(1024 * 1024);
    Ok(Router::new()
        .route("/health", get(|| async { "ok" }))
        .merge(mcp.router(config)))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    eprintln!("serving on http://{}", listener.local_addr()?);
    axum::serve(listener, app()?).await?;
    Ok(())
}
// ANCHOR_END: app

// ANCHOR: tests
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Sends one HTTP/1.1 request over a fresh connection; returns the status and body.
    async fn http(addr: std::net::SocketAddr, head: &str, body: &str) -> (u16, String) {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = format!(
            "{head}\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        let (head, body) = response.split_once("\r\n\r\n").unwrap();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        (status, body.to_owned())
    }

    #[tokio::test]
    async fn both_routes_answer() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app().unwrap()).await });

        // The application's own route.
        assert_eq!(
            http(addr, "GET /health HTTP/1.1", "").await,
            (200, "ok".into())
        );

        // The MCP endpoint: the protocol headers, and `_meta` in the body.
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "opening_hours", "arguments": {"shop": "Bakery"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}});
        let mcp = "POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\n\
                   Accept: application/json, text/event-stream\r\n\
                   MCP-Protocol-Version: 2026-07-28\r\n\
                   Mcp-Method: tools/call\r\nMcp-Name: opening_hours";
        let (status, body) = http(addr, mcp, &call.to_string()).await;
        assert_eq!(status, 200);
        let response: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            response["result"]["content"][0]["text"],
            "Bakery is open from 9:00 to 18:00"
        );

        // A browser page from an origin that was not allowed is refused before parsing.
        let evil = format!("{mcp}\r\nOrigin: https://evil.example");
        assert_eq!(http(addr, &evil, &call.to_string()).await.0, 403);
        // The allowed one passes.
        let app_origin = format!("{mcp}\r\nOrigin: https://app.example.com");
        assert_eq!(http(addr, &app_origin, &call.to_string()).await.0, 200);
    }
}
// ANCHOR_END: tests
