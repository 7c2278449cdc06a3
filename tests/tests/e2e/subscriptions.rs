//! `subscriptions/listen` (wire section 11; errata W-2, W-3 and section 5 on
//! `subscriptions.mdx`), over both real transports: always accepted, params validation,
//! the acknowledgement first and narrowed to what the server offers, every message tagged
//! with the listen id, list changes and resource updates delivered to the streams that
//! asked for them and to no others, and never a progress or log notification on a stream.
//! Transport-specific rules (SSE, keepalives, the stream cap, the graceful end) are in
//! `subscriptions_http` and `subscriptions_stdio`.
//!
//! [`Client`] drives one server over one transport: on HTTP each listen is its own SSE
//! response; on stdio every stream shares the session and messages are told apart by
//! `_meta["io.modelcontextprotocol/subscriptionId"]`. Every message is checked against
//! the official schema as it is read.

use crate::mrtr::{KINDS, Kind, Wire};
use presa::{
    Implementation, LogLevel, Prompt, PromptGet, Resource, ResourceRead, Server, ServerBuilder,
    StdioConfig, Tool, ToolCall,
};
use presa_tests::http::{Harness, standard_headers};
use presa_tests::request;
use presa_tests::schema::{check_exchange, check_notification, check_response};
use presa_tests::stdio::Session;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::{Duration, Instant};

pub(crate) const SUB_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// How long a test waits to be sure nothing more arrives on a stream.
pub(crate) const QUIET: Duration = Duration::from_millis(300);
/// The delay within which a list change must reach a listener (runner check, wire 11).
pub(crate) const PROMPTLY: Duration = Duration::from_millis(1500);
/// How long a test waits for something that must come.
pub(crate) const PATIENCE: Duration = Duration::from_secs(5);

/// The subscription id a notification carries, if any.
pub(crate) fn sub_id(m: &Value) -> Option<&Value> {
    m.get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|meta| meta.get(SUB_ID))
}

/// The method of a message, or `""`.
pub(crate) fn method(m: &Value) -> &str {
    m.get("method").and_then(Value::as_str).unwrap_or("")
}

/// Schema-checks one message of a listen stream (a notification, or the listen's result).
#[track_caller]
pub(crate) fn check_stream_message(m: &Value) {
    if m.get("method").is_some() {
        check_notification(m);
    } else {
        check_response("subscriptions/listen", m);
    }
}

/// Listen params: the filter, plus `_meta` members.
pub(crate) fn listen_params(notifications: Value) -> Value {
    json!({ "notifications": notifications })
}

/// What reading a stream gave.
#[derive(Debug)]
pub(crate) enum Next {
    /// A message of the stream.
    Msg(Value),
    /// The stream ended (HTTP body end; stdio end of output).
    End,
    /// Nothing within the wait.
    Timeout,
}

impl Next {
    /// The message; panics otherwise.
    #[track_caller]
    pub(crate) fn msg(self, what: &str) -> Value {
        match self {
            Next::Msg(m) => m,
            other => panic!("expected {what}, got {other:?}"),
        }
    }
}

/// One frame of an SSE body.
#[derive(Debug)]
pub(crate) enum Frame {
    /// A comment line (`: keepalive`), without the colon.
    Comment(String),
    /// A `data:` event, parsed and schema-checked.
    Data(Value),
}

/// A listen response over Streamable HTTP, read as it arrives.
pub(crate) struct Sse {
    pub(crate) status: u16,
    pub(crate) headers: reqwest::header::HeaderMap,
    resp: reqwest::Response,
    buf: String,
    ended: bool,
    /// Every raw byte read, for assertions on the wire format.
    pub(crate) raw: String,
}

impl Sse {
    /// POSTs `message` (a listen request) with the standard headers and returns the open
    /// response, whatever its status.
    pub(crate) async fn open(h: &Harness, message: &Value) -> Sse {
        let mut req = h.client().post(&h.url).body(message.to_string());
        for (k, v) in standard_headers(message) {
            req = req.header(k, v);
        }
        let resp = tokio::time::timeout(PATIENCE, req.send())
            .await
            .expect("the listen response starts")
            .expect("the listen request is sent");
        Sse {
            status: resp.status().as_u16(),
            headers: resp.headers().clone(),
            resp,
            buf: String::new(),
            ended: false,
            raw: String::new(),
        }
    }

    /// A header's value.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The next frame (comment or event) within `within`: `None` on timeout or at the end.
    pub(crate) async fn frame(&mut self, within: Duration) -> Option<Frame> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(at) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..at + 2).collect();
                let block = block.trim_end_matches('\n');
                if block.lines().all(|l| l.starts_with(':')) {
                    let text = block
                        .lines()
                        .map(|l| l.trim_start_matches(':').trim())
                        .collect::<Vec<_>>()
                        .join("\n");
                    return Some(Frame::Comment(text));
                }
                let data: Vec<&str> = block
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                let json = data.join("\n");
                let m: Value = serde_json::from_str(&json)
                    .unwrap_or_else(|e| panic!("SSE data {json:?} is not JSON: {e}"));
                check_stream_message(&m);
                return Some(Frame::Data(m));
            }
            if self.ended {
                return None;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.resp.chunk()).await {
                Err(_) => return None,
                Ok(Ok(Some(chunk))) => {
                    let text = String::from_utf8(chunk.to_vec()).expect("UTF-8 SSE");
                    self.raw.push_str(&text);
                    // SSE allows CRLF; normalize so blocks split on a blank line.
                    self.buf.push_str(&text.replace("\r\n", "\n"));
                }
                Ok(Ok(None)) | Ok(Err(_)) => self.ended = true,
            }
        }
    }

    /// The next message (comments skipped) within `within`.
    pub(crate) async fn next(&mut self, within: Duration) -> Next {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.frame(left).await {
                Some(Frame::Data(m)) => return Next::Msg(m),
                Some(Frame::Comment(_)) => continue,
                None if self.ended && !self.buf.contains("\n\n") => return Next::End,
                None => return Next::Timeout,
            }
        }
    }
}

/// A client of one server over one transport, holding its listen streams.
pub(crate) struct Client {
    pub(crate) kind: Kind,
    http: Option<Harness>,
    stdio: Option<Session>,
    /// HTTP: one SSE response per listen id.
    streams: Vec<(Value, Sse)>,
    /// stdio: lines read but not yet asked for.
    backlog: Vec<Value>,
    /// stdio: every line read, in order.
    pub(crate) seen: Vec<Value>,
    /// stdio: the method of each request sent, by id, to schema-check its response.
    methods: HashMap<String, String>,
}

impl Client {
    /// Serves `server` over `kind` with default settings.
    pub(crate) async fn start(kind: Kind, server: &Server) -> Client {
        match kind {
            Kind::Http => Client::over_http(Harness::start(server.clone()).await),
            Kind::Stdio => {
                Client::over_stdio(Session::in_process(server.clone(), StdioConfig::default()))
            }
        }
    }

    pub(crate) fn over_http(h: Harness) -> Client {
        Client {
            kind: Kind::Http,
            http: Some(h),
            stdio: None,
            streams: Vec::new(),
            backlog: Vec::new(),
            seen: Vec::new(),
            methods: HashMap::new(),
        }
    }

    pub(crate) fn over_stdio(s: Session) -> Client {
        Client {
            kind: Kind::Stdio,
            http: None,
            stdio: Some(s),
            streams: Vec::new(),
            backlog: Vec::new(),
            seen: Vec::new(),
            methods: HashMap::new(),
        }
    }

    /// The HTTP harness.
    pub(crate) fn harness(&self) -> &Harness {
        self.http.as_ref().expect("an HTTP client")
    }

    /// The stdio session.
    pub(crate) fn session(&mut self) -> &mut Session {
        self.stdio.as_mut().expect("a stdio client")
    }

    /// Sends a listen request with `params` (full `_meta` added) and returns its first
    /// message, which must be the acknowledgement tagged with `id`.
    pub(crate) async fn listen(&mut self, id: Value, params: Value) -> Value {
        let message = request(id.clone(), "subscriptions/listen", params);
        match self.kind {
            Kind::Http => {
                let mut sse = Sse::open(self.harness(), &message).await;
                assert_eq!(sse.status, 200, "listen {id}: HTTP status");
                assert!(
                    sse.header("content-type")
                        .is_some_and(|c| c.starts_with("text/event-stream")),
                    "a listen response is always SSE: {:?}",
                    sse.header("content-type")
                );
                let first = sse.next(PATIENCE).await.msg("the acknowledgement");
                self.streams.push((id.clone(), sse));
                assert_ack(&first, &id);
                first
            }
            Kind::Stdio => {
                self.methods
                    .insert(id.to_string(), "subscriptions/listen".into());
                self.session().send(&message).await;
                let first = self.next(&id, PATIENCE).await.msg("the acknowledgement");
                assert_ack(&first, &id);
                first
            }
        }
    }

    /// The listen filter `notifications`, acknowledged: returns the acknowledged filter.
    pub(crate) async fn listen_to(&mut self, id: Value, notifications: Value) -> Value {
        let ack = self.listen(id, listen_params(notifications)).await;
        ack["params"]["notifications"].clone()
    }

    /// Sends an ordinary request and returns every message up to its response (on stdio,
    /// lines of streams are kept for [`Client::next`]).
    pub(crate) async fn call(&mut self, id: i64, method: &str, params: Value) -> Vec<Value> {
        match self.kind {
            Kind::Http => {
                let reply = self.harness().post(&request(id, method, params), &[]).await;
                check_exchange(method, &reply.messages);
                reply.messages
            }
            Kind::Stdio => {
                self.methods.insert(json!(id).to_string(), method.into());
                self.session().send(&request(id, method, params)).await;
                let mut own = Vec::new();
                loop {
                    let m = self.read_line(PATIENCE).await.unwrap_or_else(|| {
                        panic!("no response to {method} {id} within {PATIENCE:?}")
                    });
                    let response = m.get("method").is_none();
                    if response && m.get("id") == Some(&json!(id)) {
                        own.push(m);
                        return own;
                    }
                    // Stream events, stream ends and other responses are not this call's.
                    if sub_id(&m).is_some()
                        || crate::subscriptions::method(&m) == "notifications/cancelled"
                        || response
                    {
                        self.backlog.push(m);
                    } else {
                        own.push(m);
                    }
                }
            }
        }
    }

    /// Sends a request without waiting for its response (read it with [`Client::next`]
    /// and its id). stdio only.
    pub(crate) async fn send_request(&mut self, id: Value, method: &str, params: Value) {
        self.methods.insert(id.to_string(), method.into());
        self.session().send(&request(id, method, params)).await;
    }

    /// Closes stdin and waits for the server to end; whether it ended cleanly. stdio only.
    pub(crate) async fn finish(mut self) -> bool {
        self.stdio.take().expect("a stdio client").finish().await
    }

    /// The result of a request that must succeed.
    pub(crate) async fn ok(&mut self, id: i64, method: &str, params: Value) -> Value {
        let messages = self.call(id, method, params).await;
        let last = messages.last().expect("a response").clone();
        assert!(last.get("error").is_none(), "{method}: {last}");
        last["result"].clone()
    }

    /// Reads one stdio line, schema-checked.
    async fn read_line(&mut self, within: Duration) -> Option<Value> {
        let m = self.session().recv_within(within).await?;
        if m.get("method").is_some() {
            check_notification(&m);
        } else {
            let id = m.get("id").map(Value::to_string).unwrap_or_default();
            let method = self.methods.get(&id).cloned().unwrap_or_default();
            check_response(&method, &m);
        }
        self.seen.push(m.clone());
        Some(m)
    }

    /// The next message of the stream opened by listen `id`, within `within`.
    pub(crate) async fn next(&mut self, id: &Value, within: Duration) -> Next {
        match self.kind {
            Kind::Http => {
                let sse = self
                    .streams
                    .iter_mut()
                    .find(|(i, _)| i == id)
                    .map(|(_, s)| s)
                    .unwrap_or_else(|| panic!("no listen stream {id}"));
                sse.next(within).await
            }
            Kind::Stdio => {
                if let Some(at) = self.backlog.iter().position(|m| belongs(m, id)) {
                    return Next::Msg(self.backlog.remove(at));
                }
                let deadline = Instant::now() + within;
                loop {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Next::Timeout;
                    }
                    match self.read_line(left).await {
                        Some(m) if belongs(&m, id) => return Next::Msg(m),
                        Some(m) => self.backlog.push(m),
                        None => return Next::Timeout,
                    }
                }
            }
        }
    }

    /// Every message of stream `id` arriving within `within`.
    pub(crate) async fn drain(&mut self, id: &Value, within: Duration) -> Vec<Value> {
        let deadline = Instant::now() + within;
        let mut out = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(id, left).await {
                Next::Msg(m) => out.push(m),
                Next::End | Next::Timeout => return out,
            }
        }
    }

    /// Waits for a notification `wanted` on stream `id`, failing on anything else first;
    /// returns how long it took.
    pub(crate) async fn expect_event(&mut self, id: &Value, wanted: &str) -> Duration {
        let start = Instant::now();
        let kind = self.kind;
        match self.next(id, PATIENCE).await {
            Next::Msg(m) => {
                assert_eq!(method(&m), wanted, "{kind:?}: stream {id}: {m}");
                assert_eq!(
                    sub_id(&m),
                    Some(id),
                    "{kind:?}: tagged with its listen id: {m}"
                );
                start.elapsed()
            }
            other => panic!("{kind:?}: stream {id}: expected {wanted}, got {other:?}"),
        }
    }

    /// Asserts nothing arrives on stream `id` for [`QUIET`].
    pub(crate) async fn expect_quiet(&mut self, id: &Value) {
        let kind = self.kind;
        let extra = self.drain(id, QUIET).await;
        assert!(extra.is_empty(), "{kind:?}: stream {id} got {extra:?}");
    }
}

/// Whether a stdio message belongs to the stream of listen `id`: tagged with it, its
/// `notifications/cancelled`, or its result.
fn belongs(m: &Value, id: &Value) -> bool {
    sub_id(m) == Some(id)
        || (method(m) == "notifications/cancelled" && m["params"]["requestId"] == *id)
        || (m.get("method").is_none() && m.get("id") == Some(id))
}

/// Asserts `m` is the acknowledgement of listen `id`.
#[track_caller]
pub(crate) fn assert_ack(m: &Value, id: &Value) {
    assert_eq!(
        method(m),
        "notifications/subscriptions/acknowledged",
        "the acknowledgement is the first message of a stream: {m}"
    );
    assert_eq!(sub_id(m), Some(id), "tagged with the listen id: {m}");
    assert!(m["params"]["notifications"].is_object(), "{m}");
}

// ---- servers ----

/// A tool that adds the tool named by its `name` argument (another request changing the
/// registry at run time).
pub(crate) fn adder() -> Tool {
    Tool::new("add_tool")
        .description("Adds a tool")
        .input_schema(json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}))
        .handler(|call: ToolCall| async move {
            let name = call.arguments["name"].as_str().unwrap_or("x").to_owned();
            call.ctx
                .server()
                .add_tool(plain_tool(&name))
                .map_err(|e| presa::ToolError::new(e.to_string()))?;
            Ok::<_, presa::ToolError>(format!("added {name}"))
        })
}

/// A tool that adds the prompt named by its `name` argument.
pub(crate) fn prompt_adder() -> Tool {
    Tool::new("add_prompt")
        .description("Adds a prompt")
        .input_schema(json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}))
        .handler(|call: ToolCall| async move {
            let name = call.arguments["name"].as_str().unwrap_or("x").to_owned();
            call.ctx
                .server()
                .add_prompt(plain_prompt(&name))
                .map_err(|e| presa::ToolError::new(e.to_string()))?;
            Ok::<_, presa::ToolError>(format!("added {name}"))
        })
}

/// A tool that logs at every level and reports progress, then adds a tool.
fn noisy_adder() -> Tool {
    Tool::new("noisy_add")
        .description("Logs, reports progress, then adds a tool")
        .handler(|call: ToolCall| async move {
            let ctx = call.ctx;
            for level in LogLevel::ALL {
                ctx.log(level, format!("at {}", level.as_str()));
            }
            ctx.progress(1.0, Some(2.0), Some("half"));
            let _ = ctx.server().add_tool(plain_tool("from_noisy"));
            ctx.progress(2.0, Some(2.0), Some("done"));
            "noisy"
        })
}

pub(crate) fn plain_tool(name: &str) -> Tool {
    Tool::new(name)
        .description("A plain tool")
        .handler(|_: ToolCall| async { "plain" })
}

pub(crate) fn plain_prompt(name: &str) -> Prompt {
    Prompt::new(name)
        .description("A plain prompt")
        .handler(|_: PromptGet| async { "plain".to_owned() })
}

pub(crate) fn plain_resource(uri: &str) -> Resource {
    Resource::new(uri, "doc")
        .description("A plain resource")
        .mime_type("text/plain")
        .handler(|_: ResourceRead| async { "text" })
}

/// A server with tools, prompts and resources (and the adders).
pub(crate) fn builder(name: &str) -> ServerBuilder {
    Server::builder(Implementation::new(name, "1"))
        .tool(adder())
        .tool(prompt_adder())
        .tool(noisy_adder())
        .prompt(plain_prompt("hello"))
        .resource(plain_resource("test://docs"))
}

/// [`builder`] with resource events on.
pub(crate) fn full_server() -> Server {
    builder("subs")
        .resource_notifications(true)
        .build()
        .expect("builds")
}

// ---- W-3: always accepted ----

#[tokio::test]
async fn listen_is_accepted_even_by_a_server_with_nothing_to_offer() {
    for kind in KINDS {
        let empty = Server::builder(Implementation::new("empty", "1"))
            .build()
            .expect("a server with no items builds");
        let mut c = Client::start(kind, &empty).await;
        let acked = c
            .listen_to(
                json!(1),
                json!({"toolsListChanged": true, "promptsListChanged": true,
                       "resourcesListChanged": true, "resourceSubscriptions": ["test://x"]}),
            )
            .await;
        assert_eq!(acked, json!({}), "{kind:?}: an empty acknowledged filter");
        // And with an empty filter asked for.
        let acked = c.listen_to(json!(2), json!({})).await;
        assert_eq!(acked, json!({}), "{kind:?}");
        // The stream is held open or ended gracefully; never an error.
        match c.next(&json!(1), QUIET).await {
            Next::Timeout => {}
            Next::Msg(m) => {
                assert!(m.get("error").is_none(), "{kind:?}: {m}");
            }
            Next::End => panic!("{kind:?}: the stream ended without a graceful end"),
        }
    }
}

// ---- params ----

#[tokio::test]
async fn listen_params_are_validated() {
    let many: Vec<String> = (0..1001).map(|i| format!("test://docs/{i}")).collect();
    let cases = [
        json!({}),
        json!({"notifications": "all"}),
        json!({"notifications": []}),
        json!({"notifications": null}),
        json!({"notifications": 1}),
        json!({"notifications": {"toolsListChanged": "yes"}}),
        json!({"notifications": {"promptsListChanged": 1}}),
        json!({"notifications": {"resourcesListChanged": null}}),
        json!({"notifications": {"toolsListChanged": true, "promptsListChanged": {}}}),
        json!({"notifications": {"resourceSubscriptions": "test://docs"}}),
        json!({"notifications": {"resourceSubscriptions": {"uri": "test://docs"}}}),
        json!({"notifications": {"resourceSubscriptions": ["relative/path"]}}),
        json!({"notifications": {"resourceSubscriptions": ["test://docs", "no-scheme"]}}),
        json!({"notifications": {"resourceSubscriptions": [1]}}),
        json!({"notifications": {"resourceSubscriptions": [null]}}),
        json!({"notifications": {"resourceSubscriptions": many}}),
    ];
    for kind in KINDS {
        let server = full_server();
        let mut w = Wire::start(kind, &server).await;
        for (i, params) in cases.iter().enumerate() {
            let got = w
                .call(i as i64 + 1, "subscriptions/listen", params.clone())
                .await;
            got.error(-32602, 400);
        }
        let got = w.call(100, "subscriptions/listen", json!({})).await;
        got.invalid_params("subscriptions/listen requires a notifications object");
        assert_eq!(server.open_streams(), 0, "{kind:?}: no stream was opened");
    }
}

// ---- the acknowledgement ----

#[tokio::test]
async fn the_acknowledgement_is_narrowed_to_what_the_server_offers() {
    let everything = json!({"toolsListChanged": true, "promptsListChanged": true,
                            "resourcesListChanged": true,
                            "resourceSubscriptions": ["test://docs", "test://docs/a"]});
    for kind in KINDS {
        // Without resource events: resource notifications are dropped, and not advertised.
        let server = builder("subs").build().expect("builds");
        let mut c = Client::start(kind, &server).await;
        let caps = c.ok(1, "server/discover", json!({})).await["capabilities"].clone();
        assert_eq!(caps["tools"]["listChanged"], json!(true), "{caps}");
        assert_eq!(caps["prompts"]["listChanged"], json!(true), "{caps}");
        assert!(caps["resources"].get("subscribe").is_none(), "{caps}");
        assert!(caps["resources"].get("listChanged").is_none(), "{caps}");
        let acked = c.listen_to(json!(2), everything.clone()).await;
        assert_eq!(
            acked,
            json!({"toolsListChanged": true, "promptsListChanged": true}),
            "{kind:?}"
        );
        // Flags asked as false are not acknowledged.
        let acked = c
            .listen_to(
                json!(3),
                json!({"toolsListChanged": false, "promptsListChanged": true}),
            )
            .await;
        assert_eq!(acked, json!({"promptsListChanged": true}), "{kind:?}");

        // With resource events on, all of it.
        let server = full_server();
        let mut c = Client::start(kind, &server).await;
        let caps = c.ok(1, "server/discover", json!({})).await["capabilities"].clone();
        assert_eq!(caps["resources"]["subscribe"], json!(true), "{caps}");
        assert_eq!(caps["resources"]["listChanged"], json!(true), "{caps}");
        let acked = c.listen_to(json!(2), everything.clone()).await;
        assert_eq!(acked, everything, "{kind:?}");
        // At most 1000 URIs, and 1000 is accepted.
        let many: Vec<String> = (0..1000).map(|i| format!("test://docs/{i}")).collect();
        let acked = c
            .listen_to(json!(3), json!({"resourceSubscriptions": many}))
            .await;
        assert_eq!(
            acked["resourceSubscriptions"].as_array().map(Vec::len),
            Some(1000)
        );

        // A server with tools only acknowledges only tools.
        let tools_only = Server::builder(Implementation::new("t", "1"))
            .tool(adder())
            .build()
            .expect("builds");
        let mut c = Client::start(kind, &tools_only).await;
        let acked = c.listen_to(json!("x"), everything.clone()).await;
        assert_eq!(acked, json!({"toolsListChanged": true}), "{kind:?}");
    }
}

#[tokio::test]
async fn every_message_of_a_stream_carries_the_listen_id_string_or_integer() {
    for kind in KINDS {
        let server = full_server();
        let mut c = Client::start(kind, &server).await;
        let ids = [json!("listen-a"), json!(42), json!(0), json!("42")];
        for id in &ids {
            // listen() asserts the acknowledgement is first and tagged with exactly `id`.
            c.listen_to(id.clone(), json!({"toolsListChanged": true}))
                .await;
        }
        c.ok(
            1,
            "tools/call",
            json!({"name": "add_tool", "arguments": {"name": "t1"}}),
        )
        .await;
        for id in &ids {
            // Each stream gets its own copy, tagged with its own id (42 is not "42").
            c.expect_event(id, "notifications/tools/list_changed").await;
            c.expect_quiet(id).await;
        }
    }
}

// ---- events ----

#[tokio::test]
async fn a_stream_sees_list_changes_made_by_another_request_within_1_5_s() {
    for kind in KINDS {
        let server = full_server();
        let mut c = Client::start(kind, &server).await;
        let id = json!("lists");
        c.listen_to(
            id.clone(),
            json!({"toolsListChanged": true, "promptsListChanged": true}),
        )
        .await;
        c.ok(
            1,
            "tools/call",
            json!({"name": "add_tool", "arguments": {"name": "fresh"}}),
        )
        .await;
        let took = c
            .expect_event(&id, "notifications/tools/list_changed")
            .await;
        assert!(
            took < PROMPTLY,
            "{kind:?}: tools/list_changed after {took:?}"
        );
        let tools = c.ok(2, "tools/list", json!({})).await;
        assert!(tools["tools"].to_string().contains("\"fresh\""), "{tools}");

        c.ok(
            3,
            "tools/call",
            json!({"name": "add_prompt", "arguments": {"name": "fresh_p"}}),
        )
        .await;
        let took = c
            .expect_event(&id, "notifications/prompts/list_changed")
            .await;
        assert!(
            took < PROMPTLY,
            "{kind:?}: prompts/list_changed after {took:?}"
        );

        // Removing is a change too.
        assert!(server.remove_tool("fresh"));
        c.expect_event(&id, "notifications/tools/list_changed")
            .await;
        c.expect_quiet(&id).await;
    }
}

#[tokio::test]
async fn a_stream_filtered_to_prompts_sees_no_tools_list_changed() {
    for kind in KINDS {
        let server = full_server();
        let mut c = Client::start(kind, &server).await;
        let tools = json!("tools-only");
        let prompts = json!("prompts-only");
        c.listen_to(tools.clone(), json!({"toolsListChanged": true}))
            .await;
        c.listen_to(prompts.clone(), json!({"promptsListChanged": true}))
            .await;
        c.ok(
            1,
            "tools/call",
            json!({"name": "add_tool", "arguments": {"name": "t"}}),
        )
        .await;
        c.expect_event(&tools, "notifications/tools/list_changed")
            .await;
        c.ok(
            2,
            "tools/call",
            json!({"name": "add_prompt", "arguments": {"name": "p"}}),
        )
        .await;
        // The first event the prompts stream sees is the prompt change.
        c.expect_event(&prompts, "notifications/prompts/list_changed")
            .await;
        c.expect_quiet(&prompts).await;
        c.expect_quiet(&tools).await;
    }
}

#[tokio::test]
async fn resource_updates_reach_streams_subscribed_to_the_uri_or_a_parent_only() {
    for kind in KINDS {
        let server = full_server();
        let mut c = Client::start(kind, &server).await;
        let docs = json!("docs");
        let lists = json!("lists");
        c.listen_to(
            docs.clone(),
            json!({"resourceSubscriptions": ["test://docs"]}),
        )
        .await;
        c.listen_to(lists.clone(), json!({"resourcesListChanged": true}))
            .await;
        for uri in [
            "test://other",
            "test://docsx",
            "test://doc",
            "other://docs/a",
        ] {
            server.notify_resource_updated(uri);
        }
        server.notify_resource_updated("test://docs/chapter-1");
        server.notify_resource_updated("test://docs");
        let mut uris = Vec::new();
        for _ in 0..2 {
            let m = c.next(&docs, PATIENCE).await.msg("a resource update");
            assert_eq!(
                method(&m),
                "notifications/resources/updated",
                "{kind:?}: {m}"
            );
            assert_eq!(sub_id(&m), Some(&docs), "{m}");
            uris.push(m["params"]["uri"].as_str().unwrap_or_default().to_owned());
        }
        uris.sort();
        assert_eq!(uris, ["test://docs", "test://docs/chapter-1"], "{kind:?}");
        c.expect_quiet(&docs).await;
        // The list stream asked for no updates.
        c.expect_quiet(&lists).await;

        // List changes: from the application, and from the registry.
        server.notify_resources_list_changed();
        c.expect_event(&lists, "notifications/resources/list_changed")
            .await;
        c.expect_quiet(&lists).await;
        server
            .add_resource(plain_resource("test://new"))
            .expect("a new resource");
        c.expect_event(&lists, "notifications/resources/list_changed")
            .await;
        c.expect_quiet(&docs).await;
    }
}

#[tokio::test]
async fn events_never_include_progress_or_log_notifications() {
    for kind in KINDS {
        let server = full_server();
        let mut c = Client::start(kind, &server).await;
        let id = json!("clean");
        // The listen request itself asks for progress and every log level.
        c.listen(
            id.clone(),
            json!({"notifications": {"toolsListChanged": true},
                   "_meta": {"progressToken": "listen-token", "io.modelcontextprotocol/logLevel": "debug"}}),
        )
        .await;
        let own = c
            .call(
                1,
                "tools/call",
                json!({"name": "noisy_add", "arguments": {},
                       "_meta": {"progressToken": "trigger", "io.modelcontextprotocol/logLevel": "debug"}}),
            )
            .await;
        // The trigger's own notifications go with the trigger's request...
        let progress = own
            .iter()
            .filter(|m| method(m) == "notifications/progress")
            .count();
        let logs = own
            .iter()
            .filter(|m| method(m) == "notifications/message")
            .count();
        assert!(progress >= 1 && logs >= 1, "{kind:?}: {own:?}");
        for m in &own[..own.len() - 1] {
            assert!(
                sub_id(m).is_none(),
                "{kind:?}: not tagged as a stream event: {m}"
            );
            if method(m) == "notifications/progress" {
                assert_eq!(m["params"]["progressToken"], "trigger", "{m}");
            }
        }
        // ...and the stream gets the list change and nothing else.
        c.expect_event(&id, "notifications/tools/list_changed")
            .await;
        c.expect_quiet(&id).await;
        for m in &c.seen {
            assert!(
                !(method(m) == "notifications/progress"
                    && m["params"]["progressToken"] == "listen-token"),
                "{kind:?}: no progress for a listen request: {m}"
            );
        }
    }
}

// ---- the fixture (wire 16.1: the trigger tools) ----

#[tokio::test]
async fn the_fixture_triggers_reach_listen_streams_over_http_and_stdio() {
    let http = Client::over_http(Harness::start(presa_tests::fixture()).await);
    let stdio = Client::over_stdio(Session::fixture(env!("CARGO_BIN_EXE_fixture")).await);
    for mut c in [http, stdio] {
        let kind = c.kind;
        let both = json!("fixture-both");
        let prompts = json!(7);
        let acked = c
            .listen_to(
                both.clone(),
                json!({"toolsListChanged": true, "promptsListChanged": true}),
            )
            .await;
        assert_eq!(
            acked,
            json!({"toolsListChanged": true, "promptsListChanged": true}),
            "{kind:?}"
        );
        c.listen_to(prompts.clone(), json!({"promptsListChanged": true}))
            .await;
        for (i, (tool, event)) in [
            (
                "test_trigger_tool_change",
                "notifications/tools/list_changed",
            ),
            (
                "test_trigger_prompt_change",
                "notifications/prompts/list_changed",
            ),
        ]
        .into_iter()
        .enumerate()
        {
            let result = c
                .ok(
                    i as i64 + 1,
                    "tools/call",
                    json!({"name": tool, "arguments": {}}),
                )
                .await;
            assert_ne!(result["isError"], json!(true), "{result}");
            let took = c.expect_event(&both, event).await;
            assert!(took < PROMPTLY, "{kind:?}: {event} after {took:?}");
        }
        // The prompts-only stream saw the prompt change and no tool change.
        c.expect_event(&prompts, "notifications/prompts/list_changed")
            .await;
        c.expect_quiet(&prompts).await;
        c.expect_quiet(&both).await;
    }
}

// ---- after a graceful end ----

#[tokio::test]
async fn close_streams_ends_the_streams_open_now_and_later_listens_still_work() {
    // `Server::close_streams` ends "every open subscription stream"; a client that listens
    // again afterwards (as after a reload) gets a working stream, not one that ends at once.
    for kind in KINDS {
        let server = full_server();
        let mut c = Client::start(kind, &server).await;
        let before = json!("before");
        c.listen_to(before.clone(), json!({"toolsListChanged": true}))
            .await;
        server.close_streams();
        let end = c.next(&before, PATIENCE).await.msg("the graceful end");
        assert!(
            end.get("result").is_some() || method(&end) == "notifications/cancelled",
            "{kind:?}: {end}"
        );
        let after = json!("after");
        c.listen_to(after.clone(), json!({"toolsListChanged": true}))
            .await;
        c.ok(
            1,
            "tools/call",
            json!({"name": "add_tool", "arguments": {"name": "t"}}),
        )
        .await;
        let m = c.next(&after, PATIENCE).await.msg("an event");
        assert_eq!(
            method(&m),
            "notifications/tools/list_changed",
            "{kind:?}: a stream opened after close_streams() was ended at once: {m}"
        );
    }
}
