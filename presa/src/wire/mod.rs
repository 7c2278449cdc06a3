//! The wire model of MCP 2026-07-28: the JSON-RPC envelope, request `_meta`, and the typed
//! shapes of results, content and capabilities.

/// The `visit_seq` and scalar `visit_*` methods of a visitor that reads an object: an
/// array answers `$array`, anything else `$other`. An array's elements are still parsed
/// (read through and dropped), so every input is held to the checks of a parse into a
/// `Value` (through [`Any`]). With `@except_str`, `visit_str` is left to the visitor.
macro_rules! non_objects_are {
    ($ty:ty, $other:expr) => {
        non_objects_are!($ty, $other, $other);
    };
    ($ty:ty, $array:expr, $other:expr) => {
        non_objects_are!(@except_str $ty, $array, $other);
        fn visit_str<E>(self, _: &str) -> Result<$ty, E> {
            Ok($other)
        }
    };
    (@except_str $ty:ty, $array:expr, $other:expr) => {
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<$ty, A::Error> {
            while seq.next_element::<$crate::wire::Any>()?.is_some() {}
            Ok($array)
        }
        fn visit_bool<E>(self, _: bool) -> Result<$ty, E> {
            Ok($other)
        }
        fn visit_i64<E>(self, _: i64) -> Result<$ty, E> {
            Ok($other)
        }
        fn visit_u64<E>(self, _: u64) -> Result<$ty, E> {
            Ok($other)
        }
        fn visit_f64<E>(self, _: f64) -> Result<$ty, E> {
            Ok($other)
        }
        fn visit_unit<E>(self) -> Result<$ty, E> {
            Ok($other)
        }
    };
}

/// An object key as read: borrowed from the input when it has no escapes. (serde's own
/// `Cow<str>` always allocates, so every key of every envelope cost an allocation.)
pub(crate) struct Key<'de>(pub(crate) std::borrow::Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v)))
            }
        }
        d.deserialize_str(Visit)
    }
}

/// A member read as text when it is a string (borrowed from the input when it has no
/// escapes), or `None` when it is anything else; then it is still read through, held to
/// the checks of a parse into a `Value`.
pub(crate) struct Text<'de>(pub(crate) Option<std::borrow::Cow<'de, str>>);

impl<'de> serde::Deserialize<'de> for Text<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Some(std::borrow::Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Some(std::borrow::Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Some(std::borrow::Cow::Owned(v))))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Text<'de>, A::Error> {
                let mut first = true;
                while let Some(Key(key)) = map.next_key()? {
                    if number_in_disguise(&mut map, &mut first, &key)?.is_some() {
                        return Ok(Text(None));
                    }
                    map.next_value::<Any>()?;
                }
                Ok(Text(None))
            }
            non_objects_are!(@except_str Text<'de>, Text(None), Text(None));
        }
        d.deserialize_any(Visit)
    }
}

/// Any JSON value, read through and dropped, held to the checks of a parse into a
/// `Value` (unlike `serde::de::IgnoredAny`, which serde_json skips without checking
/// number ranges).
pub(crate) struct Any;

impl<'de> serde::Deserialize<'de> for Any {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Any;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Any, A::Error> {
                let mut first = true;
                while let Some(Key(key)) = map.next_key()? {
                    if number_in_disguise(&mut map, &mut first, &key)?.is_some() {
                        return Ok(Any);
                    }
                    map.next_value::<Any>()?;
                }
                Ok(Any)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Any, A::Error> {
                while seq.next_element::<Any>()?.is_some() {}
                Ok(Any)
            }
            fn visit_str<E>(self, _: &str) -> Result<Any, E> {
                Ok(Any)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Any, E> {
                Ok(Any)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Any, E> {
                Ok(Any)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Any, E> {
                Ok(Any)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Any, E> {
                Ok(Any)
            }
            fn visit_unit<E>(self) -> Result<Any, E> {
                Ok(Any)
            }
        }
        d.deserialize_any(Visit)
    }
}

/// The key serde_json hands a visitor's `visit_map` for a number when some crate in the
/// build enables its `arbitrary_precision` feature: such a "map" is a number, not an
/// object.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// The key by which, with serde_json's `raw_value` feature (always on: axum and presa
/// enable it), serde_json's own `Value` parse reads `{"<key>": "<json text>"}` as the
/// value of that text, parsed afresh, with a fresh nesting limit. A text holding another
/// such object nests again, so a chain of them is recursion with no bound, enough to
/// overflow a worker's stack from a message of modest size. No client means it: presa
/// refuses the key wherever it stands (-32700), and reads values through [`Json`]
/// rather than serde_json's `Value` parse, which would give it that meaning.
const RAW_TOKEN: &str = "$serde_json::private::RawValue";

/// What both tokens start with.
const TOKEN_PREFIX: &str = "$serde_json::private::";

/// The error [`number_in_disguise`] gives for [`RAW_TOKEN`].
const RAW_REFUSAL: &str = "the key $serde_json::private::RawValue is not accepted";

/// Whether serde_json, as built, reads numbers as [`NUMBER_TOKEN`] maps: its
/// `arbitrary_precision` feature (asked once, of serde_json itself: the features are
/// unified across the whole build, so presa cannot `cfg` on them).
pub(crate) fn number_token_live() -> bool {
    static LIVE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *LIVE.get_or_init(|| {
        serde_json::from_str::<serde_json::Value>(&format!(r#"{{"{NUMBER_TOKEN}":"1"}}"#))
            .is_ok_and(|v| v.is_number())
    })
}

/// For the visitors that read an object member by member, called with each key:
/// - [`RAW_TOKEN`], first or not, is refused (an error, so the message is -32700);
/// - [`NUMBER_TOKEN`] as the first key, with `arbitrary_precision` on, shows the
///   "object" to be a number: the number is returned, checked as a `Value` parse checks
///   it, and the caller reads no further member (serde_json rejects any that follow) and
///   answers as it would for a number;
/// - any other key is an ordinary member (`None`).
#[inline]
pub(crate) fn number_in_disguise<'de, A: serde::de::MapAccess<'de>>(
    map: &mut A,
    first: &mut bool,
    key: &str,
) -> Result<Option<serde_json::Number>, A::Error> {
    // Called for every key of every object read: the common answer stays inline.
    let first = std::mem::take(first);
    if !key.starts_with(TOKEN_PREFIX) {
        return Ok(None);
    }
    disguised_token(map, key, first)
}

/// [`number_in_disguise`] for a key that starts like one of serde_json's tokens.
#[cold]
fn disguised_token<'de, A: serde::de::MapAccess<'de>>(
    map: &mut A,
    key: &str,
    first: bool,
) -> Result<Option<serde_json::Number>, A::Error> {
    use serde::de::Error as _;
    if key == RAW_TOKEN {
        return Err(A::Error::custom(RAW_REFUSAL));
    }
    if !(first && key == NUMBER_TOKEN && number_token_live()) {
        return Ok(None);
    }
    let Text(Some(text)) = map.next_value::<Text>()? else {
        return Err(A::Error::custom("expected a string"));
    };
    text.parse::<serde_json::Number>()
        .map(Some)
        .map_err(A::Error::custom)
}

/// Whether `value` holds an object with the key [`RAW_TOKEN`] anywhere (a value made
/// in process, which [`number_in_disguise`] never saw). Walked by recursion down to
/// [`RAW_WALK_DEPTH`] levels (no allocation for the values a client sends), and below
/// that with a stack of its own, so any depth is safe.
pub(crate) fn holds_raw_token(value: &serde_json::Value) -> bool {
    holds_raw_token_within(value, RAW_WALK_DEPTH)
}

/// How deep [`holds_raw_token`] recurses before it walks with a stack of its own.
const RAW_WALK_DEPTH: u32 = 64;

/// [`holds_raw_token`] with `depth` levels of recursion left.
fn holds_raw_token_within(value: &serde_json::Value, depth: u32) -> bool {
    use serde_json::Value;
    if depth == 0 {
        return holds_raw_token_deep(value);
    }
    match value {
        // One pass over the members: a key is compared by length first, so the look
        // costs less than a search of the map and then a walk of it.
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k == RAW_TOKEN || holds_raw_token_within(v, depth - 1)),
        Value::Array(items) => items.iter().any(|v| holds_raw_token_within(v, depth - 1)),
        _ => false,
    }
}

/// [`holds_raw_token`] past the recursion bound: a stack of containers still to look in.
#[cold]
fn holds_raw_token_deep(value: &serde_json::Value) -> bool {
    use serde_json::Value;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                if map.contains_key(RAW_TOKEN) {
                    return true;
                }
                stack.extend(map.values().filter(|v| v.is_object() || v.is_array()));
            }
            Value::Array(items) => {
                stack.extend(items.iter().filter(|v| v.is_object() || v.is_array()))
            }
            _ => {}
        }
    }
    false
}

/// Whether `text`, a string a client sent, holds [`RAW_TOKEN`] as a key when read as
/// JSON, as `serde_json::from_str` would read it (a text that is not JSON is read as far
/// as it goes, which is as far as that parse would go). For the texts handed to a
/// handler's `FromStr` type: `serde_json::Value`'s parses through serde_json's own
/// `Value` parse.
pub(crate) fn text_holds_raw_token(text: &str) -> bool {
    let mut reader = serde_json::Deserializer::from_str(text);
    match <Any as serde::Deserialize>::deserialize(&mut reader) {
        Ok(Any) => false,
        Err(e) => e.to_string().starts_with(RAW_REFUSAL),
    }
}

/// A `serde_json::Value` read from a client's bytes: what serde_json's own `Value` parse
/// makes of them, every check included, but with each key passed through
/// [`number_in_disguise`]
/// (so [`RAW_TOKEN`] is refused, not parsed afresh). Every value the decoders keep is
/// read through this.
pub(crate) struct Json(pub(crate) serde_json::Value);

impl<'de> serde::Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde_json::Value;
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Value;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
                read_object(&mut scan::FromSerde::new(map))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(Json(item)) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Value::Array(items))
            }
            fn visit_str<E>(self, v: &str) -> Result<Value, E> {
                Ok(Value::String(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Value, E> {
                Ok(Value::String(v))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
                Ok(Value::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
                Ok(Value::from(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
                Ok(Value::from(v))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
                // As serde_json's own visitor: a float with no JSON form is null.
                Ok(Value::from(v))
            }
            fn visit_unit<E>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
        }
        d.deserialize_any(Visit).map(Json)
    }
}

/// An object read member by member into a `Value` (see [`Json`]).
#[inline]
fn read_object<'de, M: scan::Members<'de>>(m: &mut M) -> Result<serde_json::Value, M::Error> {
    use serde_json::Value;
    let mut members = serde_json::Map::new();
    loop {
        match m.next()? {
            // A member given twice keeps its last value, as in a `Value` parse.
            scan::Next::Key(key) => {
                let value = m.value::<Json>()?.0;
                members.insert(key.into_owned(), value);
            }
            scan::Next::End => return Ok(Value::Object(members)),
            scan::Next::Number(number) => return Ok(Value::Number(number)),
            scan::Next::Known(never, _) => match never {},
        }
    }
}

#[cfg(test)]
pub(crate) mod arbitrary;
pub(crate) mod client_info;
pub(crate) mod cursor;
pub mod jsonrpc;
pub mod meta;
pub(crate) mod methods;
pub(crate) mod scan;
pub mod types;
pub(crate) mod uri;
pub(crate) mod write;

/// The length of `value` as compact JSON, counted without building the text.
pub(crate) fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Counting cannot fail; a value that will not serialize counts as unbounded.
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::{RAW_TOKEN, RAW_WALK_DEPTH, holds_raw_token};
    use serde_json::{Value, json};

    /// `inner` wrapped in `depth` containers, objects and arrays by turns, each with a
    /// plain member beside it.
    fn nested(depth: usize, inner: Value) -> Value {
        (0..depth).fold(inner, |v, i| {
            if i % 2 == 0 {
                json!({"a": 1, "b": v})
            } else {
                json!([1, v, "x"])
            }
        })
    }

    #[test]
    fn holds_raw_token_finds_the_key_at_any_depth() {
        let bound = RAW_WALK_DEPTH as usize;
        // Around the recursion bound (where the walk changes hands) and far past it.
        for depth in [
            0,
            1,
            2,
            bound - 1,
            bound,
            bound + 1,
            bound + 2,
            3 * bound,
            600,
        ] {
            let key = nested(depth, json!({ RAW_TOKEN: "1" }));
            assert!(holds_raw_token(&key), "depth {depth}");
            let plain = nested(depth, json!({"k": RAW_TOKEN, "v": [RAW_TOKEN]}));
            assert!(!holds_raw_token(&plain), "depth {depth}");
            // Beside, not below: the key in a later member of a deep object.
            let later = json!({"deep": nested(depth, json!(null)), "z": { RAW_TOKEN: 1 }});
            assert!(holds_raw_token(&later), "depth {depth}");
        }
    }
}
