//! A client of the earlier revisions (2025-11-25, 2025-06-18) over Streamable HTTP: it
//! opens a session with `initialize`, sends the session id and the negotiated version on
//! every later request, answers the server's requests with POSTed responses, opens the
//! session's GET stream and resumes streams with `Last-Event-ID`.
//!
//! Every message is checked both ways against the schema of the session's revision
//! (`schema::check_legacy_outgoing`, `schema::check_legacy_server_message`); what a test
//! sends invalid on purpose goes through a path named `*_unchecked`, which skips only the
//! check of what it sends.

use crate::http::{Http, Reply, Stream, read_checked};
use crate::schema::{Schema, check_legacy_outgoing};
use crate::sse::Check;
use serde_json::{Value, json};

/// The `Accept` a correct client sends with a POST.
pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// A client's `initialize` request.
pub fn initialize(id: impl Into<Value>, version: &str, capabilities: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": "initialize", "params": {
        "protocolVersion": version,
        "capabilities": capabilities,
        "clientInfo": {"name": "presa-legacy-tests", "version": "0.0.0"}
    }})
}

/// A legacy request (no `_meta` of 2026-07-28).
pub fn request(id: impl Into<Value>, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params})
}

/// A legacy notification.
pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// One legacy client: a session once [`Legacy::open`] made one.
#[derive(Clone)]
pub struct Legacy {
    http: Http,
    /// The revision in use (the one negotiated, once the session is open).
    pub version: String,
    /// The session id the server issued (`None`: no session, as in stateless mode or
    /// before `initialize`).
    pub session: Option<String>,
    next: i64,
}

impl Legacy {
    /// A client that has no session yet, speaking `version`.
    pub fn new(http: &Http, version: &str) -> Legacy {
        Legacy {
            http: http.clone(),
            version: version.to_owned(),
            session: None,
            next: 1,
        }
    }

    /// Opens a session: `initialize` offering `version` with no capabilities (and no
    /// version header, as the SDK client sends it), then `notifications/initialized`.
    /// Panics unless the server agrees to `version` and issues a session id.
    pub async fn open(http: &Http, version: &str) -> Legacy {
        Legacy::open_with(http, version, json!({})).await
    }

    /// [`Legacy::open`], declaring `capabilities`.
    pub async fn open_with(http: &Http, version: &str, capabilities: Value) -> Legacy {
        let mut client = Legacy::new(http, version);
        let id = client.next_id();
        let r = client
            .post(
                &initialize(id, version, capabilities),
                &[("MCP-Protocol-Version", "")],
            )
            .await;
        assert_eq!(r.status, 200, "initialize: {}", r.body);
        assert_eq!(
            r.response()["result"]["protocolVersion"],
            json!(version),
            "negotiated: {}",
            r.body
        );
        let id = r
            .header("mcp-session-id")
            .unwrap_or_else(|| panic!("a session id on the initialize response: {r:?}"));
        client.session = Some(id.to_owned());
        client
            .post(&notification("notifications/initialized", json!({})), &[])
            .await
            .assert_accepted();
        client
    }

    /// The same client (session, revision and request ids) sending to `http` instead:
    /// another replica of the server that made the session, say.
    pub fn at(&self, http: &Http) -> Legacy {
        Legacy {
            http: http.clone(),
            ..self.clone()
        }
    }

    /// The schema of the client's revision.
    pub fn schema(&self) -> Schema {
        Schema::legacy(&self.version)
    }

    /// How what the server sends in this session is checked.
    pub fn check(&self) -> Check {
        Check::Legacy(self.schema())
    }

    /// The next request id.
    pub fn next_id(&mut self) -> i64 {
        let id = self.next;
        self.next += 1;
        id
    }

    /// The headers of a correct client: Content-Type and Accept (for a POST), the
    /// version and the session id, then `extra` by name (a value of `""` removes one).
    fn headers(&self, post: bool, extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut h: Vec<(String, String)> = Vec::new();
        if post {
            h.push(("Content-Type".into(), "application/json".into()));
            h.push(("Accept".into(), ACCEPT_BOTH.into()));
        } else {
            h.push(("Accept".into(), "text/event-stream".into()));
        }
        h.push(("MCP-Protocol-Version".into(), self.version.clone()));
        if let Some(id) = &self.session {
            h.push(("Mcp-Session-Id".into(), id.clone()));
        }
        for (k, v) in extra {
            h.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
            if !v.is_empty() {
                h.push(((*k).to_owned(), (*v).to_owned()));
            }
        }
        h
    }

    fn builder(
        &self,
        method: reqwest::Method,
        body: Option<String>,
        extra: &[(&str, &str)],
    ) -> reqwest::RequestBuilder {
        let post = method == reqwest::Method::POST;
        let mut req = self.http.client().request(method, &self.http.url);
        for (k, v) in self.headers(post, extra) {
            req = req.header(k, v);
        }
        if let Some(body) = body {
            req = req.body(body);
        }
        req
    }

    /// POSTs `message` (checked as this revision's client message; a response as
    /// answering a request for `answering`) with the session's headers and `extra`, and
    /// reads the whole reply, every message checked.
    #[track_caller]
    pub fn post_answering<'a>(
        &'a self,
        answering: &'a str,
        message: &'a Value,
        extra: &'a [(&'a str, &'a str)],
    ) -> impl std::future::Future<Output = Reply> + 'a {
        check_legacy_outgoing(self.schema(), answering, message);
        self.post_unchecked(message, extra)
    }

    /// POSTs a request or notification (checked) and reads the whole reply.
    #[track_caller]
    pub fn post<'a>(
        &'a self,
        message: &'a Value,
        extra: &'a [(&'a str, &'a str)],
    ) -> impl std::future::Future<Output = Reply> + 'a {
        self.post_answering("", message, extra)
    }

    /// [`Legacy::post`] of a message invalid on purpose: sent unchecked; the reply is
    /// checked.
    pub async fn post_unchecked(&self, message: &Value, extra: &[(&str, &str)]) -> Reply {
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        let resp = self
            .builder(reqwest::Method::POST, Some(message.to_string()), extra)
            .send()
            .await
            .expect("the request is sent");
        read_checked(resp, method, self.check()).await
    }

    /// POSTs a request (checked) and returns the response once its head arrives, to read
    /// its body as it comes. Dropping it closes the connection.
    #[track_caller]
    pub fn open_post<'a>(
        &'a self,
        message: &'a Value,
        extra: &'a [(&'a str, &'a str)],
    ) -> impl std::future::Future<Output = Stream> + 'a {
        check_legacy_outgoing(self.schema(), "", message);
        async move {
            let method = message.get("method").and_then(Value::as_str).unwrap_or("");
            let resp = crate::wait::within(
                "the response head",
                self.builder(reqwest::Method::POST, Some(message.to_string()), extra)
                    .send(),
            )
            .await
            .expect("the request is sent");
            Stream::checked(resp, method, self.check())
        }
    }

    /// Sends a request with the next id and reads the whole reply.
    #[track_caller]
    pub fn call<'a>(
        &'a mut self,
        method: &'a str,
        params: Value,
    ) -> impl std::future::Future<Output = Reply> + 'a {
        let id = self.next_id();
        let message = request(id, method, params);
        check_legacy_outgoing(self.schema(), "", &message);
        async move { self.post_unchecked(&message, &[]).await }
    }

    /// Sends a notification (checked); the reply is read whole.
    #[track_caller]
    pub fn notify<'a>(
        &'a self,
        method: &'a str,
        params: Value,
    ) -> impl std::future::Future<Output = Reply> + 'a {
        let message = notification(method, params);
        check_legacy_outgoing(self.schema(), "", &message);
        async move { self.post_unchecked(&message, &[]).await }
    }

    /// Answers the server's request `id` for `answering` with `result` (checked against
    /// the result definition of `answering`).
    #[track_caller]
    pub fn answer<'a>(
        &'a self,
        answering: &'a str,
        id: &Value,
        result: Value,
    ) -> impl std::future::Future<Output = Reply> + 'a {
        let message = json!({"jsonrpc": "2.0", "id": id, "result": result});
        check_legacy_outgoing(self.schema(), answering, &message);
        async move { self.post_unchecked(&message, &[]).await }
    }

    /// GETs the endpoint with the session's headers and `extra` (`Last-Event-ID`, say),
    /// returning the response once its head arrives; events are checked as answering a
    /// request for `method` (`""`: the standalone stream, which answers none).
    pub async fn get(&self, method: &str, extra: &[(&str, &str)]) -> Stream {
        let resp = crate::wait::within(
            "the GET response head",
            self.builder(reqwest::Method::GET, None, extra).send(),
        )
        .await
        .expect("the request is sent");
        Stream::checked(resp, method, self.check())
    }

    /// DELETEs the session (the session's headers and `extra`).
    pub async fn delete(&self, extra: &[(&str, &str)]) -> Reply {
        let resp = self
            .builder(reqwest::Method::DELETE, None, extra)
            .send()
            .await
            .expect("the request is sent");
        read_checked(resp, "", self.check()).await
    }
}
