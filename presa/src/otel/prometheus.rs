//! The metrics in the Prometheus text exposition format (version 0.0.4), read on demand
//! from a pull reader of the meter provider.
//!
//! Names follow the OpenTelemetry rules for Prometheus: every character outside
//! `[a-zA-Z0-9_:]` becomes `_`; the unit `s` adds `_seconds` and `By` adds `_bytes`
//! (units in braces, such as `{request}`, add nothing); a monotonic sum is a `counter`
//! with `_total`; a non-monotonic sum and a gauge are a `gauge`; a histogram is
//! `_bucket{le=…}` (cumulative, ending at `+Inf`), `_sum` and `_count`. Attribute keys are
//! sanitized the same way; label values are escaped (`\\`, `\"`, `\n`).

use opentelemetry::KeyValue;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, Metric, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{InstrumentKind, ManualReader, Pipeline, Temporality};
use std::fmt::Write as _;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

/// The pull reader of the installed meter provider, when [`super::Telemetry::prometheus`]
/// asked for one.
static READER: OnceLock<Arc<ManualReader>> = OnceLock::new();

/// A reader the meter provider owns while [`READER`] keeps a handle on it too.
#[derive(Debug)]
pub(super) struct Shared(Arc<ManualReader>);

impl MetricReader for Shared {
    fn register_pipeline(&self, pipeline: Weak<Pipeline>) {
        self.0.register_pipeline(pipeline);
    }

    fn collect(&self, rm: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.collect(rm)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

/// The pull reader to register with the meter provider (cumulative, as Prometheus
/// expects), kept for [`prometheus_text`]. Only the first one installed is read.
pub(super) fn reader() -> Shared {
    let reader = Arc::clone(READER.get_or_init(|| {
        Arc::new(
            ManualReader::builder()
                .with_temporality(Temporality::Cumulative)
                .build(),
        )
    }));
    Shared(reader)
}

/// The metrics as they stand, in the Prometheus text format; `None` when no pull reader
/// was installed ([`super::Telemetry::prometheus`]) or it could not be read.
pub fn prometheus_text() -> Option<String> {
    let reader = READER.get()?;
    let mut metrics = ResourceMetrics::default();
    reader.collect(&mut metrics).ok()?;
    Some(render(&metrics))
}

/// `metrics` in the Prometheus text format.
pub(crate) fn render(metrics: &ResourceMetrics) -> String {
    let mut out = String::new();
    for scope in metrics.scope_metrics() {
        for metric in scope.metrics() {
            match metric.data() {
                AggregatedMetrics::F64(data) => write_metric(&mut out, metric, data),
                AggregatedMetrics::U64(data) => write_metric(&mut out, metric, data),
                AggregatedMetrics::I64(data) => write_metric(&mut out, metric, data),
            }
        }
    }
    out
}

/// A number as Prometheus reads it.
trait Number: Copy {
    fn text(self) -> String;
}

impl Number for f64 {
    fn text(self) -> String {
        if self.is_nan() {
            "NaN".into()
        } else if self.is_infinite() {
            if self > 0.0 {
                "+Inf".into()
            } else {
                "-Inf".into()
            }
        } else {
            format!("{self}")
        }
    }
}

impl Number for u64 {
    fn text(self) -> String {
        self.to_string()
    }
}

impl Number for i64 {
    fn text(self) -> String {
        self.to_string()
    }
}

fn write_metric<T: Number>(out: &mut String, metric: &Metric, data: &MetricData<T>) {
    let base = name(metric.name(), metric.unit());
    let (kind, name) = match data {
        MetricData::Sum(sum) if sum.is_monotonic() => ("counter", format!("{base}_total")),
        MetricData::Sum(_) | MetricData::Gauge(_) => ("gauge", base.clone()),
        MetricData::Histogram(_) => ("histogram", base.clone()),
        // Not recorded by presa, and not expressible in this format.
        MetricData::ExponentialHistogram(_) => return,
    };
    if !metric.description().is_empty() {
        let help = metric
            .description()
            .replace('\\', "\\\\")
            .replace('\n', "\\n");
        let _ = writeln!(out, "# HELP {name} {help}");
    }
    let _ = writeln!(out, "# TYPE {name} {kind}");
    match data {
        MetricData::Sum(sum) => {
            for point in sum.data_points() {
                let labels = labels(point.attributes(), None);
                let _ = writeln!(out, "{name}{labels} {}", point.value().text());
            }
        }
        MetricData::Gauge(gauge) => {
            for point in gauge.data_points() {
                let labels = labels(point.attributes(), None);
                let _ = writeln!(out, "{name}{labels} {}", point.value().text());
            }
        }
        MetricData::Histogram(histogram) => {
            for point in histogram.data_points() {
                let mut cumulative = 0u64;
                let mut counts = point.bucket_counts();
                for bound in point.bounds() {
                    cumulative += counts.next().unwrap_or(0);
                    let le = labels(point.attributes(), Some(&bound.text()));
                    let _ = writeln!(out, "{name}_bucket{le} {cumulative}");
                }
                let le = labels(point.attributes(), Some("+Inf"));
                let _ = writeln!(out, "{name}_bucket{le} {}", point.count());
                let plain = labels(point.attributes(), None);
                let _ = writeln!(out, "{name}_sum{plain} {}", point.sum().text());
                let _ = writeln!(out, "{name}_count{plain} {}", point.count());
            }
        }
        MetricData::ExponentialHistogram(_) => {}
    }
}

/// A metric's Prometheus name: sanitized, with its unit's suffix.
fn name(otel: &str, unit: &str) -> String {
    let mut name = sanitize(otel);
    let suffix = match unit {
        "s" => "seconds",
        "ms" => "milliseconds",
        "By" => "bytes",
        "1" => "ratio",
        // Annotations (`{request}`) and units without a Prometheus word add nothing.
        _ => "",
    };
    if !suffix.is_empty() && !name.ends_with(suffix) {
        name.push('_');
        name.push_str(suffix);
    }
    name
}

/// `text` with every character Prometheus does not allow in a name replaced by `_`, and
/// a leading digit prefixed by `_`.
fn sanitize(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// `{key="value",…}` (with `le` last when given), or nothing for no labels.
fn labels<'a>(attributes: impl Iterator<Item = &'a KeyValue>, le: Option<&str>) -> String {
    let mut pairs: Vec<(String, String)> = attributes
        .map(|kv| (sanitize(kv.key.as_str()), kv.value.as_str().into_owned()))
        .collect();
    pairs.sort();
    if let Some(le) = le {
        pairs.push(("le".into(), le.into()));
    }
    if pairs.is_empty() {
        return String::new();
    }
    let mut out = String::from("{");
    for (i, (key, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let value = value
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n");
        let _ = write!(out, "{key}=\"{value}\"");
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::metrics::MeterProvider as _;
    use opentelemetry_sdk::metrics::SdkMeterProvider;

    /// A provider of its own with a pull reader, recording known values.
    fn rendered(record: impl FnOnce(&opentelemetry::metrics::Meter)) -> String {
        let reader = Arc::new(
            ManualReader::builder()
                .with_temporality(Temporality::Cumulative)
                .build(),
        );
        let provider = SdkMeterProvider::builder()
            .with_reader(Shared(Arc::clone(&reader)))
            .build();
        record(&provider.meter("test"));
        let mut metrics = ResourceMetrics::default();
        reader.collect(&mut metrics).expect("collect");
        render(&metrics)
    }

    #[test]
    fn a_histogram_in_seconds_has_cumulative_buckets_a_sum_and_a_count() {
        let text = rendered(|meter| {
            let h = meter
                .f64_histogram("mcp.server.operation.duration")
                .with_unit("s")
                .with_description("The duration")
                .with_boundaries(vec![0.01, 0.1, 1.0])
                .build();
            let attrs = [
                KeyValue::new("mcp.method.name", "tools/call"),
                KeyValue::new("gen_ai.tool.name", "echo"),
            ];
            h.record(0.005, &attrs);
            // At a bound: counted in that bound's bucket (upper bounds are inclusive).
            h.record(0.1, &attrs);
            h.record(2.5, &attrs);
        });
        let expected = "\
# HELP mcp_server_operation_duration_seconds The duration
# TYPE mcp_server_operation_duration_seconds histogram
mcp_server_operation_duration_seconds_bucket{gen_ai_tool_name=\"echo\",mcp_method_name=\"tools/call\",le=\"0.01\"} 1
mcp_server_operation_duration_seconds_bucket{gen_ai_tool_name=\"echo\",mcp_method_name=\"tools/call\",le=\"0.1\"} 2
mcp_server_operation_duration_seconds_bucket{gen_ai_tool_name=\"echo\",mcp_method_name=\"tools/call\",le=\"1\"} 2
mcp_server_operation_duration_seconds_bucket{gen_ai_tool_name=\"echo\",mcp_method_name=\"tools/call\",le=\"+Inf\"} 3
mcp_server_operation_duration_seconds_sum{gen_ai_tool_name=\"echo\",mcp_method_name=\"tools/call\"} 2.605
mcp_server_operation_duration_seconds_count{gen_ai_tool_name=\"echo\",mcp_method_name=\"tools/call\"} 3
";
        assert_eq!(text, expected);
    }

    #[test]
    fn a_counter_gets_total_and_an_up_down_counter_is_a_gauge() {
        let text = rendered(|meter| {
            let c = meter
                .u64_counter("presa.server.rejections")
                .with_unit("{request}")
                .build();
            c.add(2, &[KeyValue::new("rpc.response.status_code", "-32602")]);
            let g = meter
                .i64_up_down_counter("presa.server.active_requests")
                .build();
            g.add(3, &[]);
            g.add(-1, &[]);
        });
        assert!(
            text.contains("# TYPE presa_server_rejections_total counter\n"),
            "{text}"
        );
        assert!(
            text.contains("presa_server_rejections_total{rpc_response_status_code=\"-32602\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE presa_server_active_requests gauge\n"),
            "{text}"
        );
        assert!(text.contains("presa_server_active_requests 2\n"), "{text}");
    }

    #[test]
    fn label_values_are_escaped_and_names_sanitized() {
        let text = rendered(|meter| {
            let c = meter.u64_counter("a.b-c").build();
            c.add(1, &[KeyValue::new("k.ey", "q\"uo\\te\nline")]);
        });
        assert!(
            text.contains("a_b_c_total{k_ey=\"q\\\"uo\\\\te\\nline\"} 1\n"),
            "{text}"
        );
        assert_eq!(sanitize("9lives"), "_9lives");
        assert_eq!(name("x.duration", "s"), "x_duration_seconds");
        assert_eq!(name("x_seconds", "s"), "x_seconds");
        assert_eq!(name("x", "{request}"), "x");
    }
}
