//! Observability, end to end with real receivers: the fixture's binary (built with
//! presa's `otel` feature) serves Streamable HTTP (and stdio) and exports its spans and
//! metrics over OTLP/HTTP to a receiver the test runs ([`presa_tests::otlp`]), and a real
//! Prometheus scrapes its `/metrics` ([`presa_tests::prometheus`]).
//!
//! Each span is asserted name by name and attribute by attribute against the server
//! span table of OpenTelemetry's MCP semantic conventions
//! (`open-telemetry/semantic-conventions-genai`, `docs/gen-ai/mcp.md`): the name
//! `{mcp.method.name} {target}` (the tool's or prompt's name; the method alone for
//! `resources/read`, whose URI is high-cardinality, and for an unknown name), kind
//! SERVER, `mcp.method.name`, `gen_ai.tool.name` with `gen_ai.operation.name`
//! `execute_tool` for a tool call and neither otherwise, `gen_ai.prompt.name` for a
//! prompt, `jsonrpc.request.id` as a string, `mcp.protocol.version`, `network.transport`
//! (`tcp`, with `network.protocol.name` `http` and `network.protocol.version` `1.1`; `pipe`
//! over stdio), and, if and only if the operation failed, `error.type` (the JSON-RPC error
//! code as a string, `tool_error` for `isError: true`, `cancelled` for a cancelled
//! request) with the status ERROR described by the error's message, plus
//! `rpc.response.status_code` when the response carries an error code; no attribute
//! outside the table but `enduser.id` and presa's own. `mcp.resource.uri` is presa's
//! opt-in (issue 36), off in the fixture. The `mcp.server.operation.duration` histogram
//! is in seconds with the conventions' buckets, and carries the same low-cardinality
//! attributes. No attribute carries an argument's value.
//!
//! The first tests hold the receiver itself to OTLP/HTTP (a hand-built protobuf export,
//! plain and gzipped, is decoded into what was sent, and what it does not read is
//! refused) and the Prometheus harness to a target serving one gauge.

use presa_tests::http::Http;
use presa_tests::otlp::{Kind, PointValue, Receiver, Span, SpanStatus};
use presa_tests::prometheus::Prometheus;
use presa_tests::wait::Deadline;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::process::Stdio;
use tokio::process::{Child, Command};

const FIXTURE: &str = env!("CARGO_BIN_EXE_fixture");

/// The fixture with two tools more, `test_panic` and `test_inner_span`
/// (src/bin/otel_panic.rs).
const OTEL_PANIC: &str = env!("CARGO_BIN_EXE_otel_panic");

/// The metric every request records.
const DURATION: &str = "mcp.server.operation.duration";

/// Its buckets, as the conventions give them.
const BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The protocol version every request here speaks.
const VERSION: &str = presa_tests::VERSION;

// ---- the fixture, exporting ----

/// The fixture's binary over HTTP on a loopback port, exporting to a [`Receiver`] and
/// serving `/metrics`; killed on drop.
struct Fixture {
    child: Child,
    port: u16,
    /// Holds what it writes on stdout and stderr (read when it fails to start); removed
    /// on drop.
    _logs: tempfile::TempDir,
}

impl Fixture {
    /// Starts the fixture exporting to `receiver`, and waits until it takes connections.
    async fn start(receiver: &Receiver) -> Fixture {
        Fixture::start_bin(FIXTURE, &["--metrics"], receiver).await
    }

    /// Starts `bin` with `--http`, `--otel` and `args`, exporting to `receiver`.
    async fn start_bin(bin: &str, args: &[&str], receiver: &Receiver) -> Fixture {
        Fixture::start_env(bin, args, &[], receiver).await
    }

    /// Starts `bin` as [`Fixture::start_bin`] does, with these environment variables too.
    async fn start_env(
        bin: &str,
        args: &[&str],
        env: &[(&str, &str)],
        receiver: &Receiver,
    ) -> Fixture {
        let logs = tempfile::Builder::new()
            .prefix("presa-otel-fixture-")
            .tempdir()
            .expect("a temporary folder");
        // A port found free may be taken before the fixture binds it: a few tries.
        let mut last = String::new();
        for _ in 0..3 {
            let port = presa_tests::free_port();
            let out = std::fs::File::create(logs.path().join("out.log")).expect("a log");
            let err = std::fs::File::create(logs.path().join("err.log")).expect("a log");
            let mut child = Command::new(bin)
                .args(["--http", &format!("127.0.0.1:{port}")])
                .args(["--otel", receiver.endpoint()])
                .args(args)
                // The SDK's batch processor exports every 5 s by default; a test waits
                // less for its spans with a shorter delay (the SDK's own setting).
                .env("OTEL_BSP_SCHEDULE_DELAY", "100")
                .envs(env.iter().copied())
                .env_remove("MCP_PORT")
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err)
                .kill_on_drop(true)
                .spawn()
                .unwrap_or_else(|e| panic!("{bin} starts: {e}"));
            let deadline = Deadline::new("the fixture takes connections");
            loop {
                if let Ok(Some(status)) = child.try_wait() {
                    last = format!(
                        "exited ({status}): {}",
                        std::fs::read_to_string(logs.path().join("err.log")).unwrap_or_default()
                    );
                    break;
                }
                if tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .is_ok()
                {
                    return Fixture {
                        child,
                        port,
                        _logs: logs,
                    };
                }
                deadline.tick("no connection yet").await;
            }
        }
        panic!("{bin} did not start: {last}");
    }

    /// A client of its MCP endpoint.
    fn http(&self) -> Http {
        Http::at(&format!("http://127.0.0.1:{}/mcp", self.port))
    }

    /// `127.0.0.1:<port>`, for Prometheus to scrape.
    fn authority(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Its Prometheus text (`GET /metrics`).
    async fn metrics_text(&self) -> String {
        let reply = reqwest::get(format!("http://127.0.0.1:{}/metrics", self.port))
            .await
            .expect("GET /metrics is answered");
        assert_eq!(reply.status(), 200, "GET /metrics");
        reply.text().await.expect("the metrics text")
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// A receiver and the fixture exporting to it.
async fn exporting() -> (Receiver, Fixture) {
    let receiver = Receiver::start().await;
    let fixture = Fixture::start(&receiver).await;
    (receiver, fixture)
}

// ---- what the conventions ask of every span ----

/// The span answering request `id` (`jsonrpc.request.id` is the id as a string).
async fn span_of(receiver: &Receiver, id: i64) -> Span {
    let id = id.to_string();
    receiver
        .wait_for_span(&format!("jsonrpc.request.id {id}"), |s| {
            s.str("jsonrpc.request.id") == Some(id.as_str())
        })
        .await
}

/// What a server span of the conventions holds whatever the method: kind SERVER,
/// `mcp.method.name`, the request id as a string, the protocol version, the transport
/// (`tcp`: Streamable HTTP), and the name `{method} {target}` (`{method}` alone when
/// there is no target).
#[track_caller]
fn assert_server_span(span: &Span, method: &str, target: Option<&str>, id: i64) {
    let name = match target {
        Some(t) => format!("{method} {t}"),
        None => method.to_owned(),
    };
    assert_eq!(span.name, name, "span name: {span:#?}");
    assert_eq!(span.kind, Kind::Server, "span kind: {span:#?}");
    assert_eq!(span.str("mcp.method.name"), Some(method), "{span:#?}");
    assert_eq!(
        span.attr("jsonrpc.request.id"),
        Some(&json!(id.to_string())),
        "jsonrpc.request.id is the id as a string: {span:#?}"
    );
    assert_eq!(span.str("mcp.protocol.version"), Some(VERSION), "{span:#?}");
    assert_eq!(span.str("network.transport"), Some("tcp"), "{span:#?}");
    assert_eq!(span.str("network.protocol.name"), Some("http"), "{span:#?}");
    assert_eq!(
        span.str("network.protocol.version"),
        Some("1.1"),
        "{span:#?}"
    );
    assert_known_keys(span);
    assert_eq!(span.trace_id.len(), 32, "{span:#?}");
    assert_eq!(span.span_id.len(), 16, "{span:#?}");
    assert!(span.end_unix_nano >= span.start_unix_nano, "{span:#?}");
}

/// The attributes a request span may carry: the conventions' server span table, less its
/// two opt-in attributes that would carry a call's arguments and result
/// (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`: never recorded); the general
/// conventions' `enduser.id` (who the request acts for); and presa's own `outcome` and
/// `duration_us`, with `target`, the `tracing` target the OpenTelemetry layer adds.
const SPAN_KEYS: [&str; 20] = [
    "mcp.method.name",
    "error.type",
    "gen_ai.prompt.name",
    "gen_ai.tool.name",
    "jsonrpc.request.id",
    "mcp.resource.uri",
    "rpc.response.status_code",
    "client.address",
    "client.port",
    "gen_ai.operation.name",
    "jsonrpc.protocol.version",
    "mcp.protocol.version",
    "mcp.session.id",
    "network.protocol.name",
    "network.protocol.version",
    "network.transport",
    "enduser.id",
    "outcome",
    "duration_us",
    "target",
];

/// Every attribute of the span is one of [`SPAN_KEYS`].
#[track_caller]
fn assert_known_keys(span: &Span) {
    let unknown: Vec<&String> = span
        .attributes
        .keys()
        .filter(|k| !SPAN_KEYS.contains(&k.as_str()))
        .collect();
    assert!(
        unknown.is_empty(),
        "unexpected attributes {unknown:?}: {span:#?}"
    );
}

/// A tool call's attributes: the tool's name and the `execute_tool` operation, no prompt.
#[track_caller]
fn assert_tool(span: &Span, tool: &str) {
    assert_eq!(span.str("gen_ai.tool.name"), Some(tool), "{span:#?}");
    assert_eq!(
        span.str("gen_ai.operation.name"),
        Some("execute_tool"),
        "{span:#?}"
    );
    assert_eq!(span.attr("gen_ai.prompt.name"), None, "{span:#?}");
}

/// Neither tool nor prompt attributes (a read, say).
#[track_caller]
fn assert_no_tool_or_prompt(span: &Span) {
    for key in [
        "gen_ai.tool.name",
        "gen_ai.operation.name",
        "gen_ai.prompt.name",
    ] {
        assert_eq!(span.attr(key), None, "{key} on {span:#?}");
    }
}

/// A span that succeeded: no `error.type`, no `rpc.response.status_code` (the response
/// carried no error code), and a status other than ERROR.
#[track_caller]
fn assert_ok(span: &Span) {
    assert_eq!(span.attr("error.type"), None, "{span:#?}");
    assert_eq!(span.attr("rpc.response.status_code"), None, "{span:#?}");
    assert_ne!(span.status, SpanStatus::Error, "{span:#?}");
}

/// A span whose response was the JSON-RPC error `code`: `error.type` and
/// `rpc.response.status_code` are the code as a string, and the status is ERROR.
#[track_caller]
fn assert_rpc_error(span: &Span, code: i64) {
    let code = code.to_string();
    assert_eq!(span.str("error.type"), Some(code.as_str()), "{span:#?}");
    assert_eq!(
        span.str("rpc.response.status_code"),
        Some(code.as_str()),
        "{span:#?}"
    );
    assert_eq!(span.status, SpanStatus::Error, "{span:#?}");
}

/// No attribute of the span, nor of its links, holds `secret` (an argument's value).
#[track_caller]
fn assert_never_holds(span: &Span, secret: &str) {
    let all = format!("{:?} {:?} {:?}", span.name, span.attributes, span.links);
    assert!(!all.contains(secret), "{secret:?} leaked into {span:#?}");
}

/// Waits for a data point of [`DURATION`] with every attribute of `attrs`, and checks
/// what the conventions fix: a histogram in seconds with their buckets, counting at
/// least one request, without the span's high-cardinality attributes.
async fn duration_point(receiver: &Receiver, attrs: &[(&str, &str)]) -> presa_tests::otlp::Point {
    let point = receiver
        .wait_for_point(&format!("{DURATION} {attrs:?}"), |p| {
            p.metric == DURATION
                && attrs.iter().all(|(k, v)| p.str(k) == Some(*v))
                && p.count().is_some_and(|n| n >= 1)
        })
        .await;
    assert_eq!(point.unit, "s", "{point:#?}");
    // Low-cardinality attributes only: no request id, session, URI or subject.
    for key in [
        "jsonrpc.request.id",
        "mcp.session.id",
        "mcp.resource.uri",
        "enduser.id",
    ] {
        assert_eq!(point.attributes.get(key), None, "{key}: {point:#?}");
    }
    match &point.value {
        PointValue::Histogram {
            bounds,
            bucket_counts,
            ..
        } => {
            assert_eq!(bounds.as_slice(), BUCKETS.as_slice(), "{point:#?}");
            assert_eq!(bucket_counts.len(), BUCKETS.len() + 1, "{point:#?}");
        }
        other => panic!("{DURATION} is a histogram: {other:?}"),
    }
    point
}

/// The `result` of a reply, failing with the reply when there is none.
#[track_caller]
fn result(reply: &presa_tests::http::Reply) -> &Value {
    reply
        .response()
        .get("result")
        .unwrap_or_else(|| panic!("a result: {}", reply.body))
}

// ---- the receiver itself ----

mod receiver {
    use super::*;
    use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
    use opentelemetry_proto::tonic::collector::trace::v1::{
        ExportTraceServiceRequest, ExportTraceServiceResponse,
    };
    use opentelemetry_proto::tonic::common::v1::{
        AnyValue, InstrumentationScope, KeyValue, any_value,
    };
    use opentelemetry_proto::tonic::metrics::v1 as metrics;
    use opentelemetry_proto::tonic::resource::v1::Resource;
    use opentelemetry_proto::tonic::trace::v1 as trace;
    use prost::Message;
    use std::io::Write;

    fn kv(key: &str, value: any_value::Value) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue { value: Some(value) }),
            ..Default::default()
        }
    }

    fn s(v: &str) -> any_value::Value {
        any_value::Value::StringValue(v.into())
    }

    /// One server span with a parent, a link, attributes of each kind and an error
    /// status, from a resource naming its service.
    fn export() -> ExportTraceServiceRequest {
        let span = trace::Span {
            trace_id: vec![0x4b; 16],
            span_id: vec![0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08],
            parent_span_id: vec![0xaa; 8],
            name: "tools/call greet".into(),
            kind: trace::span::SpanKind::Server as i32,
            start_time_unix_nano: 1,
            end_time_unix_nano: 2,
            attributes: vec![
                kv("mcp.method.name", s("tools/call")),
                kv("jsonrpc.request.id", s("7")),
                kv("count", any_value::Value::IntValue(3)),
                kv("ratio", any_value::Value::DoubleValue(0.5)),
                kv("flag", any_value::Value::BoolValue(true)),
            ],
            links: vec![trace::span::Link {
                trace_id: vec![0x11; 16],
                span_id: vec![0x22; 8],
                attributes: vec![kv("why", s("round"))],
                ..Default::default()
            }],
            status: Some(trace::Status {
                message: "Unknown tool".into(),
                code: trace::status::StatusCode::Error as i32,
            }),
            ..Default::default()
        };
        ExportTraceServiceRequest {
            resource_spans: vec![trace::ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![kv("service.name", s("presa-fixture"))],
                    ..Default::default()
                }),
                scope_spans: vec![trace::ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: "presa".into(),
                        ..Default::default()
                    }),
                    spans: vec![span],
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
        }
    }

    async fn post(
        receiver: &Receiver,
        path: &str,
        body: Vec<u8>,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut req = reqwest::Client::new()
            .post(format!("{}{path}", receiver.endpoint()))
            .body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.send().await.expect("the receiver answers")
    }

    const PROTOBUF: (&str, &str) = ("content-type", "application/x-protobuf");

    /// The span the receiver keeps is the one sent, field by field; it answers 200 with
    /// an empty ExportTraceServiceResponse in protobuf.
    #[tokio::test]
    async fn otel_receiver_keeps_a_span_as_sent() {
        let receiver = Receiver::start().await;
        let reply = post(
            &receiver,
            "/v1/traces",
            export().encode_to_vec(),
            &[PROTOBUF],
        )
        .await;
        assert_eq!(reply.status(), 200);
        assert_eq!(
            reply.headers()["content-type"],
            "application/x-protobuf",
            "the answer's type"
        );
        let body = reply.bytes().await.expect("a body");
        let answer = ExportTraceServiceResponse::decode(body).expect("a response message");
        assert_eq!(
            answer,
            ExportTraceServiceResponse::default(),
            "a full success"
        );

        let span = receiver.wait_for_span("the span sent", |_| true).await;
        assert_eq!(span.name, "tools/call greet");
        assert_eq!(span.kind, Kind::Server);
        assert_eq!(span.trace_id, "4b".repeat(16));
        assert_eq!(span.span_id, "0102030405060708");
        assert_eq!(span.parent_span_id.as_deref(), Some("aaaaaaaaaaaaaaaa"));
        assert_eq!(span.links.len(), 1);
        assert_eq!(span.links[0].trace_id, "11".repeat(16));
        assert_eq!(span.links[0].span_id, "22".repeat(8));
        assert_eq!(span.links[0].attributes["why"], json!("round"));
        assert_eq!(
            span.attributes,
            [
                ("mcp.method.name", json!("tools/call")),
                ("jsonrpc.request.id", json!("7")),
                ("count", json!(3)),
                ("ratio", json!(0.5)),
                ("flag", json!(true)),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
        );
        assert_eq!(span.status, SpanStatus::Error);
        assert_eq!(span.status_message, "Unknown tool");
        assert_eq!(span.resource["service.name"], json!("presa-fixture"));
        assert_eq!(span.scope, "presa");
        assert_eq!((span.start_unix_nano, span.end_unix_nano), (1, 2));
        assert_eq!(receiver.spans().len(), 1, "one span, kept once");
    }

    /// A root span (no parent bytes) has no parent id.
    #[tokio::test]
    async fn otel_receiver_reads_a_root_span_as_having_no_parent() {
        let receiver = Receiver::start().await;
        let mut request = export();
        request.resource_spans[0].scope_spans[0].spans[0].parent_span_id = Vec::new();
        let reply = post(
            &receiver,
            "/v1/traces",
            request.encode_to_vec(),
            &[PROTOBUF],
        )
        .await;
        assert_eq!(reply.status(), 200);
        assert_eq!(receiver.spans()[0].parent_span_id, None);
    }

    /// A gzipped body (`Content-Encoding: gzip`, what an exporter with compression sends)
    /// is read as the plain one.
    #[tokio::test]
    async fn otel_receiver_reads_a_gzipped_export() {
        let receiver = Receiver::start().await;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&export().encode_to_vec()).expect("gzip");
        let body = gz.finish().expect("gzip");
        let reply = post(
            &receiver,
            "/v1/traces",
            body,
            &[PROTOBUF, ("content-encoding", "gzip")],
        )
        .await;
        assert_eq!(reply.status(), 200);
        let span = receiver.wait_for_span("the gzipped span", |_| true).await;
        assert_eq!(span.name, "tools/call greet");
        assert_eq!(
            receiver.exports()[0].content_encoding.as_deref(),
            Some("gzip")
        );
    }

    /// A histogram's point keeps its count, sum, bounds and bucket counts; a sum's point
    /// its value; each with its attributes, the metric's name and unit.
    #[tokio::test]
    async fn otel_receiver_keeps_metric_points_as_sent() {
        let receiver = Receiver::start().await;
        let histogram = metrics::Metric {
            name: DURATION.into(),
            unit: "s".into(),
            data: Some(metrics::metric::Data::Histogram(metrics::Histogram {
                data_points: vec![metrics::HistogramDataPoint {
                    attributes: vec![kv("mcp.method.name", s("tools/call"))],
                    count: 2,
                    sum: Some(0.03),
                    bucket_counts: vec![1, 1, 0],
                    explicit_bounds: vec![0.01, 0.02],
                    ..Default::default()
                }],
                aggregation_temporality: 2,
            })),
            ..Default::default()
        };
        let counter = metrics::Metric {
            name: "presa.rejections".into(),
            unit: "{request}".into(),
            data: Some(metrics::metric::Data::Sum(metrics::Sum {
                data_points: vec![metrics::NumberDataPoint {
                    attributes: vec![kv("error.type", s("-32022"))],
                    value: Some(metrics::number_data_point::Value::AsInt(4)),
                    ..Default::default()
                }],
                aggregation_temporality: 2,
                is_monotonic: true,
            })),
            ..Default::default()
        };
        let request = ExportMetricsServiceRequest {
            resource_metrics: vec![metrics::ResourceMetrics {
                scope_metrics: vec![metrics::ScopeMetrics {
                    metrics: vec![histogram, counter],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        let reply = post(
            &receiver,
            "/v1/metrics",
            request.encode_to_vec(),
            &[PROTOBUF],
        )
        .await;
        assert_eq!(reply.status(), 200);
        let h = receiver
            .wait_for_point("the histogram", |p| p.metric == DURATION)
            .await;
        assert_eq!(h.unit, "s");
        assert_eq!(h.str("mcp.method.name"), Some("tools/call"));
        assert_eq!(
            h.value,
            PointValue::Histogram {
                count: 2,
                sum: Some(0.03),
                bounds: vec![0.01, 0.02],
                bucket_counts: vec![1, 1, 0],
            }
        );
        let c = receiver
            .wait_for_point("the counter", |p| p.metric == "presa.rejections")
            .await;
        assert_eq!(
            c.value,
            PointValue::Sum {
                value: 4.0,
                monotonic: true
            }
        );
        assert_eq!(c.str("error.type"), Some("-32022"));
    }

    /// What it does not read is refused, and nothing of it kept: OTLP/JSON and an unknown
    /// encoding get 415, bytes that are not an export 400.
    #[tokio::test]
    async fn otel_receiver_refuses_what_it_does_not_read() {
        let receiver = Receiver::start().await;
        let json_body = br#"{"resourceSpans":[]}"#.to_vec();
        let reply = post(
            &receiver,
            "/v1/traces",
            json_body,
            &[("content-type", "application/json")],
        )
        .await;
        assert_eq!(reply.status(), 415);
        let reply = post(
            &receiver,
            "/v1/traces",
            export().encode_to_vec(),
            &[PROTOBUF, ("content-encoding", "br")],
        )
        .await;
        assert_eq!(reply.status(), 415);
        let reply = post(&receiver, "/v1/traces", vec![0xff; 7], &[PROTOBUF]).await;
        assert_eq!(reply.status(), 400);
        let reply = post(&receiver, "/v1/metrics", vec![0xff; 7], &[PROTOBUF]).await;
        assert_eq!(reply.status(), 400);
        assert!(receiver.spans().is_empty());
        assert!(receiver.points().is_empty());
        let statuses: Vec<u16> = receiver.exports().iter().map(|e| e.status).collect();
        assert_eq!(statuses, [415, 415, 400, 400]);
    }
}

/// The Prometheus harness, against a target serving one gauge: Prometheus starts, scrapes
/// it, and its query API gives the series with its labels.
#[tokio::test]
async fn otel_prometheus_harness_scrapes_a_target() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let target = listener.local_addr().expect("its address").to_string();
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(|| async {
            "# TYPE presa_selftest gauge\npresa_selftest{kind=\"a\"} 3\n"
        }),
    );
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let Some(prometheus) = Prometheus::start(&target, "/metrics").await else {
        server.abort();
        return;
    };
    let series = prometheus.wait_for_series("presa_selftest").await;
    assert_eq!(series.len(), 1, "{series:#?}");
    assert_eq!(series[0]["metric"]["kind"], "a", "{series:#?}");
    assert_eq!(series[0]["metric"]["job"], "presa", "{series:#?}");
    assert_eq!(series[0]["value"][1], "3", "{series:#?}");
    server.abort();
}

// ---- the fixture's spans and metrics ----

/// A tool call that completes: its span has every attribute of a tool call and none of
/// an error, never the argument's value; its duration is recorded with the tool's name.
#[tokio::test]
async fn otel_a_completed_tool_call_is_a_server_span_by_the_conventions() {
    let (receiver, fixture) = exporting().await;
    let secret = "Zanzibar-4417";
    let reply = fixture
        .http()
        .call(
            7,
            "tools/call",
            json!({"name": "greet", "arguments": {"name": secret}}),
        )
        .await;
    assert_eq!(
        result(&reply)["content"][0]["text"],
        format!("Hello, {secret}!")
    );
    let span = span_of(&receiver, 7).await;
    assert_server_span(&span, "tools/call", Some("greet"), 7);
    assert_tool(&span, "greet");
    assert_ok(&span);
    assert_eq!(span.attr("mcp.resource.uri"), None, "{span:#?}");
    assert_never_holds(&span, secret);
    assert_eq!(
        span.parent_span_id, None,
        "without a traceparent in _meta, the span is a root: {span:#?}"
    );
    let point = duration_point(
        &receiver,
        &[
            ("mcp.method.name", "tools/call"),
            ("gen_ai.tool.name", "greet"),
            ("gen_ai.operation.name", "execute_tool"),
        ],
    )
    .await;
    assert_eq!(point.attributes.get("error.type"), None, "{point:#?}");
    assert_eq!(
        point.str("mcp.protocol.version"),
        Some(VERSION),
        "{point:#?}"
    );
    assert_eq!(point.str("network.transport"), Some("tcp"), "{point:#?}");
    assert_eq!(
        point.attributes.get("jsonrpc.request.id"),
        None,
        "{point:#?}"
    );
    assert!(
        !format!("{:?}", point.attributes).contains(secret),
        "{point:#?}"
    );
    assert_eq!(
        span.resource.get("service.name"),
        Some(&json!("presa-fixture")),
        "{span:#?}"
    );
    // Both went over OTLP/HTTP in protobuf, each to its path, and were taken.
    let exports = receiver.exports();
    for path in ["/v1/traces", "/v1/metrics"] {
        assert!(
            exports.iter().any(|e| e.path == path),
            "an export to {path}: {exports:#?}"
        );
    }
    for e in &exports {
        assert_eq!(e.content_type, "application/x-protobuf", "{e:#?}");
        assert_eq!(e.status, 200, "{e:#?}");
    }
}

/// Over stdio the span is the same but for the transport: `network.transport` is `pipe`,
/// and there is no HTTP. The fixture's telemetry exports what is left when it stops
/// (stdin's end), so the span arrives after the process ended.
#[tokio::test]
async fn otel_a_stdio_request_is_a_span_over_a_pipe() {
    let receiver = Receiver::start().await;
    let mut session =
        presa_tests::stdio::Session::fixture_with(FIXTURE, &["--otel", receiver.endpoint()]).await;
    let got = session
        .call(31, "tools/call", json!({"name": "greet"}))
        .await;
    let response = got.last().expect("a response");
    assert!(response.get("result").is_some(), "{response}");
    assert!(session.finish().await, "the fixture exits cleanly");
    let span = span_of(&receiver, 31).await;
    assert_eq!(span.name, "tools/call greet", "{span:#?}");
    assert_eq!(span.kind, Kind::Server, "{span:#?}");
    assert_eq!(span.str("mcp.method.name"), Some("tools/call"), "{span:#?}");
    assert_eq!(span.str("mcp.protocol.version"), Some(VERSION), "{span:#?}");
    assert_eq!(span.str("network.transport"), Some("pipe"), "{span:#?}");
    assert_eq!(span.attr("network.protocol.name"), None, "{span:#?}");
    assert_eq!(span.attr("network.protocol.version"), None, "{span:#?}");
    assert_tool(&span, "greet");
    assert_ok(&span);
    assert_known_keys(&span);
    duration_point(
        &receiver,
        &[("gen_ai.tool.name", "greet"), ("network.transport", "pipe")],
    )
    .await;
}

/// A string request id is `jsonrpc.request.id` as sent (not JSON-quoted).
#[tokio::test]
async fn otel_a_string_request_id_is_the_attribute_as_sent() {
    let (receiver, fixture) = exporting().await;
    let msg = presa_tests::request("request-7", "tools/call", json!({"name": "greet"}));
    let reply = fixture.http().post(&msg, &[]).await;
    result(&reply);
    let span = receiver
        .wait_for_span("jsonrpc.request.id request-7", |s| {
            s.str("mcp.method.name") == Some("tools/call")
        })
        .await;
    assert_eq!(
        span.attr("jsonrpc.request.id"),
        Some(&json!("request-7")),
        "{span:#?}"
    );
}

/// A legacy session's requests (2025-11-25, after `initialize`): the `initialize` span
/// records the negotiated revision, and a later call's span its session
/// (`mcp.session.id`) and that revision.
#[tokio::test]
async fn otel_a_legacy_sessions_spans_carry_the_session_and_its_revision() {
    let (receiver, fixture) = exporting().await;
    let http = fixture.http();
    let mut legacy = presa_tests::legacy::Legacy::open(&http, "2025-11-25").await;
    let session = legacy.session.clone().expect("a session id");
    let reply = legacy.call("tools/call", json!({"name": "greet"})).await;
    assert!(reply.response().get("result").is_some(), "{}", reply.body);
    let init = span_of(&receiver, 1).await;
    assert_eq!(init.name, "initialize", "{init:#?}");
    assert_eq!(init.kind, Kind::Server, "{init:#?}");
    assert_eq!(init.str("mcp.method.name"), Some("initialize"), "{init:#?}");
    assert_eq!(
        init.str("mcp.protocol.version"),
        Some("2025-11-25"),
        "{init:#?}"
    );
    assert_known_keys(&init);
    let call = span_of(&receiver, 2).await;
    assert_eq!(call.name, "tools/call greet", "{call:#?}");
    assert_tool(&call, "greet");
    assert_eq!(
        call.str("mcp.protocol.version"),
        Some("2025-11-25"),
        "{call:#?}"
    );
    assert_eq!(
        call.str("mcp.session.id"),
        Some(session.as_str()),
        "{call:#?}"
    );
    assert_eq!(call.str("network.transport"), Some("tcp"), "{call:#?}");
    assert_ok(&call);
    assert_known_keys(&call);
    let point = duration_point(
        &receiver,
        &[
            ("gen_ai.tool.name", "greet"),
            ("mcp.protocol.version", "2025-11-25"),
        ],
    )
    .await;
    assert!(
        !format!("{:?}", point.attributes).contains(&session),
        "no session id on the metric: {point:#?}"
    );
}

/// A span covers its whole request: a tool that sleeps for a while has a span at least
/// as long, and its duration sample (in seconds) is at least that while, in the bucket
/// whose bounds hold it.
#[tokio::test]
async fn otel_a_span_and_its_duration_cover_the_handler() {
    let (receiver, fixture) = exporting().await;
    let reply = fixture
        .http()
        .call(
            23,
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 0.3}}),
        )
        .await;
    result(&reply);
    let span = span_of(&receiver, 23).await;
    let lasted = span.end_unix_nano.saturating_sub(span.start_unix_nano);
    assert!(
        lasted >= 300_000_000,
        "the span lasts the handler's 300 ms, not {lasted} ns: {span:#?}"
    );
    let point = duration_point(&receiver, &[("gen_ai.tool.name", "slow_compute")]).await;
    match point.value {
        PointValue::Histogram {
            count,
            sum,
            ref bucket_counts,
            ..
        } => {
            assert_eq!(count, 1, "{point:#?}");
            assert!(sum.is_some_and(|s| s >= 0.3), "{point:#?}");
            // The five buckets up to 0.2 s are empty; the one count is above (in
            // (0.2, 0.5] unless the machine stalled).
            assert_eq!(bucket_counts[..5], [0; 5], "{point:#?}");
            assert_eq!(bucket_counts.iter().sum::<u64>(), 1, "{point:#?}");
        }
        ref other => panic!("a histogram: {other:?}"),
    }
}

/// A tool whose result is `isError: true`: `error.type` is `tool_error` and the status
/// ERROR; the response carried no error code, so no `rpc.response.status_code`.
#[tokio::test]
async fn otel_a_tool_error_is_error_type_tool_error() {
    let (receiver, fixture) = exporting().await;
    let reply = fixture
        .http()
        .call(8, "tools/call", json!({"name": "test_error_handling"}))
        .await;
    assert_eq!(result(&reply)["isError"], true);
    let span = span_of(&receiver, 8).await;
    assert_server_span(&span, "tools/call", Some("test_error_handling"), 8);
    assert_tool(&span, "test_error_handling");
    assert_eq!(span.str("error.type"), Some("tool_error"), "{span:#?}");
    assert_eq!(span.attr("rpc.response.status_code"), None, "{span:#?}");
    assert_eq!(span.status, SpanStatus::Error, "{span:#?}");
    duration_point(
        &receiver,
        &[
            ("gen_ai.tool.name", "test_error_handling"),
            ("error.type", "tool_error"),
        ],
    )
    .await;
}

/// A protocol error (an unknown tool: -32602): `error.type` and
/// `rpc.response.status_code` are "-32602", the status ERROR. The unknown name is a
/// client's arbitrary string: it is not a target, so neither the span's name nor
/// `gen_ai.tool.name` carries it (nor the metric, whose series it would multiply).
#[tokio::test]
async fn otel_a_protocol_error_is_error_type_its_code() {
    let (receiver, fixture) = exporting().await;
    let reply = fixture
        .http()
        .call(9, "tools/call", json!({"name": "no_such_tool"}))
        .await;
    assert_eq!(reply.error_code(), Some(-32602), "{}", reply.body);
    let span = span_of(&receiver, 9).await;
    assert_server_span(&span, "tools/call", None, 9);
    assert_eq!(span.attr("gen_ai.tool.name"), None, "{span:#?}");
    assert_never_holds(&span, "no_such_tool");
    assert_rpc_error(&span, -32602);
    let point = duration_point(
        &receiver,
        &[("mcp.method.name", "tools/call"), ("error.type", "-32602")],
    )
    .await;
    assert_eq!(point.str("rpc.response.status_code"), Some("-32602"));
    assert!(
        !format!("{:?}", point.attributes).contains("no_such_tool"),
        "{point:#?}"
    );
}

/// The status of a span whose answer was a JSON-RPC error is described by that error's
/// message (the conventions: "The status description SHOULD match the
/// `JSONRPCError.message`").
#[tokio::test]
async fn otel_an_error_spans_status_is_described_by_the_error_message() {
    let (receiver, fixture) = exporting().await;
    let reply = fixture
        .http()
        .call(22, "tools/call", json!({"name": "no_such_tool"}))
        .await;
    let message = reply.response()["error"]["message"]
        .as_str()
        .expect("an error message")
        .to_owned();
    let span = span_of(&receiver, 22).await;
    assert_eq!(span.status, SpanStatus::Error, "{span:#?}");
    assert_eq!(span.status_message, message, "{span:#?}");
}

/// Invalid params to a known tool (a required argument missing) are the same kind of
/// protocol error, named by the tool.
#[tokio::test]
async fn otel_invalid_params_to_a_known_tool_are_error_type_their_code() {
    let (receiver, fixture) = exporting().await;
    let reply = fixture
        .http()
        .call(
            10,
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {}}),
        )
        .await;
    assert_eq!(reply.error_code(), Some(-32602), "{}", reply.body);
    let span = span_of(&receiver, 10).await;
    assert_server_span(&span, "prompts/get", Some("test_prompt_with_arguments"), 10);
    assert_eq!(
        span.str("gen_ai.prompt.name"),
        Some("test_prompt_with_arguments"),
        "{span:#?}"
    );
    assert_rpc_error(&span, -32602);
}

/// `resources/read`: the method alone names the span (a URI is high-cardinality), and no
/// tool or prompt attribute is set. `mcp.resource.uri` is presa's opt-in
/// (`Telemetry::resource_uris`, off in the fixture), as issue 36 asks: a URI may carry
/// what a client asked for. The conventions' server span table has it "Conditionally
/// Required" on the span; on the metric it is "Opt-In" there too.
#[tokio::test]
async fn otel_a_resource_read_names_its_uri_in_an_attribute_only() {
    let (receiver, fixture) = exporting().await;
    let uri = "test://static-text";
    let reply = fixture
        .http()
        .call(11, "resources/read", json!({"uri": uri}))
        .await;
    assert_eq!(result(&reply)["contents"][0]["uri"], uri);
    let span = span_of(&receiver, 11).await;
    assert_server_span(&span, "resources/read", None, 11);
    assert_eq!(span.attr("mcp.resource.uri"), None, "opt-in: {span:#?}");
    assert_never_holds(&span, uri);
    assert_no_tool_or_prompt(&span);
    assert_ok(&span);
    let point = duration_point(&receiver, &[("mcp.method.name", "resources/read")]).await;
    assert_eq!(
        point.attributes.get("mcp.resource.uri"),
        None,
        "the URI is opt-in on the metric: {point:#?}"
    );
}

/// `prompts/get`: named by the prompt, `gen_ai.prompt.name`, no tool attributes.
#[tokio::test]
async fn otel_a_prompt_get_is_named_by_its_prompt() {
    let (receiver, fixture) = exporting().await;
    let reply = fixture
        .http()
        .call(12, "prompts/get", json!({"name": "test_simple_prompt"}))
        .await;
    assert!(result(&reply)["messages"].is_array(), "{}", reply.body);
    let span = span_of(&receiver, 12).await;
    assert_server_span(&span, "prompts/get", Some("test_simple_prompt"), 12);
    assert_eq!(
        span.str("gen_ai.prompt.name"),
        Some("test_simple_prompt"),
        "{span:#?}"
    );
    assert_eq!(span.attr("gen_ai.tool.name"), None, "{span:#?}");
    assert_eq!(span.attr("gen_ai.operation.name"), None, "{span:#?}");
    assert_ok(&span);
    duration_point(
        &receiver,
        &[
            ("mcp.method.name", "prompts/get"),
            ("gen_ai.prompt.name", "test_simple_prompt"),
        ],
    )
    .await;
}

/// A `traceparent` in `params._meta` is the span's remote parent: the span joins that
/// trace, under that span. An invalid one is ignored.
#[tokio::test]
async fn otel_a_traceparent_in_meta_is_the_spans_parent() {
    let (receiver, fixture) = exporting().await;
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent = "00f067aa0ba902b7";
    let reply = fixture
        .http()
        .call(
            13,
            "tools/call",
            json!({
                "name": "greet",
                "_meta": {"traceparent": format!("00-{trace_id}-{parent}-01")}
            }),
        )
        .await;
    result(&reply);
    let span = span_of(&receiver, 13).await;
    assert_server_span(&span, "tools/call", Some("greet"), 13);
    assert_eq!(span.trace_id, trace_id, "{span:#?}");
    assert_eq!(span.parent_span_id.as_deref(), Some(parent), "{span:#?}");
    assert_ok(&span);

    // One that does not parse (the all-zero trace id is invalid) parents nothing: the
    // span is a root of a trace of its own, and the request is served all the same.
    let reply = fixture
        .http()
        .call(
            24,
            "tools/call",
            json!({
                "name": "greet",
                "_meta": {"traceparent": format!("00-{}-{parent}-01", "0".repeat(32))}
            }),
        )
        .await;
    result(&reply);
    let span = span_of(&receiver, 24).await;
    assert_server_span(&span, "tools/call", Some("greet"), 24);
    assert_eq!(span.parent_span_id, None, "{span:#?}");
    assert_ne!(span.trace_id, "0".repeat(32), "{span:#?}");
}

/// An MRTR call over two rounds: two spans of the same tool, the second linked to the
/// first; the first (`input_required`) is not an error.
#[tokio::test]
async fn otel_the_rounds_of_an_mrtr_call_are_linked() {
    let (receiver, fixture) = exporting().await;
    let http = fixture.http();
    let params = crate::mrtr::call_params(
        "confirm_delete",
        json!({"filename": "notes.txt"}),
        crate::mrtr::form_caps(),
    );
    let first = http.call(14, "tools/call", params.clone()).await;
    let first = result(&first).clone();
    assert_eq!(first["resultType"], "input_required", "{first}");
    let state = first["requestState"].as_str().expect("a requestState");
    let answers = json!({"confirm-delete": crate::mrtr::accept(json!({"confirm": true}))});
    let second = http
        .call(
            15,
            "tools/call",
            crate::mrtr::retry(&params, answers, Some(state)),
        )
        .await;
    assert_eq!(
        result(&second)["content"][0]["text"],
        "Delete confirmed: true"
    );
    let round1 = span_of(&receiver, 14).await;
    let round2 = span_of(&receiver, 15).await;
    for (span, id) in [(&round1, 14), (&round2, 15)] {
        assert_server_span(span, "tools/call", Some("confirm_delete"), id);
        assert_tool(span, "confirm_delete");
        assert_ok(span);
    }
    assert!(
        round2.links_to(&round1),
        "the second round links to the first: {round2:#?}\nfirst: {round1:#?}"
    );
}

/// A task: the request that creates it has its span, and the span of the work that runs
/// it (an `execute_tool` span) links to that one.
#[tokio::test]
async fn otel_a_tasks_work_is_linked_to_the_request_that_created_it() {
    let (receiver, fixture) = exporting().await;
    let reply = fixture
        .http()
        .call(
            16,
            "tools/call",
            crate::tasks::declared(crate::tasks::tool(
                "slow_compute",
                json!({"seconds": 0, "label": "linked"}),
            )),
        )
        .await;
    assert_eq!(result(&reply)["resultType"], "task", "{}", reply.body);
    let created = span_of(&receiver, 16).await;
    assert_server_span(&created, "tools/call", Some("slow_compute"), 16);
    assert_tool(&created, "slow_compute");
    assert_ok(&created);
    let worker = receiver
        .wait_for_span("the task's work, linked to its creation", |s| {
            s.links_to(&created)
        })
        .await;
    // The GenAI conventions' execute_tool span: `execute_tool {gen_ai.tool.name}`,
    // INTERNAL (it serves no request of its own).
    assert_eq!(worker.name, "execute_tool slow_compute", "{worker:#?}");
    assert_eq!(worker.kind, Kind::Internal, "{worker:#?}");
    assert_eq!(
        worker.str("gen_ai.tool.name"),
        Some("slow_compute"),
        "{worker:#?}"
    );
    assert_eq!(
        worker.str("gen_ai.operation.name"),
        Some("execute_tool"),
        "{worker:#?}"
    );
    assert_eq!(worker.attr("error.type"), None, "{worker:#?}");
    assert_ne!(worker.span_id, created.span_id);
}

/// A request refused at admission (an unsupported protocol version: -32022, before any
/// handler runs) has its span with `error.type` "-32022", and a duration sample.
#[tokio::test]
async fn otel_a_rejected_request_has_a_span_and_a_sample() {
    let (receiver, fixture) = exporting().await;
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "v999.0.0"});
    let msg = presa_tests::request(17, "tools/call", json!({"name": "greet", "_meta": meta}));
    let reply = fixture
        .http()
        .post(&msg, &[("MCP-Protocol-Version", "v999.0.0")])
        .await;
    reply.assert_error(400, -32022, Some(json!(17)));
    let span = span_of(&receiver, 17).await;
    assert_eq!(span.kind, Kind::Server, "{span:#?}");
    assert_eq!(span.str("mcp.method.name"), Some("tools/call"), "{span:#?}");
    assert_eq!(span.str("network.transport"), Some("tcp"), "{span:#?}");
    assert_rpc_error(&span, -32022);
    duration_point(
        &receiver,
        &[("mcp.method.name", "tools/call"), ("error.type", "-32022")],
    )
    .await;
    receiver
        .wait_for_point("presa.server.rejections for -32022", |p| {
            p.metric == "presa.server.rejections"
                && p.str("rpc.response.status_code") == Some("-32022")
                && matches!(p.value, PointValue::Sum { value, monotonic: true } if value >= 1.0)
        })
        .await;
}

/// A request the HTTP transport refuses before reading it (a foreign `Origin`: 403,
/// -32600) has no method and no id to name a span by, so it has none; it is counted all
/// the same in `presa.server.rejections` by its code.
#[tokio::test]
async fn otel_a_request_refused_by_the_http_transport_is_counted() {
    let (receiver, fixture) = exporting().await;
    let msg = presa_tests::request(25, "tools/call", json!({"name": "greet"}));
    fixture
        .http()
        .post(&msg, &[("Origin", "http://evil.example.com")])
        .await
        .assert_error(403, -32600, None);
    receiver
        .wait_for_point("presa.server.rejections for -32600", |p| {
            p.metric == "presa.server.rejections"
                && p.str("rpc.response.status_code") == Some("-32600")
                && matches!(p.value, PointValue::Sum { value, monotonic: true } if value >= 1.0)
        })
        .await;
}

/// A request whose client goes away mid-call is cancelled: its span ends with
/// `error.type` `cancelled` (no JSON-RPC error was answered, so the value is presa's:
/// the conventions let an instrumentation name its own) and the status ERROR, with no
/// `rpc.response.status_code`; its duration is recorded with that `error.type`.
#[tokio::test]
async fn otel_a_cancelled_request_has_a_span_and_a_sample() {
    let (receiver, fixture) = exporting().await;
    let http = fixture.http();
    let pending = tokio::spawn(async move {
        http.call(
            18,
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 60}}),
        )
        .await
    });
    // The request is in the server once its in-flight gauge says so.
    let deadline = Deadline::new("the slow call is in flight");
    loop {
        let text = fixture.metrics_text().await;
        if in_flight(&text) >= 1.0 {
            break;
        }
        deadline.tick(&text).await;
    }
    pending.abort();
    let _ = pending.await;
    let span = span_of(&receiver, 18).await;
    assert_server_span(&span, "tools/call", Some("slow_compute"), 18);
    assert_tool(&span, "slow_compute");
    assert_eq!(span.str("error.type"), Some("cancelled"), "{span:#?}");
    assert_eq!(span.attr("rpc.response.status_code"), None, "{span:#?}");
    assert_eq!(span.status, SpanStatus::Error, "{span:#?}");
    duration_point(
        &receiver,
        &[
            ("gen_ai.tool.name", "slow_compute"),
            ("error.type", "cancelled"),
        ],
    )
    .await;
    // Once it ended, nothing is in flight.
    let deadline = Deadline::new("no request in flight");
    loop {
        let text = fixture.metrics_text().await;
        if in_flight(&text) == 0.0 {
            break;
        }
        deadline.tick(&text).await;
    }
}

/// The sum of `presa.server.active_requests` over its series in a Prometheus text.
fn in_flight(text: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with("presa_server_active_requests"))
        .filter_map(|l| l.rsplit(' ').next())
        .filter_map(|v| v.parse::<f64>().ok())
        .sum()
}

/// A handler that panics answers -32603 and its span says so (`error.type` "-32603"),
/// with a duration sample; the server keeps serving.
#[tokio::test]
async fn otel_a_panicking_handler_has_a_span_and_a_sample() {
    let receiver = Receiver::start().await;
    let fixture = Fixture::start_bin(OTEL_PANIC, &[], &receiver).await;
    let http = fixture.http();
    let reply = http
        .call(19, "tools/call", json!({"name": "test_panic"}))
        .await;
    assert_eq!(reply.error_code(), Some(-32603), "{}", reply.body);
    let span = span_of(&receiver, 19).await;
    assert_server_span(&span, "tools/call", Some("test_panic"), 19);
    assert_tool(&span, "test_panic");
    assert_rpc_error(&span, -32603);
    duration_point(
        &receiver,
        &[("gen_ai.tool.name", "test_panic"), ("error.type", "-32603")],
    )
    .await;
    result(&http.call(20, "tools/call", json!({"name": "greet"})).await);
}

/// Prometheus, scraping the fixture's `/metrics`, has the duration histogram's series
/// for a tool that was called.
#[tokio::test]
async fn otel_prometheus_scrapes_the_duration_histogram() {
    let (_receiver, fixture) = exporting().await;
    let Some(prometheus) = Prometheus::start(&fixture.authority(), "/metrics").await else {
        return;
    };
    result(
        &fixture
            .http()
            .call(21, "tools/call", json!({"name": "greet"}))
            .await,
    );
    let query = r#"mcp_server_operation_duration_seconds_bucket{gen_ai_tool_name="greet"}"#;
    let series = prometheus.wait_for_series(query).await;
    let les: std::collections::BTreeSet<String> = series
        .iter()
        .filter_map(|s| s["metric"]["le"].as_str().map(str::to_owned))
        .collect();
    assert!(les.contains("+Inf"), "a +Inf bucket: {series:#?}");
    assert_eq!(les.len(), BUCKETS.len() + 1, "every bucket: {series:#?}");
    for s in &series {
        assert_eq!(s["metric"]["mcp_method_name"], "tools/call", "{s}");
        assert_eq!(s["metric"]["job"], "presa", "{s}");
    }
    let count = prometheus
        .wait_for_series(
            r#"mcp_server_operation_duration_seconds_count{gen_ai_tool_name="greet"} >= 1"#,
        )
        .await;
    assert_eq!(count.len(), 1, "{count:#?}");
}

/// The value of the series `series` (a name, with its labels when it has any, as the
/// Prometheus text writes them) in a Prometheus text; 0 when it is not there yet.
fn series_value(text: &str, series: &str) -> f64 {
    text.lines()
        .filter_map(|l| l.strip_prefix(series))
        .filter_map(|rest| rest.strip_prefix(' '))
        .filter_map(|v| v.parse::<f64>().ok())
        .sum()
}

/// Waits until the fixture's `/metrics` has `series` at `value`.
async fn until_series(fixture: &Fixture, series: &str, value: f64) {
    let deadline = Deadline::new(format!("{series} at {value}"));
    loop {
        let text = fixture.metrics_text().await;
        if series_value(&text, series) == value {
            return;
        }
        deadline.tick(&text).await;
    }
}

/// `presa.subscriptions.open_streams` counts a listen stream while it is open, and no
/// more once its client went away.
#[tokio::test]
async fn otel_an_open_listen_stream_is_counted_until_it_closes() {
    let (_receiver, fixture) = exporting().await;
    let http = fixture.http();
    let series = "presa_subscriptions_open_streams";
    let listen = presa_tests::request(
        30,
        "subscriptions/listen",
        crate::subscriptions::listen_params(json!({"toolsListChanged": true})),
    );
    let mut first = http.open(&listen, &[]).await;
    assert_eq!(first.status, 200);
    first
        .next(presa_tests::wait::PATIENCE)
        .await
        .msg("the acknowledgement");
    until_series(&fixture, series, 1.0).await;
    let listen = presa_tests::request(
        31,
        "subscriptions/listen",
        crate::subscriptions::listen_params(json!({"toolsListChanged": true})),
    );
    let mut second = http.open(&listen, &[]).await;
    second
        .next(presa_tests::wait::PATIENCE)
        .await
        .msg("the acknowledgement");
    until_series(&fixture, series, 2.0).await;
    drop(first);
    until_series(&fixture, series, 1.0).await;
    drop(second);
    until_series(&fixture, series, 0.0).await;
}

/// `presa.request_state.failures` counts a retry whose `requestState` is refused when
/// opened (`open`), each time; a genuine state opens with no failure counted.
#[tokio::test]
async fn otel_a_refused_request_state_is_counted_as_an_open_failure() {
    let (_receiver, fixture) = exporting().await;
    let http = fixture.http();
    let series = r#"presa_request_state_failures_total{presa_request_state_operation="open"}"#;
    let params = crate::mrtr::call_params(
        "confirm_delete",
        json!({"filename": "notes.txt"}),
        crate::mrtr::form_caps(),
    );
    let first = http.call(32, "tools/call", params.clone()).await;
    let state = result(&first)["requestState"]
        .as_str()
        .expect("a requestState")
        .to_owned();
    let answers = json!({"confirm-delete": crate::mrtr::accept(json!({"confirm": true}))});
    for (id, expected) in [(33, 1.0), (34, 2.0)] {
        let refused = http
            .call(
                id,
                "tools/call",
                crate::mrtr::retry(&params, answers.clone(), Some("garbage")),
            )
            .await;
        assert_eq!(refused.error_code(), Some(-32602), "{}", refused.body);
        until_series(&fixture, series, expected).await;
    }
    let genuine = http
        .call(
            35,
            "tools/call",
            crate::mrtr::retry(&params, answers, Some(&state)),
        )
        .await;
    assert_eq!(
        result(&genuine)["content"][0]["text"],
        "Delete confirmed: true"
    );
    let text = fixture.metrics_text().await;
    assert_eq!(series_value(&text, series), 2.0, "{text}");
    assert_eq!(
        series_value(
            &text,
            r#"presa_request_state_failures_total{presa_request_state_operation="seal"}"#
        ),
        0.0,
        "{text}"
    );
}

/// A request still running when the server stops, past its drain (the fixture's
/// `DRAIN`), is dropped with its connection: its span ends as cancelled, with a duration
/// sample, both flushed before the process exits.
#[tokio::test]
async fn otel_a_request_dropped_at_shutdown_is_cancelled() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let (receiver, mut fixture) = exporting().await;
    let http = fixture.http();
    let pending = tokio::spawn(async move {
        http.call(
            36,
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 60}}),
        )
        .await
    });
    let deadline = Deadline::new("the slow call is in flight");
    loop {
        let text = fixture.metrics_text().await;
        if in_flight(&text) >= 1.0 {
            break;
        }
        deadline.tick(&text).await;
    }
    let pid = fixture.child.id().expect("the fixture runs");
    let pid = i32::try_from(pid).expect("a pid");
    kill(Pid::from_raw(pid), Signal::SIGTERM).expect("the signal is sent");
    let deadline = Deadline::new("the fixture exits");
    loop {
        if let Ok(Some(status)) = fixture.child.try_wait() {
            assert!(status.success(), "{status}");
            break;
        }
        deadline.tick("still running").await;
    }
    pending.abort();
    let _ = pending.await;
    let span = span_of(&receiver, 36).await;
    assert_server_span(&span, "tools/call", Some("slow_compute"), 36);
    assert_eq!(span.str("error.type"), Some("cancelled"), "{span:#?}");
    assert_eq!(span.attr("rpc.response.status_code"), None, "{span:#?}");
    assert_eq!(span.status, SpanStatus::Error, "{span:#?}");
    duration_point(
        &receiver,
        &[
            ("gen_ai.tool.name", "slow_compute"),
            ("error.type", "cancelled"),
        ],
    )
    .await;
}

// ---- presa's span exporter against the SDK's ----

/// One script of requests, each with a different shape of span: a tool call, a tool
/// error, a protocol error, invalid params, a resource read, a prompt, a parent with a
/// trace state from `_meta`, a string id longer than a one-byte protobuf length, the two
/// rounds of an MRTR call, and a task (whose run is a span of its own).
async fn twin_script(fixture: &Fixture) {
    let http = fixture.http();
    let calls = [
        (
            1,
            "tools/call",
            json!({"name": "greet", "arguments": {"name": "A"}}),
        ),
        (2, "tools/call", json!({"name": "test_error_handling"})),
        (3, "tools/call", json!({"name": "no_such_tool"})),
        (
            4,
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {}}),
        ),
        (5, "resources/read", json!({"uri": "test://static-text"})),
        (6, "prompts/get", json!({"name": "test_simple_prompt"})),
        (
            7,
            "tools/call",
            json!({
                "name": "greet",
                "_meta": {
                    "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                    "tracestate": "vendor=abc,other=1",
                    "baggage": "user=someone"
                }
            }),
        ),
    ];
    for (id, method, params) in calls {
        http.call(id, method, params).await;
    }
    let long_id = "x".repeat(200);
    let msg = presa_tests::request(
        long_id.as_str(),
        "tools/call",
        json!({"name": "greet", "arguments": {"name": "B"}}),
    );
    http.post(&msg, &[]).await;
    let params = crate::mrtr::call_params(
        "confirm_delete",
        json!({"filename": "notes.txt"}),
        crate::mrtr::form_caps(),
    );
    let first = http.call(8, "tools/call", params.clone()).await;
    let state = result(&first)["requestState"]
        .as_str()
        .expect("a requestState")
        .to_owned();
    let answers = json!({"confirm-delete": crate::mrtr::accept(json!({"confirm": true}))});
    http.call(
        9,
        "tools/call",
        crate::mrtr::retry(&params, answers, Some(&state)),
    )
    .await;
    http.call(
        10,
        "tools/call",
        crate::tasks::declared(crate::tasks::tool(
            "slow_compute",
            json!({"seconds": 0, "label": "twin"}),
        )),
    )
    .await;
}

/// What two spans of the same request must share whichever way they were exported:
/// everything but their ids, times, and what is random per process (the session id).
fn twin_view(span: &Span, by_id: &BTreeMap<String, String>) -> Value {
    let mut attributes = span.attributes.clone();
    attributes.remove("duration_us");
    let links: Vec<Value> = span
        .links
        .iter()
        .map(|l| {
            json!({
                // The request a link points to, by its request id (the ids differ).
                "to": by_id.get(&l.span_id).cloned().unwrap_or_else(|| "elsewhere".into()),
                "trace_state": l.trace_state,
                "flags": l.flags,
                "attributes": l.attributes,
            })
        })
        .collect();
    let remote_parent = span.parent_span_id.as_deref() == Some("00f067aa0ba902b7");
    json!({
        "name": span.name,
        "kind": format!("{:?}", span.kind),
        "attributes": attributes,
        "status": format!("{:?}", span.status),
        "status_message": span.status_message,
        "parent": span.parent_span_id.as_ref().map(|p| if remote_parent { p.clone() } else { "local".into() }),
        "trace": if remote_parent { span.trace_id.clone() } else { "own".into() },
        "trace_state": span.trace_state,
        "flags": span.flags,
        "links": links,
        "resource": span.resource,
        "scope": span.scope,
    })
}

/// Every span of the script, by request id (the task's run under `task`).
async fn twin_spans(receiver: &Receiver) -> BTreeMap<String, Value> {
    // Ten numbered requests, the long id, and the task's run.
    let spans = receiver
        .wait_for_spans("the script's spans", 12, |_| true)
        .await;
    let by_id: BTreeMap<String, String> = spans
        .iter()
        .map(|s| {
            let key = s
                .str("jsonrpc.request.id")
                .map_or_else(|| "task".to_owned(), str::to_owned);
            (s.span_id.clone(), key)
        })
        .collect();
    spans
        .iter()
        .map(|s| (by_id[&s.span_id].clone(), twin_view(s, &by_id)))
        .collect()
}

/// presa exports each request's span itself (one record per request, the OTLP body
/// written from it); `--otel-sdk` exports the same spans the SDK's way
/// (`tracing-opentelemetry`, the SDK's batch processor and OTLP exporter). For the same
/// requests the two must send the same spans: names, kinds, attributes, statuses,
/// parents, trace states, flags, links, resource and scope. This is what holds presa's
/// exporter to the plain one.
#[tokio::test]
async fn otel_presas_span_exporter_sends_what_the_sdk_sends() {
    let direct_receiver = Receiver::start().await;
    let sdk_receiver = Receiver::start().await;
    let direct = Fixture::start_bin(FIXTURE, &[], &direct_receiver).await;
    let sdk = Fixture::start_bin(FIXTURE, &["--otel-sdk"], &sdk_receiver).await;
    twin_script(&direct).await;
    twin_script(&sdk).await;
    let direct_spans = twin_spans(&direct_receiver).await;
    let sdk_spans = twin_spans(&sdk_receiver).await;
    assert_eq!(
        direct_spans.keys().collect::<Vec<_>>(),
        sdk_spans.keys().collect::<Vec<_>>(),
        "the same requests have spans"
    );
    for (id, direct) in &direct_spans {
        assert_eq!(
            direct, &sdk_spans[id],
            "request {id}: presa's exporter (left) and the SDK's (right) differ"
        );
    }
    // The script covers what it says: a remote parent with its trace state, a link from
    // the second MRTR round to the first, and one from the task's run to its creation.
    assert_eq!(direct_spans["7"]["parent"], "00f067aa0ba902b7");
    assert_eq!(direct_spans["7"]["trace_state"], "vendor=abc,other=1");
    assert_eq!(direct_spans["9"]["links"][0]["to"], "8");
    assert_eq!(direct_spans["task"]["links"][0]["to"], "10");
    assert_eq!(direct_spans["3"]["status"], "Error");
}

/// presa's exporter batches as the SDK's processor does, by its variables: a batch goes
/// as soon as it holds `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` spans (here 2, well before the
/// 30 s delay), never more; a span past the batch waits for the next.
#[tokio::test]
async fn otel_a_full_batch_is_sent_at_once_and_never_larger() {
    let receiver = Receiver::start().await;
    let fixture = Fixture::start_env(
        FIXTURE,
        &[],
        &[
            ("OTEL_BSP_SCHEDULE_DELAY", "30000"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "2"),
        ],
        &receiver,
    )
    .await;
    let http = fixture.http();
    for id in 1..=3 {
        result(&http.call(id, "tools/call", json!({"name": "greet"})).await);
    }
    let spans = receiver
        .wait_for_spans("a full batch of two", 2, |_| true)
        .await;
    assert_eq!(
        spans.len(),
        2,
        "one batch of two, the third waits: {spans:#?}"
    );
    let exports: Vec<_> = receiver
        .exports()
        .into_iter()
        .filter(|e| e.path == "/v1/traces")
        .collect();
    assert_eq!(exports.len(), 1, "{exports:#?}");
    assert_eq!(exports[0].spans, 2, "at the batch size, not past it");
    // The third is not sent before its delay (nor a fourth, which would fill its batch).
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(receiver.spans().len(), 2, "the third waits for its batch");
    result(&http.call(4, "tools/call", json!({"name": "greet"})).await);
    let spans = receiver
        .wait_for_spans("the second batch", 4, |_| true)
        .await;
    assert_eq!(spans.len(), 4);
}

/// A span a handler makes with `tracing` is exported too (through the OpenTelemetry
/// layer and the SDK's exporter), as a child of the request's span: same trace, the
/// request's span its parent; and the request's own span keeps its name (presa never
/// renames or marks a span that is not its own).
#[tokio::test]
async fn otel_a_handlers_own_span_is_a_child_of_the_requests() {
    let receiver = Receiver::start().await;
    let fixture = Fixture::start_bin(OTEL_PANIC, &[], &receiver).await;
    let reply = fixture
        .http()
        .call(31, "tools/call", json!({"name": "test_inner_span"}))
        .await;
    assert_eq!(result(&reply)["content"][0]["text"], "done inside a span");
    let request = span_of(&receiver, 31).await;
    assert_eq!(request.name, "tools/call test_inner_span", "{request:#?}");
    let inner = receiver
        .wait_for_span("the handler's own span", |s| s.name == "inner work")
        .await;
    assert_eq!(inner.trace_id, request.trace_id, "{inner:#?}");
    assert_eq!(
        inner.parent_span_id.as_deref(),
        Some(request.span_id.as_str()),
        "{inner:#?}"
    );
    assert_eq!(inner.str("work.kind"), Some("test"), "{inner:#?}");
    assert_eq!(inner.attr("gen_ai.tool.name"), None, "{inner:#?}");
}
