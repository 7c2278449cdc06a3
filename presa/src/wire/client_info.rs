//! `_meta` `clientInfo` as admission reads it: `name` and `version` kept as strings,
//! any other member as a value, without building a map; the map is made only when someone
//! asks ([`crate::RequestMeta::client_info`]). Admission then checks its shape: string
//! `name` and `version`, string `title`, `description` and `websiteUrl` when present,
//! `icons` a list of objects with a string `src`.
//!
//! Why: every request carries `clientInfo`, and most servers never read it; building it
//! as a `Map` of `Value`s would allocate its keys and strings and make a tree for each
//! request. `name` and `version` are kept as `CompactString`s, inline when short (as
//! they usually are). It is read in the same pass as the rest of the message, so it is
//! held to exactly the checks of a parse into a `Value`.

use crate::error::Error;
use crate::wire::Text;
use crate::wire::scan::{Cursor, Expected, FromSerde, Members, Next, Scan, Unread};
use compact_str::CompactString;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// The optional text members, in the order their errors are reported.
const TEXTS: [&str; 3] = ["title", "description", "websiteUrl"];

/// The two members of `clientInfo` read apart from the rest (the discriminant is the
/// member's place in [`ReadClientInfo::at`]).
#[derive(Clone, Copy)]
enum Own {
    Name = 0,
    Version = 1,
}

/// `clientInfo` as read.
#[derive(Clone, Default)]
pub(crate) struct ReadClientInfo {
    /// Whether it was an object at all.
    object: bool,
    /// `name`, when it was a string.
    name: Option<CompactString>,
    /// `version`, when it was a string.
    version: Option<CompactString>,
    /// Every other member (boxed: most clients send none).
    rest: Option<Box<Map<String, Value>>>,
    /// Where `name` and `version` first came among the distinct members, so that
    /// `to_map` keeps the order sent when serde_json's `preserve_order` is on.
    at: [Option<usize>; 2],
}

impl ReadClientInfo {
    /// The admission verdict, with the errors of wire section 2 in their order: name and
    /// version, then title, description and websiteUrl, then icons.
    pub(crate) fn admit(&self) -> Result<(), Error> {
        if !(self.object && self.name.is_some() && self.version.is_some()) {
            return Err(Error::invalid_params(
                "Client info must include string name and version",
            ));
        }
        let Some(rest) = &self.rest else {
            return Ok(());
        };
        for text in TEXTS {
            if rest.get(text).is_some_and(|v| !v.is_string()) {
                return Err(Error::invalid_params(format!(
                    "Client info {text} must be a string"
                )));
            }
        }
        if let Some(icons) = rest.get("icons")
            && !icons
                .as_array()
                .is_some_and(|a| a.iter().all(|i| i.get("src").is_some_and(Value::is_string)))
        {
            return Err(Error::invalid_params(
                "Client info icons must be a list of icons with a string src",
            ));
        }
        Ok(())
    }

    /// From an already parsed value (`decode_value`).
    pub(crate) fn from_value(value: Value) -> ReadClientInfo {
        let Value::Object(members) = value else {
            return ReadClientInfo::default();
        };
        let mut info = ReadClientInfo {
            object: true,
            ..ReadClientInfo::default()
        };
        for (key, value) in members {
            let text = |value| match value {
                Value::String(s) => Some(CompactString::from(s)),
                _ => None,
            };
            match key.as_str() {
                "name" => {
                    info.place(Own::Name);
                    info.name = text(value);
                }
                "version" => {
                    info.place(Own::Version);
                    info.version = text(value);
                }
                _ => {
                    info.rest.get_or_insert_default().insert(key, value);
                }
            }
        }
        info
    }

    /// Notes where `name` or `version` first came.
    fn place(&mut self, which: Own) {
        let [name, version] = self.at;
        let (mine, other) = match which {
            Own::Name => (name, version),
            Own::Version => (version, name),
        };
        if mine.is_none() {
            let before = self.rest.as_ref().map_or(0, |r| r.len());
            self.at[which as usize] = Some(before + usize::from(other.is_some()));
        }
    }

    /// The members as the client sent them, in the order a `Map` parsed from the same
    /// text has.
    pub(crate) fn to_map(&self) -> Map<String, Value> {
        let mut own: Vec<(usize, &str, &CompactString)> = [
            ("name", &self.name, self.at[Own::Name as usize]),
            ("version", &self.version, self.at[Own::Version as usize]),
        ]
        .into_iter()
        .filter_map(|(k, v, at)| Some((at.unwrap_or(usize::MAX), k, v.as_ref()?)))
        .collect();
        own.sort_unstable_by_key(|m| m.0);
        let mut own = own.into_iter().peekable();
        let mut map = Map::new();
        for (key, value) in self.rest.as_deref().into_iter().flatten() {
            while let Some((_, k, v)) = own.next_if(|m| m.0 <= map.len()) {
                map.insert(k.to_owned(), Value::from(v.as_str()));
            }
            map.insert(key.clone(), value.clone());
        }
        for (_, k, v) in own {
            map.insert(k.to_owned(), Value::from(v.as_str()));
        }
        map
    }
}

/// Shown as the members the client sent (what `RequestMeta`'s `Debug` prints).
impl fmt::Debug for ReadClientInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.object {
            self.to_map().fmt(f)
        } else {
            f.write_str("(not an object)")
        }
    }
}

impl<'de> Deserialize<'de> for ReadClientInfo {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = ReadClientInfo;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("clientInfo")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ReadClientInfo, A::Error> {
                read_client_info(&mut FromSerde::new(map))
            }
            non_objects_are!(ReadClientInfo, ReadClientInfo::default());
        }
        d.deserialize_any(Visit)
    }
}

impl<'a> Scan<'a> for ReadClientInfo {
    fn scan(c: &mut Cursor<'a>) -> Result<Self, Unread> {
        c.object(|m| read_client_info(m))
    }
}

/// Reads an object `clientInfo` member by member.
fn read_client_info<'de, M: Members<'de>>(m: &mut M) -> Result<ReadClientInfo, M::Error> {
    let mut info = ReadClientInfo {
        object: true,
        ..ReadClientInfo::default()
    };
    const KEYS: Expected<2, Own> =
        Expected::keyed([("name", Own::Name), ("version", Own::Version)]);
    // A member given twice counts with its last value, as in a map.
    loop {
        match m.next_of(&KEYS)? {
            Next::Known(Own::Name, _) => {
                info.place(Own::Name);
                info.name = m.value::<Text>()?.0.as_deref().map(CompactString::new);
            }
            Next::Known(Own::Version, _) => {
                info.place(Own::Version);
                info.version = m.value::<Text>()?.0.as_deref().map(CompactString::new);
            }
            Next::Key(key) => {
                let value = m.value::<crate::wire::Json>()?.0;
                info.rest
                    .get_or_insert_default()
                    .insert(key.into_owned(), value);
            }
            Next::End => return Ok(info),
            Next::Number(_) => return Ok(ReadClientInfo::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::jsonrpc::{Inbound, decode};

    /// `name` and `version` read back exactly, from bytes and from a value, whatever
    /// their length, multibyte characters included.
    #[test]
    fn name_and_version_read_back_exactly() {
        for len in [0, 1, 23, 24, 25, 60] {
            for tail in ["", "é", "😀"] {
                let s = format!("{}{tail}", "x".repeat(len));
                let text = serde_json::to_string(&s).expect("a string");
                let info = format!(r#"{{"name":{text},"version":{text}}}"#);
                let read: ReadClientInfo = serde_json::from_str(&info).expect("read");
                let value = ReadClientInfo::from_value(serde_json::from_str(&info).expect("JSON"));
                for read in [read, value] {
                    let map = read.to_map();
                    assert_eq!(map.get("name").and_then(Value::as_str), Some(s.as_str()));
                    assert_eq!(map.get("version").and_then(Value::as_str), Some(s.as_str()));
                }
            }
        }
    }

    /// A tools/call whose `clientInfo` carries `extra` as one more member.
    fn message(extra: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"c","version":"1","x":{extra}}}}}}}}}"#
        )
    }

    /// Whether `decode` read the message (rather than answering -32700).
    fn decodes(text: &str) -> bool {
        match decode(text.as_bytes()) {
            Ok(_) => true,
            Err(rejection) => {
                assert_eq!(rejection.error.code(), -32700, "{text}");
                false
            }
        }
    }

    /// Reading `clientInfo` member by member is held to exactly the checks of a parse of
    /// the whole message into a `Value`: nesting up to the limit and one past it, numbers
    /// out of range, bad escapes and lone surrogates, in members nobody reads.
    #[test]
    fn held_to_the_checks_of_a_value() {
        let mut cases: Vec<String> = (115..=130)
            .map(|n| format!("{}1{}", "[".repeat(n), "]".repeat(n)))
            .collect();
        cases.extend(
            [
                "1e400",
                "-1e400",
                "1e308",
                r#""\ud800""#,
                r#""\udc00x""#,
                r#""\ud83d\ude00""#,
                r#""\x""#,
                r#"{"a":1e999}"#,
                r#"[1,{"b":"\ud800"}]"#,
                r#"{"k\ud800":1}"#,
                r#""\u00e9\n""#,
                "18446744073709551616",
                "-9223372036854775809",
            ]
            .map(str::to_owned),
        );
        for extra in cases {
            let text = message(&extra);
            let as_value = serde_json::from_str::<Value>(&text).is_ok();
            assert_eq!(decodes(&text), as_value, "{extra}");
        }
    }

    /// The members come back as the client wrote them, unknown ones included.
    #[test]
    fn kept_as_sent() {
        let text = message(r#"{"deep":[1,2.5,"\u00e9"]},"title":"T\"""#);
        let Ok(Inbound::Request(request)) = decode(text.as_bytes()) else {
            panic!("decodes");
        };
        let meta = crate::wire::meta::admit_request(request.meta, None).expect("admitted");
        assert_eq!(meta.client_info().map(|m| m.len()), Some(4));
        let expected: Value =
            serde_json::json!({"name":"c","version":"1","x":{"deep":[1,2.5,"é"]},"title":"T\""});
        assert_eq!(meta.client_info().map(Value::Object), Some(expected));
    }

    /// What the rule of wire section 2 says of a message, worked out the plain way: the
    /// whole message parsed into a `Value`, then `clientInfo` checked member by member.
    /// `None`: the message is not JSON (-32700).
    /// The one rule presa adds to the plain way: serde_json's private RawValue key is
    /// refused wherever it stands (`wire::RAW_TOKEN`), where serde_json would parse its
    /// text afresh. These messages never escape the key, so finding its text finds it.
    fn reference(text: &str) -> Option<Result<Option<Value>, String>> {
        if text.contains(&format!("\"{}\"", crate::wire::RAW_TOKEN)) {
            return None;
        }
        reference_of(serde_json::from_str::<Value>(text).ok()?)
    }

    /// [`reference`] for a message already parsed.
    fn reference_of(message: Value) -> Option<Result<Option<Value>, String>> {
        if crate::wire::holds_raw_token(&message) {
            return None;
        }
        let Some(info) = message["params"]["_meta"].get(crate::wire::meta::KEY_CLIENT_INFO) else {
            return Some(Ok(None));
        };
        let Value::Object(members) = info else {
            return Some(Err(
                "Client info must include string name and version".into()
            ));
        };
        let text_at = |k: &str| members.get(k).is_some_and(Value::is_string);
        if !(text_at("name") && text_at("version")) {
            return Some(Err(
                "Client info must include string name and version".into()
            ));
        }
        for t in TEXTS {
            if members.get(t).is_some_and(|v| !v.is_string()) {
                return Some(Err(format!("Client info {t} must be a string")));
            }
        }
        if let Some(icons) = members.get("icons")
            && !icons
                .as_array()
                .is_some_and(|a| a.iter().all(|i| i.get("src").is_some_and(Value::is_string)))
        {
            return Some(Err(
                "Client info icons must be a list of icons with a string src".into(),
            ));
        }
        Some(Ok(Some(info.clone())))
    }

    /// What presa does with the same message, from its bytes or from a parsed `Value`.
    fn presa(
        decoded: Result<Inbound, crate::wire::jsonrpc::Rejection>,
    ) -> Option<Result<Option<Value>, String>> {
        match decoded {
            Err(rejection) if rejection.error.code() == -32700 => None,
            Err(rejection) => Some(Err(rejection.error.message().to_owned())),
            Ok(Inbound::Request(request)) => {
                Some(match crate::wire::meta::admit_request(request.meta, None) {
                    Ok(meta) => Ok(meta.client_info().map(Value::Object)),
                    Err(e) => Err(e.message().to_owned()),
                })
            }
            Ok(_) => Some(Err("not a request".into())),
        }
    }

    /// Reading `clientInfo` member by member agrees with the plain way on thousands of
    /// generated values: duplicates, escaped keys, every member's wrong types, junk that
    /// only a `Value` parse would refuse, and the keys serde_json gives a meaning of its
    /// own (`$serde_json::private::Number`, `...::RawValue`, which presa refuses), from
    /// bytes and from a parsed `Value`.
    #[test]
    fn agrees_with_the_plain_way() {
        let deep = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        let mut parts: Vec<String> = [
            r#""name":"c""#,
            r#""name":1"#,
            r#""name":null"#,
            r#""name":["x"]"#,
            r#""n\u0061me":"c""#,
            r#""name":"\u00e9""#,
            r#""name":"\ud800""#,
            r#""name":1e400"#,
            r#""name":{"$serde_json::private::Number":"1"}"#,
            r#""name":{"$serde_json::private::RawValue":"\"c\""}"#,
            r#""version":"1""#,
            r#""version":2"#,
            r#""versio\u006e":"1""#,
            r#""version":{}"#,
            r#""version":-9223372036854775809"#,
            r#""title":"T""#,
            r#""title":1"#,
            r#""description":null"#,
            r#""websiteUrl":{}"#,
            r#""icons":[]"#,
            r#""icons":[{"src":"a"}]"#,
            r#""icons":[{"src":1}]"#,
            r#""icons":[1]"#,
            r#""icons":[{"src":"a","src":2}]"#,
            r#""icons":[{"s\u0072c":"a"}]"#,
            r#""icons":"x""#,
            r#""x":1e400"#,
            r#""x":18446744073709551616"#,
            r#""x":"\udc00\ud800""#,
            r#""x":"\x""#,
            r#""k\ud800":1"#,
            r#""$serde_json::private::Number":"1""#,
            r#""$serde_json::private::Number":1e400"#,
            r#""$serde_json::private::RawValue":5"#,
            r#""$serde_json::private::RawValue":"{\"name\":\"c\",\"version\":\"1\"}""#,
            r#""x":{"$serde_json::private::RawValue":"1e400"}"#,
        ]
        .map(str::to_owned)
        .to_vec();
        for n in [122, 123, 124, 125] {
            parts.push(format!(r#""x":{}"#, deep(n)));
        }
        let mut infos: Vec<String> = [
            "1",
            "null",
            "[]",
            "{}",
            "[1e400]",
            r#"{"$serde_json::private::Number":"1"}"#,
            r#"{"$serde_json::private::RawValue":"{\"name\":\"c\",\"version\":\"1\"}"}"#,
        ]
        .map(str::to_owned)
        .to_vec();
        for p in &parts {
            infos.push(format!(r#"{{"name":"c","version":"1",{p}}}"#));
            infos.push(format!(r#"{{{p},"name":"c","version":"1"}}"#));
        }
        let mut seed = 0x2545_F491_4F6C_DD1D_u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for _ in 0..4000 {
            let mut members: Vec<String> = (0..next(5))
                .map(|_| parts[next(parts.len())].clone())
                .collect();
            for own in [r#""name":"c""#, r#""version":"1""#] {
                if next(2) == 0 {
                    members.insert(next(members.len() + 1), own.to_owned());
                }
            }
            infos.push(format!("{{{}}}", members.join(",")));
        }
        for info in &infos {
            let text = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{info}}}}}}}"#
            );
            let want = reference(&text);
            assert_eq!(presa(decode(text.as_bytes())), want, "from bytes: {info}");
            if let Ok(value) = serde_json::from_str::<Value>(&text) {
                // serde_json's parse has already given a first RawValue key its meaning,
                // so the value is held to the plain way's verdict on itself.
                let want = reference_of(value.clone());
                assert_eq!(
                    presa(crate::wire::jsonrpc::decode_value(value)),
                    want,
                    "from a value: {info}"
                );
            }
        }
    }

    /// Where `name` and `version` came among the distinct members, which `to_map` keeps
    /// when serde_json's `preserve_order` is on (the default build sorts, so equality of
    /// maps alone could not see a wrong order).
    #[test]
    fn places_of_name_and_version_are_kept() {
        for (text, at) in [
            (r#"{"name":"c","version":"1"}"#, [Some(0), Some(1)]),
            (r#"{"version":"1","name":"c"}"#, [Some(1), Some(0)]),
            (
                r#"{"b":1,"version":"1","a":2,"name":"c"}"#,
                [Some(3), Some(1)],
            ),
            (
                r#"{"name":"c","b":1,"name":"d","version":"1"}"#,
                [Some(0), Some(2)],
            ),
            (r#"{"b":1}"#, [None, None]),
        ] {
            let read: ReadClientInfo = serde_json::from_str(text).expect("reads");
            assert_eq!(read.at, at, "{text}");
            // From a parsed value, the places are those of the value's own order (sorted
            // unless `preserve_order` is on).
            let value: Value = serde_json::from_str(text).expect("parses");
            let place = |k: &str| {
                value
                    .as_object()
                    .and_then(|m| m.keys().position(|x| x == k))
            };
            let expected = [place("name"), place("version")];
            assert_eq!(
                ReadClientInfo::from_value(value.clone()).at,
                expected,
                "{text}"
            );
        }
        // Shown as a map parsed from the same text shows (sorted, or as sent under
        // `preserve_order`).
        let text = r#"{"z":1,"name":"c","version":"1"}"#;
        let read: ReadClientInfo = serde_json::from_str(text).expect("reads");
        let map: Map<String, Value> = serde_json::from_str(text).expect("parses");
        assert_eq!(format!("{read:?}"), format!("{map:?}"));
        assert_eq!(read.to_map(), map);
    }
}
