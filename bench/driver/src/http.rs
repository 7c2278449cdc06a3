//! HTTP load: N kept-alive connections (hyper's HTTP/1.1 client on one thread), each
//! sending the next request as soon as the previous response is read, for a fixed
//! duration. Every response's status and body are checked; every latency is recorded.

use crate::proto;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::client::conn::http1::{self, SendRequest};
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

/// One kept-alive connection.
pub struct Conn {
    sender: SendRequest<Full<Bytes>>,
    host: String,
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
        })
    }

    /// Sends the tools/call with this id and checks the answer.
    pub async fn call(&mut self, id: u64) -> Result<(), String> {
        let mut builder = Request::post("/mcp").header("host", &self.host);
        for (k, v) in proto::HEADERS {
            builder = builder.header(*k, *v);
        }
        let request = builder
            .body(Full::new(Bytes::from(proto::request(id))))
            .map_err(|e| e.to_string())?;
        self.sender.ready().await.map_err(|e| e.to_string())?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        if status != 200 {
            return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body)));
        }
        let got = proto::check(proto::http_message(&content_type, &body))?;
        if got != id {
            return Err(format!("answer to id {got}, expected {id}"));
        }
        Ok(())
    }
}

/// Runs `connections` connections against `addr` for `duration`.
pub async fn load(
    addr: SocketAddr,
    connections: usize,
    duration: Duration,
) -> Result<Load, String> {
    let mut conns = Vec::with_capacity(connections);
    for _ in 0..connections {
        conns.push(Conn::open(addr).await?);
    }
    let next_id = Arc::new(AtomicU64::new(1));
    let start = Instant::now();
    let deadline = start + duration;
    let mut tasks = Vec::with_capacity(connections);
    for mut conn in conns {
        let next_id = Arc::clone(&next_id);
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(1 << 16);
            loop {
                let id = next_id.fetch_add(1, Ordering::Relaxed);
                let t0 = Instant::now();
                conn.call(id).await?;
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
/// thread blocks, as nothing else runs meanwhile), then sends one tools/call and checks
/// its answer.
pub async fn wait_ready(addr: SocketAddr, timeout: Duration) -> Result<(), String> {
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
    Conn::over(stream, addr).await?.call(0).await
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
