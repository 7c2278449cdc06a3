//! The bare limit: what any server of the echo tool must do at least. Over HTTP, axum and
//! tokio with `POST /mcp`: the body parsed with serde_json, the method checked, a fixed
//! tools/call result written with the echoed text. Over stdio, a plain loop: read a line,
//! parse it, write a line, flush when no more input is buffered. No MCP validation at all
//! (no `_meta`, header, schema or capability checks).
//!
//! `bench-bare tokio stdio` is the same stdio loop on tokio, run as presa runs its own:
//! as a task on a worker of the multi-thread runtime, with stdin and stdout as
//! non-blocking pipes on the reactor (set non-blocking in place; presa reopens them
//! through `/proc/self/fd`, so both need pipes: a file or terminal is refused here),
//! read and written through tokio's buffered reader and writer. It is not a column of
//! the table: printed under it, it shows what reactor-driven pipe I/O and tokio's
//! buffers cost bare's loop, and so how much of the stdio gap is presa's own work
//! (which includes how presa uses the runtime: its tasks, channel and semaphore).
//!
//! Usage: `bench-bare http 127.0.0.1:PORT`, `bench-bare stdio` or `bench-bare tokio stdio`.

use axum::Router;
use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::io::{self, BufRead, Write};
use std::os::fd::AsFd;

#[derive(Deserialize)]
struct Call<'a> {
    #[serde(borrow)]
    id: &'a RawValue,
    #[serde(borrow)]
    method: &'a str,
    params: Params,
}

#[derive(Deserialize)]
struct Params {
    name: String,
    arguments: Args,
}

#[derive(Deserialize)]
struct Args {
    text: String,
}

/// The response to one line or body, or `None` when it is not a tools/call of echo.
fn answer(input: &[u8]) -> Option<String> {
    let call: Call<'_> = serde_json::from_slice(input).ok()?;
    if call.method != "tools/call" || call.params.name != "echo" {
        return None;
    }
    let text = serde_json::to_string(&call.params.arguments.text).ok()?;
    let mut out = String::with_capacity(96 + text.len());
    out.push_str(r#"{"jsonrpc":"2.0","id":"#);
    out.push_str(call.id.get());
    out.push_str(r#","result":{"content":[{"type":"text","text":"#);
    out.push_str(&text);
    out.push_str(r#"}],"resultType":"complete"}}"#);
    Some(out)
}

async fn mcp(body: Bytes) -> Response {
    match answer(&body) {
        Some(out) => ([(header::CONTENT_TYPE, "application/json")], out).into_response(),
        None => StatusCode::BAD_REQUEST.into_response(),
    }
}

fn stdio() -> io::Result<()> {
    // Our own buffer over fd 0, so "no more input buffered" can be asked of it.
    let stdin = std::fs::File::from(io::stdin().as_fd().try_clone_to_owned()?);
    let mut input = io::BufReader::with_capacity(64 * 1024, stdin);
    let mut output = io::BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    let mut line = Vec::with_capacity(1024);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        if let Some(out) = answer(&line) {
            output.write_all(out.as_bytes())?;
            output.write_all(b"\n")?;
        }
        if input.buffer().is_empty() {
            output.flush()?;
        }
    }
    output.flush()
}

/// The stdio loop above, on tokio's reactor.
async fn stdio_tokio() -> io::Result<()> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    use tokio::net::unix::pipe;
    let stdin = std::fs::File::from(io::stdin().as_fd().try_clone_to_owned()?);
    let stdout = std::fs::File::from(io::stdout().as_fd().try_clone_to_owned()?);
    let mut input =
        tokio::io::BufReader::with_capacity(64 * 1024, pipe::Receiver::from_file(stdin)?);
    let mut output =
        tokio::io::BufWriter::with_capacity(64 * 1024, pipe::Sender::from_file(stdout)?);
    let mut line = Vec::with_capacity(1024);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line).await? == 0 {
            break;
        }
        if let Some(out) = answer(&line) {
            output.write_all(out.as_bytes()).await?;
            output.write_all(b"\n").await?;
        }
        if input.buffer().is_empty() {
            output.flush().await?;
        }
    }
    output.flush().await
}

#[tokio::main]
async fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("stdio") => stdio(),
        Some("tokio") if args.get(2).map(String::as_str) == Some("stdio") => {
            // On a worker, as `serve_stdio` runs presa's loop, not on the thread that
            // blocks in `main`.
            tokio::spawn(stdio_tokio())
                .await
                .map_err(io::Error::other)?
        }
        Some("http") => {
            use axum::serve::ListenerExt;
            let addr = args.get(2).map_or("127.0.0.1:3000", String::as_str);
            let listener = tokio::net::TcpListener::bind(addr).await?;
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            axum::serve(listener, Router::new().route("/mcp", post(mcp))).await
        }
        _ => Err(io::Error::other(
            "usage: bench-bare (http ADDR | stdio | tokio stdio)",
        )),
    }
}
