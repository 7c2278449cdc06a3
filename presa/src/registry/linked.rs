//! The items declared with `#[tool]`, `#[prompt]` and `#[resource]` anywhere in the
//! program, gathered by the linker into one distributed slice
//! ([`ServerBuilder::registered`](crate::ServerBuilder::registered) reads it).

use super::prompt::Prompt;
use super::resource::{Resource, ResourceTemplate};
use super::tool::Tool;

/// One item declared with an attribute, as the distributed slice holds it.
pub enum Registered {
    /// A `#[tool]`.
    Tool(Tool),
    /// A `#[prompt]`.
    Prompt(Prompt),
    /// A `#[resource]` with a fixed URI.
    Resource(Resource),
    /// A `#[resource]` with a URI template.
    Template(ResourceTemplate),
}

/// A registration in the distributed slice.
pub struct Registration {
    /// Builds the item.
    pub make: fn() -> Registered,
}

/// Every item declared with `#[tool]`, `#[prompt]` or `#[resource]` in the program.
#[linkme::distributed_slice]
pub static REGISTRY: [Registration];
