//! The work input a task keeps (Tasks reference section 3.2, step 5): the call's
//! arguments, the answers gathered before creation and the client's capabilities are
//! size-checked before anything is stored; past `max_input_bytes` creation is -32602
//! `Task input is larger than <n> bytes` and no task exists.

use crate::tasks::{KINDS, Lab, Probe, Wire, declared, tool};
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
        let mut w = Wire::start(kind, &lab.server).await;
        let id = w.create("quick", args.clone()).await;
        let record = lab.tasks.store().get(&id).expect("stored");
        let size = serde_json::to_vec(&record.work).expect("JSON").len()
            + serde_json::to_vec(&record.answers).expect("JSON").len();

        let lab = Lab::new(Tasks::builder().max_input_bytes(size));
        let mut w = Wire::start(kind, &lab.server).await;
        w.create("quick", args.clone()).await;
        assert_eq!(lab.stored(), 1, "{kind:?}: at the bound, created");

        let lab = Lab::new(Tasks::builder().max_input_bytes(size - 1));
        let mut w = Wire::start(kind, &lab.server).await;
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
