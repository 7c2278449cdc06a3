//! Transports: they frame bytes and hand decoded messages to the one pipeline.
//!
//! - [`stdio`]: newline-delimited JSON on stdin and stdout (wire section 14).
//! - [`http`]: Streamable HTTP on axum (wire section 13).

pub mod http;
pub mod stdio;
