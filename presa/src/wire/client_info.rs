//! `_meta` `clientInfo` as admission reads it: `name` and `version` kept as strings,
//! any other member as a value, without building a map; the map is made only when someone
//! asks ([`crate::RequestMeta::client_info`]). Its shape is checked as it is read: string
//! `name` and `version`, string `title`, `description` and `websiteUrl` when present,
//! `icons` a list of objects with a string `src`.
//!
//! Why: building `clientInfo` as a `Map` of `Value`s (its keys and strings allocated, a
//! tree made and dropped) was 2.5k of the 21.9k instructions of a stdio `tools/call`
//! (callgrind), for a value most servers never read. It is read in the same pass as the
//! rest of the message, so it is held to exactly the checks of a parse into a `Value`.

use crate::error::Error;
use crate::wire::{Key, Text, number_in_disguise};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// The optional text members, in the order their errors are reported.
const TEXTS: [&str; 3] = ["title", "description", "websiteUrl"];

/// `clientInfo` as read.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReadClientInfo {
    /// Whether it was an object at all.
    object: bool,
    /// `name`, when it was a string.
    name: Option<String>,
    /// `version`, when it was a string.
    version: Option<String>,
    /// Every other member (boxed: most clients send none).
    rest: Option<Box<Map<String, Value>>>,
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

    /// The members as the client sent them (in the map's order).
    pub(crate) fn to_map(&self) -> Map<String, Value> {
        let mut map = self.rest.as_deref().cloned().unwrap_or_default();
        if let Some(name) = &self.name {
            map.insert("name".to_owned(), Value::String(name.clone()));
        }
        if let Some(version) = &self.version {
            map.insert("version".to_owned(), Value::String(version.clone()));
        }
        map
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
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ReadClientInfo, A::Error> {
                let mut info = ReadClientInfo {
                    object: true,
                    ..ReadClientInfo::default()
                };
                let mut first = true;
                // A member given twice counts with its last value, as in a map.
                while let Some(Key(key)) = map.next_key()? {
                    if number_in_disguise(&mut map, &mut first, &key)? {
                        return Ok(ReadClientInfo::default());
                    }
                    match &*key {
                        "name" => info.name = map.next_value::<Text>()?.0.map(Into::into),
                        "version" => info.version = map.next_value::<Text>()?.0.map(Into::into),
                        _ => {
                            let value = map.next_value::<Value>()?;
                            info.rest
                                .get_or_insert_default()
                                .insert(key.into_owned(), value);
                        }
                    }
                }
                Ok(info)
            }
            non_objects_are!(ReadClientInfo, ReadClientInfo::default());
        }
        d.deserialize_any(Visit)
    }
}

/// Any JSON value, read through and dropped, held to the checks of a parse into a
/// `Value` (unlike `serde::de::IgnoredAny`, which serde_json skips without checking
/// number ranges).
pub(crate) struct Any;

impl<'de> Deserialize<'de> for Any {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = Any;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Any, A::Error> {
                while map.next_entry::<Any, Any>()?.is_some() {}
                Ok(Any)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Any, A::Error> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::jsonrpc::{Inbound, decode};

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
}
