//! The JSON-RPC 2.0 envelope (wire reference section 1): decoding one inbound message into
//! a request, a notification or an ignored response, and encoding responses.
//!
//! Batching is forbidden in 2026-07-28, so an array is an invalid request. Errors whose id
//! cannot be read leave the `id` member out: the 2026-07-28 schema forbids `"id": null`.

use crate::error::Error;
use crate::wire::meta::RawMeta;
use crate::wire::scan::{Cursor, Expected, FromSerde, Members, Next, Scan, ScanSeed, Unread};
use serde::Serialize;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// The longest string id presa accepts, in bytes.
pub const MAX_ID_BYTES: usize = 256;

/// A JSON-RPC request id: a string or an integer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// A string id.
    Str(String),
    /// An integer id in the int64 range.
    Int(i64),
}

impl RequestId {
    /// Reads an id: `Ok(Some)` for a valid id, `Ok(None)` when the value is not an id at
    /// all (unreadable), `Err(id)` when it is readable but outside presa's bounds (a string
    /// over 256 bytes, an integer outside int64), so the error can still echo it.
    pub(crate) fn read(value: &Value) -> Result<RequestId, Option<Value>> {
        match value {
            Value::String(s) if s.len() <= MAX_ID_BYTES => Ok(RequestId::Str(s.clone())),
            Value::String(_) => Err(Some(value.clone())),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Ok(RequestId::Int(i)),
                None if n.is_u64() => Err(Some(value.clone())),
                None => Err(None),
            },
            _ => Err(None),
        }
    }

    /// The id as a JSON value.
    pub fn to_value(&self) -> Value {
        match self {
            RequestId::Str(s) => Value::from(s.as_str()),
            RequestId::Int(i) => Value::from(*i),
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Str(s) => write!(f, "{s:?}"),
            RequestId::Int(i) => write!(f, "{i}"),
        }
    }
}

impl Serialize for RequestId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Str(v) => s.serialize_str(v),
            RequestId::Int(v) => s.serialize_i64(*v),
        }
    }
}

/// One decoded inbound request.
#[derive(Debug)]
#[non_exhaustive]
pub struct Request {
    /// The request id.
    pub id: RequestId,
    /// The method name: a method presa serves is its static name (no copy per request).
    pub method: Cow<'static, str>,
    /// The params object (empty when absent), without its `_meta`. (The transports'
    /// own decoder may hold a `tools/call`'s `name` and `arguments` apart, see
    /// `lifted`; such requests never leave presa, and [`decode`] never does it.)
    pub params: Map<String, Value>,
    /// `params._meta`, as admission reads it.
    pub(crate) meta: RawMeta,
    /// A `tools/call`'s `name` and `arguments`, when the transports' decoder held them
    /// apart from `params` (never in what [`decode`] returns).
    pub(crate) lifted: Lifted,
}

/// A `tools/call`'s `name` and `arguments` held apart from the params `Map`: the common
/// call then builds no map (nor its two keys) for its params at all. Only
/// [`decode_lifting`] does this, and only when `id` and `method` come before `params`
/// (as every client writes them); [`RequestParams`] reads both places as one.
///
/// Boxed, and only when a member is lifted: the request is moved through every layer
/// between the bytes and the handler, and the fewer bytes it holds inline, the cheaper
/// each move.
#[derive(Debug, Default)]
pub(crate) struct Lifted(Option<Box<LiftedMembers>>);

#[derive(Debug, Default)]
struct LiftedMembers {
    name: Option<Value>,
    arguments: Option<Value>,
}

impl Lifted {
    fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    #[inline]
    fn members(&mut self) -> &mut LiftedMembers {
        self.0.get_or_insert_default()
    }

    #[inline]
    fn get(&self, key: &str) -> Option<&Value> {
        let m = self.0.as_deref()?;
        match key {
            "name" => m.name.as_ref(),
            "arguments" => m.arguments.as_ref(),
            _ => None,
        }
    }

    fn take(&mut self, key: &str) -> Option<Value> {
        let m = self.0.as_deref_mut()?;
        match key {
            "name" => m.name.take(),
            "arguments" => m.arguments.take(),
            _ => None,
        }
    }

    /// Puts the members back into `map` (a member given twice counts with its last
    /// value, as in a map; both were read after any of the map's own).
    fn merge_into(self, map: &mut Map<String, Value>) {
        let Some(m) = self.0 else { return };
        if let Some(name) = m.name {
            map.insert("name".into(), name);
        }
        if let Some(arguments) = m.arguments {
            map.insert("arguments".into(), arguments);
        }
    }
}

/// A request's params as the pipeline reads them: the `Map`, and the members a
/// `tools/call` may hold apart ([`Lifted`]).
#[derive(Debug, Default)]
pub(crate) struct RequestParams {
    map: Map<String, Value>,
    lifted: Lifted,
}

impl RequestParams {
    /// The params of a request whose members were moved out of it.
    pub(crate) fn new(map: Map<String, Value>, lifted: Lifted) -> RequestParams {
        RequestParams { map, lifted }
    }

    /// A member.
    #[inline]
    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        self.lifted.get(key).or_else(|| self.map.get(key))
    }

    /// Takes a member out.
    #[inline]
    pub(crate) fn take(&mut self, key: &str) -> Option<Value> {
        self.lifted.take(key).or_else(|| self.map.remove(key))
    }

    /// Every member: the map's, in its order, then those held apart.
    pub(crate) fn members(&self) -> impl Iterator<Item = (&str, &Value)> + Clone {
        let lifted = [
            ("name", self.lifted.get("name")),
            ("arguments", self.lifted.get("arguments")),
        ];
        self.map
            .iter()
            .map(|(k, v)| (k.as_str(), v))
            .chain(lifted.into_iter().filter_map(|(k, v)| Some((k, v?))))
    }

    /// The params as one `Map`.
    pub(crate) fn into_map(self) -> Map<String, Value> {
        let mut map = self.map;
        self.lifted.merge_into(&mut map);
        map
    }
}

impl From<Map<String, Value>> for RequestParams {
    fn from(map: Map<String, Value>) -> Self {
        RequestParams {
            map,
            lifted: Lifted::default(),
        }
    }
}

/// One decoded inbound notification.
#[derive(Debug)]
#[non_exhaustive]
pub struct Notification {
    /// The method name (a method presa reads is its static name).
    pub method: Cow<'static, str>,
    /// The params object (empty when absent), without its `_meta`.
    pub params: Map<String, Value>,
    /// `params._meta`, as admission reads it.
    pub(crate) meta: RawMeta,
}

/// What one inbound frame turned out to be.
#[derive(Debug)]
pub enum Inbound {
    /// A request, to be answered exactly once.
    Request(Request),
    /// A notification, never answered.
    Notification(Notification),
    /// A response or error object sent by the client: the answer to a request the server
    /// sent in a legacy session (2026-07-28 servers send none, so there it is ignored).
    Response(Response),
}

/// A response the client sent.
#[derive(Debug)]
#[non_exhaustive]
pub struct Response {
    /// The id of the request it answers, when it could be read.
    pub id: Option<RequestId>,
    /// Its `result`, or its `error` object.
    pub outcome: Result<Value, Value>,
}

/// Why a frame could not be decoded into an [`Inbound`].
#[derive(Debug)]
pub struct Rejection {
    /// The error to send.
    pub error: Error,
    /// The id to echo, when one could be read.
    pub id: Option<Value>,
    /// Whether the frame was a notification (never answered on stdio; a 4xx on HTTP).
    pub notification: bool,
}

impl Rejection {
    fn new(error: Error, id: Option<Value>, notification: bool) -> Self {
        Rejection {
            error,
            id,
            notification,
        }
    }

    /// The JSON-RPC error response for this rejection.
    pub fn to_response(&self) -> String {
        encode_error(self.id.as_ref(), &self.error)
    }
}

/// Decodes raw bytes (one stdio line or one HTTP body) into a message.
///
/// A leading UTF-8 byte order mark is skipped. Non-UTF-8 or unparsable input is -32700
/// without an id. The envelope's members are read straight from the bytes, so a request
/// costs no tree for its outer object, and `params._meta` is read into the fields
/// admission checks. Members nobody reads are still parsed as values and dropped, so
/// every input is held to exactly the checks of a parse into a `Value` (number range,
/// escapes, nesting depth), and to one more: serde_json's private
/// `$serde_json::private::RawValue` key is refused wherever it stands (see
/// book/src/protocol-notes.md).
pub fn decode(bytes: &[u8]) -> Result<Inbound, Rejection> {
    decode_with(bytes, false)
}

/// Like [`decode`], for the transports: a `tools/call`'s `name` and `arguments` may be
/// held apart from `params` ([`Lifted`]); the pipeline reads both as one.
pub(crate) fn decode_lifting(bytes: &[u8]) -> Result<Inbound, Rejection> {
    decode_with(bytes, true)
}

#[inline]
fn decode_with(bytes: &[u8], lift: bool) -> Result<Inbound, Rejection> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    // Checked whole first: members skipped unread are not checked for UTF-8 otherwise.
    let parsed = std::str::from_utf8(bytes).ok().and_then(|text| {
        // The common message is read plainly by the cursor; what it gives up on,
        // serde_json reads (see scan.rs). Without the `fast` feature, serde_json reads
        // everything.
        #[cfg(feature = "fast")]
        let scanned = scan_frame(text, lift);
        #[cfg(not(feature = "fast"))]
        let scanned = None;
        scanned.or_else(|| parse_frame(text, lift))
    });
    answer(parsed)
}

/// Reads a message through serde_json: `None` when it is not JSON presa reads.
fn parse_frame(text: &str, lift: bool) -> Option<Frame> {
    let mut reader = serde_json::Deserializer::from_str(text);
    let frame = serde::de::DeserializeSeed::deserialize(FrameVisitor { lift }, &mut reader);
    frame.and_then(|f| reader.end().map(|()| f)).ok()
}

/// What a frame as read (`None`: not JSON) turns out to be.
fn answer(parsed: Option<Frame>) -> Result<Inbound, Rejection> {
    match parsed {
        Some(Frame::Object(envelope)) => classify(envelope),
        Some(Frame::Array) => Err(not_an_object(true)),
        Some(Frame::Other) => Err(not_an_object(false)),
        None => Err(not_json()),
    }
}

/// The -32700 rejection of a message that is not JSON presa reads.
fn not_json() -> Rejection {
    Rejection::new(
        Error::parse_error("Parse error: the message is not valid JSON"),
        None,
        false,
    )
}

/// Decodes an already parsed JSON value into a message. A value holding serde_json's
/// private `$serde_json::private::RawValue` key anywhere is -32700, as it is from bytes.
pub fn decode_value(value: Value) -> Result<Inbound, Rejection> {
    // Refused from bytes wherever it stands (`wire::RAW_TOKEN`); a value made in process
    // is held to the same rule.
    if super::holds_raw_token(&value) {
        return Err(not_json());
    }
    let Value::Object(obj) = value else {
        return Err(not_an_object(value.is_array()));
    };
    classify(envelope_of(obj))
}

/// The envelope of an already parsed object.
fn envelope_of(mut obj: Map<String, Value>) -> Envelope {
    Envelope {
        has_id: obj.contains_key("id"),
        id: obj.remove("id"),
        method: obj.remove("method").map(Method::of),
        jsonrpc_2_0: obj.get("jsonrpc").and_then(Value::as_str) == Some("2.0"),
        params: obj.remove("params").map(|p| match p {
            Value::Object(mut map) => {
                let meta = RawMeta::from_value(map.remove("_meta"));
                Params::Object(map, Lifted::default(), meta)
            }
            _ => Params::NotObject,
        }),
        result: obj.remove("result"),
        error: obj.remove("error"),
        // A parsed object holds each member once.
        duplicate: None,
    }
}

fn not_an_object(array: bool) -> Rejection {
    let message = if array {
        "Invalid Request: batching is not supported in this protocol revision"
    } else {
        "Invalid Request: a message must be a JSON object"
    };
    Rejection::new(Error::invalid_request(message), None, false)
}

/// The members of an inbound object that decide what it is. A member given twice counts
/// once, with its last value, as when the object is parsed into a map.
#[derive(Default)]
struct Envelope {
    has_id: bool,
    id: Option<Value>,
    method: Option<Method>,
    jsonrpc_2_0: bool,
    params: Option<Params>,
    /// The `result` member, when present (a response).
    result: Option<Value>,
    /// The `error` member, when present (an error response).
    error: Option<Value>,
    /// The first of `jsonrpc`, `id`, `method` and `params` given twice, if any: a gateway
    /// that reads the first and presa, the last, would disagree.
    duplicate: Option<&'static str>,
}

/// The `params` member: an object, with `_meta` read apart (and, when lifting, a
/// `tools/call`'s `name` and `arguments`), or something else.
#[derive(Debug)]
enum Params {
    Object(Map<String, Value>, Lifted, RawMeta),
    NotObject,
    /// An object that names one of the members presa reads twice (`name`, `arguments`,
    /// `uri`, `_meta`): a gateway that reads the first and presa, the last, would disagree.
    Duplicate(&'static str),
}

/// Reads `params`, lifting `name` and `arguments` out of the map when `lift` is set.
struct ParamsSeed {
    lift: bool,
}

impl<'de> serde::de::DeserializeSeed<'de> for ParamsSeed {
    type Value = Params;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Params, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ParamsSeed {
    type Value = Params;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("request params")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Params, A::Error> {
        read_params(&mut FromSerde::new(map), self.lift)
    }

    non_objects_are!(Params, Params::NotObject);
}

impl<'a> ScanSeed<'a> for ParamsSeed {
    fn scan(self, c: &mut Cursor<'a>) -> Result<Params, Unread> {
        c.object(|m| read_params(m, self.lift))
    }
}

/// Reads an object `params` member by member, lifting `name` and `arguments` out of the
/// map when `lift` is set.
#[inline]
fn read_params<'de, M: Members<'de>>(m: &mut M, lift: bool) -> Result<Params, M::Error> {
    #[derive(Clone, Copy)]
    enum Key {
        Name,
        Arguments,
        Meta,
        Uri,
    }
    const KEYS: Expected<4, Key> = Expected::keyed([
        ("name", Key::Name),
        ("arguments", Key::Arguments),
        ("_meta", Key::Meta),
        ("uri", Key::Uri),
    ]);
    let mut params = Map::new();
    let mut lifted = Lifted::default();
    let mut meta = RawMeta::Absent;
    // The members presa reads, each noted when read, so a second one is found; the object
    // is still read through to its end.
    let mut seen = [false; 4];
    let mut duplicate = None;
    loop {
        let next = m.next_of(&KEYS)?;
        if let Next::Known(key, name) = &next
            && std::mem::replace(&mut seen[*key as usize], true)
        {
            duplicate.get_or_insert(*name);
        }
        let key = match next {
            Next::Known(Key::Meta, _) => {
                meta = m.value()?;
                continue;
            }
            Next::Known(Key::Name, _) if lift => {
                lifted.members().name = Some(m.value::<super::Json>()?.0);
                continue;
            }
            Next::Known(Key::Arguments, _) if lift => {
                lifted.members().arguments = Some(m.value::<super::Json>()?.0);
                continue;
            }
            Next::Known(_, name) => Cow::Borrowed(name),
            Next::Key(key) => key,
            Next::End => {
                return Ok(match duplicate {
                    Some(name) => Params::Duplicate(name),
                    None => Params::Object(params, lifted, meta),
                });
            }
            Next::Number(_) => return Ok(Params::NotObject),
        };
        let value = m.value::<super::Json>()?.0;
        params.insert(key.into_owned(), value);
    }
}

/// One inbound frame as read from the bytes: an object's envelope, or what else it was.
enum Frame {
    Object(Envelope),
    Array,
    Other,
}

/// Reads one frame; with `lift`, the params of a `tools/call` request whose `id` and
/// `method` came first keep `name` and `arguments` apart ([`Lifted`]).
struct FrameVisitor {
    lift: bool,
}

impl<'de> serde::de::DeserializeSeed<'de> for FrameVisitor {
    type Value = Frame;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Frame, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for FrameVisitor {
    type Value = Frame;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Frame, A::Error> {
        read_frame(&mut FromSerde::new(map), self.lift)
    }

    // An array is told apart (batching is not supported); any other non-object is Other.
    non_objects_are!(Frame, Frame::Array, Frame::Other);
}

/// Reads a message's object member by member; with `lift`, the params of a `tools/call`
/// request whose `id` and `method` came first keep `name` and `arguments` apart.
#[inline]
fn read_frame<'de, M: Members<'de>>(m: &mut M, lift: bool) -> Result<Frame, M::Error> {
    #[derive(Clone, Copy)]
    enum Key {
        JsonRpc,
        Id,
        Method,
        Params,
    }
    const KEYS: Expected<4, Key> = Expected::keyed([
        ("jsonrpc", Key::JsonRpc),
        ("id", Key::Id),
        ("method", Key::Method),
        ("params", Key::Params),
    ]);
    let mut envelope = Envelope::default();
    let mut seen = [false; 4];
    loop {
        let next = m.next_of(&KEYS)?;
        if let Next::Known(key, name) = &next
            && std::mem::replace(&mut seen[*key as usize], true)
        {
            envelope.duplicate.get_or_insert(*name);
        }
        match next {
            Next::Known(Key::Id, _) => {
                envelope.has_id = true;
                envelope.id = Some(m.value::<super::Json>()?.0);
            }
            Next::Known(Key::Method, _) => envelope.method = Some(m.value()?),
            Next::Known(Key::Params, _) => {
                // Only a request (its id read already) that is a tools/call so far.
                let lift = lift
                    && envelope.has_id
                    && matches!(&envelope.method, Some(Method::Name(method)) if method == "tools/call");
                envelope.params = Some(m.seed(ParamsSeed { lift })?);
            }
            Next::Known(Key::JsonRpc, _) => envelope.jsonrpc_2_0 = m.value::<JsonRpc2>()?.0,
            Next::Key(key) if key == "result" => {
                envelope.result = Some(m.value::<super::Json>()?.0);
            }
            Next::Key(key) if key == "error" => {
                envelope.error = Some(m.value::<super::Json>()?.0);
            }
            Next::Key(_) => {
                m.value::<super::Any>()?;
            }
            Next::End => return Ok(Frame::Object(envelope)),
            Next::Number(_) => return Ok(Frame::Other),
        }
    }
}

/// Reads a message with the [`Cursor`]: `None` when it gives up.
#[cfg(any(test, feature = "fast"))]
fn scan_frame(text: &str, lift: bool) -> Option<Frame> {
    let mut c = Cursor::new(text)?;
    let frame = c.object(|m| read_frame(m, lift)).ok()?;
    c.end().ok()?;
    Some(frame)
}

/// Whether a `jsonrpc` member is the string "2.0".
struct JsonRpc2(bool);

impl<'de> serde::Deserialize<'de> for JsonRpc2 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        super::Text::deserialize(d).map(|text| JsonRpc2(text.0.as_deref() == Some("2.0")))
    }
}

impl<'a> Scan<'a> for JsonRpc2 {
    #[inline]
    fn scan(c: &mut Cursor<'a>) -> Result<Self, Unread> {
        const TWO: Expected<1> = Expected::new(["2.0"]);
        if c.known(&TWO).is_some() {
            return Ok(JsonRpc2(true));
        }
        super::Text::scan(c).map(|text| JsonRpc2(text.0.as_deref() == Some("2.0")))
    }
}

/// A message's `method` member as read: a string (a method presa serves or reads as its
/// static name, so the common request copies nothing for it), or any other value, kept
/// for the error it gets.
enum Method {
    Name(Cow<'static, str>),
    NotText,
}

/// The methods whose names are kept static: those presa serves, and the notification
/// it acts on.
fn known_method(name: &str) -> Option<&'static str> {
    super::methods::SERVED
        .iter()
        .chain(&[super::methods::CANCELLED])
        .find(|m| **m == name)
        .copied()
}

impl Method {
    fn of(value: Value) -> Method {
        match value {
            Value::String(s) => Method::named(Cow::Owned(s)),
            _ => Method::NotText,
        }
    }

    /// A string `method`: its static name when presa knows it, else the string itself.
    fn named(name: Cow<'_, str>) -> Method {
        Method::Name(match known_method(&name) {
            Some(known) => Cow::Borrowed(known),
            None => Cow::Owned(name.into_owned()),
        })
    }
}

impl<'de> serde::Deserialize<'de> for Method {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        super::Json::deserialize(d).map(|json| Method::of(json.0))
    }
}

impl<'a> Scan<'a> for Method {
    #[inline]
    fn scan(c: &mut Cursor<'a>) -> Result<Self, Unread> {
        // The served methods by a look at their bytes; any other string (the
        // cancellation notification among them) read and looked up as serde_json's is.
        const SERVED: Expected<10> = Expected::new(super::methods::SERVED);
        if let Some(((), name)) = c.known(&SERVED) {
            return Ok(Method::Name(Cow::Borrowed(name)));
        }
        match c.plain() {
            Some(name) => Ok(Method::named(Cow::Borrowed(name))),
            None => c.delegate(),
        }
    }
}

/// Decides what an envelope is, with the errors of wire section 1 in their order.
#[inline]
fn classify(envelope: Envelope) -> Result<Inbound, Rejection> {
    let Envelope {
        has_id,
        id: id_value,
        method,
        jsonrpc_2_0,
        params,
        result,
        error,
        duplicate,
    } = envelope;

    // A frame without a method is a response (or garbage).
    let Some(method) = method else {
        let outcome = match (result, error) {
            (_, Some(error)) => Some(Err(error)),
            (Some(result), None) => Some(Ok(result)),
            (None, None) => None,
        };
        if let Some(outcome) = outcome {
            let id = id_value.and_then(|v| RequestId::read(&v).ok());
            return Ok(Inbound::Response(Response { id, outcome }));
        }
        let id = id_value.and_then(|v| readable_id(&v));
        return Err(Rejection::new(
            Error::invalid_request("Invalid Request: missing method"),
            id,
            false,
        ));
    };
    let notification = !has_id;

    // The id, when there is one, is read first so every later error can echo it.
    let id = match &id_value {
        None => None,
        Some(v) => match RequestId::read(v) {
            Ok(id) => Some(id),
            Err(echo) => {
                return Err(Rejection::new(
                    Error::invalid_request(
                        "Invalid Request: id must be a string of at most 256 bytes or an int64 integer",
                    ),
                    echo,
                    false,
                ));
            }
        },
    };
    let echo = id.as_ref().map(RequestId::to_value);

    let duplicate = duplicate.or(match &params {
        Some(Params::Duplicate(name)) => Some(*name),
        _ => None,
    });
    if let Some(name) = duplicate {
        // A repeated id is echoed in neither of its forms.
        let echo = if name == "id" { None } else { echo };
        return Err(Rejection::new(
            Error::invalid_request(format!("Invalid Request: duplicate member `{name}`")),
            echo,
            notification,
        ));
    }

    if !jsonrpc_2_0 {
        return Err(Rejection::new(
            Error::invalid_request("Expected a JSON-RPC 2.0 request"),
            echo,
            notification,
        ));
    }
    let Method::Name(method) = method else {
        return Err(Rejection::new(
            Error::invalid_request("Invalid Request: method must be a string"),
            echo,
            notification,
        ));
    };
    let (mut params, mut lifted, meta) = match params {
        None => (Map::new(), Lifted::default(), RawMeta::Absent),
        Some(Params::Object(p, lifted, meta)) => (p, lifted, meta),
        Some(Params::NotObject) => {
            return Err(Rejection::new(
                Error::invalid_params("Request params must be an object"),
                echo,
                notification,
            ));
        }
        // Refused above.
        Some(Params::Duplicate(_)) => {
            return Err(Rejection::new(Error::internal(), echo, notification));
        }
    };
    // Lifted only for a request that is a tools/call in the end (a second `method`
    // member after `params` could have changed it): otherwise the members go back.
    if !lifted.is_empty() && (id.is_none() || method != "tools/call") {
        std::mem::take(&mut lifted).merge_into(&mut params);
    }
    Ok(match id {
        Some(id) => Inbound::Request(Request {
            id,
            method,
            params,
            meta,
            lifted,
        }),
        None => Inbound::Notification(Notification {
            method,
            params,
            meta,
        }),
    })
}

fn readable_id(v: &Value) -> Option<Value> {
    match RequestId::read(v) {
        Ok(id) => Some(id.to_value()),
        Err(echo) => echo,
    }
}

/// Like [`encode_result`], reusing the result's own buffer: the envelope's head is put
/// in front of it (a move of its bytes, usually within the capacity it has) instead of
/// copying the result into a second buffer.
pub(crate) fn encode_result_owned(id: &RequestId, mut result: String) -> String {
    let mut buffer = [0; 64];
    match int_head(id, &mut buffer) {
        // The common case: the head is written on the stack (nothing allocated) and put
        // in front with one move of the body, which the shaping functions leave room for.
        Some(head) => result.insert_str(0, head),
        None => result.insert_str(0, &result_head(id, 0)),
    }
    result.push('}');
    result
}

/// The head for an integer id, written into `buffer`; `None` for a string id.
fn int_head<'b>(id: &RequestId, buffer: &'b mut [u8; 64]) -> Option<&'b str> {
    let RequestId::Int(i) = id else {
        return None;
    };
    let mut digits = itoa::Buffer::new();
    let mut len = 0;
    for part in [HEAD_OPEN, digits.format(*i), HEAD_CLOSE] {
        // At most 22 + 20 + 10 bytes: always fits.
        buffer
            .get_mut(len..len + part.len())?
            .copy_from_slice(part.as_bytes());
        len += part.len();
    }
    std::str::from_utf8(buffer.get(..len)?).ok()
}

/// The response head around its id.
const HEAD_OPEN: &str = r#"{"jsonrpc":"2.0","id":"#;
const HEAD_CLOSE: &str = r#","result":"#;

/// Encodes a success response whose `result` is already serialized JSON.
pub fn encode_result(id: &RequestId, result: &str) -> String {
    let mut out = result_head(id, result.len() + 1);
    out.push_str(result);
    out.push('}');
    out
}

/// `{"jsonrpc":"2.0","id":<id>,"result":`, with room for `more` bytes after it.
fn result_head(id: &RequestId, more: usize) -> String {
    let mut head = String::with_capacity(48 + more);
    head.push_str(HEAD_OPEN);
    push_id(&mut head, id);
    head.push_str(HEAD_CLOSE);
    head
}

/// Encodes an error response; `id` is left out when it could not be read.
pub fn encode_error(id: Option<&Value>, error: &Error) -> String {
    #[derive(Serialize)]
    struct ErrorResponse<'a> {
        jsonrpc: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a Value>,
        error: ErrorObject<'a>,
    }
    #[derive(Serialize)]
    struct ErrorObject<'a> {
        code: i64,
        message: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        data: Option<&'a Value>,
    }
    let response = ErrorResponse {
        jsonrpc: "2.0",
        id,
        error: ErrorObject {
            code: error.code(),
            message: error.message(),
            data: error.data(),
        },
    };
    // Serializing borrowed strings, integers and values into a String cannot fail.
    serde_json::to_string(&response).unwrap_or_else(|_| {
        r#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"}}"#.to_owned()
    })
}

/// Encodes a notification frame.
pub fn encode_notification(method: &str, params: &Value) -> String {
    #[derive(Serialize)]
    struct Frame<'a> {
        jsonrpc: &'static str,
        method: &'a str,
        params: &'a Value,
    }
    let frame = Frame {
        jsonrpc: "2.0",
        method,
        params,
    };
    // A borrowed string and a value always serialize.
    serde_json::to_string(&frame).unwrap_or_default()
}

/// A request the server sends the client (in a legacy session).
pub(crate) fn encode_request(id: &RequestId, method: &str, params: &Value) -> String {
    #[derive(Serialize)]
    struct Frame<'a> {
        jsonrpc: &'static str,
        id: &'a RequestId,
        method: &'a str,
        params: &'a Value,
    }
    let frame = Frame {
        jsonrpc: "2.0",
        id,
        method,
        params,
    };
    // A borrowed string, an id and a value always serialize.
    serde_json::to_string(&frame).unwrap_or_default()
}

fn push_id(out: &mut String, id: &RequestId) {
    match id {
        RequestId::Int(i) => super::write::push_int(out, *i),
        RequestId::Str(s) => super::write::push_str(out, s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reject(v: Value) -> Rejection {
        match decode_value(v) {
            Err(r) => r,
            Ok(m) => panic!("expected a rejection, got {m:?}"),
        }
    }

    #[test]
    fn ids_are_bounded_and_echoed_when_readable() {
        let long = "x".repeat(257);
        let r = reject(json!({"jsonrpc":"2.0","id":long,"method":"m"}));
        assert_eq!(r.error.code(), -32600);
        assert_eq!(r.id, Some(Value::from(long)));
        let r = reject(json!({"jsonrpc":"2.0","id":null,"method":"m"}));
        assert_eq!(r.id, None);
        let r = reject(json!({"jsonrpc":"2.0","id":1.5,"method":"m"}));
        assert_eq!(r.id, None);
        let ok = decode_value(json!({"jsonrpc":"2.0","id":"x".repeat(256),"method":"m"}));
        assert!(matches!(ok, Ok(Inbound::Request(_))));
    }

    /// Frames of every kind and shape the decoders must agree on.
    const FRAMES: &[&str] = &[
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":"a","method":"m","params":{"x":[1,{"y":null}]},"extra":{"z":1}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":1}"#,
        r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
        r#"{"jsonrpc":2.0,"id":1,"method":"m"}"#,
        r#"{"id":1,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":[1],"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#,
        r#"{"jsonrpc":"2.0","method":"m","params":"x"}"#,
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"a","method":"b"}"#,
        r#"{"jsonrpc":"1.0","jsonrpc":"2.0","id":1,"method":"m"}"#,
        r#"{"jsonrpc":"2\u002e0","id":1,"method":"m"}"#,
        r#"{"json\u0072pc":"2.0","\u0069d":1,"method":"m","params":{"\u005fmeta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28","bad\u0020key":1},"n\u0061me":"x"}}"#,
        r#"{"jsonrpc":"2.0 ","id":1,"method":"m"}"#,
        r#"{"jsonrpc":{"v":"2.0"},"id":1,"method":"m"}"#,
        r#"{"jsonrpc":["2.0"],"id":1,"method":"m"}"#,
        r#"{"jsonrpc":null,"id":1,"method":"m"}"#,
        r#"{"jsonrpc":true,"id":1,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":"\u00e9","method":"m\n"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"traceparent":"t","x/y":[1],"progressToken":"p"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"bad key":1,"baggage":2}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":[1,{"a":2}]}}"#,
        r#"{"jsonrpc":"2.0","method":"n","params":{"_meta":"s"}}"#,
        r#"{"jsonrpc":"2.0","method":"n","params":{"_meta":null}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{},"_meta":{"progressToken":1}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progressToken":1,"progressToken":2}}}"#,
        r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#,
        r#"[]"#,
        r#""text""#,
        r#"12"#,
        r#"null"#,
        r#"true"#,
        r#"{}"#,
    ];

    /// Frames that give a member presa reads twice (a parse into a value keeps the last).
    const DUPLICATES: &[&str] = &[
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"a","method":"b"}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","method":"prompts/get","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{},"params":{}}"#,
        r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":7,"method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","name":"b"}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","n\u0061me":"b"}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{},"arguments":{"x":1}}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"a://x","uri":"a://y"}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{},"_meta":{}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":{},"_meta":{}}}"#,
    ];

    /// A member presa reads, given twice, is an invalid request (-32600) for both readers,
    /// lifting or not: a gateway in front that read the first would disagree with the
    /// last. The id is echoed unless it is the member repeated; a notification's is a
    /// rejected notification.
    #[test]
    fn duplicate_members_are_invalid_requests() {
        for &frame in DUPLICATES {
            for decoded in [decode(frame.as_bytes()), decode_lifting(frame.as_bytes())] {
                let Err(rejection) = decoded else {
                    panic!("accepted: {frame}");
                };
                assert_eq!(rejection.error.code(), -32600, "{frame}");
                assert!(
                    rejection.error.message().contains("duplicate member"),
                    "{frame}"
                );
                let id_repeated = frame.contains(r#""id":1,"id":2"#);
                let note = !frame.contains(r#""id""#);
                assert_eq!(rejection.notification, note, "{frame}");
                let echo = (!id_repeated && !note).then(|| json!(7));
                assert_eq!(rejection.id, echo, "{frame}");
            }
            for lift in [false, true] {
                scanned_as_parsed(frame, lift);
            }
        }
        // Another member given twice is read as a parse reads it: the last one.
        let other = r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"a","cursor":"b"}}"#;
        let Ok(Inbound::Request(r)) = decode(other.as_bytes()) else {
            panic!("{other}");
        };
        assert_eq!(r.params.get("cursor"), Some(&json!("b")));
    }

    /// Reading the envelope straight from bytes must classify every frame exactly as
    /// parsing it into a value first would.
    #[test]
    fn decoding_bytes_agrees_with_decoding_a_value() {
        for &frame in FRAMES {
            let value: Value = serde_json::from_str(frame).expect("test frames are JSON");
            let decoded = decode(frame.as_bytes());
            // A member given twice: the bytes say so, a parsed value cannot (it kept the
            // last); duplicate_members_are_invalid_requests covers these.
            if decoded
                .as_ref()
                .is_err_and(|r| r.error.message().contains("duplicate member"))
            {
                continue;
            }
            let direct = format!("{:?}", decoded);
            let via_value = format!("{:?}", decode_value(value));
            assert_eq!(direct, via_value, "{frame}");
        }
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","x":{}1{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        for broken in [
            &b"{"[..],
            b"{\"id\":1,}",
            b"\xff",
            b"{\"a\":\"\xff\"}",
            b"",
            br#"{"jsonrpc":"2.0","id":1,"method":"m","x":1e400}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"a/b":"\ud800"}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":1e400}"#,
            br#"{"jsonrpc":{"v":1e400},"id":1,"method":"m"}"#,
            br#"{"jsonrpc":["\ud800"],"id":1,"method":"m"}"#,
            br#"{"jsonrpc":"\ud800","id":1,"method":"m"}"#,
            br#"[1e400]"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":[{"a":[1e400]}]}"#,
            deep.as_bytes(),
        ] {
            // The rule is agreement with a parse into a `Value`: with serde_json's
            // `arbitrary_precision` on somewhere in a build, that parse keeps `1e400`.
            let parses = std::str::from_utf8(broken)
                .ok()
                .is_some_and(|t| serde_json::from_str::<Value>(t).is_ok());
            if parses {
                // Only ever under that feature: in any other build each case is broken.
                assert!(super::super::number_token_live(), "{broken:?}");
                continue;
            }
            let r = decode(broken).err().map(|r| (r.error.code(), r.id));
            assert_eq!(r, Some((-32700, None)), "{broken:?}");
        }
    }

    /// Requests as clients send them: the bench's call, a call with every `_meta` key
    /// admission reads and arguments of every kind, a notification and a response.
    const WHOLE: &[&str] = &[
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello from the presa bench"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"presa-bench","version":"0.0.0"}}}}"#,
        r#"{ "jsonrpc" : "2.0" , "id" : "r-7" , "method" : "tools/call" , "params" : { "_meta" : { "progressToken" : 12 , "io.modelcontextprotocol/logLevel" : "info" , "traceparent" : "00-ab-cd-01" , "io.modelcontextprotocol/protocolVersion" : "2026-07-28" , "io.modelcontextprotocol/clientCapabilities" : { "elicitation" : { } } , "io.modelcontextprotocol/clientInfo" : { "version" : "1" , "title" : "T" , "name" : "n" } , "x.y/z" : [ 1 ] } , "name" : "add" , "arguments" : { "a" : -1 , "b" : 1.5e3 , "c" : [ true , null , "é\"" ] , "d" : { "e" : 10 } } , "task" : { } } }"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r-7","reason":"gone","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        r#"{"jsonrpc":"2.0","id":99,"result":{"content":[]},"error":null}"#,
    ];

    /// Whether the cursor (scan.rs) read `text`; then it must have read it exactly as
    /// serde_json does.
    fn scanned_as_parsed(text: &str, lift: bool) -> bool {
        let Some(scanned) = scan_frame(text, lift) else {
            return false;
        };
        let parsed = parse_frame(text, lift);
        assert!(
            parsed.is_some(),
            "the cursor read what serde_json refuses: {text}"
        );
        assert_eq!(
            format!("{:?}", answer(Some(scanned))),
            format!("{:?}", answer(parsed)),
            "{text}"
        );
        true
    }

    /// The cursor reads exactly as serde_json does, or leaves the message to it: over
    /// every frame the other tests use, and over every one-byte change to whole requests
    /// (each byte removed, replaced by and preceded by each byte JSON's grammar turns
    /// on), which makes broken, truncated, escaped, duplicated, deep and odd messages.
    #[test]
    fn the_cursor_reads_as_serde_json_or_leaves_the_message() {
        // The common messages are the cursor's to read (else the test below tests nothing).
        for text in WHOLE {
            assert!(scanned_as_parsed(text, true), "{text}");
            assert!(scanned_as_parsed(text, false), "{text}");
        }
        let bytes: &[u8] = b" \"\\{}[],:01-.eE$\tan\x01/";
        let mut frames: Vec<Vec<u8>> = FRAMES.iter().map(|f| f.as_bytes().to_vec()).collect();
        for text in WHOLE {
            let text = text.as_bytes();
            for i in 0..=text.len() {
                let (head, tail) = text.split_at(i);
                if let Some((_, rest)) = tail.split_first() {
                    frames.push([head, rest].concat());
                    for &b in bytes {
                        frames.push([head, &[b], rest].concat());
                    }
                }
                for &b in bytes {
                    frames.push([head, &[b], tail].concat());
                }
            }
        }
        // Nesting around the cursor's own bound, the bound of what it hands over, and
        // serde_json's limit, in arrays and in objects.
        for n in (10..20).chain(60..70).chain(120..132) {
            for (open, close) in [("[", "]"), (r#"{"a":"#, "}")] {
                let arguments = format!("{}1{}", open.repeat(n), close.repeat(n));
                frames.push(
                    WHOLE[0]
                        .replace(r#""hello from the presa bench""#, &arguments)
                        .into(),
                );
            }
        }
        // Strings of every length around the eight-byte steps of the cursor's search, and
        // long ones, ending plainly, with an escape or with a control character, the same
        // text again before the name so that a key comes after it.
        for pad in (0..40).chain([500, 1000, 5000]) {
            let long = "x".repeat(pad);
            for text in [
                long.clone(),
                format!(r#"{long}\"q"#),
                format!(r#"{long}\\"#),
                format!(r#"{long}\u0041"#),
                format!("{long}\u{1}"),
            ] {
                let frame = WHOLE[0].replace("hello from the presa bench", &text);
                let before = format!(r#""x":"{text}","name":"echo""#);
                frames.push(frame.replacen(r#""name":"echo""#, &before, 1).into());
                frames.push(frame.into());
            }
        }
        // Each reader's short keys closing the text, where fewer than eight bytes follow
        // the opening quote (the cursor's look compares those bytes as they are), with
        // names of the same length, one byte longer or shorter beside them.
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28""#;
        let top = [
            "id", "ix", "xd", "ida", "i", "method", "methodx", "jsonrpc", "params",
        ];
        for key in top {
            frames.push(format!(r#"{{"jsonrpc":"2.0","method":"tools/call","{key}":3}}"#).into());
            frames.push(format!(r#"{{"id":1,"method":"tools/call","{key}":{{}}}}"#).into());
        }
        for key in ["name", "nam", "names", "_meta", "_met", "arguments"] {
            let params = format!(r#"{meta}}},"arguments":{{}},"{key}":"e"}}"#);
            frames.push(format!(r#"{{"id":1,"method":"tools/call","params":{{{params}}}"#).into());
        }
        for key in ["name", "nam", "names", "version", "versio", "versions"] {
            let info =
                format!(r#""io.modelcontextprotocol/clientInfo":{{"name":"n","{key}":"v"}}"#);
            let params = format!(r#"{meta},{info}}},"name":"e""#);
            frames
                .push(format!(r#"{{"id":1,"method":"tools/call","params":{{{params}}}}}"#).into());
        }
        let mut read = 0;
        for frame in &frames {
            let Ok(text) = std::str::from_utf8(frame) else {
                continue;
            };
            for lift in [false, true] {
                read += usize::from(scanned_as_parsed(text, lift));
            }
        }
        // Most changes leave a message the cursor reads or one it must leave; both kinds
        // are many (a cursor that read nothing would pass the comparisons above).
        assert!(read > frames.len() / 2, "{read} of {}", frames.len());
    }

    /// serde_json's private RawValue key is refused wherever it stands, first or not,
    /// escaped or not, in every member the decoders read (kept, lifted or read through),
    /// by both decoders and by `decode_value`; a key or a string that only looks like it
    /// is ordinary. serde_json's own `Value` parse reads the key's text afresh with a
    /// fresh nesting limit, so a chain of such keys is unbounded recursion: without the
    /// refusal, this test (in a debug build, on a worker's stack) aborts.
    #[test]
    fn raw_value_key_is_refused_wherever_it_stands() {
        let call = |arguments: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{arguments}}}}}"#
            )
        };
        let raw = r#""$serde_json::private::RawValue""#;
        let mut refused: Vec<String> = vec![
            format!(r#"{{{raw}:"{{}}"}}"#),
            format!(r#"{{"jsonrpc":"2.0",{raw}:"1","id":1,"method":"m"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":{{{raw}:"1"}},"method":"m"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":{{{raw}:""m""}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{{raw}:"{{}}"}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"a":1,{raw}:"1"}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":[{{"a":{{{raw}:"1"}}}}]}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":[{{{raw}:"1"}}]}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","x":{{"b":1,{raw}:"1"}}}}"#),
            format!(r#"{{"jsonrpc":{{{raw}:""2.0""}},"id":1,"method":"m"}}"#),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"_meta":{{"a/b":{{{raw}:"1"}}}}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"_meta":{{"io.modelcontextprotocol/clientInfo":{{"name":"c","version":"1","x":{{"y":1,{raw}:"1"}}}}}}}}}}"#
            ),
            call(&format!(r#"{{"x":{{{raw}:"1"}}}}"#)),
            call(&format!(r#"{{"x":[1,{{"y":2,{raw}:"1"}}]}}"#)),
            call(&format!(r#"{{{raw}:"{{}}"}}"#)),
            call(r#"{"$serde_json::private::RawValue":"1"}"#),
        ];
        // The chain that overflowed the stack: each level's text holds the next level,
        // nested 120 deep.
        let mut chain = "1".to_owned();
        for _ in 0..16 {
            let text = serde_json::to_string(&chain).expect("a string");
            chain = format!("{}{{{raw}:{text}}}{}", "[".repeat(120), "]".repeat(120));
        }
        refused.push(call(&format!(r#"{{"x":{chain}}}"#)));
        let accepted = [
            call(r#"{"x":"$serde_json::private::RawValue"}"#),
            call(r#"{"$serde_json::private::Rawvalue":"1"}"#),
            call(r#"{"$serde_json::private::":"1"}"#),
        ];
        std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn(move || {
                for frame in &refused {
                    for decoded in [decode(frame.as_bytes()), decode_lifting(frame.as_bytes())] {
                        let code = decoded.err().map(|r| r.error.code());
                        assert_eq!(code, Some(-32700), "{}", &frame[..frame.len().min(200)]);
                    }
                }
                for frame in &accepted {
                    assert!(decode(frame.as_bytes()).is_ok(), "{frame}");
                    assert!(decode_lifting(frame.as_bytes()).is_ok(), "{frame}");
                }
            })
            .expect("a thread")
            .join()
            .expect("no overflow, no panic");
        // Values made in process: serde_json's `json!` keeps the key as a key.
        for value in [
            json!({"jsonrpc":"2.0","id":1,"method":"m","params":{"$serde_json::private::RawValue":"1"}}),
            json!({"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[{"b":{"$serde_json::private::RawValue":1}}]}}),
            json!([{"$serde_json::private::RawValue":"1"}]),
        ] {
            let code = decode_value(value.clone()).err().map(|r| r.error.code());
            assert_eq!(code, Some(-32700), "{value}");
        }
        assert!(decode_value(json!({"jsonrpc":"2.0","id":1,"method":"m","params":{"x":"$serde_json::private::RawValue"}})).is_ok());
        // The same rule for a text a handler's `FromStr` type may read as JSON.
        use crate::wire::text_holds_raw_token as holds;
        assert!(holds(r#"{"$serde_json::private::RawValue":"1"}"#));
        assert!(holds(
            r#" [1,{"a":2,"\u0024serde_json::private::RawValue":"1"}] trailing"#
        ));
        for text in [
            "hello",
            "",
            "1e400",
            r#"{"a":"$serde_json::private::RawValue"}"#,
            r#"x{"$serde_json::private::RawValue":"1"}"#,
            &format!(
                r#"{}{{"$serde_json::private::RawValue":"1"}}"#,
                "[".repeat(200)
            ),
        ] {
            assert!(!holds(text), "{text:.60}");
        }
    }

    /// The transports' decoder holds a tools/call's `name` and `arguments` apart from
    /// the params map; read through `RequestParams` they are what the public decoder
    /// puts in the map, whatever the member order, duplicates or method.
    #[test]
    fn lifted_members_read_as_the_map() {
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;
        let frames = [
            // The common call: both lifted, the map left empty.
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi"}},{meta}}}}}"#
            ),
            // Other members stay in the map.
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"task":{{"ttl":1}},"name":"b","arguments":null,"inputResponses":{{}},{meta}}}}}"#
            ),
            // The id after params: nothing lifted.
            format!(r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"echo","arguments":{{}},{meta}}},"id":3}}"#),
            // Method after params: nothing lifted.
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"params":{{"name":"echo","arguments":{{}},{meta}}},"method":"tools/call"}}"#
            ),
            // Other methods with the same members: nothing lifted.
            r#"{"jsonrpc":"2.0","id":"x","method":"prompts/get","params":{"name":"p","arguments":{}}}"#
                .to_owned(),
            // No name, arguments not an object.
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":7}}"#.to_owned(),
        ];
        for (i, frame) in frames.iter().enumerate() {
            let Ok(Inbound::Request(plain)) = decode(frame.as_bytes()) else {
                panic!("{frame}");
            };
            let Ok(Inbound::Request(lifting)) = decode_lifting(frame.as_bytes()) else {
                panic!("{frame}");
            };
            assert!(plain.lifted.is_empty(), "{frame}");
            assert_eq!(lifting.method, plain.method);
            if i < 2 {
                assert!(!lifting.lifted.is_empty(), "{frame}");
                assert!(!lifting.params.contains_key("name"), "{frame}");
            } else if i < 5 {
                assert!(lifting.lifted.is_empty(), "{frame}");
            }
            let params = RequestParams::new(lifting.params, lifting.lifted);
            for key in ["name", "arguments", "task", "inputResponses", "x"] {
                assert_eq!(params.get(key), plain.params.get(key), "{frame} {key}");
            }
            let mut members: Vec<_> = params.members().collect();
            members.sort_by_key(|m| m.0);
            let mut expected: Vec<_> = plain.params.iter().map(|(k, v)| (k.as_str(), v)).collect();
            expected.sort_by_key(|m| m.0);
            assert_eq!(members, expected, "{frame}");
            assert_eq!(params.into_map(), plain.params, "{frame}");
        }
        // A tools/call notification is never lifted: it is not served.
        let n = r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a","arguments":{}}}"#;
        let Ok(Inbound::Notification(n)) = decode_lifting(n.as_bytes()) else {
            panic!("a notification");
        };
        assert!(n.params.contains_key("name") && n.params.contains_key("arguments"));
    }

    #[test]
    fn results_are_enveloped_the_same_in_place() {
        for id in [
            RequestId::Int(0),
            RequestId::Int(i64::MIN),
            RequestId::Int(i64::MAX),
            RequestId::Str("a\"b".into()),
        ] {
            for result in [r#"{"a":1}"#, "{}", ""] {
                let mut owned = String::with_capacity(result.len());
                owned.push_str(result);
                assert_eq!(encode_result_owned(&id, owned), encode_result(&id, result));
            }
        }
        assert_eq!(
            encode_result_owned(&RequestId::Int(-7), "{}".into()),
            r#"{"jsonrpc":"2.0","id":-7,"result":{}}"#
        );
    }

    #[test]
    fn error_without_readable_id_has_no_id_member() {
        let r = reject(json!([1]));
        assert_eq!(
            r.to_response(),
            r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: batching is not supported in this protocol revision"}}"#
        );
    }

    /// The envelope reader's differential test: for generated messages, the cursor
    /// (scan.rs) reads exactly as serde_json does or leaves the message to it, and
    /// neither panics. The messages are requests, notifications and responses as
    /// clients write them (every member admission reads, and others), laid out compactly
    /// or with whitespace, with keys sometimes escaped, and often broken by one changed,
    /// removed or added byte. `PRESA_DIFF_CASES` sets the count (book/src/performance.md
    /// records a long run).
    mod differential {
        use super::super::{answer, parse_frame, scan_frame};
        use crate::wire::arbitrary::{cases, json_map, json_text, json_value};
        use proptest::prelude::*;
        use serde_json::{Map, Value, json};

        fn method() -> impl Strategy<Value = Value> {
            prop_oneof![
                6 => prop::sample::select(vec![
                    "tools/call", "tools/list", "resources/read", "prompts/get",
                    "server/discover", "subscriptions/listen", "notifications/cancelled",
                    "completion/complete", "initialize", "tasks/get",
                ]).prop_map(Value::from),
                1 => json_text().prop_map(Value::from),
                1 => json_value(1),
            ]
        }

        fn id() -> impl Strategy<Value = Option<Value>> {
            prop_oneof![
                4 => any::<i64>().prop_map(|i| Some(Value::from(i))),
                2 => json_text().prop_map(|s| Some(Value::from(s))),
                1 => Just(None),
                1 => json_value(1).prop_map(Some),
            ]
        }

        fn client_info() -> impl Strategy<Value = Value> {
            (json_text(), json_text(), json_map(1)).prop_map(|(name, version, mut rest)| {
                rest.insert("name".into(), Value::from(name));
                rest.insert("version".into(), Value::from(version));
                Value::Object(rest)
            })
        }

        fn meta() -> impl Strategy<Value = Map<String, Value>> {
            (
                prop_oneof![Just(json!("2026-07-28")), json_value(1)],
                prop_oneof![Just(json!({})), json_map(2).prop_map(Value::Object)],
                proptest::option::of(client_info()),
                proptest::option::of(prop_oneof![
                    any::<u32>().prop_map(Value::from),
                    json_text().prop_map(Value::from)
                ]),
                proptest::option::of(prop::sample::select(vec!["debug", "info", "error", "loud"])),
                json_map(1),
            )
                .prop_map(|(version, caps, info, progress, level, extra)| {
                    let mut m = extra;
                    m.insert("io.modelcontextprotocol/protocolVersion".into(), version);
                    m.insert("io.modelcontextprotocol/clientCapabilities".into(), caps);
                    if let Some(info) = info {
                        m.insert("io.modelcontextprotocol/clientInfo".into(), info);
                    }
                    if let Some(p) = progress {
                        m.insert("progressToken".into(), p);
                    }
                    if let Some(l) = level {
                        m.insert("io.modelcontextprotocol/logLevel".into(), Value::from(l));
                    }
                    m
                })
        }

        fn params() -> impl Strategy<Value = Option<Value>> {
            prop_oneof![
                6 => (json_text(), json_map(3), meta(), json_map(1)).prop_map(|(name, arguments, meta, extra)| {
                    let mut p = extra;
                    p.insert("name".into(), Value::from(name));
                    p.insert("arguments".into(), Value::Object(arguments));
                    p.insert("_meta".into(), Value::Object(meta));
                    Some(Value::Object(p))
                }),
                1 => Just(None),
                1 => json_value(2).prop_map(Some),
            ]
        }

        fn message() -> impl Strategy<Value = Value> {
            (
                prop_oneof![8 => Just(json!("2.0")), 1 => json_value(1)],
                id(),
                method(),
                params(),
                json_map(1),
                0..3u8,
            )
                .prop_map(|(jsonrpc, id, method, params, extra, kind)| {
                    let mut m = extra;
                    m.insert("jsonrpc".into(), jsonrpc);
                    if let Some(id) = id {
                        m.insert("id".into(), id);
                    }
                    match kind {
                        // A response.
                        0 => {
                            m.insert("result".into(), json!({"content": []}));
                        }
                        _ => {
                            m.insert("method".into(), method);
                            if let Some(p) = params {
                                m.insert("params".into(), p);
                            }
                        }
                    }
                    Value::Object(m)
                })
        }

        /// A message laid out as text, perhaps with whitespace and escaped keys, then
        /// perhaps changed by one byte.
        fn text() -> impl Strategy<Value = Vec<u8>> {
            (
                message(),
                prop::bool::weighted(0.2),
                prop::bool::weighted(0.2),
                prop::option::weighted(
                    0.5,
                    (
                        any::<prop::sample::Index>(),
                        0..3u8,
                        prop::sample::select(b" \"\\{}[],:01-.eE$\ta/".to_vec()),
                    ),
                ),
            )
                .prop_map(|(message, pretty, escape, change)| {
                    let mut text = if pretty {
                        serde_json::to_string_pretty(&message)
                    } else {
                        serde_json::to_string(&message)
                    }
                    .unwrap_or_default();
                    if escape {
                        text = text.replacen("\"name\"", "\"n\\u0061me\"", 1);
                    }
                    let mut bytes = text.into_bytes();
                    if let Some((at, how, byte)) = change
                        && !bytes.is_empty()
                    {
                        let i = at.index(bytes.len());
                        match how {
                            0 => {
                                bytes.remove(i);
                            }
                            1 => bytes[i] = byte,
                            _ => bytes.insert(i, byte),
                        }
                    }
                    bytes
                })
        }

        /// Runs the generated messages (each read twice, with and without lifting); a
        /// fifth or more of the reads must be the cursor's (else the comparison would test
        /// little: half the messages are broken on purpose, and most of those it leaves).
        #[test]
        fn the_envelope_reader_reads_as_serde_json() {
            let total = cases(2048);
            let read = std::cell::Cell::new(0u64);
            let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
                cases: total,
                failure_persistence: None,
                ..ProptestConfig::default()
            });
            let outcome = runner.run(&text(), |bytes| {
                let Ok(text) = std::str::from_utf8(&bytes) else {
                    return Ok(());
                };
                for lift in [false, true] {
                    if let Some(scanned) = scan_frame(text, lift) {
                        read.set(read.get() + 1);
                        let parsed = parse_frame(text, lift);
                        prop_assert!(
                            parsed.is_some(),
                            "the cursor read what serde_json refuses: {}",
                            text
                        );
                        prop_assert_eq!(
                            format!("{:?}", answer(Some(scanned))),
                            format!("{:?}", answer(parsed)),
                            "{}",
                            text
                        );
                    }
                }
                Ok(())
            });
            if let Err(e) = outcome {
                panic!("{e}");
            }
            let read = read.get();
            println!(
                "envelope reader: {total} messages, {read} reads by the cursor (of {}), 0 disagreements",
                2 * u64::from(total)
            );
            assert!(
                read * 5 >= u64::from(total) * 2,
                "only {read} of {} reads were the cursor's",
                2 * u64::from(total)
            );
        }
    }
}
