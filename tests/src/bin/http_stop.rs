//! A server over Streamable HTTP that only a signal stops: `serve_http_on` with presa's
//! own SIGINT and SIGTERM handling, for the shutdown tests to signal as a supervisor
//! would. Its tools: `slow` takes any arguments and answers after 1 s (noting on stderr
//! when it begins), `forever` never answers (it notes on
//! stderr when it is cancelled). Arguments: `--grace MS` (the drain deadline) and
//! `--no-signals` (`stop_on_signals(false)`). Prints `{"url": "http://127.0.0.1:<port>/mcp"}`
//! on stdout once listening, and `serving ended` on stderr when `serve_http_on` returns.

use presa::{HttpConfig, Implementation, Server, Tool, ToolCall};
use std::process::ExitCode;
use std::time::Duration;

/// Notes on stderr when dropped: a handler's future dropped before it ended was cancelled.
struct Cancelled;

impl Drop for Cancelled {
    fn drop(&mut self) {
        eprintln!("forever was cancelled");
    }
}

fn server() -> Result<Server, presa::BuildError> {
    Server::builder(Implementation::new("http-stop", "0.0.1"))
        .tool(
            Tool::new("slow")
                .description("Answers after a second")
                .input_schema(serde_json::json!({"type": "object"}))
                .handler(|_: ToolCall| async {
                    eprintln!("slow began");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    "slow done"
                }),
        )
        .tool(
            Tool::new("forever")
                .description("Never answers")
                .handler(|_: ToolCall| async {
                    let _noted = Cancelled;
                    eprintln!("forever began");
                    std::future::pending::<()>().await;
                    "never"
                }),
        )
        .build()
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut config = HttpConfig::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--grace" => match args.next().and_then(|ms| ms.parse().ok()) {
                Some(ms) => config = config.shutdown_grace(Duration::from_millis(ms)),
                None => {
                    eprintln!("http_stop: --grace needs milliseconds");
                    return ExitCode::FAILURE;
                }
            },
            "--no-signals" => config = config.stop_on_signals(false),
            other => {
                eprintln!("http_stop: unknown argument {other}");
                return ExitCode::FAILURE;
            }
        }
    }
    let server = match server() {
        Ok(server) => server,
        Err(e) => {
            eprintln!("http_stop: {e}");
            return ExitCode::FAILURE;
        }
    };
    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("http_stop: {e}");
            return ExitCode::FAILURE;
        }
    };
    let url = match listener.local_addr() {
        Ok(addr) => format!("http://{addr}/mcp"),
        Err(e) => {
            eprintln!("http_stop: {e}");
            return ExitCode::FAILURE;
        }
    };
    let serving = server.serve_http_on(listener, config, std::future::pending());
    println!("{}", serde_json::json!({ "url": url }));
    let served = serving.await;
    eprintln!("serving ended");
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("http_stop: {e}");
            ExitCode::FAILURE
        }
    }
}
