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
