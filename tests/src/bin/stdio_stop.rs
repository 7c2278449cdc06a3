//! A process that stops serving stdio and goes on running: `serve_stdio()` raced against
//! a stop signal, as a user would race it against Ctrl-C or a timeout. Once the race is
//! decided it writes `stopped serving` to stderr and waits to be killed. The e2e test
//! `dropping_serve_stdio_stops_serving` checks that nothing is served after that.

use std::process::ExitCode;
use std::time::Duration;
use tokio::sync::Notify;

/// Set off by the `stop` tool.
static STOP: Notify = Notify::const_new();

/// Echoes the text back.
#[presa::tool]
async fn echo(text: String) -> String {
    text
}

/// Ends the race: `main` drops the `serve_stdio` future.
#[presa::tool]
async fn stop() -> String {
    STOP.notify_one();
    "stopping".to_owned()
}

#[tokio::main]
async fn main() -> ExitCode {
    let server = match presa::server!().add::<echo>().add::<stop>().build() {
        Ok(server) => server,
        Err(e) => {
            eprintln!("stdio_stop: {e}");
            return ExitCode::FAILURE;
        }
    };
    tokio::select! {
        served = server.serve_stdio() => {
            eprintln!("stdio_stop: serving ended by itself: {served:?}");
            return ExitCode::FAILURE;
        }
        () = STOP.notified() => {}
    }
    eprintln!("stopped serving");
    // The process goes on (stdin still open); the test kills it.
    tokio::time::sleep(Duration::from_secs(60)).await;
    ExitCode::SUCCESS
}
