//! HTTP load: N kept-alive connections (hyper's HTTP/1.1 client on one thread), each
//! sending the next request as soon as the previous response is read, for a fixed
//! duration. Every response's status and body are checked; every latency is recorded.
//! The requests are 2026-07-28 ones, or those of a 2025-11-25 client, each connection
//! then in a session of its own opened before the clock starts. A connection may carry
//! an access token (`Authorization: Bearer`) on every request it sends.

use crate::proto;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::HeaderValue;
use hyper::http::request;
use hyper::{HeaderMap, Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

/// What one load run saw.
#[derive(Default)]
pub struct Load {
    pub requests: u64,
    pub latencies_ns: Vec<u64>,
    pub elapsed: Duration,
}

/// Which revision's client the load is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Era {
    /// 2026-07-28: every request stands alone.
    Modern,
    /// 2025-11-25: each connection opens a session first, and every request names it.
    Legacy,
}

/// One kept-alive connection.
pub struct Conn {
    sender: SendRequest<Full<Bytes>>,
    host: String,
    /// The `Authorization` header every request carries, if any.
    bearer: Option<HeaderValue>,
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> Result<Conn, String> {
        let stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        Conn::over(stream, addr).await
    }

    async fn over(stream: TcpStream, addr: SocketAddr) -> Result<Conn, String> {
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let (sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Conn {
            sender,
            host: addr.to_string(),
            bearer: None,
        })
    }

    /// Sends `bearer` as the `Authorization` header of every request from now on (none
    /// with `None`).
    pub fn set_bearer(&mut self, bearer: Option<HeaderValue>) {
        self.bearer = bearer;
    }

    /// Sends the tools/call with this id and checks the answer: a 2026-07-28 request,
    /// or one of the 2025-11-25 session `session` names.
    pub async fn call(&mut self, id: u64, session: Option<&HeaderValue>) -> Result<(), String> {
        let (builder, body) = match session {
            None => (
                self.request(Method::POST, proto::HEADERS),
                proto::request(id),
            ),
            Some(session) => (
                self.request(Method::POST, proto::LEGACY_HEADERS)
                    .header(proto::SESSION_ID, session.clone()),
                proto::legacy_request(id),
            ),
        };
        let (status, headers, body) = self.send(builder, body.into()).await?;
        if status != 200 {
            return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body)));
        }
        let message = proto::http_message(content_type(&headers), &body);
        let got = match session {
            None => proto::check(message)?,
            Some(_) => proto::check_legacy(message)?,
        };
        if got != id {
            return Err(format!("answer to id {got}, expected {id}"));
        }
        Ok(())
    }

    /// Opens a 2025-11-25 session, as its client does: `initialize` with this id (its
    /// answer checked, the session id read from `Mcp-Session-Id`), then
    /// `notifications/initialized` in the session (202). Returns the session id.
    pub async fn initialize(&mut self, id: u64) -> Result<HeaderValue, String> {
        let builder = self.request(Method::POST, proto::INITIALIZE_HEADERS);
        let (status, headers, body) = self.send(builder, proto::initialize(id).into()).await?;
        if status != 200 {
            return Err(format!(
                "initialize: HTTP {status}: {}",
                String::from_utf8_lossy(&body)
            ));
        }
        proto::check_initialize(proto::http_message(content_type(&headers), &body), id)?;
        let session = headers
            .get(proto::SESSION_ID)
            .cloned()
            .ok_or("initialize: no Mcp-Session-Id in the answer")?;
        let builder = self
            .request(Method::POST, proto::LEGACY_HEADERS)
            .header(proto::SESSION_ID, session.clone());
        let (status, _, body) = self
            .send(builder, Bytes::from_static(proto::INITIALIZED.as_bytes()))
            .await?;
        if status != 202 {
            return Err(format!(
                "notifications/initialized: HTTP {status}, not 202: {}",
                String::from_utf8_lossy(&body)
            ));
        }
        Ok(session)
    }

    /// Ends a session with DELETE (204).
    pub async fn delete(&mut self, session: &HeaderValue) -> Result<(), String> {
        let builder = self
            .request(
                Method::DELETE,
                &[("mcp-protocol-version", proto::LEGACY_VERSION)],
            )
            .header(proto::SESSION_ID, session.clone());
        let (status, _, body) = self.send(builder, Bytes::new()).await?;
        if status != 204 {
            return Err(format!(
                "DELETE: HTTP {status}, not 204: {}",
                String::from_utf8_lossy(&body)
            ));
        }
        Ok(())
    }

    /// A request to `/mcp` with these headers besides `Host` (and `Authorization` when
    /// the connection has a token).
    fn request(&self, method: Method, headers: &[(&str, &str)]) -> request::Builder {
        let mut builder = Request::builder()
            .method(method)
            .uri("/mcp")
            .header("host", &self.host);
        if let Some(bearer) = &self.bearer {
            builder = builder.header(hyper::header::AUTHORIZATION, bearer.clone());
        }
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        builder
    }

    /// Sends the request with this body; returns the answer's status, headers and whole
    /// body.
    async fn send(
        &mut self,
        builder: request::Builder,
        body: Bytes,
    ) -> Result<(StatusCode, HeaderMap, Bytes), String> {
        let request = builder.body(Full::new(body)).map_err(|e| e.to_string())?;
        self.sender.ready().await.map_err(|e| e.to_string())?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let (parts, body) = response.into_parts();
        let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
        Ok((parts.status, parts.headers, body))
    }
}

/// A response's content type ("" without one).
fn content_type(headers: &HeaderMap) -> &str {
    headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// Runs `connections` connections against `addr` for `duration`, with `tokens` as
/// [`connect`] takes them. Legacy connections each open a session of their own first,
/// before the clock starts.
pub async fn load(
    addr: SocketAddr,
    connections: usize,
    duration: Duration,
    era: Era,
    tokens: &[HeaderValue],
) -> Result<Load, String> {
    run(connect(addr, connections, era, tokens).await?, duration).await
}

/// A connection ready for load, with its session if it is a legacy one.
pub struct Ready(Conn, Option<HeaderValue>);

/// Opens `connections` connections to `addr`; legacy ones each open a session.
/// Connection `i` sends `tokens[i % tokens.len()]` on every request (no token when
/// `tokens` is empty).
pub async fn connect(
    addr: SocketAddr,
    connections: usize,
    era: Era,
    tokens: &[HeaderValue],
) -> Result<Vec<Ready>, String> {
    let mut conns = Vec::with_capacity(connections);
    for i in 0..connections {
        let mut conn = Conn::open(addr).await?;
        if !tokens.is_empty() {
            conn.set_bearer(Some(tokens[i % tokens.len()].clone()));
        }
        let session = match era {
            Era::Modern => None,
            Era::Legacy => Some(conn.initialize(0).await?),
        };
        conns.push(Ready(conn, session));
    }
    Ok(conns)
}

/// Loads the server through `conns` for `duration`: each connection sends its next
/// tools/call as soon as the answer to the last one is read and checked.
pub async fn run(conns: Vec<Ready>, duration: Duration) -> Result<Load, String> {
    let connections = conns.len();
    let next_id = Arc::new(AtomicU64::new(1));
    let start = Instant::now();
    let deadline = start + duration;
    let mut tasks = Vec::with_capacity(connections);
    for Ready(mut conn, session) in conns {
        let next_id = Arc::clone(&next_id);
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(1 << 16);
            loop {
                let id = next_id.fetch_add(1, Ordering::Relaxed);
                let t0 = Instant::now();
                conn.call(id, session.as_ref()).await?;
                let t1 = Instant::now();
                latencies.push((t1 - t0).as_nanos() as u64);
                if t1 >= deadline {
                    return Ok::<_, String>(latencies);
                }
            }
        }));
    }
    let mut out = Load::default();
    for t in tasks {
        let latencies = t.await.map_err(|e| e.to_string())??;
        out.requests += latencies.len() as u64;
        out.latencies_ns.extend(latencies);
    }
    out.elapsed = start.elapsed();
    Ok(out)
}

/// Waits until something accepts connections on `addr` (polling every 100 µs; the
/// thread blocks, as nothing else runs meanwhile), then sends one tools/call (with
/// `bearer` as its `Authorization` when given) and checks its answer.
pub async fn wait_ready(
    addr: SocketAddr,
    timeout: Duration,
    bearer: Option<HeaderValue>,
) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    let stream = loop {
        match std::net::TcpStream::connect(addr) {
            Ok(s) => break s,
            Err(e) if Instant::now() >= deadline => return Err(format!("server not ready: {e}")),
            Err(_) => std::thread::sleep(Duration::from_micros(100)),
        }
    };
    stream.set_nonblocking(true).map_err(|e| e.to_string())?;
    let stream = TcpStream::from_std(stream).map_err(|e| e.to_string())?;
    let mut conn = Conn::over(stream, addr).await?;
    conn.set_bearer(bearer);
    conn.call(0, None).await
}

/// One open `subscriptions/listen` stream, kept alive by holding its connection and body.
pub struct Listener {
    _sender: SendRequest<Full<Bytes>>,
    _body: hyper::body::Incoming,
}

/// Opens a `subscriptions/listen` stream (tools list changes) and waits for its
/// acknowledgement, `notifications/subscriptions/acknowledged`.
pub async fn listen(addr: SocketAddr, id: u64) -> Result<Listener, String> {
    let mut conn = Conn::open(addr).await?;
    let body = format!(
        concat!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"subscriptions/listen","params":{{"#,
            r#""notifications":{{"toolsListChanged":true}},"_meta":{{"#,
            r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
            r#""io.modelcontextprotocol/clientCapabilities":{{}},"#,
            r#""io.modelcontextprotocol/clientInfo":{{"name":"presa-bench","version":"0.0.0"}}}}}}}}"#
        ),
        id
    );
    let request = Request::post("/mcp")
        .header("host", &conn.host)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    conn.sender.ready().await.map_err(|e| e.to_string())?;
    let response = conn
        .sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    if response.status() != 200 {
        let status = response.status();
        let body = response.into_body().collect().await.map(|b| b.to_bytes());
        return Err(format!("listen: HTTP {status}: {body:?}"));
    }
    let mut body = response.into_body();
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("notifications/subscriptions/acknowledged") {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    seen.extend_from_slice(data);
                }
            }
            Some(Err(e)) => return Err(format!("listen: {e}")),
            None => {
                return Err(format!(
                    "listen: stream ended before the acknowledgement: {}",
                    String::from_utf8_lossy(&seen)
                ));
            }
        }
    }
    Ok(Listener {
        _sender: conn.sender,
        _body: body,
    })
}
