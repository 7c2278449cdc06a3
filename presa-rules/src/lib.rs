//! The rules presa's macros and runtime share, stated once.
//!
//! `presa-macros` checks an attribute against these rules at compile time and reports a
//! break at the token that caused it; `presa` checks values built at run time, and
//! requests, against the same functions. Each rule is a plain function over `&str` or
//! bytes, with an error type that says where the input broke it and why, in words both
//! sides show unchanged.
//!
//! | module | the rule |
//! | --- | --- |
//! | [`tool`] | tool names: 1 to 128 of `A-Z a-z 0-9 _ . -` |
//! | [`header`] | `x-mcp-header` names: RFC 9110 tokens, compared ignoring ASCII case |
//! | [`meta`] | `_meta` keys: an optional prefix of dot-separated labels and `/`, then a name |
//! | [`uri`] | absolute URIs, the characters RFC 3986 lets a URI hold, percent-escapes |
//! | [`template`] | RFC 6570 level 1 URI templates: literals and `{name}` variables |
//! | [`scope`] | OAuth scopes (RFC 6749): printable ASCII without space, `"` or `\` |
//! | `skill` (feature `skill`) | Agent Skills served over MCP (SEP-2640): frontmatter, names, limits, digests, `skill://` URIs |

pub mod header;
pub mod meta;
pub mod scope;
#[cfg(feature = "skill")]
pub mod skill;
pub mod template;
pub mod tool;
pub mod uri;
