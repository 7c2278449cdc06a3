//! Negative controls: the checks the other tests rely on can fail (the schema checks of
//! what the server sends and of what a test sends, the stdio response check, the SSE
//! reader, the check of bytes framed by hand).

use presa_tests::schema::{
    check_message, check_notification, check_outgoing, check_response, problems,
};
use presa_tests::sse::Frame;
use presa_tests::stdio::{Pending, Session};
use presa_tests::{request, with_meta};
use serde_json::json;

#[test]
fn an_error_with_a_null_id_is_refused() {
    let bad = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "x"}});
    assert!(!problems("JSONRPCErrorResponse", &bad).is_empty());
    let good = json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "x"}});
    assert!(problems("JSONRPCErrorResponse", &good).is_empty());
}

#[test]
fn a_list_without_caching_hints_is_refused() {
    let bad = json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "tools": []}});
    let result = std::panic::catch_unwind(|| check_response("tools/list", &bad));
    assert!(
        result.is_err(),
        "a tools/list result without ttlMs must fail the check"
    );
}

#[test]
fn unsupported_version_without_data_is_refused() {
    let bad = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "x"}});
    let result = std::panic::catch_unwind(|| check_response("server/discover", &bad));
    assert!(result.is_err());
}

/// A completed `tools/call`, `prompts/get` or `resources/read` result is checked against
/// its own definition, not only against the union with `InputRequiredResult` (which a
/// bare `resultType` satisfies).
#[test]
fn a_completed_result_is_checked_against_its_own_definition() {
    for (method, result) in [
        ("tools/call", json!({"resultType": "complete"})),
        (
            "tools/call",
            json!({"resultType": "complete", "content": [{"type": "image", "data": "x"}]}),
        ),
        (
            "tools/call",
            json!({"resultType": "complete", "content": [], "isError": "yes"}),
        ),
        ("prompts/get", json!({"resultType": "complete"})),
        (
            "prompts/get",
            json!({"resultType": "complete", "messages": [
                {"role": "robot", "content": {"type": "text", "text": "x"}}]}),
        ),
        ("resources/read", json!({"resultType": "complete"})),
    ] {
        let bad = json!({"jsonrpc": "2.0", "id": 1, "result": result});
        let refused = std::panic::catch_unwind(|| check_response(method, &bad)).is_err();
        assert!(refused, "{method}: {bad} must fail the check");
    }
    let asks = json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required",
        "inputRequests": {"k": {"method": "roots/list", "params": {}}}}});
    check_response("tools/call", &asks);
}

/// The check a raw stdio line gets (the request it answers unknown) refuses what each of
/// its branches must, and passes what the server sends.
#[test]
fn a_raw_line_is_checked_by_its_kind() {
    for bad in [
        // An error whose code's definition is broken: -32022 needs data.
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "x"}}),
        // A notification the core schema does not define.
        json!({"jsonrpc": "2.0", "method": "notifications/unknown", "params": {}}),
        // A progress notification without its token.
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}),
        // A Tasks notification is still a JSON-RPC notification.
        json!({"jsonrpc": "1.0", "method": "notifications/tasks/status", "params": {}}),
        // A result that asks for input with an ask of the wrong shape.
        json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required",
            "inputRequests": {"k": {"method": "roots/list", "params": 3}}}}),
        // A result response without an id.
        json!({"jsonrpc": "2.0", "result": {}}),
    ] {
        let refused = std::panic::catch_unwind(|| check_message(&bad)).is_err();
        assert!(refused, "{bad} must fail the check");
    }
    check_message(&json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}}));
    check_message(
        &json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": "t", "progress": 1}}),
    );
}

/// The Tasks extension's messages are checked against its own schema: a
/// CreateTaskResult, a `tasks/*` result and a `notifications/tasks` missing what the
/// schema requires are refused, a task result for any method but `tools/call` too, and
/// well-formed ones pass.
#[test]
fn task_messages_are_checked_against_the_tasks_schema() {
    let task = json!({"taskId": "t", "status": "working", "createdAt": "2026-01-01T00:00:00.000Z",
        "lastUpdatedAt": "2026-01-01T00:00:00.000Z", "ttlMs": null, "pollIntervalMs": 100});
    let mut created = task.clone();
    created["resultType"] = json!("task");
    let response =
        |result: &serde_json::Value| json!({"jsonrpc": "2.0", "id": 1, "result": result});
    check_response("tools/call", &response(&created));
    check_message(&response(&created));
    let mut no_ttl = created.clone();
    no_ttl.as_object_mut().expect("an object").remove("ttlMs");
    let mut completed = task.clone();
    completed["resultType"] = json!("complete");
    completed["status"] = json!("completed");
    for (method, bad) in [
        ("tools/call", response(&no_ttl)),
        ("resources/read", response(&created)),
        ("prompts/get", response(&created)),
        // A completed task inlines its result.
        ("tasks/get", response(&completed)),
        // The acknowledgements are results too.
        ("tasks/cancel", response(&json!({}))),
    ] {
        let refused = std::panic::catch_unwind(|| check_response(method, &bad)).is_err();
        assert!(refused, "{method}: {bad} must fail the check");
    }
    completed["result"] = json!({"content": []});
    check_response("tasks/get", &response(&completed));
    check_response(
        "tasks/update",
        &response(&json!({"resultType": "complete"})),
    );
    let note = |params: serde_json::Value| json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": params});
    check_notification(&note(task.clone()));
    let mut no_id = task;
    no_id.as_object_mut().expect("an object").remove("taskId");
    let refused = std::panic::catch_unwind(|| check_notification(&note(no_id))).is_err();
    assert!(
        refused,
        "a notifications/tasks without taskId must fail the check"
    );
}

/// What a test sends is checked as a client message: a request the schemas do not
/// define, one without `_meta`, a task request without its `taskId`, a notification but
/// `notifications/cancelled` and a response are refused; correct ones pass.
#[test]
fn what_a_test_sends_is_checked() {
    check_outgoing(&request(1, "server/discover", json!({})));
    check_outgoing(&request(2, "tasks/get", json!({"taskId": "t"})));
    check_outgoing(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
    );
    for bad in [
        request(3, "nope/nope", json!({})),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}),
        request(6, "tasks/get", json!({})),
        request(7, "tools/call", json!({"name": "x", "arguments": []})),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 8, "result": {"resultType": "complete"}}),
        json!({"jsonrpc": "1.0", "id": 9, "method": "server/discover", "params": with_meta(json!({}))}),
    ] {
        let refused = std::panic::catch_unwind(|| check_outgoing(&bad)).is_err();
        assert!(refused, "{bad} must fail the check");
    }
}

/// A stdio response is checked against the method of the request with its id: a
/// `tools/list` result without its caching hints fails, though it is a well-formed
/// result of an unknown request.
#[test]
fn a_stdio_response_is_checked_against_its_request() {
    let bad = json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "tools": []}});
    check_message(&bad);
    let mut pending = Pending::default();
    pending.sent(&request(1, "tools/list", json!({})));
    let refused = std::panic::catch_unwind(move || pending.check(&bad)).is_err();
    assert!(refused, "checked as a tools/list result");
}

/// The one SSE reader tells comments from events, reads CRLF and multi-line data, skips
/// blocks without data, and checks each event as an answer to the request.
#[test]
fn the_sse_reader_reads_frames_and_checks_events() {
    let event = json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": "t", "progress": 1}});
    let body = format!(": keepalive\r\n\r\nevent: message\r\n\r\ndata: {event}\r\n\r\n");
    let frames = presa_tests::sse::frames(&body, "tools/call");
    assert_eq!(frames.len(), 2, "{frames:?}");
    assert!(matches!(&frames[0], Frame::Comment(c) if c == "keepalive"));
    assert!(matches!(&frames[1], Frame::Data(m) if *m == event));
    let split = "data: {\"jsonrpc\": \"2.0\",\ndata: \"id\": 1, \"result\": {\"resultType\": \"complete\"}}\n\n";
    assert_eq!(presa_tests::sse::parse(split, "").len(), 1);
    let bad =
        "data: {\"jsonrpc\": \"2.0\", \"method\": \"notifications/progress\", \"params\": {}}\n\n";
    let refused = std::panic::catch_unwind(|| presa_tests::sse::parse(bad, "tools/call")).is_err();
    assert!(refused, "an event off the schema fails the check");
}

/// Bytes framed by hand are checked line by line once each line is whole; a line that
/// is not a valid message fails the test (it belongs on `write_raw_unchecked`).
#[tokio::test]
async fn bytes_written_by_hand_are_checked_line_by_line() {
    let server = presa_tests::fixture();
    let mut s = Session::in_process(server, presa::StdioConfig::default());
    let line = presa_tests::stdio::line(&request(1, "server/discover", json!({})));
    let (a, b) = line.split_at(10);
    // Half a line is not checked yet; the whole one passes.
    s.write_bytes(a).await;
    s.write_bytes(b).await;
    s.write_bytes(b"\r\n  \n").await;
    assert_eq!(s.recv().await.expect("the answer")["id"], json!(1));
    for junk in [&b"not json\n"[..], b"{\"jsonrpc\": \"2.0\"}\n"] {
        let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            drop(s.write_bytes(junk));
        }))
        .is_err();
        assert!(
            refused,
            "{:?} must fail the check",
            String::from_utf8_lossy(junk)
        );
    }
}
