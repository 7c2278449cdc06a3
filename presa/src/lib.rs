//! presa: a framework for Model Context Protocol servers. One set of handlers serves
//! both eras of the protocol: the stateless revision 2026-07-28, and the clients that open
//! a session with `initialize` (revisions 2025-11-25 and 2025-06-18).
//!
//! A server is a catalog of tools, resources, resource templates and prompts behind one
//! protocol pipeline; the transports (stdio, Streamable HTTP) only frame bytes.
//!
//! ```no_run
//! use presa::{CallToolResult, Tool, ToolCall};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let server = presa::server!()
//!         .tool(
//!             Tool::new("hello")
//!                 .description("Says hello")
//!                 .handler(|_call: ToolCall| async { CallToolResult::text("Hello!") }),
//!         )
//!         .build()?;
//!     server.serve_stdio().await?;
//!     Ok(())
//! }
//! ```
//!
//! Every module, lowest layer first (a module imports only those above it in this table;
//! `ARCHITECTURE.md` at the repository's root is the map, and a test holds the order):
//!
//! | module | what it owns |
//! | --- | --- |
//! | `error` | [`Error`] (protocol errors with their codes and HTTP statuses) and [`BuildError`] |
//! | [`wire`] | the JSON-RPC envelope and its decoder, request `_meta`, typed results and content, method names, URI rules, pagination cursors |
//! | `observe` | the request span by the OpenTelemetry MCP conventions, and (with `otel`) its parent from `_meta`, links and presa's metrics |
//! | `otel` | OpenTelemetry export in one call, and the Prometheus text of the metrics (the `otel` feature) |
//! | `shape` | every result as it goes on the wire (a fast writer and its serde twin) |
//! | `schema` | compiled tool schemas, the `x-mcp-header` table, URI templates |
//! | [`auth`] | authorization: [`Principal`], token verifiers, scopes, challenges, protected resource metadata |
//! | `context` | [`RequestContext`]: progress, logs, cancellation, inputs and state of one request |
//! | [`extract`] | the extractors handlers take as parameters |
//! | [`registry`] | tools, resources, templates, prompts and completion providers as data; the catalog |
//! | [`mrtr`] | multi round-trip requests: asking the client, signed request state |
//! | [`subscriptions`] | the hub of `subscriptions/listen` streams, and the [`Fanout`](subscriptions::Fanout) carrying its events between replicas |
//! | [`extension`] | the hooks protocol extensions plug into |
//! | [`session`] | legacy sessions: what a client that opened with `initialize` established, and the [`SessionStore`](session::SessionStore) replicas share their records in |
//! | `pipeline` | the serving state (`Core`) and the path of a request: admission, dispatch, shaping |
//! | `server` | [`Server`], the handle, and [`ServerBuilder`] |
//! | [`transport`] | stdio and Streamable HTTP framing |
//! | [`testing`] | an in-process client that drives the same pipeline with no socket; surface snapshots that catch breaking changes to the tools a server offers |
//! | `tasks` | the Tasks extension (the `tasks` feature) |
//! | `skills` | the Skills extension (the `skills` feature) |
//! | [`prelude`] | the items most servers need, for `use presa::prelude::*;` |
//! | `__private` | what the macros' generated code names (not public API) |
//!
//! With the `fast` feature (on by default) a few steps of the request path use
//! hand-written fast paths; without it, their plain twins serve, with the same answers.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod auth;
mod context;
mod error;
pub mod extension;
pub mod extract;
pub mod mrtr;
mod observe;
#[cfg(feature = "otel")]
pub mod otel;
mod pipeline;
pub mod registry;
mod schema;
mod server;
pub mod session;
mod shape;
#[cfg(feature = "skills")]
pub mod skills;
pub mod subscriptions;
#[cfg(feature = "tasks")]
pub mod tasks;
pub mod testing;
pub mod transport;
pub mod wire;

pub use auth::{Authorization, Principal};
pub use context::RequestContext;
pub use error::{BuildError, Error, ReservedCode, code};
pub use pipeline::config::{Cacheable, Config};
/// Derives [`mrtr::ElicitForm`] for a struct of flat primitive fields (checked at compile
/// time), or [`mrtr::FormEnum`] for a unit-only enum.
pub use presa_macros::ElicitForm;
#[doc = include_str!("../docs/prompt.md")]
pub use presa_macros::prompt;
#[doc = include_str!("../docs/resource.md")]
pub use presa_macros::resource;
#[cfg(feature = "skills")]
#[doc = include_str!("../docs/skills.md")]
pub use presa_macros::skills;
/// `skills!` without the `skills` feature: the error says which feature to turn on,
/// rather than that presa has no such macro.
#[cfg(not(feature = "skills"))]
#[doc(hidden)]
#[macro_export]
macro_rules! skills {
    ($($args:tt)*) => {
        ::core::compile_error!(
            "`presa::skills!` needs presa's `skills` feature\nhelp: turn it on (`presa = { version = \"…\", features = [\"skills\"] }`)"
        )
    };
}
#[doc = include_str!("../docs/tool.md")]
pub use presa_macros::tool;
pub use registry::completion::CompletionRequest;
pub use registry::prompt::{IntoGetPromptResult, Prompt, PromptArgument, PromptGet};
pub use registry::resource::{
    IntoReadResourceResult, Resource, ResourceError, ResourceRead, ResourceTemplate,
};
pub use registry::tool::{IntoCallToolResult, Json, Tool, ToolCall, ToolError};
pub use server::{Item, Server, ServerBuilder};
pub use session::SessionConfig;
pub use subscriptions::SubscriptionConfig;
pub use transport::http::HttpConfig;
pub use transport::stdio::StdioConfig;
pub use wire::meta::{LogLevel, PROTOCOL_VERSION, RequestMeta};
pub use wire::types::{
    Annotations, CachePolicy, CacheScope, CallToolResult, Completion, Content, GetPromptResult,
    Icon, Implementation, PromptMessage, ReadResourceResult, ResourceContents, Role,
    ToolAnnotations,
};

/// The items most servers need, for `use presa::prelude::*;`.
pub mod prelude {
    pub use crate::{
        CallToolResult, Content, Error, GetPromptResult, Prompt, PromptArgument, PromptMessage,
        ReadResourceResult, RequestContext, Resource, ResourceContents, ResourceTemplate, Server,
        Tool, ToolCall, ToolError,
    };
}

/// Not public API: used by code the macros generate.
#[doc(hidden)]
#[path = "macro_support.rs"]
pub mod __private;
// rustc names a trait in an error by a visible path, never one through a
// `#[doc(hidden)]` module: re-exported here, the traits of the macros' errors read
// `HeaderArg`, not `presa::__private::HeaderArg`. Not public API either.
#[doc(hidden)]
pub use __private::{HeaderArg, ToolArgument, ToolParameter, ViaHeaderArg};
