//! The authorization server of the authenticated cell (`bench-driver http --auth`): a
//! stand-in on a loopback port, and the access tokens it issues. It publishes its RFC
//! 8414 metadata and a JWKS holding one RSA key, and signs RS256 JWT access tokens (RFC
//! 9068) with that key's private half, which the server under load verifies as it would
//! a real authorization server's.
//!
//! Usage: `bench-issuer AUDIENCE`, as a child of the driver. It prints its issuer URL
//! (`http://127.0.0.1:PORT`) on a line of its own once it listens; then, for every line
//! `N` it reads, N new tokens for AUDIENCE, one `Bearer <JWT>` a line; it exits when its
//! input ends. A process of its own, and a package outside the table's build, so that
//! the crypto crates signing needs do not change how the table's servers are built (see
//! bench/Cargo.toml).
//!
//! The key is presa's throwaway test key `rsa1` (presa/src/auth/testdata/keys.json),
//! which protects nothing.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::HeaderValue;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use std::convert::Infallible;
use std::io::{BufRead, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// presa's fixed test keys; `rsa1` (2048 bits) signs the tokens.
const KEYS: &str = include_str!("../../../presa/src/auth/testdata/keys.json");

/// The `kid` the JWKS gives the key, and every token's header names.
const KID: &str = "bench-rsa1";

/// The scope every token grants (the echo tool needs none; a real token carries some).
const SCOPE: &str = "mcp:tools";

/// How long a token is valid: far beyond any cell.
const LIFETIME_SECS: u64 = 3600;

/// The most tokens one request line may ask for.
const MAX_BATCH: usize = 100_000;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(audience), None) = (args.next(), args.next()) else {
        eprintln!("usage: bench-issuer AUDIENCE");
        std::process::exit(2);
    };
    if let Err(e) = run(audience) {
        eprintln!("bench-issuer: {e}");
        std::process::exit(1);
    }
}

/// Starts the issuer, says its URL, then answers every count read with that many tokens
/// until the input ends.
fn run(audience: String) -> Result<(), String> {
    let issuer = Issuer::start(audience)?;
    let mut out = std::io::stdout().lock();
    let mut say = |text: &str| {
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| format!("stdout: {e}"))
    };
    say(&format!("{}\n", issuer.url()))?;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| format!("stdin: {e}"))?;
        let n: usize = line
            .trim()
            .parse()
            .map_err(|_| format!("not a count of tokens: {line:?}"))?;
        if n > MAX_BATCH {
            return Err(format!("{n} tokens at once: at most {MAX_BATCH}"));
        }
        let mut batch = String::new();
        for _ in 0..n {
            batch.push_str(&issuer.bearer()?);
            batch.push('\n');
        }
        say(&batch)?;
    }
    Ok(())
}

/// The stand-in authorization server, serving from a thread of its own until the driver
/// exits, and the key and claims of its tokens.
struct Issuer {
    url: String,
    audience: String,
    key: EncodingKey,
    /// Makes every token's `jti` (and its `sub`, with a prefix) distinct.
    serial: AtomicU64,
}

impl Issuer {
    /// Serves the metadata and the JWKS on a free loopback port, for tokens whose
    /// audience is `audience` (the server's canonical URI).
    fn start(audience: String) -> Result<Issuer, String> {
        let keys: Value = serde_json::from_str(KEYS).map_err(|e| format!("keys.json: {e}"))?;
        let rsa1 = &keys["rsa1"];
        let der = rsa1["private_pkcs1_der"]
            .as_str()
            .ok_or("keys.json: no rsa1 private_pkcs1_der")?;
        let der = STANDARD
            .decode(der)
            .map_err(|e| format!("keys.json: rsa1: {e}"))?;
        let mut jwk = rsa1["jwk"].clone();
        if !jwk.is_object() {
            return Err("keys.json: no rsa1 jwk".into());
        }
        jwk["kid"] = KID.into();
        jwk["alg"] = "RS256".into();
        jwk["use"] = "sig".into();

        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let url = format!("http://{addr}");
        let metadata = json!({
            "issuer": url,
            "jwks_uri": format!("{url}/jwks"),
            "response_types_supported": ["code"],
        });
        let documents = Arc::new(Documents {
            metadata: Bytes::from(metadata.to_string()),
            jwks: Bytes::from(json!({ "keys": [jwk] }).to_string()),
        });
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        std::thread::Builder::new()
            .name("issuer".into())
            .spawn(move || serve(listener, addr, documents))
            .map_err(|e| e.to_string())?;
        Ok(Issuer {
            url,
            audience,
            key: EncodingKey::from_rsa_der(&der),
            serial: AtomicU64::new(0),
        })
    }

    /// The issuer identifier: the tokens' `iss`, the metadata's `issuer`, and what the
    /// server is told to trust.
    fn url(&self) -> &str {
        &self.url
    }

    /// A new RS256 access token, with a `sub` and `jti` no other token of this issuer
    /// has, as an `Authorization` header's value (`Bearer <JWT>`).
    fn bearer(&self) -> Result<String, String> {
        let n = self.serial.fetch_add(1, Ordering::Relaxed);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_err(|e| e.to_string())?
            .as_secs();
        let claims = json!({
            "iss": self.url,
            "aud": self.audience,
            "sub": format!("bench-user-{n}"),
            "client_id": "presa-bench",
            "scope": SCOPE,
            "jti": format!("bench-{}-{n}", std::process::id()),
            "iat": now,
            "exp": now + LIFETIME_SECS,
        });
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(KID.into());
        header.typ = Some("at+jwt".into());
        let token = jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|e| format!("signing a token: {e}"))?;
        Ok(format!("Bearer {token}"))
    }
}

/// What the stand-in serves.
struct Documents {
    metadata: Bytes,
    jwks: Bytes,
}

/// The accept loop, on a thread and a current-thread runtime of its own, beside the
/// main thread's blocking reads of its input.
fn serve(listener: TcpListener, addr: SocketAddr, documents: Arc<Documents>) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("issuer at {addr}: no runtime: {e}");
            return;
        }
    };
    rt.block_on(async move {
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("issuer at {addr}: {e}");
                return;
            }
        };
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let documents = Arc::clone(&documents);
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let documents = Arc::clone(&documents);
                    async move { Ok::<_, Infallible>(answer(&request, &documents)) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
}

/// `GET /.well-known/oauth-authorization-server` and `GET /jwks`; 404 for anything else.
fn answer<B>(request: &Request<B>, documents: &Documents) -> Response<Full<Bytes>> {
    let body = match (request.method().as_str(), request.uri().path()) {
        ("GET", "/.well-known/oauth-authorization-server") => Some(&documents.metadata),
        ("GET", "/jwks") => Some(&documents.jwks),
        _ => None,
    };
    let mut response = Response::new(Full::new(body.cloned().unwrap_or_default()));
    match body {
        Some(_) => {
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
        None => *response.status_mut() = StatusCode::NOT_FOUND,
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{DecodingKey, Validation};

    /// The tokens verify with the public key the JWKS publishes, carry the claims presa
    /// checks (issuer, audience, expiry, subject) and a header naming that key, and no
    /// two share a `jti` or a `sub`.
    #[test]
    fn tokens_verify_with_the_published_key() {
        let issuer = Issuer::start("http://127.0.0.1:9/mcp".into()).expect("an issuer");
        let keys: Value = serde_json::from_str(KEYS).expect("keys.json");
        let jwk = &keys["rsa1"]["jwk"];
        let key = DecodingKey::from_rsa_components(
            jwk["n"].as_str().expect("n"),
            jwk["e"].as_str().expect("e"),
        )
        .expect("the public key");
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&[issuer.url()]);
        validation.set_audience(&["http://127.0.0.1:9/mcp"]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let claims = |bearer: String| {
            let token = bearer
                .strip_prefix("Bearer ")
                .expect("a bearer token")
                .to_owned();
            let header = jsonwebtoken::decode_header(&token).expect("a header");
            assert_eq!(header.kid.as_deref(), Some(KID));
            assert_eq!(header.alg, Algorithm::RS256);
            jsonwebtoken::decode::<Value>(&token, &key, &validation)
                .expect("a valid token")
                .claims
        };
        let (a, b) = (
            claims(issuer.bearer().expect("a token")),
            claims(issuer.bearer().expect("a token")),
        );
        assert_ne!(a["jti"], b["jti"]);
        assert_ne!(a["sub"], b["sub"]);
        assert_eq!(a["scope"], SCOPE);
    }

    /// The metadata names this issuer and its JWKS, which holds the key with the `kid`
    /// the tokens name; nothing else is served.
    #[test]
    fn serves_metadata_and_jwks() {
        let issuer = Issuer::start("http://127.0.0.1:9/mcp".into()).expect("an issuer");
        let get = |path: &str| {
            use std::io::{Read, Write};
            let addr = issuer.url().strip_prefix("http://").expect("http");
            let mut s = std::net::TcpStream::connect(addr).expect("connected");
            write!(
                s,
                "GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
            )
            .expect("sent");
            let mut text = String::new();
            s.read_to_string(&mut text).expect("read");
            text
        };
        let body = |text: &str| -> Value {
            serde_json::from_str(text.split("\r\n\r\n").nth(1).expect("a body")).expect("JSON")
        };
        let metadata = get("/.well-known/oauth-authorization-server");
        assert!(metadata.starts_with("HTTP/1.1 200"), "{metadata}");
        let metadata = body(&metadata);
        assert_eq!(metadata["issuer"], issuer.url());
        assert_eq!(metadata["jwks_uri"], format!("{}/jwks", issuer.url()));
        let jwks = body(&get("/jwks"));
        assert_eq!(jwks["keys"][0]["kid"], KID);
        assert_eq!(jwks["keys"][0]["kty"], "RSA");
        assert!(get("/.well-known/openid-configuration").starts_with("HTTP/1.1 404"));
    }
}
