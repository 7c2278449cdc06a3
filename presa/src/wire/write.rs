//! JSON text primitives for everything presa writes by hand (the envelope, results,
//! request-state bindings): strings, quoted and escaped exactly as serde_json escapes
//! them, integers, and any serializable value.
//!
//! The string escaper is a fast path: it skips eight bytes at a time while none needs
//! escaping, where serde_json's serializer looks at each byte through its formatter. Its
//! twin is serde_json itself, which serves when presa's `fast` feature is off; the tests
//! below hold the two to each other.

/// Where hand-written JSON goes: a `String` or a byte buffer.
pub(crate) trait Text {
    /// Appends text.
    fn put(&mut self, s: &str);
}

impl Text for String {
    fn put(&mut self, s: &str) {
        self.push_str(s);
    }
}

impl Text for Vec<u8> {
    fn put(&mut self, s: &str) {
        self.extend_from_slice(s.as_bytes());
    }
}

/// Appends `s` as a JSON string, quoted and escaped exactly as serde_json writes it:
/// `"` and `\` escaped, the control characters with their short forms (`\b`, `\t`, `\n`,
/// `\f`, `\r`) or `\u00XX` (lower-case hex), everything else as is.
pub(crate) fn push_str(out: &mut impl Text, s: &str) {
    #[cfg(feature = "fast")]
    escape_fast(out, s);
    #[cfg(not(feature = "fast"))]
    escape_reference(out, s);
}

/// [`push_str`]'s twin: serde_json's own escaping.
#[cfg(any(test, not(feature = "fast")))]
fn escape_reference(out: &mut impl Text, s: &str) {
    // Serializing a `str` cannot fail.
    out.put(&serde_json::to_string(s).unwrap_or_default());
}

/// [`push_str`] by hand, a word at a time.
#[cfg(any(test, feature = "fast"))]
fn escape_fast(out: &mut impl Text, s: &str) {
    out.put("\"");
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut at = 0;
    while at < bytes.len() {
        // Eight bytes at a time while none of them needs escaping.
        if let Some(word) = bytes.get(at..at + 8) {
            let mut chunk = [0u8; 8];
            chunk.copy_from_slice(word);
            if !needs_escape(u64::from_le_bytes(chunk)) {
                at += 8;
                continue;
            }
        }
        let b = bytes[at];
        let short = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => {
                at += 1;
                continue;
            }
        };
        // Every byte escaped is ASCII, so `start..at` always falls on char boundaries.
        out.put(&s[start..at]);
        if short.is_empty() {
            let hex = [
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ];
            out.put(std::str::from_utf8(&hex).unwrap_or_default());
        } else {
            out.put(short);
        }
        at += 1;
        start = at;
    }
    out.put(&s[start..]);
    out.put("\"");
}

#[cfg(any(test, feature = "fast"))]
const HEX: &[u8; 16] = b"0123456789abcdef";

#[cfg(any(test, feature = "fast"))]
/// Whether any byte of the word is `"`, `\` or below 0x20 (the classic "has a byte less
/// than n" and "has a zero byte" bit tricks; exact, no false positives or negatives).
fn needs_escape(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    let quote = zero_byte(w ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(w ^ (ONES * u64::from(b'\\')));
    (below_space | quote | backslash) != 0
}

/// Appends an integer in decimal.
pub(crate) fn push_int(out: &mut impl Text, n: i64) {
    out.put(itoa::Buffer::new().format(n));
}

/// Appends compact JSON of anything serializable. On an error (only a `Serialize`
/// that fails can cause one) nothing is appended.
pub(crate) fn push_json(
    out: &mut Vec<u8>,
    value: &(impl serde::Serialize + ?Sized),
) -> Result<(), serde_json::Error> {
    let mark = out.len();
    serde_json::to_writer(&mut *out, value).inspect_err(|_| out.truncate(mark))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(s: &str) -> String {
        let mut bytes = Vec::new();
        escape_fast(&mut bytes, s);
        let mut text = String::new();
        escape_fast(&mut text, s);
        assert_eq!(bytes, text.as_bytes());
        let mut twin = String::new();
        escape_reference(&mut twin, s);
        assert_eq!(text, twin, "{s:?}");
        text
    }

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let mut cases: Vec<String> = vec![
            String::new(),
            "plain".into(),
            "exactly8".into(),
            "a \"quoted\" \\ path".into(),
            "tab\there\nnew line\r\u{8}\u{c}".into(),
            "\u{0}\u{1}\u{1f}\u{7f} del".into(),
            "héllo wörld ✓ 😀 long enough to take the word path".into(),
            "\u{2028}\u{2029} line separators stay as they are".into(),
        ];
        // Every byte value that can start a character, at every offset in a word.
        for c in (0u32..0x300).filter_map(char::from_u32) {
            for pad in 0..9 {
                cases.push(format!("{}{c}{}", "x".repeat(pad), "y".repeat(9 - pad)));
            }
        }
        for s in &cases {
            assert_eq!(
                written(s),
                serde_json::to_string(s).expect("serializes"),
                "{s:?}"
            );
        }
    }

    #[test]
    fn the_word_test_is_exact() {
        for b in 0u8..=255 {
            for lane in 0..8 {
                let mut word = [b'a'; 8];
                word[lane] = b;
                let expected = b < 0x20 || b == b'"' || b == b'\\';
                assert_eq!(
                    needs_escape(u64::from_le_bytes(word)),
                    expected,
                    "{b:#x} in lane {lane}"
                );
            }
        }
    }

    #[test]
    fn integers_and_values() {
        let mut out = Vec::new();
        push_int(&mut out, i64::MIN);
        out.push(b' ');
        push_int(&mut out, 0);
        out.push(b' ');
        push_json(&mut out, &serde_json::json!({"a": [1, 2.5, null]})).expect("serializes");
        assert_eq!(
            String::from_utf8(out).ok().as_deref(),
            Some("-9223372036854775808 0 {\"a\":[1,2.5,null]}")
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(
            crate::wire::arbitrary::cases(2048)
        ))]

        /// The escaper and its twin write the same text for any string.
        #[test]
        fn the_escaper_writes_as_its_twin(s in crate::wire::arbitrary::json_text(), raw in ".*") {
            for s in [&s, &raw] {
                let mut fast = String::new();
                escape_fast(&mut fast, s);
                let mut twin = String::new();
                escape_reference(&mut twin, s);
                proptest::prop_assert_eq!(fast, twin);
            }
        }
    }
}
