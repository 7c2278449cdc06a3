//! `x-mcp-header` names: each is an RFC 9110 token (the name after `Mcp-Param-`), and
//! two names of one tool may not differ only in ASCII case (HTTP header names do not).

/// The characters a token holds besides ASCII letters and digits (RFC 9110 `tchar`).
pub const TOKEN_PUNCTUATION: &str = "!#$%&'*+-.^_`|~";

/// The rule in words, for a help line.
pub const NAME_RULE: &str = "an `x-mcp-header` name is a non-empty HTTP token: letters, digits and !#$%&'*+-.^_`|~, no spaces or colons";

/// Whether `name` is a non-empty RFC 9110 token.
#[inline]
pub fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || TOKEN_PUNCTUATION.as_bytes().contains(&b))
}

/// Whether two header names are the same header (compared ignoring ASCII case).
#[inline]
pub fn same_name(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        assert!(is_token("Region"));
        assert!(is_token("a"));
        assert!(is_token("x-Trace_1.2"));
        for c in TOKEN_PUNCTUATION.chars() {
            assert!(is_token(&format!("a{c}b")), "{c}");
        }
        for bad in [
            "",
            "has space",
            "a:b",
            "a\"b",
            "a(b",
            "a,b",
            "a/b",
            "é",
            "a\tb",
            "a@b",
        ] {
            assert!(!is_token(bad), "{bad:?}");
        }
        // Every ASCII byte: exactly letters, digits and the punctuation above.
        for b in 0u8..128 {
            let expected = b.is_ascii_alphanumeric() || TOKEN_PUNCTUATION.as_bytes().contains(&b);
            assert_eq!(is_token(&char::from(b).to_string()), expected, "{b}");
        }
    }

    #[test]
    fn names_compare_ignoring_ascii_case() {
        assert!(same_name("Region", "region"));
        assert!(same_name("X-A", "x-a"));
        assert!(!same_name("Region", "Regions"));
    }
}
