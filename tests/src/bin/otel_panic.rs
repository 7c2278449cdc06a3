//! The fixture's server with two tools more, `test_panic`, whose handler panics, and
//! `test_inner_span`, whose handler does its work inside a `tracing` span of its own: for
//! the observability tests, which need a panic's span and metric sample and a handler's
//! own span, and must not add them to the conformance fixture. Serves Streamable HTTP and exports as the
//! fixture's `--http ADDR --otel ENDPOINT --metrics` does (OTLP/HTTP to ENDPOINT, metrics
//! every second, `GET /metrics`), until it is killed.
//!
//! Arguments: `--http ADDR --otel ENDPOINT`.

use presa::{HttpConfig, Tool, ToolCall};
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let mut addr = None;
    let mut endpoint = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => {
                addr = args
                    .next()
                    .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
            }
            "--otel" => endpoint = args.next(),
            other => {
                eprintln!("otel_panic: unknown argument {other:?}");
                return ExitCode::FAILURE;
            }
        }
    }
    let (Some(addr), Some(endpoint)) = (addr, endpoint) else {
        eprintln!("usage: otel_panic --http 127.0.0.1:PORT --otel ENDPOINT");
        return ExitCode::FAILURE;
    };
    let _telemetry = match presa::otel::Telemetry::otlp(endpoint)
        .service_name("presa-fixture")
        .metric_interval(Duration::from_secs(1))
        .prometheus(true)
        .install()
    {
        Ok(guard) => guard,
        Err(e) => {
            eprintln!("otel_panic: telemetry: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("otel_panic: a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let server = match presa_fixture::build() {
            Ok(s) => s,
            Err(e) => {
                eprintln!("otel_panic: the fixture: {e}");
                return ExitCode::FAILURE;
            }
        };
        let panics = Tool::new("test_panic")
            .description("Panics")
            .handler(|_: ToolCall| async {
                if std::hint::black_box(true) {
                    panic!("test_panic panics, as asked");
                }
                "unreachable"
            });
        if let Err(e) = server.add_tool(panics) {
            eprintln!("otel_panic: test_panic: {e}");
            return ExitCode::FAILURE;
        }
        let inner = Tool::new("test_inner_span")
            .description("Works inside a span of its own")
            .handler(|_: ToolCall| async {
                let span = tracing::info_span!("inner work", work.kind = "test");
                let _entered = span.enter();
                "done inside a span"
            });
        if let Err(e) = server.add_tool(inner) {
            eprintln!("otel_panic: test_inner_span: {e}");
            return ExitCode::FAILURE;
        }
        let listener = match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("otel_panic: {addr}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let config = HttpConfig::default().metrics(true);
        match server
            .serve_http_on(listener, config, std::future::pending())
            .await
        {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("otel_panic: {e}");
                ExitCode::FAILURE
            }
        }
    })
}
