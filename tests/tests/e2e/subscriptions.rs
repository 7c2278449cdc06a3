//! `subscriptions/listen` (wire section 11; errata W-2, W-3 and section 5 on
//! `subscriptions.mdx`), over both real transports: always accepted, params validation,
//! the acknowledgement first and narrowed to what the server offers, every message tagged
//! with the listen id, list changes and resource updates delivered to the streams that
//! asked for them and to no others, and never a progress or log notification on a stream.
//! Transport-specific rules (SSE, keepalives, the stream cap, the graceful end) are in
//! `subscriptions_http` and `subscriptions_stdio`.
//!
//! The shared client (`presa_tests::client::Client`) drives one server over one
//! transport: on HTTP each listen is its own SSE response; on stdio every stream shares
//! the session and messages are told apart by
//! `_meta["io.modelcontextprotocol/subscriptionId"]`. Every message is checked against
//! the official schema as it is read.

use presa::{
    Implementation, LogLevel, Prompt, PromptGet, Resource, ResourceRead, Server, ServerBuilder,
    Tool, ToolCall,
};
pub(crate) use presa_tests::client::{Client, KINDS, Kind, SUB_ID, assert_ack, method, sub_id};
use presa_tests::http::Harness;
pub(crate) use presa_tests::sse::{Frame, Next};
use presa_tests::stdio::Session;
pub(crate) use presa_tests::wait::{PATIENCE, QUIET};
use serde_json::{Value, json};
use std::time::Duration;

/// The delay within which a list change must reach a listener (runner check, wire 11).
pub(crate) const PROMPTLY: Duration = Duration::from_millis(1500);

/// Listen params: the filter, plus `_meta` members.
pub(crate) fn listen_params(notifications: Value) -> Value {
    json!({ "notifications": notifications })
}

// ---- servers ----

/// A tool that adds the tool named by its `name` argument (another request changing the
/// registry at run time).
pub(crate) fn adder() -> Tool {
    Tool::new("add_tool")
        .description("Adds a tool")
        .input_schema(json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}))
        .handler(|call: ToolCall| async move {
            let name = call.arguments["name"].as_str().unwrap_or("x").to_owned();
            call.ctx
                .server()
                .add_tool(plain_tool(&name))
                .map_err(|e| presa::ToolError::new(e.to_string()))?;
            Ok::<_, presa::ToolError>(format!("added {name}"))
        })
}

/// A tool that adds the prompt named by its `name` argument.
pub(crate) fn prompt_adder() -> Tool {
    Tool::new("add_prompt")
        .description("Adds a prompt")
        .input_schema(json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}))
        .handler(|call: ToolCall| async move {
            let name = call.arguments["name"].as_str().unwrap_or("x").to_owned();
            call.ctx
                .server()
                .add_prompt(plain_prompt(&name))
                .map_err(|e| presa::ToolError::new(e.to_string()))?;
            Ok::<_, presa::ToolError>(format!("added {name}"))
        })
}

/// A tool that logs at every level and reports progress, then adds a tool.
fn noisy_adder() -> Tool {
    Tool::new("noisy_add")
        .description("Logs, reports progress, then adds a tool")
        .handler(|call: ToolCall| async move {
            let ctx = call.ctx;
            for level in LogLevel::ALL {
                ctx.log(level, format!("at {}", level.as_str()));
            }
            ctx.progress(1.0, Some(2.0), Some("half"));
            let _ = ctx.server().add_tool(plain_tool("from_noisy"));
            ctx.progress(2.0, Some(2.0), Some("done"));
            "noisy"
        })
}

pub(crate) fn plain_tool(name: &str) -> Tool {
    Tool::new(name)
        .description("A plain tool")
        .handler(|_: ToolCall| async { "plain" })
}

pub(crate) fn plain_prompt(name: &str) -> Prompt {
    Prompt::new(name)
        .description("A plain prompt")
        .handler(|_: PromptGet| async { "plain".to_owned() })
}

pub(crate) fn plain_resource(uri: &str) -> Resource {
    Resource::new(uri, "doc")
        .description("A plain resource")
        .mime_type("text/plain")
        .handler(|_: ResourceRead| async { "text" })
}

/// A server with tools, prompts and resources (and the adders).
pub(crate) fn builder(name: &str) -> ServerBuilder {
    Server::builder(Implementation::new(name, "1"))
        .tool(adder())
        .tool(prompt_adder())
        .tool(noisy_adder())
        .prompt(plain_prompt("hello"))
        .resource(plain_resource("test://docs"))
}

/// [`builder`] with resource events on.
pub(crate) fn full_server() -> Server {
    builder("subs")
        .resource_notifications(true)
        .build()
        .expect("builds")
}

// ---- W-3: always accepted ----

#[tokio::test]
async fn listen_is_accepted_even_by_a_server_with_nothing_to_offer() {
    for kind in KINDS {
        let empty = Server::builder(Implementation::new("empty", "1"))
            .build()
            .expect("a server with no items builds");
        let mut c = Client::start(kind, &empty).await;
        let acked = c
            .listen_to(
                json!(1),
                json!({"toolsListChanged": true, "promptsListChanged": true,
                       "resourcesListChanged": true, "resourceSubscriptions": ["test://x"]}),
            )
            .await;
        assert_eq!(acked, json!({}), "{kind:?}: an empty acknowledged filter");
        // And with an empty filter asked for.
        let acked = c.listen_to(json!(2), json!({})).await;
        assert_eq!(acked, json!({}), "{kind:?}");
        // The stream is held open or ended gracefully; never an error.
        match c.next(&json!(1), QUIET).await {
            Next::Timeout => {}
            Next::Msg(m) => {
                assert!(m.get("error").is_none(), "{kind:?}: {m}");
            }
            Next::End => panic!("{kind:?}: the stream ended without a graceful end"),
        }
    }
}

// ---- params ----

#[tokio::test]
async fn listen_params_are_validated() {
    let many: Vec<String> = (0..1001).map(|i| format!("test://docs/{i}")).collect();
    let cases = [
        json!({}),
        json!({"notifications": "all"}),
        json!({"notifications": []}),
        json!({"notifications": null}),
        json!({"notifications": 1}),
        json!({"notifications": {"toolsListChanged": "yes"}}),
        json!({"notifications": {"promptsListChanged": 1}}),
        json!({"notifications": {"resourcesListChanged": null}}),
        json!({"notifications": {"toolsListChanged": true, "promptsListChanged": {}}}),
        json!({"notifications": {"resourceSubscriptions": "test://docs"}}),
        json!({"notifications": {"resourceSubscriptions": {"uri": "test://docs"}}}),
        json!({"notifications": {"resourceSubscriptions": ["relative/path"]}}),
        json!({"notifications": {"resourceSubscriptions": ["test://docs", "no-scheme"]}}),
        json!({"notifications": {"resourceSubscriptions": [1]}}),
        json!({"notifications": {"resourceSubscriptions": [null]}}),
        json!({"notifications": {"resourceSubscriptions": many}}),
    ];
    for kind in KINDS {
        let server = full_server();
        let mut w = Client::start(kind, &server).await;
        for (i, params) in cases.iter().enumerate() {
            let got = w
                .call_unchecked(i as i64 + 1, "subscriptions/listen", params.clone())
                .await;
            got.error(-32602, 400);
        }
        let got = w
            .call_unchecked(100, "subscriptions/listen", json!({}))
            .await;
        got.invalid_params("subscriptions/listen requires a notifications object");
        assert_eq!(server.open_streams(), 0, "{kind:?}: no stream was opened");
    }
}

// ---- the acknowledgement ----

#[tokio::test]
async fn the_acknowledgement_is_narrowed_to_what_the_server_offers() {
    let everything = json!({"toolsListChanged": true, "promptsListChanged": true,
                            "resourcesListChanged": true,
                            "resourceSubscriptions": ["test://docs", "test://docs/a"]});
    for kind in KINDS {
        // Without resource events: resource notifications are dropped, and not advertised.
        let server = builder("subs").build().expect("builds");
        let mut c = Client::start(kind, &server).await;
        let caps = c.ok(1, "server/discover", json!({})).await["capabilities"].clone();
        assert_eq!(caps["tools"]["listChanged"], json!(true), "{caps}");
        assert_eq!(caps["prompts"]["listChanged"], json!(true), "{caps}");
        assert!(caps["resources"].get("subscribe").is_none(), "{caps}");
        assert!(caps["resources"].get("listChanged").is_none(), "{caps}");
        let acked = c.listen_to(json!(2), everything.clone()).await;
        assert_eq!(
            acked,
            json!({"toolsListChanged": true, "promptsListChanged": true}),
            "{kind:?}"
        );
        // Flags asked as false are not acknowledged.
        let acked = c
            .listen_to(
                json!(3),
                json!({"toolsListChanged": false, "promptsListChanged": true}),
            )
            .await;
        assert_eq!(acked, json!({"promptsListChanged": true}), "{kind:?}");

        // With resource events on, all of it.
        let server = full_server();
        let mut c = Client::start(kind, &server).await;
        let caps = c.ok(1, "server/discover", json!({})).await["capabilities"].clone();
        assert_eq!(caps["resources"]["subscribe"], json!(true), "{caps}");
        assert_eq!(caps["resources"]["listChanged"], json!(true), "{caps}");
        let acked = c.listen_to(json!(2), everything.clone()).await;
        assert_eq!(acked, everything, "{kind:?}");
        // At most 1000 URIs, and 1000 is accepted.
        let many: Vec<String> = (0..1000).map(|i| format!("test://docs/{i}")).collect();
        let acked = c
            .listen_to(json!(3), json!({"resourceSubscriptions": many}))
            .await;
        assert_eq!(
            acked["resourceSubscriptions"].as_array().map(Vec::len),
            Some(1000)
        );

        // A server with tools only acknowledges only tools.
        let tools_only = Server::builder(Implementation::new("t", "1"))
            .tool(adder())
            .build()
            .expect("builds");
        let mut c = Client::start(kind, &tools_only).await;
        let acked = c.listen_to(json!("x"), everything.clone()).await;
        assert_eq!(acked, json!({"toolsListChanged": true}), "{kind:?}");
    }
}

#[tokio::test]
async fn every_message_of_a_stream_carries_the_listen_id_string_or_integer() {
    for kind in KINDS {
        let server = full_server();
        let mut c = Client::start(kind, &server).await;
        let ids = [json!("listen-a"), json!(42), json!(0), json!("42")];
        for id in &ids {
            // listen() asserts the acknowledgement is first and tagged with exactly `id`.
            c.listen_to(id.clone(), json!({"toolsListChanged": true}))
                .await;
        }
        c.ok(
            1,
            "tools/call",
            json!({"name": "add_tool", "arguments": {"name": "t1"}}),
        )
        .await;
        for id in &ids {
            // Each stream gets its own copy, tagged with its own id (42 is not "42").
            c.expect_event(id, "notifications/tools/list_changed").await;
            c.expect_quiet(id).await;
        }
    }
}

// ---- events ----

#[tokio::test]
async fn a_stream_sees_list_changes_made_by_another_request_within_1_5_s() {
    for kind in KINDS {
        let server = full_server();
        let mut c = Client::start(kind, &server).await;
        let id = json!("lists");
        c.listen_to(
            id.clone(),
            json!({"toolsListChanged": true, "promptsListChanged": true}),
        )
        .await;
        c.ok(
            1,
            "tools/call",
            json!({"name": "add_tool", "arguments": {"name": "fresh"}}),
        )
        .await;
        let took = c
            .expect_event(&id, "notifications/tools/list_changed")
            .await;
        assert!(
            took < PROMPTLY,
            "{kind:?}: tools/list_changed after {took:?}"
        );
        let tools = c.ok(2, "tools/list", json!({})).await;
        assert!(tools["tools"].to_string().contains("\"fresh\""), "{tools}");

        c.ok(
            3,
            "tools/call",
            json!({"name": "add_prompt", "arguments": {"name": "fresh_p"}}),
        )
        .await;
        let took = c
            .expect_event(&id, "notifications/prompts/list_changed")
            .await;
        assert!(
            took < PROMPTLY,
            "{kind:?}: prompts/list_changed after {took:?}"
        );

        // Removing is a change too.
        assert!(server.remove_tool("fresh"));
        c.expect_event(&id, "notifications/tools/list_changed")
            .await;
        c.expect_quiet(&id).await;
    }
}

#[tokio::test]
async fn a_stream_filtered_to_prompts_sees_no_tools_list_changed() {
    for kind in KINDS {
        let server = full_server();
        let mut c = Client::start(kind, &server).await;
        let tools = json!("tools-only");
        let prompts = json!("prompts-only");
        c.listen_to(tools.clone(), json!({"toolsListChanged": true}))
            .await;
        c.listen_to(prompts.clone(), json!({"promptsListChanged": true}))
            .await;
        c.ok(
            1,
            "tools/call",
            json!({"name": "add_tool", "arguments": {"name": "t"}}),
        )
        .await;
        c.expect_event(&tools, "notifications/tools/list_changed")
            .await;
        c.ok(
            2,
            "tools/call",
            json!({"name": "add_prompt", "arguments": {"name": "p"}}),
        )
        .await;
        // The first event the prompts stream sees is the prompt change.
        c.expect_event(&prompts, "notifications/prompts/list_changed")
            .await;
        c.expect_quiet(&prompts).await;
        c.expect_quiet(&tools).await;
    }
}

#[tokio::test]
async fn resource_updates_reach_streams_subscribed_to_the_uri_or_a_parent_only() {
    for kind in KINDS {
        let server = full_server();
        let mut c = Client::start(kind, &server).await;
        let docs = json!("docs");
        let lists = json!("lists");
        c.listen_to(
            docs.clone(),
            json!({"resourceSubscriptions": ["test://docs"]}),
        )
        .await;
        c.listen_to(lists.clone(), json!({"resourcesListChanged": true}))
            .await;
        for uri in [
            "test://other",
            "test://docsx",
            "test://doc",
            "other://docs/a",
        ] {
            server.notify_resource_updated(uri);
        }
        server.notify_resource_updated("test://docs/chapter-1");
        server.notify_resource_updated("test://docs");
        let mut uris = Vec::new();
        for _ in 0..2 {
            let m = c.next(&docs, PATIENCE).await.msg("a resource update");
            assert_eq!(
                method(&m),
                "notifications/resources/updated",
                "{kind:?}: {m}"
            );
            assert_eq!(sub_id(&m), Some(&docs), "{m}");
            uris.push(m["params"]["uri"].as_str().unwrap_or_default().to_owned());
        }
        uris.sort();
        assert_eq!(uris, ["test://docs", "test://docs/chapter-1"], "{kind:?}");
        c.expect_quiet(&docs).await;
        // The list stream asked for no updates.
        c.expect_quiet(&lists).await;

        // List changes: from the application, and from the registry.
        server.notify_resources_list_changed();
        c.expect_event(&lists, "notifications/resources/list_changed")
            .await;
        c.expect_quiet(&lists).await;
        server
            .add_resource(plain_resource("test://new"))
            .expect("a new resource");
        c.expect_event(&lists, "notifications/resources/list_changed")
            .await;
        c.expect_quiet(&docs).await;
    }
}

#[tokio::test]
async fn events_never_include_progress_or_log_notifications() {
    for kind in KINDS {
        let server = full_server();
        let mut c = Client::start(kind, &server).await;
        let id = json!("clean");
        // The listen request itself asks for progress and every log level.
        c.listen(
            id.clone(),
            json!({"notifications": {"toolsListChanged": true},
                   "_meta": {"progressToken": "listen-token", "io.modelcontextprotocol/logLevel": "debug"}}),
        )
        .await;
        let own = c
            .call(
                1,
                "tools/call",
                json!({"name": "noisy_add", "arguments": {},
                       "_meta": {"progressToken": "trigger", "io.modelcontextprotocol/logLevel": "debug"}}),
            )
            .await
            .messages;
        // The trigger's own notifications go with the trigger's request...
        let progress = own
            .iter()
            .filter(|m| method(m) == "notifications/progress")
            .count();
        let logs = own
            .iter()
            .filter(|m| method(m) == "notifications/message")
            .count();
        assert!(progress >= 1 && logs >= 1, "{kind:?}: {own:?}");
        for m in &own[..own.len() - 1] {
            assert!(
                sub_id(m).is_none(),
                "{kind:?}: not tagged as a stream event: {m}"
            );
            if method(m) == "notifications/progress" {
                assert_eq!(m["params"]["progressToken"], "trigger", "{m}");
            }
        }
        // ...and the stream gets the list change and nothing else.
        c.expect_event(&id, "notifications/tools/list_changed")
            .await;
        c.expect_quiet(&id).await;
        for m in &c.seen {
            assert!(
                !(method(m) == "notifications/progress"
                    && m["params"]["progressToken"] == "listen-token"),
                "{kind:?}: no progress for a listen request: {m}"
            );
        }
    }
}

// ---- the fixture (wire 16.1: the trigger tools) ----

#[tokio::test]
async fn the_fixture_triggers_reach_listen_streams_over_http_and_stdio() {
    let http = Client::over_http(Harness::start(presa_tests::fixture()).await);
    let stdio = Client::over_stdio(Session::fixture(env!("CARGO_BIN_EXE_fixture")).await);
    for mut c in [http, stdio] {
        let kind = c.kind;
        let both = json!("fixture-both");
        let prompts = json!(7);
        let acked = c
            .listen_to(
                both.clone(),
                json!({"toolsListChanged": true, "promptsListChanged": true}),
            )
            .await;
        assert_eq!(
            acked,
            json!({"toolsListChanged": true, "promptsListChanged": true}),
            "{kind:?}"
        );
        c.listen_to(prompts.clone(), json!({"promptsListChanged": true}))
            .await;
        for (i, (tool, event)) in [
            (
                "test_trigger_tool_change",
                "notifications/tools/list_changed",
            ),
            (
                "test_trigger_prompt_change",
                "notifications/prompts/list_changed",
            ),
        ]
        .into_iter()
        .enumerate()
        {
            let result = c
                .ok(
                    i as i64 + 1,
                    "tools/call",
                    json!({"name": tool, "arguments": {}}),
                )
                .await;
            assert_ne!(result["isError"], json!(true), "{result}");
            let took = c.expect_event(&both, event).await;
            assert!(took < PROMPTLY, "{kind:?}: {event} after {took:?}");
        }
        // The prompts-only stream saw the prompt change and no tool change.
        c.expect_event(&prompts, "notifications/prompts/list_changed")
            .await;
        c.expect_quiet(&prompts).await;
        c.expect_quiet(&both).await;
    }
}

// ---- after a graceful end ----

#[tokio::test]
async fn close_streams_ends_the_streams_open_now_and_later_listens_still_work() {
    // `Server::close_streams` ends "every open subscription stream"; a client that listens
    // again afterwards (as after a reload) gets a working stream, not one that ends at once.
    for kind in KINDS {
        let server = full_server();
        let mut c = Client::start(kind, &server).await;
        let before = json!("before");
        c.listen_to(before.clone(), json!({"toolsListChanged": true}))
            .await;
        server.close_streams();
        let end = c.next(&before, PATIENCE).await.msg("the graceful end");
        assert!(
            end.get("result").is_some() || method(&end) == "notifications/cancelled",
            "{kind:?}: {end}"
        );
        let after = json!("after");
        c.listen_to(after.clone(), json!({"toolsListChanged": true}))
            .await;
        c.ok(
            1,
            "tools/call",
            json!({"name": "add_tool", "arguments": {"name": "t"}}),
        )
        .await;
        let m = c.next(&after, PATIENCE).await.msg("an event");
        assert_eq!(
            method(&m),
            "notifications/tools/list_changed",
            "{kind:?}: a stream opened after close_streams() was ended at once: {m}"
        );
    }
}
