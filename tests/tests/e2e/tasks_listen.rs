//! Task status notifications (Tasks reference section 8; errata T-2 and section 3):
//! `subscriptions/listen` with `notifications.taskIds` from a client declaring Tasks
//! gets `notifications/tasks` carrying the full DetailedTask, tagged with the
//! subscription id, as the task changes; the filter needs the declaration (-32021),
//! holds at most 100 non-empty ids of at most 256 bytes (-32602), and unknown,
//! inaccessible and repeated ids are dropped from the acknowledged filter. Over both
//! transports (the HTTP stream is read as it arrives).

use crate::tasks::{
    ALICE, Client, KINDS, Lab, Tasking, accept, alice_gate_task, bare, declared, plain_caps, text,
    undeclared, with_caps,
};
use presa::tasks::Tasks;
use serde_json::{Value, json};

fn listen_params(notifications: Value) -> Value {
    json!({"notifications": notifications})
}

/// A task's changes reach a stream following it: a cancellation, then (for another
/// task) the completion, each as a full DetailedTask without `resultType`, tagged with
/// the subscription id, equal to what `tasks/get` returns afterwards.
#[tokio::test]
async fn listen_stream_carries_full_detailed_tasks() {
    for kind in KINDS {
        let lab = Lab::new(Tasks::builder());
        let mut w = Client::start(kind, &lab.server).await;
        let cancelled = w.create("gate", json!({})).await;
        let completed = w.create("gate", json!({})).await;
        lab.wait_count(&lab.probe.started, 2, "both gates run")
            .await;
        let l = w
            .listen_tasks(declared(listen_params(
                json!({"taskIds": [cancelled.clone(), completed.clone()]}),
            )))
            .await
            .unwrap_or_else(|e| panic!("{kind:?}: the listen is accepted: {e:?}"));
        let mut acked: Vec<String> = serde_json::from_value(l.ack["taskIds"].clone())
            .unwrap_or_else(|_| panic!("{kind:?}: taskIds acknowledged: {}", l.ack));
        acked.sort();
        let mut want = vec![cancelled.clone(), completed.clone()];
        want.sort();
        assert_eq!(acked, want, "{kind:?}: both ids acknowledged");

        w.cancel(&cancelled).await;
        let events = w.task_events_until(&l, &cancelled, "cancelled").await;
        let last = events.last().expect("an event");
        assert_eq!(
            bare(&last["params"]),
            bare(&w.get(&cancelled).await),
            "{kind:?}"
        );

        lab.gate.add_permits(1);
        let events = w.task_events_until(&l, &completed, "completed").await;
        let last = &events.last().expect("an event")["params"];
        assert_eq!(
            text(&last["result"]),
            "released",
            "{kind:?}: the result is inlined"
        );
        assert_eq!(bare(last), bare(&w.get(&completed).await), "{kind:?}");
    }
}

/// Parking on input and failing are announced too: `input_required` with its
/// `inputRequests`, then, after the answer, `completed`; a panic's `failed` carries the
/// error.
#[tokio::test]
async fn listen_stream_follows_input_required_and_failure() {
    for kind in KINDS {
        let lab = Lab::new(Tasks::builder());
        let mut w = Client::start(kind, &lab.server).await;
        let id = w.create("ask", json!({})).await;
        let l = w
            .listen_tasks(declared(listen_params(json!({"taskIds": [id.clone()]}))))
            .await
            .unwrap_or_else(|e| panic!("{kind:?}: {e:?}"));
        lab.gate.add_permits(1);
        let events = w.task_events_until(&l, &id, "input_required").await;
        let parked = &events.last().expect("an event")["params"];
        assert_eq!(
            parked["inputRequests"]["proceed"]["method"], "elicitation/create",
            "{kind:?}: {parked}"
        );
        lab.gate.add_permits(1);
        w.update(&id, json!({"proceed": accept(json!({"proceed": true}))}))
            .await;
        let events = w.task_events_until(&l, &id, "completed").await;
        let done = &events.last().expect("an event")["params"];
        assert_eq!(text(&done["result"]), "proceed: true", "{kind:?}");

        let failing = w.create("gate_fail", json!({})).await;
        let l2 = w
            .listen_tasks(declared(listen_params(
                json!({"taskIds": [failing.clone()]}),
            )))
            .await
            .unwrap_or_else(|e| panic!("{kind:?}: {e:?}"));
        lab.gate.add_permits(1);
        let events = w.task_events_until(&l2, &failing, "failed").await;
        let failed = &events.last().expect("an event")["params"];
        assert_eq!(failed["error"]["code"], json!(-32603), "{kind:?}: {failed}");
        assert_eq!(bare(failed), bare(&w.get(&failing).await), "{kind:?}");
    }
}

/// A stream gets events only for the tasks it follows: everything it carries, up to
/// the last change of the tasks it follows (a marker cancelled after all the other
/// changes were made), is about those tasks.
#[tokio::test]
async fn listen_stream_carries_only_the_followed_tasks() {
    for kind in KINDS {
        let lab = Lab::new(Tasks::builder());
        let mut w = Client::start(kind, &lab.server).await;
        let followed = w.create("gate", json!({})).await;
        let other = w.create("gate", json!({})).await;
        let marker = w.create("gate", json!({})).await;
        lab.wait_count(&lab.probe.started, 3, "the gates run").await;
        let l = w
            .listen_tasks(declared(listen_params(
                json!({"taskIds": [followed.clone(), marker.clone()]}),
            )))
            .await
            .unwrap_or_else(|e| panic!("{kind:?}: {e:?}"));
        w.cancel(&other).await;
        w.cancel(&followed).await;
        w.task_events_until(&l, &followed, "cancelled").await;
        let quick = w.create("quick", json!({})).await;
        w.wait_for(&quick, &["completed"]).await;
        w.cancel(&marker).await;
        loop {
            let m = w
                .event(&l, presa_tests::wait::PATIENCE)
                .await
                .unwrap_or_else(|| panic!("{kind:?}: the marker's cancellation arrives"));
            let id = m["params"]["taskId"].clone();
            assert!(
                id == json!(followed) || id == json!(marker),
                "{kind:?}: only the followed tasks: {m}"
            );
            if id == json!(marker) && m["params"]["status"] == "cancelled" {
                break;
            }
        }
    }
}

/// `taskIds` needs the Tasks declaration: -32021 with the full data shape (HTTP 400).
#[tokio::test]
async fn task_ids_filter_without_the_declaration_is_32021() {
    let lab = Lab::new(Tasks::builder());
    for kind in KINDS {
        let mut w = Client::start(kind, &lab.server).await;
        let id = w.create("quick", json!({})).await;
        for caps in [plain_caps(), json!({})] {
            let got = w
                .listen_tasks(with_caps(
                    listen_params(json!({"taskIds": [id.clone()]})),
                    caps,
                ))
                .await
                .err()
                .unwrap_or_else(|| panic!("{kind:?}: refused"));
            got.missing_tasks();
        }
        // Without taskIds the same client may listen.
        assert!(
            w.listen_tasks(undeclared(listen_params(json!({"toolsListChanged": true}))))
                .await
                .is_ok(),
            "{kind:?}"
        );
    }
}

/// `taskIds` must be a list of at most 100 non-empty strings of at most 256 bytes.
#[tokio::test]
async fn invalid_task_ids_filters_are_32602() {
    let lab = Lab::new(Tasks::builder());
    let too_many: Vec<String> = (0..101).map(|i| format!("t-{i}")).collect();
    for kind in KINDS {
        let mut w = Client::start(kind, &lab.server).await;
        for ids in [
            json!(too_many),
            json!([""]),
            json!(["ok", ""]),
            json!(["x".repeat(257)]),
            json!([42]),
            json!([null]),
            json!("t-1"),
            json!({"t-1": true}),
        ] {
            let got = w
                .listen_tasks(declared(listen_params(json!({"taskIds": ids}))))
                .await
                .err()
                .unwrap_or_else(|| panic!("{kind:?}: {ids} is refused"));
            got.error(-32602, 400);
        }
        let hundred: Vec<String> = (0..100).map(|i| format!("t-{i}")).collect();
        let l = w
            .listen_tasks(declared(listen_params(json!({"taskIds": hundred}))))
            .await
            .unwrap_or_else(|e| panic!("{kind:?}: 100 ids are allowed: {e:?}"));
        assert!(
            l.ack.get("taskIds").is_none(),
            "{kind:?}: none known: {}",
            l.ack
        );
    }
}

/// Unknown and repeated ids are dropped from the acknowledged filter, which omits
/// `taskIds` when none is left; the rest of the filter is kept.
#[tokio::test]
async fn unknown_and_repeated_ids_are_dropped_from_the_acknowledgement() {
    let lab = Lab::new(Tasks::builder());
    for kind in KINDS {
        let mut w = Client::start(kind, &lab.server).await;
        let id = w.create("quick", json!({})).await;
        let l = w
            .listen_tasks(declared(listen_params(
                json!({"taskIds": [id.clone(), "no-such-task", id.clone()]}),
            )))
            .await
            .unwrap_or_else(|e| panic!("{kind:?}: {e:?}"));
        assert_eq!(l.ack, json!({"taskIds": [id]}), "{kind:?}");
        let l = w
            .listen_tasks(declared(listen_params(
                json!({"taskIds": ["no-such-task"], "toolsListChanged": true}),
            )))
            .await
            .unwrap_or_else(|e| panic!("{kind:?}: {e:?}"));
        assert_eq!(l.ack, json!({"toolsListChanged": true}), "{kind:?}");
    }
}

/// Another principal's task is dropped from the filter like an unknown one, and its
/// changes never reach that principal's stream: the next thing those streams carry
/// after the task completed is a tool list change made after it.
#[tokio::test]
async fn another_principals_task_is_dropped_from_the_filter() {
    let (lab, mut w, id) = alice_gate_task().await;
    let mut others = Vec::new();
    for who in [vec![("X-Principal", "bob")], vec![]] {
        let params = declared(listen_params(
            json!({"taskIds": [id.clone()], "toolsListChanged": true}),
        ));
        let l = w
            .listen_tasks_with(params, &who)
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert!(l.ack.get("taskIds").is_none(), "{who:?}: {}", l.ack);
        others.push(l);
    }
    let params = declared(listen_params(json!({"taskIds": [id.clone()]})));
    let l = w
        .listen_tasks_with(params, &ALICE)
        .await
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(l.ack, json!({"taskIds": [id.clone()]}));
    lab.gate.add_permits(1);
    w.task_events_until(&l, &id, "completed").await;
    lab.server
        .add_tool(
            presa::Tool::new("later")
                .description("Added after the task completed")
                .handler(|_: presa::ToolCall| async { "later" }),
        )
        .expect("adds");
    for other in others {
        let got = w.event(&other, presa_tests::wait::PATIENCE).await;
        assert_eq!(
            got.as_ref().map(|m| m["method"].clone()),
            Some(json!("notifications/tools/list_changed")),
            "another principal's stream got {got:?}"
        );
    }
}
