//! Serving both eras: the settings of the legacy era, which is on by default.
//!
//! ```sh
//! cargo run -p presa --example eras                  # both eras, over stdio
//! cargo run -p presa --example eras -- --modern-only # 2026-07-28 only
//! ```

use std::time::Duration;

/// Says hello.
#[presa::tool]
async fn hello() -> &'static str {
    "Hello!"
}

/// A server that serves 2026-07-28 only: a client that opens with `initialize` is told
/// which versions it speaks.
fn modern_only() -> Result<presa::Server, presa::BuildError> {
    // ANCHOR: modern_only
    let server = presa::server!()
        .registered()
        .legacy_clients(false)
        .build()?;
    // ANCHOR_END: modern_only
    Ok(server)
}

/// A server whose legacy sessions wait two minutes for a client's answer.
fn patient() -> Result<presa::Server, presa::BuildError> {
    // ANCHOR: sessions
    let sessions = presa::SessionConfig::default()
        .ask_timeout(Duration::from_secs(120))
        .max_pending_asks(8);
    let server = presa::server!().registered().sessions(sessions).build()?;
    // ANCHOR_END: sessions
    Ok(server)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = match std::env::args().nth(1).as_deref() {
        Some("--modern-only") => modern_only()?,
        _ => patient()?,
    };
    server.serve_stdio().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// What a server answers a stdio client that opens with `initialize`.
    async fn opening(server: presa::Server) -> Value {
        let input = format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "host", "version": "1"}}})
        );
        use tokio::io::AsyncReadExt;
        let (writer, mut output) = tokio::io::duplex(1 << 16);
        server
            .serve_io(input.as_bytes(), writer, presa::StdioConfig::default())
            .await
            .unwrap();
        let mut written = String::new();
        output.read_to_string(&mut written).await.unwrap();
        serde_json::from_str(&written).unwrap()
    }

    #[tokio::test]
    async fn a_modern_only_server_names_its_versions() {
        let answer = opening(modern_only().unwrap()).await;
        assert_eq!(answer["error"]["code"], -32022, "{answer}");
        assert_eq!(answer["error"]["data"]["supported"], json!(["2026-07-28"]));
    }

    #[tokio::test]
    async fn both_eras_by_default() {
        let answer = opening(patient().unwrap()).await;
        assert_eq!(
            answer["result"]["protocolVersion"], "2025-11-25",
            "{answer}"
        );
        assert_eq!(
            answer["result"]["capabilities"]["tools"]["listChanged"],
            true
        );
    }
}
