//! The three task methods (Tasks reference section 4; errata T-1, T-3 and section 4):
//! `tasks/get` with its per-status payload, `tasks/update` with partial fulfilment,
//! `tasks/cancel` with its empty acknowledgement, the order of their checks (-32601 for
//! the removed `tasks/result` and `tasks/list`, then -32021, then params, then lookup),
//! and `Mcp-Name` mirrored from `params.taskId` on Streamable HTTP (section 7). Every rule
//! runs over both transports against the conformance fixture unless it is about HTTP.

use crate::tasks::{
    Client, KINDS, Kind, Lab, Tasking, UNKNOWN_TASK, accept, assert_ack, assert_sync, base64_of,
    declared, fixture, keys, plain_caps, task_id, text, tool, undeclared, with_caps,
};
use presa::tasks::Tasks;
use presa_tests::wait::Deadline;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// A confirm_delete task parked on `confirm-delete`, and its DetailedTask.
async fn parked_confirm_delete(w: &mut Client, file: &str) -> (String, Value) {
    let id = w.create("confirm_delete", json!({"filename": file})).await;
    let task = w.wait_for(&id, &["input_required"]).await;
    (id, task)
}

// ---- 4.2 tasks/get ----

/// `tasks/get` of a working task: the base fields and no payload.
#[tokio::test]
async fn get_working_task() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let id = w
            .create("slow_compute", json!({"seconds": 60, "label": "w"}))
            .await;
        let task = w.get(&id).await;
        assert_eq!(task["status"], "working", "{kind:?}: {task}");
        assert_eq!(task["statusMessage"], "Task accepted", "{kind:?}: {task}");
        w.cancel(&id).await;
    }
}

/// A completed task inlines the full result, exactly what the direct call returns
/// (errata section 3), with non-empty content and no related-task `_meta`.
#[tokio::test]
async fn get_completed_task_inlines_the_direct_result() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let args = json!({"seconds": 0, "label": "rt"});
        let id = w.create("slow_compute", args.clone()).await;
        let task = w.wait_for(&id, &["completed"]).await;
        let direct = w
            .send("tools/call", undeclared(tool("slow_compute", args)))
            .await;
        assert_eq!(
            task["result"],
            *direct.result(),
            "{kind:?}: the inlined result is the direct call's"
        );
        assert_eq!(text(&task["result"]), "Completed rt", "{kind:?}");
        assert_eq!(task["result"]["isError"], json!(false), "{kind:?}: {task}");
        let again = w.get(&id).await;
        assert_eq!(
            again["result"], task["result"],
            "{kind:?}: terminal is stable"
        );
        assert_eq!(again["lastUpdatedAt"], task["lastUpdatedAt"], "{kind:?}");
    }
}

/// 5.1: a tool error ends `completed` with `isError: true`; a protocol error ends
/// `failed` with the JSON-RPC error inlined, no result, and no leaked detail.
#[tokio::test]
async fn tool_error_completes_and_protocol_error_fails() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let id = w.create("failing_job", json!({})).await;
        let task = w.wait_terminal(&id).await;
        assert_eq!(task["status"], "completed", "{kind:?}: {task}");
        assert_eq!(task["result"]["isError"], json!(true), "{kind:?}: {task}");
        assert_eq!(text(&task["result"]), "The task job failed", "{kind:?}");

        let id = w.create("protocol_error_job", json!({})).await;
        let task = w.wait_terminal(&id).await;
        assert_eq!(task["status"], "failed", "{kind:?}: {task}");
        assert_eq!(task["error"]["code"], json!(-32603), "{kind:?}: {task}");
        assert_eq!(
            task["statusMessage"], task["error"]["message"],
            "{kind:?}: {task}"
        );
    }
}

/// An input_required task lists its pending requests (bare `{method, params}` entries
/// of wire 10.1) and no result or error.
#[tokio::test]
async fn get_input_required_task() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let (id, task) = parked_confirm_delete(&mut w, "rt.txt").await;
        let request = &task["inputRequests"]["confirm-delete"];
        assert_eq!(
            keys(&task["inputRequests"]),
            BTreeSet::from(["confirm-delete"])
        );
        assert_eq!(request["method"], "elicitation/create", "{kind:?}: {task}");
        assert_eq!(
            request["params"]["message"], "Delete rt.txt?",
            "{kind:?}: {task}"
        );
        assert_eq!(
            request["params"]["requestedSchema"]["required"],
            json!(["confirm"]),
            "{kind:?}: {task}"
        );
        w.cancel(&id).await;
    }
}

/// A cancelled task has no payload; a v1 `requestState` never appears.
#[tokio::test]
async fn get_cancelled_task() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let id = w.create("slow_compute", json!({"seconds": 60})).await;
        w.cancel(&id).await;
        let task = w.get(&id).await;
        assert_eq!(task["status"], "cancelled", "{kind:?}: {task}");
    }
}

// ---- 4.3 tasks/update ----

/// Answering every pending key resumes the task, which completes with the answer.
#[tokio::test]
async fn update_resumes_an_input_required_task() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let (id, _) = parked_confirm_delete(&mut w, "mrtr-resume.txt").await;
        w.update(
            &id,
            json!({"confirm-delete": accept(json!({"confirm": true}))}),
        )
        .await;
        let task = w.wait_for(&id, &["completed"]).await;
        assert_eq!(text(&task["result"]), "Delete confirmed: true", "{kind:?}");
    }
}

/// Keys that match no pending request are ignored and still acknowledged.
#[tokio::test]
async fn update_with_unknown_keys_is_acknowledged_and_changes_nothing() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let (id, before) = parked_confirm_delete(&mut w, "unknown-key.txt").await;
        w.update_unchecked(&id, json!({"unknown-key": {"ignored": true}}))
            .await;
        let after = w.get(&id).await;
        assert_eq!(after["status"], "input_required", "{kind:?}: {after}");
        assert_eq!(after["inputRequests"], before["inputRequests"], "{kind:?}");
        w.update(&id, json!({})).await;
        assert_eq!(w.get(&id).await["status"], "input_required", "{kind:?}");
        w.cancel(&id).await;
    }
}

/// Partial fulfilment (reference 6.1): with two pending keys, answering one leaves the
/// task input_required with only the other; an answer to an already answered key is
/// ignored (errata section 4); answering the second completes the task.
#[tokio::test]
async fn partial_fulfilment_keeps_the_other_key_pending() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let id = w.create("multi_input", json!({})).await;
        let deadline = Deadline::new(format!("{kind:?}: both keys show"));
        loop {
            let task = w.wait_for(&id, &["input_required"]).await;
            if keys(&task["inputRequests"]) == BTreeSet::from(["first-input", "second-input"]) {
                break;
            }
            deadline.tick(&task).await;
        }
        w.update(
            &id,
            json!({"first-input": accept(json!({"name": "partial-1", "confirm": true}))}),
        )
        .await;
        let task = w.get(&id).await;
        assert_eq!(task["status"], "input_required", "{kind:?}: {task}");
        assert_eq!(
            keys(&task["inputRequests"]),
            BTreeSet::from(["second-input"]),
            "{kind:?}: only the unanswered key: {task}"
        );
        w.update(
            &id,
            json!({"first-input": accept(json!({"name": "replaced"}))}),
        )
        .await;
        let task = w.get(&id).await;
        assert_eq!(task["status"], "input_required", "{kind:?}: {task}");
        assert_eq!(
            keys(&task["inputRequests"]),
            BTreeSet::from(["second-input"])
        );
        w.update(
            &id,
            json!({"second-input": accept(json!({"confirm": true}))}),
        )
        .await;
        let task = w.wait_for(&id, &["completed"]).await;
        assert_eq!(
            text(&task["result"]),
            "Inputs received: partial-1, confirmed",
            "{kind:?}: the first answer stands"
        );
    }
}

/// An update for a terminal task is acknowledged and changes nothing; so is one for a
/// working task that asked for nothing.
#[tokio::test]
async fn update_on_terminal_or_working_task_is_acknowledged_without_change() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let id = w.create("slow_compute", json!({"label": "t"})).await;
        let before = w.wait_for(&id, &["completed"]).await;
        w.update(
            &id,
            json!({"confirm-delete": accept(json!({"confirm": true}))}),
        )
        .await;
        assert_eq!(w.get(&id).await, before, "{kind:?}: unchanged");

        let id = w.create("slow_compute", json!({"seconds": 60})).await;
        let before = w.get(&id).await;
        w.update_unchecked(&id, json!({"anything": {}})).await;
        assert_eq!(w.get(&id).await, before, "{kind:?}: unchanged");
        w.cancel(&id).await;
        let cancelled = w.get(&id).await;
        w.update_unchecked(&id, json!({"anything": {}})).await;
        assert_eq!(w.get(&id).await, cancelled, "{kind:?}: unchanged");
    }
}

/// Errata T-4: an answer that does not match the requested schema is never taken as an
/// acceptance: the task does not complete with it.
#[tokio::test]
async fn update_with_an_answer_off_the_requested_schema_is_not_accepted() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let (id, _) = parked_confirm_delete(&mut w, "schema.txt").await;
        w.update(
            &id,
            json!({"confirm-delete": accept(json!({"confirm": "yes please"}))}),
        )
        .await;
        // The answer completed the pending set: the task is working once the update is
        // acknowledged, until its tool has run with the answer. It must not complete
        // (wait_for fails on any other terminal status than those asked for).
        let task = w.wait_for(&id, &["failed", "input_required"]).await;
        assert!(
            task["status"] != "completed",
            "{kind:?}: an off-schema answer completed the task: {task}"
        );
        if task["status"] == "failed" {
            // A protocol error inside a task fails it with the error the request itself
            // would have answered: -32602 for an answer off the requested schema.
            assert_eq!(task["error"]["code"], json!(-32602), "{kind:?}: {task}");
            assert!(
                task["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("Invalid input response")),
                "{kind:?}: {task}"
            );
        } else {
            w.cancel(&id).await;
        }
    }
}

/// 4.5 step 5: the `tasks/update` params checks, with their exact messages, run before
/// the lookup (so they answer for an unknown task too).
#[tokio::test]
async fn update_params_are_checked_before_lookup() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let live = w.create("slow_compute", json!({"seconds": 60})).await;
        for id in [live.as_str(), "no-such-task"] {
            for params in [
                json!({"taskId": id}),
                json!({"taskId": id, "inputResponses": null}),
                json!({"taskId": id, "inputResponses": []}),
                json!({"taskId": id, "inputResponses": "x"}),
            ] {
                w.send_unchecked("tasks/update", declared(params))
                    .await
                    .invalid_params("tasks/update requires an inputResponses object");
            }
            for responses in [
                json!({"": {"action": "accept"}}),
                json!({"k": 1}),
                json!({"k": "accept"}),
                json!({"k": null}),
                json!({"ok": {}, "k": []}),
            ] {
                w.send_unchecked(
                    "tasks/update",
                    declared(json!({"taskId": id, "inputResponses": responses})),
                )
                .await
                .invalid_params("inputResponses is invalid");
            }
        }
        w.send(
            "tasks/update",
            declared(json!({"taskId": "no-such-task", "inputResponses": {}})),
        )
        .await
        .invalid_params(UNKNOWN_TASK);
        assert_eq!(w.get(&live).await["status"], "working", "{kind:?}");
        w.cancel(&live).await;
    }
}

// ---- 4.4 tasks/cancel ----

/// Cancelling a working task is an empty acknowledgement that does not wait for the
/// task; the next `tasks/get` already reads `cancelled` (a sleeping slow_compute stops
/// at once).
#[tokio::test]
async fn cancel_is_an_empty_ack_and_reads_cancelled_at_once() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let id = w.create("slow_compute", json!({"seconds": 60})).await;
        let started = Instant::now();
        w.cancel(&id).await;
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{kind:?}: the ack does not wait for the task"
        );
        let task = w.get(&id).await;
        assert_eq!(task["status"], "cancelled", "{kind:?}: {task}");
        assert!(task["statusMessage"].is_string(), "{kind:?}: {task}");
    }
}

/// Cancel on a terminal task (completed, failed, cancelled) is the same acknowledgement
/// and changes nothing.
#[tokio::test]
async fn cancel_on_terminal_tasks_is_idempotent() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let done = w.create("slow_compute", json!({"label": "idem"})).await;
        let failed = w.create("protocol_error_job", json!({})).await;
        let cancelled = w.create("slow_compute", json!({"seconds": 60})).await;
        w.cancel(&cancelled).await;
        for id in [&done, &failed, &cancelled] {
            let before = w.wait_terminal(id).await;
            w.cancel(id).await;
            w.cancel(id).await;
            assert_eq!(w.get(id).await, before, "{kind:?}: unchanged");
        }
    }
}

/// Cancelling an input_required task drops its pending requests; later answers are
/// acknowledged and change nothing.
#[tokio::test]
async fn cancel_an_input_required_task() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let (id, _) = parked_confirm_delete(&mut w, "cancel.txt").await;
        w.cancel(&id).await;
        let task = w.get(&id).await;
        assert_eq!(task["status"], "cancelled", "{kind:?}: {task}");
        // A terminal task has no worker: what the acknowledged update changed shows in
        // the next read.
        w.update(
            &id,
            json!({"confirm-delete": accept(json!({"confirm": true}))}),
        )
        .await;
        assert_eq!(w.get(&id).await, task, "{kind:?}: stays cancelled");
    }
}

// ---- 4.5 the order of checks ----

/// `tasks/result` and `tasks/list` are removed: -32601 (HTTP 404) whatever the params
/// and declaration, so it wins over any params check.
#[tokio::test]
async fn removed_methods_are_32601_before_any_params_check() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let live = w.create("slow_compute", json!({"seconds": 60})).await;
        let long = "x".repeat(300);
        for method in ["tasks/result", "tasks/list"] {
            for params in [
                json!({"taskId": "tasks-conformance-isolation-probe"}),
                json!({}),
                json!({"taskId": ""}),
                json!({"taskId": long}),
                json!({"taskId": 7, "cursor": 3}),
                json!({"taskId": live}),
            ] {
                for caps in [crate::tasks::tasks_caps(), plain_caps(), json!({})] {
                    w.send_unchecked(method, with_caps(params.clone(), caps))
                        .await
                        .method_not_found();
                }
            }
        }
        w.cancel(&live).await;
    }
}

/// 2.3 and 4.5 step 4: an undeclared `tasks/get`, `tasks/update` or `tasks/cancel` is
/// -32021 with the full data shape, before any params check or lookup.
#[tokio::test]
async fn undeclared_task_methods_are_32021_before_params_checks() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let live = w.create("slow_compute", json!({"seconds": 60})).await;
        let long = "x".repeat(300);
        for (method, params) in [
            ("tasks/get", json!({"taskId": "gate-test"})),
            (
                "tasks/update",
                json!({"taskId": "gate-test", "inputResponses": {}}),
            ),
            ("tasks/cancel", json!({"taskId": "gate-test"})),
            ("tasks/get", json!({})),
            ("tasks/update", json!({"taskId": ""})),
            ("tasks/cancel", json!({"taskId": long})),
            (
                "tasks/update",
                json!({"taskId": "gate-test", "inputResponses": 5}),
            ),
            ("tasks/get", json!({"taskId": live})),
            ("tasks/cancel", json!({"taskId": live})),
        ] {
            for caps in [plain_caps(), json!({}), json!({"extensions": {}})] {
                w.send_unchecked(method, with_caps(params.clone(), caps))
                    .await
                    .missing_tasks();
            }
        }
        assert_eq!(
            w.get(&live).await["status"],
            "working",
            "{kind:?}: the undeclared cancel did nothing"
        );
        w.cancel(&live).await;
    }
}

/// 4.5 step 5: `taskId` must be a non-empty string of at most 256 bytes, on all three
/// methods, with the exact messages.
#[tokio::test]
async fn task_id_param_checks() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let long = "é".repeat(129); // 258 bytes, 129 characters
        let longest = "t".repeat(256);
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let with = |id: Value| json!({"taskId": id, "inputResponses": {}});
            for id in [json!(""), json!(42), json!(null), json!(["t"]), json!({})] {
                w.send_unchecked(method, declared(with(id)))
                    .await
                    .invalid_params("A non-empty taskId is required");
            }
            w.send_unchecked(method, declared(json!({"inputResponses": {}})))
                .await
                .invalid_params("A non-empty taskId is required");
            w.send(method, declared(with(json!(long))))
                .await
                .invalid_params("taskId is longer than 256 bytes");
            w.send(method, declared(with(json!("u".repeat(257)))))
                .await
                .invalid_params("taskId is longer than 256 bytes");
            w.send(method, declared(with(json!(longest))))
                .await
                .invalid_params(UNKNOWN_TASK);
        }
    }
}

/// 4.5 step 6: unknown ids are -32602 `Unknown or inaccessible taskId` on every method.
#[tokio::test]
async fn unknown_task_ids_are_32602_on_every_method() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            for id in ["tasks-conformance-nonexistent-12345", "gate-test"] {
                w.send(
                    method,
                    declared(json!({"taskId": id, "inputResponses": {}})),
                )
                .await
                .invalid_params(UNKNOWN_TASK);
            }
        }
        // A task of another server is as unknown as a made-up one.
        let mut other = fixture(kind).await;
        let foreign = other.create("slow_compute", json!({"seconds": 60})).await;
        w.send("tasks/get", declared(task_id(&foreign)))
            .await
            .invalid_params(UNKNOWN_TASK);
        other.cancel(&foreign).await;
    }
}

// ---- section 7: Mcp-Name on HTTP ----

/// On HTTP the three task methods mirror `params.taskId` in `Mcp-Name`: a match (also
/// base64-wrapped) is served; a mismatch or a missing header is -32020 (HTTP 400) and
/// changes nothing; `Mcp-Method` must match the body too.
#[tokio::test]
async fn mcp_name_mirrors_the_task_id_on_http() {
    let mut w = fixture(Kind::Http).await;
    let id = w.create("slow_compute", json!({"seconds": 60})).await;
    let got = w
        .send_with("tasks/get", declared(task_id(&id)), &[("mcp-name", &id)])
        .await;
    assert_eq!(got.result()["taskId"], json!(id));
    let wrapped = format!("=?base64?{}?=", base64_of(&id));
    let got = w
        .send_with(
            "tasks/get",
            declared(task_id(&id)),
            &[("Mcp-Name", &wrapped)],
        )
        .await;
    assert_eq!(got.result()["taskId"], json!(id));
    let wrong = "sep-2663-wrong-task-id-for-routing-header-mismatch";
    for (method, params) in [
        ("tasks/get", task_id(&id)),
        ("tasks/cancel", task_id(&id)),
        (
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"k": {"action": "cancel"}}}),
        ),
    ] {
        for name in [wrong, ""] {
            w.send_with(method, declared(params.clone()), &[("Mcp-Name", name)])
                .await
                .error(-32020, 400);
        }
    }
    // Header checks come first (reference 4.5 step 1): an undeclared request with a
    // wrong Mcp-Name is -32020, not -32021.
    w.send_with(
        "tasks/get",
        undeclared(task_id(&id)),
        &[("Mcp-Name", wrong)],
    )
    .await
    .error(-32020, 400);
    w.send_with(
        "tasks/get",
        declared(task_id(&id)),
        &[("Mcp-Method", "tasks/cancel")],
    )
    .await
    .error(-32020, 400);
    assert_eq!(
        w.get(&id).await["status"],
        "working",
        "the refused cancels did nothing"
    );
    w.cancel(&id).await;
}

/// The task methods on stdio need no header: the same requests are served.
#[tokio::test]
async fn task_methods_on_stdio_need_no_header() {
    let lab = Lab::new(Tasks::builder());
    let mut w = Client::start(Kind::Stdio, &lab.server).await;
    let id = w.create("quick", json!({"n": 3})).await;
    let task = w.wait_for(&id, &["completed"]).await;
    assert_eq!(text(&task["result"]), "quick 3");
    let got = w
        .send("tools/call", undeclared(tool("sleeper", json!({"ms": 0}))))
        .await;
    assert_eq!(assert_sync(&got), "slept 0");
    assert_ack(
        w.send("tasks/cancel", declared(task_id(&id)))
            .await
            .result(),
    );
}
