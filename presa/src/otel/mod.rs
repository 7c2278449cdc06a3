//! OpenTelemetry export, in one call (feature `otel`).
//!
//! ```no_run
//! # fn main() -> Result<(), presa::otel::TelemetryError> {
//! let _telemetry = presa::otel::Telemetry::otlp("http://127.0.0.1:4318")
//!     .service_name("notes")
//!     .install()?;
//! // … build and serve the server; dropping `_telemetry` flushes and shuts down.
//! # Ok(()) }
//! ```
//!
//! [`Telemetry::install`] installs, for the whole process: presa's span exporter, sending
//! each request's span in batches over OTLP/HTTP (protobuf, `POST {endpoint}/v1/traces`;
//! `export.rs` batches, `otlp.rs` writes the body from the request's record), a meter
//! provider exporting metrics every interval (`POST {endpoint}/v1/metrics`, cumulative),
//! the W3C trace context and baggage propagators as the global propagator, and a
//! `tracing` subscriber made of the OpenTelemetry layer (for the spans code inside a
//! request makes; their parent is the request's span) and a `fmt` layer on stderr
//! filtered by `RUST_LOG` (default `warn`). It must run before the server serves, and
//! once. [`Telemetry::sdk_spans`] exports request spans through `tracing-opentelemetry`
//! and the SDK's batch exporter instead (the same spans, at more CPU per request).
//!
//! Every request becomes a span named and attributed by the OpenTelemetry MCP semantic
//! conventions (kind SERVER; parent taken from `params._meta` `traceparent`,
//! `tracestate` and `baggage`), and is measured in `mcp.server.operation.duration`;
//! presa's own metrics are listed in the book. Neither ever records argument values,
//! results or tokens. [`Telemetry::resource_uris`] opts in to `mcp.resource.uri`.
//!
//! For those who scrape: [`Telemetry::prometheus`] keeps a pull reader, and
//! [`HttpConfig::metrics`](crate::HttpConfig::metrics) mounts `GET /metrics` on the
//! HTTP endpoint, serving [`prometheus_text`] (the Prometheus text exposition format).

mod export;
mod otlp;
mod prometheus;

pub use prometheus::prometheus_text;

/// The process-wide pull reader, for the tests of `/metrics`.
#[cfg(test)]
pub(crate) fn prometheus_reader_for_tests() -> impl opentelemetry_sdk::metrics::reader::MetricReader
{
    prometheus::reader()
}

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::time::Duration;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The instrumentation scope of presa's spans.
const SCOPE: &str = "presa";

/// The default interval between two metric exports.
pub const DEFAULT_METRIC_INTERVAL: Duration = Duration::from_secs(60);

/// The one-call setup of OpenTelemetry export: what to export where, then
/// [`Telemetry::install`].
#[derive(Clone, Debug)]
#[must_use = "nothing is installed until `install` is called"]
pub struct Telemetry {
    endpoint: Option<String>,
    service_name: String,
    metric_interval: Duration,
    prometheus: bool,
    resource_uris: bool,
    fmt: bool,
    sdk_spans: bool,
}

impl Telemetry {
    /// Export spans and metrics over OTLP/HTTP (protobuf) to a collector at `endpoint`,
    /// its base URL (`http://127.0.0.1:4318`): spans go to `{endpoint}/v1/traces`,
    /// metrics to `{endpoint}/v1/metrics`. Plain HTTP only (no TLS).
    pub fn otlp(endpoint: impl Into<String>) -> Telemetry {
        Telemetry {
            endpoint: Some(endpoint.into().trim_end_matches('/').to_owned()),
            ..Telemetry::local()
        }
    }

    /// No export: spans go nowhere but the `tracing` subscriber, metrics only to the
    /// Prometheus reader when [`Telemetry::prometheus`] asks for it.
    pub fn local() -> Telemetry {
        Telemetry {
            endpoint: None,
            service_name: "presa".into(),
            metric_interval: DEFAULT_METRIC_INTERVAL,
            prometheus: false,
            resource_uris: false,
            fmt: true,
            sdk_spans: false,
        }
    }

    /// The `service.name` resource attribute (default `presa`).
    pub fn service_name(mut self, name: impl Into<String>) -> Telemetry {
        self.service_name = name.into();
        self
    }

    /// How often metrics are exported over OTLP (default [`DEFAULT_METRIC_INTERVAL`]).
    pub fn metric_interval(mut self, interval: Duration) -> Telemetry {
        self.metric_interval = interval;
        self
    }

    /// Keep a pull reader for [`prometheus_text`] and `GET /metrics` (default off).
    pub fn prometheus(mut self, on: bool) -> Telemetry {
        self.prometheus = on;
        self
    }

    /// Record `mcp.resource.uri` on `resources/read` spans and name the span after it
    /// (default off: URIs are high-cardinality and may carry what a client asked for).
    pub fn resource_uris(mut self, on: bool) -> Telemetry {
        self.resource_uris = on;
        self
    }

    /// Whether the installed subscriber also logs to stderr, filtered by `RUST_LOG`
    /// (default on).
    pub fn log_to_stderr(mut self, on: bool) -> Telemetry {
        self.fmt = on;
        self
    }

    /// Export request spans the SDK's way instead of presa's (default off): each request's
    /// `tracing` span becomes an OpenTelemetry span through `tracing-opentelemetry`, and
    /// the SDK's batch span processor and OTLP exporter send it. The spans are the same
    /// (presa's tests hold the two ways to each other), but the SDK's way costs several
    /// times the CPU per request; presa's records each request in one small struct and
    /// writes the OTLP body from it directly. One difference: the SDK's way also turns
    /// `tracing` events logged inside a request into events of its span.
    pub fn sdk_spans(mut self, on: bool) -> Telemetry {
        self.sdk_spans = on;
        self
    }

    /// Installs the providers, the propagators and the `tracing` subscriber (see the
    /// module docs). Fails when an exporter cannot be built or a global subscriber is
    /// already set.
    pub fn install(self) -> Result<TelemetryGuard, TelemetryError> {
        let resource = Resource::builder()
            .with_service_name(self.service_name.clone())
            .build();
        let mut tracers = SdkTracerProvider::builder().with_resource(resource.clone());
        let mut meters = SdkMeterProvider::builder().with_resource(resource.clone());
        let mut exporter = None;
        if let Some(endpoint) = &self.endpoint {
            let url = format!("{endpoint}/v1/traces");
            // The SDK's exporter sends the spans made through `tracing` (a handler's own,
            // and, the SDK's way, the request spans too).
            let spans = SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(url.clone())
                .build()
                .map_err(|e| TelemetryError(format!("the OTLP span exporter: {e}")))?;
            tracers = tracers.with_batch_exporter(spans);
            if !self.sdk_spans {
                let header = otlp::Header::new(&resource, SCOPE);
                exporter = Some((url, header));
            }
            let metrics = MetricExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(format!("{endpoint}/v1/metrics"))
                .with_temporality(Temporality::Cumulative)
                .build()
                .map_err(|e| TelemetryError(format!("the OTLP metric exporter: {e}")))?;
            meters = meters.with_reader(
                PeriodicReader::builder(metrics)
                    .with_interval(self.metric_interval)
                    .build(),
            );
        }
        if self.prometheus {
            meters = meters.with_reader(prometheus::reader());
        }
        let tracers = tracers.build();
        let meters = meters.build();
        opentelemetry::global::set_text_map_propagator(
            opentelemetry::propagation::TextMapCompositePropagator::new(vec![
                Box::new(TraceContextPropagator::new()),
                Box::new(BaggagePropagator::new()),
            ]),
        );
        opentelemetry::global::set_tracer_provider(tracers.clone());
        opentelemetry::global::set_meter_provider(meters.clone());
        crate::observe::start_metrics(&opentelemetry::global::meter("presa"));
        crate::observe::set_resource_uri_opt_in(self.resource_uris);
        let tracer = tracers.tracer(SCOPE);
        // Spans and events at INFO and above become OpenTelemetry spans and span events;
        // presa's request spans too the SDK's way, and only the spans made inside
        // requests (a handler's own, whose parent is the request's) presa's way, where
        // the request spans are recorded and exported directly instead.
        let otel_filter = if self.sdk_spans {
            tracing_subscriber::filter::Targets::new().with_default(tracing::Level::INFO)
        } else {
            tracing_subscriber::filter::Targets::new()
                .with_default(tracing::Level::INFO)
                .with_target(
                    "presa::observe",
                    tracing_subscriber::filter::LevelFilter::OFF,
                )
        };
        // The layers in a list, each with its own filter: a layer left out is not there
        // at all (an `Option` layer that is `None` would enable every callsite).
        type Boxed = Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;
        let mut layers: Vec<Boxed> = vec![
            // Without the layer's per-span code location, target, thread and busy/idle
            // attributes, which the conventions do not name and every span would pay for.
            tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_location(false)
                .with_target(false)
                .with_threads(false)
                .with_tracked_inactivity(false)
                .with_filter(otel_filter)
                .boxed(),
        ];
        if self.sdk_spans {
            // The metrics layer reads request spans the SDK's way (presa's way records
            // the metrics from its own records). Only presa's request spans concern it:
            // filtered to them, it raises no other callsite's level.
            layers.push(
                metrics_layer()
                    .with_filter(
                        tracing_subscriber::filter::Targets::new()
                            .with_target("presa::observe", tracing::Level::INFO),
                    )
                    .boxed(),
            );
        }
        if self.fmt {
            layers.push(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_filter(
                        tracing_subscriber::EnvFilter::try_from_default_env()
                            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
                    )
                    .boxed(),
            );
        }
        tracing_subscriber::registry()
            .with(layers)
            .try_init()
            .map_err(|e| TelemetryError(format!("the tracing subscriber: {e}")))?;
        // presa's exporter starts once the subscriber is in place (a failed install
        // leaves no thread behind).
        let exporter = match exporter {
            Some((url, header)) => Some(
                export::Exporter::start(url, header, export::Batching::from_env())
                    .map_err(|e| TelemetryError(format!("the OTLP span exporter: {e}")))?,
            ),
            None => None,
        };
        let (sink, exporter) = match exporter {
            Some((exporter, sink)) => (Some(sink), Some(exporter)),
            None => (None, None),
        };
        if !self.sdk_spans {
            crate::observe::record::activate(sink, true);
        }
        Ok(TelemetryGuard {
            tracers,
            meters,
            exporter,
        })
    }
}

/// presa's metrics layer, for a `tracing` subscriber set up by hand instead of by
/// [`Telemetry::install`] (beside a `tracing_opentelemetry` layer of your own): it
/// records `mcp.server.operation.duration` and `presa.server.active_requests` from the
/// request spans. Every presa metric is recorded into the global meter provider as it
/// is when this is first called (or [`Telemetry::install`] runs): set it before. Give
/// the request spans (target `presa::observe`, INFO) to the layer unfiltered.
pub fn metrics_layer<S>() -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    crate::observe::start_metrics(&opentelemetry::global::meter("presa"));
    crate::observe::MetricsLayer
}

/// What [`Telemetry::install`] installed: dropping it flushes spans and metrics and
/// shuts the providers down.
#[must_use = "dropping the guard shuts telemetry down"]
pub struct TelemetryGuard {
    tracers: SdkTracerProvider,
    meters: SdkMeterProvider,
    /// presa's span exporter, unless spans go the SDK's way.
    exporter: Option<export::Exporter>,
}

impl TelemetryGuard {
    /// Exports what is pending now (spans and metrics), waiting for it.
    pub fn flush(&self) {
        if let Some(exporter) = &self.exporter {
            exporter.flush();
        }
        let _ = self.tracers.force_flush();
        let _ = self.meters.force_flush();
    }
}

impl std::fmt::Debug for TelemetryGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TelemetryGuard")
    }
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(exporter) = &self.exporter {
            exporter.shutdown();
        }
        let _ = self.tracers.force_flush();
        let _ = self.tracers.shutdown();
        let _ = self.meters.shutdown();
    }
}

/// Why [`Telemetry::install`] failed.
#[derive(Debug)]
#[non_exhaustive]
pub struct TelemetryError(String);

impl std::fmt::Display for TelemetryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TelemetryError {}
