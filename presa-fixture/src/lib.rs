//! The conformance fixture as a library: [`build`] assembles the server the official
//! conformance runner calls (wire reference section 16), from presa's public API only. The
//! `presa-fixture` binary serves it; the end-to-end tests drive it over real transports,
//! and as replicas sharing a [`Store`] behind a load balancer.

pub mod auth;
pub mod cli;
mod legacy;
mod mrtr;
mod prompts;
mod resources;
mod skills;
mod tasks;
mod tools;

use presa::{Implementation, Server};

/// The fixture's server: every item of wire section 16 that presa serves.
pub fn build() -> Result<Server, presa::BuildError> {
    build_with(None)
}

/// A store shared by replicas of the fixture: it keeps their tasks and their record of
/// spent single-use request states (`--tasks-store`; with the `stores` feature only).
#[derive(Clone)]
#[non_exhaustive]
pub enum Store {
    /// A PostgreSQL database.
    #[cfg(feature = "stores")]
    Postgres(presa::tasks::PgStore),
    /// A SQLite file.
    #[cfg(feature = "stores")]
    Sqlite(presa::tasks::SqliteStore),
}

/// [`build`], and with `auth` an OAuth resource server for those settings, checking
/// tokens with that verifier (see [`auth`]).
pub fn build_with(
    auth: Option<(
        &auth::AuthSettings,
        std::sync::Arc<presa::auth::JwtVerifier>,
    )>,
) -> Result<Server, presa::BuildError> {
    build_with_store(auth, None, None)
}

/// [`build_with`], keeping tasks and spent single-use request states in `store` (in
/// memory without one; with PostgreSQL, its list changes and resource updates are
/// shared with the other replicas on the database too), a task's run holding its lease
/// for `task_lease` (presa's default without one).
pub fn build_with_store(
    auth: Option<(
        &auth::AuthSettings,
        std::sync::Arc<presa::auth::JwtVerifier>,
    )>,
    store: Option<&Store>,
    task_lease: Option<std::time::Duration>,
) -> Result<Server, presa::BuildError> {
    let builder = Server::builder(
        Implementation::new("presa-conformance", env!("CARGO_PKG_VERSION"))
            .title("presa conformance fixture"),
    )
    .instructions("The presa conformance fixture: test tools, resources and prompts for the official MCP conformance runner.")
    // Clients may subscribe to resources (the legacy lanes' resources/subscribe).
    .resource_notifications(true);
    let builder = tools::register(builder);
    let builder = resources::register(builder);
    let builder = prompts::register(builder);
    let builder = mrtr::register(builder);
    let builder = legacy::register(builder);
    let builder = skills::register(builder);
    let tasks_ext =
        presa::tasks::Tasks::builder().poll_interval(std::time::Duration::from_millis(100));
    let tasks_ext = match task_lease {
        Some(lease) => tasks_ext.lease(lease),
        None => tasks_ext,
    };
    let (builder, tasks_ext) = match store {
        #[cfg(feature = "stores")]
        Some(Store::Postgres(pg)) => (
            builder
                .replay_store(pg.clone())
                .session_store(pg.clone())
                .fanout(pg.fanout()),
            tasks_ext.store(pg.clone()),
        ),
        #[cfg(feature = "stores")]
        Some(Store::Sqlite(file)) => (
            builder.replay_store(file.clone()),
            tasks_ext.store(file.clone()),
        ),
        #[cfg(not(feature = "stores"))]
        Some(store) => match *store {},
        None => (builder, tasks_ext),
    };
    let builder = tasks::register(builder).extension(tasks_ext.build());
    let builder = match auth {
        Some((settings, verifier)) => auth::register(builder, settings, verifier),
        None => builder,
    };
    builder.build()
}
