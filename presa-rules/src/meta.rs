//! `_meta` keys (wire reference section 2.1): an optional prefix, which is dot-separated
//! labels followed by `/`, then a name.
//!
//! A label is a letter, then letters, digits and hyphens, ending in a letter or digit. A
//! name is empty, or a letter or digit, then letters, digits, `.`, `_` and `-`, ending in
//! a letter or digit. Extension identifiers are keys that must have a prefix.

/// The rule in words, for a help line.
pub const KEY_RULE: &str = "a `_meta` key is an optional prefix of dot-separated labels ending in `/` (`com.example/`), then a name of letters, digits, `.`, `_` and `-` that starts and ends with a letter or digit";

/// Whether `key` follows the `_meta` key syntax.
#[inline]
pub fn is_valid_key(key: &str) -> bool {
    let key = key.as_bytes();
    match key.iter().rposition(|&c| c == b'/') {
        Some(slash) => is_valid_prefix(&key[..slash]) && is_valid_name(&key[slash + 1..]),
        None => is_valid_name(key),
    }
}

/// Whether `key` has a prefix (`something/`), as extension identifiers must. Says nothing
/// of the rest of the syntax: pair it with [`is_valid_key`].
#[inline]
pub fn has_prefix(key: &str) -> bool {
    key.contains('/')
}

/// Whether `prefix` (without its `/`) is dot-separated labels, each a letter, then
/// letters, digits and hyphens, ending in a letter or digit.
#[inline]
pub fn is_valid_prefix(prefix: &[u8]) -> bool {
    let mut at_label_start = true;
    let mut prev = 0u8;
    for &c in prefix {
        if at_label_start {
            if !c.is_ascii_alphabetic() {
                return false;
            }
            at_label_start = false;
        } else if c == b'.' {
            if !prev.is_ascii_alphanumeric() {
                return false;
            }
            at_label_start = true;
        } else if !(c.is_ascii_alphanumeric() || c == b'-') {
            return false;
        }
        prev = c;
    }
    !at_label_start && prev.is_ascii_alphanumeric()
}

/// Whether `name` (after the prefix) is empty, or a letter or digit, then letters,
/// digits, `.`, `_` and `-`, ending in a letter or digit.
#[inline]
pub fn is_valid_name(name: &[u8]) -> bool {
    match (name.first(), name.last()) {
        (None, _) => true,
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && name
                    .iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_syntax() {
        for ok in [
            "progressToken",
            "io.modelcontextprotocol/protocolVersion",
            "com.example.mcp/x",
            "a/",
            "traceparent",
            "",
            "a-b.c/x_y.z-1",
            "a1.b-2.c/x",
            "x9/1",
            "a",
            "1",
            "a/b",
        ] {
            assert!(is_valid_key(ok), "{ok}");
        }
        for bad in [
            "/x", "1a/x", "a-/x", "a..b/x", "-x", "x-", "a/b/c", "a b", ".a/x", "a./x", "a.1/x",
            "a_b/x", "é/x", "a/é", "a/x.", "a/_x", "_", ".", "a/-",
        ] {
            assert!(!is_valid_key(bad), "{bad}");
        }
    }

    /// Each end of a label and a name, at the character allowed and the one just past.
    #[test]
    fn label_and_name_ends() {
        assert!(is_valid_prefix(b"a"));
        assert!(is_valid_prefix(b"a1"));
        assert!(!is_valid_prefix(b"1"));
        assert!(!is_valid_prefix(b""));
        assert!(is_valid_prefix(b"a-1"));
        assert!(!is_valid_prefix(b"a-"));
        assert!(is_valid_prefix(b"a.b"));
        assert!(!is_valid_prefix(b"a."));
        assert!(is_valid_name(b"1"));
        assert!(is_valid_name(b"a.b_c-d"));
        assert!(!is_valid_name(b"a_"));
        assert!(!is_valid_name(b"_a"));
    }

    #[test]
    fn prefixes() {
        assert!(has_prefix("com.example/x"));
        assert!(has_prefix("a/"));
        assert!(!has_prefix("progressToken"));
    }
}
