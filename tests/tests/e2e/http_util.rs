//! Helpers shared by the Streamable HTTP end-to-end tests: building requests with a
//! hand-written `_meta`, asserting a plain result, and small servers made with the
//! public builder API. (Posting, checked both ways, is `presa_tests::http::Http`'s.)

use presa::{Implementation, Server, Tool, ToolCall};
use presa_tests::http::{Harness, Reply};
use serde_json::{Map, Value, json};

/// The two headers every POST needs before the body is even read.
pub(crate) const BASE_HEADERS: &[(&str, &str)] = &[
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
];

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

/// A connection to the harness on which a POST to `/mcp` was sent, its head up to the
/// body's framing headers, then `rest` (those headers, the blank line and what of the
/// body the test sends): bytes written by hand, unchecked.
pub(crate) async fn raw_post_unchecked(h: &Harness, rest: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let addr = h.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connects");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{rest}"
    );
    stream.write_all(head.as_bytes()).await.expect("writes");
    stream
}

/// Reads one whole HTTP answer from `stream` (its head, then as many bytes as its
/// Content-Length says), asserts its status, and returns its body as JSON.
pub(crate) async fn raw_answer(
    stream: &mut tokio::net::TcpStream,
    status: &str,
) -> serde_json::Value {
    use tokio::io::AsyncReadExt;
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    let whole = |reply: &[u8]| {
        let text = String::from_utf8_lossy(reply);
        let end = text.find("\r\n\r\n")? + 4;
        let length = text[..end].lines().find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })?;
        (reply.len() >= end + length).then_some(end)
    };
    let end = loop {
        if let Some(end) = whole(&reply) {
            break end;
        }
        let n = presa_tests::wait::within("an answer", stream.read(&mut buf))
            .await
            .expect("reads");
        assert!(n > 0, "the connection closed without a whole answer");
        reply.extend_from_slice(&buf[..n]);
    };
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with(&format!("HTTP/1.1 {status}")), "{reply}");
    let message = serde_json::from_str(reply[end..].trim()).expect("JSON");
    presa_tests::schema::check_server_message("", &message);
    message
}
