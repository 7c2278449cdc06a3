//! A Streamable HTTP harness: serves a [`presa::Server`] on an ephemeral loopback port
//! and drives it with reqwest (a client that is not ours, so the tests see the bytes a
//! real client would).
//!
//! Every path checks both ways by default: [`Http::post`] checks the message it sends
//! against the client's schema definitions and every JSON-RPC message of the reply (the
//! JSON body, or each event of an SSE body) against the server's. The paths named
//! `*_unchecked` send what a test made invalid on purpose (a message outside the schema,
//! raw bytes, a hand-written HTTP request) without checking it; what the server answers
//! is checked all the same.

use crate::schema::{check_outgoing, check_server_message};
use crate::sse::{Check, Frame, Next, SseStream};
use presa::{HttpConfig, Server};
use serde_json::Value;
use std::time::Duration;
use tokio::sync::oneshot;

/// A running HTTP server; dereferences to the [`Http`] client of it.
pub struct Harness {
    http: Http,
    stop: Option<oneshot::Sender<()>>,
}

/// A client of a [`Harness`]'s server, cheap to clone (for requests a test spawns).
#[derive(Clone)]
pub struct Http {
    /// `http://127.0.0.1:<port>/mcp` (or the configured path).
    pub url: String,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    client: reqwest::Client,
}

/// One HTTP exchange, read whole.
#[derive(Debug)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The response headers.
    pub headers: reqwest::header::HeaderMap,
    /// The raw body.
    pub body: String,
    /// The JSON-RPC messages of the body, in order, each schema-checked.
    pub messages: Vec<Value>,
}

impl Reply {
    /// The last message (the response).
    #[track_caller]
    pub fn response(&self) -> &Value {
        self.messages
            .last()
            .unwrap_or_else(|| panic!("no JSON-RPC message in body {:?}", self.body))
    }

    /// The notifications before the response.
    pub fn notifications(&self) -> &[Value] {
        match self.messages.split_last() {
            Some((_, rest)) => rest,
            None => &[],
        }
    }

    /// The response's error code.
    pub fn error_code(&self) -> Option<i64> {
        self.messages
            .last()
            .and_then(|m| m.get("error"))
            .and_then(|e| e.get("code"))
            .and_then(Value::as_i64)
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Whether the body was SSE.
    pub fn is_sse(&self) -> bool {
        is_sse(&self.headers)
    }

    /// Asserts the status, the error code, and the echoed id (`None`: no `id` member).
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: i64, id: Option<Value>) -> &Self {
        assert_eq!(self.status, status, "HTTP status; body {}", self.body);
        assert_eq!(
            self.error_code(),
            Some(code),
            "error code; body {}",
            self.body
        );
        assert_eq!(
            self.response().get("id").cloned(),
            id,
            "echoed id; body {}",
            self.body
        );
        self
    }

    /// Asserts a 202 with an empty body.
    #[track_caller]
    pub fn assert_accepted(&self) {
        assert_eq!(self.status, 202, "status; body {:?}", self.body);
        assert!(self.body.is_empty(), "a 202 has no body: {:?}", self.body);
    }
}

fn is_sse(headers: &reqwest::header::HeaderMap) -> bool {
    headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/event-stream"))
}

impl Harness {
    /// Serves `server` with the default settings.
    pub async fn start(server: Server) -> Self {
        Self::start_with(server, HttpConfig::default()).await
    }

    /// Serves `server` with `config`.
    pub async fn start_with(server: Server, config: HttpConfig) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("local address");
        let path = config.path.clone();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = server
                .serve_http_on(listener, config, async {
                    let _ = stopped.await;
                })
                .await;
        });
        Harness {
            http: Http {
                url: format!("http://{addr}{path}"),
                base: format!("http://{addr}"),
                client: reqwest::Client::new(),
            },
            stop: Some(stop),
        }
    }

    /// A client of this server that can be moved into a spawned task.
    pub fn http(&self) -> Http {
        self.http.clone()
    }
}

impl Http {
    /// A client of a server some other way started at `url` (`http://host:port/path`).
    pub fn at(url: &str) -> Http {
        let rest = url.trim_start_matches("http://");
        let authority = rest.split('/').next().unwrap_or(rest);
        Http {
            url: url.to_owned(),
            base: format!("http://{authority}"),
            client: reqwest::Client::new(),
        }
    }

    /// The HTTP client underneath, for the legacy harness's own requests.
    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }
}

impl std::ops::Deref for Harness {
    type Target = Http;

    fn deref(&self) -> &Http {
        &self.http
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The method a body names, if it is a JSON object with a string `method` (to check the
/// reply against), or `""`.
fn method_of_body(body: &[u8]) -> String {
    crate::method_of_bytes(body)
}

/// The method of a message, or `""`.
fn method_of(message: &Value) -> &str {
    message.get("method").and_then(Value::as_str).unwrap_or("")
}

/// `standard_headers(message)` with `extra` replacing them by name (a value of `""`
/// removes one), as pairs of borrowed strings.
fn merged(message: &Value, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut headers = standard_headers(message);
    for (k, v) in extra {
        headers.retain(|(h, _)| !h.eq_ignore_ascii_case(k));
        if !v.is_empty() {
            headers.push(((*k).to_owned(), (*v).to_owned()));
        }
    }
    headers
}

impl Http {
    /// Sends `body` with exactly `headers` and reads the whole reply, checking every
    /// message of it as answering `method`.
    async fn send_body(
        &self,
        body: reqwest::Body,
        headers: &[(String, String)],
        method: &str,
    ) -> Reply {
        let mut req = self.client.post(&self.url).body(body);
        for (k, v) in headers {
            req = req.header(k, v);
        }
        let resp = req.send().await.expect("the request is sent");
        read(resp, method).await
    }

    /// POSTs a JSON message with the standard headers for it (Content-Type, Accept,
    /// MCP-Protocol-Version, Mcp-Method, and Mcp-Name where the method needs it), plus
    /// `extra` (which may replace them; a value of `""` removes one). The message is
    /// checked as a client message before it is sent, and every message of the reply
    /// as the server's answer to it.
    #[track_caller]
    pub fn post<'a>(
        &'a self,
        message: &'a Value,
        extra: &'a [(&'a str, &'a str)],
    ) -> impl std::future::Future<Output = Reply> + 'a {
        check_outgoing(message);
        self.post_unchecked(message, extra)
    }

    /// [`Http::post`] of a message that is invalid on purpose: it is sent without being
    /// checked; the reply is checked.
    pub async fn post_unchecked(&self, message: &Value, extra: &[(&str, &str)]) -> Reply {
        let headers = merged(message, extra);
        self.send_body(message.to_string().into(), &headers, method_of(message))
            .await
    }

    /// Posts `message` (checked) with the standard headers plus `added` appended as they
    /// are, so that a header can be sent twice; the reply is checked.
    #[track_caller]
    pub fn post_appending<'a>(
        &'a self,
        message: &'a Value,
        added: &'a [(&'a str, &'a str)],
    ) -> impl std::future::Future<Output = Reply> + 'a {
        check_outgoing(message);
        async move {
            let mut headers = standard_headers(message);
            headers.extend(
                added
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
            );
            self.send_body(message.to_string().into(), &headers, method_of(message))
                .await
        }
    }

    /// POSTs raw bytes with exactly `headers`, unchecked (bytes a test made on purpose);
    /// the reply is checked as answering the method the body names, if it names one.
    pub async fn post_raw_unchecked(
        &self,
        body: impl Into<Vec<u8>>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let body: Vec<u8> = body.into();
        let method = method_of_body(&body);
        let headers: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        self.send_body(body.into(), &headers, &method).await
    }

    /// Sends an HTTP request with no body, any method, to `url` (another path, say),
    /// with exactly `headers`; the reply is checked.
    pub async fn request(
        &self,
        method: reqwest::Method,
        url: &str,
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut req = self.client.request(method, url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req.send().await.expect("the request is sent");
        read(resp, "").await
    }

    /// Sends a request with the full `_meta` and the standard headers, checked both ways.
    #[track_caller]
    pub fn call<'a>(
        &'a self,
        id: i64,
        method: &'a str,
        params: Value,
    ) -> impl std::future::Future<Output = Reply> + 'a {
        let message = crate::request(id, method, params);
        check_outgoing(&message);
        async move { self.post_unchecked(&message, &[]).await }
    }

    /// POSTs `message` (checked) with the standard headers and `extra`, and returns the
    /// response as soon as its head arrives, to read its body as it comes (each message
    /// checked). Dropping it closes the connection.
    #[track_caller]
    pub fn open<'a>(
        &'a self,
        message: &'a Value,
        extra: &'a [(&'a str, &'a str)],
    ) -> impl std::future::Future<Output = Stream> + 'a {
        check_outgoing(message);
        self.open_unchecked(message, extra)
    }

    /// [`Http::open`] of a message invalid on purpose: sent unchecked; what is read is
    /// checked.
    pub async fn open_unchecked(&self, message: &Value, extra: &[(&str, &str)]) -> Stream {
        let mut req = self.client.post(&self.url).body(message.to_string());
        for (k, v) in merged(message, extra) {
            req = req.header(k, v);
        }
        let resp = crate::wait::within("the response head", req.send())
            .await
            .expect("the request is sent");
        Stream::new(resp, method_of(message))
    }

    /// Sends `POST <path>` over a plain TCP socket with exactly `headers` (plus `Host`,
    /// `Content-Length` and `Connection: close`), for requests reqwest would alter (it
    /// adds `Accept: */*` when none is given); unchecked. Returns the status and the
    /// body, which is checked as the answer to the method `body` names when it is JSON.
    pub async fn post_over_tcp_unchecked(
        &self,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let authority = self.base.trim_start_matches("http://");
        let path = self.url.trim_start_matches(&self.base);
        let mut head = format!(
            "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: {}\r\n\
             Connection: close\r\n",
            body.len()
        );
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let mut socket = tokio::net::TcpStream::connect(authority)
            .await
            .expect("connect to the server");
        socket
            .write_all(format!("{head}{body}").as_bytes())
            .await
            .expect("write the request");
        let mut raw = Vec::new();
        crate::wait::within(
            "the server answers and closes",
            socket.read_to_end(&mut raw),
        )
        .await
        .expect("read the response");
        let text = String::from_utf8(raw).expect("a UTF-8 response");
        let (head, answer) = text.split_once("\r\n\r\n").expect("a complete response");
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("a status line");
        if !answer.trim().is_empty() {
            let m: Value = serde_json::from_str(answer)
                .unwrap_or_else(|e| panic!("body {answer:?} is not JSON: {e}"));
            check_server_message(&method_of_body(body.as_bytes()), &m);
        }
        (status, answer.to_owned())
    }
}

/// A response whose body is read as it arrives.
pub struct Stream {
    /// The status code.
    pub status: u16,
    /// The response headers.
    pub headers: reqwest::header::HeaderMap,
    method: String,
    body: Body,
}

enum Body {
    Sse(SseStream),
    Whole(Option<reqwest::Response>, Check),
}

impl Stream {
    fn new(resp: reqwest::Response, method: &str) -> Stream {
        Stream::checked(resp, method, Check::Modern)
    }

    /// A response read as it arrives, each message checked as `check` says.
    pub(crate) fn checked(resp: reqwest::Response, method: &str, check: Check) -> Stream {
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = if is_sse(&headers) {
            Body::Sse(SseStream::checked(resp, method, check))
        } else {
            Body::Whole(Some(resp), check)
        };
        Stream {
            status,
            headers,
            method: method.to_owned(),
            body,
        }
    }

    /// The id of the last event read that had one (see [`SseStream::last_event_id`]).
    pub fn last_event_id(&mut self) -> Option<String> {
        self.sse().last_event_id.clone()
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Whether the body is an event stream.
    pub fn is_sse(&self) -> bool {
        matches!(self.body, Body::Sse(_))
    }

    #[track_caller]
    fn sse(&mut self) -> &mut SseStream {
        match &mut self.body {
            Body::Sse(s) => s,
            Body::Whole(..) => panic!("the body is not an event stream (status {})", self.status),
        }
    }

    /// The raw text of the event stream read so far.
    pub fn raw(&mut self) -> &str {
        &self.sse().raw
    }

    /// The next frame of the event stream within `within` (see [`SseStream::frame`]).
    pub async fn frame(&mut self, within: Duration) -> Option<Frame> {
        self.sse().frame(within).await
    }

    /// The next message of the event stream within `within`.
    pub async fn next(&mut self, within: Duration) -> Next {
        self.sse().next(within).await
    }

    /// Reads the rest of the body (failing past [`crate::wait::PATIENCE`]) as a
    /// [`Reply`]: for an event stream, the messages not read yet.
    pub async fn reply(mut self) -> Reply {
        let method = self.method.clone();
        match &mut self.body {
            Body::Sse(s) => {
                let messages = s.to_end(crate::wait::PATIENCE).await;
                Reply {
                    status: self.status,
                    headers: self.headers.clone(),
                    body: s.raw.clone(),
                    messages,
                }
            }
            Body::Whole(resp, check) => {
                let resp = resp.take().expect("the body is read once");
                crate::wait::within("the body", read_checked(resp, &method, *check)).await
            }
        }
    }
}

/// The headers a correct client sends for `message`: Content-Type, Accept,
/// MCP-Protocol-Version, Mcp-Method, and Mcp-Name for the methods that name something
/// (`params.name` of `tools/call` and `prompts/get`, `params.uri` of `resources/read`,
/// `params.taskId` of the three task methods, base64-wrapped when it is not printable
/// ASCII: wire 13.5, Tasks reference section 7).
pub fn standard_headers(message: &Value) -> Vec<(String, String)> {
    let mut h = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        (
            "Accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
        ("MCP-Protocol-Version".to_owned(), crate::VERSION.to_owned()),
    ];
    if let Some(method) = message.get("method").and_then(Value::as_str) {
        h.push(("Mcp-Method".to_owned(), method.to_owned()));
        let name = match method {
            "tools/call" | "prompts/get" => message["params"].get("name").cloned(),
            "resources/read" => message["params"].get("uri").cloned(),
            "tasks/get" | "tasks/update" | "tasks/cancel" => message["params"]
                .get("taskId")
                .and_then(Value::as_str)
                .map(|id| {
                    if id.bytes().all(|b| (0x20..0x7f).contains(&b)) {
                        Value::from(id)
                    } else {
                        Value::from(format!("=?base64?{}?=", base64_of(id)))
                    }
                }),
            _ => None,
        };
        if let Some(Value::String(name)) = name {
            h.push(("Mcp-Name".to_owned(), name));
        }
    }
    h
}

/// The standard base64 of a string (for the `=?base64?…?=` header form).
pub fn base64_of(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// Reads a whole reply, checking every message of it as answering `method`.
async fn read(resp: reqwest::Response, method: &str) -> Reply {
    read_checked(resp, method, Check::Modern).await
}

/// [`read`], each message checked as `check` says.
pub(crate) async fn read_checked(resp: reqwest::Response, method: &str, check: Check) -> Reply {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.text().await.expect("the body is read");
    let messages = if is_sse(&headers) {
        crate::sse::parse_checked(&body, method, check)
    } else if body.trim().is_empty() {
        Vec::new()
    } else {
        let m: Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("body {body:?} is not JSON: {e}"));
        check.server_message(method, &m);
        vec![m]
    };
    Reply {
        status,
        headers,
        body,
        messages,
    }
}
