//! Framework parameters: values a handler receives from the request rather than from the
//! client's arguments, in the style of axum's extractors. `#[tool]`, `#[prompt]` and
//! `#[resource]` recognise a parameter as one of these by its type (any type that
//! implements [`FromContext`]), inject it, and leave it out of the input schema. Also
//! how arguments the input schema accepted are read into their types.

use crate::context::RequestContext;
use crate::error::Error;
use serde_json::Value;
use std::any::{Any, TypeId};
use std::ops::Deref;
use std::sync::Arc;

/// A value a handler can receive from its request's context.
///
/// Implement it for your own types to make them injectable parameters.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a framework parameter presa can inject",
    label = "not an injectable type",
    note = "injectable types implement `presa::extract::FromContext`: `RequestContext`, `State<T>`, or your own",
    note = "a `#[resource]` parameter is either a variable of the URI template, named like it, or an injectable type"
)]
pub trait FromContext: Sized + Send + 'static {
    /// Builds the value for one request.
    fn from_context(ctx: &RequestContext) -> Result<Self, Error>;

    /// The shared state this parameter needs, checked when the server is built.
    fn required_state() -> Option<StateRequirement> {
        None
    }
}

/// A state type a handler needs: checked when the server is built, so a missing
/// `.state(…)` is an error at start-up, not at call time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateRequirement {
    /// The type's id.
    pub type_id: TypeId,
    /// The type's name, for the error message.
    pub type_name: &'static str,
}

impl FromContext for RequestContext {
    fn from_context(ctx: &RequestContext) -> Result<Self, Error> {
        Ok(ctx.clone())
    }
}

/// Who the request acts for; a request without a principal is refused (-32600, HTTP
/// 403) before the handler runs. Take `Option<Principal>` to serve anonymous requests too.
impl FromContext for crate::auth::Principal {
    fn from_context(ctx: &RequestContext) -> Result<Self, Error> {
        ctx.principal().cloned().ok_or_else(|| {
            Error::invalid_request("Forbidden: this operation needs an authenticated principal")
                .with_status(403)
        })
    }
}

/// Who the request acts for, when anyone.
impl FromContext for Option<crate::auth::Principal> {
    fn from_context(ctx: &RequestContext) -> Result<Self, Error> {
        Ok(ctx.principal().cloned())
    }
}

/// Shared application state given to the server with
/// [`ServerBuilder::state`](crate::ServerBuilder::state).
#[derive(Debug)]
pub struct State<T: ?Sized>(pub Arc<T>);

impl<T: ?Sized> Clone for State<T> {
    fn clone(&self) -> Self {
        State(Arc::clone(&self.0))
    }
}

impl<T: ?Sized> Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Any + Send + Sync> FromContext for State<T> {
    fn from_context(ctx: &RequestContext) -> Result<Self, Error> {
        ctx.state::<T>().map(State).ok_or_else(|| {
            tracing::error!(
                "state of type {} is missing although the server was built",
                std::any::type_name::<T>()
            );
            Error::internal()
        })
    }

    fn required_state() -> Option<StateRequirement> {
        Some(StateRequirement {
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
        })
    }
}

/// All of a tool's arguments as one value of a type deriving `Deserialize` and
/// `JsonSchema`, which then supplies the whole input schema.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Args<T>(pub T);

/// Deserializes an argument the input schema has accepted. JSON Schema counts `3.0` as
/// an integer, so the schema lets it through to an integer parameter, but serde's
/// integer types take only numbers written without a fraction: a value holding such a
/// number is read as it is first (so a `Value` or `f64` parameter gets exactly what was
/// sent), and only if that fails, again with every whole float within ±(2^53 − 1)
/// written as an integer. That second reading rewrites the whole value, so a `Value`
/// field beside an integer field of one struct gets `3` for `3.0` too (the book says
/// so); the error reported is the second reading's.
#[inline]
pub(crate) fn from_checked_value<T: serde::de::DeserializeOwned>(
    mut value: Value,
) -> serde_json::Result<T> {
    if !has_whole_float(&value, 0) {
        return serde_json::from_value(value);
    }
    match T::deserialize(&value) {
        Ok(v) => Ok(v),
        Err(_) => {
            integers_for_whole_floats(&mut value, 0);
            serde_json::from_value(value)
        }
    }
}

/// How deep [`has_whole_float`] and [`integers_for_whole_floats`] look (the schema
/// validator bounds nesting too; deeper floats are left as they are).
const WHOLE_FLOAT_DEPTH: usize = 64;

fn whole_float_as_integer(n: &serde_json::Number) -> Option<Value> {
    if n.is_i64() || n.is_u64() {
        return None;
    }
    let f = n.as_f64()?;
    if f.fract() != 0.0 || !f.is_finite() {
        return None;
    }
    // Only within ±(2^53 − 1), where a float holds every integer exactly: past it,
    // `9007199254740993.0` is already `…992`, and no integer can be told from the float.
    const SAFE: f64 = crate::schema::MAX_HEADER_INTEGER as f64;
    (-SAFE..=SAFE).contains(&f).then(|| Value::from(f as i64))
}

fn has_whole_float(value: &Value, depth: usize) -> bool {
    match value {
        Value::Number(n) => whole_float_as_integer(n).is_some(),
        _ if depth >= WHOLE_FLOAT_DEPTH => false,
        Value::Array(a) => a.iter().any(|v| has_whole_float(v, depth + 1)),
        Value::Object(m) => m.values().any(|v| has_whole_float(v, depth + 1)),
        _ => false,
    }
}

fn integers_for_whole_floats(value: &mut Value, depth: usize) {
    match value {
        Value::Number(n) => {
            if let Some(i) = whole_float_as_integer(n) {
                *value = i;
            }
        }
        _ if depth >= WHOLE_FLOAT_DEPTH => {}
        Value::Array(a) => a
            .iter_mut()
            .for_each(|v| integers_for_whole_floats(v, depth + 1)),
        Value::Object(m) => m
            .values_mut()
            .for_each(|v| integers_for_whole_floats(v, depth + 1)),
        _ => {}
    }
}

/// Writes each integer type's range into an input (or elicitation form) schema: schemars gives `i32`, `i64`,
/// `isize` only a `format`, and `u32`, `u64`, `usize` only `minimum: 0`, and presa
/// does not assert formats, so a value out of range passed the schema and then failed
/// to deserialize. With the bounds, the client sees the range, and the schema refuses
/// what the parameter could not take. Narrower types (`u8`, `i16`, …) already carry
/// theirs; 128-bit ones are left as they are.
pub(crate) fn bound_integers(schema: &mut Value, depth: usize) {
    const I64: (i128, i128) = (i64::MIN as i128, i64::MAX as i128);
    const U64: (i128, i128) = (0, u64::MAX as i128);
    if depth > WHOLE_FLOAT_DEPTH {
        return;
    }
    match schema {
        Value::Object(m) => {
            let integer = match m.get("type") {
                Some(Value::String(t)) => t == "integer",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "integer"),
                _ => false,
            };
            let range = match m.get("format").and_then(Value::as_str) {
                Some("int32") => Some((i128::from(i32::MIN), i128::from(i32::MAX))),
                Some("uint32") => Some((0, i128::from(u32::MAX))),
                Some("int64" | "int") => Some(I64),
                Some("uint64" | "uint") => Some(U64),
                _ => None,
            };
            if let (true, Some((min, max))) = (integer, range) {
                for (key, bound) in [("minimum", min), ("maximum", max)] {
                    if !m.contains_key(key) {
                        let value = i64::try_from(bound)
                            .map(Value::from)
                            .or_else(|_| u64::try_from(bound).map(Value::from));
                        if let Ok(v) = value {
                            m.insert(key.into(), v);
                        }
                    }
                }
            }
            // Into subschemas only: `default`, `const`, `enum` and `examples` hold data.
            m.iter_mut()
                .filter(|(k, _)| !matches!(k.as_str(), "default" | "const" | "enum" | "examples"))
                .for_each(|(_, v)| bound_integers(v, depth + 1));
        }
        Value::Array(a) => a.iter_mut().for_each(|v| bound_integers(v, depth + 1)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Whole floats reach integer types, within ±(2^53 − 1) only; a `Value` read alone
    /// keeps the float; a fraction is refused.
    #[test]
    fn whole_floats_reach_integers_within_the_safe_range() {
        assert_eq!(from_checked_value::<u64>(json!(3.0)).ok(), Some(3));
        assert_eq!(from_checked_value::<i32>(json!(-2.0)).ok(), Some(-2));
        assert_eq!(
            from_checked_value::<Vec<u8>>(json!([1.0, 2])).ok(),
            Some(vec![1, 2])
        );
        assert_eq!(
            from_checked_value::<u64>(json!(9_007_199_254_740_991.0)).ok(),
            Some(9_007_199_254_740_991)
        );
        assert!(from_checked_value::<u64>(json!(9_007_199_254_740_992.0)).is_err());
        assert!(from_checked_value::<u64>(json!(3.5)).is_err());
        assert_eq!(
            from_checked_value::<Value>(json!(3.0)).ok(),
            Some(json!(3.0))
        );
        assert_eq!(from_checked_value::<f64>(json!(3.0)).ok(), Some(3.0));
    }

    /// Ranges go into subschemas, never into data a schema holds.
    #[test]
    fn integer_ranges_skip_data() {
        let data = json!({"type": "integer", "format": "int32"});
        let mut schema = json!({"type": "integer", "format": "int32", "default": data,
            "examples": [data], "properties": {"n": {"type": "integer", "format": "uint32"}}});
        bound_integers(&mut schema, 0);
        assert_eq!(schema["maximum"], json!(i32::MAX));
        assert_eq!(schema["properties"]["n"]["maximum"], json!(u32::MAX));
        assert_eq!(schema["default"], data);
        assert_eq!(schema["examples"], json!([data]));
    }
}
