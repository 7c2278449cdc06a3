//! The echo tool served by the official Rust SDK, rmcp (pinned in bench/Cargo.toml), the
//! way its documentation shows: `#[tool_router]`/`#[tool]` macros, the Streamable HTTP
//! service in stateless mode with JSON responses (`legacy_session_mode(false)`,
//! `json_response(true)`, `NeverSessionManager`) on axum with `TCP_NODELAY` (its fastest
//! honest configuration), and its stdio transport `stdio_pipes()` (the one its
//! documentation recommends when both streams are pipes, as here).
//!
//! Usage: `bench-rmcp http 127.0.0.1:PORT` or `bench-rmcp stdio`.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServiceExt, schemars, tool, tool_router};
use serde::Deserialize;
use std::io;
use std::sync::Arc;

#[derive(Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to echo.
    text: String,
}

#[derive(Clone, Default)]
struct Echo;

#[tool_router(server_handler)]
impl Echo {
    /// Echoes the text back.
    #[tool(description = "Echoes the text back.")]
    async fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("stdio") => {
            let running = Echo.serve(rmcp::transport::io::stdio_pipes()).await?;
            running.waiting().await?;
        }
        Some("http") => {
            use axum::serve::ListenerExt;
            let addr = args.get(2).map_or("127.0.0.1:3000", String::as_str);
            let config = StreamableHttpServerConfig::default()
                .with_legacy_session_mode(false)
                .with_json_response(true);
            let service = StreamableHttpService::new(
                || Ok(Echo),
                Arc::new(NeverSessionManager::default()),
                config,
            );
            let listener = tokio::net::TcpListener::bind(addr).await?;
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            axum::serve(listener, axum::Router::new().nest_service("/mcp", service)).await?;
        }
        _ => return Err(io::Error::other("usage: bench-rmcp (http ADDR | stdio)").into()),
    }
    Ok(())
}
