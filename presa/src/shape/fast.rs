//! The writers that serve: each result's text written straight from its typed form, in
//! the member order its serde form has, with no `Value` tree in between. The serverInfo
//! `_meta` goes in as the text written once when the server was built.

use super::Extras;
use crate::wire::meta::KEY_SERVER_INFO;
use crate::wire::types::{
    BlobResourceContents, CachePolicy, CallToolResult, Content, ResourceContents,
    TextResourceContents,
};
use crate::wire::{cursor, write};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The serverInfo key of a result's `_meta` and its colon, as written (it needs no
/// escaping; a test checks it against [`KEY_SERVER_INFO`]).
pub(super) const SERVER_INFO_MEMBER: &str = "\"io.modelcontextprotocol/serverInfo\":";

/// `buffer` emptied, with room for the JSON-RPC envelope to be put around the result
/// without growing.
fn result_buffer(mut buffer: String) -> String {
    buffer.clear();
    buffer.reserve(320);
    buffer
}

pub(super) fn call(
    extras: Extras<'_>,
    result: &CallToolResult,
    buffer: String,
) -> Result<String, serde_json::Error> {
    let mut out = result_buffer(buffer);
    out.push_str("{\"content\":[");
    for (i, block) in result.content.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match block {
            Content::Text {
                text,
                annotations: None,
            } => push_text_block(&mut out, text),
            other => push_json_text(&mut out, other)?,
        }
    }
    out.push(']');
    if let Some(structured) = &result.structured_content {
        out.push_str(",\"structuredContent\":");
        push_json_text(&mut out, structured)?;
    }
    end_call(extras, out, result.is_error, result.meta.as_ref())
}

pub(super) fn text(
    extras: Extras<'_>,
    text: &str,
    buffer: String,
) -> Result<String, serde_json::Error> {
    let mut out = result_buffer(buffer);
    out.push_str("{\"content\":[");
    push_text_block(&mut out, text);
    out.push(']');
    end_call(extras, out, false, None)
}

/// One text block without annotations, as serde writes a `Content::Text` (tag first).
fn push_text_block(out: &mut String, text: &str) {
    out.push_str("{\"type\":\"text\",\"text\":");
    write::push_str(out, text);
    out.push('}');
}

/// A `tools/call` result after its content and structured content.
fn end_call(
    extras: Extras<'_>,
    mut out: String,
    is_error: bool,
    meta: Option<&Map<String, Value>>,
) -> Result<String, serde_json::Error> {
    out.push_str(match (is_error, extras.modern) {
        (true, true) => ",\"isError\":true,\"resultType\":\"complete\"",
        (false, true) => ",\"isError\":false,\"resultType\":\"complete\"",
        (true, false) => ",\"isError\":true",
        (false, false) => ",\"isError\":false",
    });
    end(extras, &mut out, meta)?;
    Ok(out)
}

pub(super) fn page<'a>(
    extras: Extras<'_>,
    key: &str,
    items: impl ExactSizeIterator<Item = &'a RawValue> + Clone,
    next_after: Option<&str>,
    cache: CachePolicy,
) -> Result<String, serde_json::Error> {
    let items_len: usize = items.clone().map(|i| i.get().len() + 1).sum();
    let cursor_len = next_after.map_or(0, |last| cursor::len(key, last.len()) + 16);
    let tail = cursor_len + extras.info.map_or(0, |i| i.raw.get().len());
    let mut out = String::with_capacity(items_len + key.len() + tail + 192);
    out.push('{');
    write::push_str(&mut out, key);
    out.push_str(":[");
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item.get());
    }
    out.push(']');
    if let Some(last) = next_after {
        // A cursor is base64url: nothing in it needs escaping.
        out.push_str(",\"nextCursor\":\"");
        cursor::push(&mut out, key, last);
        out.push('"');
    }
    end_cached(extras, out, cache)
}

pub(super) fn read(
    extras: Extras<'_>,
    contents: &[ResourceContents],
    cache: CachePolicy,
) -> Result<String, serde_json::Error> {
    let mut out = String::with_capacity(256);
    out.push_str("{\"contents\":[");
    for (i, item) in contents.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_contents(&mut out, item)?;
    }
    out.push(']');
    end_cached(extras, out, cache)
}

pub(super) fn object(
    extras: Extras<'_>,
    mut result: Map<String, Value>,
) -> Result<String, serde_json::Error> {
    if result.contains_key("_meta") {
        // Its own entries are kept, with serverInfo added among them.
        return serde_json::to_string(&Value::Object(super::complete_object(extras, result)));
    }
    if extras.modern && !result.contains_key("resultType") {
        result.insert("resultType".into(), Value::from("complete"));
    }
    // The object written without its closing brace, then ended as the other results
    // are: serverInfo goes in as its text, not as a value cloned into the map.
    let mut out = serde_json::to_string(&Value::Object(result))?;
    out.pop();
    end(extras, &mut out, None)?;
    Ok(out)
}

/// Ends a result after its last member: the caching hints, `resultType`, `_meta`.
fn end_cached(
    extras: Extras<'_>,
    mut out: String,
    cache: CachePolicy,
) -> Result<String, serde_json::Error> {
    if extras.modern {
        out.push_str(",\"ttlMs\":");
        out.push_str(itoa::Buffer::new().format(cache.ttl_ms));
        out.push_str(",\"cacheScope\":\"");
        out.push_str(cache.scope.as_str());
        out.push_str("\",\"resultType\":\"complete\"");
    }
    end(extras, &mut out, None)?;
    Ok(out)
}

/// Ends a result after its last member: its `_meta` (`own` entries first, then serverInfo
/// unless `own` holds it; no `_meta` when there is neither) and the closing brace.
fn end(
    extras: Extras<'_>,
    out: &mut String,
    own: Option<&Map<String, Value>>,
) -> Result<(), serde_json::Error> {
    let info = extras.info;
    if own.is_some() || info.is_some() {
        out.push_str(",\"_meta\":{");
        let mut has_info = false;
        for (k, v) in own.into_iter().flatten() {
            has_info |= k == KEY_SERVER_INFO;
            write::push_str(out, k);
            out.push(':');
            push_json_text(out, v)?;
            out.push(',');
        }
        if let (Some(info), false) = (info, has_info) {
            out.push_str(SERVER_INFO_MEMBER);
            out.push_str(info.raw.get());
        } else if out.ends_with(',') {
            out.pop();
        }
        out.push('}');
    }
    out.push('}');
    Ok(())
}

/// Appends one item of `resources/read` contents as JSON, byte for byte what its
/// derived `Serialize` writes (members in field order, absent options left out).
/// Only a `_meta` goes through serde.
pub(super) fn push_contents(
    out: &mut String,
    item: &ResourceContents,
) -> Result<(), serde_json::Error> {
    // Taken apart whole, so that a field added to either struct fails to compile here
    // rather than go missing from the wire.
    let (uri, mime_type, (key, body), meta) = match item {
        ResourceContents::Text(TextResourceContents {
            uri,
            mime_type,
            text,
            meta,
        }) => (uri, mime_type, ("text", text), meta),
        ResourceContents::Blob(BlobResourceContents {
            uri,
            mime_type,
            blob,
            meta,
        }) => (uri, mime_type, ("blob", blob), meta),
    };
    out.push_str("{\"uri\":");
    write::push_str(out, uri);
    if let Some(mime) = mime_type {
        out.push_str(",\"mimeType\":");
        write::push_str(out, mime);
    }
    out.push_str(",\"");
    out.push_str(key);
    out.push_str("\":");
    write::push_str(out, body);
    if let Some(meta) = meta {
        out.push_str(",\"_meta\":");
        push_json_text(out, meta)?;
    }
    out.push('}');
    Ok(())
}

/// Appends compact JSON of anything serializable to text, written straight into `out`.
/// On an error (only a `Serialize` that fails can cause one) nothing is appended.
pub(super) fn push_json_text(
    out: &mut String,
    value: &(impl serde::Serialize + ?Sized),
) -> Result<(), serde_json::Error> {
    let mark = out.len();
    serde_json::to_writer(TextWriter(&mut *out), value).inspect_err(|_| out.truncate(mark))
}

/// serde_json's output into a `String`. serde_json writes whole characters in every
/// call (punctuation, numbers, and the text of strings cut only at the ASCII characters
/// it escapes), so each chunk is checked as UTF-8 on its own, with no pass over the
/// whole at the end; a chunk that is not (never, with serde_json) is an error, not a
/// panic.
struct TextWriter<'a>(&'a mut String);

impl std::io::Write for TextWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = std::str::from_utf8(buf).map_err(std::io::Error::other)?;
        self.0.push_str(text);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
