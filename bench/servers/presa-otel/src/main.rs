//! bench-presa's echo tool in a build with presa's `otel`, for the observability cell:
//! `#[presa::tool]`, the `server!()` builder and the stock `serve_http`. With `--otel URL`
//! it installs [`presa::otel::Telemetry`] exporting every request's span and the metrics
//! to that OTLP/HTTP endpoint, with the exporter's default batching; without it, nothing
//! is installed and the same binary serves as the cell's twin. Nothing here is tuned for
//! the benchmark.
//!
//! Usage: `bench-presa-otel [--otel URL] http 127.0.0.1:PORT`.

use std::io;

/// Echoes the text back.
#[presa::tool]
async fn echo(text: String) -> String {
    text
}

const USAGE: &str = "usage: bench-presa-otel [--otel URL] http ADDR";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (endpoint, addr) = match args.as_slice() {
        [flag, url, mode, addr] if flag == "--otel" && mode == "http" => (Some(url), addr),
        [mode, addr] if mode == "http" => (None, addr),
        _ => return Err(io::Error::other(USAGE).into()),
    };
    // Kept to the end of `main`: dropping it flushes and shuts the exporters down.
    let _telemetry = match endpoint {
        Some(url) => Some(
            presa::otel::Telemetry::otlp(url.as_str())
                .service_name("bench-presa-otel")
                .install()?,
        ),
        None => None,
    };
    let server = presa::server!().add::<echo>().build()?;
    server.serve_http(addr.as_str()).await?;
    Ok(())
}
