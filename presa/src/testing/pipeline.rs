//! Tests of the pipeline driven in process: the request span, cancellation logging, and
//! the first poll in place.

use crate::wire::types::Implementation;
use serde_json::{Value, json};

/// Captures the fields of the `mcp.request` span, as made and as recorded later.
mod capture {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::layer::Context;

    pub(super) type Fields = Arc<Mutex<BTreeMap<String, String>>>;
    pub(super) struct Capture(pub(super) Fields);
    struct Visit<'a>(&'a mut BTreeMap<String, String>);

    impl tracing::field::Visit for Visit<'_> {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            self.0.insert(field.name().to_owned(), format!("{value:?}"));
        }
        fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
            self.0.insert(field.name().to_owned(), value.to_owned());
        }
    }

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
        fn on_new_span(
            &self,
            attrs: &tracing::span::Attributes<'_>,
            _: &tracing::span::Id,
            _: Context<'_, S>,
        ) {
            if attrs.metadata().name() == "mcp.request"
                && let Ok(mut fields) = self.0.lock()
            {
                attrs.record(&mut Visit(&mut fields));
            }
        }
        fn on_record(
            &self,
            _: &tracing::span::Id,
            values: &tracing::span::Record<'_>,
            _: Context<'_, S>,
        ) {
            if let Ok(mut fields) = self.0.lock() {
                values.record(&mut Visit(&mut fields));
            }
        }
    }

    /// Makes `subscriber` this thread's default until the guard is dropped.
    ///
    /// A second subscriber that takes nothing is registered alongside, for as long. While
    /// exactly one is registered, tracing decides whether a callsite is enabled from the
    /// default subscriber of the thread that first reaches it: a test running at the same
    /// time on another thread, with none, would have the callsite disabled for this one
    /// too. With two, every registered subscriber is asked.
    pub(super) fn on_this_thread(
        subscriber: impl tracing::Subscriber + Send + Sync + 'static,
    ) -> (tracing::subscriber::DefaultGuard, tracing::Dispatch) {
        let second = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
        (tracing::subscriber::set_default(subscriber), second)
    }

    pub(super) fn snapshot(fields: &Fields) -> BTreeMap<String, String> {
        fields.lock().map(|f| f.clone()).unwrap_or_default()
    }
}

/// A client's `notifications/cancelled` is logged with its reason
/// (`basic/patterns/cancellation.mdx`: "Both parties SHOULD log cancellation
/// reasons").
#[tokio::test(flavor = "current_thread")]
async fn cancellation_reasons_are_logged() {
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::layer::SubscriberExt;
    struct Events(Arc<Mutex<Vec<String>>>);
    struct Line<'a>(&'a mut String);
    impl tracing::field::Visit for Line<'_> {
        fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
            self.0.push_str(&format!("{}={v:?} ", f.name()));
        }
    }
    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Events {
        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            let mut line = String::new();
            event.record(&mut Line(&mut line));
            if let Ok(mut all) = self.0.lock() {
                all.push(line);
            }
        }
    }
    let events = Arc::new(Mutex::new(Vec::new()));
    let subscriber = tracing_subscriber::registry().with(Events(Arc::clone(&events)));
    let _guard = capture::on_this_thread(subscriber);
    let server = crate::Server::builder(Implementation::new("cancels", "1"))
        .build()
        .expect("a server");
    let client = crate::testing::TestClient::new(&server);
    let meta = client.meta();
    client
        .send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 4, "reason": "user pressed stop", "_meta": meta}}),
        )
        .await;
    let all = events.lock().map(|e| e.clone()).unwrap_or_default();
    assert!(
        all.iter()
            .any(|l| l.contains("request_id=4") && l.contains("user pressed stop")),
        "{all:?}"
    );
    // A long reason is cut at MAX_LOGGED_REASON bytes, at a character boundary.
    let long = "é".repeat(3000);
    client
        .send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 5, "reason": long, "_meta": meta}}),
        )
        .await;
    let all = events.lock().map(|e| e.clone()).unwrap_or_default();
    let line = all
        .iter()
        .find(|l| l.contains("request_id=5"))
        .expect("the second cancellation is logged");
    let logged = line.matches('é').count();
    assert_eq!(
        logged,
        crate::pipeline::MAX_LOGGED_REASON / 2,
        "{logged} chars logged"
    );
}

/// The `mcp.request` span carries what book/progress.md says it does, recorded from
/// the pipeline's several places (the tool's name in dispatch, the trace context at
/// admission, the outcome and duration at the end).
#[tokio::test(flavor = "current_thread")]
async fn the_request_span_records_its_fields() {
    use tracing_subscriber::layer::SubscriberExt;
    let fields = capture::Fields::default();
    let fields_handle = std::sync::Arc::clone(&fields);
    let subscriber =
        tracing_subscriber::registry().with(capture::Capture(std::sync::Arc::clone(&fields)));
    let _guard = capture::on_this_thread(subscriber);
    let server = crate::Server::builder(Implementation::new("spans", "1"))
        .tool(crate::Tool::new("echo").handler(|_: crate::ToolCall| async { "hi" }))
        .build()
        .expect("a server");
    let client = crate::testing::TestClient::new(&server);
    let mut meta = client.meta();
    meta.insert(
        "traceparent".into(),
        json!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
    );
    let reply = client
        .send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "echo", "_meta": meta}}))
        .await;
    assert!(reply.message.get("result").is_some(), "{}", reply.message);
    let fields = capture::snapshot(&fields);
    assert_eq!(
        fields.get("mcp.method.name").map(String::as_str),
        Some("tools/call")
    );
    assert_eq!(
        fields.get("jsonrpc.request.id").map(String::as_str),
        Some("7")
    );
    assert_eq!(
        fields.get("gen_ai.tool.name").map(String::as_str),
        Some("echo")
    );
    assert_eq!(
        fields.get("gen_ai.operation.name").map(String::as_str),
        Some("execute_tool")
    );
    assert_eq!(
        fields.get("otel.name").map(String::as_str),
        Some("tools/call echo")
    );
    assert_eq!(fields.get("otel.kind").map(String::as_str), Some("server"));
    assert_eq!(
        fields.get("mcp.protocol.version").map(String::as_str),
        Some(crate::PROTOCOL_VERSION)
    );
    assert_eq!(fields.get("outcome").map(String::as_str), Some("ok"));
    assert!(!fields.contains_key("error.type"), "{fields:?}");
    // In process: no network attributes.
    assert!(!fields.contains_key("network.transport"), "{fields:?}");
    // Without `otel` the trace context is a field; with it, the span's parent.
    #[cfg(not(feature = "otel"))]
    assert_eq!(
        fields.get("trace_parent").map(String::as_str),
        Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
    );
    assert!(fields.contains_key("duration_us"), "{fields:?}");
    // A method no one serves is recorded as `other`, not as the client wrote it.
    if let Ok(mut f) = fields_handle.lock() {
        f.clear();
    }
    let reply = client
        .send(
            json!({"jsonrpc": "2.0", "id": 8, "method": "x/\u{1b}[31m-attacker-chosen",
            "params": {"_meta": client.meta()}}),
        )
        .await;
    assert_eq!(reply.message["error"]["code"], -32601, "{}", reply.message);
    let recorded = capture::snapshot(&fields_handle);
    assert_eq!(
        recorded.get("mcp.method.name").map(String::as_str),
        Some("other"),
        "{recorded:?}"
    );
}

/// The level lowered (a reload) while a request runs: its span, enabled when made,
/// still gets its outcome and duration (the span is kept, not looked up again at the
/// end).
#[tokio::test(flavor = "current_thread")]
async fn a_level_lowered_mid_request_loses_no_field() {
    use tracing_subscriber::filter::LevelFilter;
    use tracing_subscriber::layer::SubscriberExt;
    let fields = capture::Fields::default();
    let (filter, handle) = tracing_subscriber::reload::Layer::new(LevelFilter::INFO);
    let subscriber = tracing_subscriber::registry()
        .with(filter)
        .with(capture::Capture(std::sync::Arc::clone(&fields)));
    let _guard = capture::on_this_thread(subscriber);
    let server = crate::Server::builder(Implementation::new("spans", "1"))
        .tool(
            crate::Tool::new("lower").handler(move |_: crate::ToolCall| {
                let handle = handle.clone();
                async move {
                    handle.reload(LevelFilter::WARN)?;
                    Ok::<_, crate::ToolError>("hi")
                }
            }),
        )
        .build()
        .expect("a server");
    let client = crate::testing::TestClient::new(&server);
    let meta = client.meta();
    let reply = client
        .send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "lower", "_meta": meta}}))
        .await;
    assert_eq!(
        reply.message["result"]["content"][0]["text"], "hi",
        "{}",
        reply.message
    );
    let fields = capture::snapshot(&fields);
    assert_eq!(
        fields.get("outcome").map(String::as_str),
        Some("ok"),
        "{fields:?}"
    );
    assert!(fields.contains_key("duration_us"), "{fields:?}");
}

/// A `tools/call` whose handler completes at its first poll is answered by `begin`
/// itself, with no future of the pipeline's own; one whose handler waits comes back
/// as the rest, polled once (not twice: a handler's first `yield_now` then yields),
/// which answers it; any other method that completes at its first poll is answered
/// by `begin` too, and one that waits (a `prompts/get`) is the rest, its handler
/// polled once in place. The span records the outcome either way.
#[tokio::test(flavor = "current_thread")]
async fn a_call_completing_at_once_is_answered_without_a_future() {
    use crate::context::Outbound;
    use crate::pipeline::{Era, Exchange, Reply, Served, Transport};
    use crate::testing::Collect as Sink;
    use crate::wire::jsonrpc::{Inbound, decode_value};
    use std::sync::Arc;
    use tracing_subscriber::layer::SubscriberExt;
    let fields = capture::Fields::default();
    let subscriber = tracing_subscriber::registry().with(capture::Capture(Arc::clone(&fields)));
    let _guard = capture::on_this_thread(subscriber);
    let polls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&polls);
    let prompt_polls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let prompt_counted = Arc::clone(&prompt_polls);
    let server = crate::Server::builder(Implementation::new("begin", "1"))
        .tool(crate::Tool::new("now").handler(|_: crate::ToolCall| async { "now" }))
        .tool(
            crate::Tool::new("explodes").handler(|_: crate::ToolCall| async {
                if true {
                    panic!("on purpose, at the first poll");
                }
                "never"
            }),
        )
        .tool(
            crate::Tool::new("later").handler(move |_: crate::ToolCall| {
                let counted = Arc::clone(&counted);
                async move {
                    counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    "later"
                }
            }),
        )
        .prompt(
            crate::Prompt::new("later").handler(move |_: crate::PromptGet| {
                let counted = Arc::clone(&prompt_counted);
                async move {
                    counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    "later".to_owned()
                }
            }),
        )
        .build()
        .expect("a server");
    let meta = crate::testing::TestClient::new(&server).meta();
    let begin_on = |id: i64, method: &str, params: Value, sink: Arc<Sink>| {
        let mut params = params;
        params["_meta"] = Value::Object(meta.clone());
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method,
            "params": params});
        let Ok(Inbound::Request(request)) = decode_value(message) else {
            panic!("a request");
        };
        let exchange = Exchange {
            transport: Transport::InProcess,
            era: Era::Modern,
            outbound: sink,
            buffer: String::new(),
            principal: None,
        };
        server.core.serve(request, exchange)
    };
    let begin_method =
        |id: i64, method: &str, params: Value| begin_on(id, method, params, Arc::default());
    let begin = |id: i64, name: &str| begin_method(id, "tools/call", json!({ "name": name }));
    let text = |reply: Reply| match reply {
        Reply::Response {
            body, status: 200, ..
        } => {
            let message: Value = serde_json::from_str(&body).expect("JSON");
            message["result"]["content"][0]["text"].clone()
        }
        _ => panic!("a 200 response"),
    };
    let outcome = || capture::snapshot(&fields).get("outcome").cloned();

    match begin(1, "now") {
        Served::Now(reply) => assert_eq!(text(reply), "now"),
        Served::Later(_) => panic!("a handler done at its first poll is answered at once"),
    }
    assert_eq!(outcome().as_deref(), Some("ok"));
    if let Ok(mut f) = fields.lock() {
        f.clear();
    }
    match begin(2, "later") {
        Served::Later(rest) => {
            let polled = polls.load(std::sync::atomic::Ordering::SeqCst);
            assert_eq!(polled, 1, "the handler was polled in place");
            assert_eq!(outcome(), None, "not concluded before it has run");
            assert_eq!(text(rest.await), "later");
        }
        Served::Now(_) => panic!("a waiting handler is the rest of the call"),
    }
    assert_eq!(outcome().as_deref(), Some("ok"));
    match begin_method(3, "server/discover", json!({})) {
        Served::Now(Reply::Response { status: 200, .. }) => {}
        _ => panic!("another method done at its first poll is answered at once"),
    }
    // Another method that waits is the rest too, its handler polled once in place.
    if let Ok(mut f) = fields.lock() {
        f.clear();
    }
    match begin_method(6, "prompts/get", json!({ "name": "later" })) {
        Served::Later(rest) => {
            let polled = prompt_polls.load(std::sync::atomic::Ordering::SeqCst);
            assert_eq!(polled, 1, "the prompt's handler was polled in place");
            assert_eq!(outcome(), None, "not concluded before it has run");
            let Reply::Response {
                body, status: 200, ..
            } = rest.await
            else {
                panic!("a 200 response");
            };
            let message: Value = serde_json::from_str(&body).expect("JSON");
            assert_eq!(
                message["result"]["messages"][0]["content"]["text"], "later",
                "{message}"
            );
            assert_eq!(
                prompt_polls.load(std::sync::atomic::Ordering::SeqCst),
                1,
                "the prompt's handler was called once"
            );
            assert_eq!(outcome().as_deref(), Some("ok"));
        }
        Served::Now(_) => panic!("a waiting prompt is the rest of the request"),
    }

    // A request cancelled before it starts runs nothing.
    if let Ok(mut f) = fields.lock() {
        f.clear();
    }
    let cancelled = Arc::new(Sink::default());
    cancelled.cancellation().cancel();
    let before = polls.load(std::sync::atomic::Ordering::SeqCst);
    match begin_on(4, "tools/call", json!({"name": "later"}), cancelled) {
        Served::Now(Reply::Cancelled) => {}
        _ => panic!("a request cancelled before it starts is cancelled"),
    }
    assert_eq!(
        polls.load(std::sync::atomic::Ordering::SeqCst),
        before,
        "its handler is never polled"
    );
    assert_eq!(outcome().as_deref(), Some("cancelled"));

    // A handler that panics at the poll in place is -32603, and the span says so.
    if let Ok(mut f) = fields.lock() {
        f.clear();
    }
    match begin(5, "explodes") {
        Served::Now(Reply::Response { body, .. }) => {
            let message: Value = serde_json::from_str(&body).expect("JSON");
            assert_eq!(message["error"]["code"], -32603, "{message}");
        }
        _ => panic!("a panic at the first poll is answered at once"),
    }
    assert_eq!(outcome().as_deref(), Some("panic"));
}

/// A handler set with `Tool::handler` gets the `ToolCall` it documents: its own tool's
/// name (one handler serving two tools tells them apart) and the checked arguments.
/// (`#[tool]` glue takes the arguments without the name; the macro tests cover it.)
#[tokio::test]
async fn a_builder_handler_gets_its_tools_name_and_arguments() {
    let which = |call: crate::ToolCall| async move {
        let said = call
            .arguments
            .get("say")
            .and_then(Value::as_str)
            .unwrap_or("");
        format!("{}: {said}", call.name)
    };
    let schema = json!({"type": "object", "properties": {"say": {"type": "string"}}});
    let server = crate::Server::builder(Implementation::new("named", "1"))
        .tool(
            crate::Tool::new("first")
                .input_schema(schema.clone())
                .handler(which),
        )
        .tool(
            crate::Tool::new("second")
                .input_schema(schema)
                .handler(which),
        )
        .build()
        .expect("a server");
    let client = crate::testing::TestClient::new(&server);
    client
        .call_tool("first", json!({"say": "a"}))
        .await
        .assert_text("first: a");
    client
        .call_tool("second", json!({"say": "b"}))
        .await
        .assert_text("second: b");
}

/// Request state is bound to the server's canonical URI when it has one: two servers with
/// one name and one key, reached by different URIs, refuse each other's state; the same
/// URI accepts it. A URI that is not an absolute http(s) URI with a host is refused when
/// the server is built.
#[tokio::test]
async fn request_state_is_bound_to_the_canonical_uri() {
    use crate::mrtr::{Keyring, StateKey};
    #[derive(serde::Deserialize, schemars::JsonSchema, crate::ElicitForm)]
    #[presa(crate = "crate")]
    #[allow(dead_code, reason = "only the form's schema and answer are read")]
    struct Ok {
        ok: bool,
    }
    let server = |uri: &str| {
        let keys =
            Keyring::new(vec![StateKey::new("k", [7u8; 32]).expect("a key")]).expect("a keyring");
        crate::Server::builder(Implementation::new("same", "1"))
            .state_keys(keys)
            .canonical_uri(uri)
            .tool(
                crate::Tool::new("ask").handler(|call: crate::ToolCall| async move {
                    call.ctx.elicit::<Ok>("ok", "OK?").get()?;
                    Result::<_, crate::Error>::Ok("done")
                }),
            )
            .build()
            .expect("a server")
    };
    let first = server("https://a.example/mcp");
    let client = crate::testing::TestClient::new(&first)
        .with_capabilities(json!({"elicitation": {"form": {}}}));
    let round = client.call_tool("ask", json!({})).await;
    let state = round.result()["requestState"].clone();
    let retry = json!({"name": "ask", "arguments": {}, "requestState": state,
        "inputResponses": {"ok": {"action": "accept", "content": {"ok": true}}}});
    for (uri, accepted) in [
        ("https://a.example/mcp", true),
        ("https://b.example/mcp", false),
    ] {
        let other = server(uri);
        let client = crate::testing::TestClient::new(&other)
            .with_capabilities(json!({"elicitation": {"form": {}}}));
        let answer = client.request("tools/call", retry.clone()).await;
        if accepted {
            answer.assert_text("done");
        } else {
            answer.assert_error(-32602);
        }
    }
    for bad in [
        "mcp.example.com",
        "ftp://x.example/",
        "https:///mcp",
        "https://user@x.example/",
        "https://x.example/#frag",
        "https://x.example/a b",
    ] {
        let built = crate::Server::builder(Implementation::new("s", "1"))
            .canonical_uri(bad)
            .build();
        assert!(built.is_err(), "{bad}");
    }
    for good in [
        "https://x.example",
        "http://127.0.0.1:3000/mcp",
        "https://x.example/a?b=c",
    ] {
        let built = crate::Server::builder(Implementation::new("s", "1"))
            .canonical_uri(good)
            .build();
        assert!(built.is_ok(), "{good}");
    }
}
