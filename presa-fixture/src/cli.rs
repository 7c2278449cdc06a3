//! The command line of the fixture binary.

use crate::build;
use presa::{HttpConfig, Server};
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

/// The `presa-fixture` command line: parses the arguments, serves, and returns the exit
/// code.
pub fn main() -> ExitCode {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("presa-fixture: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run())
}

async fn run() -> ExitCode {
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
