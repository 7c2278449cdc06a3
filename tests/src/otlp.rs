//! An OTLP/HTTP receiver the observability tests run in process: what an OpenTelemetry
//! collector would be to a server exporting its traces and metrics, on an ephemeral
//! loopback port, keeping everything it is sent for the test to read.
//!
//! It takes `POST /v1/traces` and `POST /v1/metrics` with an `application/x-protobuf` body
//! (gzipped when the request says `Content-Encoding: gzip`), decodes them with the
//! `opentelemetry-proto` crate's messages, and answers 200 with the empty
//! `Export…ServiceResponse` (a full success). A body it cannot read gets 400, another
//! content type 415, another encoding 415: an exporter sending what this receiver does
//! not read fails loudly rather than being read as sending nothing. `POST /v1/logs` is
//! answered 200 and dropped.
//!
//! Spans are kept as [`Span`] (ids in lowercase hex, attributes as a map of JSON values,
//! so a test compares them with `json!`); metric data points as [`Point`], one per data
//! point of every export (a cumulative exporter sends the same series again at each
//! interval). The `wait_for_*` methods wait, bounded by [`crate::wait::PATIENCE`], until
//! something matching has arrived, and fail showing what did.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point};
use opentelemetry_proto::tonic::trace::v1 as trace;
use prost::Message;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::{Arc, Mutex};

/// A running receiver; stopped when dropped.
pub struct Receiver {
    base: String,
    seen: Arc<Seen>,
    task: tokio::task::JoinHandle<()>,
}

/// What the receiver has been sent.
#[derive(Default)]
struct Seen {
    spans: Mutex<Vec<Span>>,
    points: Mutex<Vec<Point>>,
    /// Every export request: its path, content type and content encoding.
    requests: Mutex<Vec<Export>>,
}

/// One export request as it arrived.
#[derive(Clone, Debug)]
pub struct Export {
    /// The request's path (`/v1/traces`, `/v1/metrics`, `/v1/logs`).
    pub path: String,
    /// Its `Content-Type`.
    pub content_type: String,
    /// Its `Content-Encoding`, if any.
    pub content_encoding: Option<String>,
    /// The status the receiver answered.
    pub status: u16,
    /// How many spans it carried (0 for other exports).
    pub spans: usize,
}

/// The kind of a span (OTLP's `SpanKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `SPAN_KIND_UNSPECIFIED`.
    Unspecified,
    /// `SPAN_KIND_INTERNAL`.
    Internal,
    /// `SPAN_KIND_SERVER`.
    Server,
    /// `SPAN_KIND_CLIENT`.
    Client,
    /// `SPAN_KIND_PRODUCER`.
    Producer,
    /// `SPAN_KIND_CONSUMER`.
    Consumer,
}

/// The status of a span (OTLP's `Status.code`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanStatus {
    /// `STATUS_CODE_UNSET`.
    Unset,
    /// `STATUS_CODE_OK`.
    Ok,
    /// `STATUS_CODE_ERROR`.
    Error,
}

/// One span as received.
#[derive(Clone, Debug)]
pub struct Span {
    /// The span's name.
    pub name: String,
    /// Its kind.
    pub kind: Kind,
    /// The trace id, 32 lowercase hex digits.
    pub trace_id: String,
    /// The span id, 16 lowercase hex digits.
    pub span_id: String,
    /// The parent's span id, `None` for a root span.
    pub parent_span_id: Option<String>,
    /// The span's links.
    pub links: Vec<Link>,
    /// Its W3C trace state, as sent (empty for none).
    pub trace_state: String,
    /// Its flags: the W3C trace flags, and whether the parent is remote.
    pub flags: u32,
    /// The span's attributes, each as JSON (a string, a number, a bool, an array).
    pub attributes: BTreeMap<String, Value>,
    /// The status code.
    pub status: SpanStatus,
    /// The status message.
    pub status_message: String,
    /// The attributes of the resource that sent it (`service.name`, say).
    pub resource: BTreeMap<String, Value>,
    /// The instrumentation scope's name.
    pub scope: String,
    /// Its start, in nanoseconds since the epoch.
    pub start_unix_nano: u64,
    /// Its end, in nanoseconds since the epoch.
    pub end_unix_nano: u64,
}

/// A link from one span to another.
#[derive(Clone, Debug)]
pub struct Link {
    /// The linked span's trace id (hex).
    pub trace_id: String,
    /// The linked span's id (hex).
    pub span_id: String,
    /// The linked span's trace state.
    pub trace_state: String,
    /// The link's flags.
    pub flags: u32,
    /// The link's attributes.
    pub attributes: BTreeMap<String, Value>,
}

impl Span {
    /// An attribute's value.
    pub fn attr(&self, key: &str) -> Option<&Value> {
        self.attributes.get(key)
    }

    /// A string attribute's value (`None` when absent or not a string).
    pub fn str(&self, key: &str) -> Option<&str> {
        self.attr(key).and_then(Value::as_str)
    }

    /// Whether the span links to `other`.
    pub fn links_to(&self, other: &Span) -> bool {
        self.links
            .iter()
            .any(|l| l.trace_id == other.trace_id && l.span_id == other.span_id)
    }
}

/// What a metric data point holds.
#[derive(Clone, Debug, PartialEq)]
pub enum PointValue {
    /// A histogram's point: its count, sum, bucket bounds and the count in each bucket
    /// (one more than the bounds).
    Histogram {
        /// How many values were recorded.
        count: u64,
        /// Their sum, when sent.
        sum: Option<f64>,
        /// The buckets' upper bounds.
        bounds: Vec<f64>,
        /// The count in each bucket.
        bucket_counts: Vec<u64>,
    },
    /// A sum's point (a counter, or an up-down counter when not monotonic).
    Sum {
        /// The value.
        value: f64,
        /// Whether the sum only grows.
        monotonic: bool,
    },
    /// A gauge's point.
    Gauge(f64),
    /// A kind this receiver does not unpack (exponential histogram, summary).
    Other,
}

/// One data point of one metric, as received.
#[derive(Clone, Debug)]
pub struct Point {
    /// The metric's name.
    pub metric: String,
    /// The metric's unit.
    pub unit: String,
    /// The metric's description.
    pub description: String,
    /// The data point's attributes.
    pub attributes: BTreeMap<String, Value>,
    /// Its value.
    pub value: PointValue,
    /// The attributes of the resource that sent it.
    pub resource: BTreeMap<String, Value>,
}

impl Point {
    /// A string attribute's value.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(Value::as_str)
    }

    /// The count of a histogram's point (`None` for another kind).
    pub fn count(&self) -> Option<u64> {
        match self.value {
            PointValue::Histogram { count, .. } => Some(count),
            _ => None,
        }
    }
}

impl Receiver {
    /// Starts a receiver on a free loopback port.
    pub async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("the receiver binds a loopback port");
        let addr = listener.local_addr().expect("its address");
        let seen = Arc::new(Seen::default());
        let app = Router::new()
            .route("/v1/traces", post(traces))
            .route("/v1/metrics", post(metrics))
            .route("/v1/logs", post(logs))
            .with_state(Arc::clone(&seen));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver {
            base: format!("http://{addr}"),
            seen,
            task,
        }
    }

    /// The endpoint to give an exporter (`http://127.0.0.1:<port>`; it adds `/v1/traces`
    /// and `/v1/metrics`).
    pub fn endpoint(&self) -> &str {
        &self.base
    }

    /// Every span received so far, in the order they arrived.
    pub fn spans(&self) -> Vec<Span> {
        lock(&self.seen.spans).clone()
    }

    /// Every metric data point received so far, in the order they arrived.
    pub fn points(&self) -> Vec<Point> {
        lock(&self.seen.points).clone()
    }

    /// Every export request received so far.
    pub fn exports(&self) -> Vec<Export> {
        lock(&self.seen.requests).clone()
    }

    /// Waits until a span matching `matches` has arrived, and returns the first one;
    /// fails after [`crate::wait::PATIENCE`] naming `what` and listing the spans seen.
    pub async fn wait_for_span(&self, what: &str, matches: impl Fn(&Span) -> bool) -> Span {
        let deadline = crate::wait::Deadline::new(format!("a span: {what}"));
        loop {
            if let Some(span) = lock(&self.seen.spans).iter().find(|s| matches(s)) {
                return span.clone();
            }
            deadline.tick(self.summary()).await;
        }
    }

    /// Waits until `n` spans matching `matches` have arrived, and returns them in the
    /// order they arrived.
    pub async fn wait_for_spans(
        &self,
        what: &str,
        n: usize,
        matches: impl Fn(&Span) -> bool,
    ) -> Vec<Span> {
        let deadline = crate::wait::Deadline::new(format!("{n} spans: {what}"));
        loop {
            let found: Vec<Span> = lock(&self.seen.spans)
                .iter()
                .filter(|s| matches(s))
                .cloned()
                .collect();
            if found.len() >= n {
                return found;
            }
            deadline.tick(self.summary()).await;
        }
    }

    /// Waits until a data point matching `matches` has arrived, and returns the latest
    /// one; fails after [`crate::wait::PATIENCE`] listing the metrics seen.
    pub async fn wait_for_point(&self, what: &str, matches: impl Fn(&Point) -> bool) -> Point {
        let deadline = crate::wait::Deadline::new(format!("a metric data point: {what}"));
        loop {
            if let Some(point) = lock(&self.seen.points).iter().rev().find(|p| matches(p)) {
                return point.clone();
            }
            let names: std::collections::BTreeSet<String> = lock(&self.seen.points)
                .iter()
                .map(|p| format!("{} {:?}", p.metric, p.attributes))
                .collect();
            deadline.tick(format!("{names:#?}")).await;
        }
    }

    /// The spans seen, one line each, for a failing wait to show.
    fn summary(&self) -> String {
        let spans = lock(&self.seen.spans);
        let mut out = format!("{} spans", spans.len());
        for s in spans.iter() {
            out.push_str(&format!("\n  {:?} {:?} {:?}", s.name, s.kind, s.attributes));
        }
        out
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A test that panicked while holding the lock has failed already; what it left is
    // still worth reading.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn traces(State(seen): State<Arc<Seen>>, headers: HeaderMap, body: Bytes) -> Response {
    let answer = match read::<ExportTraceServiceRequest>(&headers, &body) {
        Ok(request) => {
            let spans = spans_of(request);
            let n = spans.len();
            lock(&seen.spans).extend(spans);
            Ok((ExportTraceServiceResponse::default().encode_to_vec(), n))
        }
        Err(e) => Err(e),
    };
    respond(&seen, "/v1/traces", &headers, answer)
}

async fn metrics(State(seen): State<Arc<Seen>>, headers: HeaderMap, body: Bytes) -> Response {
    let answer = match read::<ExportMetricsServiceRequest>(&headers, &body) {
        Ok(request) => {
            lock(&seen.points).extend(points_of(request));
            Ok((ExportMetricsServiceResponse::default().encode_to_vec(), 0))
        }
        Err(e) => Err(e),
    };
    respond(&seen, "/v1/metrics", &headers, answer)
}

async fn logs(State(seen): State<Arc<Seen>>, headers: HeaderMap) -> Response {
    respond(&seen, "/v1/logs", &headers, Ok((Vec::new(), 0)))
}

/// Records the request and answers it: the encoded response with 200, or the refusal.
fn respond(
    seen: &Seen,
    path: &str,
    headers: &HeaderMap,
    answer: Result<(Vec<u8>, usize), (StatusCode, String)>,
) -> Response {
    let text = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let status = match &answer {
        Ok(_) => StatusCode::OK,
        Err((s, _)) => *s,
    };
    lock(&seen.requests).push(Export {
        path: path.to_owned(),
        content_type: text(header::CONTENT_TYPE).unwrap_or_default(),
        content_encoding: text(header::CONTENT_ENCODING),
        status: status.as_u16(),
        spans: answer.as_ref().map_or(0, |(_, n)| *n),
    });
    match answer {
        Ok((body, _)) => ([(header::CONTENT_TYPE, "application/x-protobuf")], body).into_response(),
        Err((status, why)) => (status, why).into_response(),
    }
}

/// Decodes an OTLP/HTTP protobuf body, gunzipped first when it says it is gzipped.
fn read<M: Message + Default>(headers: &HeaderMap, body: &[u8]) -> Result<M, (StatusCode, String)> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if content_type != "application/x-protobuf" {
        return Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("this receiver reads application/x-protobuf, not {content_type:?}"),
        ));
    }
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok());
    let unzipped;
    let bytes = match encoding {
        None | Some("identity") => body,
        Some("gzip") => {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(body)
                .read_to_end(&mut out)
                .map_err(|e| (StatusCode::BAD_REQUEST, format!("not gzip: {e}")))?;
            unzipped = out;
            &unzipped
        }
        Some(other) => {
            return Err((
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("this receiver reads gzip or no encoding, not {other:?}"),
            ));
        }
    };
    M::decode(bytes).map_err(|e| (StatusCode::BAD_REQUEST, format!("not OTLP protobuf: {e}")))
}

fn spans_of(request: ExportTraceServiceRequest) -> Vec<Span> {
    let mut out = Vec::new();
    for rs in request.resource_spans {
        let resource = rs.resource.map(|r| map(r.attributes)).unwrap_or_default();
        for ss in rs.scope_spans {
            let scope = ss.scope.map(|s| s.name).unwrap_or_default();
            for s in ss.spans {
                let (status, status_message) = match s.status {
                    Some(st) => (status_of(st.code), st.message),
                    None => (SpanStatus::Unset, String::new()),
                };
                out.push(Span {
                    name: s.name,
                    kind: kind_of(s.kind),
                    trace_id: hex(&s.trace_id),
                    span_id: hex(&s.span_id),
                    parent_span_id: (!s.parent_span_id.is_empty()).then(|| hex(&s.parent_span_id)),
                    links: s
                        .links
                        .into_iter()
                        .map(|l| Link {
                            trace_id: hex(&l.trace_id),
                            span_id: hex(&l.span_id),
                            trace_state: l.trace_state,
                            flags: l.flags,
                            attributes: map(l.attributes),
                        })
                        .collect(),
                    trace_state: s.trace_state,
                    flags: s.flags,
                    attributes: map(s.attributes),
                    status,
                    status_message,
                    resource: resource.clone(),
                    scope: scope.clone(),
                    start_unix_nano: s.start_time_unix_nano,
                    end_unix_nano: s.end_time_unix_nano,
                });
            }
        }
    }
    out
}

fn points_of(request: ExportMetricsServiceRequest) -> Vec<Point> {
    let mut out = Vec::new();
    for rm in request.resource_metrics {
        let resource = rm.resource.map(|r| map(r.attributes)).unwrap_or_default();
        for sm in rm.scope_metrics {
            for m in sm.metrics {
                let point = |attributes, value| Point {
                    metric: m.name.clone(),
                    unit: m.unit.clone(),
                    description: m.description.clone(),
                    attributes: map(attributes),
                    value,
                    resource: resource.clone(),
                };
                match m.data.clone() {
                    Some(metric::Data::Histogram(h)) => {
                        for p in h.data_points {
                            let value = PointValue::Histogram {
                                count: p.count,
                                sum: p.sum,
                                bounds: p.explicit_bounds,
                                bucket_counts: p.bucket_counts,
                            };
                            out.push(point(p.attributes, value));
                        }
                    }
                    Some(metric::Data::Sum(s)) => {
                        for p in s.data_points {
                            let value = PointValue::Sum {
                                value: number(p.value),
                                monotonic: s.is_monotonic,
                            };
                            out.push(point(p.attributes, value));
                        }
                    }
                    Some(metric::Data::Gauge(g)) => {
                        for p in g.data_points {
                            let value = PointValue::Gauge(number(p.value));
                            out.push(point(p.attributes, value));
                        }
                    }
                    Some(metric::Data::ExponentialHistogram(h)) => {
                        for p in h.data_points {
                            out.push(point(p.attributes, PointValue::Other));
                        }
                    }
                    Some(metric::Data::Summary(s)) => {
                        for p in s.data_points {
                            out.push(point(p.attributes, PointValue::Other));
                        }
                    }
                    None => {}
                }
            }
        }
    }
    out
}

fn number(v: Option<number_data_point::Value>) -> f64 {
    match v {
        Some(number_data_point::Value::AsDouble(d)) => d,
        Some(number_data_point::Value::AsInt(i)) => i as f64,
        None => f64::NAN,
    }
}

fn kind_of(kind: i32) -> Kind {
    match trace::span::SpanKind::try_from(kind) {
        Ok(trace::span::SpanKind::Internal) => Kind::Internal,
        Ok(trace::span::SpanKind::Server) => Kind::Server,
        Ok(trace::span::SpanKind::Client) => Kind::Client,
        Ok(trace::span::SpanKind::Producer) => Kind::Producer,
        Ok(trace::span::SpanKind::Consumer) => Kind::Consumer,
        _ => Kind::Unspecified,
    }
}

fn status_of(code: i32) -> SpanStatus {
    match trace::status::StatusCode::try_from(code) {
        Ok(trace::status::StatusCode::Ok) => SpanStatus::Ok,
        Ok(trace::status::StatusCode::Error) => SpanStatus::Error,
        _ => SpanStatus::Unset,
    }
}

/// Attributes as a map of JSON values.
fn map(attributes: Vec<KeyValue>) -> BTreeMap<String, Value> {
    attributes
        .into_iter()
        .map(|kv| (kv.key, json(kv.value)))
        .collect()
}

/// An attribute's value as JSON: bytes as lowercase hex, a key-value list as an object.
fn json(value: Option<AnyValue>) -> Value {
    match value.and_then(|v| v.value) {
        None => Value::Null,
        Some(any_value::Value::StringValue(s)) => Value::String(s),
        Some(any_value::Value::BoolValue(b)) => Value::Bool(b),
        Some(any_value::Value::IntValue(i)) => Value::from(i),
        Some(any_value::Value::DoubleValue(d)) => Value::from(d),
        Some(any_value::Value::BytesValue(b)) => Value::String(hex(&b)),
        // An index into a profile's string table: no span or metric sends one.
        Some(any_value::Value::StringValueStrindex(i)) => {
            serde_json::json!({ "stringValueStrindex": i })
        }
        Some(any_value::Value::ArrayValue(a)) => {
            Value::Array(a.values.into_iter().map(|v| json(Some(v))).collect())
        }
        Some(any_value::Value::KvlistValue(l)) => Value::Object(
            l.values
                .into_iter()
                .map(|kv| (kv.key, json(kv.value)))
                .collect::<Map<String, Value>>(),
        ),
    }
}

/// Bytes as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
