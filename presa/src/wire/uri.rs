//! URI rules every layer shares: what an absolute URI starts with, which characters
//! RFC 3986 lets a URI hold, and percent-escapes (`%XX`). The rules themselves are
//! `presa_rules::uri`, which the macros check at compile time too.

pub(crate) use presa_rules::uri::{is_absolute_uri, percent_decode};

/// Whether `uri` holds only what RFC 3986 allows in a URI (the rule:
/// [`presa_rules::uri::check_uri_characters`]), naming the URI when it does not.
pub(crate) fn uri_characters(uri: &str) -> Result<(), String> {
    presa_rules::uri::check_uri_characters(uri).map_err(|e| format!("the URI {uri:?} has {e}"))
}
