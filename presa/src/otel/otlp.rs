//! The OTLP trace export request, written as protobuf from presa's finished spans
//! (`observe::record::Finished`): the body of `POST {endpoint}/v1/traces`.
//!
//! Written by hand because the SDK's way costs more than the request it describes: every
//! attribute of every span is copied into owned strings of generated messages, then
//! encoded. This writes the same message straight from the record, field by field, as
//! `opentelemetry-proto`'s `ExportTraceServiceRequest` defines it (one resource, one
//! scope, the spans); its tests decode what it writes with that crate and compare it
//! with the SDK exporter's body for the same spans.

use crate::observe::record::{Finished, Kind, Record, Value};
use opentelemetry::trace::SpanContext;
use std::time::{SystemTime, UNIX_EPOCH};

/// Protobuf wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

/// `SpanFlags`: the flags say whether the parent is remote, and it is.
const HAS_IS_REMOTE: u32 = 0x100;
const IS_REMOTE: u32 = 0x200;

/// The parts of every request that do not change: the resource and the scope, written
/// once.
#[derive(Debug)]
pub(crate) struct Header {
    /// `Resource` (field 1 of `ResourceSpans`), tag and length included.
    resource: Vec<u8>,
    /// `InstrumentationScope` (field 1 of `ScopeSpans`), tag and length included.
    scope: Vec<u8>,
}

impl Header {
    /// The header for spans of `resource`, from the instrumentation scope `scope`.
    pub(crate) fn new(resource: &opentelemetry_sdk::Resource, scope: &str) -> Header {
        let mut r = Vec::new();
        nested(&mut r, 1, |out| {
            for (key, value) in resource.iter() {
                nested(out, 1, |kv| {
                    string(kv, 1, key.as_str());
                    nested(kv, 2, |any| any_value(any, value));
                });
            }
        });
        let mut s = Vec::new();
        nested(&mut s, 1, |out| string(out, 1, scope));
        Header {
            resource: r,
            scope: s,
        }
    }

    /// Writes the `ExportTraceServiceRequest` of `spans` into `out`, in one pass: each
    /// message's length goes in room kept before its body, sized for the usual length
    /// (so it is rarely moved).
    pub(crate) fn encode(&self, spans: &[std::sync::Arc<Record>], out: &mut Vec<u8>) {
        nested_in(out, 1, 3, |rs| {
            rs.extend_from_slice(&self.resource);
            nested_in(rs, 2, 3, |ss| {
                ss.extend_from_slice(&self.scope);
                for span in spans {
                    span.with_finished(|span| nested_in(ss, 2, 2, |out| encode_span(out, span)));
                }
            });
        });
    }
}

/// One `Span`.
fn encode_span(out: &mut Vec<u8>, span: &Finished) {
    let sc = &span.context;
    bytes(out, 1, &sc.trace_id().to_bytes());
    bytes(out, 2, &sc.span_id().to_bytes());
    trace_state(out, sc.trace_state());
    if let Some((parent, _)) = span.parent {
        bytes(out, 4, &parent.to_bytes());
    }
    // The name, `{head}` or `{head} {target}`, written in place.
    let head = span.name.head.as_str();
    match &span.name.target {
        None => string(out, 5, head),
        Some(target) => {
            key(out, 5, LEN);
            varint(out, (head.len() + 1 + target.len()) as u64);
            out.extend_from_slice(head.as_bytes());
            out.push(b' ');
            out.extend_from_slice(target.as_bytes());
        }
    }
    let kind = match span.kind {
        Kind::Internal => 1,
        Kind::Server => 2,
    };
    key(out, 6, VARINT);
    varint(out, kind);
    fixed64(out, 7, nanos(span.start));
    fixed64(out, 8, nanos(span.end));
    for (attr, v) in span.attributes.iter() {
        attribute(out, attr.name(), v);
    }
    for link in &span.links {
        nested(out, 13, |l| encode_link(l, link));
    }
    // The status is always written, as the SDK's exporter does (an unset one is empty).
    nested(out, 15, |status| {
        if let Some(message) = &span.error {
            string(status, 2, message);
            key(status, 3, VARINT);
            varint(status, 2);
        }
    });
    let remote = match span.parent {
        Some((_, true)) => IS_REMOTE,
        _ => 0,
    };
    fixed32(
        out,
        16,
        u32::from(sc.trace_flags().to_u8()) | HAS_IS_REMOTE | remote,
    );
}

/// One span attribute (`Span.attributes`, a `KeyValue`), its lengths computed up front.
fn attribute(out: &mut Vec<u8>, name: &str, value: &Value) {
    // AnyValue: `string_value` (1) or `int_value` (3).
    let any_len = match value {
        Value::Static(_) | Value::Str(_) => {
            let s = value.as_str();
            1 + varint_len(s.len() as u64) + s.len()
        }
        Value::Int(i) => 1 + varint_len(*i as u64),
    };
    let kv_len =
        1 + varint_len(name.len() as u64) + name.len() + 1 + varint_len(any_len as u64) + any_len;
    key(out, 9, LEN);
    varint(out, kv_len as u64);
    bytes(out, 1, name.as_bytes());
    key(out, 2, LEN);
    varint(out, any_len as u64);
    match value {
        Value::Static(_) | Value::Str(_) => {
            let s = value.as_str();
            key(out, 1, LEN);
            varint(out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
        Value::Int(i) => {
            key(out, 3, VARINT);
            varint(out, *i as u64);
        }
    }
}

/// How many bytes `v` takes as a varint.
#[inline]
fn varint_len(v: u64) -> usize {
    // 7 bits a byte; 0 takes one.
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// A `trace_state` field (3 in a span and a link), left out when there is none (most
/// spans: writing the header would allocate for nothing).
fn trace_state(out: &mut Vec<u8>, state: &opentelemetry::trace::TraceState) {
    if *state != opentelemetry::trace::TraceState::NONE {
        string(out, 3, &state.header());
    }
}

/// One `Span.Link`.
fn encode_link(out: &mut Vec<u8>, to: &SpanContext) {
    bytes(out, 1, &to.trace_id().to_bytes());
    bytes(out, 2, &to.span_id().to_bytes());
    trace_state(out, to.trace_state());
    let remote = if to.is_remote() { IS_REMOTE } else { 0 };
    fixed32(
        out,
        6,
        u32::from(to.trace_flags().to_u8()) | HAS_IS_REMOTE | remote,
    );
}

/// An `AnyValue`'s field for a resource attribute.
fn any_value(out: &mut Vec<u8>, value: &opentelemetry::Value) {
    use opentelemetry::{Array, Value as V};
    match value {
        // A oneof member is written also when empty, as prost writes it.
        V::String(s) => bytes_always(out, 1, s.as_str().as_bytes()),
        V::Bool(b) => {
            key(out, 2, VARINT);
            varint(out, u64::from(*b));
        }
        V::I64(i) => {
            key(out, 3, VARINT);
            varint(out, *i as u64);
        }
        V::F64(f) => {
            key(out, 4, FIXED64);
            out.extend_from_slice(&f.to_le_bytes());
        }
        V::Array(array) => nested(out, 5, |values| {
            let each = |values: &mut Vec<u8>, v: opentelemetry::Value| {
                nested(values, 1, |any| any_value(any, &v));
            };
            match array {
                Array::Bool(items) => items.iter().for_each(|b| each(values, V::Bool(*b))),
                Array::I64(items) => items.iter().for_each(|i| each(values, V::I64(*i))),
                Array::F64(items) => items.iter().for_each(|f| each(values, V::F64(*f))),
                Array::String(items) => items
                    .iter()
                    .for_each(|s| each(values, V::String(s.clone()))),
                other => each(values, V::String(other.to_string().into())),
            }
        }),
        other => bytes_always(out, 1, other.as_str().as_bytes()),
    }
}

/// Nanoseconds since the Unix epoch (0 before it).
fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[inline]
fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

#[inline]
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A string field; proto3 leaves an empty one out.
#[inline]
fn string(out: &mut Vec<u8>, field: u32, s: &str) {
    bytes(out, field, s.as_bytes());
}

/// A bytes field; proto3 leaves an empty one out.
#[inline]
fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    if !b.is_empty() {
        bytes_always(out, field, b);
    }
}

/// A length-delimited field, also when empty (a message that is present).
#[inline]
fn bytes_always(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(out, field, LEN);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

#[inline]
fn fixed64(out: &mut Vec<u8>, field: u32, v: u64) {
    key(out, field, FIXED64);
    out.extend_from_slice(&v.to_le_bytes());
}

#[inline]
fn fixed32(out: &mut Vec<u8>, field: u32, v: u32) {
    key(out, field, FIXED32);
    out.extend_from_slice(&v.to_le_bytes());
}

/// A message field: `body` writes the message, whose length is put before it.
fn nested(out: &mut Vec<u8>, field: u32, body: impl FnOnce(&mut Vec<u8>)) {
    nested_in(out, field, 1, body);
}

/// A message field whose length is expected to take `room` bytes as a varint: that many
/// are kept before the body, and the body moves only when its length needs another size.
fn nested_in(out: &mut Vec<u8>, field: u32, room: usize, body: impl FnOnce(&mut Vec<u8>)) {
    key(out, field, LEN);
    let at = out.len();
    out.resize(at + room, 0);
    body(out);
    let len = out.len() - at - room;
    let mut prefix = [0u8; 10];
    let mut n = 0;
    let mut v = len as u64;
    while v >= 0x80 {
        prefix[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    prefix[n] = v as u8;
    n += 1;
    if n == room {
        out[at..at + room].copy_from_slice(&prefix[..n]);
    } else {
        out.splice(at..at + room, prefix[..n].iter().copied());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain way to write a message field: the body first, then its length before it.
    fn nested_plain(out: &mut Vec<u8>, field: u32, body: &[u8]) {
        key(out, field, LEN);
        varint(out, body.len() as u64);
        out.extend_from_slice(body);
    }

    /// `varint_len` is the length `varint` writes, at and just past every size's bound.
    #[test]
    fn varint_len_is_what_varint_writes() {
        for v in [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            2_097_151,
            2_097_152,
            u64::MAX >> 1,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            varint(&mut out, v);
            assert_eq!(varint_len(v), out.len(), "{v}");
        }
    }

    /// A message written with room kept for its length is the message written plainly,
    /// whatever the room, at and just past the lengths each room fits.
    #[test]
    fn room_for_the_length_never_changes_the_bytes() {
        for len in [0, 1, 127, 128, 16_383, 16_384, 2_097_151, 2_097_152] {
            let body = vec![0x5a_u8; len];
            let mut plain = vec![1, 2, 3];
            nested_plain(&mut plain, 2, &body);
            for room in 1..=3 {
                let mut roomy = vec![1, 2, 3];
                nested_in(&mut roomy, 2, room, |out| out.extend_from_slice(&body));
                assert!(roomy == plain, "length {len}, room {room}");
            }
        }
    }

    /// An attribute written with its lengths computed up front is the one written as
    /// nested messages, for strings and integers of every length bound.
    #[test]
    fn an_attribute_is_the_nested_messages() {
        let long = "y".repeat(200);
        let values = [
            Value::Static(""),
            Value::Static("tcp"),
            Value::Str(long.as_str().into()),
            Value::Int(0),
            Value::Int(-1),
            Value::Int(i64::MAX),
        ];
        for value in values {
            let mut direct = Vec::new();
            attribute(&mut direct, "network.transport", &value);
            let mut any = Vec::new();
            match &value {
                Value::Int(i) => {
                    key(&mut any, 3, VARINT);
                    varint(&mut any, *i as u64);
                }
                other => nested_plain(&mut any, 1, other.as_str().as_bytes()),
            }
            let mut kv = Vec::new();
            string(&mut kv, 1, "network.transport");
            nested_plain(&mut kv, 2, &any);
            let mut plain = Vec::new();
            nested_plain(&mut plain, 9, &kv);
            assert_eq!(direct, plain, "{value:?}");
        }
    }
}
