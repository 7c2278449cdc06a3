//! Procedural macros for presa.
//!
//! The `#[tool]`, `#[prompt]` and `#[resource]` attributes land here; until they do, this
//! crate is an empty skeleton so the workspace layout is already the final one.
