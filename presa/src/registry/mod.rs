//! The registry: tools, resources, resource templates, prompts and completion providers as
//! data, and the catalog snapshot the pipeline serves from.
//!
//! Every definition is checked and compiled once when it is registered (schemas compiled,
//! listing JSON serialized, header tables built); the catalog keeps each kind sorted by its
//! key so listings are stable and pages are slices. A change to the catalog builds a new
//! snapshot; requests in flight keep the one they started with.

pub mod completion;
mod data;
#[doc(hidden)]
pub mod linked;
pub mod prompt;
pub mod resource;
pub mod tool;
pub use crate::schema::uri_template;
pub use data::ExtensionData;

use crate::error::Error;
use crate::wire::cursor;
use crate::wire::types::Icon;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed, sendable future, as handlers return.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Longest pagination cursor presa reads, in bytes, unless the catalog holds a key (a
/// resource URI, a template, a prompt name) so long that a cursor presa issues after it
/// is longer: then the bound is that cursor's length, so every page stays reachable.
pub const MAX_CURSOR_BYTES: usize = 2048;

pub(crate) fn check_icons(icons: &[Icon]) -> Result<(), String> {
    icons.iter().try_for_each(Icon::check)
}

pub(crate) fn check_meta(meta: Option<&Map<String, Value>>) -> Result<(), String> {
    match meta {
        Some(m) => match m.keys().find(|k| !crate::wire::meta::is_valid_meta_key(k)) {
            Some(k) => Err(format!("_meta key {k:?} does not follow the key syntax")),
            None => Ok(()),
        },
        None => Ok(()),
    }
}

/// Something the catalog lists: a sort key and prepared listing JSON.
pub(crate) trait Listed {
    fn key(&self) -> &str;
    fn listing(&self) -> &RawValue;
    fn location(&self) -> Option<&'static str>;
}

impl Listed for tool::ToolEntry {
    fn key(&self) -> &str {
        &self.tool.name
    }
    fn listing(&self) -> &RawValue {
        &self.listing
    }
    fn location(&self) -> Option<&'static str> {
        self.tool.location
    }
}

impl Listed for prompt::PromptEntry {
    fn key(&self) -> &str {
        &self.prompt.name
    }
    fn listing(&self) -> &RawValue {
        &self.listing
    }
    fn location(&self) -> Option<&'static str> {
        self.prompt.location
    }
}

impl Listed for resource::ResourceEntry {
    fn key(&self) -> &str {
        &self.resource.uri
    }
    fn listing(&self) -> &RawValue {
        &self.listing
    }
    fn location(&self) -> Option<&'static str> {
        self.resource.location
    }
}

impl Listed for resource::TemplateEntry {
    fn key(&self) -> &str {
        &self.template.template
    }
    fn listing(&self) -> &RawValue {
        &self.listing
    }
    fn location(&self) -> Option<&'static str> {
        self.template.location
    }
}

/// One kind of item, sorted by key, with O(1) lookup.
pub(crate) struct Listing<T> {
    sorted: Vec<Arc<T>>,
    /// Hashed with aHash (randomly keyed, like std's, so a client cannot choose
    /// colliding names): every tools/call looks its tool up here, and aHash is much
    /// cheaper than SipHash on short keys.
    by_key: HashMap<String, Arc<T>, ahash::RandomState>,
    /// The longest key this listing has ever held, in bytes: it bounds the cursors presa
    /// may have issued for it (never lowered, so a cursor issued after a key since
    /// removed is still read).
    longest_key: usize,
}

impl<T> Clone for Listing<T> {
    fn clone(&self) -> Self {
        Listing {
            sorted: self.sorted.clone(),
            by_key: self.by_key.clone(),
            longest_key: self.longest_key,
        }
    }
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Listing {
            sorted: Vec::new(),
            by_key: HashMap::default(),
            longest_key: 0,
        }
    }
}

/// A page of a listing.
pub(crate) struct Page<'a, T> {
    pub(crate) items: &'a [Arc<T>],
    /// The key of the page's last item when more follow: the next page's cursor names
    /// it (`wire::cursor`).
    pub(crate) next_after: Option<&'a str>,
}

impl<T: Listed> Listing<T> {
    /// Inserts an entry; a duplicate key is refused with both locations named.
    pub(crate) fn insert(&mut self, entry: T, what: &str) -> Result<(), String> {
        if let Some(existing) = self.by_key.get(entry.key()) {
            let at = |l: Option<&'static str>| l.map(|l| format!(" at {l}")).unwrap_or_default();
            return Err(format!(
                "{what} {:?} is registered twice (first{}, again{})",
                entry.key(),
                at(existing.location()),
                at(entry.location())
            ));
        }
        let entry = Arc::new(entry);
        self.longest_key = self.longest_key.max(entry.key().len());
        let pos = self.sorted.partition_point(|e| e.key() < entry.key());
        self.sorted.insert(pos, Arc::clone(&entry));
        self.by_key.insert(entry.key().to_owned(), entry);
        Ok(())
    }

    /// Removes an entry by key.
    pub(crate) fn remove(&mut self, key: &str) -> bool {
        if self.by_key.remove(key).is_none() {
            return false;
        }
        self.sorted.retain(|e| e.key() != key);
        true
    }

    pub(crate) fn get(&self, key: &str) -> Option<&Arc<T>> {
        self.by_key.get(key)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<T>> {
        self.sorted.iter()
    }

    /// One page after `cursor`. Cursors are keyset cursors: they name the last key
    /// served, so they stay valid when unrelated items are added or removed.
    pub(crate) fn page(
        &self,
        kind: &str,
        cursor: Option<&str>,
        size: usize,
    ) -> Result<Page<'_, T>, Error> {
        let start = match cursor {
            None | Some("") => 0,
            Some(c) => {
                // Past the usual bound, a cursor is still one of ours when the catalog
                // has held a key that long.
                let limit = MAX_CURSOR_BYTES.max(cursor::len(kind, self.longest_key));
                let after = cursor::decode(kind, c, limit)
                    .ok_or_else(|| Error::invalid_params("Invalid pagination cursor"))?;
                self.sorted.partition_point(|e| e.key() <= after.as_str())
            }
        };
        let end = start.saturating_add(size.max(1)).min(self.sorted.len());
        let items = &self.sorted[start..end];
        let next_after = if end < self.sorted.len() {
            items.last().map(|last| last.key())
        } else {
            None
        };
        Ok(Page { items, next_after })
    }
}

/// Everything the server offers at one moment.
#[derive(Clone, Default)]
pub(crate) struct Catalog {
    pub(crate) tools: Listing<tool::ToolEntry>,
    pub(crate) prompts: Listing<prompt::PromptEntry>,
    pub(crate) resources: Listing<resource::ResourceEntry>,
    pub(crate) templates: Listing<resource::TemplateEntry>,
}

impl Catalog {
    /// Whether any prompt or template has a completion provider.
    pub(crate) fn has_completions(&self) -> bool {
        self.prompts
            .iter()
            .any(|p| !p.prompt.completions.is_empty())
            || self
                .templates
                .iter()
                .any(|t| !t.template.completions.is_empty())
    }
}
