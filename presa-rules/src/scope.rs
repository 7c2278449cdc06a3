//! OAuth scopes (RFC 6749 section 3.3): a scope token is one or more printable ASCII
//! characters other than space, `"` and `\`.

/// Whether `scope` is a scope token.
pub fn is_token(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

/// Why a scope is not a token, in words (for both a compile error and a build error).
pub fn check(scope: &str) -> Result<(), String> {
    if is_token(scope) {
        return Ok(());
    }
    Err(format!(
        "{scope:?} is not an OAuth scope: one or more printable ASCII characters other than space, `\"` and `\\`"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_tokens_are_printable_ascii_without_space_quote_or_backslash() {
        for ok in ["notes:read", "a", "repo/admin", "x!#[]~"] {
            assert!(is_token(ok), "{ok}");
        }
        for bad in ["", "a b", "a\"b", "a\\b", "é", "a\tb"] {
            assert!(!is_token(bad), "{bad:?}");
            assert!(check(bad).is_err());
        }
    }
}
