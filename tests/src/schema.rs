//! Validation against the official 2026-07-28 JSON schema and the Tasks extension's own
//! schema (both vendored in `tests/schema/`), for what a test sends and what a server
//! sends back.
//!
//! Server side: [`check_response`] and [`check_notification`] pick the definition that
//! matches a message (the core schema's, or the Tasks schema's for `tasks/*` results,
//! a `CreateTaskResult` and `notifications/tasks`) and panic with every problem when it
//! does not validate; [`check_message`] checks a message whose request is not known, and
//! [`check_exchange`] the notifications and response of one request.
//!
//! Client side: [`check_outgoing`] checks a request or notification a test is about to
//! send against the client's definitions, so that a test meaning to send a valid
//! message does. A test that sends something invalid on purpose goes through a path
//! named `*_unchecked`, which skips this check (and only this one).

use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

const CORE: &str = include_str!("../schema/schema-2026-07-28.json");
const TASKS: &str = include_str!("../schema/ext-tasks-schema.json");

/// Which vendored schema a definition belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Schema {
    /// The official MCP 2026-07-28 schema.
    Core,
    /// The Tasks extension's schema (`io.modelcontextprotocol/tasks`).
    Tasks,
}

impl Schema {
    fn text(self) -> &'static str {
        match self {
            Schema::Core => CORE,
            Schema::Tasks => TASKS,
        }
    }
}

fn defs(schema: Schema) -> &'static Value {
    static CORE_DEFS: OnceLock<Value> = OnceLock::new();
    static TASKS_DEFS: OnceLock<Value> = OnceLock::new();
    let cell = match schema {
        Schema::Core => &CORE_DEFS,
        Schema::Tasks => &TASKS_DEFS,
    };
    cell.get_or_init(|| {
        let parsed: Value =
            serde_json::from_str(schema.text()).expect("the vendored schema parses");
        parsed["$defs"].clone()
    })
}

fn validator(schema: Schema, def: &str) -> Arc<jsonschema::Validator> {
    type Cache = Mutex<HashMap<(Schema, String), Arc<jsonschema::Validator>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (schema, def.to_owned());
    if let Some(v) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Arc::clone(v);
    }
    assert!(
        defs(schema).get(def).is_some(),
        "no $defs entry {def} in the {schema:?} schema"
    );
    let root = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": format!("#/$defs/{def}"),
        "$defs": defs(schema),
    });
    let v = Arc::new(
        jsonschema::options()
            .should_validate_formats(true)
            .build(&root)
            .unwrap_or_else(|e| panic!("the {schema:?} schema's {def} compiles: {e}")),
    );
    cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, Arc::clone(&v));
    v
}

/// Validates `value` against `$defs.<def>` of `schema`: the list of problems, empty when
/// valid.
pub fn problems_in(schema: Schema, def: &str, value: &Value) -> Vec<String> {
    validator(schema, def)
        .iter_errors(value)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Validates `value` against the core schema's `$defs.<def>`: the list of problems.
pub fn problems(def: &str, value: &Value) -> Vec<String> {
    problems_in(Schema::Core, def, value)
}

/// Panics unless `value` validates against `$defs.<def>` of `schema`.
#[track_caller]
pub fn assert_valid_in(schema: Schema, def: &str, value: &Value) {
    let p = problems_in(schema, def, value);
    assert!(
        p.is_empty(),
        "{value} is not a valid {def} ({schema:?} schema): {p:#?}"
    );
}

/// Panics unless `value` validates against the core schema's `$defs.<def>`.
#[track_caller]
pub fn assert_valid(def: &str, value: &Value) {
    assert_valid_in(Schema::Core, def, value);
}

/// The core `$defs` entry of the success response to `method`.
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

/// The Tasks schema's definition of the result of a `tasks/*` method.
fn tasks_result_def(method: &str) -> Option<&'static str> {
    Some(match method {
        "tasks/get" => "GetTaskResult",
        "tasks/update" => "UpdateTaskResult",
        "tasks/cancel" => "CancelTaskResult",
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

/// Checks a response the server sent for `method` (`""` when it is not known): a result
/// against the method's `*ResultResponse` (for `tasks/*`, the Tasks schema's result
/// definition), an error against `JSONRPCErrorResponse` and the definition of its code.
/// A `CreateTaskResult` (`resultType: "task"`) is valid only for `tools/call` (Tasks
/// "Supported Methods") and is checked against the Tasks schema. Panics on any problem.
#[track_caller]
pub fn check_response(method: &str, message: &Value) {
    let Some(result) = message.get("result") else {
        check_error(message);
        return;
    };
    assert_valid("JSONRPCResultResponse", message);
    if let Some(def) = tasks_result_def(method) {
        assert_valid_in(Schema::Tasks, def, result);
        return;
    }
    if result.get("resultType").and_then(Value::as_str) == Some("task") {
        assert!(
            method == "tools/call" || method.is_empty(),
            "only tools/call may create a task (Tasks, Supported Methods), not {method}: \
             {message}"
        );
        assert_valid_in(Schema::Tasks, "CreateTaskResult", result);
        return;
    }
    if let Some(def) = response_def(method) {
        assert_valid(def, message);
    }
    // The three methods that may ask for input type their result as "an input-required
    // result or the normal one", and `InputRequiredResult` asks only for a `resultType`:
    // any completed result would match it. So the result is checked against the one its
    // `resultType` names.
    if let Some(normal) = result_def(method) {
        match result.get("resultType").and_then(Value::as_str) {
            Some("input_required") => assert_valid("InputRequiredResult", result),
            _ => assert_valid(normal, result),
        }
    } else if result.get("resultType") == Some(&json!("input_required")) {
        assert_valid("InputRequiredResult", result);
    }
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
/// definition of its method; `notifications/tasks` against the Tasks schema's
/// `TaskStatusNotification`.
#[track_caller]
pub fn check_notification(message: &Value) {
    if message.get("method").and_then(Value::as_str) == Some("notifications/tasks") {
        assert_valid("JSONRPCNotification", message);
        assert_valid_in(Schema::Tasks, "TaskStatusNotification", message);
        return;
    }
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

/// Checks one message a server sent in answer to a request for `method` (`""` when the
/// request is not known): a notification as [`check_notification`] does, a response as
/// [`check_response`] does.
#[track_caller]
pub fn check_server_message(method: &str, message: &Value) {
    if message.get("method").is_some() {
        check_notification(message);
    } else {
        check_response(method, message);
    }
}

/// Checks any message a server sent when the request it answers is not known here (a
/// raw stdio line): a notification as [`check_notification`] does, an error response
/// fully, a result response as a `JSONRPCResultResponse` (a `CreateTaskResult` or an
/// `InputRequiredResult` against its own definition). [`check_response`] checks a result
/// against its method's definition too, so a caller that knows the method calls it.
#[track_caller]
pub fn check_message(message: &Value) {
    check_server_message("", message);
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
    assert!(
        last.get("method").is_none(),
        "the last message for {method} is its response: {last}"
    );
    check_response(method, last);
}

/// The core `$defs` entry of a client request for `method`.
fn request_def(method: &str) -> Option<(Schema, &'static str)> {
    Some(match method {
        "server/discover" => (Schema::Core, "DiscoverRequest"),
        "tools/list" => (Schema::Core, "ListToolsRequest"),
        "tools/call" => (Schema::Core, "CallToolRequest"),
        "resources/list" => (Schema::Core, "ListResourcesRequest"),
        "resources/templates/list" => (Schema::Core, "ListResourceTemplatesRequest"),
        "resources/read" => (Schema::Core, "ReadResourceRequest"),
        "prompts/list" => (Schema::Core, "ListPromptsRequest"),
        "prompts/get" => (Schema::Core, "GetPromptRequest"),
        "completion/complete" => (Schema::Core, "CompleteRequest"),
        "subscriptions/listen" => (Schema::Core, "SubscriptionsListenRequest"),
        "tasks/get" => (Schema::Tasks, "GetTaskRequest"),
        "tasks/update" => (Schema::Tasks, "UpdateTaskRequest"),
        "tasks/cancel" => (Schema::Tasks, "CancelTaskRequest"),
        _ => return None,
    })
}

/// Checks a message a test is about to send as a client: a request against
/// `JSONRPCRequest` and its method's request definition (for `tasks/*` the Tasks
/// schema's, with the core `RequestParams` for its `_meta`), a notification against
/// `ClientNotification`. A client of 2026-07-28 sends nothing else (no responses: the
/// server asks for input in its results). Panics, naming the `*_unchecked` paths, when
/// the message is not one a correct client sends.
#[track_caller]
pub fn check_outgoing(message: &Value) {
    let unchecked = "a test that sends an invalid message on purpose says so: use a \
                     *_unchecked path";
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        panic!("{message} is not a request or notification a client sends ({unchecked})");
    };
    if message.get("id").is_none() {
        let p = problems("ClientNotification", message);
        assert!(
            p.is_empty(),
            "{message} is not a valid ClientNotification ({unchecked}): {p:#?}"
        );
        return;
    }
    let Some((schema, def)) = request_def(method) else {
        panic!("{method} is not a request the schemas define ({unchecked}): {message}");
    };
    let mut p = problems("JSONRPCRequest", message);
    p.extend(problems_in(schema, def, message));
    if schema == Schema::Tasks {
        p.extend(problems("RequestParams", &message["params"]));
    }
    assert!(
        p.is_empty(),
        "{message} is not a valid {def} ({unchecked}): {p:#?}"
    );
}
