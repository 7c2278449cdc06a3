//! A Streamable HTTP harness: serves a [`presa::Server`] on an ephemeral loopback port
//! and posts raw requests to it with reqwest, returning the status, headers and every
//! JSON-RPC message of the body (one for JSON, each `data:` event for SSE).

use crate::schema;
use presa::{HttpConfig, Server};
use serde_json::Value;
use tokio::sync::oneshot;

/// A running HTTP server.
pub struct Harness {
    /// `http://127.0.0.1:<port>/mcp` (or the configured path).
    pub url: String,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
}

/// One HTTP exchange.
#[derive(Debug)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The response headers.
    pub headers: reqwest::header::HeaderMap,
    /// The raw body.
    pub body: String,
    /// The JSON-RPC messages of the body, in order.
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
        self.header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"))
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
            url: format!("http://{addr}{path}"),
            base: format!("http://{addr}"),
            client: reqwest::Client::new(),
            stop: Some(stop),
        }
    }

    /// The reqwest client.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// POSTs `body` (raw bytes) with exactly `headers`.
    pub async fn post_raw(
        &self,
        body: impl Into<reqwest::Body>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut req = self.client.post(&self.url).body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req.send().await.expect("the request is sent");
        read(resp).await
    }

    /// POSTs a JSON message with the standard headers for it (Content-Type, Accept,
    /// MCP-Protocol-Version, Mcp-Method, and Mcp-Name where the method needs it), plus
    /// `extra` (which may replace them; a value of `""` removes one).
    pub async fn post(&self, message: &Value, extra: &[(&str, &str)]) -> Reply {
        let mut headers: Vec<(String, String)> = standard_headers(message);
        for (k, v) in extra {
            headers.retain(|(h, _)| !h.eq_ignore_ascii_case(k));
            if !v.is_empty() {
                headers.push(((*k).to_owned(), (*v).to_owned()));
            }
        }
        let refs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        self.post_raw(message.to_string(), &refs).await
    }

    /// Sends a request with full `_meta` and standard headers, checks every message of
    /// the reply against the official schema, and returns the reply.
    pub async fn call(&self, id: i64, method: &str, params: Value) -> Reply {
        let reply = self.post(&crate::request(id, method, params), &[]).await;
        schema::check_exchange(method, &reply.messages);
        reply
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The headers a correct client sends for `message`.
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
            "tools/call" | "prompts/get" => message["params"].get("name"),
            "resources/read" => message["params"].get("uri"),
            _ => None,
        };
        if let Some(Value::String(name)) = name {
            h.push(("Mcp-Name".to_owned(), name.clone()));
        }
    }
    h
}

async fn read(resp: reqwest::Response) -> Reply {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.text().await.expect("the body is read");
    let sse = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/event-stream"));
    let messages = if sse {
        parse_sse(&body)
    } else if body.trim().is_empty() {
        Vec::new()
    } else {
        vec![
            serde_json::from_str(&body)
                .unwrap_or_else(|e| panic!("body {body:?} is not JSON: {e}")),
        ]
    };
    Reply {
        status,
        headers,
        body,
        messages,
    }
}

/// The JSON messages of the `data:` lines of an SSE body.
pub fn parse_sse(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            (!data.is_empty()).then(|| data.join("\n"))
        })
        .map(|d| {
            serde_json::from_str(&d).unwrap_or_else(|e| panic!("SSE data {d:?} is not JSON: {e}"))
        })
        .collect()
}
