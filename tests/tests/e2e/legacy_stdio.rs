//! Clients of the earlier revisions (2025-11-25, 2025-06-18) over stdio: how the first
//! request decides a process's era, `initialize` and what it describes, the session's log
//! level, resource subscriptions (and their bound), list changes, progress and
//! cancellation, the server's requests to the client (elicitation, sampling, roots)
//! answered on stdin, their timeout and bound, task tools, and the legacy shapes of
//! results. Every message either side writes is checked against the schema of the
//! session's revision (`presa_tests::legacy_stdio`); a process pinned to 2026-07-28 is
//! checked against that revision's.

use crate::legacy_http::greet_tool;
use crate::mrtr::{CONSENT_URL, Flavour, accept, roots_answer, sampled};
use crate::subscriptions::{plain_prompt, plain_resource, plain_tool};
use presa::mrtr::Elicitation;
use presa::tasks::{TaskMode, Tasks};
use presa::{
    CachePolicy, CacheScope, Cacheable, Completion, Implementation, LogLevel, PromptArgument,
    Server, ServerBuilder, SessionConfig, StdioConfig, Tool, ToolCall,
};
use presa_tests::legacy::{initialize, notification, request};
use presa_tests::legacy_stdio::LegacyStdio;
use presa_tests::sse::Check;
use presa_tests::stdio::Session;
use presa_tests::token_watcher;
use presa_tests::wait::{QUIET, until};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::Duration;

/// The legacy revisions presa serves.
const VERSIONS: [&str; 2] = ["2025-11-25", "2025-06-18"];

/// The fixture's command line, for a session over real pipes.
const FIXTURE: &str = env!("CARGO_BIN_EXE_fixture");

// ---- servers ----

/// A tool that logs one message at every level, then answers "logged".
fn logging_tool() -> Tool {
    Tool::new("log_all")
        .description("Logs at every level")
        .handler(|call: ToolCall| async move {
            for level in LogLevel::ALL {
                call.ctx.log(level, format!("at {}", level.as_str()));
            }
            "logged"
        })
}

/// A tool that reports progress twice, then answers "done".
fn progress_tool() -> Tool {
    Tool::new("progress")
        .description("Reports progress")
        .handler(|call: ToolCall| async move {
            call.ctx.progress(1.0, Some(2.0), Some("half"));
            call.ctx.progress(2.0, Some(2.0), Some("all"));
            "done"
        })
}

/// A server with a tool of each kind above, a prompt with a completion provider, a
/// resource, resource notifications and instructions.
fn items() -> ServerBuilder {
    Server::builder(Implementation::new("legacy-stdio", "1"))
        .tool(plain_tool("plain"))
        .tool(logging_tool())
        .tool(progress_tool())
        .prompt(
            plain_prompt("hello")
                .argument(PromptArgument::new("who"))
                .complete("who", |_| async { Ok(Completion::new(["Ada", "Bo"])) }),
        )
        .resource(plain_resource("test://doc"))
        .resource_notifications(true)
        .instructions("Read test://doc first.")
}

/// [`items`], built.
pub(crate) fn items_server() -> Server {
    items().build().expect("builds")
}

/// A server whose one tool asks the user's name, with `sessions`.
fn asking(sessions: SessionConfig) -> Server {
    Server::builder(Implementation::new("legacy-stdio", "1"))
        .tool(greet_tool())
        .tool(plain_tool("plain"))
        .sessions(sessions)
        .build()
        .expect("builds")
}

// ---- reading answers ----

/// The response of an exchange (the last message read).
#[track_caller]
fn answer_of(messages: &[Value]) -> &Value {
    let last = messages.last().expect("a response");
    assert!(last.get("method").is_none(), "a response: {last}");
    last
}

/// The result of an exchange's response.
#[track_caller]
fn result_of(messages: &[Value]) -> &Value {
    let answer = answer_of(messages);
    answer
        .get("result")
        .unwrap_or_else(|| panic!("a result: {answer}"))
}

/// The error of a response, asserting its code.
#[track_caller]
fn error_in(answer: &Value, code: i64) -> &Value {
    let error = answer
        .get("error")
        .unwrap_or_else(|| panic!("an error: {answer}"));
    assert_eq!(error["code"], json!(code), "{answer}");
    error
}

/// The text of a `tools/call` result's first content block.
#[track_caller]
fn text_of(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {result}"))
}

/// Sends a ping and asserts that its answer is the next line and nothing follows it: so
/// nothing was written before it (stdio writes in order), and nothing is on its way.
async fn ping_is_next(c: &mut LegacyStdio) {
    let id = c.next_id();
    c.send(&request(id, "ping", json!({}))).await;
    let next = c.recv().await.expect("the ping's answer");
    assert_eq!(next, json!({"jsonrpc": "2.0", "id": id, "result": {}}));
    let more = c.recv_within(QUIET).await;
    assert!(more.is_none(), "nothing more: {more:?}");
}

/// Sends a request for `method` invalid on purpose (or not one of the session's
/// revision), with the next id, and reads until its response.
async fn call_unchecked(c: &mut LegacyStdio, method: &str, params: Value) -> Value {
    let id = c.next_id();
    let message = request(id, method, params);
    c.send_unchecked(&message).await;
    let messages = c.until_response(&message["id"]).await;
    answer_of(&messages).clone()
}

/// One question answered: sends a request for `method` with `params` (the next id),
/// reads the `elicitation/create` it asks, answers it with `answer`, and returns the
/// question and the request's result, which must come next.
async fn asked_once(
    c: &mut LegacyStdio,
    method: &str,
    params: Value,
    answer: Value,
) -> (Value, Value) {
    let id = c.next_id();
    c.send(&request(id, method, params)).await;
    let ask = next_ask(c, "elicitation/create").await;
    c.answer("elicitation/create", &ask["id"], answer).await;
    let r = c.until_response(&json!(id)).await;
    assert_eq!(r.len(), 1, "the answer comes next: {r:?}");
    (ask, result_of(&r).clone())
}

/// Reads the server's next request to the client, asserting its method.
async fn next_ask(c: &mut LegacyStdio, method: &str) -> Value {
    let ask = c.recv().await.expect("the server's request");
    assert_eq!(ask["method"], json!(method), "{ask}");
    assert!(ask.get("id").is_some(), "a request: {ask}");
    ask
}

// ---- which era: the first request decides ----

/// `initialize` without the 2026-07-28 `_meta` opens a legacy session in the revision
/// offered; from then on the process is that session's, also for a request that carries
/// the 2026-07-28 `_meta` (answered in the legacy shape, without `resultType`).
#[tokio::test]
async fn initialize_opens_a_session_in_the_revision_offered() {
    for version in VERSIONS {
        let mut c = LegacyStdio::in_process(items_server(), StdioConfig::default(), version);
        let result = c.handshake(json!({})).await;
        assert_eq!(result["protocolVersion"], json!(version));
        assert_eq!(
            result["serverInfo"],
            json!({"name": "legacy-stdio", "version": "1"})
        );
        let listed = c.call("tools/list", json!({})).await;
        assert_eq!(
            result_of(&listed)["tools"].as_array().map(Vec::len),
            Some(3)
        );
        let modern = c
            .call("tools/list", presa_tests::with_meta(json!({})))
            .await;
        assert!(
            result_of(&modern).get("resultType").is_none(),
            "{version}: pinned to the legacy session: {modern:?}"
        );
        assert_eq!(result_of(&modern), result_of(&listed));
        assert!(c.finish().await);
    }
}

/// An offer of a revision presa does not serve over `initialize` (older, unknown, or
/// 2026-07-28 itself, which has no `initialize`) is answered with the newest legacy one.
#[tokio::test]
async fn initialize_counter_offers_the_newest_legacy_revision() {
    for offered in ["2024-11-05", "2025-03-26", "2026-07-28", "draft"] {
        let mut c = LegacyStdio::in_process(items_server(), StdioConfig::default(), "2025-11-25");
        let id = c.next_id();
        let r = c.request(&initialize(id, offered, json!({}))).await;
        assert_eq!(
            r["result"]["protocolVersion"],
            json!("2025-11-25"),
            "{offered}: {r}"
        );
        c.send(&notification("notifications/initialized", json!({})))
            .await;
        let r = c.call("tools/list", json!({})).await;
        result_of(&r);
    }
}

/// A second `initialize` is -32600 and changes nothing: the session keeps its revision
/// and the capabilities declared first (a 2025-06-18 session's elicitation has no
/// `mode`).
#[tokio::test]
async fn a_second_initialize_is_invalid_request() {
    let (server, _) = crate::mrtr::server();
    let mut c = LegacyStdio::open_with(server, "2025-06-18", json!({"elicitation": {}})).await;
    let id = c.next_id();
    let again = c.request(&initialize(id, "2025-11-25", json!({}))).await;
    let error = error_in(&again, -32600);
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("initialized already")),
        "{again}"
    );
    let answer = accept(json!({"name": "Ada"}));
    let (ask, result) = asked_once(&mut c, "tools/call", json!({"name": "greet"}), answer).await;
    assert!(
        ask["params"].get("mode").is_none(),
        "still 2025-06-18: {ask}"
    );
    assert_eq!(text_of(&result), "Hello, Ada!");
}

/// In a legacy process the methods of 2026-07-28 only are -32601, also with the
/// 2026-07-28 `_meta`, and so is a method no revision has; `ping` is answered `{}`.
#[tokio::test]
async fn methods_of_2026_07_28_only_are_not_found_in_a_legacy_process() {
    for version in VERSIONS {
        let mut c = LegacyStdio::open(items_server(), version).await;
        for method in ["server/discover", "subscriptions/listen", "no/such/method"] {
            let params = json!({"notifications": {"toolsListChanged": true}});
            let r = call_unchecked(&mut c, method, presa_tests::with_meta(params)).await;
            let error = error_in(&r, -32601);
            assert_eq!(
                error["message"],
                json!(format!("Method not found: {method}")),
                "{r}"
            );
        }
        let r = c.call("ping", json!({})).await;
        assert_eq!(result_of(&r), &json!({}));
    }
}

/// A request with the 2026-07-28 `_meta` first pins the process to 2026-07-28: an
/// `initialize` afterwards is -32022 naming the versions spoken (and requested), and a
/// `ping` is what 2026-07-28 makes of it: a request without its metadata (-32602), or
/// with it, of a method that does not exist (-32601).
#[tokio::test]
async fn a_modern_request_pins_the_process_to_2026_07_28() {
    let mut s = Session::in_process(items_server(), StdioConfig::default());
    let r = s.call(1, "server/discover", json!({})).await;
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0]["result"]["supportedVersions"].is_array(), "{r:?}");
    s.send_unchecked(&initialize(2, "2025-11-25", json!({})))
        .await;
    let refused = s.recv().await.expect("the refusal");
    assert_eq!(refused["id"], json!(2));
    let error = error_in(&refused, -32022);
    assert_eq!(error["data"]["supported"], json!(["2026-07-28"]));
    assert_eq!(error["data"]["requested"], json!("2025-11-25"));
    s.send_unchecked(&request(3, "ping", json!({}))).await;
    let r = s.recv().await.expect("the ping's answer");
    error_in(&r, -32602);
    s.send_unchecked(&presa_tests::request(3, "ping", json!({})))
        .await;
    let r = s.recv().await.expect("the ping's answer");
    error_in(&r, -32601);
    let r = s.call(4, "tools/list", json!({})).await;
    assert_eq!(r[0]["result"]["resultType"], json!("complete"), "{r:?}");
    assert!(s.finish().await);
}

/// A `ping` before the first request is answered `{}` and decides nothing: an
/// `initialize` after it opens a legacy session, and a 2026-07-28 request after it pins
/// the process to 2026-07-28.
#[tokio::test]
async fn a_ping_first_decides_nothing() {
    for version in VERSIONS {
        let mut c = LegacyStdio::in_process(items_server(), StdioConfig::default(), version);
        let id = c.next_id();
        let r = c.request(&request(id, "ping", json!({}))).await;
        assert_eq!(r, json!({"jsonrpc": "2.0", "id": id, "result": {}}));
        c.handshake(json!({})).await;
        let r = c.call("tools/list", json!({})).await;
        result_of(&r);
    }
    let mut c = LegacyStdio::in_process(items_server(), StdioConfig::default(), "2025-11-25");
    let r = c.request(&request(1, "ping", json!({}))).await;
    assert_eq!(r["result"], json!({}));
    c.checking(Check::Modern);
    let s: &mut Session = &mut c;
    let r = s.call(2, "server/discover", json!({})).await;
    assert!(r[0]["result"]["supportedVersions"].is_array(), "{r:?}");
    c.send_unchecked(&initialize(3, "2025-11-25", json!({})))
        .await;
    let refused = c.recv().await.expect("the refusal");
    error_in(&refused, -32022);
}

/// A request without `_meta` before any `initialize` is taken as a 2026-07-28 one
/// (-32602, its metadata missing) and pins nothing: an `initialize` after it opens a
/// legacy session.
#[tokio::test]
async fn a_request_without_meta_first_is_2026_07_28_and_pins_nothing() {
    for version in VERSIONS {
        let mut c = LegacyStdio::in_process(items_server(), StdioConfig::default(), version);
        let id = c.next_id();
        let r = c.request(&request(id, "tools/list", json!({}))).await;
        error_in(&r, -32602);
        let result = c.handshake(json!({})).await;
        assert_eq!(result["protocolVersion"], json!(version));
        let r = c.call("tools/list", json!({})).await;
        assert!(result_of(&r).get("resultType").is_none());
    }
}

/// `legacy_clients(false)`: `initialize` is -32022 naming the versions spoken, and the
/// process stays open to a 2026-07-28 client.
#[tokio::test]
async fn legacy_clients_off_refuses_initialize() {
    for version in VERSIONS {
        let server = items().legacy_clients(false).build().expect("builds");
        let mut c = LegacyStdio::in_process(server, StdioConfig::default(), version);
        let r = c.request(&initialize(1, version, json!({}))).await;
        let error = error_in(&r, -32022);
        assert_eq!(error["data"]["supported"], json!(["2026-07-28"]), "{r}");
        assert_eq!(error["data"]["requested"], json!(version), "{r}");
        let r = c.request(&initialize(2, version, json!({}))).await;
        error_in(&r, -32022);
        c.checking(Check::Modern);
        let s: &mut Session = &mut c;
        let r = s.call(3, "tools/list", json!({})).await;
        assert_eq!(r[0]["result"]["resultType"], json!("complete"), "{r:?}");
    }
}

// ---- what initialize describes ----

/// `initialize` describes the catalog: tools, prompts and resources with `listChanged`
/// (resources only with resource notifications on, which add `subscribe`), completions
/// when a completion provider exists, logging unless turned off, and the instructions.
#[tokio::test]
async fn initialize_describes_the_catalog() {
    let cases: [(ServerBuilder, Value, Option<&str>); 4] = [
        (
            items(),
            json!({
                "tools": {"listChanged": true},
                "prompts": {"listChanged": true},
                "resources": {"listChanged": true, "subscribe": true},
                "completions": {},
                "logging": {}
            }),
            Some("Read test://doc first."),
        ),
        (
            Server::builder(Implementation::new("legacy-stdio", "1"))
                .tool(plain_tool("plain"))
                .logging(false),
            json!({"tools": {"listChanged": true}}),
            None,
        ),
        (
            Server::builder(Implementation::new("legacy-stdio", "1"))
                .resource(plain_resource("test://doc")),
            json!({"resources": {}, "logging": {}}),
            None,
        ),
        (
            Server::builder(Implementation::new("legacy-stdio", "1")),
            json!({"logging": {}}),
            None,
        ),
    ];
    for (builder, capabilities, instructions) in cases {
        let server = builder.build().expect("builds");
        for version in VERSIONS {
            let mut c = LegacyStdio::in_process(server.clone(), StdioConfig::default(), version);
            let result = c.handshake(json!({})).await;
            assert_eq!(result["capabilities"], capabilities, "{version}");
            assert_eq!(
                result.get("instructions").and_then(Value::as_str),
                instructions
            );
            assert!(c.finish().await);
        }
    }
}

/// What `initialize` leaves out is not served: `logging/setLevel` without logging,
/// `completion/complete` without a completion provider, `resources/subscribe` and
/// `resources/unsubscribe` without resource notifications (-32601); with them, each is.
#[tokio::test]
async fn methods_follow_the_capabilities() {
    let complete = json!({"ref": {"type": "ref/prompt", "name": "hello"},
                          "argument": {"name": "who", "value": "A"}});
    let uri = json!({"uri": "test://doc"});
    let calls = [
        ("logging/setLevel", json!({"level": "info"})),
        ("completion/complete", complete),
        ("resources/subscribe", uri.clone()),
        ("resources/unsubscribe", uri),
    ];
    let without = Server::builder(Implementation::new("legacy-stdio", "1"))
        .prompt(plain_prompt("hello").argument(PromptArgument::new("who")))
        .resource(plain_resource("test://doc"))
        .logging(false)
        .build()
        .expect("builds");
    for version in VERSIONS {
        let mut c = LegacyStdio::open(without.clone(), version).await;
        for (method, params) in &calls {
            let r = c.call(method, params.clone()).await;
            error_in(answer_of(&r), -32601);
        }
        let mut c = LegacyStdio::open(items_server(), version).await;
        for (method, params) in &calls {
            let r = c.call(method, params.clone()).await;
            result_of(&r);
        }
    }
}

// ---- logging ----

/// `ctx.log` messages reach the client as `notifications/message` once it set a level,
/// those at or above the level, before the response; none before a level is set. An
/// unknown level is -32602.
#[tokio::test]
async fn log_messages_follow_the_sessions_level() {
    let levels = |messages: &[Value]| -> Vec<String> {
        messages
            .iter()
            .filter(|m| m["method"] == "notifications/message")
            .map(|m| {
                assert_eq!(
                    m["params"]["data"],
                    json!(format!(
                        "at {}",
                        m["params"]["level"].as_str().unwrap_or("")
                    ))
                );
                m["params"]["level"].as_str().unwrap_or("").to_owned()
            })
            .collect()
    };
    let all: Vec<String> = LogLevel::ALL
        .iter()
        .map(|l| l.as_str().to_owned())
        .collect();
    for version in VERSIONS {
        let mut c = LegacyStdio::open(items_server(), version).await;
        let r = c.call("tools/call", json!({"name": "log_all"})).await;
        assert_eq!(r.len(), 1, "no level set, no log messages: {r:?}");
        let r = c
            .call("logging/setLevel", json!({"level": "warning"}))
            .await;
        assert_eq!(result_of(&r), &json!({}));
        let r = c.call("tools/call", json!({"name": "log_all"})).await;
        assert_eq!(levels(&r), all[3..], "{version}");
        assert_eq!(text_of(result_of(&r)), "logged");
        c.call("logging/setLevel", json!({"level": "debug"})).await;
        let r = c.call("tools/call", json!({"name": "log_all"})).await;
        assert_eq!(levels(&r), all, "{version}");
        let r = call_unchecked(&mut c, "logging/setLevel", json!({"level": "loud"})).await;
        error_in(&r, -32602);
    }
}

// ---- resource subscriptions and list changes ----

/// `resources/subscribe` brings `notifications/resources/updated` for the resource and
/// those under it, and for no other; after `resources/unsubscribe`, none.
#[tokio::test]
async fn subscribed_resources_bring_updates() {
    for version in VERSIONS {
        let server = items_server();
        let mut c = LegacyStdio::open(server.clone(), version).await;
        let r = c
            .call("resources/subscribe", json!({"uri": "test://doc"}))
            .await;
        assert_eq!(result_of(&r), &json!({}));
        for uri in ["test://doc", "test://doc/part"] {
            server.notify_resource_updated(uri);
            let m = c.recv().await.expect("the update");
            assert_eq!(m["method"], json!("notifications/resources/updated"));
            assert_eq!(m["params"], json!({"uri": uri}));
        }
        // Updates reach a session in URI order: one of `test://docs` (not under
        // `test://doc`) would come before the probe's.
        c.call("resources/subscribe", json!({"uri": "test://probe"}))
            .await;
        server.notify_resource_updated("test://docs");
        server.notify_resource_updated("test://probe");
        let m = c.recv().await.expect("the probe's update");
        assert_eq!(m["params"], json!({"uri": "test://probe"}), "{version}");
        let r = c
            .call("resources/unsubscribe", json!({"uri": "test://doc"}))
            .await;
        assert_eq!(result_of(&r), &json!({}));
        server.notify_resource_updated("test://doc");
        server.notify_resource_updated("test://probe");
        let m = c.recv().await.expect("the probe's update");
        assert_eq!(m["params"], json!({"uri": "test://probe"}), "{version}");
        ping_is_next(&mut c).await;
        // A URI that is not absolute is refused.
        let r = call_unchecked(&mut c, "resources/subscribe", json!({"uri": "doc"})).await;
        error_in(&r, -32602);
    }
}

/// A session subscribes to at most 1,000 URIs: the 1,000th is taken, the 1,001st is
/// -32602; one already held is taken again at the bound; an unsubscription makes room.
#[tokio::test]
async fn subscriptions_are_capped_at_1000_per_session() {
    const MAX: usize = 1000;
    let server = items_server();
    let mut c = LegacyStdio::open(server.clone(), "2025-06-18").await;
    let mut burst = Vec::new();
    for n in 0..MAX {
        let id = c.next_id();
        burst.push(request(
            id,
            "resources/subscribe",
            json!({"uri": format!("test://r/{n}")}),
        ));
    }
    c.send_all(&burst).await;
    for m in &burst {
        let r = c.until_response(&m["id"]).await;
        assert_eq!(result_of(&r), &json!({}), "{m}");
    }
    let r = c
        .call("resources/subscribe", json!({"uri": "test://r/one-more"}))
        .await;
    let error = error_in(answer_of(&r), -32602);
    assert_eq!(
        error["message"],
        json!("a session may subscribe to at most 1000 resources")
    );
    let r = c
        .call("resources/subscribe", json!({"uri": "test://r/999"}))
        .await;
    assert_eq!(result_of(&r), &json!({}), "held already");
    c.call("resources/unsubscribe", json!({"uri": "test://r/0"}))
        .await;
    let r = c
        .call("resources/subscribe", json!({"uri": "test://r/one-more"}))
        .await;
    assert_eq!(result_of(&r), &json!({}));
    server.notify_resource_updated("test://r/one-more");
    let m = c.recv().await.expect("the update");
    assert_eq!(m["params"], json!({"uri": "test://r/one-more"}));
}

/// A change of the catalog at run time, and the notification it brings.
type ListChange = (&'static str, fn(&Server));

/// Tools, prompts and resources added or removed at run time reach the session as
/// `notifications/*/list_changed`.
#[tokio::test]
async fn list_changes_reach_the_session() {
    for version in VERSIONS {
        let server = items_server();
        let mut c = LegacyStdio::open(server.clone(), version).await;
        let changes: [ListChange; 4] = [
            ("notifications/tools/list_changed", |s| {
                s.add_tool(plain_tool("later")).expect("adds")
            }),
            ("notifications/prompts/list_changed", |s| {
                s.add_prompt(plain_prompt("later")).expect("adds")
            }),
            ("notifications/resources/list_changed", |s| {
                s.add_resource(plain_resource("test://later"))
                    .expect("adds")
            }),
            ("notifications/tools/list_changed", |s| {
                assert!(s.remove_tool("later"))
            }),
        ];
        for (method, change) in changes {
            change(&server);
            let m = c.recv().await.expect("the list change");
            assert_eq!(m, json!({"jsonrpc": "2.0", "method": method, "params": {}}));
        }
        let r = c.call("tools/list", json!({})).await;
        let names: BTreeSet<&str> = result_of(&r)["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, BTreeSet::from(["plain", "log_all", "progress"]));
    }
}

/// The session ends when stdin closes: its feed of list changes and updates stops
/// (the server's count of open streams shows it).
#[tokio::test]
async fn the_session_ends_with_stdin() {
    let server = items_server();
    let c = LegacyStdio::open(server.clone(), "2025-11-25").await;
    assert_eq!(server.open_streams(), 1, "the session's feed");
    assert!(c.finish().await);
    until("the session's feed ends", || server.open_streams() == 0).await;
}

// ---- progress and cancellation ----

/// Progress goes out as `notifications/progress` with the client's `progressToken`
/// (string or integer), before the response; without a token, none.
#[tokio::test]
async fn progress_carries_the_clients_token() {
    for version in VERSIONS {
        let mut c = LegacyStdio::open(items_server(), version).await;
        for token in [json!("p-1"), json!(7)] {
            let params = json!({"name": "progress", "_meta": {"progressToken": token}});
            let r = c.call("tools/call", params).await;
            assert_eq!(
                r[..2],
                [
                    json!({"jsonrpc": "2.0", "method": "notifications/progress", "params":
                        {"progressToken": token, "progress": 1, "total": 2, "message": "half"}}),
                    json!({"jsonrpc": "2.0", "method": "notifications/progress", "params":
                        {"progressToken": token, "progress": 2, "total": 2, "message": "all"}}),
                ],
                "{version}"
            );
            assert_eq!(text_of(result_of(&r)), "done");
            assert_eq!(r.len(), 3);
        }
        let r = c.call("tools/call", json!({"name": "progress"})).await;
        assert_eq!(r.len(), 1, "no token, no progress: {r:?}");
    }
}

/// `notifications/cancelled` with a running request's id cancels it: the handler's
/// token fires, no response is written, and the id is free again.
#[tokio::test]
async fn notifications_cancelled_cancels_a_running_request() {
    for version in VERSIONS {
        let (tool, watch) = token_watcher();
        let server = Server::builder(Implementation::new("legacy-stdio", "1"))
            .tool(tool)
            .tool(plain_tool("plain"))
            .build()
            .expect("builds");
        let mut c = LegacyStdio::open(server, version).await;
        c.send(&request(7, "tools/call", json!({"name": "watched"})))
            .await;
        until("the handler runs", || watch.started()).await;
        c.send(&notification(
            "notifications/cancelled",
            json!({"requestId": 7, "reason": "changed my mind"}),
        ))
        .await;
        until("the handler's token fires", || watch.saw_cancel()).await;
        ping_is_next(&mut c).await;
        let r = c
            .request(&request(7, "tools/call", json!({"name": "plain"})))
            .await;
        assert_eq!(text_of(&r["result"]), "plain", "{version}");
    }
}

// ---- the server's requests ----

/// A handler's question becomes an `elicitation/create` request on stdout (2025-06-18's
/// without `mode`), which the client answers with a response on stdin; the handler runs
/// again with the answer, accepted or declined.
#[tokio::test]
async fn elicitation_is_a_request_answered_on_stdin() {
    for version in VERSIONS {
        let (server, _) = crate::mrtr::server();
        let mut c = LegacyStdio::open_with(server, version, json!({"elicitation": {}})).await;
        for (answer, text) in [
            (accept(json!({"name": "Ada"})), "Hello, Ada!"),
            (json!({"action": "decline"}), "declined"),
        ] {
            let (ask, result) =
                asked_once(&mut c, "tools/call", json!({"name": "greet"}), answer).await;
            let mut expected = json!({
                "message": "What is your name?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "description": "Your name."}},
                    "required": ["name"]
                }
            });
            if version == "2025-11-25" {
                expected["mode"] = json!("form");
            }
            assert_eq!(ask["params"], expected, "{version}");
            assert_eq!(text_of(&result), text, "{version}");
        }
    }
}

/// Every question of a round is asked at once (elicitation, sampling and roots, each a
/// request with an id of its own), and the handler runs again once all are answered.
#[tokio::test]
async fn every_question_of_a_round_is_asked_at_once() {
    for version in VERSIONS {
        let (server, _) = crate::mrtr::server();
        let caps = json!({"elicitation": {}, "sampling": {}, "roots": {}});
        let mut c = LegacyStdio::open_with(server, version, caps).await;
        c.send(&request(5, "tools/call", json!({"name": "several"})))
            .await;
        let mut asks = Vec::new();
        for _ in 0..3 {
            asks.push(c.recv().await.expect("a question"));
        }
        let methods: BTreeSet<&str> = asks.iter().filter_map(|a| a["method"].as_str()).collect();
        assert_eq!(
            methods,
            BTreeSet::from(["elicitation/create", "roots/list", "sampling/createMessage"])
        );
        let ids: BTreeSet<String> = asks.iter().map(|a| a["id"].to_string()).collect();
        assert_eq!(ids.len(), 3, "{asks:?}");
        for ask in &asks {
            let method = ask["method"].as_str().unwrap_or_default();
            let answer = match method {
                "elicitation/create" => accept(json!({"name": "Ada"})),
                "sampling/createMessage" => {
                    assert_eq!(ask["params"]["maxTokens"], json!(50));
                    sampled("Good day")
                }
                _ => roots_answer(),
            };
            c.answer(method, &ask["id"], answer).await;
        }
        let r = c.until_response(&json!(5)).await;
        assert_eq!(
            text_of(result_of(&r)),
            "Hello, Ada! | Good day | 2 roots",
            "{version}"
        );
    }
}

/// A handler that asks round after round gets each round's question in turn.
#[tokio::test]
async fn a_handler_asks_round_after_round() {
    for version in VERSIONS {
        let (server, probe) = crate::mrtr::server();
        let mut c = LegacyStdio::open_with(server, version, json!({"elicitation": {}})).await;
        c.send(&request(5, "tools/call", json!({"name": "steps"})))
            .await;
        for (message, answer) in [
            ("Step 1: your name", json!({"name": "Ada"})),
            ("Step 2: a colour", json!({"color": "green"})),
            ("Step 3: confirm", json!({"ok": true})),
        ] {
            let ask = next_ask(&mut c, "elicitation/create").await;
            assert_eq!(ask["params"]["message"], json!(message));
            c.answer("elicitation/create", &ask["id"], accept(answer))
                .await;
        }
        let r = c.until_response(&json!(5)).await;
        assert_eq!(text_of(result_of(&r)), "Ada likes green (confirmed: true)");
        assert_eq!(probe.runs(), 4, "one run per round, and the last");
    }
}

/// A prompt's and a resource's questions are asked as a tool's are.
#[tokio::test]
async fn prompts_and_resources_ask_too() {
    for version in VERSIONS {
        let (server, _) = crate::mrtr::server();
        let mut c = LegacyStdio::open_with(server, version, json!({"elicitation": {}})).await;
        let params = json!({"name": "needs_context"});
        let answer = accept(json!({"context": "a trip"}));
        let (_, result) = asked_once(&mut c, "prompts/get", params, answer).await;
        assert_eq!(
            result["messages"][0]["content"]["text"],
            json!("Context: a trip")
        );
        let params = json!({"uri": "mrtr://preview"});
        let answer = accept(json!({"name": "Bo"}));
        let (_, result) = asked_once(&mut c, "resources/read", params, answer).await;
        assert_eq!(
            result["contents"][0]["text"],
            json!("Preview for Hello, Bo!")
        );
    }
}

/// A 2025-11-25 URL elicitation carries `mode: "url"`, the URL and an `elicitationId`.
#[tokio::test]
async fn a_url_elicitation_carries_an_elicitation_id() {
    let (server, _) = crate::mrtr::server();
    let caps = json!({"elicitation": {"url": {}}});
    let mut c = LegacyStdio::open_with(server, "2025-11-25", caps).await;
    let params = json!({"name": "url_consent"});
    let (ask, result) = asked_once(&mut c, "tools/call", params, json!({"action": "accept"})).await;
    assert_eq!(text_of(&result), "consented");
    let params = &ask["params"];
    assert_eq!(params["mode"], json!("url"));
    assert_eq!(params["url"], json!(CONSENT_URL));
    assert_eq!(params["message"], json!("Sign in to the calendar"));
    let id = params["elicitationId"].as_str().unwrap_or_default();
    assert!(!id.is_empty(), "{ask}");
}

/// A 2025-06-18 client cannot be asked to open a URL (its revision has no URL
/// elicitation), whatever its capabilities say: the call fails naming the capability,
/// nothing is asked, and a handler that asks only for what the client supports is told
/// it does not support it (it asks the form alone).
#[tokio::test]
async fn a_2025_06_18_client_is_never_asked_to_open_a_url() {
    for caps in [
        json!({"elicitation": {}}),
        json!({"elicitation": {"url": {}}}),
    ] {
        let (server, probe) = crate::mrtr::server();
        let mut c = LegacyStdio::open_with(server, "2025-06-18", caps.clone()).await;
        let r = c.call("tools/call", json!({"name": "url_consent"})).await;
        assert_eq!(r.len(), 1, "nothing asked ({caps}): {r:?}");
        let result = result_of(&r);
        assert_eq!(result["isError"], json!(true), "{caps}: {result}");
        assert_eq!(
            text_of(result),
            r#"This needs client capabilities the session did not declare: {"elicitation":{"url":{}}}"#
        );
        assert_eq!(probe.runs(), 1);
        let answer = accept(json!({"name": "Ada"}));
        let (ask, result) =
            asked_once(&mut c, "tools/call", json!({"name": "picky"}), answer).await;
        assert_eq!(ask["params"]["message"], json!("Name?"), "{caps}");
        assert_eq!(text_of(&result), "form", "{caps}");
    }
}

/// A form with one titled choice.
#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
struct Scoop {
    /// One flavour.
    flavour: Flavour,
}

/// A tool that asks for a [`Scoop`] and answers the flavour chosen.
pub(crate) fn scoop_tool() -> Tool {
    Tool::new("scoop")
        .description("Asks for a flavour")
        .handler(|call: ToolCall| async move {
            let answer = call.ctx.elicit::<Scoop>("scoop", "Which flavour?").get()?;
            Ok::<_, presa::Error>(match answer {
                Elicitation::Accepted(Scoop {
                    flavour: Flavour::Vanilla,
                }) => "vanilla",
                Elicitation::Accepted(Scoop {
                    flavour: Flavour::Chocolate,
                }) => "chocolate",
                _ => "none",
            })
        })
}

/// A 2025-06-18 client is asked forms only in the shapes its revision defines: a titled
/// choice becomes an `enum` with `enumNames`, and a form with a multi-select (which
/// 2025-06-18 cannot express) is not asked: the call fails naming the field. A
/// 2025-11-25 client is asked both as they are.
#[tokio::test]
async fn a_2025_06_18_client_is_asked_only_forms_its_revision_defines() {
    for version in VERSIONS {
        let server = presa_tests::fixture();
        server.add_tool(scoop_tool()).expect("adds");
        let mut c = LegacyStdio::open_with(server, version, json!({"elicitation": {}})).await;
        let answer = accept(json!({"flavour": "chocolate"}));
        let (ask, result) =
            asked_once(&mut c, "tools/call", json!({"name": "scoop"}), answer).await;
        assert_eq!(text_of(&result), "chocolate", "{version}");
        let field = &ask["params"]["requestedSchema"]["properties"]["flavour"];
        if version == "2025-06-18" {
            assert_eq!(
                *field,
                json!({
                    "type": "string",
                    "description": "One flavour.",
                    "enum": ["vanilla", "chocolate"],
                    "enumNames": ["Vanilla", "Dark chocolate"]
                })
            );
        } else {
            assert_eq!(field["oneOf"][1]["title"], json!("Dark chocolate"), "{ask}");
        }
        let params = json!({"name": "test_elicitation_sep1330_enums"});
        if version == "2025-06-18" {
            let r = c.call("tools/call", params).await;
            assert_eq!(r.len(), 1, "nothing asked: {r:?}");
            assert_eq!(result_of(&r)["isError"], json!(true));
            // Either multi-select is named, whichever of the form's fields comes first.
            let text = text_of(result_of(&r));
            let named = |field: &str| {
                format!(
                    "A 2025-06-18 client cannot be asked this form: field \"{field}\" is a \
                     multi-select, which its revision does not define"
                )
            };
            assert!(
                text == named("untitledMulti") || text == named("titledMulti"),
                "{text}"
            );
        } else {
            let decline = json!({"action": "decline"});
            let (_, result) = asked_once(&mut c, "tools/call", params, decline).await;
            assert_eq!(text_of(&result), "The user did not choose.");
        }
    }
}

/// A question the client declared no capability for is not asked: `tools/call` gets a
/// tool error naming the capability, `prompts/get` and `resources/read` get -32602.
#[tokio::test]
async fn a_question_the_client_cannot_answer_fails_the_call() {
    for version in VERSIONS {
        let (server, _) = crate::mrtr::server();
        let mut c = LegacyStdio::open(server, version).await;
        let r = c.call("tools/call", json!({"name": "greet"})).await;
        assert_eq!(r.len(), 1, "nothing asked: {r:?}");
        assert_eq!(result_of(&r)["isError"], json!(true));
        assert_eq!(
            text_of(result_of(&r)),
            r#"This needs client capabilities the session did not declare: {"elicitation":{"form":{}}}"#
        );
        let r = c.call("tools/call", json!({"name": "several"})).await;
        let text = text_of(result_of(&r));
        for need in ["elicitation", "sampling", "roots"] {
            assert!(text.contains(need), "{need}: {text}");
        }
        let r = c
            .call("prompts/get", json!({"name": "needs_context"}))
            .await;
        let error = error_in(answer_of(&r), -32602);
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|m| m.contains("elicitation")),
            "{error}"
        );
        let r = c
            .call("resources/read", json!({"uri": "mrtr://preview"}))
            .await;
        error_in(answer_of(&r), -32602);
    }
}

/// A question the client does not answer within `ask_timeout`: the server cancels its
/// request (`notifications/cancelled` with its id) and the call fails with a tool
/// error; a late answer is dropped (nothing is written); and nothing is left behind:
/// with room for one pending question, the next is asked (with an id of its own).
#[tokio::test]
async fn an_unanswered_question_times_out_and_leaves_nothing() {
    let sessions = SessionConfig::default()
        .ask_timeout(Duration::from_millis(200))
        .max_pending_asks(1);
    for version in VERSIONS {
        let server = asking(sessions.clone());
        let mut c = LegacyStdio::open_with(server, version, json!({"elicitation": {}})).await;
        c.send(&request(5, "tools/call", json!({"name": "greet"})))
            .await;
        let ask = next_ask(&mut c, "elicitation/create").await;
        let cancelled = c.recv().await.expect("the cancellation");
        assert_eq!(cancelled["method"], json!("notifications/cancelled"));
        assert_eq!(cancelled["params"]["requestId"], ask["id"]);
        let r = c.until_response(&json!(5)).await;
        assert_eq!(r.len(), 1);
        assert_eq!(result_of(&r)["isError"], json!(true));
        assert_eq!(
            text_of(result_of(&r)),
            "The client did not answer the elicitation/create request in time"
        );
        c.answer(
            "elicitation/create",
            &ask["id"],
            accept(json!({"name": "Late"})),
        )
        .await;
        ping_is_next(&mut c).await;
        let answer = accept(json!({"name": "Bo"}));
        let (again, result) =
            asked_once(&mut c, "tools/call", json!({"name": "greet"}), answer).await;
        assert_ne!(again["id"], ask["id"]);
        assert_eq!(text_of(&result), "Hello, Bo!", "{version}");
    }
}

/// At most `max_pending_asks` questions await answers at once: at the bound every one
/// is asked; one past it fails its call at once (a tool error, nothing asked); an answer
/// makes room again.
#[tokio::test]
async fn pending_questions_are_bounded() {
    let sessions = SessionConfig::default().max_pending_asks(2);
    for version in VERSIONS {
        let mut c = LegacyStdio::open_with(
            asking(sessions.clone()),
            version,
            json!({"elicitation": {}}),
        )
        .await;
        c.send(&request(10, "tools/call", json!({"name": "greet"})))
            .await;
        let first = next_ask(&mut c, "elicitation/create").await;
        c.send(&request(11, "tools/call", json!({"name": "greet"})))
            .await;
        let second = next_ask(&mut c, "elicitation/create").await;
        c.send(&request(12, "tools/call", json!({"name": "greet"})))
            .await;
        let past = c.recv().await.expect("the refused call's answer");
        assert_eq!(past["id"], json!(12), "nothing asked: {past}");
        assert_eq!(past["result"]["isError"], json!(true));
        assert_eq!(
            text_of(&past["result"]),
            "The server awaits too many answers from this client to send elicitation/create"
        );
        c.answer(
            "elicitation/create",
            &first["id"],
            accept(json!({"name": "A"})),
        )
        .await;
        let r = c.until_response(&json!(10)).await;
        assert_eq!(text_of(result_of(&r)), "Hello, A!");
        c.send(&request(13, "tools/call", json!({"name": "greet"})))
            .await;
        let third = next_ask(&mut c, "elicitation/create").await;
        for (ask, id, name) in [(&second, 11, "B"), (&third, 13, "C")] {
            c.answer(
                "elicitation/create",
                &ask["id"],
                accept(json!({"name": name})),
            )
            .await;
            let r = c.until_response(&json!(id)).await;
            assert_eq!(
                text_of(result_of(&r)),
                format!("Hello, {name}!"),
                "{version}"
            );
        }
    }
}

/// A response to a request the server never sent (an id it never used, a string id, an
/// error) is dropped: nothing is written, and the session goes on; so is a second
/// answer to a question already answered.
#[tokio::test]
async fn an_answer_to_a_request_never_sent_is_dropped() {
    for version in VERSIONS {
        let server = asking(SessionConfig::default());
        let mut c = LegacyStdio::open_with(server, version, json!({"elicitation": {}})).await;
        c.answer(
            "elicitation/create",
            &json!(1),
            json!({"action": "decline"}),
        )
        .await;
        c.answer(
            "elicitation/create",
            &json!(4242),
            json!({"action": "decline"}),
        )
        .await;
        c.send(&json!({"jsonrpc": "2.0", "id": "nope",
                       "error": {"code": -32601, "message": "Method not found"}}))
            .await;
        ping_is_next(&mut c).await;
        let answer = accept(json!({"name": "Ada"}));
        let (ask, result) =
            asked_once(&mut c, "tools/call", json!({"name": "greet"}), answer).await;
        assert_eq!(text_of(&result), "Hello, Ada!");
        c.answer(
            "elicitation/create",
            &ask["id"],
            accept(json!({"name": "Again"})),
        )
        .await;
        ping_is_next(&mut c).await;
    }
}

/// A client that answers a question with an error fails the call with a tool error
/// naming the refusal.
#[tokio::test]
async fn a_refused_question_fails_the_call() {
    for version in VERSIONS {
        let server = asking(SessionConfig::default());
        let mut c = LegacyStdio::open_with(server, version, json!({"elicitation": {}})).await;
        c.send(&request(5, "tools/call", json!({"name": "greet"})))
            .await;
        let ask = next_ask(&mut c, "elicitation/create").await;
        c.send(&json!({"jsonrpc": "2.0", "id": ask["id"],
                       "error": {"code": -1, "message": "User rejected"}}))
            .await;
        let r = c.until_response(&json!(5)).await;
        assert_eq!(result_of(&r)["isError"], json!(true));
        assert_eq!(
            text_of(result_of(&r)),
            "The client refused the elicitation/create request: User rejected"
        );
    }
}

/// A call cancelled while its question awaits an answer withdraws the question: the
/// server sends `notifications/cancelled` for its own request, the call is not
/// answered, and an answer that comes afterwards is dropped.
#[tokio::test]
async fn cancelling_a_call_withdraws_its_question() {
    for version in VERSIONS {
        let server = asking(SessionConfig::default().max_pending_asks(1));
        let mut c = LegacyStdio::open_with(server, version, json!({"elicitation": {}})).await;
        c.send(&request(5, "tools/call", json!({"name": "greet"})))
            .await;
        let ask = next_ask(&mut c, "elicitation/create").await;
        c.send(&notification(
            "notifications/cancelled",
            json!({"requestId": 5}),
        ))
        .await;
        let withdrawn = c.recv().await.expect("the withdrawal");
        assert_eq!(
            withdrawn["method"],
            json!("notifications/cancelled"),
            "{version}"
        );
        assert_eq!(withdrawn["params"]["requestId"], ask["id"]);
        c.answer(
            "elicitation/create",
            &ask["id"],
            accept(json!({"name": "Late"})),
        )
        .await;
        ping_is_next(&mut c).await;
        // The question's place is free again.
        let answer = accept(json!({"name": "Bo"}));
        let (_, result) = asked_once(&mut c, "tools/call", json!({"name": "greet"}), answer).await;
        assert_eq!(text_of(&result), "Hello, Bo!");
    }
}

// ---- tasks ----

/// A server with Tasks and two tools: `job`, which runs only as a task, and `maybe`,
/// which runs as a task if asked.
pub(crate) fn task_tools_server() -> Server {
    Server::builder(Implementation::new("legacy-tasks", "1"))
        .tool(
            Tool::new("job")
                .description("Runs only as a task")
                .task(TaskMode::Required)
                .handler(|_: ToolCall| async { "job done" }),
        )
        .tool(
            Tool::new("maybe")
                .description("Runs as a task if asked")
                .task(TaskMode::Optional)
                .handler(|_: ToolCall| async { "ran in the request" }),
        )
        .extension(Tasks::new())
        .build()
        .expect("builds")
}

/// A tool that runs only as a task is -32601 for a legacy client (its revision cannot
/// ask for one); one that may run as a task runs in the request; the Tasks methods are
/// not found.
#[tokio::test]
async fn task_tools_for_a_legacy_client() {
    let server = task_tools_server();
    for version in VERSIONS {
        let mut c = LegacyStdio::open(server.clone(), version).await;
        let r = c.call("tools/call", json!({"name": "job"})).await;
        let error = error_in(answer_of(&r), -32601);
        assert_eq!(
            error["message"],
            json!(format!(
                "Tool job runs only as a task, which this client's protocol revision ({version}) cannot ask for"
            ))
        );
        let r = c.call("tools/call", json!({"name": "maybe"})).await;
        assert_eq!(text_of(result_of(&r)), "ran in the request");
        let r = call_unchecked(&mut c, "tasks/get", json!({"taskId": "t-1"})).await;
        error_in(&r, -32601);
    }
}

// ---- the legacy shapes ----

/// Results take the legacy shapes: no `resultType`, no serverInfo in `_meta`, no
/// caching hints, even from a server configured to add both (which 2026-07-28 results
/// of the same server carry); a missing resource is -32002.
#[tokio::test]
async fn results_take_the_legacy_shapes() {
    let public = CachePolicy::new(60_000, CacheScope::Public);
    let server = items()
        .server_info_in_results(true)
        .cache(Cacheable::Tools, public)
        .cache(Cacheable::Prompts, public)
        .cache(Cacheable::Resources, public)
        .cache(Cacheable::ResourceRead, public)
        .build()
        .expect("builds");
    let calls = [
        ("tools/list", json!({})),
        ("prompts/list", json!({})),
        ("resources/list", json!({})),
        ("resources/read", json!({"uri": "test://doc"})),
        ("tools/call", json!({"name": "plain"})),
        ("prompts/get", json!({"name": "hello"})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "hello"},
                   "argument": {"name": "who", "value": "A"}}),
        ),
    ];
    let mut modern = Session::in_process(server.clone(), StdioConfig::default());
    let r = modern.call(1, "tools/list", json!({})).await;
    let result = &r[0]["result"];
    assert_eq!(result["ttlMs"], json!(60_000), "{result}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        json!("legacy-stdio")
    );
    for version in VERSIONS {
        let mut c = LegacyStdio::open(server.clone(), version).await;
        for (method, params) in &calls {
            let r = c.call(method, params.clone()).await;
            let result = result_of(&r);
            for member in ["resultType", "ttlMs", "cacheScope"] {
                assert!(result.get(member).is_none(), "{method}: {result}");
            }
            assert!(
                result
                    .pointer("/_meta/io.modelcontextprotocol~1serverInfo")
                    .is_none(),
                "{method}: {result}"
            );
        }
        let r = c
            .call("resources/read", json!({"uri": "test://missing"}))
            .await;
        error_in(answer_of(&r), -32002);
    }
}

// ---- over real pipes ----

/// The fixture's command line serves a legacy session over its real stdin and stdout:
/// `initialize`, a call, questions answered on stdin, and a clean exit when stdin closes.
#[tokio::test]
async fn the_fixture_binary_serves_a_legacy_session() {
    for version in VERSIONS {
        let io = Session::fixture(FIXTURE).await;
        let mut c = LegacyStdio::over(io, version);
        let result = c.handshake(json!({"elicitation": {}})).await;
        assert_eq!(result["serverInfo"]["name"], json!("presa-conformance"));
        let r = c
            .call("tools/call", json!({"name": "test_simple_text"}))
            .await;
        assert_eq!(
            text_of(result_of(&r)),
            "This is a simple text response for testing."
        );
        let params = json!({"name": "test_elicitation", "arguments": {"message": "Who?"}});
        let answer = accept(json!({"username": "ada", "email": "ada@example.com"}));
        let (ask, result) = asked_once(&mut c, "tools/call", params, answer).await;
        assert_eq!(ask["params"]["message"], json!("Who?"));
        assert_eq!(
            text_of(&result),
            "User provided: username=ada, email=ada@example.com"
        );
        let params = json!({"name": "test_elicitation_sep1034_defaults"});
        let decline = json!({"action": "decline"});
        let (_, result) = asked_once(&mut c, "tools/call", params, decline).await;
        assert_eq!(text_of(&result), "The user did not fill the form.");
        assert!(c.finish().await, "exit status 0");
    }
}
