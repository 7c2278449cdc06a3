//! Results as they go on the wire. Every result presa sends is written here, by one of
//! five writers: a `tools/call` result ([`Shaper::call`], [`Shaper::text`]), one page of a
//! listing ([`Shaper::page`]), `resources/read` contents ([`Shaper::read`]), and any other
//! result given as a JSON object ([`Shaper::object`], [`Shaper::cached_object`]:
//! discovery, completion, prompts, `input_required`, an extension's answer). Each adds
//! `resultType` (`complete` unless the object names another) and the server's
//! `_meta.io.modelcontextprotocol/serverInfo` (when configured, after the result's own
//! `_meta` entries, and never over one the result set itself); the cacheable ones add
//! their `ttlMs` and `cacheScope`.
//!
//! Each writer exists twice. The one that serves (`fast`) writes the answer's text
//! straight from the typed result, with no `Value` tree in between; its reference twin
//! (`reference`) builds the serde form and serializes it. The two write the same bytes
//! (the same JSON value, for objects, whose member order serde's map decides), which the
//! differential tests below hold them to. Building presa without its `fast` feature serves
//! with the twins.

#[cfg(any(test, feature = "fast"))]
mod fast;
#[cfg(any(test, not(feature = "fast")))]
mod reference;

#[cfg(feature = "fast")]
use fast as imp;
#[cfg(not(feature = "fast"))]
use reference as imp;

use crate::error::Error;
use crate::wire::meta::KEY_SERVER_INFO;
use crate::wire::types::{CachePolicy, CallToolResult, Implementation, ResourceContents};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::sync::Arc;

/// Writes results for one server: it holds the server's identity, for the serverInfo
/// `_meta` every result carries unless the server was configured not to send it. Cheap
/// to clone.
#[derive(Clone)]
pub(crate) struct Shaper {
    /// `None` when results carry no serverInfo.
    info: Option<Arc<ServerInfo>>,
    /// Whether results take the 2026-07-28 members (`resultType`, serverInfo, caching
    /// hints); a legacy session's results take none of them.
    modern: bool,
}

/// What a writer adds to a result besides its own members.
#[derive(Clone, Copy)]
struct Extras<'a> {
    info: Option<&'a ServerInfo>,
    modern: bool,
}

/// The server's identity, as a value and as the text written into every result.
struct ServerInfo {
    value: Value,
    raw: Box<RawValue>,
}

impl Shaper {
    /// A shaper for a server identifying itself as `info`; `in_results` says whether
    /// results carry it.
    pub(crate) fn new(info: &Implementation, in_results: bool) -> Result<Shaper, String> {
        if !in_results {
            return Ok(Shaper {
                info: None,
                modern: true,
            });
        }
        let value = serde_json::to_value(info).map_err(|e| e.to_string())?;
        let raw = serde_json::value::to_raw_value(&value).map_err(|e| e.to_string())?;
        Ok(Shaper {
            info: Some(Arc::new(ServerInfo { value, raw })),
            modern: true,
        })
    }

    /// A shaper for the results of a legacy session (2025-11-25, 2025-06-18): results as
    /// those revisions define them, without `resultType`, serverInfo or caching hints.
    pub(crate) fn legacy() -> Shaper {
        Shaper {
            info: None,
            modern: false,
        }
    }

    /// Whether this shapes results of 2026-07-28.
    pub(crate) fn is_modern(&self) -> bool {
        self.modern
    }

    /// What the writers add.
    fn info(&self) -> Extras<'_> {
        Extras {
            info: self.info.as_deref(),
            modern: self.modern,
        }
    }

    /// A `tools/call` result. `buffer` is reused for the answer (its contents dropped).
    pub(crate) fn call(&self, result: &CallToolResult, buffer: String) -> Result<String, Error> {
        imp::call(self.info(), result, buffer).map_err(failed("a tools/call result"))
    }

    /// A successful `tools/call` result of one plain text block (a handler's `String`),
    /// as [`Shaper::call`] writes `CallToolResult::text(text)`.
    pub(crate) fn text(&self, text: &str, buffer: String) -> Result<String, Error> {
        imp::text(self.info(), text, buffer).map_err(failed("a tools/call result"))
    }

    /// One page of a listing: the prepared JSON of each item under `key`, the cursor of
    /// the next page when more follow (naming `next_after`, the page's last key), and the
    /// caching hints.
    pub(crate) fn page<'a>(
        &self,
        key: &str,
        items: impl ExactSizeIterator<Item = &'a RawValue> + Clone,
        next_after: Option<&str>,
        cache: CachePolicy,
    ) -> Result<String, Error> {
        imp::page(self.info(), key, items, next_after, cache).map_err(failed("a listing"))
    }

    /// A `resources/read` result.
    pub(crate) fn read(
        &self,
        contents: &[ResourceContents],
        cache: CachePolicy,
    ) -> Result<String, Error> {
        imp::read(self.info(), contents, cache).map_err(failed("a resources/read result"))
    }

    /// Any other result, given as an object.
    pub(crate) fn object(&self, result: Map<String, Value>) -> Result<String, Error> {
        imp::object(self.info(), result).map_err(failed("a result"))
    }

    /// Any other result, given as an object, with caching hints (`server/discover`).
    pub(crate) fn cached_object(
        &self,
        mut result: Map<String, Value>,
        cache: CachePolicy,
    ) -> Result<String, Error> {
        if self.modern {
            result.insert("ttlMs".into(), Value::from(cache.ttl_ms));
            result.insert("cacheScope".into(), Value::from(cache.scope.as_str()));
        }
        self.object(result)
    }

    /// The shaped result as an object, for a result kept to be sent later (a task's):
    /// `resultType` and serverInfo added as [`Shaper::object`] writes them.
    pub(crate) fn complete_map(&self, result: Map<String, Value>) -> Map<String, Value> {
        complete_object(self.info(), result)
    }
}

/// An object result with the members every result carries: in 2026-07-28, `resultType`
/// (`complete` unless it names another), and serverInfo in its `_meta` (unless it set its
/// own, or its `_meta` is not an object); in a legacy session, none.
fn complete_object(extras: Extras<'_>, mut result: Map<String, Value>) -> Map<String, Value> {
    if !extras.modern {
        return result;
    }
    if !result.contains_key("resultType") {
        result.insert("resultType".into(), Value::from("complete"));
    }
    if let Some(info) = extras.info
        && let Value::Object(meta) = result
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()))
    {
        meta.entry(KEY_SERVER_INFO)
            .or_insert_with(|| info.value.clone());
    }
    result
}

/// The -32603 for a result that would not serialize (only a user's `Serialize` that fails
/// can make one), logged.
fn failed(what: &'static str) -> impl Fn(serde_json::Error) -> Error {
    move |e| {
        tracing::error!("{what} failed to serialize: {e}");
        Error::internal()
    }
}

#[cfg(test)]
mod tests;
