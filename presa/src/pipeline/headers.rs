//! The HTTP header mirror checks of wire sections 13.4 to 13.6: `MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` against the decoded body. They live in the
//! pipeline because they need the body and the registry's `x-mcp-header` table; the HTTP
//! transport only hands the header map over.

use crate::error::Error;
use crate::schema::{HeaderParam, HeaderType, MAX_HEADER_INTEGER};
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use base64::Engine;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

// Built once: looking a header up by `&str` parses and checks the name on every call.
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const METHOD: HeaderName = HeaderName::from_static("mcp-method");
const NAME: HeaderName = HeaderName::from_static("mcp-name");

/// How often a header appears, and its value when once.
#[derive(Clone, Copy, Default)]
enum Seen<'h> {
    #[default]
    Absent,
    Once(&'h HeaderValue),
    Repeated,
}

impl<'h> Seen<'h> {
    fn add(&mut self, value: &'h HeaderValue) {
        *self = match self {
            Seen::Absent => Seen::Once(value),
            _ => Seen::Repeated,
        };
    }

    /// The value of a header that must appear at most once, trimmed.
    fn single(self, display: &str) -> Result<Option<&'h str>, Error> {
        match self {
            Seen::Absent => Ok(None),
            Seen::Repeated => Err(Error::header_mismatch(format!(
                "Missing or repeated required header: {display}"
            ))),
            Seen::Once(value) => value
                .to_str()
                .map(str::trim)
                .map(Some)
                .map_err(|_| Error::header_mismatch(format!("{display} is malformed"))),
        }
    }

    /// Like `single`, and the header must be there.
    fn required(self, display: &str) -> Result<&'h str, Error> {
        self.single(display)?.ok_or_else(|| {
            Error::header_mismatch(format!("Missing or repeated required header: {display}"))
        })
    }
}

/// The headers that mirror the body (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`),
/// found in one pass over the map: a lookup each hashed the name every time.
#[derive(Default)]
pub(crate) struct Mirrored<'h> {
    version: Seen<'h>,
    method: Seen<'h>,
    name: Seen<'h>,
}

impl<'h> Mirrored<'h> {
    pub(crate) fn scan(headers: &'h HeaderMap) -> Self {
        let mut found = Mirrored::default();
        for (key, value) in headers {
            if *key == PROTOCOL_VERSION {
                found.version.add(value);
            } else if *key == METHOD {
                found.method.add(value);
            } else if *key == NAME {
                found.name.add(value);
            }
        }
        found
    }
}

/// Reads a header that must appear at most once; its value trimmed.
fn single<'h>(
    headers: &'h HeaderMap,
    name: &HeaderName,
    display: &str,
) -> Result<Option<&'h str>, Error> {
    let mut seen = Seen::Absent;
    for value in headers.get_all(name) {
        seen.add(value);
    }
    seen.single(display)
}

/// `MCP-Protocol-Version` must be present on every request POST.
pub(crate) fn version_present<'h>(mirrored: &Mirrored<'h>) -> Result<&'h str, Error> {
    mirrored.version.required("MCP-Protocol-Version")
}

/// The header must equal the body's `_meta` version (step 6 of admission).
pub(crate) fn version_matches(header: &str, body: &str) -> Result<(), Error> {
    if header == body {
        Ok(())
    } else {
        Err(
            Error::header_mismatch("Protocol header does not match request metadata")
                .with_data(json!({ "header": header, "body": body })),
        )
    }
}

/// `Mcp-Method` must be present and equal the body's method (case-sensitive).
pub(crate) fn method_matches(mirrored: &Mirrored<'_>, method: &str) -> Result<(), Error> {
    let value = mirrored.method.required("Mcp-Method")?;
    if value == method {
        Ok(())
    } else {
        Err(Error::header_mismatch(
            "Mcp-Method does not match the request body",
        ))
    }
}

/// `Mcp-Name` must be present and equal `name` (the tool or prompt name, or the URI).
pub(crate) fn name_matches(mirrored: &Mirrored<'_>, name: &str) -> Result<(), Error> {
    let raw = mirrored.name.required("Mcp-Name")?;
    let value = decode_value(raw).ok_or_else(|| Error::header_mismatch("Mcp-Name is malformed"))?;
    if value == name {
        Ok(())
    } else {
        Err(Error::header_mismatch(
            "Mcp-Name does not match the request body",
        ))
    }
}

/// Checks optional headers on a notification POST: only those present are compared.
pub(crate) fn notification_headers(
    headers: &HeaderMap,
    method: &str,
    body_version: Option<&str>,
) -> Result<(), Error> {
    let mirrored = Mirrored::scan(headers);
    if let Some(m) = mirrored.method.single("Mcp-Method")?
        && m != method
    {
        return Err(Error::header_mismatch(
            "Mcp-Method does not match the request body",
        ));
    }
    if let (Some(h), Some(b)) = (
        mirrored.version.single("MCP-Protocol-Version")?,
        body_version,
    ) {
        version_matches(h, b)?;
    }
    Ok(())
}

/// The `Mcp-Param-*` checks of wire section 13.6 for one tool call.
pub(crate) fn params_match(
    headers: &HeaderMap,
    table: &[HeaderParam],
    arguments: &Map<String, Value>,
) -> Result<(), Error> {
    for param in table {
        let display = format!("Mcp-Param-{}", param.header);
        let header = single(headers, &param.header_name, &display)?;
        let arg = value_at(arguments, &param.path).filter(|v| !v.is_null());
        let (Some(arg), raw) = (arg, header) else {
            // An absent or null argument means no header is expected; a header sent for
            // it anyway carries nothing the body disagrees with, so it is ignored.
            continue;
        };
        let Some(raw) = raw else {
            return Err(Error::header_mismatch(format!(
                "Missing or repeated required header: {display}"
            )));
        };
        let value = decode_value(raw)
            .ok_or_else(|| Error::header_mismatch(format!("{display} is malformed")))?;
        let same = match (param.ty, arg) {
            (HeaderType::String, Value::String(s)) => *s == value,
            (HeaderType::Boolean, Value::Bool(b)) => value == if *b { "true" } else { "false" },
            (HeaderType::Integer, Value::Number(n)) => {
                // Within ±(2^53 − 1), whether the body wrote it as 42 or 42.0.
                n.as_f64()
                    .is_some_and(|f| f.abs() <= MAX_HEADER_INTEGER as f64)
                    && integers_equal(n, &value)
            }
            _ => false,
        };
        if !same {
            return Err(Error::header_mismatch(format!(
                "{display} does not match the request body"
            )));
        }
    }
    Ok(())
}

/// The value at a property path of the arguments, if every step is an object holding
/// the next name (wire: "if no value is present at that path … the header is omitted").
fn value_at<'a>(arguments: &'a Map<String, Value>, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter().try_fold(arguments.get(first)?, |value, name| {
        value.as_object()?.get(name)
    })
}

fn integers_equal(body: &serde_json::Number, header: &str) -> bool {
    if let (Some(b), Ok(h)) = (body.as_i64(), header.parse::<i64>()) {
        return b == h;
    }
    // Numerically equal forms such as 42 and 42.0, or 1e2 and 100.
    match (body.as_f64(), header.parse::<f64>()) {
        (Some(b), Ok(h)) => b == h && b.fract() == 0.0,
        _ => false,
    }
}

/// Decodes a mirrored header value: the `=?base64?…?=` wrapper is decoded (and must be
/// UTF-8); a plain value must be visible ASCII, space or tab.
pub(crate) fn decode_value(raw: &str) -> Option<Cow<'_, str>> {
    if let Some(inner) = raw
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(inner)
            .ok()?;
        return String::from_utf8(bytes).ok().map(Cow::Owned);
    }
    raw.bytes()
        .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
        .then_some(Cow::Borrowed(raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_base64_and_refuses_controls() {
        assert_eq!(
            decode_value("=?base64?SGVsbG8=?=").as_deref(),
            Some("Hello")
        );
        assert_eq!(decode_value("a b").as_deref(), Some("a b"));
        assert_eq!(decode_value("=?base64?//79?="), None);
        assert_eq!(decode_value("a\u{7f}"), None);
    }

    #[test]
    fn integers_compare_numerically() {
        let n = serde_json::Number::from(42);
        assert!(integers_equal(&n, "42"));
        assert!(integers_equal(&n, "42.0"));
        assert!(!integers_equal(&n, "43"));
        assert!(!integers_equal(&n, "forty-two"));
    }
}
