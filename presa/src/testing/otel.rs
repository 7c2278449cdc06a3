//! The request spans as an OpenTelemetry exporter receives them (feature `otel`): names,
//! kinds, attributes, statuses and parents, through the SDK's in-memory exporter; and the
//! duration histogram through its in-memory metric exporter.

use crate::wire::types::Implementation;
use crate::{Prompt, PromptGet, Resource, Server, Tool, ToolCall, ToolError};
use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry::{KeyValue, Value as OtelValue};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

/// A server with one of everything the tests call.
fn server() -> Server {
    Server::builder(Implementation::new("otel", "1"))
        .tool(Tool::new("echo").handler(|_: ToolCall| async { "hi" }))
        .tool(
            Tool::new("fails")
                .handler(|_: ToolCall| async { Err::<String, _>(ToolError::new("no")) }),
        )
        .tool(Tool::new("explodes").handler(|_: ToolCall| async {
            if true {
                panic!("on purpose");
            }
            "never"
        }))
        .prompt(Prompt::new("greet").handler(|_: PromptGet| async { "hello".to_owned() }))
        .resource(Resource::new("notes://one", "one").handler(|_| async { "note" }))
        .build()
        .expect("a server")
}

/// Spans exported while `run` runs, with this thread's subscriber sending request spans
/// to an in-memory exporter.
async fn spans<F: Future<Output = ()>>(run: impl FnOnce(Server) -> F) -> Vec<SpanData> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    // A second dispatcher, so that a callsite's interest is asked of every subscriber
    // (see `testing::pipeline::capture::on_this_thread`).
    let _second = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
    let _guard = tracing::subscriber::set_default(subscriber);
    run(server()).await;
    let _ = provider.force_flush();
    exporter
        .get_finished_spans()
        .expect("spans")
        .into_iter()
        .filter(|s| s.instrumentation_scope.name() == "test")
        .collect()
}

fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a OtelValue> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> Option<String> {
    attr(span, key).map(|v| v.as_str().into_owned())
}

/// The one request span among `spans`.
fn only(spans: &[SpanData]) -> &SpanData {
    let requests: Vec<&SpanData> = spans
        .iter()
        .filter(|s| attr(s, "mcp.method.name").is_some())
        .collect();
    assert_eq!(requests.len(), 1, "{spans:#?}");
    requests[0]
}

#[tokio::test(flavor = "current_thread")]
async fn a_tool_call_is_a_server_span_named_after_the_tool() {
    let spans = spans(|server| async move {
        let client = crate::testing::TestClient::new(&server);
        let r = client.call_tool("echo", json!({})).await;
        assert!(r.message.get("result").is_some(), "{}", r.message);
    })
    .await;
    let span = only(&spans);
    assert_eq!(span.name, "tools/call echo");
    assert_eq!(span.span_kind, SpanKind::Server);
    assert_eq!(span.status, Status::Unset);
    assert_eq!(text(span, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(text(span, "gen_ai.tool.name").as_deref(), Some("echo"));
    assert_eq!(
        text(span, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(
        text(span, "mcp.protocol.version").as_deref(),
        Some(crate::PROTOCOL_VERSION)
    );
    assert!(text(span, "jsonrpc.request.id").is_some());
    assert_eq!(attr(span, "error.type"), None);
    assert_eq!(attr(span, "rpc.response.status_code"), None);
}

#[tokio::test(flavor = "current_thread")]
async fn a_tool_error_is_error_type_tool_error() {
    let spans = spans(|server| async move {
        let client = crate::testing::TestClient::new(&server);
        let r = client.call_tool("fails", json!({})).await;
        assert_eq!(r.message["result"]["isError"], true, "{}", r.message);
    })
    .await;
    let span = only(&spans);
    assert_eq!(span.name, "tools/call fails");
    assert_eq!(text(span, "error.type").as_deref(), Some("tool_error"));
    assert_eq!(attr(span, "rpc.response.status_code"), None);
    assert!(
        matches!(span.status, Status::Error { .. }),
        "{:?}",
        span.status
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_protocol_error_is_its_code() {
    let spans = spans(|server| async move {
        let client = crate::testing::TestClient::new(&server);
        let r = client.call_tool("no-such-tool", json!({})).await;
        assert_eq!(r.message["error"]["code"], -32602, "{}", r.message);
    })
    .await;
    let span = only(&spans);
    // An unknown name is the client's string: not recorded, not in the name.
    assert_eq!(span.name, "tools/call");
    assert_eq!(attr(span, "gen_ai.tool.name"), None);
    assert_eq!(text(span, "error.type").as_deref(), Some("-32602"));
    assert_eq!(
        text(span, "rpc.response.status_code").as_deref(),
        Some("-32602")
    );
    // The status is described by the message the client was sent.
    assert_eq!(span.status, Status::error("Unknown tool: no-such-tool"));
    assert_eq!(attr(span, "otel.status_description"), None);
}

#[tokio::test(flavor = "current_thread")]
async fn a_tool_errors_status_has_no_description() {
    let spans = spans(|server| async move {
        let client = crate::testing::TestClient::new(&server);
        let r = client.call_tool("fails", json!({})).await;
        assert_eq!(r.message["result"]["isError"], true, "{}", r.message);
    })
    .await;
    // No JSON-RPC error to take a message from, and the tool's text is its output.
    assert_eq!(only(&spans).status, Status::error(""));
}

#[tokio::test(flavor = "current_thread")]
async fn a_resource_read_records_no_uri_unless_opted_in() {
    let spans = spans(|server| async move {
        let client = crate::testing::TestClient::new(&server);
        let r = client.read_resource("notes://one").await;
        assert!(r.message.get("result").is_some(), "{}", r.message);
    })
    .await;
    let span = only(&spans);
    assert_eq!(span.name, "resources/read");
    assert_eq!(
        text(span, "mcp.method.name").as_deref(),
        Some("resources/read")
    );
    assert_eq!(attr(span, "mcp.resource.uri"), None);
    assert_eq!(attr(span, "gen_ai.operation.name"), None);
}

#[tokio::test(flavor = "current_thread")]
async fn a_prompt_get_is_named_after_the_prompt() {
    let spans = spans(|server| async move {
        let client = crate::testing::TestClient::new(&server);
        let r = client.get_prompt("greet", json!({})).await;
        assert!(r.message.get("result").is_some(), "{}", r.message);
    })
    .await;
    let span = only(&spans);
    assert_eq!(span.name, "prompts/get greet");
    assert_eq!(text(span, "gen_ai.prompt.name").as_deref(), Some("greet"));
    assert_eq!(attr(span, "gen_ai.operation.name"), None);
    assert_eq!(span.status, Status::Unset);
}

#[tokio::test(flavor = "current_thread")]
async fn the_traceparent_in_meta_is_the_parent() {
    let spans = spans(|server| async move {
        let client = crate::testing::TestClient::new(&server);
        let mut meta = client.meta();
        meta.insert(
            "traceparent".into(),
            json!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
        );
        meta.insert("baggage".into(), json!("tenant=acme"));
        let r = client
            .send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "echo", "_meta": meta}}))
            .await;
        assert!(r.message.get("result").is_some(), "{}", r.message);
    })
    .await;
    let span = only(&spans);
    assert_eq!(
        span.span_context.trace_id().to_string(),
        "0af7651916cd43dd8448eb211c80319c"
    );
    assert_eq!(span.parent_span_id.to_string(), "b7ad6b7169203331");
    assert!(span.parent_span_is_remote);
    assert_eq!(text(span, "jsonrpc.request.id").as_deref(), Some("3"));
}

/// A string id is recorded as it is, not quoted; one with a control character is
/// escaped.
#[tokio::test(flavor = "current_thread")]
async fn a_string_id_is_recorded_unquoted() {
    let spans = spans(|server| async move {
        let client = crate::testing::TestClient::new(&server);
        for id in ["request-7", "bell\u{7}"] {
            let r = client
                .send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "echo", "_meta": client.meta()}}))
                .await;
            assert!(r.message.get("result").is_some(), "{}", r.message);
        }
    })
    .await;
    let ids: Vec<String> = spans
        .iter()
        .filter_map(|s| text(s, "jsonrpc.request.id"))
        .collect();
    assert_eq!(ids, ["request-7", "\"bell\\u{7}\""], "{ids:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_traceparent_that_does_not_parse_leaves_a_root() {
    let spans = spans(|server| async move {
        let client = crate::testing::TestClient::new(&server);
        let mut meta = client.meta();
        meta.insert("traceparent".into(), json!("00-not-a-trace-01"));
        let r = client
            .send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                "params": {"name": "echo", "_meta": meta}}))
            .await;
        assert!(r.message.get("result").is_some(), "{}", r.message);
    })
    .await;
    let span = only(&spans);
    assert_eq!(span.parent_span_id, opentelemetry::trace::SpanId::INVALID);
}

#[tokio::test(flavor = "current_thread")]
async fn a_panic_is_an_internal_error() {
    let spans = spans(|server| async move {
        let client = crate::testing::TestClient::new(&server);
        let r = client.call_tool("explodes", json!({})).await;
        assert_eq!(r.message["error"]["code"], -32603, "{}", r.message);
    })
    .await;
    let span = only(&spans);
    assert_eq!(span.name, "tools/call explodes");
    assert_eq!(text(span, "error.type").as_deref(), Some("-32603"));
    assert_eq!(
        text(span, "rpc.response.status_code").as_deref(),
        Some("-32603")
    );
    // The fixed message of an internal error, never the panic's text.
    assert_eq!(
        span.status,
        Status::error(crate::Error::internal().message().to_owned())
    );
    assert!(!format!("{span:?}").contains("on purpose"), "{span:#?}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_cancelled_request_is_error_type_cancelled() {
    use crate::context::Outbound;
    use crate::pipeline::{Era, Exchange, Reply, Served, Transport};
    use crate::wire::jsonrpc::{Inbound, decode_value};
    use std::sync::Arc;
    let spans = spans(|server| async move {
        let meta = crate::testing::TestClient::new(&server).meta();
        let message = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "echo", "_meta": meta}});
        let Ok(Inbound::Request(request)) = decode_value(message) else {
            panic!("a request");
        };
        let sink = Arc::new(crate::testing::Collect::default());
        sink.cancellation().cancel();
        let exchange = Exchange {
            transport: Transport::Stdio,
            era: Era::Modern,
            outbound: sink,
            buffer: String::new(),
            principal: None,
        };
        match server.core.serve(request, exchange) {
            Served::Now(Reply::Cancelled) => {}
            _ => panic!("cancelled before it started"),
        }
    })
    .await;
    let span = only(&spans);
    assert_eq!(text(span, "error.type").as_deref(), Some("cancelled"));
    assert_eq!(attr(span, "rpc.response.status_code"), None);
    assert_eq!(text(span, "network.transport").as_deref(), Some("pipe"));
    assert!(
        matches!(span.status, Status::Error { .. }),
        "{:?}",
        span.status
    );
}

/// A request whose future the transport drops before it concludes (the client went
/// away, or the server stopped) ends its span as cancelled, though nothing polled it
/// after the cancellation.
#[tokio::test(flavor = "current_thread")]
async fn a_request_dropped_while_it_runs_is_error_type_cancelled() {
    use crate::pipeline::{Era, Exchange, Served, Transport};
    use crate::wire::jsonrpc::{Inbound, decode_value};
    use std::sync::Arc;
    let spans = spans(|_| async move {
        let server = Server::builder(Implementation::new("otel", "1"))
            .tool(Tool::new("waits").handler(|_: ToolCall| async {
                std::future::pending::<()>().await;
                "never"
            }))
            .build()
            .expect("a server");
        let meta = crate::testing::TestClient::new(&server).meta();
        let message = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "waits", "_meta": meta}});
        let Ok(Inbound::Request(request)) = decode_value(message) else {
            panic!("a request");
        };
        let exchange = Exchange {
            transport: Transport::Stdio,
            era: Era::Modern,
            outbound: Arc::new(crate::testing::Collect::default()),
            buffer: String::new(),
            principal: None,
        };
        match server.core.serve(request, exchange) {
            Served::Later(rest) => drop(rest),
            Served::Now(_) => panic!("a waiting handler is the rest of the call"),
        }
    })
    .await;
    let span = only(&spans);
    assert_eq!(span.name, "tools/call waits");
    assert_eq!(text(span, "error.type").as_deref(), Some("cancelled"));
    assert_eq!(text(span, "outcome").as_deref(), Some("cancelled"));
    assert_eq!(attr(span, "rpc.response.status_code"), None);
    assert_eq!(span.status, Status::error(""));
}

/// The round of an MRTR call that asks for input is no tool error, though its handler
/// returned the `isError` result its `InputRequired` became; the same tool's `isError`
/// answer, once given the input, is one.
#[tokio::test(flavor = "current_thread")]
async fn an_mrtr_round_that_asks_is_no_tool_error() {
    #[derive(serde::Deserialize, schemars::JsonSchema, crate::ElicitForm)]
    #[presa(crate = "crate")]
    struct Sure {
        ok: bool,
    }
    let spans = spans(|_| async move {
        let server = Server::builder(Implementation::new("otel", "1"))
            .tool(Tool::new("confirm").handler(|call: ToolCall| async move {
                use crate::wire::types::CallToolResult;
                // A missing answer as a tool with `Result<_, E: Display>` reports it: the
                // error result `InputRequired`'s text makes.
                let sure = call
                    .ctx
                    .elicit::<Sure>("ok", "Sure?")
                    .get()
                    .map_err(|e| ToolError::new(e.to_string()))?;
                Ok::<_, ToolError>(match sure {
                    crate::mrtr::Elicitation::Accepted(Sure { ok: true }) => {
                        CallToolResult::text("done")
                    }
                    _ => CallToolResult::error("not confirmed"),
                })
            }))
            .build()
            .expect("a server");
        let client = crate::testing::TestClient::new(&server)
            .with_capabilities(json!({"elicitation": {"form": {}}}));
        for ok in [true, false] {
            let round = client.call_tool("confirm", json!({})).await;
            assert_eq!(round.result()["resultType"], "input_required");
            let state = round.result()["requestState"].clone();
            let retry = json!({"name": "confirm", "arguments": {}, "requestState": state,
                "inputResponses": {"ok": {"action": "accept", "content": {"ok": ok}}}});
            let answer = client.request("tools/call", retry).await;
            assert_eq!(answer.result()["isError"], !ok, "{}", answer.message);
        }
    })
    .await;
    let rounds: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name == "tools/call confirm")
        .collect();
    assert_eq!(rounds.len(), 4, "{spans:#?}");
    for (i, round) in rounds.iter().enumerate() {
        let tool_error = i == 3;
        assert_eq!(
            text(round, "error.type").as_deref(),
            tool_error.then_some("tool_error"),
            "round {i}: {round:#?}"
        );
        let status = if tool_error {
            Status::error("")
        } else {
            Status::Unset
        };
        assert_eq!(round.status, status, "round {i}");
    }
}

/// The retry round of an MRTR call links to the round that asked for input.
#[tokio::test(flavor = "current_thread")]
async fn the_rounds_of_an_mrtr_call_are_linked() {
    #[derive(serde::Deserialize, schemars::JsonSchema, crate::ElicitForm)]
    #[presa(crate = "crate")]
    #[allow(dead_code, reason = "only the form's schema and answer are read")]
    struct Sure {
        ok: bool,
    }
    let spans = spans(|_| async move {
        let server = Server::builder(Implementation::new("otel", "1"))
            .tool(Tool::new("confirm").handler(|call: ToolCall| async move {
                call.ctx.elicit::<Sure>("ok", "Sure?").get()?;
                Result::<_, crate::Error>::Ok("done")
            }))
            .build()
            .expect("a server");
        let client = crate::testing::TestClient::new(&server)
            .with_capabilities(json!({"elicitation": {"form": {}}}));
        let round = client.call_tool("confirm", json!({})).await;
        let state = round.result()["requestState"].clone();
        let retry = json!({"name": "confirm", "arguments": {}, "requestState": state,
            "inputResponses": {"ok": {"action": "accept", "content": {"ok": true}}}});
        client
            .request("tools/call", retry)
            .await
            .assert_text("done");
    })
    .await;
    let rounds: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name == "tools/call confirm")
        .collect();
    assert_eq!(rounds.len(), 2, "{spans:#?}");
    assert!(rounds[0].links.links.is_empty());
    assert_eq!(rounds[1].links.links.len(), 1, "{:?}", rounds[1].links);
    let linked = &rounds[1].links.links[0].span_context;
    assert_eq!(linked.trace_id(), rounds[0].span_context.trace_id());
    assert_eq!(linked.span_id(), rounds[0].span_context.span_id());
}

/// The duration histogram, with the conventions' attributes and buckets, recorded once
/// per request at its end by the metrics layer.
#[tokio::test(flavor = "current_thread")]
async fn the_duration_histogram_records_each_request() {
    use opentelemetry::metrics::MeterProvider as _;
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    // Process-wide, first call wins: this is the only test that starts metrics.
    crate::observe::start_metrics(&provider.meter("presa"));
    let subscriber = tracing_subscriber::registry().with(crate::otel::metrics_layer());
    let _second = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
    let _guard = tracing::subscriber::set_default(subscriber);
    let server = Server::builder(Implementation::new("otel", "1"))
        .tool(Tool::new("histogrammed").handler(|_: ToolCall| async { "hi" }))
        .build()
        .expect("a server");
    let client = crate::testing::TestClient::new(&server);
    client.call_tool("histogrammed", json!({})).await;
    client.call_tool("histogrammed", json!({})).await;
    let _ = provider.force_flush();
    let metrics = exporter.get_finished_metrics().expect("metrics");
    let mut found = None;
    for rm in &metrics {
        for scope in rm.scope_metrics() {
            for metric in scope.metrics() {
                if metric.name() != "mcp.server.operation.duration" {
                    continue;
                }
                assert_eq!(metric.unit(), "s");
                if let AggregatedMetrics::F64(MetricData::Histogram(h)) = metric.data() {
                    for point in h.data_points() {
                        let attrs: Vec<&KeyValue> = point.attributes().collect();
                        if attrs.iter().any(|kv| {
                            kv.key.as_str() == "gen_ai.tool.name"
                                && kv.value.as_str() == "histogrammed"
                        }) {
                            let keys: Vec<String> =
                                attrs.iter().map(|kv| kv.key.to_string()).collect();
                            found = Some((point.count(), point.bounds().collect::<Vec<_>>(), keys));
                        }
                    }
                }
            }
        }
    }
    let (count, bounds, keys) = found.expect("a data point for the tool");
    assert_eq!(count, 2);
    assert_eq!(bounds, crate::observe::DURATION_BUCKETS.to_vec());
    for key in [
        "mcp.method.name",
        "gen_ai.operation.name",
        "mcp.protocol.version",
    ] {
        assert!(keys.iter().any(|k| k == key), "{key} in {keys:?}");
    }
    assert!(!keys.iter().any(|k| k == "error.type"), "{keys:?}");
    let _ = provider.shutdown();
}

/// A task's run has a span of its own, `execute_tool {tool}`, linked to the request
/// that created the task.
#[cfg(feature = "tasks")]
#[tokio::test(flavor = "current_thread")]
async fn a_task_run_is_linked_to_the_request_that_created_it() {
    use crate::tasks::{TaskMode, Tasks};
    let spans = spans(|_| async move {
        let server = Server::builder(Implementation::new("otel", "1"))
            .tool(
                Tool::new("slowish")
                    .task(TaskMode::Required)
                    .handler(|_: ToolCall| async {
                        tokio::task::yield_now().await;
                        "done"
                    }),
            )
            .extension(Tasks::new())
            .build()
            .expect("a server");
        let client = crate::testing::TestClient::new(&server)
            .with_capabilities(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}));
        let created = client.call_tool("slowish", json!({})).await;
        let id = created.result()["taskId"].clone();
        for _ in 0..250 {
            let task = client.request("tasks/get", json!({"taskId": id})).await;
            if task.result()["status"] == "completed" {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the task did not complete");
    })
    .await;
    let request = spans
        .iter()
        .find(|s| s.name == "tools/call slowish")
        .expect("the creating request's span");
    let run = spans
        .iter()
        .find(|s| s.name == "execute_tool slowish")
        .expect("the run's span");
    assert_eq!(run.span_kind, SpanKind::Internal);
    assert_eq!(text(run, "gen_ai.tool.name").as_deref(), Some("slowish"));
    assert_eq!(run.links.links.len(), 1, "{:?}", run.links);
    let linked = &run.links.links[0].span_context;
    assert_eq!(linked.trace_id(), request.span_context.trace_id());
    assert_eq!(linked.span_id(), request.span_context.span_id());
}

/// `GET` on `path` over a real connection: the status line and the body.
async fn get(addr: std::net::SocketAddr, path: &str, origin: Option<&str>) -> (String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let origin = origin.map_or(String::new(), |o| format!("Origin: {o}\r\n"));
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{origin}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    let status = response.lines().next().unwrap_or_default().to_owned();
    let body = response
        .split_once("\r\n\r\n")
        .map_or(String::new(), |(_, b)| b.to_owned());
    (status, body)
}

/// `/metrics` is mounted only when asked for, under the endpoint's Origin rule; 503
/// until a pull reader is installed, then the Prometheus text of what was recorded.
#[tokio::test]
async fn the_metrics_path_serves_prometheus_text_under_the_origin_rule() {
    use opentelemetry::metrics::MeterProvider as _;
    use opentelemetry_sdk::metrics::SdkMeterProvider;
    let serve = |config: crate::HttpConfig| async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = server();
        tokio::spawn(async move {
            let _ = server
                .serve_http_on(listener, config.stop_on_signals(false), async {
                    let _ = stopped.await;
                })
                .await;
        });
        (addr, stop)
    };
    let (plain, _stop_plain) = serve(crate::HttpConfig::default()).await;
    assert!(get(plain, "/metrics", None).await.0.contains(" 404 "));
    let (addr, _stop) = serve(crate::HttpConfig::default().metrics(true)).await;
    let (status, _) = get(addr, "/metrics", Some("https://evil.example")).await;
    assert!(status.contains(" 403 "), "{status}");
    // No test installs the process-wide pull reader but this one.
    let (status, _) = get(addr, "/metrics", None).await;
    assert!(status.contains(" 503 "), "{status}");
    let provider = SdkMeterProvider::builder()
        .with_reader(crate::otel::prometheus_reader_for_tests())
        .build();
    provider
        .meter("t")
        .u64_counter("presa.test.scrapes")
        .build()
        .add(3, &[KeyValue::new("k", "v")]);
    let (status, body) = get(addr, "/metrics", Some("http://localhost:3000")).await;
    assert!(status.contains(" 200 "), "{status}");
    assert!(
        body.contains("presa_test_scrapes_total{k=\"v\"} 3\n"),
        "{body}"
    );
}
