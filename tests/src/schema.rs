//! Validation against the official 2026-07-28 JSON schema (vendored in `tests/schema/`).
//!
//! [`check_response`] and [`check_notification`] pick the `$defs` entry that matches a
//! message and panic with every problem when it does not validate; [`check_message`]
//! checks a message whose request is not known.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

const SCHEMA: &str = include_str!("../schema/schema-2026-07-28.json");

fn defs() -> &'static Value {
    static DEFS: OnceLock<Value> = OnceLock::new();
    DEFS.get_or_init(|| {
        let schema: Value = serde_json::from_str(SCHEMA).expect("the vendored schema parses");
        schema["$defs"].clone()
    })
}

fn validator(def: &str) -> Arc<jsonschema::Validator> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(v) = cache.get(def) {
        return Arc::clone(v);
    }
    assert!(
        defs().get(def).is_some(),
        "no $defs entry {def} in the schema"
    );
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": format!("#/$defs/{def}"),
        "$defs": defs(),
    });
    let v = Arc::new(
        jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .expect("the schema compiles"),
    );
    cache.insert(def.to_owned(), Arc::clone(&v));
    v
}

/// Validates `value` against `$defs.<def>`: the list of problems, empty when valid.
pub fn problems(def: &str, value: &Value) -> Vec<String> {
    validator(def)
        .iter_errors(value)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Panics unless `value` validates against `$defs.<def>`.
#[track_caller]
pub fn assert_valid(def: &str, value: &Value) {
    let p = problems(def, value);
    assert!(p.is_empty(), "{value} is not a valid {def}: {p:#?}");
}

/// The `$defs` entry of the success response to `method`.
pub fn response_def(method: &str) -> Option<&'static str> {
    Some(match method {
        "server/discover" => "DiscoverResultResponse",
        "tools/list" => "ListToolsResultResponse",
        "tools/call" => "CallToolResultResponse",
        "resources/list" => "ListResourcesResultResponse",
        "resources/templates/list" => "ListResourceTemplatesResultResponse",
        "resources/read" => "ReadResourceResultResponse",
        "prompts/list" => "ListPromptsResultResponse",
        "prompts/get" => "GetPromptResultResponse",
        "completion/complete" => "CompleteResultResponse",
        "subscriptions/listen" => "SubscriptionsListenResultResponse",
        _ => return None,
    })
}

/// The normal (completed) result of the methods whose result may also be input-required.
fn result_def(method: &str) -> Option<&'static str> {
    Some(match method {
        "tools/call" => "CallToolResult",
        "prompts/get" => "GetPromptResult",
        "resources/read" => "ReadResourceResult",
        _ => return None,
    })
}

/// Checks a response the server sent for `method`: a result against the method's
/// `*ResultResponse`, an error against `JSONRPCErrorResponse` and the definition of its
/// code. Panics on any problem.
#[track_caller]
pub fn check_response(method: &str, message: &Value) {
    if let Some(result) = message.get("result") {
        let def = response_def(method).unwrap_or("JSONRPCResultResponse");
        assert_valid(def, message);
        assert_valid("JSONRPCResultResponse", message);
        // The three methods that may ask for input type their result as "an input-required
        // result or the normal one", and `InputRequiredResult` asks only for a
        // `resultType`: any completed result would match it. So the result is checked
        // against the one its `resultType` names. (`task`, the Tasks extension's, is not
        // in the core schema.)
        if let Some(normal) = result_def(method) {
            match result.get("resultType").and_then(Value::as_str) {
                Some("input_required") => assert_valid("InputRequiredResult", result),
                Some("task") => {}
                _ => assert_valid(normal, result),
            }
        }
        return;
    }
    check_error(message);
}

/// Checks an error response against `JSONRPCErrorResponse` and the definition of its
/// code (the same for every method).
#[track_caller]
fn check_error(message: &Value) {
    let error = message
        .get("error")
        .unwrap_or_else(|| panic!("{message} is neither a result nor an error"));
    assert_valid("JSONRPCErrorResponse", message);
    let code = error
        .get("code")
        .and_then(Value::as_i64)
        .unwrap_or_default();
    match code {
        -32020 => assert_valid("HeaderMismatchError", message),
        -32021 => assert_valid("MissingRequiredClientCapabilityError", message),
        -32022 => assert_valid("UnsupportedProtocolVersionError", message),
        -32700 => assert_valid("ParseError", error),
        -32600 => assert_valid("InvalidRequestError", error),
        -32601 => assert_valid("MethodNotFoundError", error),
        -32602 => assert_valid("InvalidParamsError", error),
        -32603 => assert_valid("InternalError", error),
        _ => {}
    }
}

/// Checks a notification the server sent against `ServerNotification` and the
/// definition of its method.
#[track_caller]
pub fn check_notification(message: &Value) {
    assert_valid("ServerNotification", message);
    let def = match message.get("method").and_then(Value::as_str) {
        Some("notifications/progress") => "ProgressNotification",
        Some("notifications/message") => "LoggingMessageNotification",
        Some("notifications/cancelled") => "CancelledNotification",
        Some("notifications/tools/list_changed") => "ToolListChangedNotification",
        Some("notifications/prompts/list_changed") => "PromptListChangedNotification",
        Some("notifications/resources/list_changed") => "ResourceListChangedNotification",
        Some("notifications/resources/updated") => "ResourceUpdatedNotification",
        Some("notifications/subscriptions/acknowledged") => "SubscriptionsAcknowledgedNotification",
        other => panic!("unexpected notification method {other:?} in {message}"),
    };
    assert_valid(def, message);
}

/// Checks any message a server sent when the request it answers is not known here (a
/// raw stdio line): a notification as [`check_notification`] does (one of the Tasks
/// extension's, which the core schema does not define, as a `JSONRPCNotification`), an
/// error response fully, a result response as a `JSONRPCResultResponse` and, when it asks
/// for input, as an `InputRequiredResult`. [`check_response`] checks a result against its
/// method's definition too, so a caller that knows the method still calls it.
#[track_caller]
pub fn check_message(message: &Value) {
    match message.get("method").and_then(Value::as_str) {
        Some(m) if m.starts_with("notifications/tasks") => {
            assert_valid("JSONRPCNotification", message)
        }
        Some(_) => check_notification(message),
        None if message.get("result").is_some() => {
            assert_valid("JSONRPCResultResponse", message);
            if message["result"].get("resultType") == Some(&json!("input_required")) {
                assert_valid("InputRequiredResult", &message["result"]);
            }
        }
        None => check_error(message),
    }
}

/// Checks every message of an exchange: notifications first, then one response.
#[track_caller]
pub fn check_exchange(method: &str, messages: &[Value]) {
    let (last, notes) = messages
        .split_last()
        .unwrap_or_else(|| panic!("no messages for {method}"));
    for n in notes {
        check_notification(n);
    }
    check_response(method, last);
}
