//! The conformance fixture: a server built only from presa's public API that serves every
//! tool, resource and prompt the official conformance runner calls (wire reference section
//! 16).
//!
//! `presa-fixture [--transport http|stdio] [--port N]` (the port also from `MCP_PORT`; 0
//! means any free port). Over HTTP it prints
//! `{"conformanceReady":true,"url":"http://127.0.0.1:<port>/mcp"}` on one stdout line once
//! listening, and serves until stdin closes or it gets SIGINT or SIGTERM, then exits 0.

mod prompts;
mod resources;
mod tools;

use presa::{HttpConfig, Implementation, Server};
use std::process::ExitCode;

enum Transport {
    Http,
    Stdio,
}

struct Args {
    transport: Transport,
    port: u16,
}

fn parse_args() -> Result<Args, String> {
    let mut transport = Transport::Http;
    let mut port = match std::env::var("MCP_PORT") {
        Ok(p) => p
            .parse()
            .map_err(|_| format!("MCP_PORT={p:?} is not a port number"))?,
        Err(_) => 0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--transport" => match args.next().as_deref() {
                Some("http") => transport = Transport::Http,
                Some("stdio") => transport = Transport::Stdio,
                other => return Err(format!("--transport takes http or stdio, not {other:?}")),
            },
            "--port" => {
                let p = args.next().ok_or("--port takes a number")?;
                port = p
                    .parse()
                    .map_err(|_| format!("--port {p:?} is not a port number"))?;
            }
            "--help" | "-h" => {
                return Err("usage: presa-fixture [--transport http|stdio] [--port N]".into());
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(Args { transport, port })
}

/// The fixture's server: every item of wire section 16 that presa serves.
fn build() -> Result<Server, presa::BuildError> {
    let builder = Server::builder(
        Implementation::new("presa-conformance", env!("CARGO_PKG_VERSION"))
            .title("presa conformance fixture"),
    )
    .instructions("The presa conformance fixture: test tools, resources and prompts for the official MCP conformance runner.");
    let builder = tools::register(builder);
    let builder = resources::register(builder);
    let builder = prompts::register(builder);
    builder.build()
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("presa-fixture: {e}");
            return ExitCode::from(2);
        }
    };
    let server = match build() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("presa-fixture: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match args.transport {
        Transport::Stdio => server.serve_stdio().await,
        Transport::Http => serve_http(server, args.port).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("presa-fixture: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve_http(server: Server, port: u16) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    println!(
        "{}",
        serde_json::json!({"conformanceReady": true, "url": format!("http://{addr}/mcp")})
    );
    server
        .serve_http_on(listener, HttpConfig::default(), shutdown_signal())
        .await
}

/// Completes when stdin reaches its end, or on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let stdin_closed = async {
        use tokio::io::AsyncReadExt;
        let mut stdin = tokio::io::stdin();
        let mut buf = [0u8; 1024];
        loop {
            match stdin.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    };
    let terminate = async {
        #[cfg(unix)]
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
        #[cfg(not(unix))]
        std::future::pending::<()>().await
    };
    tokio::select! {
        _ = stdin_closed => {}
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
}
