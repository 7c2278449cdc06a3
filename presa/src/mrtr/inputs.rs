//! Asking the client from a handler: elicitation (form and URL), sampling and roots, the
//! capability check of wire section 10.2, and the typed answers.
//!
//! An ask looks for its answer among those given so far in this call; when there is none
//! it records the request. Asks are cheap and several can be made before any is awaited,
//! so one round can ask for several inputs:
//!
//! ```no_run
//! # async fn f(ctx: presa::RequestContext) -> Result<String, presa::mrtr::InputRequired> {
//! # #[derive(serde::Deserialize, schemars::JsonSchema, presa::ElicitForm)] struct Name { name: String }
//! let name = ctx.elicit::<Name>("user_name", "What is your name?");
//! let roots = ctx.roots("client_roots");
//! let name = name.get()?;   // a missing answer: the call is answered input_required,
//! let roots = roots.get()?; // asking for every input still missing
//! # Ok(String::new()) }
//! ```

use crate::context::RequestContext;
use crate::error::Error;
use crate::schema::CompiledSchema;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::fmt;

/// A handler's signal that the call needs input the client has not given yet. Propagate
/// it with `?`: the pipeline then answers `input_required` with every missing input,
/// whatever the handler returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputRequired;

impl fmt::Display for InputRequired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("input required from the client")
    }
}

impl std::error::Error for InputRequired {}

impl From<InputRequired> for Error {
    fn from(_: InputRequired) -> Self {
        // Replaced by the input_required result (or -32021, or -32603 where input is not
        // permitted) before anything is sent.
        Error::internal()
    }
}

impl From<InputRequired> for crate::registry::resource::ResourceError {
    fn from(e: InputRequired) -> Self {
        crate::registry::resource::ResourceError::Protocol(e.into())
    }
}

/// A type that can be an elicitation form: a struct of flat primitive fields. Derive it
/// with `#[derive(presa::ElicitForm)]` (beside `Deserialize` and `JsonSchema`), which
/// checks every field at compile time.
pub trait ElicitForm: DeserializeOwned + JsonSchema {}

/// A field type an elicitation form may hold: a string, a number, an integer, a boolean,
/// a string enum (a unit-only enum deriving `ElicitForm`), a list of such an enum (a
/// multi-select), or an `Option` of any of these.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a field of an elicitation form",
    label = "not a flat primitive",
    note = "form fields are strings, numbers, integers, booleans, string enums (unit-only enums deriving `presa::ElicitForm`), lists of such an enum, or `Option`s of these"
)]
pub trait FormField {}

/// A unit-only enum usable as a form field (a string enum); derive it with
/// `#[derive(presa::ElicitForm)]`.
pub trait FormEnum {}

macro_rules! form_fields {
    ($($t:ty),*) => {$(impl FormField for $t {})*};
}
form_fields!(
    String, bool, i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, f32, f64
);

impl<T: FormField> FormField for Option<T> {}
impl<T: FormEnum> FormField for Vec<T> {}
impl<T: FormEnum> FormField for T {}

/// One input asked of the client.
#[must_use = "call `get()?` to require the answer (or `try_get()` for an optional one)"]
pub struct Ask<T> {
    answer: Option<T>,
    ctx: RequestContext,
    key: String,
}

impl<T> Ask<T> {
    /// The answer, or [`InputRequired`] when the client has not given it yet (the call is
    /// then answered `input_required`).
    pub fn get(self) -> Result<T, InputRequired> {
        match self.answer {
            Some(a) => Ok(a),
            None => {
                self.ctx.inputs().demand(&self.key);
                Err(InputRequired)
            }
        }
    }

    /// The answer if the client gave it; a missing answer does not make the call
    /// `input_required` by itself.
    pub fn try_get(self) -> Option<T> {
        self.answer
    }
}

/// The answer to a form elicitation.
#[derive(Clone, Debug, PartialEq)]
pub enum Elicitation<T> {
    /// The user submitted the form.
    Accepted(T),
    /// The user declined.
    Declined,
    /// The user dismissed the request.
    Cancelled,
}

/// The answer to a URL elicitation. `Accepted` means the user consented to open the URL,
/// not that the interaction there has finished: check that yourself on the retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UrlElicitation {
    /// The user agreed to open the URL.
    Accepted,
    /// The user declined.
    Declined,
    /// The user dismissed the request.
    Cancelled,
}

/// One root the client exposes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One message of a sampling request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SamplingMessage {
    /// `user` or `assistant`.
    pub role: crate::Role,
    /// A content block, or a list of them.
    pub content: Value,
}

/// A sampling request (`sampling/createMessage`). Sampling is deprecated in 2026-07-28;
/// it is kept because clients still support it.
#[derive(Clone, Debug, PartialEq)]
#[must_use]
pub struct SamplingRequest {
    params: Map<String, Value>,
    messages: Vec<SamplingMessage>,
}

impl SamplingRequest {
    /// A request for at most `max_tokens` tokens.
    pub fn new(max_tokens: u32) -> Self {
        let mut params = Map::new();
        params.insert("maxTokens".into(), Value::from(max_tokens.max(1)));
        SamplingRequest {
            params,
            messages: Vec::new(),
        }
    }

    /// Adds a user message with text.
    pub fn user(self, text: impl Into<String>) -> Self {
        self.message(
            crate::Role::User,
            json!({"type": "text", "text": text.into()}),
        )
    }

    /// Adds an assistant message with text.
    pub fn assistant(self, text: impl Into<String>) -> Self {
        self.message(
            crate::Role::Assistant,
            json!({"type": "text", "text": text.into()}),
        )
    }

    /// Adds a message with any content (a block or a list of blocks, such as `tool_use`
    /// and `tool_result`).
    pub fn message(mut self, role: crate::Role, content: Value) -> Self {
        self.messages.push(SamplingMessage { role, content });
        self
    }

    /// Sets the system prompt.
    pub fn system_prompt(mut self, text: impl Into<String>) -> Self {
        self.params
            .insert("systemPrompt".into(), Value::from(text.into()));
        self
    }

    /// Sets the temperature.
    pub fn temperature(mut self, t: f64) -> Self {
        if let Some(n) = serde_json::Number::from_f64(t) {
            self.params.insert("temperature".into(), Value::Number(n));
        }
        self
    }

    /// Offers tools to the model (needs the client's `sampling.tools`).
    pub fn tools(mut self, tools: Value) -> Self {
        self.params.insert("tools".into(), tools);
        self
    }

    /// Sets `includeContext` (needs the client's `sampling.context` unless `"none"`).
    pub fn include_context(mut self, value: &str) -> Self {
        self.params
            .insert("includeContext".into(), Value::from(value));
        self
    }

    /// Checks the message rules of `client/sampling.mdx`: at least one message, and every
    /// assistant `tool_use` followed by a user message holding only the matching
    /// `tool_result`s.
    fn check(&self) -> Result<(), String> {
        if self.messages.is_empty() {
            return Err("a sampling request needs at least one message".into());
        }
        let blocks = |c: &Value| -> Vec<Value> {
            match c {
                Value::Array(a) => a.clone(),
                other => vec![other.clone()],
            }
        };
        let kind = |b: &Value| b.get("type").and_then(Value::as_str).map(str::to_owned);
        for (i, m) in self.messages.iter().enumerate() {
            let content = blocks(&m.content);
            let results: Vec<&Value> = content
                .iter()
                .filter(|b| kind(b).as_deref() == Some("tool_result"))
                .collect();
            if !results.is_empty() && results.len() != content.len() {
                return Err(format!("message {i} mixes tool results with other content"));
            }
            let uses: Vec<String> = content
                .iter()
                .filter(|b| kind(b).as_deref() == Some("tool_use"))
                .filter_map(|b| b.get("id").and_then(Value::as_str).map(str::to_owned))
                .collect();
            if uses.is_empty() {
                continue;
            }
            let next = self.messages.get(i + 1).ok_or_else(|| {
                format!("the tool uses of message {i} are not followed by their results")
            })?;
            let answered: Vec<String> = blocks(&next.content)
                .iter()
                .filter(|b| kind(b).as_deref() == Some("tool_result"))
                .filter_map(|b| {
                    b.get("toolUseId")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .collect();
            if next.role != crate::Role::User || uses.iter().any(|u| !answered.contains(u)) {
                return Err(format!(
                    "the tool uses of message {i} must be answered by the next (user) message"
                ));
            }
        }
        Ok(())
    }

    fn to_params(&self) -> Result<Value, String> {
        let mut params = self.params.clone();
        params.insert(
            "messages".into(),
            serde_json::to_value(&self.messages).map_err(|e| e.to_string())?,
        );
        Ok(Value::Object(params))
    }
}

/// The client's answer to a sampling request.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SamplingResponse {
    /// Who produced it (normally `assistant`).
    pub role: crate::Role,
    /// A content block, or a list of them.
    pub content: Value,
    /// The model that answered.
    pub model: String,
    /// Why sampling stopped.
    #[serde(default)]
    pub stop_reason: Option<String>,
}

impl SamplingResponse {
    /// The text of the answer's text blocks.
    pub fn text(&self) -> String {
        let blocks = match &self.content {
            Value::Array(a) => a.clone(),
            other => vec![other.clone()],
        };
        blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("")
    }
}

/// The kinds of input, with what each needs of the client (wire section 10.2).
pub(crate) fn needs_elicitation_form(caps: &Map<String, Value>) -> Option<Value> {
    match caps.get("elicitation") {
        Some(Value::Object(e)) if e.is_empty() || e.contains_key("form") => None,
        _ => Some(json!({"elicitation": {"form": {}}})),
    }
}

pub(crate) fn needs_elicitation_url(caps: &Map<String, Value>) -> Option<Value> {
    match caps.get("elicitation") {
        Some(Value::Object(e)) if e.contains_key("url") => None,
        _ => Some(json!({"elicitation": {"url": {}}})),
    }
}

pub(crate) fn needs_sampling(caps: &Map<String, Value>, params: &Value) -> Option<Value> {
    let sampling = caps.get("sampling").and_then(Value::as_object);
    let mut need = Map::new();
    let uses_tools = params.get("tools").is_some() || params.get("toolChoice").is_some();
    if uses_tools && !sampling.is_some_and(|s| s.contains_key("tools")) {
        need.insert("tools".into(), json!({}));
    }
    let context = params.get("includeContext").and_then(Value::as_str);
    if context.is_some_and(|c| c != "none") && !sampling.is_some_and(|s| s.contains_key("context"))
    {
        need.insert("context".into(), json!({}));
    }
    if sampling.is_none() || !need.is_empty() {
        Some(json!({ "sampling": need }))
    } else {
        None
    }
}

pub(crate) fn needs_roots(caps: &Map<String, Value>) -> Option<Value> {
    match caps.get("roots") {
        Some(Value::Object(_)) => None,
        _ => Some(json!({"roots": {}})),
    }
}

/// Merges capability requirements (deep, objects only).
pub(crate) fn merge(into: &mut Map<String, Value>, from: &Value) {
    if let Value::Object(from) = from {
        for (k, v) in from {
            match (into.get_mut(k), v) {
                (Some(Value::Object(a)), Value::Object(_)) => merge(a, v),
                _ => {
                    into.insert(k.clone(), v.clone());
                }
            }
        }
    }
}

/// Checks a form schema against the flat primitive subset of wire section 10.1.
pub(crate) fn check_form_schema(schema: &Value) -> Result<(), String> {
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .ok_or("an elicitation form is an object with properties")?;
    for (name, p) in props {
        let ty = p.get("type").and_then(Value::as_str);
        let ok = match ty {
            Some("string" | "number" | "integer" | "boolean") => true,
            Some("array") => p
                .get("items")
                .is_some_and(|i| i.get("enum").is_some() || i.get("anyOf").is_some()),
            _ => p.get("enum").is_some() || p.get("oneOf").is_some(),
        };
        if !ok {
            return Err(format!(
                "field {name:?} is not a flat primitive (string, number, integer, boolean, enum or multi-select)"
            ));
        }
    }
    Ok(())
}

/// Whether `alternatives` is a list of titled string constants, `{"const": "..", "title": ..}`.
fn titled_constants(alternatives: &Value) -> bool {
    alternatives.as_array().is_some_and(|a| {
        !a.is_empty()
            && a.iter()
                .all(|b| b.get("const").is_some_and(Value::is_string))
    })
}

/// Puts a titled enum field in the shapes the schema names. A single choice is
/// `{"type": "string", "oneOf": [{"const", "title"}..]}`: the type sits beside the
/// alternatives (schemars puts it in each). A multi-select is an array whose `items` are
/// an `anyOf` of the alternatives (schemars writes `oneOf`; for distinct constants the
/// two accept the same values).
fn titled_enum_shape(field: &mut serde_json::Map<String, Value>) {
    if field.get("oneOf").is_some_and(titled_constants) {
        field.insert("type".into(), Value::String("string".into()));
    }
    if let Some(Value::Object(items)) = field.get_mut("items")
        && items.get("oneOf").is_some_and(titled_constants)
        && let Some(alternatives) = items.remove("oneOf")
    {
        items.remove("type");
        items.insert("anyOf".into(), alternatives);
    }
}

/// The requested schema for a form type: flat, inlined, without `$schema` or `title`.
pub(crate) fn form_schema<T: JsonSchema>() -> Result<Value, String> {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Value::Object(m) = &mut schema {
        m.remove("$schema");
        m.remove("title");
        m.remove("$defs");
        if let Some(Value::Object(props)) = m.get_mut("properties") {
            for p in props.values_mut() {
                // The integer types' ranges, before `format` (which names them) goes.
                crate::extract::bound_integers(p, 0);
                if let Value::Object(p) = p {
                    p.remove("format");
                    // `Option<T>` fields: a single type; optionality is `required`.
                    if let Some(Value::Array(types)) = p.get("type").cloned() {
                        let non_null: Vec<Value> =
                            types.into_iter().filter(|t| t != "null").collect();
                        if non_null.len() == 1 {
                            p.insert("type".into(), non_null[0].clone());
                        }
                    }
                    titled_enum_shape(p);
                }
            }
        }
    }
    check_form_schema(&schema)?;
    Ok(schema)
}

impl RequestContext {
    /// Asks the user to fill in a form whose fields are `T`'s. `T` derives
    /// `Deserialize`, `JsonSchema` and [`presa::ElicitForm`](crate::ElicitForm), which
    /// checks at compile time that its fields are flat primitives. The answer is checked
    /// against the requested schema and deserialized. Needs the client's `elicitation`
    /// (form) capability.
    pub fn elicit<T: ElicitForm>(&self, key: &str, message: &str) -> Ask<Elicitation<T>> {
        let schema = match form_schema::<T>() {
            Ok(s) => s,
            Err(why) => {
                tracing::error!(
                    key,
                    "elicitation form {}: {why}",
                    std::any::type_name::<T>()
                );
                self.inputs().fail(Error::internal());
                return self.ask_missing(key);
            }
        };
        let params = json!({"mode": "form", "message": message, "requestedSchema": schema});
        let needs = needs_elicitation_form(self.client_capabilities());
        self.ask(key, "elicitation/create", params, needs, |answer| {
            let action = answer.get("action").and_then(Value::as_str);
            match action {
                Some("accept") => {
                    let content = answer.get("content").cloned().unwrap_or(json!({}));
                    let compiled = CompiledSchema::compile(&schema).map_err(|_| ())?;
                    compiled.validate(&content).map_err(|_| ())?;
                    crate::extract::from_checked_value(content)
                        .map(Elicitation::Accepted)
                        .map_err(|_| ())
                }
                Some("decline") => Ok(Elicitation::Declined),
                Some("cancel") => Ok(Elicitation::Cancelled),
                _ => Err(()),
            }
        })
    }

    /// Asks the user to open a URL (for flows that must not pass through the client, such
    /// as third-party sign-in). The URL must be `http` or `https` with a host and no user
    /// information, and must carry no credentials or personal data. Needs the client's
    /// `elicitation.url` capability.
    pub fn elicit_url(&self, key: &str, message: &str, url: &str) -> Ask<UrlElicitation> {
        if let Err(why) = check_url(url) {
            tracing::error!(key, "URL elicitation: {why}");
            self.inputs().fail(Error::internal());
            return self.ask_missing(key);
        }
        let params = json!({"mode": "url", "message": message, "url": url});
        let needs = needs_elicitation_url(self.client_capabilities());
        self.ask(
            key,
            "elicitation/create",
            params,
            needs,
            |answer| match answer.get("action").and_then(Value::as_str) {
                Some("accept") => Ok(UrlElicitation::Accepted),
                Some("decline") => Ok(UrlElicitation::Declined),
                Some("cancel") => Ok(UrlElicitation::Cancelled),
                _ => Err(()),
            },
        )
    }

    /// Asks the client's model for a completion. Deprecated in 2026-07-28 (kept because
    /// clients still support it). Needs the client's `sampling` capability (and
    /// `sampling.tools` / `sampling.context` when the request uses them).
    #[deprecated(
        note = "sampling is deprecated in MCP 2026-07-28; it still works with clients that declare it"
    )]
    pub fn sample(&self, key: &str, request: SamplingRequest) -> Ask<SamplingResponse> {
        let params = match request.check().and_then(|()| request.to_params()) {
            Ok(p) => p,
            Err(why) => {
                tracing::error!(key, "sampling request: {why}");
                self.inputs().fail(Error::internal());
                return self.ask_missing(key);
            }
        };
        let needs = needs_sampling(self.client_capabilities(), &params);
        self.ask(key, "sampling/createMessage", params, needs, |answer| {
            serde_json::from_value::<SamplingResponse>(answer.clone()).map_err(|_| ())
        })
    }

    /// Asks the client for its roots. Deprecated in 2026-07-28. Needs the client's
    /// `roots` capability.
    #[deprecated(
        note = "roots are deprecated in MCP 2026-07-28; they still work with clients that declare them"
    )]
    pub fn roots(&self, key: &str) -> Ask<Vec<Root>> {
        let needs = needs_roots(self.client_capabilities());
        self.ask(key, "roots/list", json!({}), needs, |answer| {
            let roots = answer.get("roots").cloned().ok_or(())?;
            serde_json::from_value::<Vec<Root>>(roots).map_err(|_| ())
        })
    }

    /// Whether the client declared form elicitation.
    pub fn supports_elicitation(&self) -> bool {
        needs_elicitation_form(self.client_capabilities()).is_none()
    }

    /// Whether the client declared URL elicitation.
    pub fn supports_url_elicitation(&self) -> bool {
        needs_elicitation_url(self.client_capabilities()).is_none()
    }

    /// Whether the client declared sampling.
    pub fn supports_sampling(&self) -> bool {
        needs_sampling(self.client_capabilities(), &json!({})).is_none()
    }

    /// Whether the client declared roots.
    pub fn supports_roots(&self) -> bool {
        needs_roots(self.client_capabilities()).is_none()
    }

    fn ask<T>(
        &self,
        key: &str,
        method: &'static str,
        params: Value,
        needs: Option<Value>,
        parse: impl FnOnce(&Value) -> Result<T, ()>,
    ) -> Ask<T> {
        let inputs = self.inputs();
        let answer = match inputs.answer(key) {
            Some(raw) => match parse(&raw) {
                Ok(a) => {
                    inputs.accept(key, raw);
                    Some(a)
                }
                Err(()) => {
                    inputs.fail(Error::invalid_params(format!(
                        "Invalid input response for {key}: it does not match the request"
                    )));
                    None
                }
            },
            None => {
                inputs.record(key, json!({"method": method, "params": params}), needs);
                None
            }
        };
        Ask {
            answer,
            ctx: self.clone(),
            key: key.to_owned(),
        }
    }

    fn ask_missing<T>(&self, key: &str) -> Ask<T> {
        Ask {
            answer: None,
            ctx: self.clone(),
            key: key.to_owned(),
        }
    }
}

fn check_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or("the URL must be http or https")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.is_empty() {
        return Err("the URL needs a host".into());
    }
    if authority.contains('@') {
        return Err("the URL must not carry user information".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A form's integer fields carry their type's range, so what the user may enter is
    /// what the answer can be read into.
    #[test]
    fn form_integers_carry_their_range() {
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        #[allow(dead_code, reason = "only its schema is read")]
        struct Order {
            count: u32,
            delta: Option<i64>,
            small: u8,
        }
        let schema = form_schema::<Order>().expect("a form schema");
        let props = &schema["properties"];
        assert_eq!(props["count"]["minimum"], json!(0), "{schema}");
        assert_eq!(props["count"]["maximum"], json!(u32::MAX), "{schema}");
        assert_eq!(props["delta"]["minimum"], json!(i64::MIN), "{schema}");
        assert_eq!(props["delta"]["type"], json!("integer"), "{schema}");
        assert_eq!(props["small"]["maximum"], json!(255), "{schema}");
        assert!(props["count"].get("format").is_none(), "{schema}");
    }

    #[test]
    fn sampling_tool_results_follow_tool_uses() {
        let ok = SamplingRequest::new(10)
            .user("hi")
            .message(
                crate::Role::Assistant,
                json!([{"type": "tool_use", "id": "a", "name": "t", "input": {}}]),
            )
            .message(
                crate::Role::User,
                json!([{"type": "tool_result", "toolUseId": "a", "content": []}]),
            );
        assert!(ok.check().is_ok());
        let dangling = SamplingRequest::new(10)
            .user("hi")
            .message(
                crate::Role::Assistant,
                json!([{"type": "tool_use", "id": "a", "name": "t", "input": {}}]),
            )
            .user("next");
        assert!(dangling.check().is_err());
        let mixed = SamplingRequest::new(10).message(
            crate::Role::User,
            json!([{"type": "tool_result", "toolUseId": "a", "content": []}, {"type": "text", "text": "x"}]),
        );
        assert!(mixed.check().is_err());
        assert!(SamplingRequest::new(10).check().is_err());
    }

    #[test]
    fn urls_are_checked() {
        assert!(check_url("https://example.com/x").is_ok());
        assert!(check_url("https://user@example.com/").is_err());
        assert!(check_url("ftp://example.com").is_err());
        assert!(check_url("https:///path").is_err());
    }

    #[test]
    fn needs_are_merged() {
        let mut m = Map::new();
        merge(&mut m, &json!({"elicitation": {"url": {}}}));
        merge(&mut m, &json!({"sampling": {"tools": {}}}));
        merge(&mut m, &json!({"elicitation": {"form": {}}}));
        assert_eq!(
            Value::Object(m),
            json!({"elicitation": {"url": {}, "form": {}}, "sampling": {"tools": {}}})
        );
    }
}
