//! Data that extensions attach to an item, one value per type, in the manner of
//! `http::Extensions`: the core carries it without knowing what it means.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

/// Values attached to a tool (or another item) by extensions, at most one per type.
///
/// The Tasks extension keeps a tool's task policy here; an extension of your own can keep
/// its per-tool settings the same way and read them in
/// [`Extension::intercept_tool_call`](crate::extension::Extension::intercept_tool_call).
///
/// ```
/// #[derive(Debug, PartialEq)]
/// struct Quota(u32);
///
/// let tool = presa::Tool::new("search").with_extension_data(Quota(10));
/// assert_eq!(tool.extension_data().get::<Quota>(), Some(&Quota(10)));
/// assert_eq!(tool.extension_data().get::<String>(), None);
/// ```
#[derive(Clone, Default)]
pub struct ExtensionData {
    /// Empty for most items: made on the first insert.
    values: Option<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl ExtensionData {
    /// Attaches `value`, replacing any earlier value of the same type.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        self.values
            .get_or_insert_default()
            .insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The attached value of type `T`, if any.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.values
            .as_ref()?
            .get(&TypeId::of::<T>())
            .and_then(|v| v.downcast_ref::<T>())
    }

    /// Whether nothing is attached.
    pub fn is_empty(&self) -> bool {
        self.values.as_ref().is_none_or(HashMap::is_empty)
    }
}

impl std::fmt::Debug for ExtensionData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtensionData")
            .field("values", &self.values.as_ref().map_or(0, HashMap::len))
            .finish()
    }
}
