//! The echo tool served by presa as a user would write it: `#[presa::tool]`, the
//! `server!()` builder, and the stock transports with their default settings (every
//! check on). Nothing here is tuned for the benchmark.
//!
//! Usage: `bench-presa http 127.0.0.1:PORT [MAX_STREAMS]` or `bench-presa stdio`.

use std::io;

/// Echoes the text back.
#[presa::tool]
async fn echo(text: String) -> String {
    text
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = presa::server!().add::<echo>().build()?;
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("stdio") => server.serve_stdio().await?,
        Some("http") => {
            let addr = args.get(2).map_or("127.0.0.1:3000", String::as_str);
            match args.get(3).map(|n| n.parse::<usize>()) {
                // Only the subscription scaling check passes a stream cap (the default is
                // 256 open streams); every other cell runs the plain `serve_http`.
                Some(Ok(max_streams)) => {
                    let listener = tokio::net::TcpListener::bind(addr).await?;
                    let config = presa::HttpConfig::default().max_streams(max_streams);
                    server
                        .serve_http_on(listener, config, std::future::pending())
                        .await?
                }
                Some(Err(_)) => return Err(io::Error::other("MAX_STREAMS: not a number").into()),
                None => server.serve_http(addr).await?,
            }
        }
        _ => return Err(io::Error::other("usage: bench-presa (http ADDR | stdio)").into()),
    }
    Ok(())
}
