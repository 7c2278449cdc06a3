//! The requests the clients send, and the checks every response must pass: the one
//! 2026-07-28 `tools/call`, and what a client of 2025-11-25 sends in its session (the
//! `initialize` handshake, then the same `tools/call` without the 2026-07-28 `_meta`).

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
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
    ("mcp-protocol-version", MODERN_VERSION),
    ("mcp-method", "tools/call"),
    ("mcp-name", "echo"),
];

/// The revision of the stateless requests.
pub const MODERN_VERSION: &str = "2026-07-28";

/// The earlier revision the legacy cells speak: sessions opened by `initialize`.
pub const LEGACY_VERSION: &str = "2025-11-25";

/// The `tools/call` of `echo` a 2025-11-25 client sends in its session: no `_meta`.
pub fn legacy_request(id: u64) -> String {
    format!(
        concat!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"echo","#,
            r#""arguments":{{"text":"{}"}}}}}}"#
        ),
        id, TEXT
    )
}

/// The `initialize` that opens a 2025-11-25 session.
pub fn initialize(id: u64) -> String {
    format!(
        concat!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"initialize","params":{{"#,
            r#""protocolVersion":"{}","capabilities":{{}},"#,
            r#""clientInfo":{{"name":"presa-bench","version":"0.0.0"}}}}}}"#
        ),
        id, LEGACY_VERSION
    )
}

/// The notification that completes the handshake.
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// The headers of a 2025-11-25 client's `initialize`, besides `Host` and
/// `Content-Length`: no `MCP-Protocol-Version` yet, the revision is what it negotiates.
pub const INITIALIZE_HEADERS: &[(&str, &str)] = &[
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
];

/// The headers every POST of a 2025-11-25 session carries after `initialize`, besides
/// `Host`, `Content-Length` and `Mcp-Session-Id`.
pub const LEGACY_HEADERS: &[(&str, &str)] = &[
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
    ("mcp-protocol-version", LEGACY_VERSION),
];

/// The header that names the session.
pub const SESSION_ID: &str = "mcp-session-id";

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
    /// Whether the result has a `resultType` member (whatever its value), which only
    /// 2026-07-28 results carry.
    #[serde(rename = "resultType", default, deserialize_with = "present")]
    result_type: bool,
}

/// True for a member that is there, whatever its value (`null` included).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(d).map(|_| true)
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
    check_as(body, false)
}

/// Checks one JSON-RPC response of a 2025-11-25 session: a successful echo of [`TEXT`],
/// as [`check`] has it, whose result carries no `resultType`. Returns its id.
pub fn check_legacy(body: &[u8]) -> Result<u64, String> {
    check_as(body, true)
}

fn check_as(body: &[u8], legacy: bool) -> Result<u64, String> {
    let bad = |why: &str| format!("{why}: {}", String::from_utf8_lossy(body));
    let r: Response<'_> = serde_json::from_slice(body).map_err(|e| bad(&e.to_string()))?;
    if r.jsonrpc != "2.0" {
        return Err(bad("not JSON-RPC 2.0"));
    }
    let result = r.result.ok_or_else(|| bad("no result"))?;
    if result.is_error {
        return Err(bad("tool error"));
    }
    if legacy && result.result_type {
        return Err(bad("a 2026-07-28 resultType in a 2025-11-25 session"));
    }
    match result.content.as_slice() {
        [b] if b.kind == "text" && b.text.as_deref() == Some(TEXT) => {}
        _ => return Err(bad("not the echoed text")),
    }
    r.id.ok_or_else(|| bad("no integer id"))
}

#[derive(Deserialize)]
struct InitializeResponse<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    id: Option<u64>,
    #[serde(borrow)]
    result: Option<InitializeResult<'a>>,
}

#[derive(Deserialize)]
struct InitializeResult<'a> {
    #[serde(rename = "protocolVersion", borrow)]
    protocol_version: Cow<'a, str>,
    #[serde(default, deserialize_with = "present")]
    capabilities: bool,
    #[serde(rename = "serverInfo", default, deserialize_with = "present")]
    server_info: bool,
    #[serde(rename = "resultType", default, deserialize_with = "present")]
    result_type: bool,
}

/// Checks the answer to [`initialize`] with this id: a result that accepts
/// [`LEGACY_VERSION`], with capabilities and serverInfo and no `resultType`.
pub fn check_initialize(body: &[u8], id: u64) -> Result<(), String> {
    let bad = |why: &str| format!("initialize: {why}: {}", String::from_utf8_lossy(body));
    let r: InitializeResponse<'_> =
        serde_json::from_slice(body).map_err(|e| bad(&e.to_string()))?;
    if r.jsonrpc != "2.0" {
        return Err(bad("not JSON-RPC 2.0"));
    }
    if r.id != Some(id) {
        return Err(bad(&format!("not the answer to id {id}")));
    }
    let result = r.result.ok_or_else(|| bad("no result"))?;
    if result.protocol_version != LEGACY_VERSION {
        return Err(bad(&format!("protocolVersion is not {LEGACY_VERSION}")));
    }
    if !result.capabilities || !result.server_info {
        return Err(bad("no capabilities or no serverInfo"));
    }
    if result.result_type {
        return Err(bad("a 2026-07-28 resultType"));
    }
    Ok(())
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

    #[test]
    fn legacy_request_has_no_2026_meta() {
        let v: serde_json::Value = serde_json::from_str(&legacy_request(7)).unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["method"], "tools/call");
        assert_eq!(v["params"]["name"], "echo");
        assert_eq!(v["params"]["arguments"]["text"], TEXT);
        assert!(v["params"].get("_meta").is_none());
        let init: serde_json::Value = serde_json::from_str(&initialize(0)).unwrap();
        assert_eq!(init["params"]["protocolVersion"], LEGACY_VERSION);
        assert!(init["params"].get("_meta").is_none());
        let note: serde_json::Value = serde_json::from_str(INITIALIZED).unwrap();
        assert!(note.get("id").is_none());
    }

    /// The legacy check passes a 2025-11-25 echo and refuses what the modern check
    /// passes only because it has no era: a `resultType` member, whatever its value.
    #[test]
    fn legacy_checks_refuse_a_result_type() {
        let ok = format!(
            r#"{{"jsonrpc":"2.0","id":3,"result":{{"content":[{{"type":"text","text":"{TEXT}"}}],"isError":false}}}}"#
        );
        assert_eq!(check_legacy(ok.as_bytes()), Ok(3));
        for result_type in [r#""complete""#, "null"] {
            let modern = format!(
                r#"{{"jsonrpc":"2.0","id":3,"result":{{"content":[{{"type":"text","text":"{TEXT}"}}],"resultType":{result_type}}}}}"#
            );
            assert_eq!(check(modern.as_bytes()), Ok(3));
            assert!(check_legacy(modern.as_bytes()).is_err(), "{modern}");
        }
        // The rest of the modern check holds too.
        assert!(
            check_legacy(br#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"x"}}"#).is_err()
        );
        let two = format!(
            r#"{{"jsonrpc":"2.0","id":3,"result":{{"content":[{{"type":"text","text":"{TEXT}"}},{{"type":"text","text":"{TEXT}"}}]}}}}"#
        );
        assert!(check_legacy(two.as_bytes()).is_err());
        let other =
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}]}}"#;
        assert!(check_legacy(other.as_bytes()).is_err());
        // A priming event (an id, no data) before the answer, as a 2025-11-25 stream has.
        let sse = format!("id: 1-0\ndata:\n\nid: 1-1\nevent: message\ndata: {ok}\n\n");
        assert_eq!(
            check_legacy(http_message("text/event-stream", sse.as_bytes())),
            Ok(3)
        );
    }

    #[test]
    fn initialize_checks() {
        let ok = br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}"#;
        assert_eq!(check_initialize(ok, 0), Ok(()));
        assert!(check_initialize(ok, 1).is_err(), "another id");
        let older = br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;
        assert!(check_initialize(older, 0).is_err(), "another revision");
        let modern = br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"},"resultType":"complete"}}"#;
        assert!(check_initialize(modern, 0).is_err(), "a resultType");
        let bare = br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}"#;
        assert!(check_initialize(bare, 0).is_err(), "no capabilities");
        let error = br#"{"jsonrpc":"2.0","id":0,"error":{"code":-32022,"message":"x"}}"#;
        assert!(check_initialize(error, 0).is_err(), "an error");
    }
}
