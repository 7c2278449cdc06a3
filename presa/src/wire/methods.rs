//! The names of the 2026-07-28 methods presa serves, and of those among them that may
//! answer `input_required`.

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
