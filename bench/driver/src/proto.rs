//! The one request every client sends, and the check every response must pass.

use serde::Deserialize;
use std::borrow::Cow;

/// The text the echo tool is called with.
pub const TEXT: &str = "hello from the presa bench";

/// A valid 2026-07-28 `tools/call` of `echo` with the full request `_meta`.
pub fn request(id: u64) -> String {
    format!(
        concat!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"echo","#,
            r#""arguments":{{"text":"{}"}},"_meta":{{"#,
            r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
            r#""io.modelcontextprotocol/clientCapabilities":{{}},"#,
            r#""io.modelcontextprotocol/clientInfo":{{"name":"presa-bench","version":"0.0.0"}}}}}}}}"#
        ),
        id, TEXT
    )
}

/// The headers of wire section 13 that a 2026-07-28 tools/call of `echo` carries, besides
/// `Host` and `Content-Length`.
pub const HEADERS: &[(&str, &str)] = &[
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
    ("mcp-protocol-version", "2026-07-28"),
    ("mcp-method", "tools/call"),
    ("mcp-name", "echo"),
];

#[derive(Deserialize)]
struct Response<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    id: Option<u64>,
    #[serde(borrow)]
    result: Option<CallResult<'a>>,
}

#[derive(Deserialize)]
struct CallResult<'a> {
    #[serde(borrow)]
    content: Vec<Block<'a>>,
    #[serde(rename = "isError", default)]
    is_error: bool,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
}

/// Checks one JSON-RPC response: a successful echo of [`TEXT`]. Returns its id.
pub fn check(body: &[u8]) -> Result<u64, String> {
    let bad = |why: &str| format!("{why}: {}", String::from_utf8_lossy(body));
    let r: Response<'_> = serde_json::from_slice(body).map_err(|e| bad(&e.to_string()))?;
    if r.jsonrpc != "2.0" {
        return Err(bad("not JSON-RPC 2.0"));
    }
    let result = r.result.ok_or_else(|| bad("no result"))?;
    if result.is_error {
        return Err(bad("tool error"));
    }
    match result.content.as_slice() {
        [b] if b.kind == "text" && b.text.as_deref() == Some(TEXT) => {}
        _ => return Err(bad("not the echoed text")),
    }
    r.id.ok_or_else(|| bad("no integer id"))
}

/// The JSON-RPC message of an HTTP response body: the body itself, or the last `data:`
/// event when the server answered with an SSE stream.
pub fn http_message<'a>(content_type: &str, body: &'a [u8]) -> &'a [u8] {
    if !content_type.starts_with("text/event-stream") {
        return body;
    }
    body.split(|&b| b == b'\n')
        .filter_map(|line| line.strip_prefix(b"data:"))
        .map(|d| d.strip_prefix(b" ").unwrap_or(d))
        .rfind(|d| d.starts_with(b"{"))
        .unwrap_or(b"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_is_json() {
        let v: serde_json::Value = serde_json::from_str(&request(7)).unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["params"]["arguments"]["text"], TEXT);
        assert_eq!(
            v["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
    }

    #[test]
    fn checks() {
        let ok = format!(
            r#"{{"jsonrpc":"2.0","id":3,"result":{{"content":[{{"type":"text","text":"{TEXT}"}}]}}}}"#
        );
        assert_eq!(check(ok.as_bytes()), Ok(3));
        assert!(check(br#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"x"}}"#).is_err());
        let sse = format!("event: message\ndata: {ok}\n\n");
        assert_eq!(
            check(http_message("text/event-stream", sse.as_bytes())),
            Ok(3)
        );
    }
}
