//! URIs: what an absolute URI starts with, which characters RFC 3986 lets a URI hold,
//! percent-escapes (`%XX`), and the schemes an icon may use.

use std::fmt;

/// Whether the `%` at `i` of `bytes` starts an escape: two hex digits follow it. The one
/// test of a percent-escape for URIs, templates and their variable names.
#[inline]
pub fn escape_at(bytes: &[u8], i: usize) -> bool {
    matches!(
        (bytes.get(i + 1), bytes.get(i + 2)),
        (Some(h), Some(l)) if h.is_ascii_hexdigit() && l.is_ascii_hexdigit()
    )
}

/// Decodes `%XX` escapes (two hex digits each); `None` for a malformed escape or bytes
/// that are not UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_owned());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            // escape_at first: from_str_radix alone would take a sign ("%+1").
            if !escape_at(bytes, i) {
                return None;
            }
            out.push(u8::from_str_radix(s.get(i + 1..i + 3)?, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Whether `uri` starts with an RFC 3986 scheme followed by `:`: a letter, then letters,
/// digits, `+`, `-` and `.`.
pub fn is_absolute_uri(uri: &str) -> bool {
    match uri.find(':') {
        Some(i) if i > 0 => {
            let scheme = uri.as_bytes();
            scheme[0].is_ascii_alphabetic()
                && scheme[..i]
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
        }
        _ => false,
    }
}

/// Whether an icon's `src` uses a scheme icons may use: `https:` or `data:` (any case).
pub fn is_icon_scheme(src: &str) -> bool {
    let starts = |prefix: &str| {
        src.get(..prefix.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(prefix))
    };
    starts("https://") || starts("data:")
}

/// What a URI holds that RFC 3986 does not allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UriProblem {
    /// A `%` not followed by two hex digits.
    StrayPercent,
    /// A `#` after the one that starts the fragment.
    SecondHash,
    /// A `[` or `]` outside the authority (where they enclose an IP literal).
    BracketOutsideAuthority,
    /// A character past ASCII (it must be percent-encoded).
    PastAscii,
    /// An ASCII character no URI holds (a space, a control, `"`, `<`, …).
    NotAllowed,
}

impl fmt::Display for UriProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UriProblem::StrayPercent => "a `%` that starts no escape",
            UriProblem::SecondHash => "a second `#`",
            UriProblem::BracketOutsideAuthority => "`[` or `]` outside the authority",
            UriProblem::PastAscii => "a character past ASCII",
            UriProblem::NotAllowed => "a character no URI holds",
        })
    }
}

/// Where a URI breaks RFC 3986's character rules, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UriError {
    /// The byte offset of the offending character.
    pub at: usize,
    /// What is wrong there.
    pub problem: UriProblem,
}

impl fmt::Display for UriError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at byte {} (RFC 3986: escape it as %XX)",
            self.problem, self.at
        )
    }
}

impl std::error::Error for UriError {}

/// Checks that `uri` holds only what RFC 3986 allows in a URI (the spec: custom schemes
/// "MUST be in accordance with RFC3986"; the schema's `format: "uri"`): ASCII letters,
/// digits and `-._~:/?#[]@!$&'()*+,;=`, `%` only as the start of an escape, one `#` at
/// most, and `[` `]` only in the authority (an IP literal). A character past ASCII must
/// be percent-encoded (`caf%C3%A9`, not `café`). The first offence is reported.
pub fn check_uri_characters(uri: &str) -> Result<(), UriError> {
    let bytes = uri.as_bytes();
    // The authority: after "scheme://", up to the next '/', '?' or '#'.
    let authority = uri.find("://").map(|at| {
        let start = at + 3;
        let len = uri[start..]
            .find(['/', '?', '#'])
            .unwrap_or(uri.len() - start);
        start..start + len
    });
    let mut fragment = false;
    for (at, &b) in bytes.iter().enumerate() {
        let problem = match b {
            b'%' if !escape_at(bytes, at) => Some(UriProblem::StrayPercent),
            b'#' if fragment => Some(UriProblem::SecondHash),
            b'#' => {
                fragment = true;
                None
            }
            b'[' | b']' if !authority.as_ref().is_some_and(|a| a.contains(&at)) => {
                Some(UriProblem::BracketOutsideAuthority)
            }
            b'%' | b'-' | b'.' | b'_' | b'~' | b':' | b'/' | b'?' | b'[' | b']' | b'@' | b'!'
            | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' => None,
            _ if b.is_ascii_alphanumeric() => None,
            _ if !b.is_ascii() => Some(UriProblem::PastAscii),
            _ => Some(UriProblem::NotAllowed),
        };
        if let Some(problem) = problem {
            return Err(UriError { at, problem });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_two_hex_digits() {
        assert!(escape_at(b"%20", 0));
        assert!(escape_at(b"a%aF", 1));
        assert!(!escape_at(b"%2", 0), "one digit, at the end");
        assert!(!escape_at(b"%", 0));
        assert!(!escape_at(b"%2g", 0));
        assert!(!escape_at(b"%+1", 0));
        assert_eq!(percent_decode("a%2Fb%7e").as_deref(), Some("a/b~"));
        assert_eq!(percent_decode("%C3%A9").as_deref(), Some("é"));
        assert_eq!(percent_decode("plain").as_deref(), Some("plain"));
        for bad in ["%+1", "%-1", "%1", "%", "%zz", "%C3", "a%2"] {
            assert_eq!(percent_decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn absolute_uris() {
        for ok in ["a:", "notes://x", "x+y-z.w:1", "A1:b"] {
            assert!(is_absolute_uri(ok), "{ok}");
        }
        for bad in ["", ":x", "1a:b", "rel/x", "a b:c", "{s}://x", "é:x"] {
            assert!(!is_absolute_uri(bad), "{bad}");
        }
    }

    #[test]
    fn icon_schemes() {
        for ok in [
            "https://x/i.png",
            "HTTPS://x",
            "data:image/png;base64,AA",
            "Data:x",
        ] {
            assert!(is_icon_scheme(ok), "{ok}");
        }
        for bad in ["http://x", "https:/x", "ftp://x", "", "data", "é"] {
            assert!(!is_icon_scheme(bad), "{bad}");
        }
    }

    #[test]
    fn uri_characters() {
        for ok in [
            "notes://a/b?c=d#e",
            "x://[::1]:80/p",
            "x://a/caf%C3%A9",
            "x:-._~:/?@!$&'()*+,;=",
        ] {
            assert_eq!(check_uri_characters(ok), Ok(()), "{ok}");
        }
        for (bad, at, problem) in [
            ("x://a/%zz", 6, UriProblem::StrayPercent),
            ("x://a/%2", 6, UriProblem::StrayPercent),
            ("x://a#b#c", 7, UriProblem::SecondHash),
            ("x://a/[b]", 6, UriProblem::BracketOutsideAuthority),
            ("x:[b]", 2, UriProblem::BracketOutsideAuthority),
            ("x://a/café", 9, UriProblem::PastAscii),
            ("x://a b", 5, UriProblem::NotAllowed),
            ("x://a/{b}", 6, UriProblem::NotAllowed),
            ("x://a\"", 5, UriProblem::NotAllowed),
        ] {
            assert_eq!(
                check_uri_characters(bad),
                Err(UriError { at, problem }),
                "{bad}"
            );
        }
        assert_eq!(
            UriError {
                at: 6,
                problem: UriProblem::StrayPercent
            }
            .to_string(),
            "a `%` that starts no escape at byte 6 (RFC 3986: escape it as %XX)"
        );
    }
}
