//! The reference twins of the writers in `fast`: each result built in its serde form (a
//! derived or hand-ordered `Serialize`, or a `Value` object) and serialized by
//! serde_json. They are the definition of what the fast writers must write.

use super::{Extras, ServerInfo};
use crate::wire::meta::KEY_SERVER_INFO;
use crate::wire::types::{CachePolicy, CallToolResult, Content, ResourceContents};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A result's `_meta`: its own entries in their order, then serverInfo unless one of
/// them is it. Absent when there is neither.
struct Meta<'a> {
    own: Option<&'a Map<String, Value>>,
    info: Option<&'a ServerInfo>,
}

impl Meta<'_> {
    fn is_absent(&self) -> bool {
        self.own.is_none() && self.info.is_none()
    }
}

impl Serialize for Meta<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        let mut has_info = false;
        for (k, v) in self.own.into_iter().flatten() {
            has_info |= k == KEY_SERVER_INFO;
            map.serialize_entry(k, v)?;
        }
        if let (Some(info), false) = (self.info, has_info) {
            map.serialize_entry(KEY_SERVER_INFO, &*info.raw)?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct CallForm<'a> {
    content: &'a [Content],
    #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none")]
    structured_content: Option<&'a Value>,
    #[serde(rename = "isError")]
    is_error: bool,
    #[serde(rename = "resultType", skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
    #[serde(rename = "_meta", skip_serializing_if = "Meta::is_absent")]
    meta: Meta<'a>,
}

pub(super) fn call(
    extras: Extras<'_>,
    result: &CallToolResult,
    _buffer: String,
) -> Result<String, serde_json::Error> {
    serde_json::to_string(&CallForm {
        content: &result.content,
        structured_content: result.structured_content.as_ref(),
        is_error: result.is_error,
        result_type: extras.modern.then_some("complete"),
        meta: Meta {
            own: result.meta.as_ref(),
            info: extras.info,
        },
    })
}

pub(super) fn text(
    extras: Extras<'_>,
    text: &str,
    buffer: String,
) -> Result<String, serde_json::Error> {
    call(extras, &CallToolResult::text(text), buffer)
}

/// The members a cacheable result ends with: its caching hints, `resultType`, `_meta`.
fn end_cached<M: SerializeMap>(
    map: &mut M,
    extras: Extras<'_>,
    cache: CachePolicy,
) -> Result<(), M::Error> {
    if extras.modern {
        map.serialize_entry("ttlMs", &cache.ttl_ms)?;
        map.serialize_entry("cacheScope", cache.scope.as_str())?;
        map.serialize_entry("resultType", "complete")?;
    }
    let meta = Meta {
        own: None,
        info: extras.info,
    };
    if !meta.is_absent() {
        map.serialize_entry("_meta", &meta)?;
    }
    Ok(())
}

pub(super) fn page<'a>(
    extras: Extras<'_>,
    key: &str,
    items: impl ExactSizeIterator<Item = &'a RawValue> + Clone,
    next_after: Option<&str>,
    cache: CachePolicy,
) -> Result<String, serde_json::Error> {
    let items: Vec<&RawValue> = items.collect();
    let mut out = Vec::new();
    let mut s = serde_json::Serializer::new(&mut out);
    let mut map = s.serialize_map(None)?;
    map.serialize_entry(key, &items)?;
    if let Some(last) = next_after {
        map.serialize_entry("nextCursor", &crate::wire::cursor::encode(key, last))?;
    }
    end_cached(&mut map, extras, cache)?;
    map.end()?;
    String::from_utf8(out).map_err(serde::ser::Error::custom)
}

pub(super) fn read(
    extras: Extras<'_>,
    contents: &[ResourceContents],
    cache: CachePolicy,
) -> Result<String, serde_json::Error> {
    let mut out = Vec::new();
    let mut s = serde_json::Serializer::new(&mut out);
    let mut map = s.serialize_map(None)?;
    map.serialize_entry("contents", contents)?;
    end_cached(&mut map, extras, cache)?;
    map.end()?;
    String::from_utf8(out).map_err(serde::ser::Error::custom)
}

pub(super) fn object(
    extras: Extras<'_>,
    result: Map<String, Value>,
) -> Result<String, serde_json::Error> {
    serde_json::to_string(&Value::Object(super::complete_object(extras, result)))
}
