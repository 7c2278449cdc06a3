//! presa's end-to-end tests, one binary with a module per area (so the build links once).
//! Every message a test sends and every message the server sends is checked against the
//! official 2026-07-28 schema (task messages against the Tasks extension's, a legacy
//! session's against the schema of the revision it negotiated) by the harnesses in
//! `presa_tests`; what a test sends invalid on purpose goes through a path named
//! `*_unchecked`.

mod auth_http;
mod auth_verifiers;
mod blocking;
mod catalog_browser;
mod catalog_page;
mod fanout_postgres;
mod http;
mod http_admission;
mod http_connections;
mod http_envelope;
mod http_headers;
mod http_limits;
mod http_memory;
mod http_methods;
mod http_shutdown;
mod http_streaming;
mod http_util;
mod legacy_http;
mod legacy_http_rules;
mod legacy_replicas;
mod legacy_stdio;
mod limits;
mod mrtr;
mod mrtr_state;
mod otel;
mod pipeline;
mod pipeline_catalog;
mod replay_postgres;
mod replicas;
mod schema_check;
mod skills;
mod stdio;
mod stdio_limits;
#[cfg(unix)]
mod stdio_signals;
mod subscriptions;
mod subscriptions_http;
mod subscriptions_limits;
mod subscriptions_stdio;
mod tasks;
mod tasks_exec;
mod tasks_input;
mod tasks_lease;
mod tasks_listen;
mod tasks_methods;
mod tasks_postgres;
mod tasks_sqlite;
mod tool_schemas;
