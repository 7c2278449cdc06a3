//! Negative controls: the schema check the other tests rely on can fail.

use presa_tests::schema::{check_message, check_response, problems};
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
