//! Request `_meta` (wire reference section 2): the reserved keys, the key syntax of
//! section 2.1, log levels, and the admission checks run on every request before any
//! user code.

use crate::error::Error;
use crate::wire::client_info::ReadClientInfo;
use crate::wire::jsonrpc::RequestId;
use crate::wire::scan::{Cursor, Expected, FromSerde, Members, Next, Scan, Unread};
use serde_json::{Map, Value};
use std::fmt;

/// The protocol revision presa speaks.
pub const PROTOCOL_VERSION: &str = "2026-07-28";
/// Every revision presa serves statelessly (the `supportedVersions` of `server/discover`).
pub const SUPPORTED_VERSIONS: &[&str] = &[PROTOCOL_VERSION];
/// The earlier revisions presa serves to clients that open with `initialize`, newest
/// first: a session negotiates one of them.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18"];

/// `_meta` key: the protocol version of the request.
pub const KEY_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for this request.
pub const KEY_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's implementation info.
pub const KEY_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the log level the request opts into.
pub const KEY_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key: the server's implementation info on results.
pub const KEY_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key: the subscription a notification belongs to.
pub const KEY_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// `_meta` key: the progress token.
pub const KEY_PROGRESS_TOKEN: &str = "progressToken";

/// A log level of `notifications/message`, ordered from least to most severe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// Normal operational messages.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The wire name of the level.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<LogLevel> {
        LogLevel::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A progress token: a string or an integer, bounded like a request id.
pub type ProgressToken = RequestId;

/// The admitted `_meta` of one request.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RequestMeta {
    /// The protocol version the request names: after admission, always one of
    /// [`SUPPORTED_VERSIONS`].
    pub protocol_version: &'static str,
    /// The client capabilities declared by this request (`{}` means none).
    pub client_capabilities: Map<String, Value>,
    /// The client's implementation info, when sent (read it with
    /// [`RequestMeta::client_info`]).
    client_info: Option<ReadClientInfo>,
    /// The log level the request opts into, when any.
    pub log_level: Option<LogLevel>,
    /// The progress token, when the request asks for progress.
    pub progress_token: Option<ProgressToken>,
    /// W3C trace context `traceparent`, when sent.
    pub traceparent: Option<String>,
    /// W3C trace context `tracestate`, when sent.
    pub tracestate: Option<String>,
    /// W3C `baggage`, when sent.
    pub baggage: Option<String>,
}

impl RequestMeta {
    /// The client's implementation info (`clientInfo`), when the request sent it: its
    /// members as the client wrote them. Admission has checked its shape (string `name`
    /// and `version`; `title`, `description` and `websiteUrl` strings when present;
    /// `icons` with string `src`s). The map is made on each call, so a request that never
    /// asks does not pay for building it.
    pub fn client_info(&self) -> Option<Map<String, Value>> {
        self.client_info.as_ref().map(ReadClientInfo::to_map)
    }

    /// The meta of work run away from its request (a task's run, on whichever replica
    /// holds it): the protocol version and client capabilities it was made with, and
    /// nothing else. `None` for a version this build does not serve.
    #[cfg(feature = "tasks")]
    pub(crate) fn detached(
        version: &str,
        client_capabilities: Map<String, Value>,
    ) -> Option<RequestMeta> {
        let protocol_version = SUPPORTED_VERSIONS
            .iter()
            .chain(LEGACY_VERSIONS)
            .find(|v| **v == version)?;
        Some(RequestMeta {
            protocol_version,
            client_capabilities,
            client_info: None,
            log_level: None,
            progress_token: None,
            traceparent: None,
            tracestate: None,
            baggage: None,
        })
    }
}

/// Whether `key` follows the `_meta` key syntax of wire section 2.1: an optional prefix of
/// dot-separated labels ending in `/`, then a name.
pub fn is_valid_meta_key(key: &str) -> bool {
    // Runs for every `_meta` key of every request: the reserved keys are known valid, and
    // any other key takes one pass over its bytes.
    if matches!(
        key,
        KEY_PROTOCOL_VERSION | KEY_CLIENT_CAPABILITIES | KEY_CLIENT_INFO | KEY_LOG_LEVEL
    ) {
        return true;
    }
    presa_rules::meta::is_valid_key(key)
}

/// Whether `key` has a prefix (`something/`), as extension identifiers must.
pub fn has_prefix(key: &str) -> bool {
    presa_rules::meta::has_prefix(key)
}

/// A check the HTTP transport runs between steps 5 and 7 of admission: the
/// `MCP-Protocol-Version` header against the body's version.
pub(crate) type VersionMirror<'a> = &'a dyn Fn(&str) -> Result<(), Error>;

/// A request's or notification's `_meta` as read from the wire: whether every key has
/// the syntax of section 2.1, and the values of the keys admission reads. Reading the
/// bytes straight into this skips building a map of the whole `_meta` (its long keys,
/// and entries nobody reads).
#[derive(Debug, Default)]
pub(crate) enum RawMeta {
    /// No `_meta` member.
    #[default]
    Absent,
    /// A `_meta` that is not an object.
    NotObject,
    /// An object. Boxed: the request is moved several times between the bytes and
    /// admission, and a pointer moves cheaper than the nine fields.
    Object(Box<MetaFields>),
}

/// The members of an object `_meta` that admission reads.
#[derive(Debug)]
pub(crate) struct MetaFields {
    keys_valid: bool,
    progress_token: Option<Value>,
    log_level: Option<Value>,
    protocol_version: Option<Version>,
    client_info: Option<ReadClientInfo>,
    client_capabilities: Option<Value>,
    traceparent: Option<Value>,
    tracestate: Option<Value>,
    baggage: Option<Value>,
}

impl Default for MetaFields {
    fn default() -> Self {
        MetaFields {
            keys_valid: true,
            progress_token: None,
            log_level: None,
            protocol_version: None,
            client_info: None,
            client_capabilities: None,
            traceparent: None,
            tracestate: None,
            baggage: None,
        }
    }
}

/// `protocolVersion` as read: a supported version is kept as its constant, so the
/// common request allocates nothing for it; any other string is kept for the errors
/// that name it.
#[derive(Debug)]
enum Version {
    Supported(&'static str),
    Other(String),
    NotText,
}

impl Version {
    fn of(text: Option<std::borrow::Cow<'_, str>>) -> Version {
        match text {
            None => Version::NotText,
            Some(t) => match SUPPORTED_VERSIONS.iter().find(|v| **v == t) {
                Some(v) => Version::Supported(v),
                None => Version::Other(t.into_owned()),
            },
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            Version::Supported(v) => Some(v),
            Version::Other(v) => Some(v),
            Version::NotText => None,
        }
    }
}

impl<'de> serde::Deserialize<'de> for Version {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        super::Text::deserialize(d).map(|text| Version::of(text.0))
    }
}

impl<'a> Scan<'a> for Version {
    #[inline]
    fn scan(c: &mut Cursor<'a>) -> Result<Self, Unread> {
        const SPOKEN: Expected<1> = Expected::new([PROTOCOL_VERSION]);
        match c.known(&SPOKEN) {
            Some(((), version)) => Ok(Version::Supported(version)),
            None => super::Text::scan(c).map(|text| Version::of(text.0)),
        }
    }
}

impl MetaFields {
    /// Notes `key`'s syntax and says where its value goes (`None`: nowhere).
    fn slot(&mut self, key: &str) -> Option<&mut Option<Value>> {
        // The keys read here all have valid syntax (a test checks them), so only the
        // others take the scan.
        Some(match key {
            KEY_PROGRESS_TOKEN => &mut self.progress_token,
            KEY_LOG_LEVEL => &mut self.log_level,
            KEY_CLIENT_CAPABILITIES => &mut self.client_capabilities,
            "traceparent" => &mut self.traceparent,
            "tracestate" => &mut self.tracestate,
            "baggage" => &mut self.baggage,
            _ => {
                self.keys_valid &= is_valid_meta_key(key);
                return None;
            }
        })
    }
}

impl RawMeta {
    /// The W3C trace context members (`traceparent`, `tracestate`, `baggage`), those that
    /// are strings, before admission.
    pub(crate) fn trace_context(&self) -> (Option<&str>, Option<&str>, Option<&str>) {
        match self {
            RawMeta::Object(fields) => {
                fn text(v: &Option<Value>) -> Option<&str> {
                    v.as_ref().and_then(Value::as_str)
                }
                (
                    text(&fields.traceparent),
                    text(&fields.tracestate),
                    text(&fields.baggage),
                )
            }
            RawMeta::Absent | RawMeta::NotObject => (None, None, None),
        }
    }

    /// From an already parsed `_meta` member.
    pub(crate) fn from_value(meta: Option<Value>) -> RawMeta {
        match meta {
            None => RawMeta::Absent,
            Some(Value::Object(map)) => {
                let mut fields = MetaFields::default();
                for (k, v) in map {
                    if k == KEY_CLIENT_INFO {
                        fields.client_info = Some(ReadClientInfo::from_value(v));
                    } else if k == KEY_PROTOCOL_VERSION {
                        fields.protocol_version = Some(Version::of(match v {
                            Value::String(s) => Some(s.into()),
                            _ => None,
                        }));
                    } else if let Some(slot) = fields.slot(&k) {
                        *slot = Some(v);
                    }
                }
                RawMeta::Object(Box::new(fields))
            }
            Some(_) => RawMeta::NotObject,
        }
    }

    /// Whether it carries any of the 2026-07-28 per-request keys (`protocolVersion`,
    /// `clientCapabilities`, `clientInfo`, `logLevel` under `io.modelcontextprotocol/`),
    /// whatever their values: a message that does is a 2026-07-28 client's (a client of
    /// the earlier revisions sends none of them), to be admitted, or refused, as one.
    #[inline]
    pub(crate) fn claims_modern(&self) -> bool {
        match self {
            RawMeta::Object(f) => {
                f.protocol_version.is_some()
                    || f.client_capabilities.is_some()
                    || f.client_info.is_some()
                    || f.log_level.is_some()
            }
            _ => false,
        }
    }

    /// The protocol version it names, when it is a string.
    pub(crate) fn protocol_version(&self) -> Option<&str> {
        match self {
            RawMeta::Object(f) => f.protocol_version.as_ref().and_then(Version::as_str),
            _ => None,
        }
    }
}

impl<'de> serde::Deserialize<'de> for RawMeta {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = RawMeta;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a _meta value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<RawMeta, A::Error> {
                read_meta(&mut FromSerde::new(map))
            }
            non_objects_are!(RawMeta, RawMeta::NotObject);
        }
        d.deserialize_any(Visit)
    }
}

impl<'a> Scan<'a> for RawMeta {
    fn scan(c: &mut Cursor<'a>) -> Result<Self, Unread> {
        c.object(|m| read_meta(m))
    }
}

/// Reads an object `_meta` member by member.
#[inline]
fn read_meta<'de, M: Members<'de>>(m: &mut M) -> Result<RawMeta, M::Error> {
    #[derive(Clone, Copy)]
    enum Key {
        ProtocolVersion,
        ClientCapabilities,
        ClientInfo,
    }
    const KEYS: Expected<3, Key> = Expected::keyed([
        (KEY_PROTOCOL_VERSION, Key::ProtocolVersion),
        (KEY_CLIENT_CAPABILITIES, Key::ClientCapabilities),
        (KEY_CLIENT_INFO, Key::ClientInfo),
    ]);
    let mut fields = Box::<MetaFields>::default();
    loop {
        match m.next_of(&KEYS)? {
            Next::Known(Key::ProtocolVersion, _) => {
                fields.protocol_version = Some(m.value()?);
            }
            Next::Known(Key::ClientCapabilities, _) => {
                fields.client_capabilities = Some(m.value::<super::Json>()?.0);
            }
            // Read without building a map (see client_info.rs).
            Next::Known(Key::ClientInfo, _) => fields.client_info = Some(m.value()?),
            Next::Key(key) => match fields.slot(&key) {
                Some(slot) => *slot = Some(m.value::<super::Json>()?.0),
                None => {
                    m.value::<super::Any>()?;
                }
            },
            Next::End => return Ok(RawMeta::Object(fields)),
            Next::Number(_) => return Ok(RawMeta::NotObject),
        }
    }
}

/// Admits the `_meta` of a request, in exactly the order of wire section 2.
#[inline]
pub(crate) fn admit_request(
    meta: RawMeta,
    mirror: Option<VersionMirror<'_>>,
) -> Result<RequestMeta, Error> {
    // 1. _meta absent is {}; not an object is -32602. Read in its box: moving the
    // fields out of it first was a copy of them all.
    let meta = match meta {
        RawMeta::Absent => Box::default(),
        RawMeta::Object(fields) => fields,
        RawMeta::NotObject => return Err(Error::invalid_params("_meta must be an object")),
    };
    // 2. key syntax.
    if !meta.keys_valid {
        return Err(Error::invalid_params(
            "_meta contains an invalid key or non-JSON value",
        ));
    }
    // 3. progressToken.
    let progress_token = match &meta.progress_token {
        None => None,
        Some(v) => Some(RequestId::read(v).map_err(|_| {
            Error::invalid_params(
                "progressToken must be a string of at most 256 bytes or an int64 integer",
            )
        })?),
    };
    // 4. logLevel.
    let log_level = match &meta.log_level {
        None => None,
        Some(v) => Some(
            v.as_str()
                .and_then(LogLevel::parse)
                .ok_or_else(|| Error::invalid_params("Invalid MCP request log level"))?,
        ),
    };
    // 5. protocolVersion present and a string.
    let (text, supported) = match &meta.protocol_version {
        None => {
            return Err(Error::invalid_params(format!(
                "Missing required {KEY_PROTOCOL_VERSION} metadata"
            )));
        }
        Some(Version::NotText) => {
            return Err(Error::invalid_params(format!(
                "{KEY_PROTOCOL_VERSION} must be a string"
            )));
        }
        Some(Version::Supported(v)) => (*v, Some(*v)),
        Some(Version::Other(v)) => (v.as_str(), None),
    };
    // 6. on HTTP, the MCP-Protocol-Version header must equal it.
    if let Some(mirror) = mirror {
        mirror(text)?;
    }
    // 7. supported version.
    let Some(version) = supported else {
        return Err(Error::unsupported_version(text, SUPPORTED_VERSIONS));
    };
    // 8. clientInfo.
    if let Some(info) = &meta.client_info {
        info.admit()?;
    }
    let client_info = meta.client_info;
    // 9. clientCapabilities.
    let client_capabilities = match meta.client_capabilities {
        None => {
            return Err(Error::invalid_params(
                "Missing required client capabilities metadata",
            ));
        }
        Some(Value::Object(c)) => {
            check_client_capabilities(&c)?;
            c
        }
        Some(_) => {
            return Err(Error::invalid_params(
                "Client capabilities must be an object",
            ));
        }
    };
    let text = |v: Option<Value>| match v {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    Ok(RequestMeta {
        protocol_version: version,
        client_capabilities,
        client_info,
        log_level,
        progress_token,
        traceparent: text(meta.traceparent),
        tracestate: text(meta.tracestate),
        baggage: text(meta.baggage),
    })
}

/// What a legacy session knows of its client, for the requests it sends: the revision
/// negotiated, and what `initialize` declared.
pub(crate) struct LegacyClient<'a> {
    pub(crate) version: &'static str,
    pub(crate) capabilities: &'a Map<String, Value>,
    pub(crate) info: &'a Value,
    pub(crate) log_level: Option<LogLevel>,
}

/// Admits the `_meta` of a request in a legacy session: optional, with keys of the `_meta`
/// syntax, and a `progressToken` of a request id's shape; the version, capabilities,
/// client info and log level are the session's.
pub(crate) fn admit_legacy_request(
    meta: RawMeta,
    client: &LegacyClient<'_>,
) -> Result<RequestMeta, Error> {
    let meta = match meta {
        RawMeta::Absent => Box::default(),
        RawMeta::Object(fields) => fields,
        RawMeta::NotObject => return Err(Error::invalid_params("_meta must be an object")),
    };
    if !meta.keys_valid {
        return Err(Error::invalid_params(
            "_meta contains an invalid key or non-JSON value",
        ));
    }
    let progress_token = match &meta.progress_token {
        None => None,
        Some(v) => Some(RequestId::read(v).map_err(|_| {
            Error::invalid_params(
                "progressToken must be a string of at most 256 bytes or an int64 integer",
            )
        })?),
    };
    let text = |v: Option<Value>| match v {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    Ok(RequestMeta {
        protocol_version: client.version,
        client_capabilities: client.capabilities.clone(),
        client_info: Some(ReadClientInfo::from_value(client.info.clone())),
        log_level: client.log_level,
        progress_token,
        traceparent: text(meta.traceparent),
        tracestate: text(meta.tracestate),
        baggage: text(meta.baggage),
    })
}

/// Checks the shape of a notification's `_meta` (optional, keys only).
pub(crate) fn admit_notification(meta: &RawMeta) -> Result<(), Error> {
    match meta {
        RawMeta::Absent => Ok(()),
        RawMeta::Object(f) if f.keys_valid => Ok(()),
        RawMeta::Object(_) => Err(Error::invalid_params(
            "_meta contains an invalid key or non-JSON value",
        )),
        RawMeta::NotObject => Err(Error::invalid_params("_meta must be an object")),
    }
}

#[inline]
fn check_client_capabilities(caps: &Map<String, Value>) -> Result<(), Error> {
    // No capabilities (as most requests declare): nothing to look up.
    if caps.is_empty() {
        return Ok(());
    }
    let must_be_object = |key: &str| -> Result<Option<&Map<String, Value>>, Error> {
        match caps.get(key) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(_) => Err(Error::invalid_params(format!(
                "Client capability {key} must be an object"
            ))),
        }
    };
    let sub_objects = |m: &Map<String, Value>, parent: &str, keys: &[&str]| {
        for k in keys {
            if m.get(*k).is_some_and(|v| !v.is_object()) {
                return Err(Error::invalid_params(format!(
                    "Client capability {parent}.{k} must be an object"
                )));
            }
        }
        Ok(())
    };
    must_be_object("roots")?;
    if let Some(s) = must_be_object("sampling")? {
        sub_objects(s, "sampling", &["context", "tools"])?;
    }
    if let Some(e) = must_be_object("elicitation")? {
        sub_objects(e, "elicitation", &["form", "url"])?;
    }
    if let Some(x) = must_be_object("experimental")?
        && !x.values().all(Value::is_object)
    {
        return Err(Error::invalid_params(
            "Client capability experimental must map names to objects",
        ));
    }
    if let Some(x) = must_be_object("extensions")? {
        let ok = x
            .iter()
            .all(|(k, v)| is_valid_meta_key(k) && has_prefix(k) && v.is_object());
        if !ok {
            return Err(Error::invalid_params(
                "Client capability extensions must map prefixed identifiers to objects",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With several problems, the error reported is the first in a fixed order: name and
    /// version, then title, description and websiteUrl, then icons.
    #[test]
    fn client_info_errors_keep_their_order() {
        let message = |info: Value| {
            let read = match <ReadClientInfo as serde::Deserialize>::deserialize(&info) {
                Ok(read) => read,
                Err(_) => return "unreadable".to_owned(),
            };
            // Read from the bytes too: both ways give the same verdict.
            let bytes = serde_json::from_str::<ReadClientInfo>(&info.to_string())
                .map(|r| r.admit().is_ok());
            assert_eq!(bytes.ok(), Some(read.admit().is_ok()), "{info}");
            match read.admit() {
                Ok(()) => "ok".to_owned(),
                Err(e) => e.message().to_owned(),
            }
        };
        let cases = [
            (
                serde_json::json!({"version": "1", "title": 5, "icons": 1}),
                "Client info must include string name and version",
            ),
            (
                serde_json::json!({"name": 1, "version": "1"}),
                "Client info must include string name and version",
            ),
            (
                serde_json::json!({"name": "a", "version": "1", "websiteUrl": 5, "title": 5}),
                "Client info title must be a string",
            ),
            (
                serde_json::json!({"name": "a", "version": "1", "icons": "x", "websiteUrl": 1, "description": 1}),
                "Client info description must be a string",
            ),
            (
                serde_json::json!({"name": "a", "version": "1", "icons": [{"src": "s"}, {}]}),
                "Client info icons must be a list of icons with a string src",
            ),
            (
                serde_json::json!({"name": "a", "version": "1", "icons": [], "other": 1}),
                "ok",
            ),
            (
                serde_json::json!("x"),
                "Client info must include string name and version",
            ),
        ];
        for (info, expected) in cases {
            assert_eq!(message(info.clone()), expected, "{info}");
        }
    }

    /// `protocolVersion` is read as text, a supported one kept as its constant: from the
    /// bytes and from a parsed value it comes to the same verdict, in the same order
    /// (string first, then the header mirror, then support), and an admitted request
    /// names the version it sent.
    #[test]
    fn protocol_version_reads_the_same_both_ways() {
        let verdict = |meta: RawMeta, header: Option<&str>| {
            let check = |sent: &str| match header {
                Some(h) if h != sent => Err(Error::invalid_params("mirror")),
                _ => Ok(()),
            };
            let mirror: Option<VersionMirror<'_>> = header.map(|_| &check as VersionMirror<'_>);
            match admit_request(meta, mirror) {
                Ok(m) => Ok(m.protocol_version),
                Err(e) => Err((e.code(), e.message().to_owned())),
            }
        };
        let cases = [
            (r#""2026-07-28""#, Ok("2026-07-28")),
            (r#""2026\u002d07-28""#, Ok("2026-07-28")),
            (r#""2025-06-18""#, Err("Unsupported protocol version")),
            (r#""""#, Err("Unsupported protocol version")),
            ("7", Err("must be a string")),
            ("null", Err("must be a string")),
            (r#"["2026-07-28"]"#, Err("must be a string")),
            (r#"{"v":"2026-07-28"}"#, Err("must be a string")),
        ];
        for (version, expected) in cases {
            let text = format!(
                r#"{{"{KEY_PROTOCOL_VERSION}":{version},"{KEY_CLIENT_CAPABILITIES}":{{}}}}"#
            );
            let value: Value = serde_json::from_str(&text).expect("valid JSON");
            for header in [None, Some("2026-07-28"), Some("other")] {
                let from_bytes = verdict(serde_json::from_str(&text).expect("reads"), header);
                let from_value = verdict(RawMeta::from_value(Some(value.clone())), header);
                assert_eq!(from_bytes, from_value, "{version} {header:?}");
                let sent = value[KEY_PROTOCOL_VERSION].as_str();
                match (&from_bytes, expected) {
                    // A string that differs from the header fails the mirror first.
                    (Err((_, m)), _)
                        if sent.is_some() && header.is_some_and(|h| Some(h) != sent) =>
                    {
                        assert_eq!(m, "mirror", "{version} {header:?}")
                    }
                    (Ok(v), Ok(want)) => assert_eq!(*v, want),
                    (Err((code, m)), Err(want)) => {
                        assert!(m.contains(want), "{version}: {m}");
                        assert!(*code == -32602 || *code == -32022, "{version}: {code}");
                    }
                    (got, want) => panic!("{version} {header:?}: {got:?}, expected {want:?}"),
                }
            }
        }
    }

    /// The reserved keys skip the byte scan; they must pass it too.
    #[test]
    fn reserved_keys_pass_the_full_check() {
        for key in [
            KEY_PROTOCOL_VERSION,
            KEY_CLIENT_CAPABILITIES,
            KEY_CLIENT_INFO,
            KEY_LOG_LEVEL,
        ] {
            assert!(key.contains('/'), "reserved keys have a prefix");
            assert!(presa_rules::meta::is_valid_key(key), "{key}");
        }
        // Every key `MetaFields::slot` reads skips the scan: each must pass it, and
        // each must be read (so none is skipped unchecked by mistake).
        for key in [
            KEY_PROGRESS_TOKEN,
            KEY_LOG_LEVEL,
            KEY_PROTOCOL_VERSION,
            KEY_CLIENT_INFO,
            KEY_CLIENT_CAPABILITIES,
            "traceparent",
            "tracestate",
            "baggage",
        ] {
            assert!(presa_rules::meta::is_valid_key(key), "{key}");
            let mut fields = MetaFields::default();
            if key == KEY_CLIENT_INFO || key == KEY_PROTOCOL_VERSION {
                // Read before the slots; its syntax passes.
                assert!(fields.slot(key).is_none() && fields.keys_valid);
                continue;
            }
            assert!(fields.slot(key).is_some() && fields.keys_valid, "{key}");
        }
        let mut fields = MetaFields::default();
        assert!(fields.slot("bad key").is_none() && !fields.keys_valid);
    }

    #[test]
    fn meta_key_syntax() {
        for ok in [
            "progressToken",
            "io.modelcontextprotocol/protocolVersion",
            "com.example.mcp/x",
            "a/",
            "traceparent",
            "",
            "a-b.c/x_y.z-1",
            "a1.b-2.c/x",
            "x9/1",
        ] {
            assert!(is_valid_meta_key(ok), "{ok}");
        }
        for bad in [
            "/x", "1a/x", "a-/x", "a..b/x", "-x", "x-", "a/b/c", "a b", ".a/x", "a./x", "a.1/x",
            "a_b/x", "é/x", "a/é", "a/x.", "a/_x",
        ] {
            assert!(!is_valid_meta_key(bad), "{bad}");
        }
    }
}
