//! The cross-replica fan-out's cell: the latency from a resource update published on one
//! replica to its delivery on the `subscriptions/listen` streams of another, both
//! sharing one PostgreSQL database (`PgStore::fanout`). It prints one JSON line.
//!
//! ```text
//! bench-stores fanout --streams N --events E
//! ```
//!
//! Two servers (replicas A and B), each over its own `PgStore` on one throwaway
//! PostgreSQL database, each built with that store's fan-out and resource events on, and
//! one resource, [`PARENT`]. A serves HTTP on loopback; N clients open a
//! `subscriptions/listen` stream to it each (hyper's HTTP/1 client, one connection per
//! stream, the full 2026-07-28 request), subscribed to [`PARENT`], which brings them the
//! updates of every URI under it. Once every stream is acknowledged, B publishes updates
//! of `PARENT/warm` until every stream has heard one (A's fan-out listens by then). Then
//! B publishes E updates, `PARENT/0` … `PARENT/E-1`, one at a time: each [`SPACING`]
//! after the one before it has been heard on every stream, so each is a delivery of its
//! own and none waits behind another. Every stream reads every update: each sample is the
//! time from B's `notify_resource_updated` call to the read of the SSE frame that ended
//! that update's event on one stream, so there are N × E samples, and p50 and p99 are
//! over all of them. The streams are read in the process that publishes, on the same
//! runtime, so the reading of N streams is part of each delivery's latency. An update
//! missing or repeated on any stream, or one of a URI never published, ends the run with
//! an error, never a number. (Their order on a stream is not checked: updates pending on
//! a listener together are written in the order of its mailbox's set.)

use crate::postgres;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use presa::tasks::PgStore;
use presa::{HttpConfig, Implementation, Resource, ResourceRead, Server};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

/// The resource every stream subscribes to; the updates are of URIs under it.
const PARENT: &str = "bench://events";

/// Time between an update's being heard on every stream and the next one's publishing:
/// each update is delivered on its own, never queued behind the one before it, so the
/// samples are latencies of a delivery and not of a backlog.
const SPACING: Duration = Duration::from_millis(5);

/// How often the publisher, waiting for an update to be heard everywhere, checks that no
/// reader failed and that its patience lasts.
const CHECK_EVERY: Duration = Duration::from_millis(100);

/// Longest wait for anything the run waits on: the streams' acknowledgements, the first
/// update heard on every stream, the last one.
const PATIENCE: Duration = Duration::from_secs(60);

/// How often B publishes a warm-up update until every stream has heard one.
const WARM_EVERY: Duration = Duration::from_millis(100);

/// Streams being opened at once.
const OPENING: usize = 64;

/// The command line of the fan-out mode.
pub struct Options {
    streams: usize,
    events: usize,
}

impl Options {
    /// `--streams N --events E`, both positive.
    pub fn parse(args: &[String]) -> Result<Options, String> {
        let mut streams = None;
        let mut events = None;
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it
                .next()
                .ok_or_else(|| format!("{flag}: missing its value"))?;
            let n = value
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{flag} {value}: not a positive number"));
            match flag.as_str() {
                "--streams" => streams = Some(n?),
                "--events" => events = Some(n?),
                other => return Err(format!("unknown flag {other}")),
            }
        }
        Ok(Options {
            streams: streams.ok_or("missing --streams")?,
            events: events.ok_or("missing --events")?,
        })
    }
}

/// One replica over `store`'s database: resource events on, the fan-out of the store,
/// and the parent resource.
fn replica(store: &PgStore) -> Result<Server, String> {
    Server::builder(Implementation::new("bench-fanout", "0.0.0"))
        .resource(
            Resource::new(PARENT, "events")
                .description("The parent of the updated URIs")
                .mime_type("text/plain")
                .handler(|_: ResourceRead| async { "events" }),
        )
        .resource_notifications(true)
        .fanout(store.fanout())
        .build()
        .map_err(|e| format!("the server does not build: {e}"))
}

/// One run: its JSON line, or `None` where PostgreSQL is not installed (said on stderr).
pub async fn run(options: &Options) -> Result<Option<Value>, String> {
    let Some(pg) = postgres::Postgres::start().await else {
        eprintln!("bench-stores: the fan-out is not measured (above: why)");
        return Ok(None);
    };
    let connect = || async {
        PgStore::connect(&pg.url())
            .await
            .map_err(|e| format!("PgStore::connect: {e}"))
    };
    let (sa, sb) = (connect().await?, connect().await?);
    let (a, b) = (replica(&sa)?, replica(&sb)?);

    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("binding loopback: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let config = HttpConfig::default()
        .max_streams(options.streams)
        .stop_on_signals(false);
    let (stop_serving, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = {
        let a = a.clone();
        tokio::spawn(async move {
            a.serve_http_on(listener, config, async {
                let _ = stopped.await;
            })
            .await
        })
    };

    let result = measure(options, addr, &b).await;
    let _ = stop_serving.send(());
    match serving.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(format!("serving A: {e}")),
        Err(e) => return Err(format!("serving A: {e}")),
    }
    drop((a, b, sa, sb));
    drop(pg);
    result.map(Some)
}

/// What the streams' readers share with the publisher.
struct Shared {
    /// Streams that have heard a warm-up update.
    warm: AtomicUsize,
    /// Streams that have heard each measured update, by its sequence number.
    delivered: Vec<AtomicUsize>,
    /// Told when an update has been heard on every stream.
    everywhere: Notify,
    streams: usize,
    events: usize,
}

async fn measure(options: &Options, addr: SocketAddr, b: &Server) -> Result<Value, String> {
    let shared = Arc::new(Shared {
        warm: AtomicUsize::new(0),
        delivered: (0..options.events).map(|_| AtomicUsize::new(0)).collect(),
        everywhere: Notify::new(),
        streams: options.streams,
        events: options.events,
    });
    let (stop, stopping) = watch::channel(false);

    // Every stream open and acknowledged, at most OPENING being opened at once.
    let mut opening = JoinSet::new();
    let mut bodies = Vec::with_capacity(options.streams);
    for id in 0..options.streams {
        if opening.len() >= OPENING
            && let Some(opened) = opening.join_next().await
        {
            bodies.push(opened.map_err(|e| format!("opening a stream: {e}"))??);
        }
        opening.spawn(async move {
            tokio::time::timeout(PATIENCE, listen(addr, id))
                .await
                .map_err(|_| format!("stream {id} not acknowledged within {PATIENCE:?}"))?
        });
    }
    while let Some(opened) = opening.join_next().await {
        bodies.push(opened.map_err(|e| format!("opening a stream: {e}"))??);
    }
    let mut readers = JoinSet::new();
    for (stream, opened) in bodies.into_iter().enumerate() {
        readers.spawn(read(stream, opened, shared.clone(), stopping.clone()));
    }

    // Warm-up: B publishes until every stream on A has heard it.
    let warm_uri = format!("{PARENT}/warm");
    let started = Instant::now();
    while shared.warm.load(Ordering::Acquire) < options.streams {
        if started.elapsed() > PATIENCE {
            return Err(format!(
                "{} of {} streams heard B within {PATIENCE:?}",
                shared.warm.load(Ordering::Acquire),
                options.streams
            ));
        }
        if let Some(failed) = finished_early(&mut readers) {
            return Err(failed);
        }
        b.notify_resource_updated(&warm_uri);
        tokio::time::sleep(WARM_EVERY).await;
    }

    // The measured updates, one at a time: each once the one before it has been heard on
    // every stream, and SPACING after that.
    let mut published = Vec::with_capacity(options.events);
    for seq in 0..options.events {
        tokio::time::sleep(SPACING).await;
        let uri = format!("{PARENT}/{seq}");
        let at = Instant::now();
        published.push(at);
        b.notify_resource_updated(&uri);
        loop {
            tokio::select! {
                _ = shared.everywhere.notified() => break,
                _ = tokio::time::sleep(CHECK_EVERY) => {
                    if let Some(failed) = finished_early(&mut readers) {
                        return Err(failed);
                    }
                    if at.elapsed() > PATIENCE {
                        return Err(format!(
                            "update {seq} heard on {} of {} streams within {PATIENCE:?}",
                            shared.delivered[seq].load(Ordering::Acquire),
                            options.streams
                        ));
                    }
                }
            }
        }
    }
    let _ = stop.send(true);

    let mut latencies = Vec::with_capacity(options.streams * options.events);
    let mut missing = 0;
    while let Some(heard) = readers.join_next().await {
        let heard = heard.map_err(|e| format!("a stream's reader: {e}"))??;
        for (seq, at) in heard.iter().enumerate() {
            match at {
                Some(at) => latencies.push(
                    u64::try_from(at.saturating_duration_since(published[seq]).as_nanos())
                        .unwrap_or(u64::MAX),
                ),
                None => missing += 1,
            }
        }
    }
    if missing > 0 {
        return Err(format!(
            "{missing} of {} deliveries missing after {PATIENCE:?}",
            options.streams * options.events
        ));
    }
    latencies.sort_unstable();
    Ok(json!({
        "kind": "fanout",
        "server": "postgres",
        "streams": options.streams,
        "events": options.events,
        "samples": latencies.len(),
        "p50_us": crate::quantile_us(&latencies, 0.50),
        "p99_us": crate::quantile_us(&latencies, 0.99),
    }))
}

/// The error of a reader that ended before it was told to stop (a reader ends early only
/// on an error).
fn finished_early(readers: &mut JoinSet<Result<Vec<Option<Instant>>, String>>) -> Option<String> {
    match readers.try_join_next()? {
        Ok(Err(e)) => Some(e),
        Ok(Ok(_)) => Some("a stream's reader ended early".into()),
        Err(e) => Some(format!("a stream's reader: {e}")),
    }
}

/// An open listen stream: its connection's sender (held, so the connection stays), what
/// was read after its acknowledgement, and its body.
struct Opened {
    _sender: SendRequest<Full<Bytes>>,
    buffer: Vec<u8>,
    body: Incoming,
}

/// Opens a `subscriptions/listen` stream to A subscribed to [`PARENT`] and waits for
/// its acknowledgement.
async fn listen(addr: SocketAddr, id: usize) -> Result<Opened, String> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connecting: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let (mut sender, conn) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": {
            "notifications": {"resourceSubscriptions": [PARENT]},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "presa-bench", "version": "0.0.0"},
            },
        },
    });
    let request = Request::post("/mcp")
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(Full::new(Bytes::from(body.to_string())))
        .map_err(|e| e.to_string())?;
    sender.ready().await.map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    if response.status() != 200 {
        let status = response.status();
        let body = response.into_body().collect().await.map(|b| b.to_bytes());
        return Err(format!("listen: HTTP {status}: {body:?}"));
    }
    let mut body = response.into_body();
    let mut buffer = Vec::new();
    loop {
        if let Some(event) = next_event(&mut buffer) {
            let m = message(&event)?;
            if m["method"] == "notifications/subscriptions/acknowledged" {
                return Ok(Opened {
                    _sender: sender,
                    buffer,
                    body,
                });
            }
            return Err(format!("listen: before the acknowledgement, {m}"));
        }
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    buffer.extend_from_slice(data);
                }
            }
            Some(Err(e)) => return Err(format!("listen: {e}")),
            None => {
                return Err(format!(
                    "listen: the stream ended before the acknowledgement: {}",
                    String::from_utf8_lossy(&buffer)
                ));
            }
        }
    }
}

/// Reads stream `stream` until told to stop: the time each measured update was read at
/// (by its sequence number), counting the stream in `shared.warm` at its first warm-up
/// update and in `shared.delivered` at each measured one. Anything else than
/// updates of [`PARENT`]'s URIs, each measured one once, is an error. Their order is not
/// checked: updates pending on a stream together are a set (presa's listener mailbox),
/// written in the set's order rather than the order they were published in.
async fn read(
    stream: usize,
    opened: Opened,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) -> Result<Vec<Option<Instant>>, String> {
    let Opened {
        _sender,
        mut buffer,
        mut body,
    } = opened;
    let mut heard: Vec<Option<Instant>> = vec![None; shared.events];
    let mut warm = false;
    let mut at = Instant::now();
    loop {
        while let Some(event) = next_event(&mut buffer) {
            let m = message(&event)?;
            let uri = m["params"]["uri"].as_str().unwrap_or_default();
            if m["method"] != "notifications/resources/updated" {
                return Err(format!("stream {stream}: unexpected {m}"));
            }
            let tail = uri
                .strip_prefix(PARENT)
                .and_then(|t| t.strip_prefix('/'))
                .ok_or_else(|| format!("stream {stream}: an update of another URI: {m}"))?;
            if tail == "warm" {
                if !warm {
                    warm = true;
                    shared.warm.fetch_add(1, Ordering::AcqRel);
                }
                continue;
            }
            let seq = tail
                .parse::<usize>()
                .ok()
                .filter(|s| *s < shared.events)
                .ok_or_else(|| format!("stream {stream}: an update never published: {m}"))?;
            if heard[seq].replace(at).is_some() {
                return Err(format!("stream {stream}: update {seq} twice"));
            }
            if shared.delivered[seq].fetch_add(1, Ordering::AcqRel) + 1 == shared.streams {
                shared.everywhere.notify_one();
            }
        }
        tokio::select! {
            frame = body.frame() => match frame {
                Some(Ok(frame)) => {
                    at = Instant::now();
                    if let Some(data) = frame.data_ref() {
                        buffer.extend_from_slice(data);
                    }
                }
                Some(Err(e)) => return Err(format!("stream {stream}: {e}")),
                None => return Err(format!("stream {stream}: ended")),
            },
            _ = stop.changed() => return Ok(heard),
        }
    }
}

/// The next whole SSE event in `buffer` (taken out of it): its `data` lines joined, or
/// an empty string for an event without data (a keepalive comment).
fn next_event(buffer: &mut Vec<u8>) -> Option<String> {
    loop {
        let end = buffer.windows(2).position(|w| w == b"\n\n")?;
        let event: Vec<u8> = buffer.drain(..end + 2).collect();
        let text = String::from_utf8_lossy(&event);
        let data: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if !data.is_empty() {
            return Some(data.join("\n"));
        }
    }
}

/// The JSON-RPC message of an event's data.
fn message(data: &str) -> Result<Value, String> {
    serde_json::from_str(data).map_err(|e| format!("an event that is not JSON ({e}): {data:?}"))
}
