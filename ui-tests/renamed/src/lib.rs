//! presa's attributes through a renamed dependency: the test is `tests/renamed.rs`.
