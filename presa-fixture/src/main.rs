//! The conformance fixture: a server built only from presa's public API that serves every
//! tool, resource and prompt the official conformance runner calls (wire reference section
//! 16).
//!
//! `presa-fixture [--transport http|stdio] [--port N]` (the port also from `MCP_PORT`; 0
//! means any free port). Over HTTP it prints
//! `{"conformanceReady":true,"url":"http://127.0.0.1:<port>/mcp"}` on one stdout line once
//! listening, and serves until stdin closes or it gets SIGINT or SIGTERM, then exits 0.

fn main() -> std::process::ExitCode {
    presa_fixture::cli::main()
}
