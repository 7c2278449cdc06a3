//! The PostgreSQL store without a server: its settings' bounds and the errors of a
//! connect that cannot begin. The contract, the migrations and the store against a live
//! server are tested end to end (tests/tests/e2e/tasks_postgres.rs), on a PostgreSQL the
//! tests start.

use super::*;
use std::time::Instant;

/// A loopback port nothing listens on: bound, then let go.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

#[test]
fn the_statement_timeout_is_whole_milliseconds_from_one_to_postgres_largest() {
    let ms = |d: Duration| {
        PgStore::builder("postgres://x")
            .statement_timeout(d)
            .statement_timeout_ms()
    };
    assert_eq!(ms(DEFAULT_STATEMENT_TIMEOUT), 5_000);
    // 0 would turn the timeout off: the least is 1 ms, and a fraction rounds up.
    assert_eq!(ms(Duration::ZERO), 1);
    assert_eq!(ms(Duration::from_nanos(1)), 1);
    assert_eq!(ms(Duration::from_micros(1_001)), 2);
    assert_eq!(ms(Duration::from_millis(1)), 1);
    // PostgreSQL's largest, and past it.
    assert_eq!(
        ms(Duration::from_millis(MAX_STATEMENT_TIMEOUT_MS)),
        MAX_STATEMENT_TIMEOUT_MS
    );
    assert_eq!(
        ms(Duration::from_millis(MAX_STATEMENT_TIMEOUT_MS + 1)),
        MAX_STATEMENT_TIMEOUT_MS
    );
    assert_eq!(ms(Duration::MAX), MAX_STATEMENT_TIMEOUT_MS);
}

#[test]
fn the_pool_holds_at_least_one_connection() {
    let builder = PgStore::builder("postgres://x");
    assert_eq!(builder.max_connections, DEFAULT_MAX_CONNECTIONS);
    assert_eq!(builder.clone().max_connections(0).max_connections, 1);
    assert_eq!(builder.clone().max_connections(1).max_connections, 1);
    assert_eq!(builder.max_connections(2).max_connections, 2);
}

#[test]
fn schema_names_are_lowercase_identifiers_of_at_most_63_bytes() {
    for good in ["presa", "_x", "tenant_7", &"a".repeat(MAX_SCHEMA_BYTES)] {
        assert!(is_identifier(good), "{good}");
    }
    let long = "a".repeat(MAX_SCHEMA_BYTES + 1);
    for bad in ["", "7up", "Presa", "a-b", "a\"b", "a b", "é", &long] {
        assert!(!is_identifier(bad), "{bad}");
    }
}

#[tokio::test]
async fn a_bad_schema_name_is_refused_before_connecting() {
    let error = PgStore::builder(format!("postgres://x@127.0.0.1:{}/db", closed_port()))
        .schema("x\"; DROP TABLE y; --")
        .connect()
        .await
        .expect_err("refused");
    assert!(
        matches!(&error, ConnectError::InvalidSchema { name } if name.starts_with("x\"")),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("not a lowercase identifier"),
        "{error}"
    );
}

#[tokio::test]
async fn a_url_that_is_not_postgres_is_invalid() {
    for url in ["not a url", "postgres://x@127.0.0.1:notaport/db"] {
        let error = PgStore::connect(url).await.expect_err("refused");
        assert!(
            matches!(error, ConnectError::InvalidUrl { .. }),
            "{url}: {error:?}"
        );
    }
}

#[tokio::test]
async fn tls_asked_of_this_plain_build_is_refused() {
    // A listener that accepts: the refusal comes before anything is sent to it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let port = listener.local_addr().expect("its address").port();
    let url = format!("postgres://x@127.0.0.1:{port}/db?sslmode=require");
    let started = Instant::now();
    let error = PgStore::builder(url)
        .acquire_timeout(Duration::from_secs(5))
        .connect()
        .await
        .expect_err("refused");
    let text = error.to_string();
    assert!(text.contains("TLS"), "{error:?}");
    assert!(
        !text.contains("postgres://"),
        "the URL is not repeated: {text}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused without waiting"
    );
}

/// A server that refuses connections is tried again until the acquire timeout, and not
/// longer: the refusal comes at the timeout, within a margin.
#[tokio::test]
async fn an_unreachable_server_is_refused_at_the_acquire_timeout() {
    let waited = Duration::from_millis(400);
    let url = format!("postgres://presa:secret@127.0.0.1:{}/db", closed_port());
    let started = Instant::now();
    let error = PgStore::builder(url)
        .acquire_timeout(waited)
        .connect()
        .await
        .expect_err("refused");
    let elapsed = started.elapsed();
    assert!(elapsed >= waited, "waited the timeout first: {elapsed:?}");
    assert!(
        elapsed < waited + Duration::from_secs(2),
        "not much past it: {elapsed:?}"
    );
    assert!(
        matches!(&error, ConnectError::Unreachable { waited: w, .. } if *w == waited),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(text.contains("could not be reached within 400ms"), "{text}");
    assert!(
        !text.contains("secret"),
        "no password in the message: {text}"
    );
}

#[test]
fn debug_never_shows_the_url() {
    let builder = PgStore::builder("postgres://presa:secret@db.internal/tasks").schema("s");
    let shown = format!("{builder:?}");
    assert!(
        !shown.contains("secret") && !shown.contains("db.internal"),
        "{shown}"
    );
    assert!(shown.contains("max_connections: 16"), "{shown}");
}

#[test]
fn schema_versions_count_the_migrations() {
    assert_eq!(SCHEMA_VERSION, 2);
    for (migrations, steps) in [
        (MIGRATIONS, 2),
        (replay::MIGRATIONS, 1),
        (fanout::MIGRATIONS, 1),
        (sessions::MIGRATIONS, 2),
    ] {
        assert_eq!(migrations.len(), steps);
        assert!(migrations.iter().all(|step| !step.is_empty()));
    }
    // Each component has its own row in `presa_migrations`.
    assert_eq!(
        std::collections::BTreeSet::from([
            COMPONENT,
            replay::COMPONENT,
            fanout::COMPONENT,
            sessions::COMPONENT
        ])
        .len(),
        4
    );
}
