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
/// sent), and only if that fails, again with every whole float within the integer range
/// written as an integer.
pub(crate) fn from_checked_value<T: serde::de::DeserializeOwned>(
    mut value: Value,
) -> serde_json::Result<T> {
    if !has_whole_float(&value, 0) {
        return serde_json::from_value(value);
    }
    match T::deserialize(&value) {
        Ok(v) => Ok(v),
        Err(first) => {
            integers_for_whole_floats(&mut value, 0);
            serde_json::from_value(value).map_err(|_| first)
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
    // Exact within ±2^63 (i64) and up to 2^64 (u64); beyond, no integer type fits.
    if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
        Some(Value::from(f as i64))
    } else if (0.0..1.844_674_407_370_955_2e19).contains(&f) {
        Some(Value::from(f as u64))
    } else {
        None
    }
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
