//! The Streamable HTTP transport (wire section 13) on axum: one POST endpoint, the
//! admission order of section 13.2, JSON responses that switch to SSE when the first
//! progress or log notification is produced, and cancellation when the client goes away.
//!
//! Admission here covers what needs no body semantics (method, Origin, Host,
//! Content-Type, Accept, body size and JSON); the header mirror checks that need the body
//! run in the pipeline.
//!
//! The same endpoint serves clients of the earlier revisions (2025-11-25, 2025-06-18),
//! which open with `initialize`, in sessions (`legacy`): each POST is told apart by
//! its body (a message whose `_meta` carries the 2026-07-28 per-request keys is
//! 2026-07-28, as is one whose `MCP-Protocol-Version` header names 2026-07-28), GET opens
//! a session's event stream and DELETE ends a session.

mod budget;
mod cap;
mod catalog;
mod legacy;
mod queue;
mod serve;

use crate::auth::{Denied, Guard, Principal};
use crate::context::Outbound;
use crate::error::Error;
use crate::pipeline::{Era, Exchange, Reply, Served, Transport};
use crate::server::Server;
use crate::wire::jsonrpc::{self, Inbound, encode_error};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use budget::Charge;
use cap::{Cap, Places, Slot};
use futures_util::stream;
use queue::{Notifications, Receive};
use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Settings of the Streamable HTTP transport.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The endpoint path (default `/mcp`).
    pub path: String,
    /// Largest request body, in bytes (default 4 MiB); larger bodies get 413.
    pub max_body_bytes: usize,
    /// Origins allowed besides loopback ones (exact `scheme://host[:port]` strings).
    /// A request with any other `Origin` gets 403; a request without one passes.
    pub allowed_origins: Vec<String>,
    /// Whether loopback origins (`localhost`, `127.0.0.1`, `[::1]`, any port) are
    /// allowed (default true).
    pub allow_loopback_origins: bool,
    /// When set, the `Host` header must be one of these (`host` or `host:port`);
    /// otherwise 403. Off by default: Origin validation is always on.
    pub allowed_hosts: Option<Vec<String>>,
    /// Most `subscriptions/listen` streams open at once (default 256; `usize::MAX`: no
    /// bound); past it, 503.
    pub max_streams: usize,
    /// Most other requests served at once (default 1024); past it, 503 with a JSON-RPC
    /// error, so a flood meets a clear refusal instead of unbounded work. The same number
    /// bounds the POST bodies being read at once (past it, 503 before the body is read,
    /// so without an id); the bytes they take are bounded by `memory_budget`.
    /// `usize::MAX`: no bound.
    pub max_in_flight: usize,
    /// How often an idle subscription stream sends a keepalive comment (default 15 s).
    pub keepalive: Duration,
    /// Longest wait for a POST body to arrive whole (default 30 s); past it, 408. A body
    /// being read holds one of the `max_in_flight` reading slots, so a client trickling
    /// its bodies cannot hold them all for long.
    pub body_timeout: Duration,
    /// Whether clients that open with `initialize` (2025-11-25, 2025-06-18) get sessions
    /// (default true): an `Mcp-Session-Id` on the `initialize` response, a GET stream,
    /// DELETE, resumable event streams and server-to-client requests. Off, they are served
    /// statelessly: no session ids, GET and DELETE answered 405, each POST served on its
    /// own (for replicas behind a plain load balancer; the transports chapter of the book
    /// lists what that cannot do). Either way 2026-07-28 requests are served as always,
    /// and a server built with `legacy_clients(false)` serves no legacy client at all.
    pub legacy_sessions: bool,
    /// Most legacy sessions open at once (default 1,000); past it an `initialize` gets
    /// 503 (the sessions that exist are kept; expired ones are swept first).
    pub max_sessions: usize,
    /// How long a legacy session may stay idle before it ends (default 30 minutes): no
    /// request, notification, response or open stream of it for that long. A request to
    /// it afterwards gets 404. Ended sessions are swept every quarter of this (at least
    /// every minute).
    pub session_idle: Duration,
    /// Most events a legacy session holds for resumption with `Last-Event-ID` (default
    /// 256), over all its streams; the oldest go first. An event on its way to a client
    /// that is not connected waits here too.
    pub session_events: usize,
    /// Most bytes of events a legacy session holds (default 256 KiB); the oldest go first,
    /// but the newest event is always held, whatever its size.
    pub session_event_bytes: usize,
    /// The reconnection delay an event stream of a legacy session names (`retry:`) before
    /// the server closes its connection early for the client to poll (default 1 s).
    pub sse_retry: Duration,
    /// Most connections open at once (default 4,096). Past it `serve_http_on` accepts
    /// nothing until one closes: new connections wait in the kernel's backlog.
    pub max_connections: usize,
    /// Longest wait for a request's headers, from its first byte (from the connection's
    /// acceptance for its first request), default 10 s; past it the connection closes.
    pub header_read_timeout: Duration,
    /// Longest wait between a response and the next request on a kept-alive connection
    /// (default 60 s); past it the connection closes.
    pub idle_timeout: Duration,
    /// Longest a write to a client may make no progress (default 30 s): a client that
    /// stopped reading its responses or its stream loses its connection.
    pub write_timeout: Duration,
    /// Bytes of request bodies being read and decoded requests being served, together
    /// (default 128 MiB); past it, 503 with -32603 and `data.retryable`. See
    /// [`HttpConfig::memory_budget`].
    pub memory_budget: usize,
    /// Whether `serve_http` and `serve_http_on` stop on SIGINT and SIGTERM (default
    /// true). Off, only the shutdown future passed to `serve_http_on` stops them.
    pub stop_on_signals: bool,
    /// How long requests in flight get to finish once serving stops (default 10 s);
    /// what still runs then is dropped, which cancels its handler.
    pub shutdown_grace: Duration,
    /// Whether the catalog page is served at `<path>/dev` (default false): a development
    /// page listing every tool, resource, template and prompt, with forms that call them
    /// through this endpoint. See [`HttpConfig::catalog`].
    pub catalog: bool,
    /// Whether the catalog page may be served on an address that is not loopback
    /// (default false). See [`HttpConfig::catalog_beyond_loopback`].
    pub catalog_beyond_loopback: bool,
    /// Where `GET` serves the metrics in the Prometheus text format (feature `otel`; off
    /// by default; [`HttpConfig::metrics`] mounts it at `/metrics`). The path is checked
    /// like the MCP endpoint: `Origin` (403 for one not allowed) and, when set, the `Host`
    /// allow-list. It needs a pull reader, `otel::Telemetry::prometheus`; without one it
    /// answers 503.
    #[cfg(feature = "otel")]
    pub metrics_path: Option<String>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            path: "/mcp".into(),
            max_body_bytes: 4 * 1024 * 1024,
            allowed_origins: Vec::new(),
            allow_loopback_origins: true,
            allowed_hosts: None,
            max_streams: 256,
            max_in_flight: 1024,
            keepalive: Duration::from_secs(15),
            body_timeout: Duration::from_secs(30),
            legacy_sessions: true,
            max_sessions: 1000,
            session_idle: Duration::from_secs(30 * 60),
            session_events: 256,
            session_event_bytes: 256 * 1024,
            sse_retry: Duration::from_secs(1),
            max_connections: 4096,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(30),
            memory_budget: 128 * 1024 * 1024,
            stop_on_signals: true,
            shutdown_grace: crate::transport::shutdown::DEFAULT_DRAIN,
            catalog: false,
            catalog_beyond_loopback: false,
            #[cfg(feature = "otel")]
            metrics_path: None,
        }
    }
}

impl HttpConfig {
    /// Sets the endpoint path.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Sets the largest request body, in bytes.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Allows one more origin (`https://app.example.com`).
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Whether loopback origins are allowed.
    pub fn allow_loopback_origins(mut self, on: bool) -> Self {
        self.allow_loopback_origins = on;
        self
    }

    /// Sets the most subscription streams open at once (`usize::MAX`: no bound).
    pub fn max_streams(mut self, n: usize) -> Self {
        self.max_streams = n;
        self
    }

    /// Sets the most requests (other than subscription streams) served at once
    /// (`usize::MAX`: no bound). Bodies being read are capped at the same number.
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n;
        self
    }

    /// Sets the keepalive interval of subscription streams.
    pub fn keepalive(mut self, every: Duration) -> Self {
        self.keepalive = every;
        self
    }

    /// Sets the longest wait for a POST body to arrive whole.
    pub fn body_timeout(mut self, wait: Duration) -> Self {
        self.body_timeout = wait;
        self
    }

    /// Whether legacy clients get sessions (see [`HttpConfig::legacy_sessions`]); off,
    /// they are served statelessly.
    pub fn legacy_sessions(mut self, on: bool) -> Self {
        self.legacy_sessions = on;
        self
    }

    /// Sets the most legacy sessions open at once.
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.max_sessions = n;
        self
    }

    /// Sets how long a legacy session may stay idle before it ends.
    pub fn session_idle(mut self, idle: Duration) -> Self {
        self.session_idle = idle;
        self
    }

    /// Sets how many events, and how many bytes of them, a legacy session holds for
    /// resumption (at least one event is always held).
    pub fn session_event_buffer(mut self, events: usize, bytes: usize) -> Self {
        self.session_events = events;
        self.session_event_bytes = bytes;
        self
    }

    /// Sets the reconnection delay named before a connection is closed for polling.
    pub fn sse_retry(mut self, retry: Duration) -> Self {
        self.sse_retry = retry;
        self
    }

    /// Sets the most connections open at once (at least 1; `usize::MAX`: as many as the
    /// process may open).
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// Sets the longest wait for a request's headers.
    pub fn header_read_timeout(mut self, wait: Duration) -> Self {
        self.header_read_timeout = wait;
        self
    }

    /// Sets the longest idle wait between requests on a kept-alive connection.
    pub fn idle_timeout(mut self, wait: Duration) -> Self {
        self.idle_timeout = wait;
        self
    }

    /// Sets the longest a write to a client may make no progress.
    pub fn write_timeout(mut self, wait: Duration) -> Self {
        self.write_timeout = wait;
        self
    }

    /// Sets the memory budget, in bytes, for request bodies being read and decoded
    /// requests being served. A body is charged its `Content-Length` before it is read
    /// (`max_body_bytes` when it has none); once decoded, its bytes plus 80 for every
    /// JSON value it can hold (an upper bound of what the decoded tree takes), until
    /// its reply or stream is done. A request that does not fit gets 503 with -32603
    /// and `data.retryable`; nothing of it is kept.
    pub fn memory_budget(mut self, bytes: usize) -> Self {
        self.memory_budget = bytes;
        self
    }

    /// Sets whether SIGINT and SIGTERM stop serving (on by default).
    pub fn stop_on_signals(mut self, on: bool) -> Self {
        self.stop_on_signals = on;
        self
    }

    /// Sets how long requests in flight get to finish once serving stops.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Serves the catalog page, for development, at `<path>/dev` (`/mcp/dev` by
    /// default): every tool, resource, template and prompt with its description,
    /// annotations and schemas, a form for each tool's arguments that makes a real
    /// `tools/call` through the endpoint (showing progress, log messages, the raw
    /// exchange, and a form for any elicitation the tool asks for), resource reads and
    /// prompt gets. A token field sends `Authorization: Bearer` when the server has
    /// authorization.
    ///
    /// The page and its script and style are compiled in, served with a strict
    /// Content-Security-Policy, and pass the endpoint's Origin and Host rules.
    /// [`Server::serve_http_on`] refuses to serve it on an address that is not loopback
    /// (see [`HttpConfig::catalog_beyond_loopback`]); a router mounted in an app with
    /// [`Server::router`] cannot know its address, so there the choice is the app's.
    pub fn catalog(mut self, on: bool) -> Self {
        self.catalog = on;
        self
    }

    /// Lets [`Server::serve_http_on`] serve the catalog page on an address that is not
    /// loopback (`0.0.0.0`, a public interface). Whoever reaches the page can call every
    /// tool: use it only on a network you trust, such as inside a development container
    /// whose port is forwarded to loopback.
    pub fn catalog_beyond_loopback(mut self, on: bool) -> Self {
        self.catalog_beyond_loopback = on;
        self
    }

    /// Serves the metrics at `GET /metrics`, in the Prometheus text format (feature
    /// `otel`), or stops serving them; see [`HttpConfig::metrics_path`].
    #[cfg(feature = "otel")]
    pub fn metrics(mut self, on: bool) -> Self {
        self.metrics_path = on.then(|| "/metrics".to_owned());
        self
    }

    /// Turns on the Host allow-list.
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }
}

/// The endpoint's state, behind one reference count: axum clones the state for every
/// request, and one count costs one atomic increment and decrement per request, where an
/// `Arc` per field would cost one per field.
#[derive(Clone)]
struct Endpoint(Arc<Shared>);

struct Shared {
    server: Server,
    config: HttpConfig,
    streams: Cap,
    requests: Cap,
    /// Bodies being read and decoded.
    reading: Cap,
    /// Bytes of bodies being read and of decoded requests being served.
    budget: budget::Budget,
    /// The legacy sessions.
    sessions: Arc<legacy::Sessions>,
    /// Cancelled when `serve_http_on` begins to shut down (never, for a router mounted
    /// in an app): subscription streams then end, also those that begin afterwards.
    closing: CancellationToken,
}

impl std::ops::Deref for Endpoint {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl Server {
    /// An axum `Router` serving this server at `config.path`, to mount in an app.
    pub fn router(&self, config: HttpConfig) -> Router {
        self.router_closing(config, CancellationToken::new())
    }

    /// [`Server::router`], its subscription streams ended once `closing` is cancelled.
    fn router_closing(&self, config: HttpConfig, closing: CancellationToken) -> Router {
        self.core.start_fanout();
        let path = config.path.clone();
        let catalog = config.catalog;
        let endpoint = Endpoint(Arc::new(Shared {
            server: self.clone(),
            streams: Cap::new(config.max_streams),
            requests: Cap::new(config.max_in_flight),
            reading: Cap::new(config.max_in_flight),
            budget: budget::Budget::new(config.memory_budget),
            sessions: legacy::Sessions::new(&config, self.core.session_store.clone()),
            config,
            closing,
        }));
        let mut router = Router::new().route(
            &path,
            post(handle_post)
                .get(legacy::handle_get)
                .delete(legacy::handle_delete)
                .fallback(method_not_allowed),
        );
        if catalog {
            router = catalog::routes(router, &path);
        }
        #[cfg(feature = "otel")]
        if let Some(at) = &endpoint.config.metrics_path {
            router = router.route(at, axum::routing::get(metrics));
        }
        if let Some(guard) = &self.core.auth {
            for at in guard.metadata_paths() {
                router = router.route(at, axum::routing::get(protected_resource_metadata));
            }
        }
        router.fallback(not_found).with_state(endpoint)
    }

    /// The router with the default settings (`/mcp`).
    pub fn into_router(self) -> Router {
        self.router(HttpConfig::default())
    }
}

/// A JSON-RPC error body with an HTTP status; `id` left out (it could not be read).
fn transport_error(status: StatusCode, error: Error) -> Response {
    // Refused before the pipeline saw a request (no span): counted all the same.
    crate::observe::rejected(error.code());
    json_response(status, encode_error(None, &error))
}

/// An authorization refusal: its status, its `WWW-Authenticate` challenge, and its
/// JSON-RPC error.
fn challenged(status: StatusCode, challenge: &str, body: String) -> Response {
    let mut response = json_response(status, body);
    if let Ok(value) = HeaderValue::from_str(challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The refusal of credentials before the request is read: 401 or 400 with the challenge,
/// or 503 when the token cannot be checked now.
fn denied(guard: &Guard, denied: Denied) -> Response {
    let body = encode_error(None, &denied.error());
    let code = status(denied.status());
    match guard.challenge(denied) {
        Some(challenge) => challenged(code, &challenge, body),
        None => {
            let mut response = json_response(code, body);
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            response
        }
    }
}

/// Who a request acts for, from its `Authorization` header, when the server has
/// authorization: `Ok(None)` without it.
async fn authenticate(
    endpoint: &Endpoint,
    headers: &HeaderMap,
) -> Result<Option<Arc<Principal>>, Response> {
    let Some(guard) = &endpoint.server.core.auth else {
        return Ok(None);
    };
    let values = headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .map(HeaderValue::as_bytes);
    match guard.authenticate(values).await {
        Ok(principal) => Ok(Some(principal)),
        Err(refused) => Err(denied(guard, refused)),
    }
}

fn json_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// The protected resource metadata (RFC 9728): where clients learn which authorization
/// server issues tokens for this server. Public, like any OAuth metadata: no `Origin`
/// rule, and readable by a page of any origin.
async fn protected_resource_metadata(State(endpoint): State<Endpoint>) -> Response {
    let Some(guard) = &endpoint.server.core.auth else {
        return transport_error(
            StatusCode::NOT_FOUND,
            Error::invalid_request("Not found: no MCP endpoint at this path"),
        );
    };
    let mut response = json_response(StatusCode::OK, guard.metadata().to_owned());
    let headers = response.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("max-age=3600"),
    );
    response
}

/// The metrics in the Prometheus text format, under the endpoint's Origin and Host rules.
#[cfg(feature = "otel")]
async fn metrics(State(endpoint): State<Endpoint>, headers: HeaderMap) -> Response {
    if let Err(forbidden) = check_origin(&endpoint.config, &headers) {
        return forbidden;
    }
    if let Err(forbidden) = host_verdict(&endpoint.config, headers.get(header::HOST)) {
        return forbidden;
    }
    match crate::otel::prometheus_text() {
        Some(text) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            )],
            text,
        )
            .into_response(),
        None => transport_error(StatusCode::SERVICE_UNAVAILABLE, Error::internal()),
    }
}

/// The Origin rule (errata W-12) holds for every request, also those answered 405 or 404.
async fn method_not_allowed(State(endpoint): State<Endpoint>, headers: HeaderMap) -> Response {
    if let Err(forbidden) = check_origin(&endpoint.config, &headers) {
        return forbidden;
    }
    if endpoint.serves_sessions() {
        let mut response = transport_error(
            StatusCode::METHOD_NOT_ALLOWED,
            Error::invalid_request("Streamable HTTP accepts POST, GET and DELETE only"),
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
        return response;
    }
    post_only()
}

/// The 405 of an endpoint that serves POST only (no legacy sessions).
fn post_only() -> Response {
    let mut response = transport_error(
        StatusCode::METHOD_NOT_ALLOWED,
        Error::invalid_request("Streamable HTTP accepts POST only"),
    );
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

impl Shared {
    /// Whether legacy clients are served at all (the server's `legacy_clients`).
    fn serves_legacy(&self) -> bool {
        self.server.core.legacy
    }

    /// Whether legacy clients get sessions (GET and DELETE are served).
    fn serves_sessions(&self) -> bool {
        self.serves_legacy() && self.config.legacy_sessions
    }
}

async fn not_found(State(endpoint): State<Endpoint>, headers: HeaderMap) -> Response {
    if let Err(forbidden) = check_origin(&endpoint.config, &headers) {
        return forbidden;
    }
    transport_error(
        StatusCode::NOT_FOUND,
        Error::invalid_request("Not found: no MCP endpoint at this path"),
    )
}

fn handle_post(
    State(endpoint): State<Endpoint>,
    request: Request,
) -> impl Future<Output = Response> + Send {
    // Taken apart before the future is made, and only the headers kept: what the future
    // captures or holds across an await is part of it, and axum boxes it per request.
    let (axum::http::request::Parts { headers, .. }, body) = request.into_parts();
    serve_post(endpoint, headers, body)
}

async fn serve_post(endpoint: Endpoint, headers: HeaderMap, body: Body) -> Response {
    if let Err(response) = admit(&endpoint.config, &headers) {
        return response;
    }
    let principal = match authenticate(&endpoint, &headers).await {
        Ok(principal) => principal,
        Err(refused) => return refused,
    };
    // Reading a body takes a slot of its own, given back once the body is decoded, so
    // slow or large bodies cannot pile up in memory past the cap.
    let Some(reading) = endpoint.reading.try_hold() else {
        let error = Error::new(
            crate::error::code::INTERNAL_ERROR,
            "Too many requests being read; try again later",
        );
        return json_response(StatusCode::SERVICE_UNAVAILABLE, encode_error(None, &error));
    };
    let config = &endpoint.config;
    // The body is charged to the memory budget before it is read: its declared length,
    // or the most it may be.
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let reserve = declared.map_or(config.max_body_bytes, |n| n.min(config.max_body_bytes));
    let Some(mut charge) = Charge::try_take(&endpoint, reserve) else {
        return over_budget(None);
    };
    // A body that has arrived whole by the first poll (the common case) is read without
    // arming the timer: the clock is read and a timer made only for one still arriving.
    let mut read = std::pin::pin!(read_body(body, config.max_body_bytes, declared));
    let first = std::future::poll_fn(|cx| Poll::Ready(read.as_mut().poll(cx))).await;
    let read = match first {
        Poll::Ready(read) => Ok(read),
        Poll::Pending => tokio::time::timeout(config.body_timeout, read).await,
    };
    let bytes: Bytes = match read {
        Ok(Ok(b)) => b,
        Ok(Err(Unread::TooLarge)) => {
            return transport_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                Error::invalid_request(format!(
                    "Invalid Request: body exceeds {} bytes",
                    config.max_body_bytes
                )),
            );
        }
        // The body broke off or was framed wrongly (a bad chunk): nothing to decode.
        Ok(Err(Unread::Broken)) => {
            return transport_error(
                StatusCode::BAD_REQUEST,
                Error::invalid_request("Invalid Request: the body could not be read"),
            );
        }
        Err(_) => {
            return transport_error(
                StatusCode::REQUEST_TIMEOUT,
                Error::invalid_request(format!(
                    "Invalid Request: body not received within {} ms",
                    config.body_timeout.as_millis()
                )),
            );
        }
    };
    // While it is decoded, the body and what it decodes to are both in memory; then the
    // charge stands for the decoded request alone, until its reply is done.
    let cost = budget::decoded_cost(&bytes);
    if !charge.resize(bytes.len().saturating_add(cost)) {
        return over_budget(None);
    }
    let decoded = jsonrpc::decode_lifting(&bytes);
    charge.resize(cost);
    drop(bytes);
    drop(reading);
    match route(&endpoint, decoded, headers, charge, principal) {
        Routed::Done(response) => response,
        Routed::Serve(serving) => respond(serving).await,
        Routed::Legacy(answer) => answer.await,
    }
}

/// The 503 of a request the memory budget cannot hold.
fn over_budget(id: Option<&serde_json::Value>) -> Response {
    let error = Error::new(
        crate::error::code::INTERNAL_ERROR,
        "Too much request data in memory; try again later",
    )
    .with_data(serde_json::json!({"retryable": true}));
    json_response(StatusCode::SERVICE_UNAVAILABLE, encode_error(id, &error))
}

/// Why a body could not be read.
enum Unread {
    /// It is longer than `max_body_bytes`.
    TooLarge,
    /// It broke off or was framed wrongly.
    Broken,
}

/// Reads a body whole, up to `limit` bytes. A body that comes in one piece (most do) is
/// kept as it came; one in several is gathered into one buffer sized by its declared
/// length, each piece freed once copied, so a body takes its length in memory once,
/// not once in pieces and again gathered.
async fn read_body(body: Body, limit: usize, declared: Option<usize>) -> Result<Bytes, Unread> {
    use http_body_util::BodyExt;
    let mut body = body;
    let mut first: Option<Bytes> = None;
    let mut gathered: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(|_| Unread::Broken)?.into_data() else {
            // Trailers carry nothing a request needs.
            continue;
        };
        let held = first.as_ref().map_or(gathered.len(), Bytes::len);
        if held.saturating_add(data.len()) > limit {
            return Err(Unread::TooLarge);
        }
        if first.is_none() && gathered.is_empty() {
            first = Some(data);
            continue;
        }
        if let Some(piece) = first.take() {
            let size = declared.unwrap_or(0).min(limit);
            gathered.reserve_exact(size.max(piece.len() + data.len()));
            gathered.extend_from_slice(&piece);
        }
        gathered.extend_from_slice(&data);
    }
    Ok(first.unwrap_or_else(|| Bytes::from(gathered)))
}

/// What a decoded POST becomes: an answer already, or a request to serve.
enum Routed {
    Done(Response),
    Serve(Serving),
    /// A legacy session's request: its answer, once it is known whether it is JSON or an
    /// event stream (boxed, so the POST's future stays the size it is for the others).
    Legacy(std::pin::Pin<Box<dyn Future<Output = Response> + Send>>),
}

/// A request on its way through the pipeline, with what its response needs.
struct Serving {
    fut: std::pin::Pin<Box<dyn Future<Output = Reply> + Send>>,
    rx: Notifications,
    guard: tokio_util::sync::DropGuard,
    slot: Slot,
    keepalive: Option<Duration>,
}

/// Answers what needs no pipeline (rejections, responses, notifications) and starts
/// the pipeline for a request, under its cap. A plain function, so its temporaries are
/// not part of the POST's future.
fn route(
    endpoint: &Endpoint,
    decoded: Result<Inbound, jsonrpc::Rejection>,
    headers: HeaderMap,
    charge: Charge,
    principal: Option<Arc<Principal>>,
) -> Routed {
    let server = &endpoint.server;
    let request = match decoded {
        Err(rejection) => {
            return Routed::Done(json_response(
                status(rejection.error.http_status()),
                rejection.to_response(),
            ));
        }
        // A response answers a request of a legacy session (a 2026-07-28 client sends
        // none); one sent with the 2026-07-28 version header is ignored, as it always was.
        Ok(Inbound::Response(response)) => {
            if endpoint.serves_legacy() && !legacy::modern_header(&headers) {
                return legacy::response(endpoint, response, headers, principal);
            }
            return Routed::Done(StatusCode::ACCEPTED.into_response());
        }
        Ok(Inbound::Notification(n))
            if endpoint.serves_legacy()
                && !n.meta.claims_modern()
                && !legacy::modern_header(&headers) =>
        {
            return legacy::notification(endpoint, n, headers, principal);
        }
        Ok(Inbound::Notification(n)) => {
            // A posted notifications/cancelled is accepted and changes nothing: on HTTP a
            // request is cancelled by closing its connection.
            let transport = Transport::Http(headers);
            return Routed::Done(match server.core.accept_notification(&n, &transport) {
                Ok(_) => StatusCode::ACCEPTED.into_response(),
                Err(e) => json_response(status(e.http_status()), encode_error(None, &e)),
            });
        }
        // The era of a request: 2026-07-28 when its `_meta` carries the per-request keys
        // (looked at first: a 2026-07-28 request pays nothing more), or when it carries
        // none but the version header names 2026-07-28 (admission then refuses it, as it
        // always did); otherwise a legacy session's (`initialize` opens one).
        Ok(Inbound::Request(request))
            if !request.meta.claims_modern()
                && endpoint.serves_legacy()
                && !legacy::modern_header(&headers) =>
        {
            return legacy::request(endpoint, request, headers, charge, principal);
        }
        Ok(Inbound::Request(request)) => request,
    };
    // Subscription streams and other requests are capped separately; each holds a slot
    // until its response (or stream) is done.
    let listen = request.method == "subscriptions/listen";
    let Some(mut slot) = Slot::try_take(endpoint, listen) else {
        let busy = if listen {
            "Too many open subscription streams; try again later"
        } else {
            "Too many requests in flight; try again later"
        };
        let error = Error::new(crate::error::code::INTERNAL_ERROR, busy);
        return Routed::Done(json_response(
            StatusCode::SERVICE_UNAVAILABLE,
            encode_error(Some(&request.id.to_value()), &error),
        ));
    };
    slot.keep(charge);
    let keepalive = listen.then_some(endpoint.config.keepalive);
    let (outbound, rx) = queue::channel();
    let exchange = Exchange {
        transport: Transport::Http(headers),
        era: Era::Modern,
        outbound: Arc::clone(&outbound) as Arc<dyn Outbound>,
        // The body leaves with the response: nothing to reuse.
        buffer: String::new(),
        principal,
    };
    // The request's first poll is here, as on stdio: one answered at it (most are) is
    // written at once, with no future kept for it and, unless its notifications make it
    // a stream, no token made to cancel it.
    let rest = match server.core.serve(request, exchange) {
        Served::Now(reply) => return Routed::Done(concluded(reply, rx, None, slot, keepalive)),
        Served::Later(rest) => rest,
    };
    // A plain `fn` handler runs on past the response's drop: its slot with it.
    slot.tie(Arc::clone(&outbound) as Arc<dyn Outbound>);
    // Dropping the response (the client went away) drops the guard, which cancels the
    // request; dropping the pipeline future stops the handler itself. The token is the
    // request's own (a handler that asked for one already holds a child of it).
    let guard = outbound.cancellation().token().drop_guard();
    let fut: std::pin::Pin<Box<dyn Future<Output = Reply> + Send>> = if listen {
        Box::pin(ended_when_closing(
            rest,
            endpoint.closing.clone(),
            server.clone(),
        ))
    } else {
        rest
    };
    Routed::Serve(Serving {
        fut,
        rx,
        guard,
        slot,
        keepalive,
    })
}

/// The response to a request whose reply is ready: JSON, or an SSE stream when
/// notifications came first (they go first). `guard` is the request's drop guard when it
/// has one (it waited); one answered at its first poll gets a guard only as a stream,
/// where the client may still go away before the body is written.
fn concluded(
    reply: Reply,
    mut rx: Notifications,
    guard: Option<tokio_util::sync::DropGuard>,
    slot: Slot,
    keepalive: Option<Duration>,
) -> Response {
    let Some((first, _taken)) = rx.try_recv() else {
        if let Some(guard) = guard {
            guard.disarm();
        }
        return reply_response(reply);
    };
    let guard = guard.unwrap_or_else(|| rx.cancellation().token().drop_guard());
    let done: std::pin::Pin<Box<dyn Future<Output = Reply> + Send>> =
        Box::pin(std::future::ready(reply));
    sse(first, done, rx, guard, slot, keepalive)
}

/// A reply sent as JSON.
fn reply_response(reply: Reply) -> Response {
    match reply {
        Reply::Response {
            body,
            status: code,
            challenge: None,
        } => json_response(status(code), body),
        Reply::Response {
            body,
            status: code,
            challenge: Some(challenge),
        } => challenged(status(code), &challenge, body),
        Reply::StreamEnded { body, .. } => json_response(StatusCode::OK, body),
        Reply::Cancelled => StatusCode::NO_CONTENT.into_response(),
    }
}

/// A subscription stream on an endpoint shutting down: it ends gracefully once
/// `closing` is cancelled, however late it began. (Closing the server's streams ends
/// those open at that moment; one whose request arrived on an open connection after it
/// registers afterwards, and would otherwise outlive the shutdown, keeping it waiting.)
async fn ended_when_closing(
    answer: impl Future<Output = Reply>,
    closing: CancellationToken,
    server: Server,
) -> Reply {
    let mut answer = std::pin::pin!(answer);
    tokio::select! {
        // The stream registered at its first poll (in `Server::begin`, before this was
        // made); the rest is polled before `closing` is looked at.
        biased;
        reply = &mut answer => return reply,
        () = closing.cancelled() => {}
    }
    server.close_streams();
    answer.await
}

/// Waits for the first notification or the reply: the reply alone is sent as JSON; a
/// notification first switches the response to SSE. The reply is polled first, so a
/// request that completes at its next poll never registers a waker with its queue.
async fn respond(serving: Serving) -> Response {
    let Serving {
        mut fut,
        mut rx,
        guard,
        slot,
        keepalive,
    } = serving;
    tokio::select! {
        biased;
        reply = &mut fut => concluded(reply, rx, Some(guard), slot, keepalive),
        (first, _taken) = rx.recv() => sse(first, fut, rx, guard, slot, keepalive),
    }
}

struct SseState {
    fut: Option<std::pin::Pin<Box<dyn Future<Output = Reply> + Send>>>,
    rx: Notifications,
    pending: Option<String>,
    guard: Option<tokio_util::sync::DropGuard>,
    /// The request's slot under its cap, held until the stream ends.
    _slot: Slot,
    /// For subscription streams: the keepalive timer.
    keepalive: Option<tokio::time::Interval>,
}

fn sse(
    first: String,
    fut: std::pin::Pin<Box<dyn Future<Output = Reply> + Send>>,
    rx: Notifications,
    guard: tokio_util::sync::DropGuard,
    slot: Slot,
    keepalive: Option<Duration>,
) -> Response {
    let keepalive = keepalive.map(|every| {
        let mut timer = tokio::time::interval(every.max(Duration::from_millis(10)));
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        timer.reset();
        timer
    });
    let state = SseState {
        fut: Some(fut),
        rx,
        pending: Some(first),
        guard: Some(guard),
        _slot: slot,
        keepalive,
    };
    let events = stream::unfold(state, |mut s| async move {
        if let Some(frame) = s.pending.take() {
            return Some((Ok::<_, std::convert::Infallible>(event(&frame)), s));
        }
        let fut = s.fut.as_mut()?;
        let tick = async {
            match s.keepalive.as_mut() {
                Some(timer) => {
                    timer.tick().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            biased;
            // The frame leaves the backlog once the body takes it.
            (frame, _taken) = s.rx.recv() => {
                // Keepalives are for idle streams: an event restarts the wait.
                if let Some(timer) = s.keepalive.as_mut() {
                    timer.reset();
                }
                Some((Ok(event(&frame)), s))
            }
            () = tick => Some((Ok(": keepalive\n\n".to_owned()), s)),
            reply = fut => {
                s.fut = None;
                if let Some(g) = s.guard.take() {
                    g.disarm();
                }
                // Notifications always precede the final response.
                let mut out = String::new();
                while let Some((frame, _taken)) = s.rx.try_recv() {
                    out.push_str(&event(&frame));
                }
                match reply {
                    Reply::Response { body, .. } | Reply::StreamEnded { body, .. } => {
                        out.push_str(&event(&body));
                    }
                    Reply::Cancelled => {}
                }
                if out.is_empty() { None } else { Some((Ok(out), s)) }
            }
        }
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .header("x-accel-buffering", "no")
        .body(Body::from_stream(events))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

fn event(json: &str) -> String {
    let mut e = String::with_capacity(json.len() + 8);
    e.push_str("data: ");
    e.push_str(json);
    e.push_str("\n\n");
    e
}

fn status(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// 403 for a request whose `Origin` is not allowed (or that has more than one).
#[allow(clippy::result_large_err)]
fn origin_verdict(
    config: &HttpConfig,
    origin: Option<&HeaderValue>,
    origins: usize,
) -> Result<(), Response> {
    if let Some(origin) = origin {
        let allowed = origins == 1
            && origin
                .to_str()
                .is_ok_and(|o| origin_allowed(config, o.trim()));
        if !allowed {
            return Err(forbidden("Origin is not allowed"));
        }
    }
    Ok(())
}

/// [`origin_verdict`] for a request [`admit`] does not see.
#[allow(clippy::result_large_err)]
fn check_origin(config: &HttpConfig, headers: &HeaderMap) -> Result<(), Response> {
    let mut all = headers.get_all(header::ORIGIN).iter();
    let origin = all.next();
    origin_verdict(config, origin, usize::from(origin.is_some()) + all.count())
}

/// 403 for a request whose `Host` is not on the allow-list, when there is one.
#[allow(clippy::result_large_err)]
fn host_verdict(config: &HttpConfig, host: Option<&HeaderValue>) -> Result<(), Response> {
    if let Some(hosts) = &config.allowed_hosts {
        let host = host.and_then(|h| h.to_str().ok());
        if !host.is_some_and(|h| hosts.iter().any(|a| a.eq_ignore_ascii_case(h.trim()))) {
            return Err(forbidden("Host is not allowed"));
        }
    }
    Ok(())
}

/// The 403 of the Origin and Host rules.
fn forbidden(message: &'static str) -> Response {
    transport_error(StatusCode::FORBIDDEN, Error::invalid_request(message))
}

/// Section 13.2 steps 2 to 5: Origin, Host, Content-Type, Accept, read in one pass over
/// the headers (a lookup per header would hash its name each time).
#[allow(clippy::result_large_err)]
fn admit(config: &HttpConfig, headers: &HeaderMap) -> Result<(), Response> {
    let (mut origin, mut origins) = (None, 0);
    let (mut host, mut content_type) = (None, None);
    let (mut json, mut sse) = (false, false);
    for (name, value) in headers {
        if *name == header::ORIGIN {
            origins += 1;
            origin.get_or_insert(value);
        } else if *name == header::CONTENT_TYPE {
            content_type.get_or_insert(value);
        } else if *name == header::ACCEPT {
            accept(value, &mut json, &mut sse);
        } else if *name == header::HOST {
            host.get_or_insert(value);
        }
    }
    origin_verdict(config, origin, origins)?;
    host_verdict(config, host)?;
    let content_type_ok = content_type
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| media_type(v.as_bytes()).eq_ignore_ascii_case(b"application/json"));
    if !content_type_ok {
        return Err(transport_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Error::invalid_request("Expected application/json"),
        ));
    }
    if !(json && sse) {
        return Err(transport_error(
            StatusCode::NOT_ACCEPTABLE,
            Error::invalid_request("Accept must list both application/json and text/event-stream"),
        ));
    }
    Ok(())
}

/// Notes what one `Accept` value lists: JSON (`application/json`, `application/*`),
/// event streams (`text/event-stream`, `text/*`), or both (`*/*`).
fn accept(value: &HeaderValue, json: &mut bool, sse: &mut bool) {
    let Ok(value) = value.to_str() else { return };
    // Split by hand: this runs on every POST, and `str::split` with a char pattern calls
    // memchr for each piece.
    for item in value.as_bytes().split(|&b| b == b',') {
        let media = media_type(item);
        let is = |name: &[u8]| media.eq_ignore_ascii_case(name);
        if is(b"*/*") {
            *json = true;
            *sse = true;
        } else if is(b"application/json") || is(b"application/*") {
            *json = true;
        } else if is(b"text/event-stream") || is(b"text/*") {
            *sse = true;
        }
    }
}

/// The media type of a Content-Type or Accept item: before any `;` parameters, trimmed.
fn media_type(item: &[u8]) -> &[u8] {
    item.split(|&b| b == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii()
}

fn origin_allowed(config: &HttpConfig, origin: &str) -> bool {
    if config
        .allowed_origins
        .iter()
        .any(|a| a.eq_ignore_ascii_case(origin))
    {
        return true;
    }
    if !config.allow_loopback_origins {
        return false;
    }
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    if rest.contains(['@', '/', '?', '#']) {
        return false;
    }
    let host = if let Some(v6) = rest.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, port)) if port.is_empty() || is_port(port) => return h == "::1",
            _ => return false,
        }
    } else {
        match rest.rsplit_once(':') {
            Some((h, port)) if is_port(port) => h,
            Some(_) => return false,
            None => rest,
        }
    };
    host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1"
}

fn is_port(p: &str) -> bool {
    p.strip_prefix(':').unwrap_or(p).parse::<u16>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins() {
        let c = HttpConfig::default();
        for ok in [
            "http://localhost",
            "http://localhost:3000",
            "https://127.0.0.1:8443",
            "http://[::1]:80",
        ] {
            assert!(origin_allowed(&c, ok), "{ok}");
        }
        for bad in [
            "http://evil.example.com",
            "null",
            "http://localhost.evil.com",
            "http://user@localhost",
            "ftp://localhost",
            "http://127.0.0.1:99999",
        ] {
            assert!(!origin_allowed(&c, bad), "{bad}");
        }
        let c = HttpConfig::default().allow_origin("https://app.example.com");
        assert!(origin_allowed(&c, "https://app.example.com"));
    }
}
