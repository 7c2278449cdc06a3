//! The verifiers' HTTP client: GET a JSON document (authorization server metadata, a
//! JWKS) and POST a form for a JSON answer (introspection), bounded in time and size; and
//! finding an authorization server's metadata from its issuer identifier.
//!
//! What holds for every exchange:
//! - the URL is `https`, or `http` to a loopback host only (`localhost`, `127.0.0.0/8`,
//!   `::1`): keys and token verdicts are never taken over an unauthenticated channel
//!   from elsewhere ([`Endpoint::parse`] refuses anything else);
//! - one deadline covers connecting, the request and reading the whole answer;
//! - the answer's body is read up to a cap, and one over it is refused;
//! - only a 2xx answer with a JSON media type (`application/json` or `application/*+json`)
//!   is accepted; redirects are not followed;
//! - nothing of a request's body (which may carry a token or a client secret) is logged
//!   or put into an error.
//!
//! TLS is rustls with the ring provider, given explicitly (so that no process-wide
//! provider has to be chosen), and the Mozilla roots of webpki-roots: what a server
//! trusts does not depend on the system it runs on.

use base64::Engine as _;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Bytes;
use hyper::{Method, Request, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use serde_json::Value;
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

/// How long one exchange may take, connecting included, unless configured.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest answer body read, unless configured: a JWKS or a metadata document is a
/// few kilobytes.
pub(crate) const DEFAULT_MAX_BODY: usize = 1024 * 1024;

/// How long an idle connection to the authorization server is kept.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How many idle connections to one host are kept.
const POOL_MAX_IDLE: usize = 8;

/// A URL the verifiers may fetch: `https`, or `http` to a loopback host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Endpoint(Uri);

impl Endpoint {
    /// `url` as an endpoint, or why it may not be one (a configuration error).
    pub(crate) fn parse(url: &str) -> Result<Endpoint, String> {
        let bad = |why: &str| format!("{url:?} cannot be fetched: {why}");
        if url.contains('#') {
            return Err(bad("it has a fragment"));
        }
        let uri: Uri = url.parse().map_err(|_| bad("it is not an absolute URL"))?;
        let authority = uri
            .authority()
            .ok_or_else(|| bad("it is not an absolute URL"))?;
        if authority.as_str().contains('@') {
            return Err(bad("it carries credentials"));
        }
        match uri.scheme_str() {
            Some("https") => {}
            Some("http") if is_loopback(authority.host()) => {}
            Some("http") => {
                return Err(bad(
                    "plain http is allowed only to a loopback host (localhost, 127.0.0.1, ::1); \
                     use https",
                ));
            }
            _ => return Err(bad("it is not an https URL")),
        }
        Ok(Endpoint(uri))
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Whether `host` (as a URL writes it: an IPv6 address in brackets) is a loopback host.
fn is_loopback(host: &str) -> bool {
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Why an exchange brought no JSON document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FetchError {
    /// The server answered with this status, outside 2xx.
    Status(u16),
    /// Anything else: no connection, the deadline passed, a body over the cap, not JSON.
    Failed(String),
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchError::Status(status) => write!(f, "it answered HTTP {status}"),
            FetchError::Failed(why) => f.write_str(why),
        }
    }
}

/// Client authentication for a POST: HTTP Basic with the client id and secret
/// form-encoded first (RFC 6749 section 2.3.1).
pub(crate) struct Basic<'a> {
    pub(crate) id: &'a str,
    pub(crate) secret: &'a str,
}

/// The client: cheap to clone (the connection pool is shared).
#[derive(Clone)]
pub(crate) struct HttpClient {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
    max_body: usize,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("timeout", &self.timeout)
            .field("max_body", &self.max_body)
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    /// A client whose exchanges take at most `timeout` each and read at most `max_body`
    /// bytes of an answer; an error only if rustls refuses its configuration (ring
    /// supports every protocol version rustls does, so it does not).
    pub(crate) fn new(timeout: Duration, max_body: usize) -> Result<HttpClient, String> {
        // rustls marks ring's provider deprecated because ring has no post-quantum key
        // exchange (aws-lc-rs has, at the cost of building aws-lc). What goes over these
        // connections is public (metadata, keys) or short-lived (an access token being
        // introspected), besides an introspection client's secret.
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(provider)
            .map_err(|e| format!("the TLS configuration is refused: {e}"))?;
        let mut http = HttpConnector::new();
        // https URLs go through the TLS layer wrapped around this connector.
        http.enforce_http(false);
        http.set_connect_timeout(Some(timeout));
        let connector = tls.https_or_http().enable_http1().wrap_connector(http);
        // Idle connections are kept a while (the idle timeout takes effect only with a
        // timer) and few: the verifiers talk to one authorization server.
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .pool_max_idle_per_host(POOL_MAX_IDLE)
            .build(connector);
        Ok(HttpClient {
            client,
            timeout,
            max_body,
        })
    }

    /// GETs `endpoint`: its JSON document.
    pub(crate) async fn get_json(&self, endpoint: &Endpoint) -> Result<Value, FetchError> {
        let request = Request::builder()
            .method(Method::GET)
            .uri(endpoint.0.clone())
            .header("accept", "application/json")
            .header("user-agent", USER_AGENT)
            .body(Full::new(Bytes::new()))
            .map_err(|e| FetchError::Failed(format!("the request cannot be made: {e}")))?;
        self.exchange(request).await
    }

    /// POSTs `form` (`application/x-www-form-urlencoded`) to `endpoint`, authenticated
    /// with `basic` when given: the JSON answer.
    pub(crate) async fn post_form(
        &self,
        endpoint: &Endpoint,
        form: &[(&str, &str)],
        basic: Option<Basic<'_>>,
    ) -> Result<Value, FetchError> {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(endpoint.0.clone())
            .header("accept", "application/json")
            .header("content-type", "application/x-www-form-urlencoded")
            .header("user-agent", USER_AGENT);
        if let Some(Basic { id, secret }) = basic {
            let pair = format!("{}:{}", form_encode(id), form_encode(secret));
            let value = format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            );
            request = request.header("authorization", value);
        }
        let body = form
            .iter()
            .map(|(name, value)| format!("{}={}", form_encode(name), form_encode(value)))
            .collect::<Vec<_>>()
            .join("&");
        let request = request
            .body(Full::new(Bytes::from(body)))
            // The message names no part of the request: its body may hold a secret.
            .map_err(|_| FetchError::Failed("the request cannot be made".into()))?;
        self.exchange(request).await
    }

    /// Sends `request` and reads its answer, within the deadline.
    async fn exchange(&self, request: Request<Full<Bytes>>) -> Result<Value, FetchError> {
        match tokio::time::timeout(self.timeout, self.exchange_unbounded(request)).await {
            Ok(answer) => answer,
            Err(_) => Err(FetchError::Failed(format!(
                "no complete answer within {:?}",
                self.timeout
            ))),
        }
    }

    async fn exchange_unbounded(&self, request: Request<Full<Bytes>>) -> Result<Value, FetchError> {
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| FetchError::Failed(format!("no answer: {}", error_chain(&e))))?;
        let status = response.status();
        if !status.is_success() {
            return Err(FetchError::Status(status.as_u16()));
        }
        let headers = response.headers();
        let media_type = headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !is_json_media_type(media_type) {
            return Err(FetchError::Failed(format!(
                "its answer is not JSON (content-type {media_type:?})"
            )));
        }
        let declared = headers
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max_body as u64) {
            return Err(self.too_large());
        }
        let body = Limited::new(response.into_body(), self.max_body)
            .collect()
            .await
            .map_err(|e| {
                if e.is::<http_body_util::LengthLimitError>() {
                    self.too_large()
                } else {
                    FetchError::Failed(format!("its answer broke off: {e}"))
                }
            })?
            .to_bytes();
        serde_json::from_slice(&body)
            .map_err(|e| FetchError::Failed(format!("its answer is not valid JSON: {e}")))
    }

    fn too_large(&self) -> FetchError {
        FetchError::Failed(format!("its answer is larger than {} bytes", self.max_body))
    }
}

/// The metadata of the authorization server whose issuer identifier is `issuer`: RFC
/// 8414's `/.well-known/oauth-authorization-server` (inserted before the issuer's path),
/// then OpenID Connect Discovery's `/.well-known/openid-configuration` (inserted, for an
/// issuer with a path, then appended), the order MCP clients use. A document counts only
/// when its `issuer` is exactly `issuer` (RFC 8414 section 3.3). A 4xx answer moves on to
/// the next place; a 5xx answer or no answer ends the search (the server is in trouble,
/// and each further try would take as long).
pub(crate) async fn discover(
    http: &HttpClient,
    issuer: &str,
) -> Result<serde_json::Map<String, Value>, String> {
    let mut misses = Vec::new();
    for url in metadata_urls(issuer)? {
        let endpoint = Endpoint::parse(&url)?;
        match http.get_json(&endpoint).await {
            Ok(Value::Object(document)) => {
                if document.get("issuer").and_then(Value::as_str) == Some(issuer) {
                    return Ok(document);
                }
                misses.push(format!(
                    "{url} names another issuer ({})",
                    document.get("issuer").unwrap_or(&Value::Null)
                ));
            }
            Ok(_) => misses.push(format!("{url} is not a JSON object")),
            Err(FetchError::Status(status)) if (400..500).contains(&status) => {
                misses.push(format!("{url} answered HTTP {status}"));
            }
            Err(e) => {
                misses.push(format!("{url}: {e}"));
                break;
            }
        }
    }
    Err(format!(
        "no metadata for the issuer {issuer:?}: {}",
        misses.join("; ")
    ))
}

/// Where the metadata of `issuer` may be, in the order they are tried.
fn metadata_urls(issuer: &str) -> Result<Vec<String>, String> {
    let issuer_endpoint = Endpoint::parse(issuer)?;
    if issuer_endpoint.0.query().is_some() {
        return Err(format!(
            "the issuer {issuer:?} has a query, which an issuer identifier may not have"
        ));
    }
    let (origin, path) = match issuer.find("://").map(|i| i + 3) {
        Some(start) => match issuer[start..].find('/') {
            Some(slash) => issuer.split_at(start + slash),
            None => (issuer, ""),
        },
        None => (issuer, ""),
    };
    // A terminating slash is removed before the well-known part goes in (RFC 8414 section
    // 3.1, OpenID Connect Discovery section 4).
    let path = path.strip_suffix('/').unwrap_or(path);
    let mut urls = vec![format!(
        "{origin}/.well-known/oauth-authorization-server{path}"
    )];
    if !path.is_empty() {
        urls.push(format!("{origin}/.well-known/openid-configuration{path}"));
    }
    urls.push(format!("{origin}{path}/.well-known/openid-configuration"));
    Ok(urls)
}

/// The `user-agent` of every request.
const USER_AGENT: &str = concat!("presa/", env!("CARGO_PKG_VERSION"));

/// Whether a `content-type` names JSON: `application/json` or `application/<x>+json`,
/// with any parameters.
fn is_json_media_type(value: &str) -> bool {
    let essence = value.split(';').next().unwrap_or("").trim();
    let Some((kind, subtype)) = essence.split_once('/') else {
        return false;
    };
    let subtype = subtype.as_bytes();
    kind.eq_ignore_ascii_case("application")
        && (subtype.eq_ignore_ascii_case(b"json")
            || subtype.len() > 5 && subtype[subtype.len() - 5..].eq_ignore_ascii_case(b"+json"))
}

/// `value` percent-encoded for a form body: every byte but the unreserved ones
/// (`A-Z a-z 0-9 - . _ ~`) as `%XX`, which every form decoder reads back.
fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for &byte in value.as_bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0xf)]));
        }
    }
    out
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// An error and its sources, as one line (hyper-util's own message names only the
/// outermost layer: "client error (Connect)").
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::auth::{TokenError, VerifiedToken};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::net::TcpListener;

    /// One request as the stub server saw it.
    #[derive(Clone, Debug)]
    pub(crate) struct Seen {
        pub(crate) method: String,
        pub(crate) path: String,
        pub(crate) authorization: Option<String>,
        pub(crate) content_type: Option<String>,
        pub(crate) body: String,
    }

    /// What the stub answers: status, content type, body.
    pub(crate) type Answer = (u16, &'static str, Vec<u8>);

    /// A loopback HTTP server for the verifiers' unit tests: every request is recorded
    /// and answered by `respond` (which may wait, to hold requests open).
    pub(crate) struct Stub {
        pub(crate) url: String,
        pub(crate) seen: Arc<Mutex<Vec<Seen>>>,
        pub(crate) hits: Arc<AtomicUsize>,
    }

    impl Stub {
        pub(crate) async fn start<F, Fut>(respond: F) -> Stub
        where
            F: Fn(Seen) -> Fut + Send + Sync + 'static,
            Fut: std::future::Future<Output = Answer> + Send + 'static,
        {
            let listener = TcpListener::bind("127.0.0.1:0")
                .await
                .expect("a loopback port");
            let url = format!(
                "http://{}",
                listener.local_addr().expect("the port's address")
            );
            let seen = Arc::new(Mutex::new(Vec::new()));
            let hits = Arc::new(AtomicUsize::new(0));
            let respond = Arc::new(respond);
            let (s, h) = (Arc::clone(&seen), Arc::clone(&hits));
            tokio::spawn(async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        return;
                    };
                    let (respond, seen, hits) =
                        (Arc::clone(&respond), Arc::clone(&s), Arc::clone(&h));
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(
                            move |request: hyper::Request<hyper::body::Incoming>| {
                                let (respond, seen, hits) =
                                    (Arc::clone(&respond), Arc::clone(&seen), Arc::clone(&hits));
                                async move {
                                    let (parts, body) = hyper::Request::into_parts(request);
                                    let body = body.collect().await.map(|b| b.to_bytes());
                                    let header = |name: &str| {
                                        parts
                                            .headers
                                            .get(name)
                                            .and_then(|v| v.to_str().ok())
                                            .map(str::to_owned)
                                    };
                                    let request = Seen {
                                        method: parts.method.to_string(),
                                        path: parts.uri.path().to_owned(),
                                        authorization: header("authorization"),
                                        content_type: header("content-type"),
                                        body: String::from_utf8_lossy(&body.unwrap_or_default())
                                            .into_owned(),
                                    };
                                    seen.lock().expect("not poisoned").push(request.clone());
                                    hits.fetch_add(1, Ordering::SeqCst);
                                    let (status, content_type, body) = respond(request).await;
                                    let mut response =
                                        hyper::Response::new(Full::new(Bytes::from(body)));
                                    *response.status_mut() =
                                        hyper::StatusCode::from_u16(status).expect("a status");
                                    if !content_type.is_empty() {
                                        response.headers_mut().insert(
                                            "content-type",
                                            content_type.parse().expect("a header value"),
                                        );
                                    }
                                    Ok::<_, std::convert::Infallible>(response)
                                }
                            },
                        );
                        let io = hyper_util::rt::TokioIo::new(stream);
                        // A connection the client drops ends here; nothing to report.
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(io, service)
                            .await;
                    });
                }
            });
            Stub { url, seen, hits }
        }

        /// How many requests it has answered or is answering.
        pub(crate) fn hits(&self) -> usize {
            self.hits.load(Ordering::SeqCst)
        }

        /// The requests seen so far.
        pub(crate) fn seen(&self) -> Vec<Seen> {
            self.seen.lock().expect("not poisoned").clone()
        }
    }

    /// Why a verifier found a token invalid; panics on any other outcome.
    pub(crate) fn invalid(result: Result<VerifiedToken, TokenError>) -> String {
        match result {
            Err(TokenError::Invalid(why)) => why,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    /// Why a verifier could not check a token now; panics on any other outcome.
    pub(crate) fn unavailable(result: Result<VerifiedToken, TokenError>) -> String {
        match result {
            Err(TokenError::Unavailable(why)) => why,
            other => panic!("expected Unavailable, got {other:?}"),
        }
    }

    fn client() -> HttpClient {
        HttpClient::new(Duration::from_secs(5), 64).expect("a client")
    }

    fn endpoint(url: &str) -> Endpoint {
        Endpoint::parse(url).expect("a loopback URL")
    }

    #[test]
    fn only_https_or_loopback_http_may_be_fetched() {
        for good in [
            "https://auth.example.com/jwks",
            "https://auth.example.com:8443",
            "http://127.0.0.1:9/jwks",
            "http://127.1.2.3/x",
            "http://localhost:8080/x",
            "http://LOCALHOST/x",
            "http://[::1]:8080/x",
        ] {
            assert!(Endpoint::parse(good).is_ok(), "{good}");
        }
        let refusal = |url: &str| Endpoint::parse(url).expect_err(url);
        assert!(refusal("http://auth.example.com/jwks").contains("use https"));
        assert!(refusal("http://10.0.0.1/jwks").contains("loopback"));
        assert!(refusal("http://localhost.example.com/jwks").contains("loopback"));
        assert!(refusal("ftp://auth.example.com/jwks").contains("not an https URL"));
        assert!(refusal("/jwks").contains("not an absolute URL"));
        assert!(refusal("auth.example.com").contains("not an https URL"));
        assert!(refusal("https://user:pw@auth.example.com/").contains("credentials"));
        assert!(refusal("https://auth.example.com/#k").contains("fragment"));
    }

    #[test]
    fn metadata_is_looked_for_where_rfc_8414_and_oidc_put_it() {
        assert_eq!(
            metadata_urls("https://as.example.com").expect("an issuer"),
            [
                "https://as.example.com/.well-known/oauth-authorization-server",
                "https://as.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            metadata_urls("https://as.example.com/").expect("an issuer"),
            metadata_urls("https://as.example.com").expect("an issuer"),
        );
        assert_eq!(
            metadata_urls("https://as.example.com/tenant/1/").expect("an issuer"),
            [
                "https://as.example.com/.well-known/oauth-authorization-server/tenant/1",
                "https://as.example.com/.well-known/openid-configuration/tenant/1",
                "https://as.example.com/tenant/1/.well-known/openid-configuration",
            ]
        );
        assert!(metadata_urls("https://as.example.com/?x=1").is_err());
        assert!(metadata_urls("http://as.example.com").is_err());
    }

    #[tokio::test]
    async fn discovery_takes_the_first_document_naming_the_issuer() {
        let stub = Stub::start(|seen: Seen| async move {
            match seen.path.as_str() {
                "/.well-known/oauth-authorization-server/t" => {
                    (404, "application/json", b"{}".to_vec())
                }
                "/.well-known/openid-configuration/t" => (
                    200,
                    "application/json",
                    br#"{"issuer":"https://elsewhere"}"#.to_vec(),
                ),
                _ => (200, "application/json", Vec::new()),
            }
        })
        .await;
        let issuer = format!("{}/t", stub.url);
        let client = client();
        // The third place's document (empty body: not JSON) fails, after the first two
        // were passed over.
        let err = discover(&client, &issuer).await.expect_err("no document");
        assert!(err.contains("answered HTTP 404"), "{err}");
        assert!(err.contains("names another issuer"), "{err}");
        assert!(err.contains("not valid JSON"), "{err}");
        let paths: Vec<String> = stub.seen().into_iter().map(|s| s.path).collect();
        assert_eq!(
            paths,
            [
                "/.well-known/oauth-authorization-server/t",
                "/.well-known/openid-configuration/t",
                "/t/.well-known/openid-configuration",
            ]
        );
    }

    #[tokio::test]
    async fn discovery_finds_the_rfc_8414_document() {
        let own_url = Arc::new(std::sync::OnceLock::<String>::new());
        let url = Arc::clone(&own_url);
        let stub = Stub::start(move |seen: Seen| {
            let url = Arc::clone(&url);
            async move {
                if seen.path == "/.well-known/oauth-authorization-server" {
                    let doc = serde_json::json!({"issuer": url.get(), "jwks_uri": "x"});
                    (200, "application/json", doc.to_string().into_bytes())
                } else {
                    (404, "application/json", b"{}".to_vec())
                }
            }
        })
        .await;
        own_url.set(stub.url.clone()).expect("set once");
        let document = discover(&client(), &stub.url).await.expect("found");
        assert_eq!(document["jwks_uri"], "x");
        assert_eq!(stub.hits(), 1);
    }

    #[tokio::test]
    async fn discovery_stops_at_a_server_error() {
        let stub = Stub::start(|_| async { (503, "application/json", b"{}".to_vec()) }).await;
        let err = discover(&client(), &stub.url).await.expect_err("down");
        assert!(err.ends_with("answered HTTP 503"), "{err}");
        assert_eq!(stub.hits(), 1, "the search ends at the first 5xx");
    }

    #[test]
    fn json_media_types() {
        for yes in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON",
            "application/jwk-set+json",
            "application/token-introspection+json",
        ] {
            assert!(is_json_media_type(yes), "{yes}");
        }
        for no in [
            "",
            "text/json",
            "text/plain",
            "application/jsonx",
            "application/+json",
        ] {
            assert!(!is_json_media_type(no), "{no}");
        }
    }

    #[test]
    fn form_encoding_escapes_all_but_the_unreserved() {
        assert_eq!(form_encode("aZ09-._~"), "aZ09-._~");
        assert_eq!(form_encode("a b+c&d=e/é:"), "a%20b%2Bc%26d%3De%2F%C3%A9%3A");
    }

    #[tokio::test]
    async fn a_json_answer_is_read_and_its_bound_holds() {
        // The cap is 64 bytes: an answer of exactly 64 is read, one of 65 is refused.
        let stub = Stub::start(|seen: Seen| async move {
            let size: usize = seen.path.trim_start_matches('/').parse().unwrap_or(2);
            let body = format!("\"{}\"", "x".repeat(size - 2)).into_bytes();
            (200, "application/json", body)
        })
        .await;
        let client = client();
        let at = client
            .get_json(&endpoint(&format!("{}/64", stub.url)))
            .await;
        assert_eq!(at, Ok(Value::String("x".repeat(62))));
        let past = client
            .get_json(&endpoint(&format!("{}/65", stub.url)))
            .await;
        assert_eq!(
            past,
            Err(FetchError::Failed(
                "its answer is larger than 64 bytes".into()
            ))
        );
    }

    #[tokio::test]
    async fn only_a_2xx_json_answer_is_accepted() {
        let stub = Stub::start(|seen: Seen| async move {
            match seen.path.as_str() {
                "/404" => (404, "application/json", b"{}".to_vec()),
                "/302" => (302, "", Vec::new()),
                "/text" => (200, "text/plain", b"{}".to_vec()),
                "/garbage" => (200, "application/json", b"{not json".to_vec()),
                _ => (
                    200,
                    "application/json; charset=utf-8",
                    b"{\"a\":1}".to_vec(),
                ),
            }
        })
        .await;
        let client = client();
        let get = |path: &str| {
            let endpoint = endpoint(&format!("{}{path}", stub.url));
            let client = client.clone();
            async move { client.get_json(&endpoint).await }
        };
        assert_eq!(get("/ok").await, Ok(serde_json::json!({"a": 1})));
        assert_eq!(get("/404").await, Err(FetchError::Status(404)));
        assert_eq!(get("/302").await, Err(FetchError::Status(302)));
        let text = get("/text").await.expect_err("text/plain is refused");
        assert!(text.to_string().contains("not JSON"), "{text}");
        let garbage = get("/garbage").await.expect_err("garbage is refused");
        assert!(garbage.to_string().contains("not valid JSON"), "{garbage}");
    }

    #[tokio::test]
    async fn a_form_is_posted_with_basic_authentication() {
        let stub = Stub::start(|_| async { (200, "application/json", b"{}".to_vec()) }).await;
        let client = client();
        let answer = client
            .post_form(
                &endpoint(&format!("{}/introspect", stub.url)),
                &[("token", "a b&c"), ("token_type_hint", "access_token")],
                Some(Basic {
                    id: "rs:1",
                    secret: "s%cret",
                }),
            )
            .await;
        assert_eq!(answer, Ok(serde_json::json!({})));
        let seen = stub.seen();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].method, "POST");
        assert_eq!(seen[0].body, "token=a%20b%26c&token_type_hint=access_token");
        assert_eq!(
            seen[0].content_type.as_deref(),
            Some("application/x-www-form-urlencoded")
        );
        let basic = base64::engine::general_purpose::STANDARD.encode("rs%3A1:s%25cret");
        assert_eq!(seen[0].authorization, Some(format!("Basic {basic}")));
    }

    #[tokio::test]
    async fn the_deadline_covers_the_whole_exchange() {
        let stub = Stub::start(|_| async {
            std::future::pending::<()>().await;
            (200, "application/json", Vec::new())
        })
        .await;
        let client = HttpClient::new(Duration::from_millis(200), 64).expect("a client");
        let err = client
            .get_json(&endpoint(&stub.url))
            .await
            .expect_err("no answer in time");
        assert_eq!(
            err,
            FetchError::Failed("no complete answer within 200ms".into())
        );
    }

    #[tokio::test]
    async fn a_closed_port_is_a_failure() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let url = format!("http://{}", listener.local_addr().expect("an address"));
        drop(listener);
        let err = client()
            .get_json(&endpoint(&url))
            .await
            .expect_err("nothing listens");
        assert!(err.to_string().starts_with("no answer"), "{err}");
    }
}
