//! Transports: they frame bytes and hand decoded messages to the one pipeline.
//!
//! - [`stdio`]: newline-delimited JSON on stdin and stdout (wire section 14).
//! - [`http`]: Streamable HTTP on axum (wire section 13).
//!
//! Both stop the same way (`shutdown`): on a signal or the caller's future, then a drain
//! with a deadline.

pub mod http;
mod shutdown;
pub mod stdio;
