//! Pagination cursors (wire section 6): opaque to clients, and presa's own format: the
//! format's version, the listing's kind and the last key served, one per line, as
//! unpadded base64url (RFC 4648, section 5). They are keyset cursors, so they stay valid
//! when unrelated items are added or removed, and need no escaping inside a JSON string.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

const VERSION: &str = "presa1";

/// Raw cursors up to this many bytes are put together on the stack.
const ON_STACK: usize = 96;

/// Appends the cursor of the page after `last_key` of listing `kind` to `out` (the
/// answer being written), with no allocation of its own for the usual short key.
pub(crate) fn push(out: &mut String, kind: &str, last_key: &str) {
    let parts = [VERSION, kind, last_key];
    let mut raw = [0u8; ON_STACK];
    let mut encoded = [0u8; ON_STACK.div_ceil(3) * 4];
    let len = raw_len(kind, last_key.len());
    let Some(buf) = raw.get_mut(..len) else {
        URL_SAFE_NO_PAD.encode_string(parts.join("\n"), out);
        return;
    };
    let mut at = 0;
    for (i, part) in parts.into_iter().enumerate() {
        if i > 0 {
            buf[at] = b'\n';
            at += 1;
        }
        buf[at..at + part.len()].copy_from_slice(part.as_bytes());
        at += part.len();
    }
    // The encoded form of at most ON_STACK bytes fits `encoded`, and is ASCII.
    match URL_SAFE_NO_PAD.encode_slice(&*buf, &mut encoded) {
        Ok(n) => out.push_str(std::str::from_utf8(&encoded[..n]).unwrap_or_default()),
        Err(_) => URL_SAFE_NO_PAD.encode_string(&*buf, out),
    }
}

/// The cursor of the page after `last_key`, as its own string (for the result writers'
/// reference twin).
#[cfg(any(test, not(feature = "fast")))]
pub(crate) fn encode(kind: &str, last_key: &str) -> String {
    let mut out = String::with_capacity(len(kind, last_key.len()));
    push(&mut out, kind, last_key);
    out
}

/// The last key a cursor of listing `kind` names, or `None` when it is not one of
/// presa's cursors for that listing (or is longer than `limit` bytes).
pub(crate) fn decode(kind: &str, cursor: &str, limit: usize) -> Option<String> {
    if cursor.len() > limit {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let mut parts = text.splitn(3, '\n');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(VERSION), Some(k), Some(last)) if k == kind => Some(last.to_owned()),
        _ => None,
    }
}

/// The length of a cursor's raw bytes (before base64) for a key of `key_len` bytes.
fn raw_len(kind: &str, key_len: usize) -> usize {
    VERSION.len() + kind.len() + key_len + 2
}

/// The length of the cursor [`push`] writes for a key of `key_len` bytes.
pub(crate) fn len(kind: &str, key_len: usize) -> usize {
    (raw_len(kind, key_len) * 4).div_ceil(3)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cursors are what the format says, for short keys and long ones, at every
    /// remainder of three and around the stack buffer's end; appended after what the
    /// answer holds; read back by `decode`; and `len` is their length.
    #[test]
    fn cursors_are_the_format_and_read_back() {
        for kind in ["tools", "resources", "resourceTemplates", "prompts"] {
            for n in (0..40).chain(70..100).chain([500]) {
                for unit in ["k", "é"] {
                    let key = unit.repeat(n);
                    let cursor = encode(kind, &key);
                    let raw = URL_SAFE_NO_PAD.decode(&cursor).ok();
                    assert_eq!(raw, Some(format!("presa1\n{kind}\n{key}").into_bytes()));
                    assert_eq!(len(kind, key.len()), cursor.len());
                    let mut out = "x".to_owned();
                    push(&mut out, kind, &key);
                    assert_eq!(out, format!("x{cursor}"));
                    assert_eq!(
                        decode(kind, &cursor, cursor.len()).as_deref(),
                        Some(key.as_str())
                    );
                    assert_eq!(
                        decode(kind, &cursor, cursor.len() - 1),
                        None,
                        "past the limit"
                    );
                    assert_eq!(
                        decode("other", &cursor, cursor.len()),
                        None,
                        "another listing's"
                    );
                }
            }
        }
        for bad in ["", "!!", "cHJlc2Ex", "cHJlc2EyCnRvb2xzCmE"] {
            assert_eq!(decode("tools", bad, 100), None, "{bad}");
        }
    }
}
