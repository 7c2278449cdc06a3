//! The wire model of MCP 2026-07-28: the JSON-RPC envelope, request `_meta`, and the typed
//! shapes of results, content and capabilities.

pub mod jsonrpc;
pub mod meta;
pub mod types;
