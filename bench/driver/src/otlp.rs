//! The observability cell's receiver: an OTLP/HTTP endpoint on a loopback port that
//! accepts every export (`POST /v1/traces`, `/v1/metrics`, `/v1/logs`), reads its body
//! whole, counts it, and answers 200 with an empty protobuf message (a valid empty
//! `Export…ServiceResponse`). Nothing is decoded: the cell measures what exporting costs
//! the server, and the receiver's own work runs on the driver's core, not the server's.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the receiver has been sent so far.
#[derive(Default)]
pub struct Received {
    /// Export requests whose body was read whole.
    pub exports: AtomicU64,
    /// Their bodies' bytes, as sent (compressed or not).
    pub bytes: AtomicU64,
}

/// A running receiver: its base URL (what the server is given as `--otel`) and its
/// counts. It runs on a thread of its own for the rest of the driver's life.
pub struct Receiver {
    pub url: String,
    pub received: Arc<Received>,
}

impl Receiver {
    /// Binds a loopback port and serves it on a thread with a one-thread runtime.
    pub fn start() -> Result<Receiver, String> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .map_err(|e| format!("the OTLP receiver's port: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("the OTLP receiver's port: {e}"))?;
        let addr: SocketAddr = listener
            .local_addr()
            .map_err(|e| format!("the OTLP receiver's port: {e}"))?;
        let received = Arc::new(Received::default());
        let counts = Arc::clone(&received);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("the OTLP receiver's runtime: {e}"))?;
        std::thread::Builder::new()
            .name("otlp-receiver".into())
            .spawn(move || runtime.block_on(serve(listener, counts)))
            .map_err(|e| format!("the OTLP receiver's thread: {e}"))?;
        Ok(Receiver {
            url: format!("http://{addr}"),
            received,
        })
    }
}

async fn serve(listener: std::net::TcpListener, received: Arc<Received>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let received = Arc::clone(&received);
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let received = Arc::clone(&received);
                async move { answer(request, &received).await }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn answer(
    request: Request<Incoming>,
    received: &Received,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let known = request.method() == hyper::Method::POST
        && matches!(
            request.uri().path(),
            "/v1/traces" | "/v1/metrics" | "/v1/logs"
        );
    let body = request.into_body().collect().await?.to_bytes();
    if !known {
        let mut response = Response::new(Full::new(Bytes::new()));
        *response.status_mut() = StatusCode::NOT_FOUND;
        return Ok(response);
    }
    received.exports.fetch_add(1, Ordering::Relaxed);
    received
        .bytes
        .fetch_add(body.len() as u64, Ordering::Relaxed);
    let mut response = Response::new(Full::new(Bytes::new()));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/x-protobuf"),
    );
    Ok(response)
}
