//! Framework parameters: values a handler receives from the request rather than from the
//! client's arguments, in the style of axum's extractors. `#[tool]`, `#[prompt]` and
//! `#[resource]` recognise a parameter as one of these by its type (any type that
//! implements [`FromContext`]), inject it, and leave it out of the input schema.

use crate::context::RequestContext;
use crate::error::Error;
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
