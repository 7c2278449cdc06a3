//! Shared helpers for presa end-to-end tests.
