//! Validation against the official 2026-07-28 JSON schema and the Tasks extension's own
//! schema, and against the schemas of the earlier revisions a legacy session negotiates
//! (2025-11-25, 2025-06-18; all vendored in `tests/schema/`), for what a test sends and
//! what a server sends back.
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
//!
//! Legacy sessions: [`check_legacy_server_message`] checks what the server sends in a
//! session of a given revision (results against the definition of the request's method,
//! notifications and the server's own requests against `ServerNotification` and
//! `ServerRequest`), and [`check_legacy_outgoing`] what a test sends in one (against
//! `ClientRequest`, `ClientNotification`, and for a response to the server's request,
//! the result definition of that request).

use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

const CORE: &str = include_str!("../schema/schema-2026-07-28.json");
const TASKS: &str = include_str!("../schema/ext-tasks-schema.json");
const SKILLS: &str = include_str!("../schema/ext-skills-schema.json");
const NOV_2025: &str = include_str!("../schema/schema-2025-11-25.json");
const JUN_2025: &str = include_str!("../schema/schema-2025-06-18.json");

/// Which vendored schema a definition belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Schema {
    /// The official MCP 2026-07-28 schema.
    Core,
    /// The Tasks extension's schema (`io.modelcontextprotocol/tasks`).
    Tasks,
    /// The Skills extension's schema (`io.modelcontextprotocol/skills`), written from
    /// SEP-2640's text (the SEP ships none).
    Skills,
    /// The official MCP 2025-11-25 schema (draft 2020-12, `$defs`).
    Nov2025,
    /// The official MCP 2025-06-18 schema (draft-07, `definitions`).
    Jun2025,
}

impl Schema {
    fn text(self) -> &'static str {
        match self {
            Schema::Core => CORE,
            Schema::Tasks => TASKS,
            Schema::Skills => SKILLS,
            Schema::Nov2025 => NOV_2025,
            Schema::Jun2025 => JUN_2025,
        }
    }

    /// The schema of the legacy revision a session negotiated.
    #[track_caller]
    pub fn legacy(version: &str) -> Schema {
        match version {
            "2025-11-25" => Schema::Nov2025,
            "2025-06-18" => Schema::Jun2025,
            other => panic!("no vendored schema for the legacy revision {other:?}"),
        }
    }

    /// Where the schema keeps its definitions, and the dialect it is written in.
    fn layout(self) -> (&'static str, &'static str) {
        match self {
            Schema::Jun2025 => ("definitions", "http://json-schema.org/draft-07/schema#"),
            _ => ("$defs", "https://json-schema.org/draft/2020-12/schema"),
        }
    }
}

fn defs(schema: Schema) -> &'static Value {
    static CORE_DEFS: OnceLock<Value> = OnceLock::new();
    static TASKS_DEFS: OnceLock<Value> = OnceLock::new();
    static SKILLS_DEFS: OnceLock<Value> = OnceLock::new();
    static NOV_DEFS: OnceLock<Value> = OnceLock::new();
    static JUN_DEFS: OnceLock<Value> = OnceLock::new();
    let cell = match schema {
        Schema::Core => &CORE_DEFS,
        Schema::Tasks => &TASKS_DEFS,
        Schema::Skills => &SKILLS_DEFS,
        Schema::Nov2025 => &NOV_DEFS,
        Schema::Jun2025 => &JUN_DEFS,
    };
    cell.get_or_init(|| {
        let parsed: Value =
            serde_json::from_str(schema.text()).expect("the vendored schema parses");
        parsed[schema.layout().0].clone()
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
    let (place, dialect) = schema.layout();
    let root = json!({
        "$schema": dialect,
        "$ref": format!("#/{place}/{def}"),
        place: defs(schema),
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

/// The Skills schema's definition of the result of a Skills method.
fn skills_result_def(method: &str) -> Option<&'static str> {
    Some(match method {
        "skills/list" => "ListSkillsResult",
        "skills/get" => "GetSkillResult",
        "resources/directory/read" => "ReadDirectoryResult",
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
    if let Some(def) = skills_result_def(method) {
        assert_valid_in(Schema::Skills, def, result);
        if method == "resources/directory/read" {
            for child in result["resources"].as_array().into_iter().flatten() {
                assert_valid("Resource", child);
            }
        }
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
        "skills/list" => (Schema::Skills, "ListSkillsRequest"),
        "skills/get" => (Schema::Skills, "GetSkillRequest"),
        "resources/directory/read" => (Schema::Skills, "ReadDirectoryRequest"),
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
    if matches!(schema, Schema::Tasks | Schema::Skills) {
        p.extend(problems("RequestParams", &message["params"]));
    }
    assert!(
        p.is_empty(),
        "{message} is not a valid {def} ({unchecked}): {p:#?}"
    );
}

/// The definition of a legacy client request for `method`.
fn legacy_request_def(method: &str) -> Option<&'static str> {
    Some(match method {
        "initialize" => "InitializeRequest",
        "ping" => "PingRequest",
        "tools/list" => "ListToolsRequest",
        "tools/call" => "CallToolRequest",
        "resources/list" => "ListResourcesRequest",
        "resources/templates/list" => "ListResourceTemplatesRequest",
        "resources/read" => "ReadResourceRequest",
        "resources/subscribe" => "SubscribeRequest",
        "resources/unsubscribe" => "UnsubscribeRequest",
        "prompts/list" => "ListPromptsRequest",
        "prompts/get" => "GetPromptRequest",
        "completion/complete" => "CompleteRequest",
        "logging/setLevel" => "SetLevelRequest",
        _ => return None,
    })
}

/// The definition of the result a legacy server answers `method` with.
fn legacy_result_def(method: &str) -> Option<&'static str> {
    Some(match method {
        "initialize" => "InitializeResult",
        "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => {
            "EmptyResult"
        }
        "tools/list" => "ListToolsResult",
        "tools/call" => "CallToolResult",
        "resources/list" => "ListResourcesResult",
        "resources/templates/list" => "ListResourceTemplatesResult",
        "resources/read" => "ReadResourceResult",
        "prompts/list" => "ListPromptsResult",
        "prompts/get" => "GetPromptResult",
        "completion/complete" => "CompleteResult",
        // The client's answers to the server's requests.
        "elicitation/create" => "ElicitResult",
        "sampling/createMessage" => "CreateMessageResult",
        "roots/list" => "ListRootsResult",
        _ => return None,
    })
}

/// The definition of a notification either side sends in a legacy session.
fn legacy_notification_def(method: &str) -> Option<&'static str> {
    Some(match method {
        "notifications/progress" => "ProgressNotification",
        "notifications/message" => "LoggingMessageNotification",
        "notifications/cancelled" => "CancelledNotification",
        "notifications/initialized" => "InitializedNotification",
        "notifications/roots/list_changed" => "RootsListChangedNotification",
        "notifications/tools/list_changed" => "ToolListChangedNotification",
        "notifications/prompts/list_changed" => "PromptListChangedNotification",
        "notifications/resources/list_changed" => "ResourceListChangedNotification",
        "notifications/resources/updated" => "ResourceUpdatedNotification",
        "notifications/elicitation/complete" => "ElicitationCompleteNotification",
        _ => return None,
    })
}

/// The definition of a request the server sends a legacy client.
fn legacy_server_request_def(method: &str) -> Option<&'static str> {
    Some(match method {
        "ping" => "PingRequest",
        "elicitation/create" => "ElicitRequest",
        "sampling/createMessage" => "CreateMessageRequest",
        "roots/list" => "ListRootsRequest",
        _ => return None,
    })
}

/// Panics unless `value` validates against every one of `defs` in `schema`.
#[track_caller]
fn assert_all(schema: Schema, defs: &[&str], value: &Value) {
    for def in defs {
        assert_valid_in(schema, def, value);
    }
}

/// Checks an error response of a legacy session: with an `id`, against the revision's
/// error definition; without one (the transport answered before any session was known,
/// which the 2025-06-18 schema cannot express), against 2025-11-25's.
#[track_caller]
fn check_legacy_error(schema: Schema, message: &Value) {
    match (schema, message.get("id")) {
        (Schema::Jun2025, Some(_)) => assert_valid_in(schema, "JSONRPCError", message),
        _ => assert_valid_in(Schema::Nov2025, "JSONRPCErrorResponse", message),
    }
}

/// Checks a message the server sent in a legacy session of `schema`'s revision, in
/// answer to a request for `method` (`""` when not known): a result against the
/// revision's response envelope and the result definition of `method`, with none of
/// 2026-07-28's result members (`resultType`); an error as [`check_legacy_error`]
/// does; a notification against `ServerNotification` and its own definition; a request
/// of the server's against `ServerRequest` and its own.
#[track_caller]
pub fn check_legacy_server_message(schema: Schema, method: &str, message: &Value) {
    let envelope = |def_06: &'static str, def_11: &'static str| match schema {
        Schema::Jun2025 => def_06,
        _ => def_11,
    };
    if let Some(sent) = message.get("method").and_then(Value::as_str) {
        if message.get("id").is_some() {
            let def = legacy_server_request_def(sent).unwrap_or_else(|| {
                panic!("the server sent a request it may not send a legacy client: {message}")
            });
            assert_all(schema, &["JSONRPCRequest", "ServerRequest", def], message);
        } else {
            let def = legacy_notification_def(sent)
                .unwrap_or_else(|| panic!("unexpected notification method in {message}"));
            assert_all(
                schema,
                &["JSONRPCNotification", "ServerNotification", def],
                message,
            );
        }
        return;
    }
    let Some(result) = message.get("result") else {
        assert!(
            message.get("error").is_some(),
            "{message} is neither a message with a method, a result nor an error"
        );
        check_legacy_error(schema, message);
        return;
    };
    assert_valid_in(
        schema,
        envelope("JSONRPCResponse", "JSONRPCResultResponse"),
        message,
    );
    assert!(
        result.get("resultType").is_none(),
        "a legacy result carries no resultType: {message}"
    );
    if let Some(def) = legacy_result_def(method) {
        assert_valid_in(schema, def, result);
    }
}

/// Checks a message a test is about to send in a legacy session of `schema`'s revision:
/// a request against `JSONRPCRequest`, `ClientRequest` and its method's definition, a
/// notification against `JSONRPCNotification`, `ClientNotification` and its own, a
/// response (to a request of the server's for `answering`) against the revision's
/// response envelope, `ClientResult` and the result definition of `answering`.
#[track_caller]
pub fn check_legacy_outgoing(schema: Schema, answering: &str, message: &Value) {
    let unchecked = "a test that sends an invalid message on purpose says so: use a \
                     *_unchecked path";
    let mut p = Vec::new();
    let mut all = |defs: &[&str]| {
        for def in defs {
            p.extend(problems_in(schema, def, message));
        }
    };
    match message.get("method").and_then(Value::as_str) {
        Some(method) if message.get("id").is_some() => {
            let def = legacy_request_def(method).unwrap_or_else(|| {
                panic!("{method} is not a request of a legacy client ({unchecked}): {message}")
            });
            all(&["JSONRPCRequest", "ClientRequest", def]);
        }
        Some(method) => {
            let def = legacy_notification_def(method).unwrap_or_else(|| {
                panic!("{method} is not a notification of a legacy client ({unchecked})")
            });
            all(&["JSONRPCNotification", "ClientNotification", def]);
        }
        None if message.get("error").is_some() => match schema {
            Schema::Jun2025 => all(&["JSONRPCError"]),
            _ => all(&["JSONRPCErrorResponse"]),
        },
        None => {
            match schema {
                Schema::Jun2025 => all(&["JSONRPCResponse"]),
                _ => all(&["JSONRPCResultResponse"]),
            }
            let def = legacy_result_def(answering)
                .unwrap_or_else(|| panic!("no result definition for {answering:?}"));
            p.extend(problems_in(schema, "ClientResult", &message["result"]));
            p.extend(problems_in(schema, def, &message["result"]));
        }
    }
    assert!(
        p.is_empty(),
        "{message} is not a valid legacy client message ({schema:?}; {unchecked}): {p:#?}"
    );
}
