//! Negative controls: the schema check the other tests rely on can fail.

use presa_tests::schema::{check_response, problems};
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
