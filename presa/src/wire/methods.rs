//! The names of the methods presa serves in each era, and of those that may ask the
//! client for input.

/// The methods of 2026-07-28 that presa serves itself (extensions add their own).
pub(crate) const SERVED: [&str; 10] = [
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "subscriptions/listen",
];

/// The methods that may answer `input_required` (wire section 10).
pub(crate) const MRTR: &[&str] = &["tools/call", "resources/read", "prompts/get"];

/// The notification presa acts on.
pub(crate) const CANCELLED: &str = "notifications/cancelled";

/// The methods presa serves itself to clients of the legacy revisions (2025-11-25 and
/// 2025-06-18), which open with `initialize`.
pub(crate) const LEGACY_SERVED: [&str; 13] = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
];

/// The client's acknowledgement that a legacy session may begin.
pub(crate) const INITIALIZED: &str = "notifications/initialized";

/// A legacy client's notice that its roots changed.
pub(crate) const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
