//! The conformance fixture: a server built only from presa's public API that serves every
//! tool, resource and prompt the official conformance runner calls (wire reference section
//! 16).
//!
//! `presa-fixture [--transport http|stdio] [--port N] [--exit-on-stdin-close]` (the port
//! also from `MCP_PORT`; 0 means any free port). Over HTTP it prints
//! `{"conformanceReady":true,"url":"http://127.0.0.1:<port>/mcp"}` on one stdout line once
//! listening and serves until SIGINT (Ctrl-C) or SIGTERM, without reading stdin unless
//! `--exit-on-stdin-close` makes stdin's end stop it too. Over stdio it serves until stdin
//! ends or either signal. A signal stops it within a second with exit code 0, whatever
//! stdin is (see [`presa_fixture::cli`]).
//!
//! With the `stores` feature, `--tasks-store postgres://…|sqlite:PATH` (and
//! `--store-timeout MS`) keeps tasks and spent single-use request states there (and, in
//! PostgreSQL, legacy sessions' records), so that replicas sharing it (and
//! `PRESA_STATE_KEYS`) serve as one behind a load balancer.
//!
//! `--http ADDR` serves HTTP on that address; `--otel ENDPOINT` exports spans and metrics
//! over OTLP/HTTP to a collector's base URL (metrics every `--otel-interval MS`, default
//! 1000); `--metrics` serves them at `GET /metrics` in the Prometheus text format.

fn main() -> std::process::ExitCode {
    presa_fixture::cli::main()
}
