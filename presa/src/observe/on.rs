//! The build with `otel`: the request span's parent from `_meta`, links, and every metric
//! presa records, through the OpenTelemetry API.
//!
//! The instruments are made once, from the meter [`start_metrics`] is given
//! (`otel::Telemetry::install` gives the global provider's); until then every record is
//! a no-op, so a build with the feature but no telemetry installed records nothing. The duration histogram and the requests in flight are recorded by
//! [`MetricsLayer`] from the request spans themselves: the span is the one record of a
//! request's attributes, and the layer reads them at its start and end.
//!
//! presa's own metrics (the conventions name only the duration):
//!
//! | name | instrument | unit | attributes |
//! | --- | --- | --- | --- |
//! | `mcp.server.operation.duration` | histogram | `s` | the conventions' |
//! | `presa.server.active_requests` | observable up-down counter | `{request}` | `mcp.method.name` |
//! | `presa.server.rejections` | counter | `{request}` | `rpc.response.status_code` |
//! | `presa.subscriptions.open_streams` | up-down counter | `{stream}` | |
//! | `presa.subscriptions.dropped_events` | counter | `{event}` | |
//! | `presa.tasks.status_changes` | counter | `{task}` | `presa.task.status` |
//! | `presa.request_state.failures` | counter | `{failure}` | `presa.request_state.operation` (`seal`, `open`) |
//! | `presa.server.legacy_sessions` | up-down counter | `{session}` | |
//! | `presa.telemetry.dropped_spans` | counter | `{span}` | |

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, ObservableUpDownCounter, UpDownCounter};
use opentelemetry::propagation::{Extractor, TextMapCompositePropagator, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Instant;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The buckets of `mcp.server.operation.duration`, in seconds, as the conventions give
/// them.
pub(crate) const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Every instrument presa records into.
struct Instruments {
    duration: Histogram<f64>,
    /// Observed from [`ACTIVE`] when metrics are collected.
    _active: ObservableUpDownCounter<i64>,
    rejections: Counter<u64>,
    streams: UpDownCounter<i64>,
    dropped: Counter<u64>,
    #[cfg(feature = "tasks")]
    tasks: Counter<u64>,
    state_failures: Counter<u64>,
    sessions: UpDownCounter<i64>,
    dropped_spans: Counter<u64>,
}

/// The instruments, once [`start_metrics`] made them.
static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();

/// The instruments, when metrics were started.
fn instruments() -> Option<&'static Instruments> {
    INSTRUMENTS.get()
}

/// Makes every instrument from `meter`: metrics are recorded from now on. Only the first
/// call counts (the instruments live as long as the process).
pub(crate) fn start_metrics(meter: &opentelemetry::metrics::Meter) {
    INSTRUMENTS.get_or_init(|| {
        Instruments {
            duration: meter
                .f64_histogram("mcp.server.operation.duration")
                .with_unit("s")
                .with_description("The duration of an MCP request as the server observed it, from its admission to its answer")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            _active: meter
                .i64_observable_up_down_counter("presa.server.active_requests")
                .with_unit("{request}")
                .with_description("MCP requests being served")
                .with_callback(|observer| {
                    for (method, n) in active().iter() {
                        observer.observe(*n, &[KeyValue::new("mcp.method.name", Arc::clone(method))]);
                    }
                })
                .build(),
            rejections: meter
                .u64_counter("presa.server.rejections")
                .with_unit("{request}")
                .with_description("Requests answered with a JSON-RPC error, by its code")
                .build(),
            streams: meter
                .i64_up_down_counter("presa.subscriptions.open_streams")
                .with_unit("{stream}")
                .with_description("subscriptions/listen streams open")
                .build(),
            dropped: meter
                .u64_counter("presa.subscriptions.dropped_events")
                .with_unit("{event}")
                .with_description("Events dropped because a listener's queue was full")
                .build(),
            #[cfg(feature = "tasks")]
            tasks: meter
                .u64_counter("presa.tasks.status_changes")
                .with_unit("{task}")
                .with_description("Tasks entering a status (working, input_required, completed, failed, cancelled)")
                .build(),
            state_failures: meter
                .u64_counter("presa.request_state.failures")
                .with_unit("{failure}")
                .with_description("Request states that could not be sealed, or that were refused when opened")
                .build(),
            sessions: meter
                .i64_up_down_counter("presa.server.legacy_sessions")
                .with_unit("{session}")
                .with_description("Legacy (initialize-based) sessions open")
                .build(),
            dropped_spans: meter
                .u64_counter("presa.telemetry.dropped_spans")
                .with_unit("{span}")
                .with_description("Spans dropped because presa's span exporter's queue was full")
                .build(),
        }
    });
}

/// `_meta`'s three W3C members, as a propagator reads them.
struct MetaCarrier<'a>([(&'static str, Option<&'a str>); 3]);

impl Extractor for MetaCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| *k == key).and_then(|(_, v)| *v)
    }

    fn keys(&self) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(_, v)| v.is_some())
            .map(|(k, _)| *k)
            .collect()
    }
}

/// The W3C trace context and baggage propagators, in that order.
fn propagator() -> &'static TextMapCompositePropagator {
    static PROPAGATOR: OnceLock<TextMapCompositePropagator> = OnceLock::new();
    PROPAGATOR.get_or_init(|| {
        TextMapCompositePropagator::new(vec![
            Box::new(TraceContextPropagator::new()),
            Box::new(BaggagePropagator::new()),
        ])
    })
}

/// Makes the context `_meta` carries (`traceparent`, `tracestate`, `baggage`) the span's
/// parent. Called before the span is first entered: an OpenTelemetry span's parent is
/// fixed once it starts. A `traceparent` that does not parse leaves the span a root.
pub(crate) fn set_parent(
    span: &super::Span,
    traceparent: Option<&str>,
    tracestate: Option<&str>,
    baggage: Option<&str>,
) {
    if span.is_disabled() || (traceparent.is_none() && baggage.is_none()) {
        return;
    }
    let carrier = MetaCarrier([
        ("traceparent", traceparent),
        ("tracestate", tracestate),
        ("baggage", baggage),
    ]);
    let cx = propagator().extract(&carrier);
    if let Some(record) = &span.record {
        let parent = cx.span().span_context().clone();
        record.set_parent(&parent, cx.clone());
    }
    // Without the tracing-opentelemetry layer there is no span to parent: nothing to do.
    if !span.tracing.is_disabled() {
        let _ = span.tracing.set_parent(cx);
    }
}

/// The span's own context as a W3C `traceparent`, to link later work to it.
pub(crate) fn traceparent_of(span: &super::Span) -> Option<String> {
    let sc = match &span.record {
        Some(record) => record.span_context(),
        None if span.tracing.is_disabled() => return None,
        None => span.tracing.context().span().span_context().clone(),
    };
    sc.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        )
    })
}

/// Names the span: `otel.name` while the OpenTelemetry span is still to start, and the
/// started span itself once it has (entering a span starts it, and `tracing-opentelemetry`
/// renames only spans not yet started).
pub(crate) fn rename(span: &tracing::Span, name: &str) {
    span.record("otel.name", name);
    span.context().span().update_name(name.to_owned());
}

/// Links the span to the one a `traceparent` names (one made by [`traceparent_of`]).
pub(crate) fn link(span: &super::Span, traceparent: &str) {
    if span.is_disabled() {
        return;
    }
    let carrier = MetaCarrier([
        ("traceparent", Some(traceparent)),
        ("tracestate", None),
        ("baggage", None),
    ]);
    let cx = TraceContextPropagator::new().extract(&carrier);
    let to = cx.span().span_context().clone();
    if let Some(record) = &span.record {
        record.link(to.clone());
    }
    if !span.tracing.is_disabled() {
        span.tracing.add_link(to);
    }
}

/// The requests in flight by method, counted here and observed when metrics are
/// collected: two uncontended lock-and-adds per request instead of two measurements.
/// A method keeps its entry at zero once seen (there are few).
static ACTIVE: Mutex<Vec<(Arc<str>, i64)>> = Mutex::new(Vec::new());

fn active() -> std::sync::MutexGuard<'static, Vec<(Arc<str>, i64)>> {
    ACTIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Adds `by` to the requests of `method` in flight.
fn count_active(method: &str, by: i64) {
    let mut active = active();
    match active.iter_mut().find(|(m, _)| &**m == method) {
        Some((_, n)) => *n += by,
        None => active.push((method.into(), by)),
    }
}

/// A request started: one more in flight.
pub(crate) fn request_started(method: &str) {
    if instruments().is_some() {
        count_active(method, 1);
    }
}

/// A request ended after `elapsed`, with these attributes (the duration metric's): its
/// duration, and one fewer in flight.
pub(crate) fn request_ended(method: &str, elapsed: std::time::Duration, attributes: &[KeyValue]) {
    if let Some(i) = instruments() {
        i.duration.record(elapsed.as_secs_f64(), attributes);
        count_active(method, -1);
    }
}

/// A request answered with a JSON-RPC error.
pub(crate) fn rejected(code: i64) {
    if let Some(i) = instruments() {
        let mut digits = itoa::Buffer::new();
        let code = digits.format(code).to_owned();
        i.rejections
            .add(1, &[KeyValue::new("rpc.response.status_code", code)]);
    }
}

/// A `subscriptions/listen` stream opened.
pub(crate) fn listen_opened() {
    if let Some(i) = instruments() {
        i.streams.add(1, &[]);
    }
}

/// A `subscriptions/listen` stream closed.
pub(crate) fn listen_closed() {
    if let Some(i) = instruments() {
        i.streams.add(-1, &[]);
    }
}

/// An event a listener's full queue could not take.
pub(crate) fn listen_event_dropped() {
    if let Some(i) = instruments() {
        i.dropped.add(1, &[]);
    }
}

/// A task entered `status`.
#[cfg(feature = "tasks")]
pub(crate) fn task_status(status: &'static str) {
    if let Some(i) = instruments() {
        i.tasks
            .add(1, &[KeyValue::new("presa.task.status", status)]);
    }
}

/// A request state that could not be sealed (`seal`) or was refused (`open`).
pub(crate) fn state_failure(operation: &'static str) {
    if let Some(i) = instruments() {
        i.state_failures.add(
            1,
            &[KeyValue::new("presa.request_state.operation", operation)],
        );
    }
}

/// A finished span presa's exporter had no room for.
pub(crate) fn span_dropped() {
    if let Some(i) = instruments() {
        i.dropped_spans.add(1, &[]);
    }
}

/// A legacy session opened.
pub(crate) fn session_opened() {
    if let Some(i) = instruments() {
        i.sessions.add(1, &[]);
    }
}

/// A legacy session ended.
pub(crate) fn session_closed() {
    if let Some(i) = instruments() {
        i.sessions.add(-1, &[]);
    }
}

/// The attributes of `mcp.server.operation.duration` that a request span carries.
pub(crate) const DURATION_KEYS: [&str; 10] = [
    "mcp.method.name",
    "error.type",
    "gen_ai.tool.name",
    "gen_ai.prompt.name",
    "gen_ai.operation.name",
    "mcp.protocol.version",
    "network.transport",
    "network.protocol.name",
    "network.protocol.version",
    "rpc.response.status_code",
];

/// What [`MetricsLayer`] keeps of one request span.
struct Measure {
    started: Instant,
    method: String,
    attributes: Vec<KeyValue>,
}

impl Visit for Measure {
    fn record_str(&mut self, field: &Field, value: &str) {
        let name = field.name();
        if let Some(key) = DURATION_KEYS.iter().find(|k| **k == name) {
            if *key == "mcp.method.name" {
                value.clone_into(&mut self.method);
            }
            // A later record of the same field replaces the earlier one.
            self.attributes.retain(|kv| kv.key.as_str() != *key);
            self.attributes.push(KeyValue::new(*key, value.to_owned()));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if DURATION_KEYS.contains(&field.name()) {
            self.record_str(field, &format!("{value:?}"));
        }
    }
}

/// A `tracing` layer that records `mcp.server.operation.duration` and
/// `presa.server.active_requests` from presa's request spans: the attributes as the span
/// has them when it closes, the duration from its creation to its close.
pub(crate) struct MetricsLayer;

impl MetricsLayer {
    fn is_request(meta: &tracing::Metadata<'_>) -> bool {
        meta.name() == super::SPAN_NAME && meta.target() == "presa::observe"
    }
}

impl<S> tracing_subscriber::Layer<S> for MetricsLayer
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !Self::is_request(attrs.metadata()) {
            return;
        }
        // Nothing to measure into before metrics are started.
        if instruments().is_none() {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        let mut measure = Measure {
            started: Instant::now(),
            method: String::new(),
            attributes: Vec::with_capacity(8),
        };
        attrs.record(&mut measure);
        request_started(&measure.method);
        span.extensions_mut().insert(measure);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        if !Self::is_request(span.metadata()) {
            return;
        }
        if let Some(measure) = span.extensions_mut().get_mut::<Measure>() {
            values.record(measure);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(measure) = span.extensions_mut().remove::<Measure>() else {
            return;
        };
        request_ended(
            &measure.method,
            measure.started.elapsed(),
            &measure.attributes,
        );
    }
}
