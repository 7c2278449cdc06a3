//! Helpers shared by the Streamable HTTP end-to-end tests: posting with every JSON-RPC
//! message of the reply checked against the official schema, building requests with a
//! hand-written `_meta`, and small servers made with the public builder API.

use presa::{Implementation, Server, Tool, ToolCall};
use presa_tests::http::{Harness, Reply, standard_headers};
use presa_tests::schema;
use serde_json::{Map, Value, json};

/// The two headers every POST needs before the body is even read.
pub(crate) const BASE_HEADERS: &[(&str, &str)] = &[
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
];

/// Checks every JSON-RPC message of `reply` against the official schema (notifications,
/// then the response to `method`). A reply without a body has nothing to check.
#[track_caller]
pub(crate) fn check(reply: &Reply, method: &str) {
    if !reply.messages.is_empty() {
        schema::check_exchange(method, &reply.messages);
    }
}

/// The method of a message, or `""` when it has none.
pub(crate) fn method_of(message: &Value) -> &str {
    message.get("method").and_then(Value::as_str).unwrap_or("")
}

/// `h.post` (standard headers, overridable with `extra`; `""` removes one), with the
/// reply schema-checked.
pub(crate) async fn post(h: &Harness, message: &Value, extra: &[(&str, &str)]) -> Reply {
    let reply = h.post(message, extra).await;
    check(&reply, method_of(message));
    reply
}

/// Posts `message` with the standard headers plus `added` appended as is, so a header can
/// be sent twice; the reply is schema-checked.
pub(crate) async fn post_appending(h: &Harness, message: &Value, added: &[(&str, &str)]) -> Reply {
    let mut headers = standard_headers(message);
    headers.extend(
        added
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let refs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let reply = h.post_raw(message.to_string(), &refs).await;
    check(&reply, method_of(message));
    reply
}

/// Posts raw bytes with exactly `headers`; the reply is schema-checked as a response to
/// `method`.
pub(crate) async fn post_raw(
    h: &Harness,
    body: impl Into<reqwest::Body>,
    headers: &[(&str, &str)],
    method: &str,
) -> Reply {
    let reply = h.post_raw(body, headers).await;
    check(&reply, method);
    reply
}

/// Sends a raw HTTP request with any method to `url` and schema-checks a JSON body.
pub(crate) async fn send(
    h: &Harness,
    method: reqwest::Method,
    url: &str,
    headers: &[(&str, &str)],
) -> Reply {
    let mut req = h.client().request(method, url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("the request is sent");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.text().await.expect("the body is read");
    let messages = if body.trim().is_empty() {
        Vec::new()
    } else {
        vec![serde_json::from_str(&body).unwrap_or_else(|e| panic!("{body:?} is not JSON: {e}"))]
    };
    let reply = Reply {
        status,
        headers,
        body,
        messages,
    };
    check(&reply, "");
    reply
}

/// Asserts a 202 with an empty body.
#[track_caller]
pub(crate) fn assert_accepted(reply: &Reply) {
    assert_eq!(reply.status, 202, "status; body {:?}", reply.body);
    assert!(reply.body.is_empty(), "a 202 has no body: {:?}", reply.body);
}

/// Asserts a successful plain-JSON result and returns it.
#[track_caller]
pub(crate) fn result(reply: &Reply) -> &Value {
    assert_eq!(reply.status, 200, "status; body {}", reply.body);
    let response = reply.response();
    assert!(
        response.get("error").is_none(),
        "expected a result, got {response}"
    );
    &response["result"]
}

/// A request whose `params._meta` is exactly `meta` (no defaults added); `meta: None`
/// leaves `_meta` out.
pub(crate) fn request_with_meta(
    id: impl Into<Value>,
    method: &str,
    params: Value,
    meta: Option<Value>,
) -> Value {
    let mut params = match params {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    if let Some(meta) = meta {
        params.insert("_meta".into(), meta);
    }
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params})
}

/// The full valid `_meta` with `changes` applied: a `null` value removes the key, any
/// other value sets it.
pub(crate) fn meta_with(changes: Value) -> Value {
    let mut meta = match presa_tests::meta() {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    if let Value::Object(changes) = changes {
        for (k, v) in changes {
            if v.is_null() {
                meta.remove(&k);
            } else {
                meta.insert(k, v);
            }
        }
    }
    Value::Object(meta)
}

/// A builder for a small test server named `presa-http-tests`.
pub(crate) fn builder() -> presa::ServerBuilder {
    Server::builder(Implementation::new("presa-http-tests", "0.0.1"))
}

/// Serves a [`builder`] server with the one tool `tool`.
pub(crate) async fn serve_tool(tool: Tool) -> Harness {
    Harness::start(builder().tool(tool).build().expect("builds")).await
}

/// A tool that takes no arguments and answers `text`.
pub(crate) fn text_tool(name: &str, text: &'static str) -> Tool {
    Tool::new(name)
        .description("Answers a fixed text")
        .handler(move |_: ToolCall| async move { text })
}

/// The text of the first content block of a `tools/call` result.
#[track_caller]
pub(crate) fn first_text(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content in {result}"))
}

/// Sends `POST <path>` over a plain TCP socket with exactly `headers` (plus `Host`,
/// `Content-Length` and `Connection: close`), for requests reqwest would alter (it adds
/// `Accept: */*` when none is given). Returns the status and the body.
pub(crate) async fn post_over_tcp(
    h: &Harness,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let authority = h.base.trim_start_matches("http://");
    let path = h.url.trim_start_matches(&h.base);
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: {}\r\nConnection: close\r\n",
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
    tokio::time::timeout(
        std::time::Duration::from_secs(5),
        socket.read_to_end(&mut raw),
    )
    .await
    .expect("the server answers and closes within 5 s")
    .expect("read the response");
    let text = String::from_utf8(raw).expect("a UTF-8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("a complete response");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    (status, body.to_owned())
}
