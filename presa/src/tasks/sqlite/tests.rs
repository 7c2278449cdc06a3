//! The SQLite store: the contract, each open error, and a task across a reopening.

use super::*;
use crate::tasks::contract;
use sqlx::Connection;
use sqlx::sqlite::SqliteConnection;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A connection of its own on `path`, as another process would hold one.
async fn other_connection(path: &Path) -> SqliteConnection {
    let options = SqliteConnectOptions::new().filename(path);
    SqliteConnection::connect_with(&options)
        .await
        .expect("another connection opens")
}

/// A new file at `path` with the schema of `version` (its first `version` migrations),
/// as an earlier build left it, and a connection of its own on it.
pub(super) async fn older_file(path: &Path, version: usize) -> SqliteConnection {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true);
    let mut conn = SqliteConnection::connect_with(&options)
        .await
        .expect("opens");
    for statement in MIGRATIONS[..version].iter().flat_map(|step| step.iter()) {
        sqlx::query(statement)
            .execute(&mut conn)
            .await
            .expect("applied");
    }
    sqlx::query(&format!("PRAGMA user_version = {version}"))
        .execute(&mut conn)
        .await
        .expect("set");
    conn
}

#[tokio::test]
async fn the_sqlite_store_keeps_the_contract() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let n = AtomicUsize::new(0);
    contract::run_all(|| {
        let path = dir
            .path()
            .join(format!("tasks-{}.db", n.fetch_add(1, Ordering::SeqCst)));
        async move { SqliteStore::open(path).await.expect("opens") }
    })
    .await;
}

#[tokio::test]
async fn a_task_survives_reopening_the_file() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("tasks.db");
    let store = SqliteStore::open(&path).await.expect("opens");
    let mut record = contract::record("kept", "principal:alice", None);
    store.insert(record.clone()).await.expect("inserted");
    record.status = TaskStatus::Completed;
    record.result = Some(serde_json::json!({"content": [{"type": "text", "text": "done"}]}));
    let stored = store.compare_and_set(0, record).await.expect("completed");
    store.close().await;
    drop(store);
    let reopened = SqliteStore::open(&path).await.expect("reopens");
    assert_eq!(reopened.get("kept").await, Ok(Some(stored)));
    assert_eq!(reopened.count(None, 0).await, Ok(1));
    // The schema is not applied twice, and the version stays this build's.
    let mut conn = other_connection(&path).await;
    let version: i64 = sqlx::query_scalar("PRAGMA user_version")
        .fetch_one(&mut conn)
        .await
        .expect("read");
    assert_eq!(version, SCHEMA_VERSION);
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&mut conn)
        .await
        .expect("read");
    assert_eq!(mode, "wal");
}

/// A file of the schema before leases (version 2) gains the lease column when opened, and
/// its `working` tasks, held by no lease, are claimable: a task a process left running
/// before the upgrade runs again.
#[tokio::test]
async fn a_file_before_leases_gains_them_and_its_working_tasks_are_claimable() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("v2.db");
    let mut conn = older_file(&path, 2).await;
    let record = contract::record("left-running", "s", None);
    let json = serde_json::to_string(&record).expect("json");
    // As a build before leases wrote it: no lease in the record, no lease column.
    assert!(!json.contains("lease"), "{json}");
    sqlx::query(
        "INSERT INTO tasks (id, scope, status, created_at, expires_at, revision, record)
         VALUES ('left-running', 's', 'working', 0, NULL, 0, ?)",
    )
    .bind(&json)
    .execute(&mut conn)
    .await
    .expect("inserted");
    conn.close().await.expect("closed");
    let store = SqliteStore::open(&path).await.expect("opens");
    let claimable = store.claimable(1, 10).await.expect("answered");
    assert_eq!(claimable, vec![record]);
    let version: i64 = sqlx::query_scalar("PRAGMA user_version")
        .fetch_one(&store.pool)
        .await
        .expect("read");
    assert_eq!(version, SCHEMA_VERSION);
}

#[tokio::test]
async fn a_file_held_by_another_writer_is_locked() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("tasks.db");
    SqliteStore::open(&path).await.expect("opens").close().await;
    let mut holder = other_connection(&path).await;
    sqlx::query("BEGIN EXCLUSIVE")
        .execute(&mut holder)
        .await
        .expect("locked");
    let waited = Duration::from_millis(200);
    let started = std::time::Instant::now();
    let error = SqliteStore::open_with(&path, waited)
        .await
        .expect_err("refused");
    assert!(started.elapsed() >= waited, "waited for the lock first");
    assert!(
        matches!(&error, OpenError::Locked { path: p, waited: w } if *p == path && *w == waited),
        "{error:?}"
    );
    assert!(
        error.to_string().contains(&path.display().to_string()),
        "{error}"
    );
    assert!(
        error.to_string().contains("locked by another writer"),
        "{error}"
    );
    // Once the writer lets go, the file opens.
    sqlx::query("ROLLBACK")
        .execute(&mut holder)
        .await
        .expect("released");
    SqliteStore::open_with(&path, waited).await.expect("opens");
}

#[tokio::test]
async fn a_path_that_cannot_be_written_is_unwritable() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    // Under a regular file (refused even to root), and a folder itself.
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"not a folder").expect("written");
    for path in [file.join("tasks.db"), dir.path().to_owned()] {
        let error = SqliteStore::open(&path).await.expect_err("refused");
        assert!(
            matches!(&error, OpenError::Unwritable { path: p, .. } if *p == path),
            "{path:?}: {error:?}"
        );
        assert!(
            error.to_string().contains(&path.display().to_string()),
            "{error}"
        );
    }
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_corrupt() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("tasks.db");
    // Bytes from a xorshift generator: no SQLite header, no page structure.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let bytes: Vec<u8> = (0..65_536)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect();
    std::fs::write(&path, &bytes).expect("written");
    let error = SqliteStore::open(&path).await.expect_err("refused");
    assert!(
        matches!(&error, OpenError::Corrupt { path: p, .. } if *p == path),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("not a SQLite database"),
        "{error}"
    );
    assert_eq!(
        std::fs::read(&path).expect("read"),
        bytes,
        "the file is left as it was"
    );
}

#[tokio::test]
async fn a_newer_schema_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("tasks.db");
    SqliteStore::open(&path).await.expect("opens").close().await;
    let mut conn = other_connection(&path).await;
    // At this build's version it opens; one past it is refused.
    for (version, opens) in [(SCHEMA_VERSION, true), (SCHEMA_VERSION + 1, false)] {
        sqlx::query(&format!("PRAGMA user_version = {version}"))
            .execute(&mut conn)
            .await
            .expect("set");
        match SqliteStore::open(&path).await {
            Ok(store) => {
                assert!(opens, "version {version} opened");
                store.close().await;
            }
            Err(error) => {
                assert!(!opens, "version {version}: {error}");
                assert!(
                    matches!(&error, OpenError::NewerSchema { path: p, found, known }
                        if *p == path && *found == version && *known == SCHEMA_VERSION),
                    "{error:?}"
                );
                assert!(error.to_string().contains("newer"), "{error}");
            }
        }
    }
    let version: i64 = sqlx::query_scalar("PRAGMA user_version")
        .fetch_one(&mut conn)
        .await
        .expect("read");
    assert_eq!(
        version,
        SCHEMA_VERSION + 1,
        "the newer file is not rewritten"
    );
}

#[tokio::test]
async fn status_reads_the_status_column() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let store = SqliteStore::open(dir.path().join("tasks.db"))
        .await
        .expect("opens");
    store
        .insert(contract::record("t", "s", None))
        .await
        .expect("inserted");
    // A record made unreadable, its status column intact: status still answers, get
    // reports the fault rather than hiding the task.
    sqlx::query("UPDATE tasks SET record = '{' WHERE id = 't'")
        .execute(&store.pool)
        .await
        .expect("damaged");
    assert_eq!(store.status("t").await, Ok(Some(TaskStatus::Working)));
    assert!(matches!(
        store.get("t").await,
        Err(StoreError::Unavailable(_))
    ));
}

#[tokio::test]
async fn a_closed_store_reports_faults() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let store = SqliteStore::open(dir.path().join("tasks.db"))
        .await
        .expect("opens");
    store.close().await;
    assert!(matches!(
        store.get("t").await,
        Err(StoreError::Unavailable(_))
    ));
    assert!(matches!(
        store.insert(contract::record("t", "s", None)).await,
        Err(StoreError::Unavailable(_))
    ));
    assert!(matches!(
        store.count(None, 0).await,
        Err(StoreError::Unavailable(_))
    ));
    assert!(matches!(
        store.remove_expired(0).await,
        Err(StoreError::Unavailable(_))
    ));
}

/// A row whose record this build cannot read is left out of `claimable` (and logged), so
/// it never keeps the other tasks from being claimed.
#[tokio::test]
async fn an_unreadable_row_never_keeps_others_from_being_claimed() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let store = SqliteStore::open(dir.path().join("tasks.db"))
        .await
        .expect("opens");
    let good = contract::record("good", "s", None);
    store.insert(good.clone()).await.expect("inserted");
    // Sorted first (no lease), and not a record.
    sqlx::query(
        "INSERT INTO tasks (id, scope, status, created_at, expires_at, revision, record)
         VALUES ('bad', 's', 'working', 0, NULL, 0, '{\"not\": \"a record\"}')",
    )
    .execute(&store.pool)
    .await
    .expect("inserted");
    assert_eq!(store.claimable(1, 10).await, Ok(vec![good]));
    assert!(store.get("bad").await.is_err(), "get reports it as a fault");
}
