//! URI rules every layer shares: what an absolute URI starts with, which characters
//! RFC 3986 lets a URI hold, and percent-escapes (`%XX`).

/// Whether `uri` starts with an RFC 3986 scheme followed by `:`.
pub(crate) fn is_absolute_uri(uri: &str) -> bool {
    match uri.find(':') {
        Some(i) if i > 0 => {
            let scheme = &uri[..i];
            scheme.as_bytes()[0].is_ascii_alphabetic()
                && scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
        }
        _ => false,
    }
}

/// Whether `uri` holds only what RFC 3986 allows in a URI (the spec: custom schemes
/// "MUST be in accordance with RFC3986"; the schema's `format: "uri"`): ASCII letters,
/// digits and `-._~:/?#[]@!$&'()*+,;=`, `%` only as the start of an escape, one `#` at
/// most, and `[` `]` only in the authority (an IP literal). A character past ASCII must
/// be percent-encoded (`caf%C3%A9`, not `café`).
pub(crate) fn uri_characters(uri: &str) -> Result<(), String> {
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
    for (i, &b) in bytes.iter().enumerate() {
        let why = match b {
            b'%' if !escape_at(bytes, i) => Some("a % that starts no escape"),
            b'#' if fragment => Some("a second #"),
            b'#' => {
                fragment = true;
                None
            }
            b'[' | b']' if !authority.as_ref().is_some_and(|a| a.contains(&i)) => {
                Some("[ or ] outside the authority")
            }
            b'%' | b'-' | b'.' | b'_' | b'~' | b':' | b'/' | b'?' | b'[' | b']' | b'@' | b'!'
            | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' => None,
            _ if b.is_ascii_alphanumeric() => None,
            _ if !b.is_ascii() => Some("a character past ASCII"),
            _ => Some("a character no URI holds"),
        };
        if let Some(why) = why {
            return Err(format!(
                "the URI {uri:?} has {why} at byte {i} (RFC 3986: escape it as %XX)"
            ));
        }
    }
    Ok(())
}

/// Decodes `%XX` escapes (two hex digits each); `None` for a malformed escape or bytes
/// that are not UTF-8. Shared by URI templates and the schema validator's `$ref` fragments.
pub(crate) fn percent_decode(s: &str) -> Option<String> {
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

/// Whether the `%` at `i` of `bytes` starts an escape: two hex digits follow it. The one
/// test of a percent-escape for URIs, templates and their variable names.
pub(crate) fn escape_at(bytes: &[u8], i: usize) -> bool {
    matches!(
        (bytes.get(i + 1), bytes.get(i + 2)),
        (Some(h), Some(l)) if h.is_ascii_hexdigit() && l.is_ascii_hexdigit()
    )
}
