//! bench-presa's echo tool behind presa's authorization, for the authenticated HTTP cell:
//! `#[presa::tool]`, the `server!()` builder with a canonical URI and an
//! [`Authorization`] whose [`JwtVerifier`] trusts one issuer, and the stock `serve_http`.
//! Every request must carry an access token that issuer signed for this server. Nothing
//! here is tuned for the benchmark: the verdict cache and everything else keep presa's
//! defaults.
//!
//! Usage: `bench-presa-auth --issuer URL http 127.0.0.1:PORT`. The canonical URI, which
//! tokens must name as their audience, is `http://127.0.0.1:PORT/mcp`. The issuer's
//! signing keys are fetched (through its RFC 8414 metadata) before the server listens,
//! so no request of the cell waits on that fetch; the server does not start without
//! them.

use presa::auth::{Authorization, JwtVerifier, TokenVerifier};
use std::io;
use std::sync::Arc;

/// Echoes the text back.
#[presa::tool]
async fn echo(text: String) -> String {
    text
}

const USAGE: &str = "usage: bench-presa-auth --issuer URL http ADDR";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (issuer, addr) = match args.as_slice() {
        [flag, issuer, mode, addr] if flag == "--issuer" && mode == "http" => (issuer, addr),
        _ => return Err(io::Error::other(USAGE).into()),
    };
    // The verifier the server checks tokens with is the one warmed here: it keeps the
    // keys it fetched.
    let verifier = Arc::new(JwtVerifier::new(issuer.as_str()));
    verifier
        .warm()
        .await
        .map_err(|e| io::Error::other(format!("fetching {issuer}'s signing keys: {e}")))?;
    let verifier: Arc<dyn TokenVerifier> = verifier;
    let authorization =
        Authorization::with_verifier(verifier).authorization_server(issuer.as_str());
    let server = presa::server!()
        .add::<echo>()
        .canonical_uri(format!("http://{addr}/mcp"))
        .authorization(authorization)
        .build()?;
    server.serve_http(addr.as_str()).await?;
    Ok(())
}
