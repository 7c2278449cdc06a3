//! The differential tests of the result writers: for generated results, the fast writer
//! and its reference twin write the same bytes (objects: the same JSON value), with
//! serverInfo on and off.

use super::{Shaper, fast, reference};
use crate::wire::arbitrary::{json_map, json_text, json_value};
use crate::wire::meta::KEY_SERVER_INFO;
use crate::wire::types::{
    Annotations, CachePolicy, CacheScope, CallToolResult, Content, Implementation, ResourceContents,
};
use proptest::prelude::*;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

/// Results with serverInfo, without it, and a legacy session's.
fn shapers() -> [Shaper; 3] {
    let info = Implementation::new("shape \"s\" é", "1.0");
    [
        Shaper::new(&info, true).expect("a shaper"),
        Shaper::new(&info, false).expect("a shaper"),
        Shaper::legacy(),
    ]
}

fn annotations() -> impl Strategy<Value = Option<Annotations>> {
    proptest::option::of(
        (
            proptest::option::of(0.0f64..=1.0),
            proptest::option::of(json_text()),
        )
            .prop_map(|(priority, last_modified)| Annotations {
                priority,
                last_modified,
                ..Annotations::default()
            }),
    )
}

fn content() -> impl Strategy<Value = Content> {
    prop_oneof![
        4 => (json_text(), annotations()).prop_map(|(text, annotations)| {
            let mut c = Content::text(text);
            if let Content::Text { annotations: a, .. } = &mut c {
                *a = annotations;
            }
            c
        }),
        1 => (json_text(), json_text()).prop_map(|(data, mime)| {
            serde_json::from_value(json!({"type": "image", "data": data, "mimeType": mime}))
                .expect("an image block")
        }),
    ]
}

/// `_meta` maps, sometimes holding the serverInfo key itself.
fn meta() -> impl Strategy<Value = Option<Map<String, Value>>> {
    proptest::option::of((json_map(2), any::<bool>()).prop_map(|(mut m, own_info)| {
        if own_info {
            m.insert(KEY_SERVER_INFO.into(), json!({"name": "own"}));
        }
        m
    }))
}

fn call_result() -> impl Strategy<Value = CallToolResult> {
    (
        proptest::collection::vec(content(), 0..4),
        proptest::option::of(json_value(3)),
        any::<bool>(),
        meta(),
    )
        .prop_map(|(content, structured, is_error, meta)| {
            let mut r = CallToolResult::new(content);
            r.structured_content = structured;
            r.is_error = is_error;
            r.meta = meta;
            r
        })
}

fn cache() -> impl Strategy<Value = CachePolicy> {
    (any::<u64>(), any::<bool>()).prop_map(|(ttl, public)| {
        CachePolicy::new(
            ttl,
            if public {
                CacheScope::Public
            } else {
                CacheScope::Private
            },
        )
    })
}

fn contents() -> impl Strategy<Value = ResourceContents> {
    (
        json_text(),
        json_text(),
        proptest::option::of(json_text()),
        any::<bool>(),
        meta(),
    )
        .prop_map(|(uri, body, mime, blob, meta)| {
            let mut c = if blob {
                ResourceContents::blob(uri, body.as_bytes())
            } else {
                ResourceContents::text(uri, body)
            };
            if let Some(mime) = mime {
                c = c.mime_type(mime);
            }
            match &mut c {
                ResourceContents::Text(t) => t.meta = meta,
                ResourceContents::Blob(b) => b.meta = meta,
            }
            c
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::wire::arbitrary::cases(512)))]

    #[test]
    fn call_results_are_written_as_their_serde_form(result in call_result()) {
        for shaper in shapers() {
            let info = shaper.info();
            // Written in a buffer that held an earlier answer: nothing of it is left.
            let used = "{\"jsonrpc\":\"2.0\",\"id\":1}".to_owned();
            let fast = fast::call(info, &result, used).expect("writes");
            prop_assert_eq!(&fast, &reference::call(info, &result, String::new()).expect("writes"));
            prop_assert!(serde_json::from_str::<Value>(&fast).is_ok());
        }
    }

    #[test]
    fn text_results_are_the_one_block_they_stand_for(text in json_text()) {
        for shaper in shapers() {
            let info = shaper.info();
            let fast = fast::text(info, &text, "an earlier answer".into()).expect("writes");
            prop_assert_eq!(&fast, &reference::text(info, &text, String::new()).expect("writes"));
            let whole = fast::call(info, &CallToolResult::text(text.clone()), String::new());
            prop_assert_eq!(fast, whole.expect("writes"));
        }
    }

    #[test]
    fn pages_are_written_as_their_serde_form(
        key in json_text(),
        items in proptest::collection::vec(json_map(2), 0..5),
        next_after in proptest::option::of(json_text()),
        cache in cache(),
    ) {
        let raw: Vec<Box<RawValue>> = items
            .iter()
            .map(|m| serde_json::value::to_raw_value(m).expect("raw"))
            .collect();
        for shaper in shapers() {
            let info = shaper.info();
            let iter = raw.iter().map(|r| &**r);
            let fast = fast::page(info, &key, iter.clone(), next_after.as_deref(), cache);
            let twin = reference::page(info, &key, iter, next_after.as_deref(), cache);
            prop_assert_eq!(fast.expect("writes"), twin.expect("writes"));
        }
    }

    #[test]
    fn reads_are_written_as_their_serde_form(
        items in proptest::collection::vec(contents(), 0..4),
        cache in cache(),
    ) {
        for shaper in shapers() {
            let info = shaper.info();
            let fast = fast::read(info, &items, cache).expect("writes");
            prop_assert_eq!(fast, reference::read(info, &items, cache).expect("writes"));
        }
    }

    #[test]
    fn objects_are_written_as_their_serde_form(
        mut result in json_map(3),
        result_type in proptest::option::of(json_text()),
        own_meta in proptest::option::of(json_value(2)),
    ) {
        if let Some(t) = result_type {
            result.insert("resultType".into(), Value::from(t));
        }
        if let Some(m) = own_meta {
            result.insert("_meta".into(), m);
        }
        for shaper in shapers() {
            let info = shaper.info();
            let fast: Value = serde_json::from_str(&fast::object(info, result.clone()).expect("writes")).expect("JSON");
            let twin: Value = serde_json::from_str(&reference::object(info, result.clone()).expect("writes")).expect("JSON");
            prop_assert_eq!(&fast, &twin);
            // Through text as the others are (a float may not read back as the one written).
            let map = serde_json::to_string(&Value::Object(shaper.complete_map(result.clone())));
            let map: Value = serde_json::from_str(&map.expect("writes")).expect("JSON");
            prop_assert_eq!(fast, map);
        }
    }
}

/// The serverInfo member is written from a literal: the key, quoted as serde_json quotes
/// it, and a colon.
#[test]
fn the_server_info_member_is_the_key_written() {
    let key = serde_json::to_string(KEY_SERVER_INFO).expect("serializes");
    assert_eq!(fast::SERVER_INFO_MEMBER, format!("{key}:"));
}

/// A result without a `_meta` of its own ends with the server's, written as its text;
/// caching hints come before `resultType`.
#[test]
fn results_end_with_the_server_info() {
    let [on, off, legacy] = shapers();
    let listing = on
        .page(
            "tools",
            std::iter::empty(),
            Some("t"),
            CachePolicy::new(5, CacheScope::Public),
        )
        .expect("writes");
    assert_eq!(
        listing,
        r#"{"tools":[],"nextCursor":"cHJlc2ExCnRvb2xzCnQ","ttlMs":5,"cacheScope":"public","resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"shape \"s\" é","version":"1.0"}}}"#
    );
    let listing = off
        .page("tools", std::iter::empty(), None, CachePolicy::NONE)
        .expect("writes");
    assert_eq!(
        listing,
        r#"{"tools":[],"ttlMs":0,"cacheScope":"private","resultType":"complete"}"#
    );
    let listing = legacy
        .page("tools", std::iter::empty(), Some("t"), CachePolicy::NONE)
        .expect("writes");
    assert_eq!(
        listing,
        r#"{"tools":[],"nextCursor":"cHJlc2ExCnRvb2xzCnQ"}"#
    );
    assert_eq!(legacy.object(Map::new()).expect("writes"), "{}");
    assert_eq!(
        legacy
            .call(&CallToolResult::text("hi"), String::new())
            .expect("writes"),
        r#"{"content":[{"type":"text","text":"hi"}],"isError":false}"#
    );
    let mut named = Map::new();
    named.insert("resultType".into(), json!("input_required"));
    assert_eq!(
        off.object(named).expect("writes"),
        r#"{"resultType":"input_required"}"#
    );
}

/// The hand-written contents are byte for byte what the derive writes.
#[test]
fn resource_contents_are_written_as_serde_writes_them() {
    let meta = |v: Value| v.as_object().cloned();
    let mut with_meta = ResourceContents::text("a://x", "t");
    if let ResourceContents::Text(t) = &mut with_meta {
        t.meta = meta(json!({"k\"": [1, "é"], "z": null}));
    }
    let mut blob_meta = ResourceContents::blob("b://y", [0u8, 255, 7]).mime_type("x/y");
    if let ResourceContents::Blob(b) = &mut blob_meta {
        b.meta = meta(json!({}));
    }
    let items = [
        ResourceContents::text("notes://42", "note 42"),
        ResourceContents::text("a://q\"\\", "tab\t \"quoted\" \u{1} \u{7f} é 😀\n")
            .mime_type("text/plain; charset=\"utf-8\""),
        ResourceContents::text("", ""),
        ResourceContents::blob("b://z", b"bytes"),
        with_meta,
        blob_meta,
    ];
    for item in &items {
        let mut out = String::new();
        fast::push_contents(&mut out, item).expect("writes");
        assert_eq!(out, serde_json::to_string(item).expect("serializes"));
    }
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
        fast::push_json_text(&mut out, &value).expect("serializes");
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
    assert!(fast::push_json_text(&mut out, &Fails).is_err());
    assert_eq!(out, "kept", "nothing of a failed value is left");
}
