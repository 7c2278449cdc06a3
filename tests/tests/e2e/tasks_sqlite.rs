//! Tasks kept in a SQLite file (`presa::tasks::SqliteStore`), over HTTP: a task run to
//! completion by one server is answered by a new server opened on the same file, as it
//! would be after a restart.

use crate::tasks::{Client, Kind, Lab, Tasking};
use presa::tasks::{SqliteStore, Tasks};
use serde_json::json;

#[tokio::test]
async fn a_completed_task_is_answered_by_a_new_server_on_the_same_file() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("tasks.db");
    let store = SqliteStore::open(&path).await.expect("opens");
    let first = Lab::new(Tasks::builder().store(store.clone()));
    let mut w = Client::start(Kind::Http, &first.server).await;
    let id = w.create("quick", json!({"n": 7})).await;
    let done = w.wait_for(&id, &["completed"]).await;
    assert_eq!(done["result"]["content"][0]["text"], "quick 7", "{done}");
    // Nothing of the first server's store stays open: the second reads the file.
    store.close().await;
    drop((w, first, store));

    let reopened = SqliteStore::open(&path).await.expect("reopens");
    let second = Lab::new(Tasks::builder().store(reopened));
    let mut w = Client::start(Kind::Http, &second.server).await;
    let again = w.get(&id).await;
    assert_eq!(
        again, done,
        "the new server answers the task as it was completed"
    );
    assert_eq!(
        second
            .probe
            .quick_runs
            .load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the new server did not run the tool again"
    );
}
