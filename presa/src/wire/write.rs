//! Writing JSON text by hand on the hot path: strings, with exactly serde_json's
//! escaping, and integers. serde_json's serializer escapes a string a byte at a time
//! through its formatter; responses, request-state bindings and error bodies written
//! for every request are cheaper written here, and byte-for-byte the same.

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

const HEX: &[u8; 16] = b"0123456789abcdef";

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

/// Appends compact JSON of anything serializable to text, written straight into `out`.
/// On an error (only a `Serialize` that fails can cause one) nothing is appended.
pub(crate) fn push_json_text(
    out: &mut String,
    value: &(impl serde::Serialize + ?Sized),
) -> Result<(), serde_json::Error> {
    let mark = out.len();
    serde_json::to_writer(TextWriter(&mut *out), value).inspect_err(|_| out.truncate(mark))
}

/// serde_json's output into a `String`. serde_json writes whole characters in every
/// call (punctuation, numbers, and the text of strings cut only at the ASCII characters
/// it escapes), so each chunk is checked as UTF-8 on its own, with no pass over the
/// whole at the end; a chunk that is not (never, with serde_json) is an error, not a
/// panic.
struct TextWriter<'a>(&'a mut String);

impl std::io::Write for TextWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = std::str::from_utf8(buf).map_err(std::io::Error::other)?;
        self.0.push_str(text);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(s: &str) -> String {
        let mut bytes = Vec::new();
        push_str(&mut bytes, s);
        let mut text = String::new();
        push_str(&mut text, s);
        assert_eq!(bytes, text.as_bytes());
        text
    }

    /// Any value is written into text exactly as serde_json writes it into a string:
    /// escapes, multibyte characters (also next to escapes), numbers, nesting; and a
    /// value that fails to serialize appends nothing.
    #[test]
    fn values_are_written_into_text_as_serde_json_writes_them() {
        let values = [
            serde_json::json!({"a": [1, -2.5, 1e300, null, true], "é\n": "x\u{1F600}\"y\\"}),
            serde_json::json!("\u{0}\u{1f}é😀\t"),
            serde_json::json!({"deep": {"deeper": ["\u{7f}", "ü\r", ""]}}),
            serde_json::json!(u64::MAX),
        ];
        for value in values {
            let mut out = String::from("prefix:");
            push_json_text(&mut out, &value).expect("serializes");
            let expected = serde_json::to_string(&value).expect("serializes");
            assert_eq!(out, format!("prefix:{expected}"));
        }
        struct Fails;
        impl serde::Serialize for Fails {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::{Error, SerializeMap};
                let mut map = s.serialize_map(None)?;
                map.serialize_entry("written", "first")?;
                Err(S::Error::custom("then fails"))
            }
        }
        let mut out = String::from("kept");
        assert!(push_json_text(&mut out, &Fails).is_err());
        assert_eq!(out, "kept", "nothing of a failed value is left");
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
        let mut text = String::from("x ");
        push_json_text(&mut text, &serde_json::json!({"b": "\u{1}é"})).expect("serializes");
        assert_eq!(text, "x {\"b\":\"\\u0001é\"}");
    }
}
