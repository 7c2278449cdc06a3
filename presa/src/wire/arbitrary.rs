//! Strategies for the property-based tests: JSON text, values and objects, with the
//! characters that need care on the wire (quotes, backslashes, control characters,
//! characters past ASCII) well represented. `cases` sets how many inputs a differential
//! test runs: its default, or `PRESA_DIFF_CASES` for a longer run.

use proptest::prelude::*;
use serde_json::{Map, Value};

/// How many cases a property test runs: `default`, or `PRESA_DIFF_CASES` when set.
pub(crate) fn cases(default: u32) -> u32 {
    std::env::var("PRESA_DIFF_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// A character: mostly plain ASCII, often one that JSON escapes or that is past ASCII.
pub(crate) fn json_char() -> impl Strategy<Value = char> {
    prop_oneof![
        6 => proptest::char::range('a', 'z'),
        2 => prop::sample::select(vec!['"', '\\', '/', '\n', '\t', '\u{1}', '\u{1f}', '\u{7f}']),
        2 => prop::sample::select(vec!['é', 'ß', '€', '😀', '\u{2028}', '\u{fffd}', ' ', '{', ':']),
        1 => any::<char>(),
    ]
}

/// A short string of [`json_char`]s.
pub(crate) fn json_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(json_char(), 0..12).prop_map(String::from_iter)
}

/// An object key: mostly plain (as most keys are), sometimes any text.
pub(crate) fn json_key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-zA-Z_][a-zA-Z0-9_./-]{0,10}",
        1 => json_text(),
    ]
}

/// A number as serde_json reads numbers: integers of either sign, and finite floats.
pub(crate) fn json_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1.0e12f64..1.0e12).prop_map(Value::from),
        Just(Value::from(0)),
    ]
}

/// A JSON value nested at most `depth` deep.
pub(crate) fn json_value(depth: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        json_number(),
        json_text().prop_map(Value::String),
    ];
    leaf.prop_recursive(depth, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((json_key(), inner), 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A JSON object whose values nest at most `depth` deep.
pub(crate) fn json_map(depth: u32) -> impl Strategy<Value = Map<String, Value>> {
    proptest::collection::vec((json_key(), json_value(depth)), 0..4)
        .prop_map(|m| m.into_iter().collect())
}
