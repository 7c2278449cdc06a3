//! presa's span exporter: finished request spans queue here (bounded), and one thread
//! sends them in batches over OTLP/HTTP, as the SDK's batch span processor does, with the
//! same defaults and the same environment variables (`OTEL_BSP_SCHEDULE_DELAY`,
//! `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`,
//! `OTEL_EXPORTER_OTLP_TIMEOUT`, all in milliseconds or spans).
//!
//! A request never waits for the exporter: a span that finds the queue full is dropped
//! and counted (`presa.telemetry.dropped_spans`), and a failed export is logged and its
//! batch dropped, as the SDK does.

use super::otlp::Header;
use crate::observe::record::{Record, Sink};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How the exporter batches, as the SDK's batch span processor's settings.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Batching {
    /// The longest a span waits before its batch is sent.
    pub(crate) delay: Duration,
    /// The most spans queued; more are dropped.
    pub(crate) max_queue: usize,
    /// The most spans in one request.
    pub(crate) max_batch: usize,
    /// How long one export may take.
    pub(crate) timeout: Duration,
}

impl Batching {
    /// The SDK's defaults, or the `OTEL_BSP_*` and `OTEL_EXPORTER_OTLP_TIMEOUT`
    /// environment variables where set.
    pub(crate) fn from_env() -> Batching {
        fn env(name: &str, default: u64) -> u64 {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(default)
        }
        let max_queue = usize::try_from(env("OTEL_BSP_MAX_QUEUE_SIZE", 2048))
            .unwrap_or(2048)
            .max(1);
        let max_batch = usize::try_from(env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512))
            .unwrap_or(512)
            .clamp(1, max_queue);
        // At least a millisecond between exports (0 would spin), and at most a day for
        // either setting (deadlines made from them never overflow).
        const DAY_MS: u64 = 86_400_000;
        Batching {
            delay: Duration::from_millis(env("OTEL_BSP_SCHEDULE_DELAY", 5000).clamp(1, DAY_MS)),
            max_queue,
            max_batch,
            timeout: Duration::from_millis(
                env("OTEL_EXPORTER_OTLP_TIMEOUT", 10_000).clamp(1, DAY_MS),
            ),
        }
    }
}

/// What the requests and the exporter's thread share.
struct Shared {
    queue: Mutex<Queue>,
    /// Signalled when a batch is full, a flush is asked for, or the exporter stops.
    wake: Condvar,
    /// Signalled when a flush is done.
    flushed: Condvar,
    batching: Batching,
}

#[derive(Default)]
struct Queue {
    spans: Vec<Arc<Record>>,
    /// Flushes asked for, and done (every span queued before the ask was sent).
    flush_asked: u64,
    flush_done: u64,
    stop: bool,
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The sink the requests' records end into.
struct Intake(Arc<Shared>);

impl Sink for Intake {
    fn accept(&self, span: Arc<Record>) {
        let shared = &self.0;
        let mut queue = shared.queue();
        if queue.spans.len() >= shared.batching.max_queue {
            drop(queue);
            crate::observe::span_dropped();
            return;
        }
        queue.spans.push(span);
        let full = queue.spans.len() == shared.batching.max_batch;
        drop(queue);
        if full {
            shared.wake.notify_one();
        }
    }
}

/// The exporter: its thread, and the handle to flush and stop it (dropping it stops it
/// too, after sending what is queued).
pub(crate) struct Exporter {
    shared: Arc<Shared>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Exporter {
    /// Starts the exporter's thread, sending to `url` (`…/v1/traces`); returns it and
    /// the sink for `observe::record::activate`.
    pub(crate) fn start(
        url: String,
        header: Header,
        batching: Batching,
    ) -> std::io::Result<(Exporter, Box<dyn Sink>)> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            flushed: Condvar::new(),
            batching,
        });
        let thread = std::thread::Builder::new()
            .name("presa-otlp-spans".into())
            .spawn({
                let shared = Arc::clone(&shared);
                move || run(&shared, &url, &header)
            })?;
        let sink = Box::new(Intake(Arc::clone(&shared)));
        Ok((
            Exporter {
                shared,
                thread: Mutex::new(Some(thread)),
            },
            sink,
        ))
    }

    /// Sends every span queued now, waiting for it (at most the export timeout per
    /// batch queued).
    pub(crate) fn flush(&self) {
        let shared = &self.shared;
        let mut queue = shared.queue();
        if queue.stop {
            return;
        }
        queue.flush_asked += 1;
        let ticket = queue.flush_asked;
        shared.wake.notify_one();
        let batches = queue.spans.len().div_ceil(shared.batching.max_batch).max(1);
        let wait = shared
            .batching
            .timeout
            .saturating_mul(u32::try_from(batches).unwrap_or(u32::MAX));
        let deadline = Instant::now()
            .checked_add(wait)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400));
        while queue.flush_done < ticket && !queue.stop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            queue = shared
                .flushed
                .wait_timeout(queue, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Sends what is queued and stops the thread.
    pub(crate) fn shutdown(&self) {
        self.flush();
        self.shared.queue().stop = true;
        self.shared.wake.notify_one();
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The exporter's thread: waits for a full batch, a flush, the delay or the stop, then
/// sends what is queued, a batch at a time.
fn run(shared: &Shared, url: &str, header: &Header) {
    let batching = shared.batching;
    // The client is made and dropped on this thread: reqwest's blocking client runs a
    // runtime of its own, which must not be dropped inside an async context.
    let client = match reqwest::blocking::Client::builder()
        .timeout(batching.timeout)
        .build()
    {
        Ok(client) => client,
        Err(e) => {
            tracing::warn!(error = %e, "OTLP span exporter: no HTTP client; spans are not exported");
            stop_draining(shared);
            return;
        }
    };
    let mut next = Instant::now() + batching.delay;
    loop {
        let (batch, ticket, stop) = {
            let mut queue = shared.queue();
            loop {
                let due = Instant::now() >= next;
                if queue.stop
                    || queue.spans.len() >= batching.max_batch
                    || queue.flush_asked > queue.flush_done
                    || due
                {
                    break;
                }
                let left = next.saturating_duration_since(Instant::now());
                queue = shared
                    .wake
                    .wait_timeout(queue, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            let ticket = queue.flush_asked;
            let flushing = ticket > queue.flush_done || queue.stop;
            // A flush (or the stop) takes everything queued; otherwise one batch.
            let take = if flushing {
                queue.spans.len()
            } else {
                queue.spans.len().min(batching.max_batch)
            };
            let batch: Vec<Arc<Record>> = queue.spans.drain(..take).collect();
            (batch, flushing.then_some(ticket), queue.stop)
        };
        for chunk in batch.chunks(batching.max_batch) {
            // A body of its own per request: the client takes it.
            let mut body = Vec::with_capacity(chunk.len() * 512 + 256);
            header.encode(chunk, &mut body);
            send(&client, url, body);
        }
        if batch.len() < batching.max_batch || ticket.is_some() {
            next = Instant::now() + batching.delay;
        }
        if let Some(ticket) = ticket {
            shared.queue().flush_done = ticket;
            shared.flushed.notify_all();
        }
        if stop {
            return;
        }
    }
}

/// Without a client nothing is sent: the thread marks every flush done and stops.
fn stop_draining(shared: &Shared) {
    let mut queue = shared.queue();
    queue.stop = true;
    queue.spans.clear();
    queue.flush_done = queue.flush_asked;
    drop(queue);
    shared.flushed.notify_all();
}

/// One export request; a failure is logged, and the batch is not sent again.
fn send(client: &reqwest::blocking::Client, url: &str, body: Vec<u8>) {
    let sent = client
        .post(url)
        .header("content-type", "application/x-protobuf")
        .body(body)
        .send();
    match sent {
        Ok(response) if response.status().is_success() => {}
        Ok(response) => {
            tracing::warn!(status = %response.status(), "OTLP span export refused; the batch is dropped");
        }
        Err(e) => {
            tracing::warn!(error = %e, "OTLP span export failed; the batch is dropped");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(n: usize) -> Arc<Record> {
        Arc::new(Record::server(
            &format!("span {n}"),
            "1",
            crate::observe::Network::InProcess,
        ))
    }

    fn shared(max_queue: usize, max_batch: usize) -> Arc<Shared> {
        Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            flushed: Condvar::new(),
            batching: Batching {
                delay: Duration::from_secs(3600),
                max_queue,
                max_batch,
                timeout: Duration::from_secs(1),
            },
        })
    }

    /// The queue holds `max_queue` spans and drops the next: a request never waits for
    /// the exporter, and the queue never grows past its bound.
    #[test]
    fn the_queue_holds_its_bound_and_drops_past_it() {
        let shared = shared(3, 3);
        let intake = Intake(Arc::clone(&shared));
        for n in 0..3 {
            intake.accept(span(n));
        }
        assert_eq!(shared.queue().spans.len(), 3, "at the bound: all held");
        intake.accept(span(3));
        let queue = shared.queue();
        assert_eq!(queue.spans.len(), 3, "past the bound: the new one dropped");
        assert_eq!(
            queue.spans[2].with_finished(|f| f.name.head.as_str().to_owned()),
            "span 2",
            "the held ones are the first"
        );
    }

    /// The settings come from the SDK's environment variables, with the SDK's defaults,
    /// and a batch is never larger than the queue.
    #[test]
    fn batching_defaults_are_the_sdks() {
        let b = Batching::from_env();
        // The variables are not set in the test environment.
        if std::env::var_os("OTEL_BSP_MAX_QUEUE_SIZE").is_none()
            && std::env::var_os("OTEL_BSP_MAX_EXPORT_BATCH_SIZE").is_none()
            && std::env::var_os("OTEL_BSP_SCHEDULE_DELAY").is_none()
        {
            assert_eq!(b.max_queue, 2048);
            assert_eq!(b.max_batch, 512);
            assert_eq!(b.delay, Duration::from_secs(5));
        }
        assert!(b.max_batch <= b.max_queue);
    }

    /// A flush with nothing to send and an exporter that cannot reach its collector
    /// still returns (bounded by the export timeout), and shutdown stops the thread.
    #[test]
    fn flush_and_shutdown_return_without_a_collector() {
        let header = super::super::otlp::Header::new(
            &opentelemetry_sdk::Resource::builder_empty().build(),
            "presa",
        );
        // Port 9 on loopback: nothing listens (discard), the connection is refused.
        let (exporter, sink) = Exporter::start(
            "http://127.0.0.1:9/v1/traces".into(),
            header,
            Batching {
                delay: Duration::from_secs(3600),
                max_queue: 8,
                max_batch: 4,
                timeout: Duration::from_secs(2),
            },
        )
        .expect("the exporter's thread starts");
        sink.accept(span(1));
        let started = Instant::now();
        exporter.flush();
        exporter.shutdown();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(exporter.shared.queue().spans.is_empty(), "flushed");
    }
}
