//! The command line of the fixture binary: its arguments, its runtime, and when it stops.
//!
//! It stops as a server should. SIGINT (Ctrl-C) and SIGTERM stop either transport, and the
//! process then exits 0 within a second, whatever its stdin is (a terminal, a pipe held
//! open, `/dev/null`, a socket):
//!
//! - over HTTP, stdin is not read at all (so a fixture under systemd, `docker run` without
//!   `-i` or `nohup … &` serves until it is signalled), unless `--exit-on-stdin-close`
//!   asks for stdin's end to stop it as well. presa's HTTP transport handles the signals
//!   itself: no connection is taken after them, subscription streams end, and requests
//!   still open get [`DRAIN`] to finish (its shutdown grace); then they are cancelled.
//! - over stdio, stdin's end stops it (that is the transport), and so does a signal, which
//!   presa's stdio transport handles itself: no line is read after it, subscription
//!   streams end, and requests in flight get [`DRAIN`] to finish (its shutdown grace, after
//!   stdin's end too); then they are cancelled.
//!
//! Whatever still runs then on tokio's blocking pool (which no cancellation reaches) is
//! left behind after [`LEFT_BEHIND_AFTER`] rather than waited for, so nothing keeps the
//! process alive.

use crate::auth::AuthSettings;
use crate::{Store, build_with_store};
use presa::{HttpConfig, Server, StdioConfig};
use std::future::Future;
use std::process::ExitCode;
use std::task::Poll;
use std::time::Duration;

/// How long requests still open get to finish once a stop signal arrived (over stdio, also
/// once stdin ended).
pub const DRAIN: Duration = Duration::from_millis(500);

/// How long the runtime waits at the end for work still running on its blocking pool
/// before it leaves it behind. With [`DRAIN`], well under a second.
pub const LEFT_BEHIND_AFTER: Duration = Duration::from_millis(100);

const USAGE: &str = "\
usage: presa-fixture [--transport http|stdio] [--port N] [--http ADDR] [--dev] [--exit-on-stdin-close]
                     [--auth ISSUER] [--tasks-store URL [--store-timeout MS]] [--task-lease MS]
                     [--otel ENDPOINT [--otel-interval MS] [--otel-sdk]] [--metrics]

Serves presa's conformance fixture: every tool, resource and prompt the official MCP
conformance runner calls.

  --transport http       Streamable HTTP on 127.0.0.1 (the default). Prints
                         {\"conformanceReady\":true,\"url\":\"http://127.0.0.1:<port>/mcp\"}
                         on one stdout line once listening. Does not read stdin.
  --transport stdio      newline-delimited JSON-RPC on stdin and stdout; stops when stdin
                         reaches its end.
  --port N               the HTTP port (also from MCP_PORT); 0, the default, picks a free one.
  --http ADDR            Streamable HTTP on ADDR (127.0.0.1:PORT; port 0 picks a free one):
                         --transport http with that address.
  --dev                  over HTTP, also serve the catalog page at /mcp/dev: every tool,
                         resource and prompt, with forms that call them (the ready line
                         then names it as \"catalog\").
  --exit-on-stdin-close  over HTTP, also stop when stdin reaches its end.
  --otel ENDPOINT        export spans and metrics over OTLP/HTTP (protobuf) to the collector
                         at ENDPOINT, a base URL (http://127.0.0.1:4318): POST
                         ENDPOINT/v1/traces and ENDPOINT/v1/metrics.
  --otel-interval MS     how often metrics are exported (default 1000).
  --otel-sdk             export request spans the OpenTelemetry SDK's way (tracing-opentelemetry
                         and the SDK's batch exporter) instead of presa's own: the same spans.
  --metrics              over HTTP, serve the metrics at GET /metrics in the Prometheus text
                         format.
  --auth ISSUER          over HTTP, an OAuth 2.1 resource server: every request needs a JWT
                         access token from the authorization server ISSUER (its keys found
                         through its metadata, fetched at start), issued for the fixture's
                         URL and granting mcp:read; the tool test_scoped_write also needs
                         mcp:write, and test_whoami says who the token was issued to.
  --tasks-store URL      keep tasks, and the record of spent single-use request states,
                         in postgres://USER@HOST:PORT/DATABASE or sqlite:PATH instead of
                         in memory, so that replicas sharing it answer for each other's
                         tasks and refuse a state spent on another (needs the `stores`
                         feature); with postgres://, legacy sessions' records too, so
                         their requests may land on any replica. Refuses to start when
                         the store cannot be opened.
  --store-timeout MS     how long a call to that store may wait for it (a connection, a
                         statement; SQLite's lock) before the request gets a retryable
                         -32603 (default 5000).
  --task-lease MS        how long a task's run holds the task without renewing (presa's
                         default: 30000; at least 30): a replica sharing the store runs a
                         task again once its replica stopped renewing for that long.
  -h, --help             this text.

Replicas answering the same clients must also share their request-state key: set
PRESA_STATE_KEYS=id:base64key (32 bytes or more; a comma-separated list to rotate, the
signing key first) in each one's environment.

SIGINT (Ctrl-C) and SIGTERM stop either transport within a second, with exit code 0.
";

#[derive(Debug, PartialEq)]
enum Transport {
    Http,
    Stdio,
}

#[derive(Debug)]
struct Args {
    transport: Transport,
    port: u16,
    exit_on_stdin_close: bool,
    /// `--dev`: the catalog page.
    dev: bool,
    /// The authorization server's issuer, in `--auth` mode.
    auth: Option<String>,
    /// `--tasks-store`.
    store: Option<StoreUrl>,
    /// `--store-timeout`.
    store_timeout: Duration,
    /// `--task-lease`.
    task_lease: Option<Duration>,
    /// `--http`'s address (else 127.0.0.1 and `port`).
    addr: Option<std::net::SocketAddr>,
    /// `--otel`: the OTLP/HTTP collector's base URL.
    otel: Option<String>,
    /// `--otel-interval`.
    otel_interval: Duration,
    /// `--otel-sdk`.
    otel_sdk: bool,
    /// `--metrics`.
    metrics: bool,
}

/// Where `--tasks-store` keeps tasks and spent single-use request states.
#[derive(Debug, PartialEq)]
enum StoreUrl {
    /// A PostgreSQL URL, as given.
    Postgres(String),
    /// The path of a SQLite file.
    Sqlite(std::path::PathBuf),
}

/// The default of `--store-timeout`.
const STORE_TIMEOUT: Duration = Duration::from_secs(5);

impl StoreUrl {
    /// Reads a `--tasks-store` URL. A URL that is neither kind is not echoed back: it
    /// may hold a password.
    fn parse(url: &str) -> Result<StoreUrl, String> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(StoreUrl::Postgres(url.to_owned()))
        } else if let Some(path) = url.strip_prefix("sqlite:") {
            if path.is_empty() {
                return Err("--tasks-store sqlite: needs a file's path (sqlite:PATH)".into());
            }
            Ok(StoreUrl::Sqlite(path.into()))
        } else {
            Err("--tasks-store takes postgres://… or sqlite:PATH".into())
        }
    }

    /// Opens the store, with calls waiting for it at most `timeout`.
    #[cfg(feature = "stores")]
    async fn open(&self, timeout: Duration) -> Result<Store, String> {
        match self {
            StoreUrl::Postgres(url) => presa::tasks::PgStore::builder(url.as_str())
                .acquire_timeout(timeout)
                .statement_timeout(timeout)
                .connect()
                .await
                .map(Store::Postgres)
                .map_err(|e| format!("the task store (PostgreSQL) cannot be opened: {e}")),
            StoreUrl::Sqlite(path) => presa::tasks::SqliteStore::open_with(path, timeout)
                .await
                .map(Store::Sqlite)
                .map_err(|e| format!("the task store (SQLite) cannot be opened: {e}")),
        }
    }

    #[cfg(not(feature = "stores"))]
    async fn open(&self, _timeout: Duration) -> Result<Store, String> {
        Err("--tasks-store needs presa-fixture built with its `stores` feature".into())
    }
}

/// What the command line asks for.
enum Command {
    Serve(Args),
    Help,
}

fn parse_args(
    mut args: impl Iterator<Item = String>,
    mcp_port: Option<String>,
) -> Result<Command, String> {
    let mut transport = Transport::Http;
    let mut exit_on_stdin_close = false;
    let mut dev = false;
    let mut auth = None;
    let mut store = None;
    let mut store_timeout = STORE_TIMEOUT;
    let mut task_lease = None;
    let mut addr = None;
    let mut otel = None;
    let mut otel_interval = Duration::from_secs(1);
    let mut otel_sdk = false;
    let mut metrics = false;
    let mut port = match mcp_port {
        Some(p) => p
            .parse()
            .map_err(|_| format!("MCP_PORT={p:?} is not a port number"))?,
        None => 0,
    };
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
            "--exit-on-stdin-close" => exit_on_stdin_close = true,
            "--dev" => dev = true,
            "--http" => {
                let a = args
                    .next()
                    .ok_or("--http takes an address (127.0.0.1:PORT)")?;
                addr = Some(
                    a.parse()
                        .map_err(|_| format!("--http {a:?} is not an address (127.0.0.1:PORT)"))?,
                );
                transport = Transport::Http;
            }
            "--otel" => {
                let endpoint = args.next().ok_or("--otel takes the collector's URL")?;
                if !endpoint.starts_with("http://") {
                    return Err(format!("--otel {endpoint:?} is not an http:// URL"));
                }
                otel = Some(endpoint);
            }
            "--otel-interval" => {
                let ms = args.next().ok_or("--otel-interval takes milliseconds")?;
                otel_interval = match ms.parse::<u64>() {
                    Ok(ms) if ms > 0 => Duration::from_millis(ms),
                    _ => {
                        return Err(format!(
                            "--otel-interval {ms:?} is not a number of milliseconds above 0"
                        ));
                    }
                };
            }
            "--otel-sdk" => otel_sdk = true,
            "--metrics" => metrics = true,
            "--auth" => {
                let issuer = args.next().ok_or("--auth takes an issuer URL")?;
                if !issuer.starts_with("https://") && !issuer.starts_with("http://") {
                    return Err(format!("--auth {issuer:?} is not an http(s) URL"));
                }
                auth = Some(issuer);
            }
            "--tasks-store" => {
                let url = args.next().ok_or("--tasks-store takes a URL")?;
                store = Some(StoreUrl::parse(&url)?);
            }
            "--store-timeout" => {
                let ms = args.next().ok_or("--store-timeout takes milliseconds")?;
                store_timeout = match ms.parse::<u64>() {
                    Ok(ms) if ms > 0 => Duration::from_millis(ms),
                    _ => {
                        return Err(format!(
                            "--store-timeout {ms:?} is not a number of milliseconds above 0"
                        ));
                    }
                };
            }
            "--task-lease" => {
                let ms = args.next().ok_or("--task-lease takes milliseconds")?;
                task_lease = match ms.parse::<u64>() {
                    Ok(ms) if ms > 0 => Some(Duration::from_millis(ms)),
                    _ => {
                        return Err(format!(
                            "--task-lease {ms:?} is not a number of milliseconds above 0"
                        ));
                    }
                };
            }
            "--help" | "-h" => return Ok(Command::Help),
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    if auth.is_some() && transport == Transport::Stdio {
        return Err("--auth is for HTTP: over stdio credentials come from the environment".into());
    }
    if dev && transport == Transport::Stdio {
        return Err("--dev is for HTTP: the catalog page is served beside the endpoint".into());
    }
    if metrics && transport == Transport::Stdio {
        return Err("--metrics is served over HTTP".into());
    }
    Ok(Command::Serve(Args {
        transport,
        addr,
        otel,
        otel_interval,
        otel_sdk,
        metrics,
        port,
        exit_on_stdin_close,
        dev,
        auth,
        store,
        store_timeout,
        task_lease,
    }))
}

/// The `presa-fixture` command line: parses the arguments, serves until stopped (see the
/// module docs), and returns the exit code.
pub fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1), std::env::var("MCP_PORT").ok()) {
        Ok(Command::Serve(args)) => args,
        Ok(Command::Help) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("presa-fixture: {e}");
            return ExitCode::from(2);
        }
    };
    // Telemetry, when asked for, installs the subscriber itself (with the same stderr log);
    // its guard flushes what is left when `main` returns.
    let _telemetry = if args.otel.is_some() || args.metrics {
        let telemetry = match &args.otel {
            Some(endpoint) => presa::otel::Telemetry::otlp(endpoint.as_str()),
            None => presa::otel::Telemetry::local(),
        };
        match telemetry
            .service_name("presa-fixture")
            .metric_interval(args.otel_interval)
            .prometheus(args.metrics)
            .sdk_spans(args.otel_sdk)
            .install()
        {
            Ok(guard) => Some(guard),
            Err(e) => {
                eprintln!("presa-fixture: telemetry: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
            )
            .init();
        None
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("presa-fixture: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(run(args));
    // Dropping the runtime would wait for every blocking-pool thread, and work there is
    // never cancelled: leave it behind instead. The process exits right after, which ends
    // the threads left behind.
    runtime.shutdown_timeout(LEFT_BEHIND_AFTER);
    code
}

async fn run(args: Args) -> ExitCode {
    let store = match &args.store {
        Some(url) => match url.open(args.store_timeout).await {
            Ok(store) => Some(store),
            Err(e) => {
                eprintln!("presa-fixture: {e}");
                return ExitCode::FAILURE;
            }
        },
        None => None,
    };
    let store = store.as_ref();
    let result = match args.transport {
        Transport::Stdio => match build_with_store(None, store, args.task_lease) {
            // presa stops on SIGINT and SIGTERM itself, from before the first line is read.
            Ok(server) => {
                server
                    .serve_stdio_with(StdioConfig::default().shutdown_grace(DRAIN))
                    .await
            }
            Err(e) => Err(std::io::Error::other(e)),
        },
        Transport::Http => serve_http(&args, store).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("presa-fixture: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Binds 127.0.0.1, builds the server (in `--auth` mode for the bound address, after
/// fetching the authorization server's keys) and serves it until stopped.
async fn serve_http(args: &Args, store: Option<&Store>) -> std::io::Result<()> {
    let listener = match args.addr {
        Some(addr) => tokio::net::TcpListener::bind(addr).await?,
        None => tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?,
    };
    let addr = listener.local_addr()?;
    let settings = args.auth.as_ref().map(|issuer| AuthSettings {
        issuer: issuer.clone(),
        canonical_uri: format!("http://{addr}/mcp"),
    });
    let auth = match &settings {
        Some(settings) => Some((
            settings,
            settings.warmed_verifier().await.map_err(|e| {
                std::io::Error::other(format!("the authorization server {}: {e}", settings.issuer))
            })?,
        )),
        None => None,
    };
    let server = build_with_store(auth, store, args.task_lease).map_err(std::io::Error::other)?;
    let config = HttpConfig::default()
        .shutdown_grace(DRAIN)
        .catalog(args.dev)
        .metrics(args.metrics);
    if args.exit_on_stdin_close {
        serve_on(server, listener, config, stdin_closed()?).await
    } else {
        serve_on(server, listener, config, std::future::pending()).await
    }
}

/// Serves over Streamable HTTP on 127.0.0.1 with `config` until a signal arrives
/// (presa's own stop) or `stop` completes; requests still open then get [`DRAIN`] to
/// finish. The ready line is printed once serving has begun, so a signal sent as soon as
/// it is seen stops serving, never the process by the signal's default action.
async fn serve_on(
    server: Server,
    listener: tokio::net::TcpListener,
    config: HttpConfig,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let addr = listener.local_addr()?;
    let catalog = config.catalog;
    let serving = server.serve_http_on(listener, config, stop);
    let mut serving = std::pin::pin!(serving);
    // The first poll installs presa's signal handlers and starts accepting.
    if let Poll::Ready(served) =
        std::future::poll_fn(|cx| Poll::Ready(serving.as_mut().poll(cx))).await
    {
        return served;
    }
    let mut ready =
        serde_json::json!({"conformanceReady": true, "url": format!("http://{addr}/mcp")});
    if catalog {
        ready["catalog"] = format!("http://{addr}/mcp/dev").into();
    }
    println!("{ready}");
    serving.await
}

/// Completes when stdin reaches its end (or cannot be read).
///
/// The read runs on a thread of its own that nothing joins or waits for: a read of stdin
/// cannot be cancelled, and on the runtime's blocking pool it would hold the runtime's
/// shutdown until input arrived.
fn stdin_closed() -> std::io::Result<impl Future<Output = ()>> {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::Builder::new()
        .name("stdin-watch".into())
        .spawn(move || {
            // Reads (and discards) to the end; an error ends the watch like the end does.
            let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
            let _ = tx.send(());
        })?;
    Ok(async move {
        // An error means the thread ended without sending: it did stop watching.
        let _ = rx.await;
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str], mcp_port: Option<&str>) -> Result<Command, String> {
        parse_args(
            args.iter().map(|a| a.to_string()),
            mcp_port.map(str::to_owned),
        )
    }

    fn serve(args: &[&str], mcp_port: Option<&str>) -> Args {
        match parse(args, mcp_port) {
            Ok(Command::Serve(args)) => args,
            Ok(Command::Help) => panic!("{args:?} asked for help"),
            Err(e) => panic!("{args:?}: {e}"),
        }
    }

    #[test]
    fn defaults_serve_http_on_any_port_without_reading_stdin() {
        let args = serve(&[], None);
        assert_eq!(args.transport, Transport::Http);
        assert_eq!(args.port, 0);
        assert!(!args.exit_on_stdin_close);
        assert!(!args.dev);
        assert_eq!(args.auth, None);
        assert_eq!(args.store, None);
        assert_eq!(args.store_timeout, STORE_TIMEOUT);
    }

    #[test]
    fn tasks_store_takes_a_postgres_url_or_a_sqlite_path() {
        let url = "postgres://u@127.0.0.1:5432/db";
        assert_eq!(
            serve(&["--tasks-store", url], None).store,
            Some(StoreUrl::Postgres(url.into()))
        );
        let url = "postgresql://u@127.0.0.1/db";
        assert_eq!(
            serve(&["--tasks-store", url], None).store,
            Some(StoreUrl::Postgres(url.into()))
        );
        assert_eq!(
            serve(&["--tasks-store", "sqlite:/tmp/t.db"], None).store,
            Some(StoreUrl::Sqlite("/tmp/t.db".into()))
        );
        assert!(parse(&["--tasks-store"], None).is_err());
        assert!(parse(&["--tasks-store", "sqlite:"], None).is_err());
        let refused = parse(&["--tasks-store", "mysql://u:secret@h/db"], None)
            .err()
            .expect("refused");
        assert!(
            !refused.contains("secret"),
            "the URL is not echoed: {refused}"
        );
    }

    #[test]
    fn task_lease_is_milliseconds_above_zero() {
        assert_eq!(serve(&[], None).task_lease, None);
        assert_eq!(
            serve(&["--task-lease", "1"], None).task_lease,
            Some(Duration::from_millis(1))
        );
        assert_eq!(
            serve(&["--task-lease", "600"], None).task_lease,
            Some(Duration::from_millis(600))
        );
        for bad in [
            &["--task-lease"][..],
            &["--task-lease", "0"],
            &["--task-lease", "x"],
        ] {
            assert!(parse(bad, None).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn store_timeout_is_milliseconds_above_zero() {
        let args = serve(&["--store-timeout", "1"], None);
        assert_eq!(args.store_timeout, Duration::from_millis(1));
        assert!(parse(&["--store-timeout", "0"], None).is_err());
        assert!(parse(&["--store-timeout", "-1"], None).is_err());
        assert!(parse(&["--store-timeout"], None).is_err());
    }

    #[test]
    fn every_flag_is_read() {
        let args = serve(
            &[
                "--transport",
                "stdio",
                "--port",
                "3001",
                "--exit-on-stdin-close",
            ],
            None,
        );
        assert_eq!(args.transport, Transport::Stdio);
        assert_eq!(args.port, 3001);
        assert!(args.exit_on_stdin_close);
    }

    #[test]
    fn dev_is_for_http_only() {
        assert!(serve(&["--dev"], None).dev);
        assert!(parse(&["--transport", "stdio", "--dev"], None).is_err());
    }

    #[test]
    fn auth_takes_an_issuer_over_http_only() {
        let args = serve(&["--auth", "http://127.0.0.1:9/"], None);
        assert_eq!(args.auth.as_deref(), Some("http://127.0.0.1:9/"));
        assert!(parse(&["--auth"], None).is_err());
        assert!(parse(&["--auth", "127.0.0.1:9"], None).is_err());
        assert!(
            parse(
                &["--transport", "stdio", "--auth", "https://a.example"],
                None
            )
            .is_err()
        );
    }

    #[test]
    fn port_comes_from_mcp_port_unless_given() {
        assert_eq!(serve(&[], Some("4000")).port, 4000);
        assert_eq!(serve(&["--port", "4001"], Some("4000")).port, 4001);
        assert!(parse(&[], Some("x")).is_err());
        assert!(parse(&["--port", "65536"], None).is_err());
        assert!(parse(&["--port"], None).is_err());
    }

    #[test]
    fn help_is_asked_for_and_unknown_arguments_refused() {
        assert!(matches!(parse(&["--help"], None), Ok(Command::Help)));
        assert!(matches!(parse(&["-h"], None), Ok(Command::Help)));
        assert!(parse(&["--exit-on-stdin"], None).is_err());
        assert!(parse(&["--transport", "ws"], None).is_err());
    }

    #[test]
    fn http_takes_an_address_and_otel_a_collector() {
        let args = serve(
            &[
                "--http",
                "127.0.0.1:4318",
                "--otel",
                "http://127.0.0.1:9",
                "--metrics",
            ],
            None,
        );
        assert_eq!(args.transport, Transport::Http);
        assert_eq!(args.addr, Some(([127, 0, 0, 1], 4318).into()));
        assert_eq!(args.otel.as_deref(), Some("http://127.0.0.1:9"));
        assert_eq!(args.otel_interval, Duration::from_secs(1));
        assert!(args.metrics);
        let defaults = serve(&[], None);
        assert_eq!(
            (defaults.addr, defaults.otel, defaults.metrics),
            (None, None, false)
        );
        assert!(parse(&["--http", "localhost"], None).is_err());
        assert!(parse(&["--otel", "https://collector.example"], None).is_err());
        assert!(parse(&["--transport", "stdio", "--metrics"], None).is_err());
        // stdio may export.
        let stdio = serve(
            &["--transport", "stdio", "--otel", "http://127.0.0.1:9"],
            None,
        );
        assert_eq!(stdio.transport, Transport::Stdio);
    }

    #[test]
    fn otel_interval_is_milliseconds_above_zero() {
        assert_eq!(
            serve(&["--otel-interval", "1"], None).otel_interval,
            Duration::from_millis(1)
        );
        assert!(parse(&["--otel-interval", "0"], None).is_err());
        assert!(parse(&["--otel-interval", "x"], None).is_err());
    }
}
