//! The one client the end-to-end tests run a rule with over both real transports:
//! Streamable HTTP (a [`Harness`] on a loopback port) and stdio (a [`Session`]: the
//! fixture binary as a child process, or an in-process pipe). A rule written once with
//! `for kind in KINDS` runs over both.
//!
//! Every message is checked both ways, as the harnesses underneath check it: what the
//! client sends against the client's schema definitions (unless sent through a path
//! named `*_unchecked`, for messages invalid on purpose), and everything it reads
//! against the server's (the core schema, and the Tasks extension's schema for task
//! results and notifications).
//!
//! It also holds `subscriptions/listen` streams: on HTTP each listen is its own SSE
//! response; on stdio every stream shares the session and a stream's messages are told
//! apart by `_meta["io.modelcontextprotocol/subscriptionId"]`. Lines read on stdio while
//! waiting for something else are kept, in order, for whoever asks for them.

use crate::http::{Harness, Stream};
use crate::schema::check_outgoing;
use crate::sse::Next;
use crate::stdio::Session;
use crate::wait::{PATIENCE, QUIET};
use presa::{Server, StdioConfig};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::Instant;

/// The `_meta` key tagging a stream's messages with its listen request's id.
pub const SUB_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// The message of every request-state failure (wire 10.4).
pub const INVALID_STATE: &str = "Invalid or expired request state";
/// The message of -32021.
pub const MISSING_CAPABILITY: &str = "Missing required client capability";
/// The Tasks extension's id.
pub const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A transport to run a rule over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Streamable HTTP.
    Http,
    /// stdio.
    Stdio,
}

/// Both transports, for `for kind in KINDS`.
pub const KINDS: [Kind; 2] = [Kind::Http, Kind::Stdio];

/// The subscription id a message carries, if any.
pub fn sub_id(m: &Value) -> Option<&Value> {
    m.get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|meta| meta.get(SUB_ID))
}

/// The method of a message, or `""`.
pub fn method(m: &Value) -> &str {
    m.get("method").and_then(Value::as_str).unwrap_or("")
}

/// A client of one server over one transport.
pub struct Client {
    /// The transport.
    pub kind: Kind,
    http: Option<Harness>,
    stdio: Option<Session>,
    /// HTTP: one open response per listen id.
    streams: Vec<(Value, Stream)>,
    /// stdio: lines read while waiting for something else, not yet asked for.
    backlog: VecDeque<Value>,
    /// stdio: every line read, in order.
    pub seen: Vec<Value>,
    next: i64,
}

/// What one request got back: every message (notifications, then the response), each
/// already checked.
#[derive(Debug)]
pub struct Got {
    /// The transport.
    pub kind: Kind,
    /// The HTTP status; `None` on stdio.
    pub status: Option<u16>,
    /// Whether the HTTP body was an event stream.
    pub sse: bool,
    /// The messages, the response last.
    pub messages: Vec<Value>,
}

impl Client {
    fn new(kind: Kind, http: Option<Harness>, stdio: Option<Session>) -> Client {
        Client {
            kind,
            http,
            stdio,
            streams: Vec::new(),
            backlog: VecDeque::new(),
            seen: Vec::new(),
            next: 1_000_000,
        }
    }

    /// A client of `h`.
    pub fn over_http(h: Harness) -> Client {
        Client::new(Kind::Http, Some(h), None)
    }

    /// A client of the server at the other end of `s`.
    pub fn over_stdio(s: Session) -> Client {
        Client::new(Kind::Stdio, None, Some(s))
    }

    /// Serves `server` over `kind` with default settings (stdio: `Server::serve_io` on an
    /// in-process pipe).
    pub async fn start(kind: Kind, server: &Server) -> Client {
        match kind {
            Kind::Http => Client::over_http(Harness::start(server.clone()).await),
            Kind::Stdio => {
                Client::over_stdio(Session::in_process(server.clone(), StdioConfig::default()))
            }
        }
    }

    /// The conformance fixture over `kind`: in process on HTTP, the fixture binary on
    /// stdio (`bin` is `env!("CARGO_BIN_EXE_fixture")`).
    pub async fn fixture(kind: Kind, bin: &str) -> Client {
        match kind {
            Kind::Http => Client::over_http(Harness::start(crate::fixture()).await),
            Kind::Stdio => Client::over_stdio(Session::fixture(bin).await),
        }
    }

    /// The HTTP harness (HTTP only).
    #[track_caller]
    pub fn harness(&self) -> &Harness {
        self.http.as_ref().expect("an HTTP client")
    }

    /// The stdio session (stdio only).
    #[track_caller]
    pub fn session(&mut self) -> &mut Session {
        self.stdio.as_mut().expect("a stdio client")
    }

    /// A fresh request id (counting from 1,000,001, apart from ids a test picks).
    pub fn next_id(&mut self) -> i64 {
        self.next += 1;
        self.next
    }

    /// Sends a request (full `_meta`; members of `params._meta` win) with id `id` and
    /// reads its reply.
    #[track_caller]
    pub fn call<'a>(
        &'a mut self,
        id: i64,
        method: &'a str,
        params: Value,
    ) -> impl std::future::Future<Output = Got> + 'a {
        self.exchange(crate::request(id, method, params), &[])
    }

    /// [`Client::call`] with HTTP headers replaced (a value of `""` removes one; ignored
    /// on stdio).
    #[track_caller]
    pub fn call_with<'a>(
        &'a mut self,
        id: i64,
        method: &'a str,
        params: Value,
        headers: &'a [(&'a str, &'a str)],
    ) -> impl std::future::Future<Output = Got> + 'a {
        self.exchange(crate::request(id, method, params), headers)
    }

    /// [`Client::call`] of a request invalid on purpose: sent unchecked.
    pub async fn call_unchecked(&mut self, id: i64, method: &str, params: Value) -> Got {
        self.exchange_unchecked(crate::request(id, method, params), &[])
            .await
    }

    /// [`Client::call`] with a fresh id.
    #[track_caller]
    pub fn send<'a>(
        &'a mut self,
        method: &'a str,
        params: Value,
    ) -> impl std::future::Future<Output = Got> + 'a {
        let id = self.next_id();
        self.exchange(crate::request(id, method, params), &[])
    }

    /// [`Client::call_with`] with a fresh id.
    #[track_caller]
    pub fn send_with<'a>(
        &'a mut self,
        method: &'a str,
        params: Value,
        headers: &'a [(&'a str, &'a str)],
    ) -> impl std::future::Future<Output = Got> + 'a {
        let id = self.next_id();
        self.exchange(crate::request(id, method, params), headers)
    }

    /// [`Client::send`] of a request invalid on purpose: sent unchecked.
    pub async fn send_unchecked(&mut self, method: &str, params: Value) -> Got {
        let id = self.next_id();
        self.exchange_unchecked(crate::request(id, method, params), &[])
            .await
    }

    /// Sends `message` (a request, checked first) with HTTP headers replaced as in
    /// [`Client::call_with`], and reads its reply.
    #[track_caller]
    pub fn exchange<'a>(
        &'a mut self,
        message: Value,
        headers: &'a [(&'a str, &'a str)],
    ) -> impl std::future::Future<Output = Got> + 'a {
        check_outgoing(&message);
        self.exchange_unchecked(message, headers)
    }

    /// [`Client::exchange`] of a request invalid on purpose: sent unchecked; the reply
    /// is checked.
    pub async fn exchange_unchecked(&mut self, message: Value, headers: &[(&str, &str)]) -> Got {
        let kind = self.kind;
        if let Some(h) = &self.http {
            let reply = h.post_unchecked(&message, headers).await;
            return Got {
                kind,
                status: Some(reply.status),
                sse: reply.is_sse(),
                messages: reply.messages,
            };
        }
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let method = method(&message).to_owned();
        self.session().send_unchecked(&message).await;
        let mut own = Vec::new();
        loop {
            let m = self
                .read_line(PATIENCE)
                .await
                .unwrap_or_else(|| panic!("no response to {method} {id} within {PATIENCE:?}"));
            let response = m.get("method").is_none();
            if response && m.get("id") == Some(&id) {
                own.push(m);
                crate::schema::check_exchange(&method, &own);
                return Got {
                    kind,
                    status: None,
                    sse: false,
                    messages: own,
                };
            }
            // Stream events, stream ends and other responses are not this request's.
            if sub_id(&m).is_some() || self::method(&m) == "notifications/cancelled" || response {
                self.backlog.push_back(m);
            } else {
                own.push(m);
            }
        }
    }

    /// Sends a notification (checked first); on HTTP a POST that must be accepted with
    /// 202.
    #[track_caller]
    pub fn notify<'a>(
        &'a mut self,
        method: &'a str,
        params: Value,
    ) -> impl std::future::Future<Output = ()> + 'a {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        check_outgoing(&message);
        async move {
            if let Some(h) = &self.http {
                h.post_unchecked(&message, &[]).await.assert_accepted();
                return;
            }
            self.session().send_unchecked(&message).await;
        }
    }

    /// The result of a request that must succeed.
    #[track_caller]
    pub fn ok<'a>(
        &'a mut self,
        id: i64,
        method: &'a str,
        params: Value,
    ) -> impl std::future::Future<Output = Value> + 'a {
        let call = self.call(id, method, params);
        async move { call.await.result().clone() }
    }

    /// Sends a request without waiting for its response (read it with [`Client::next`]
    /// and its id). stdio only.
    #[track_caller]
    pub fn send_request<'a>(
        &'a mut self,
        id: Value,
        method: &'a str,
        params: Value,
    ) -> impl std::future::Future<Output = ()> + 'a {
        let message = crate::request(id, method, params);
        check_outgoing(&message);
        async move { self.session().send_unchecked(&message).await }
    }

    /// The stdio lines read while waiting for something else and not asked for since,
    /// taken (always empty on HTTP).
    pub fn take_backlog(&mut self) -> Vec<Value> {
        self.backlog.drain(..).collect()
    }

    /// Closes stdin and waits for the server to end; whether it ended cleanly. stdio
    /// only.
    pub async fn finish(mut self) -> bool {
        self.stdio.take().expect("a stdio client").finish().await
    }

    /// Reads one stdio line (checked by the session), or `None` within `within`.
    async fn read_line(&mut self, within: Duration) -> Option<Value> {
        let m = self.session().recv_within(within).await?;
        self.seen.push(m.clone());
        Some(m)
    }

    // ---- subscriptions/listen ----

    /// Sends a listen request with `params` (full `_meta` added) and returns its first
    /// message, which must be the acknowledgement tagged with `id`; on HTTP the response
    /// must be a 200 event stream.
    #[track_caller]
    pub fn listen<'a>(
        &'a mut self,
        id: Value,
        params: Value,
    ) -> impl std::future::Future<Output = Value> + 'a {
        let message = crate::request(id.clone(), "subscriptions/listen", params);
        check_outgoing(&message);
        async move {
            let kind = self.kind;
            match self.open_listen(message, &[]).await {
                Ok(ack) => ack,
                Err(got) => panic!("{kind:?}: listen {id} was refused: {got:?}"),
            }
        }
    }

    /// The listen filter `notifications`, acknowledged: returns the acknowledged filter.
    #[track_caller]
    pub fn listen_to<'a>(
        &'a mut self,
        id: Value,
        notifications: Value,
    ) -> impl std::future::Future<Output = Value> + 'a {
        let listen = self.listen(id, json!({ "notifications": notifications }));
        async move { listen.await["params"]["notifications"].clone() }
    }

    /// Sends a listen request with `params` and HTTP `headers` (replacing the standard
    /// ones): the acknowledgement, or the error reply when the listen is refused.
    #[track_caller]
    pub fn try_listen<'a>(
        &'a mut self,
        id: Value,
        params: Value,
        headers: &'a [(&'a str, &'a str)],
    ) -> impl std::future::Future<Output = Result<Value, Got>> + 'a {
        let message = crate::request(id, "subscriptions/listen", params);
        check_outgoing(&message);
        self.open_listen(message, headers)
    }

    /// [`Client::try_listen`] of a listen request invalid on purpose: sent unchecked.
    pub async fn try_listen_unchecked(&mut self, id: Value, params: Value) -> Result<Value, Got> {
        let message = crate::request(id, "subscriptions/listen", params);
        self.open_listen(message, &[]).await
    }

    async fn open_listen(
        &mut self,
        message: Value,
        headers: &[(&str, &str)],
    ) -> Result<Value, Got> {
        let id = message["id"].clone();
        let kind = self.kind;
        if let Some(h) = &self.http {
            let mut stream = h.open_unchecked(&message, headers).await;
            if !stream.is_sse() {
                let status = stream.status;
                let reply = stream.reply().await;
                return Err(Got {
                    kind,
                    status: Some(status),
                    sse: false,
                    messages: reply.messages,
                });
            }
            assert_eq!(stream.status, 200, "a listen stream opens with 200");
            assert!(
                stream
                    .header("content-type")
                    .is_some_and(|c| c.starts_with("text/event-stream")),
                "a listen response is always SSE"
            );
            let first = stream.next(PATIENCE).await.msg("the acknowledgement");
            self.streams.push((id.clone(), stream));
            assert_ack(&first, &id);
            return Ok(first);
        }
        self.session().send_unchecked(&message).await;
        match self.next(&id, PATIENCE).await {
            Next::Msg(m) if m.get("method").is_none() => Err(Got {
                kind,
                status: None,
                sse: false,
                messages: vec![m],
            }),
            Next::Msg(m) => {
                assert_ack(&m, &id);
                Ok(m)
            }
            other => panic!("{kind:?}: no answer to listen {id}: {other:?}"),
        }
    }

    /// Ends the stream opened by listen `id` as its client does: on HTTP by closing its
    /// response, on stdio with `notifications/cancelled` for its id.
    pub async fn end_listen(&mut self, id: &Value) {
        if self.kind == Kind::Http {
            self.streams.retain(|(i, _)| i != id);
            return;
        }
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": id, "reason": "done listening"}});
        self.session().send(&cancel).await;
    }

    /// The next message of the stream opened by listen `id` (its events, its end, its
    /// result), within `within`.
    pub async fn next(&mut self, id: &Value, within: Duration) -> Next {
        if self.kind == Kind::Http {
            let stream = self
                .streams
                .iter_mut()
                .find(|(i, _)| i == id)
                .map(|(_, s)| s)
                .unwrap_or_else(|| panic!("no listen stream {id}"));
            return stream.next(within).await;
        }
        if let Some(at) = self.backlog.iter().position(|m| belongs(m, id)) {
            return Next::Msg(self.backlog.remove(at).expect("a message at that place"));
        }
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Next::Timeout;
            }
            match self.read_line(left).await {
                Some(m) if belongs(&m, id) => return Next::Msg(m),
                Some(m) => self.backlog.push_back(m),
                None => return Next::Timeout,
            }
        }
    }

    /// Every message of stream `id` arriving within `within`.
    pub async fn drain(&mut self, id: &Value, within: Duration) -> Vec<Value> {
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
    pub async fn expect_event(&mut self, id: &Value, wanted: &str) -> Duration {
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

    /// Asserts nothing arrives on stream `id` for [`QUIET`] (a rule that nothing is
    /// sent; the caller has seen the stream deliver before).
    pub async fn expect_quiet(&mut self, id: &Value) {
        let kind = self.kind;
        let extra = self.drain(id, QUIET).await;
        assert!(extra.is_empty(), "{kind:?}: stream {id} got {extra:?}");
    }
}

/// Whether a stdio message belongs to the stream of listen `id`: tagged with it, its
/// `notifications/cancelled`, or its response.
fn belongs(m: &Value, id: &Value) -> bool {
    sub_id(m) == Some(id)
        || (method(m) == "notifications/cancelled" && m["params"]["requestId"] == *id)
        || (m.get("method").is_none() && m.get("id") == Some(id))
}

/// Asserts `m` is the acknowledgement of listen `id`: the stream's first message.
#[track_caller]
pub fn assert_ack(m: &Value, id: &Value) {
    assert_eq!(
        method(m),
        "notifications/subscriptions/acknowledged",
        "the acknowledgement is the first message of a stream: {m}"
    );
    assert_eq!(sub_id(m), Some(id), "tagged with the listen id: {m}");
    assert!(m["params"]["notifications"].is_object(), "{m}");
}

impl Got {
    /// The response (the last message).
    #[track_caller]
    pub fn response(&self) -> &Value {
        self.messages
            .last()
            .unwrap_or_else(|| panic!("{:?}: no message", self.kind))
    }

    /// The notifications before the response.
    pub fn notifications(&self) -> &[Value] {
        match self.messages.split_last() {
            Some((_, rest)) => rest,
            None => &[],
        }
    }

    /// The result of a successful response (HTTP 200).
    #[track_caller]
    pub fn result(&self) -> &Value {
        let r = self.response();
        assert!(
            r.get("error").is_none(),
            "{:?}: expected a result, got {r}",
            self.kind
        );
        if let Some(status) = self.status {
            assert_eq!(status, 200, "{:?}: HTTP status of a result: {r}", self.kind);
        }
        &r["result"]
    }

    /// Asserts an error with `code` (and `http` as the status on HTTP, with a plain JSON
    /// body); returns the error object.
    #[track_caller]
    pub fn error(&self, code: i64, http: u16) -> &Value {
        let r = self.response();
        assert_eq!(
            r["error"]["code"],
            json!(code),
            "{:?}: expected error {code}, got {r}",
            self.kind
        );
        if let Some(status) = self.status {
            assert_eq!(
                status, http,
                "{:?}: HTTP status of error {code}: {r}",
                self.kind
            );
            assert!(
                !self.sse,
                "{:?}: error {code} is plain JSON, not SSE: {r}",
                self.kind
            );
        }
        &r["error"]
    }

    /// Asserts -32602 with exactly `message`.
    #[track_caller]
    pub fn invalid_params(&self, message: &str) {
        let e = self.error(-32602, 400);
        assert_eq!(e["message"], json!(message), "{:?}: {e}", self.kind);
    }

    /// Asserts the one request-state failure of wire 10.4: -32602, fixed message, no
    /// detail.
    #[track_caller]
    pub fn invalid_state(&self) {
        let e = self.error(-32602, 400);
        assert_eq!(e["message"], json!(INVALID_STATE), "{:?}: {e}", self.kind);
        assert!(
            e.get("data").is_none(),
            "{:?}: a request-state failure carries no detail: {e}",
            self.kind
        );
    }

    /// Asserts the -32021 of a missing Tasks declaration, with the full data shape of
    /// the Tasks reference 2.3 (the core schema requires `data.requiredCapabilities`).
    #[track_caller]
    pub fn missing_tasks(&self) {
        let e = self.error(-32021, 400);
        assert_eq!(
            e["message"],
            json!(MISSING_CAPABILITY),
            "{:?}: {e}",
            self.kind
        );
        assert_eq!(
            e["data"]["requiredCapabilities"]["extensions"][TASKS],
            json!({}),
            "{:?}: data.requiredCapabilities names the Tasks extension: {e}",
            self.kind
        );
    }

    /// Asserts -32601 (HTTP 404).
    #[track_caller]
    pub fn method_not_found(&self) {
        self.error(-32601, 404);
    }

    /// The text blocks of a complete, successful tools/call result, joined.
    #[track_caller]
    pub fn text(&self) -> String {
        let result = self.result();
        assert_eq!(
            result["resultType"], "complete",
            "{:?}: {result}",
            self.kind
        );
        assert_ne!(result["isError"], json!(true), "{:?}: {result}", self.kind);
        result["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }
}
