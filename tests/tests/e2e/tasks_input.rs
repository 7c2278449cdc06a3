//! The work input a task keeps (Tasks reference section 3.2, step 5): the call's
//! arguments, the answers gathered before creation and the client's capabilities are
//! size-checked before anything is stored; past `max_input_bytes` creation is -32602
//! `Task input is larger than <n> bytes` and no task exists. Answers given later with
//! `tasks/update` are held to the same bound.

use crate::tasks::{Client, KINDS, Lab, Probe, Tasking, accept, declared, tool};
use presa::tasks::{DEFAULT_MAX_INPUT_BYTES, Tasks};
use serde_json::json;

/// At the bound a task is created; one byte under it, the same call is refused and
/// nothing is stored or run.
#[tokio::test]
async fn task_input_is_size_checked_at_creation() {
    assert_eq!(DEFAULT_MAX_INPUT_BYTES, 262_144, "the reference's default");
    for kind in KINDS {
        let args = json!({"n": 123_456_789});
        // The exact size of this call's work input, read back from a stored record.
        let lab = Lab::new(Tasks::builder());
        let mut w = Client::start(kind, &lab.server).await;
        let id = w.create("quick", args.clone()).await;
        let record = lab.record(&id).expect("stored");
        let size = serde_json::to_vec(&record.work).expect("JSON").len()
            + serde_json::to_vec(&record.answers).expect("JSON").len();

        let lab = Lab::new(Tasks::builder().max_input_bytes(size));
        let mut w = Client::start(kind, &lab.server).await;
        w.create("quick", args.clone()).await;
        assert_eq!(lab.stored(), 1, "{kind:?}: at the bound, created");

        let lab = Lab::new(Tasks::builder().max_input_bytes(size - 1));
        let mut w = Client::start(kind, &lab.server).await;
        let got = w.send("tools/call", declared(tool("quick", args))).await;
        let e = got.error(-32602, 400);
        assert_eq!(
            e["message"],
            format!("Task input is larger than {} bytes", size - 1),
            "{kind:?}: {e}"
        );
        assert_eq!(lab.stored(), 0, "{kind:?}: nothing stored");
        assert_eq!(
            Probe::get(&lab.probe.quick_runs),
            0,
            "{kind:?}: nothing ran"
        );
    }
}

/// Answers given with `tasks/update` stay in the record too, so they count against the
/// same bound: an update that would take the work input past it is -32602 and changes
/// nothing (the task still waits for its answer); one within it is taken.
#[tokio::test]
async fn answers_given_by_tasks_update_are_size_checked() {
    for kind in KINDS {
        // The size of the waiting task's record, then room for a small answer only.
        let sized = Lab::new(Tasks::builder());
        let mut w = Client::start(kind, &sized.server).await;
        let id = w.create("ask", json!({})).await;
        let record = sized.record(&id).expect("stored");
        let size = serde_json::to_vec(&record.work).expect("JSON").len()
            + serde_json::to_vec(&record.answers).expect("JSON").len();
        let limit = size + 200;

        let lab = Lab::new(Tasks::builder().max_input_bytes(limit));
        let mut w = Client::start(kind, &lab.server).await;
        let id = w.create("ask", json!({})).await;
        lab.gate.add_permits(1);
        w.wait_for(&id, &["input_required"]).await;
        let long = "x".repeat(400);
        let big = json!({"proceed": accept(json!({"proceed": true, "note": long}))});
        let got = w
            .send(
                "tasks/update",
                declared(json!({"taskId": id, "inputResponses": big})),
            )
            .await;
        let e = got.error(-32602, 400);
        assert_eq!(
            e["message"],
            format!("Task input is larger than {limit} bytes"),
            "{kind:?}: {e}"
        );
        let stored = lab.record(&id).expect("stored");
        assert!(stored.answers.is_empty(), "{kind:?}: nothing taken");
        assert_eq!(
            w.get(&id).await["status"],
            "input_required",
            "{kind:?}: still waiting"
        );

        lab.gate.add_permits(1);
        w.update(&id, json!({"proceed": accept(json!({"proceed": true}))}))
            .await;
        let done = w.wait_for(&id, &["completed"]).await;
        assert_eq!(done["status"], "completed", "{kind:?}");
    }
}
