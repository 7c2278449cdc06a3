//! A server that exports its telemetry: every request as an OpenTelemetry span named by
//! the MCP semantic conventions and the metrics over OTLP/HTTP to a collector, and the
//! metrics as Prometheus text at `GET /metrics`. The book's "Observability" chapter shows
//! its parts.
//!
//! ```sh
//! cargo run -p presa --features otel --example observability -- http://127.0.0.1:4318
//! curl http://127.0.0.1:3000/metrics
//! ```

/// Greets someone by name.
#[presa::tool]
async fn greet(name: String) -> String {
    format!("Hello, {name}!")
}

// ANCHOR: setup
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The collector's OTLP/HTTP base URL (spans to /v1/traces, metrics to /v1/metrics).
    let collector = std::env::args().nth(1);
    let telemetry = match collector {
        Some(url) => presa::otel::Telemetry::otlp(url),
        None => presa::otel::Telemetry::local(), // no export: Prometheus only
    };
    // Kept until `main` returns: dropping it flushes what is left and shuts down.
    let _telemetry = telemetry
        .service_name("greeter")
        .prometheus(true) // a pull reader for GET /metrics
        .install()?;

    let server = server()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    let config = presa::HttpConfig::default().metrics(true); // GET /metrics
    server
        .serve_http_on(listener, config, std::future::pending())
        .await?;
    Ok(())
}
// ANCHOR_END: setup

/// The greeter.
fn server() -> Result<presa::Server, presa::BuildError> {
    presa::server!().add::<greet>().build()
}

#[cfg(test)]
mod tests {
    use presa::testing::TestClient;
    use serde_json::json;

    /// The server answers as it would without telemetry: installing it changes what is
    /// observed, never an answer.
    #[tokio::test]
    async fn greets() {
        let client = TestClient::new(&super::server().expect("the server builds"));
        client
            .call_tool("greet", json!({"name": "Ada"}))
            .await
            .assert_text("Hello, Ada!");
    }
}
