//! A stdio server written as a program would write it: `#[tokio::main]` and
//! `serve_stdio_with`, nothing else to stop it. Once `main` returns, the runtime's drop
//! waits for every thread of its blocking pool, so a read of stdin or a write of stdout
//! left there would hold the exit; the e2e tests in `stdio_signals` signal it with
//! stdin and stdout held open.
//!
//! `--grace-ms N` sets the shutdown grace. `--own-signals` turns presa's signal handling
//! off and handles SIGTERM itself: it writes `own handler: SIGTERM` to stderr and lets
//! serving go on.

use presa::{RequestContext, StdioConfig};
use std::process::ExitCode;
use std::time::Duration;

/// Never ends (until cancelled).
#[presa::tool]
async fn forever() -> String {
    std::future::pending().await
}

/// Keeps its request's context for good, in a task of its own, and answers.
#[presa::tool]
async fn keep(ctx: RequestContext) -> String {
    tokio::spawn(async move {
        let _kept = ctx;
        std::future::pending::<()>().await;
    });
    "kept".to_owned()
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut config = StdioConfig::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--grace-ms" => match args.next().and_then(|ms| ms.parse().ok()) {
                Some(ms) => config = config.shutdown_grace(Duration::from_millis(ms)),
                None => {
                    eprintln!("stdio_signals: --grace-ms takes a number");
                    return ExitCode::from(2);
                }
            },
            "--own-signals" => {
                config = config.stop_on_signals(false);
                if let Err(e) = own_sigterm_handler() {
                    eprintln!("stdio_signals: {e}");
                    return ExitCode::FAILURE;
                }
            }
            other => {
                eprintln!("stdio_signals: unknown argument {other:?}");
                return ExitCode::from(2);
            }
        }
    }
    let server = match presa::server!().add::<forever>().add::<keep>().build() {
        Ok(server) => server,
        Err(e) => {
            eprintln!("stdio_signals: {e}");
            return ExitCode::FAILURE;
        }
    };
    match server.serve_stdio_with(config).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stdio_signals: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Listens for SIGTERM from now on, saying so on stderr each time it arrives.
#[cfg(unix)]
fn own_sigterm_handler() -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())?;
    tokio::spawn(async move {
        while terminate.recv().await.is_some() {
            eprintln!("own handler: SIGTERM");
        }
    });
    Ok(())
}

#[cfg(not(unix))]
fn own_sigterm_handler() -> std::io::Result<()> {
    Ok(())
}
