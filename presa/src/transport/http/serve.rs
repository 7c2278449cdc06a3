//! Serving the endpoint on a listener: presa's own accept loop, which bounds every
//! connection and drains them all, with a deadline, when serving stops.
//!
//! - **How many**: at most `max_connections` are open; past it the loop stops accepting
//!   until one closes (new connections wait in the kernel's backlog), so the process
//!   never runs out of file descriptors for its own sake.
//! - **How long each may wait**: a connection must deliver a request's headers within
//!   `header_read_timeout` of its first byte (of being accepted, for the first request),
//!   may stay idle between requests for `idle_timeout`, and a write that makes no
//!   progress for `write_timeout` (a client that stopped reading) ends it. A request
//!   being served has no deadline here: its body has `body_timeout`, and a handler or
//!   an event stream runs as long as it needs.
//! - **Stopping**: on the caller's future or a signal ([`Stop`]) the loop stops
//!   accepting, subscription streams end, every connection finishes the request it is
//!   serving and closes, and whatever is still running after `shutdown_grace` is
//!   dropped, which cancels its handler.
//!
//! The deadlines are kept per connection in a [`Watch`] that the connection's I/O and
//! its requests update (a clock read and a few atomic stores per request); one sweeper
//! task per listener ends the connections past them.

use super::HttpConfig;
use crate::server::Server;
use crate::transport::shutdown::Stop;
use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// The largest read buffer of a connection: what one request's headers may take (hyper
/// answers 431 past it). Bodies stream through it in pieces of at most this size.
pub(super) const MAX_HEADER_BYTES: usize = 32 * 1024;

/// How long the accept loop pauses after an error that is not one connection's (out of
/// file descriptors, say) before it tries again.
const ACCEPT_PAUSE: Duration = Duration::from_millis(50);

/// A connection's phase, for its deadlines.
const HEAD: u8 = 0;
const IDLE: u8 = 1;
const BUSY: u8 = 2;

/// One connection's deadlines, in milliseconds on the listener's [`Clock`] (0: none).
struct Watch {
    clock: Clock,
    limits: Limits,
    /// [`HEAD`], [`IDLE`] or [`BUSY`].
    phase: AtomicU8,
    /// When the connection ends unless a request's headers arrive (phase `HEAD` or
    /// `IDLE`).
    deadline: AtomicU64,
    /// When the connection ends unless a write that is waiting makes progress.
    write_deadline: AtomicU64,
    /// Cancelled to end the connection at once.
    kill: CancellationToken,
}

impl Watch {
    fn new(clock: Clock, limits: Limits) -> Watch {
        Watch {
            phase: AtomicU8::new(HEAD),
            deadline: AtomicU64::new(clock.after(limits.header_read)),
            write_deadline: AtomicU64::new(0),
            kill: CancellationToken::new(),
            clock,
            limits,
        }
    }

    /// A request's headers arrived: it is being served, with no deadline here.
    fn busy(&self) {
        self.phase.store(BUSY, Ordering::Relaxed);
        self.deadline.store(0, Ordering::Relaxed);
    }

    /// A response was sent whole: the connection waits for the next request.
    fn idle(&self) {
        self.deadline
            .store(self.clock.after(self.limits.idle), Ordering::Relaxed);
        self.phase.store(IDLE, Ordering::Relaxed);
    }

    /// The first bytes of a request after an idle wait: its headers are due.
    fn reading_head(&self) {
        if self.phase.load(Ordering::Relaxed) == IDLE {
            self.deadline
                .store(self.clock.after(self.limits.header_read), Ordering::Relaxed);
            self.phase.store(HEAD, Ordering::Relaxed);
        }
    }

    /// Whether a deadline has passed at `now`.
    fn expired(&self, now: u64) -> bool {
        let passed = |d: &AtomicU64| {
            let at = d.load(Ordering::Relaxed);
            at != 0 && now >= at
        };
        (self.phase.load(Ordering::Relaxed) != BUSY && passed(&self.deadline))
            || passed(&self.write_deadline)
    }
}

/// The connection deadlines of [`HttpConfig`].
#[derive(Clone, Copy)]
struct Limits {
    header_read: Duration,
    idle: Duration,
    write: Duration,
}

/// Milliseconds since the listener began (never 0, which means "no deadline").
#[derive(Clone, Copy)]
struct Clock(Instant);

impl Clock {
    fn now(self) -> u64 {
        u64::try_from(self.0.elapsed().as_millis())
            .unwrap_or(u64::MAX)
            .saturating_add(1)
    }

    fn after(self, wait: Duration) -> u64 {
        self.now()
            .saturating_add(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX))
    }
}

/// A connection's socket, reporting to its [`Watch`]: the first bytes after an idle
/// wait, and writes that wait.
struct Watched {
    tcp: TcpStream,
    watch: Arc<Watch>,
    /// Whether a write is waiting (its deadline set).
    stalled: bool,
}

impl Watched {
    /// Notes a write's outcome: a wait arms the write deadline, progress disarms it.
    fn wrote<T>(&mut self, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match (&poll, self.stalled) {
            (Poll::Pending, false) => {
                let at = self.watch.clock.after(self.watch.limits.write);
                self.watch.write_deadline.store(at, Ordering::Relaxed);
                self.stalled = true;
            }
            (Poll::Ready(_), true) => {
                self.watch.write_deadline.store(0, Ordering::Relaxed);
                self.stalled = false;
            }
            _ => {}
        }
        poll
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.tcp).poll_read(cx, buf))?;
        if buf.filled().len() > before {
            self.watch.reading_head();
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.tcp).poll_write(cx, buf);
        self.wrote(poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs);
        self.wrote(poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.tcp).poll_flush(cx);
        self.wrote(poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.tcp).poll_shutdown(cx);
        self.wrote(poll)
    }
}

/// A response's body, which marks its connection idle once sent (or dropped).
struct Tracked {
    body: Body,
    watch: Arc<Watch>,
}

impl http_body::Body for Tracked {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.watch.idle();
    }
}

/// Ends the connections past their deadlines, every `every`, until `done`.
async fn sweep(
    clock: Clock,
    every: Duration,
    mut added: mpsc::UnboundedReceiver<Weak<Watch>>,
    done: CancellationToken,
) {
    let mut watched: Vec<Weak<Watch>> = Vec::new();
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = done.cancelled() => return,
            _ = tick.tick() => {}
        }
        while let Ok(watch) = added.try_recv() {
            watched.push(watch);
        }
        let now = clock.now();
        watched.retain(|watch| {
            let Some(watch) = watch.upgrade() else {
                return false;
            };
            if watch.expired(now) {
                watch.kill.cancel();
                return false;
            }
            true
        });
    }
}

/// How often the sweeper looks: a quarter of the shortest deadline, between 10 ms and 1 s.
fn sweep_period(limits: Limits) -> Duration {
    let shortest = limits.header_read.min(limits.idle).min(limits.write);
    (shortest / 4).clamp(Duration::from_millis(10), Duration::from_secs(1))
}

/// Serves one connection until it closes, its deadline passes, or (once `draining`)
/// it has finished the request it was serving.
async fn serve_connection(
    tcp: TcpStream,
    router: Router,
    watch: Arc<Watch>,
    draining: CancellationToken,
    _permit: OwnedSemaphorePermit,
) {
    let kill = watch.kill.clone();
    let io = TokioIo::new(Watched {
        tcp,
        watch: Arc::clone(&watch),
        stalled: false,
    });
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        watch.busy();
        let watch = Arc::clone(&watch);
        let mut router = router.clone();
        async move {
            let response =
                tower_service::Service::call(&mut router, request.map(Body::new)).await?;
            Ok::<_, std::convert::Infallible>(response.map(|body| Tracked { body, watch }))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .keep_alive(true)
        // The deadlines are the watch's: hyper's own header timer would also run
        // between requests, where `idle_timeout` applies.
        .header_read_timeout(None)
        .max_buf_size(MAX_HEADER_BYTES);
    let connection = builder.serve_connection(io, service);
    let mut connection = std::pin::pin!(connection);
    let mut drained = false;
    loop {
        tokio::select! {
            // An error is the connection's (a reset, a malformed request hyper answered):
            // nothing to do but close it.
            _ = connection.as_mut() => return,
            () = kill.cancelled() => return,
            () = draining.cancelled(), if !drained => {
                drained = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}

/// The soft limit on open file descriptors, when the system says (Linux). Read with one
/// call into a buffer the file fits in (a growing read would take several).
fn open_files_limit() -> Option<u64> {
    use std::io::Read;
    let mut buf = [0u8; 4096];
    let n = std::fs::File::open("/proc/self/limits")
        .ok()?
        .read(&mut buf)
        .ok()?;
    let limits = std::str::from_utf8(buf.get(..n)?).ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// Whether an accept error concerns only the connection being accepted.
fn connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
    )
}

impl Server {
    /// Serves over Streamable HTTP on `addr` with the default settings until SIGINT or
    /// SIGTERM, then drains as [`Server::serve_http_on`] does.
    pub async fn serve_http(&self, addr: impl tokio::net::ToSocketAddrs) -> io::Result<()> {
        let listener = TcpListener::bind(addr).await?;
        self.serve_http_on(listener, HttpConfig::default(), std::future::pending())
            .await
    }

    /// Serves over Streamable HTTP on a bound listener until `shutdown` completes or,
    /// unless `config.stop_on_signals` is off, the process gets SIGINT or SIGTERM. Then
    /// it stops accepting, ends subscription streams, lets each connection finish the
    /// request it is serving for up to `config.shutdown_grace`, drops what is still
    /// running after that (cancelling its handler), and returns.
    ///
    /// With [`HttpConfig::catalog`] on, a listener on an address that is not loopback is
    /// refused (an [`io::ErrorKind::InvalidInput`] error, before anything is served)
    /// unless [`HttpConfig::catalog_beyond_loopback`] is on too.
    ///
    /// Connections are bounded by `config.max_connections`, `header_read_timeout`,
    /// `idle_timeout` and `write_timeout`; accepted sockets get `TCP_NODELAY`.
    pub async fn serve_http_on(
        &self,
        listener: TcpListener,
        config: HttpConfig,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        super::catalog::check_address(&config, listener.local_addr()?)?;
        let stop = Stop::new(shutdown, config.stop_on_signals)?;
        let grace = config.shutdown_grace;
        let max_connections = config.max_connections.clamp(1, Semaphore::MAX_PERMITS);
        if let Some(limit) = open_files_limit()
            && limit < max_connections as u64 + 64
        {
            tracing::warn!(
                "max_connections is {max_connections} but the process may open only {limit} files: \
                 past that, accepting pauses until a connection closes (raise `ulimit -n`)"
            );
        }
        let limits = Limits {
            header_read: config.header_read_timeout,
            idle: config.idle_timeout,
            write: config.write_timeout,
        };
        let closing = CancellationToken::new();
        let router = self.router_closing(config, closing.clone());
        let clock = Clock(Instant::now());
        let (watches, added) = mpsc::unbounded_channel();
        let swept = CancellationToken::new();
        tokio::spawn(sweep(clock, sweep_period(limits), added, swept.clone()));
        // However serving ends (also when this future is dropped), the sweeper ends too.
        let _stop_sweeping = swept.drop_guard();
        let permits = Arc::new(Semaphore::new(max_connections));
        let draining = CancellationToken::new();
        let mut connections = JoinSet::new();
        let stop = stop.wait();
        let mut stop = std::pin::pin!(stop);
        loop {
            while connections.try_join_next().is_some() {}
            // At the cap, accept nothing until a connection closes.
            let permit = tokio::select! {
                biased;
                () = &mut stop => break,
                permit = Arc::clone(&permits).acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break,
                },
            };
            let accepted = tokio::select! {
                biased;
                () = &mut stop => break,
                accepted = listener.accept() => accepted,
            };
            let tcp = match accepted {
                Ok((tcp, _peer)) => tcp,
                Err(e) if connection_error(&e) => continue,
                Err(e) => {
                    tracing::warn!("accepting a connection failed: {e}");
                    tokio::select! {
                        () = &mut stop => break,
                        () = tokio::time::sleep(ACCEPT_PAUSE) => continue,
                    }
                }
            };
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::warn!("could not set TCP_NODELAY: {e}");
            }
            let watch = Arc::new(Watch::new(clock, limits));
            // The sweeper outlives the loop, so it still takes watches.
            let _ = watches.send(Arc::downgrade(&watch));
            connections.spawn(serve_connection(
                tcp,
                router.clone(),
                watch,
                draining.clone(),
                permit,
            ));
        }
        drop(listener);
        // Subscription streams end gracefully, also those that begin on a connection
        // still open; every connection finishes what it serves and closes.
        closing.cancel();
        self.close_streams();
        draining.cancel();
        let drained = async { while connections.join_next().await.is_some() {} };
        if tokio::time::timeout(grace, drained).await.is_err() {
            tracing::warn!(
                "{} connections still open {} ms after serving stopped were closed",
                connections.len(),
                grace.as_millis()
            );
            connections.shutdown().await;
        }
        Ok(())
    }
}
