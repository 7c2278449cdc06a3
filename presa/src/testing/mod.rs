//! An in-process test client: drives a [`Server`] through the same pipeline as the
//! transports, with no socket. It fills each request's `_meta` (protocol version, client
//! capabilities and info, and optionally a log level or progress token), collects the
//! notifications the request produced, and offers the assertions a test wants.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use presa::testing::TestClient;
//! use presa::{CallToolResult, Tool, ToolCall};
//!
//! let server = presa::server!()
//!     .tool(Tool::new("hi").description("Greets").handler(|_c: ToolCall| async { "hi!" }))
//!     .build()
//!     .unwrap();
//! let client = TestClient::new(&server);
//! client.call_tool("hi", serde_json::json!({})).await.assert_text("hi!");
//! client.call_tool("nope", serde_json::json!({})).await.assert_error(-32602);
//! # }
//! ```

use crate::LogLevel;
use crate::context::{Cancellation, Outbound};
use crate::pipeline::{Era, Exchange, Reply, Served, Transport};
use crate::server::Server;
use crate::wire::jsonrpc::{self, Inbound};
use crate::wire::meta::{
    KEY_CLIENT_CAPABILITIES, KEY_CLIENT_INFO, KEY_LOG_LEVEL, KEY_PROTOCOL_VERSION, PROTOCOL_VERSION,
};
use serde_json::{Map, Value, json};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

/// A client that talks to a server in process.
pub struct TestClient {
    server: Server,
    capabilities: Value,
    client_info: Value,
    log_level: Option<LogLevel>,
    next_id: AtomicI64,
    answer: Option<Box<InputHandler>>,
    principal: Option<Arc<crate::Principal>>,
}

/// Answers one input request: given its key and the request (`method`, `params`), the
/// response to send back (an `ElicitResult`, a `CreateMessageResult`, a
/// `ListRootsResult`).
pub type InputHandler = dyn Fn(&str, &Value) -> Value + Send + Sync;

/// Most rounds [`TestClient::request`] plays before giving up on a multi round-trip call.
pub const MAX_ROUNDS: usize = 16;

/// What one request produced: the notifications sent for it, then its response.
#[derive(Clone, Debug)]
pub struct TestResponse {
    /// The notifications sent before the response, in order.
    pub notifications: Vec<Value>,
    /// The JSON-RPC response (`null` if the request was cancelled or was a
    /// notification).
    pub message: Value,
}

/// What one message sent with [`TestClient::send_raw`] produced, exactly as the server
/// wrote it.
#[derive(Clone, Debug)]
pub struct RawResponse {
    /// The notifications sent before the response, in order, each one JSON text.
    pub notifications: Vec<String>,
    /// The response (`None` when nothing is answered: a notification, a client's
    /// response, a cancelled request).
    pub message: Option<String>,
}

/// An outbound that keeps every frame sent (also the pipeline's own tests' sink).
#[derive(Default)]
pub(crate) struct Collect(Mutex<Vec<String>>, Cancellation);

impl Outbound for Collect {
    fn send(&self, frame: String) -> bool {
        match self.0.lock() {
            Ok(mut v) => {
                v.push(frame);
                true
            }
            Err(_) => false,
        }
    }

    fn cancellation(&self) -> &Cancellation {
        &self.1
    }
}

impl TestClient {
    /// A client declaring no capabilities (`{}`).
    pub fn new(server: &Server) -> Self {
        TestClient {
            server: server.clone(),
            capabilities: json!({}),
            client_info: json!({"name": "presa-test-client", "version": env!("CARGO_PKG_VERSION")}),
            log_level: None,
            next_id: AtomicI64::new(1),
            answer: None,
            principal: None,
        }
    }

    /// Sends every request as `principal`, as a verified token would over HTTP: its
    /// scopes are checked against what each operation needs, and handlers see it.
    pub fn with_principal(mut self, principal: crate::Principal) -> Self {
        self.principal = Some(Arc::new(principal));
        self
    }

    /// Answers `input_required` results with `handler` and retries with the answers and
    /// the request state, as a real client does, until the call completes. Without a
    /// handler, `input_required` results are returned as they are.
    pub fn with_input_handler(
        mut self,
        handler: impl Fn(&str, &Value) -> Value + Send + Sync + 'static,
    ) -> Self {
        self.answer = Some(Box::new(handler));
        self
    }

    /// Declares these client capabilities on every request.
    pub fn with_capabilities(mut self, capabilities: Value) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Opts every request into log messages at `level` and above.
    pub fn with_log_level(mut self, level: LogLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// The `_meta` this client puts on requests.
    pub fn meta(&self) -> Map<String, Value> {
        let mut meta = Map::new();
        meta.insert(KEY_PROTOCOL_VERSION.into(), Value::from(PROTOCOL_VERSION));
        meta.insert(KEY_CLIENT_CAPABILITIES.into(), self.capabilities.clone());
        meta.insert(KEY_CLIENT_INFO.into(), self.client_info.clone());
        if let Some(level) = self.log_level {
            meta.insert(KEY_LOG_LEVEL.into(), Value::from(level.as_str()));
        }
        meta
    }

    /// Sends `method` with `params`, adding this client's `_meta` (members of a `_meta`
    /// already in `params` win). With an input handler, `input_required` results are
    /// answered and retried; the last response is returned, with the notifications of
    /// every round.
    pub async fn request(&self, method: &str, params: Value) -> TestResponse {
        let mut params = match params {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let mut meta = self.meta();
        if let Some(Value::Object(given)) = params.remove("_meta") {
            meta.extend(given);
        }
        params.insert("_meta".into(), Value::Object(meta));
        let mut notifications = Vec::new();
        for _ in 0..MAX_ROUNDS {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let mut response = self
                .send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
                .await;
            notifications.append(&mut response.notifications);
            let result = response.message.get("result");
            let (Some(handler), Some(result)) = (&self.answer, result) else {
                response.notifications = notifications;
                return response;
            };
            if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
                response.notifications = notifications;
                return response;
            }
            let answers: Map<String, Value> = result
                .get("inputRequests")
                .and_then(Value::as_object)
                .map(|requests| {
                    requests
                        .iter()
                        .map(|(k, r)| (k.clone(), handler(k, r)))
                        .collect()
                })
                .unwrap_or_default();
            params.insert("inputResponses".into(), Value::Object(answers));
            match result.get("requestState") {
                Some(state) => params.insert("requestState".into(), state.clone()),
                None => params.remove("requestState"),
            };
        }
        panic!("{method} still needed input after {MAX_ROUNDS} rounds")
    }

    /// Sends a raw message exactly as given (no `_meta` is added).
    pub async fn send(&self, message: Value) -> TestResponse {
        let raw = self.serve(jsonrpc::decode_value(message)).await;
        TestResponse {
            notifications: raw.notifications.iter().map(|s| parse(s)).collect(),
            message: raw.message.as_deref().map_or(Value::Null, parse),
        }
    }

    /// Sends one message as a transport receives it (the bytes of a stdio line or of an
    /// HTTP body, read by the transports' own decoder) and returns what the server
    /// wrote, byte for byte, with nothing parsed: for asserting exact wire bytes, and
    /// for measuring the pipeline without a client's JSON work around it. No `_meta` is
    /// added.
    ///
    /// It answers as the stdio transport answers a line, with three differences: empty
    /// input is -32700 (stdio skips a blank line; an empty HTTP body is -32700 too), a
    /// `subscriptions/listen` stream that ends returns its result (stdio writes a
    /// `notifications/cancelled` instead), and the transports' own checks (HTTP
    /// headers, stdio's line length and duplicate ids) are not run. A notification that
    /// fails its check gets no answer, as on stdio (HTTP answers it with an error
    /// status).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use presa::testing::TestClient;
    /// use presa::{Tool, ToolCall};
    ///
    /// let server = presa::server!()
    ///     .tool(Tool::new("hi").description("Greets").handler(|_c: ToolCall| async { "hi!" }))
    ///     .build()
    ///     .unwrap();
    /// let client = TestClient::new(&server);
    /// let raw = client.send_raw(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#).await;
    /// assert!(raw.message.unwrap().starts_with(r#"{"jsonrpc":"2.0","id":7,"error":"#));
    /// # }
    /// ```
    pub async fn send_raw(&self, bytes: &[u8]) -> RawResponse {
        self.serve(jsonrpc::decode_lifting(bytes)).await
    }

    /// Serves one decoded message: a request through the pipeline, a notification
    /// through its check; a rejected request is answered with its error, a rejected
    /// notification not at all (see [`TestClient::send_raw`]).
    async fn serve(&self, decoded: Result<Inbound, jsonrpc::Rejection>) -> RawResponse {
        let collect = Arc::new(Collect::default());
        let message = match decoded {
            Err(rejection) if rejection.notification => None,
            Err(rejection) => Some(rejection.to_response()),
            Ok(Inbound::Response(_)) => None,
            Ok(Inbound::Notification(n)) => {
                // In process there is nothing in flight to cancel; the check still runs.
                let _ = self
                    .server
                    .core
                    .accept_notification(&n, &Transport::InProcess);
                None
            }
            Ok(Inbound::Request(request)) => {
                let exchange = Exchange {
                    transport: Transport::InProcess,
                    era: Era::Modern,
                    outbound: Arc::clone(&collect) as Arc<dyn Outbound>,
                    buffer: String::new(),
                    principal: self.principal.clone(),
                };
                let reply = match self.server.core.serve(request, exchange) {
                    Served::Now(reply) => reply,
                    Served::Later(rest) => rest.await,
                };
                match reply {
                    Reply::Response { body, .. } | Reply::StreamEnded { body, .. } => Some(body),
                    Reply::Cancelled => None,
                }
            }
        };
        let notifications = collect
            .0
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default();
        RawResponse {
            notifications,
            message,
        }
    }

    /// `server/discover`.
    pub async fn discover(&self) -> TestResponse {
        self.request("server/discover", json!({})).await
    }

    /// `tools/list` (first page).
    pub async fn list_tools(&self) -> TestResponse {
        self.request("tools/list", json!({})).await
    }

    /// `tools/call` of `name` with `arguments`.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> TestResponse {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }

    /// `resources/read` of `uri`.
    pub async fn read_resource(&self, uri: &str) -> TestResponse {
        self.request("resources/read", json!({"uri": uri})).await
    }

    /// `prompts/get` of `name` with `arguments`.
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> TestResponse {
        self.request("prompts/get", json!({"name": name, "arguments": arguments}))
            .await
    }
}

fn parse(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or(Value::Null)
}

impl TestResponse {
    /// The `result` member. Panics, showing the response, when there is none.
    #[track_caller]
    pub fn result(&self) -> &Value {
        match self.message.get("result") {
            Some(r) => r,
            None => panic!("expected a result, got {}", self.message),
        }
    }

    /// The `error` member, if any.
    pub fn error(&self) -> Option<&Value> {
        self.message.get("error")
    }

    /// The text of every text block of a tool result, joined with newlines.
    #[track_caller]
    pub fn text(&self) -> String {
        let content = self.result().get("content").and_then(Value::as_array);
        content
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Asserts a successful tool call whose text is exactly `expected`.
    #[track_caller]
    pub fn assert_text(&self, expected: &str) -> &Self {
        let result = self.result();
        assert_ne!(
            result.get("isError"),
            Some(&Value::Bool(true)),
            "expected a successful tool call, got a tool error: {result}"
        );
        assert_eq!(self.text(), expected, "tool result text");
        self
    }

    /// Asserts a tool error (`isError: true`) whose text contains `fragment`.
    #[track_caller]
    pub fn assert_tool_error(&self, fragment: &str) -> &Self {
        let result = self.result();
        assert_eq!(
            result.get("isError"),
            Some(&Value::Bool(true)),
            "expected a tool error, got {result}"
        );
        let text = self.text();
        assert!(
            text.contains(fragment),
            "tool error text {text:?} does not contain {fragment:?}"
        );
        self
    }

    /// Asserts a protocol error with `code`.
    #[track_caller]
    pub fn assert_error(&self, code: i64) -> &Self {
        let got = self
            .error()
            .and_then(|e| e.get("code"))
            .and_then(Value::as_i64);
        assert_eq!(
            got,
            Some(code),
            "expected error {code}, got {}",
            self.message
        );
        self
    }
}

#[cfg(test)]
mod pipeline;

#[cfg(feature = "otel")]
#[cfg(test)]
mod otel;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::stdio::StdioConfig;
    use crate::wire::types::Implementation;
    use crate::{Tool, ToolCall};
    use tokio::io::AsyncReadExt;

    fn server() -> Server {
        let echo = Tool::new("echo")
            .description("Echoes text")
            .input_schema(json!({
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"]
            }))
            .handler(|call: ToolCall| async move {
                call.arguments
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            });
        Server::builder(Implementation::new("raw", "1"))
            .tool(echo)
            .build()
            .expect("a server")
    }

    const CALL: &str = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hé \"q\""},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;

    /// What the stdio transport writes for `lines`, each line's answer without its `\n`.
    async fn over_stdio(server: &Server, lines: &[&str]) -> Vec<String> {
        let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let (writer, mut out) = tokio::io::duplex(1 << 16);
        server
            .serve_io(input.as_bytes(), writer, StdioConfig::default())
            .await
            .expect("served");
        let mut written = String::new();
        out.read_to_string(&mut written).await.expect("read back");
        written.lines().map(str::to_owned).collect()
    }

    /// `send_raw` answers with exactly the bytes the stdio transport writes for the same
    /// line: a call, a parse error, a request the pipeline rejects; and nothing for a
    /// notification.
    #[tokio::test]
    async fn send_raw_returns_what_the_transport_writes() {
        let server = server();
        let client = TestClient::new(&server);
        let rejected = CALL.replace("2026-07-28", "1999-01-01");
        let cases = [CALL, "{not json", rejected.as_str()];
        let written = over_stdio(&server, &cases).await;
        assert_eq!(written.len(), cases.len());
        for (line, expected) in cases.iter().zip(&written) {
            let raw = client.send_raw(line.as_bytes()).await;
            assert_eq!(raw.message.as_deref(), Some(expected.as_str()), "{line}");
            assert!(raw.notifications.is_empty());
        }
        assert!(written[0].starts_with(r#"{"jsonrpc":"2.0","id":3,"result":"#));
        assert!(written[1].contains("-32700"));
        assert!(written[2].starts_with(r#"{"jsonrpc":"2.0","id":3,"error":"#));
        let note = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let raw = client.send_raw(note.as_bytes()).await;
        assert!(raw.message.is_none() && raw.notifications.is_empty());
    }

    /// `send` reads the same answer as `send_raw`, parsed.
    #[tokio::test]
    async fn send_is_send_raw_parsed() {
        let server = server();
        let client = TestClient::new(&server);
        let value: Value = serde_json::from_str(CALL).expect("json");
        let parsed = client.send(value).await;
        let raw = client.send_raw(CALL.as_bytes()).await;
        let expected: Value = serde_json::from_str(&raw.message.expect("answered")).expect("json");
        assert_eq!(parsed.message, expected);
        parsed.assert_text("hé \"q\"");
    }
}
