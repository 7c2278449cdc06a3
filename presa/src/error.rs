//! Protocol errors: the JSON-RPC error objects presa sends, with their codes and the HTTP
//! status each maps to.
//!
//! Three kinds of failure never mix in presa: a protocol error (this module), a tool error
//! (an `isError: true` result the model can read, see [`crate::CallToolResult::error`]) and
//! an internal failure (a panic or bug, sent as -32603 with no detail).

use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::fmt;

/// The JSON-RPC and MCP error codes presa uses.
///
/// Codes in -32099..=-32000 are reserved by the 2026-07-28 revision: only the three it
/// defines (-32020, -32021, -32022) may be emitted to a 2026-07-28 request; the legacy
/// revisions' -32002 (resource not found) goes only to legacy sessions.
pub mod code {
    /// The message is not valid JSON (or not UTF-8).
    pub const PARSE_ERROR: i64 = -32700;
    /// The message is not a valid JSON-RPC 2.0 request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not offered by this server.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The params are invalid for the method.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The server failed while serving the request.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// An HTTP header is missing, repeated, malformed, or disagrees with the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability the request did not declare.
    pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
    /// The requested protocol version is not supported.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
    /// A resource does not exist, as the legacy revisions (2025-11-25, 2025-06-18) say it.
    pub const RESOURCE_NOT_FOUND_LEGACY: i64 = -32002;
}

/// A protocol error: a JSON-RPC error object with a code, a message and optional `data`.
///
/// Build one with the constructors ([`Error::invalid_params`], [`Error::internal`], …) or,
/// for an application-defined code, with [`Error::application`], which refuses the ranges
/// the protocol reserves.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Error {
    code: i64,
    message: Cow<'static, str>,
    data: Option<Value>,
    /// How the error goes over HTTP when its code alone does not say (boxed: errors are
    /// moved often, and this is rare).
    http: Option<Box<HttpSpecifics>>,
}

/// An error's HTTP status when it is not its code's own (503 for a refusal at a bound
/// the server keeps, 401 or 403 for an authorization refusal), and the
/// `WWW-Authenticate` challenge of an authorization refusal.
#[derive(Clone, Debug, PartialEq)]
struct HttpSpecifics {
    status: u16,
    challenge: Option<Box<str>>,
}

/// Why [`Error::application`] refused a code.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReservedCode(pub i64);

impl fmt::Display for ReservedCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "error code {} is reserved by JSON-RPC or MCP; pick a code outside -32768..=-32000",
            self.0
        )
    }
}

impl std::error::Error for ReservedCode {}

impl Error {
    pub(crate) fn new(code: i64, message: impl Into<Cow<'static, str>>) -> Self {
        Error {
            code,
            message: message.into(),
            data: None,
            http: None,
        }
    }

    /// -32603 for a request refused at a bound the server keeps (too many of something
    /// open at once): sent with HTTP 503, as the transports' own bounds are, so a client
    /// can tell "try again later" from a failure.
    pub(crate) fn unavailable(message: impl Into<Cow<'static, str>>) -> Self {
        Error::new(code::INTERNAL_ERROR, message).with_status(503)
    }

    /// -32603 for a request that met a fault of a store it needs (tasks, the replay
    /// record): `data.retryable`, so the client tries again later. Nothing of the cause is
    /// sent.
    pub(crate) fn retryable(message: impl Into<Cow<'static, str>>) -> Self {
        Error::new(code::INTERNAL_ERROR, message).with_data(serde_json::json!({"retryable": true}))
    }

    /// The same error sent with HTTP `status` and the `WWW-Authenticate` challenge
    /// `challenge` (an authorization refusal).
    pub(crate) fn with_challenge(mut self, status: u16, challenge: String) -> Self {
        self.http = Some(Box::new(HttpSpecifics {
            status,
            challenge: Some(challenge.into_boxed_str()),
        }));
        self
    }

    /// The same error sent with HTTP `status`.
    pub(crate) fn with_status(mut self, status: u16) -> Self {
        self.http = Some(Box::new(HttpSpecifics {
            status,
            challenge: None,
        }));
        self
    }

    /// The `WWW-Authenticate` challenge of an authorization refusal.
    pub(crate) fn challenge(&self) -> Option<&str> {
        self.http.as_ref().and_then(|h| h.challenge.as_deref())
    }

    /// An application-defined error. Codes from -32768 to -32000 belong to JSON-RPC and
    /// MCP and are refused; use the dedicated constructors for the codes the protocol
    /// defines.
    pub fn application(
        code: i64,
        message: impl Into<Cow<'static, str>>,
    ) -> Result<Self, ReservedCode> {
        if (-32768..=-32000).contains(&code) {
            return Err(ReservedCode(code));
        }
        Ok(Error::new(code, message))
    }

    /// -32700: the bytes are not a JSON message.
    pub fn parse_error(message: impl Into<Cow<'static, str>>) -> Self {
        Error::new(code::PARSE_ERROR, message)
    }

    /// -32600: the message is not a valid JSON-RPC request.
    pub fn invalid_request(message: impl Into<Cow<'static, str>>) -> Self {
        Error::new(code::INVALID_REQUEST, message)
    }

    /// -32601 for `method`.
    pub fn method_not_found(method: &str) -> Self {
        Error::new(
            code::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    /// -32602: invalid params.
    pub fn invalid_params(message: impl Into<Cow<'static, str>>) -> Self {
        Error::new(code::INVALID_PARAMS, message)
    }

    /// -32602 with `data.uri`: the resource does not exist (SEP-2164).
    pub fn resource_not_found(uri: &str) -> Self {
        Error::new(code::INVALID_PARAMS, "Resource not found").with_data(json!({ "uri": uri }))
    }

    /// -32603 with a fixed message: the cause is logged, never sent.
    pub fn internal() -> Self {
        Error::new(code::INTERNAL_ERROR, "Internal error")
    }

    /// -32020: a header is missing, repeated, malformed or disagrees with the body.
    pub fn header_mismatch(message: impl Into<Cow<'static, str>>) -> Self {
        Error::new(code::HEADER_MISMATCH, message)
    }

    /// -32021 with `data.requiredCapabilities`.
    pub fn missing_client_capability(required: Value) -> Self {
        Error::new(
            code::MISSING_CLIENT_CAPABILITY,
            "Missing required client capability",
        )
        .with_data(json!({ "requiredCapabilities": required }))
    }

    /// -32022 with `data.requested` and `data.supported`.
    pub fn unsupported_version(requested: &str, supported: &[&str]) -> Self {
        Error::new(
            code::UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "Unsupported protocol version {requested:?}; this server supports {}",
                supported.join(", ")
            ),
        )
        .with_data(json!({ "requested": requested, "supported": supported }))
    }

    /// Attaches `data` to the error.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The error code.
    pub fn code(&self) -> i64 {
        self.code
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The `data` member, if any.
    pub fn data(&self) -> Option<&Value> {
        self.data.as_ref()
    }

    /// The HTTP status this error is sent with on Streamable HTTP.
    ///
    /// -32601 is 404, -32603 is 500 (503 when the server refused the request at one of
    /// its bounds, such as too many open subscription streams), every other
    /// protocol-defined code is 400 (401 or 403 for an authorization refusal); application
    /// codes are 200, since the JSON-RPC body carries the failure.
    pub fn http_status(&self) -> u16 {
        if let Some(http) = &self.http {
            return http.status;
        }
        match self.code {
            code::METHOD_NOT_FOUND => 404,
            code::INTERNAL_ERROR => 500,
            code::PARSE_ERROR
            | code::INVALID_REQUEST
            | code::INVALID_PARAMS
            | code::HEADER_MISMATCH
            | code::MISSING_CLIENT_CAPABILITY
            | code::UNSUPPORTED_PROTOCOL_VERSION => 400,
            _ => 200,
        }
    }

    /// The JSON-RPC error object (`code`, `message`, `data`).
    pub fn to_object(&self) -> Value {
        let mut map = Map::with_capacity(3);
        map.insert("code".into(), Value::from(self.code));
        map.insert("message".into(), Value::from(self.message.as_ref()));
        if let Some(data) = &self.data {
            map.insert("data".into(), data.clone());
        }
        Value::Object(map)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for Error {}

/// Errors raised while building a server or registering an item: a schema that does not
/// compile, an invalid `x-mcp-header`, a duplicate name, an icon with a bad scheme.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BuildError {
    message: String,
}

impl BuildError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        BuildError {
            message: message.into(),
        }
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for BuildError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn application_codes_outside_the_reserved_range_only() {
        assert!(Error::application(-32000, "x").is_err());
        assert!(Error::application(-32099, "x").is_err());
        assert!(Error::application(-32002, "x").is_err());
        assert!(Error::application(-32042, "x").is_err());
        assert!(Error::application(-32768, "x").is_err());
        assert_eq!(Error::application(1, "x").map(|e| e.code()), Ok(1));
        assert_eq!(
            Error::application(-31999, "x").map(|e| e.code()),
            Ok(-31999)
        );
    }

    /// A refusal at a bound is -32603 with HTTP 503; any other -32603 is 500.
    #[test]
    fn a_refusal_at_a_bound_is_503_and_an_internal_error_500() {
        let busy = Error::unavailable("Too many");
        assert_eq!(
            (busy.code(), busy.http_status()),
            (code::INTERNAL_ERROR, 503)
        );
        assert_eq!(
            busy.to_object(),
            json!({"code": -32603, "message": "Too many"})
        );
        assert_eq!(Error::internal().http_status(), 500);
    }
}
