//! The session rules of the earlier revisions (2025-11-25, 2025-06-18) that
//! `legacy_stdio.rs` holds over stdio, held again over Streamable HTTP, where a session's
//! requests are POSTs and its notifications ride their answers or the GET stream: the
//! session's log level, the bound on resource subscriptions, completion, task tools, URL
//! elicitation (and its absence in 2025-06-18), the form shapes of 2025-06-18, the bound
//! on questions awaiting answers, and a session used just within its idle limit.

use crate::legacy_http::greet_tool;
use crate::legacy_stdio::{items_server, scoop_tool, task_tools_server};
use crate::mrtr::{CONSENT_URL, accept};
use crate::subscriptions::plain_tool;
use presa::{HttpConfig, Implementation, LogLevel, Server, SessionConfig};
use presa_tests::http::{Harness, Reply, Stream};
use presa_tests::legacy::{Legacy, request};
use presa_tests::sse::Next;
use presa_tests::wait::{PATIENCE, until};
use serde_json::{Value, json};
use std::time::Duration;

/// The legacy revisions presa serves.
const VERSIONS: [&str; 2] = ["2025-11-25", "2025-06-18"];

/// The text of a `tools/call` result's first content block.
#[track_caller]
fn text_of(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {result}"))
}

/// The result of a reply, asserting it is one.
#[track_caller]
fn result_of(reply: &Reply) -> &Value {
    let response = reply.response();
    assert!(response.get("error").is_none(), "a result: {response}");
    &response["result"]
}

/// Sends `name`'s call on a stream of its own, reads the one question it asks, answers it
/// with `answer`, and returns the question and the call's result.
async fn asked_once(c: &Legacy, id: i64, name: &str, answer: Value) -> (Value, Value) {
    let mut s = c
        .open_post(&request(id, "tools/call", json!({"name": name})), &[])
        .await;
    let ask = s.next(PATIENCE).await.msg("the question");
    assert_eq!(ask["method"], json!("elicitation/create"), "{ask}");
    c.answer("elicitation/create", &ask["id"], answer)
        .await
        .assert_accepted();
    let done = s.next(PATIENCE).await.msg("the answer");
    assert!(matches!(s.next(PATIENCE).await, Next::End));
    (ask, done["result"].clone())
}

/// Reads the next question on `s`.
async fn next_ask(s: &mut Stream) -> Value {
    let ask = s.next(PATIENCE).await.msg("a question");
    assert_eq!(ask["method"], json!("elicitation/create"), "{ask}");
    ask
}

/// `notifications/message` ride the answer of the call that logs them, at the session's
/// level and above only (none before a level is set); `logging/setLevel` with an unknown
/// level is -32602.
#[tokio::test]
async fn log_messages_follow_the_sessions_level_over_http() {
    let h = Harness::start(items_server()).await;
    let all: Vec<String> = LogLevel::ALL
        .iter()
        .map(|l| l.as_str().to_owned())
        .collect();
    let levels = |r: &Reply| -> Vec<String> {
        r.notifications()
            .iter()
            .filter(|m| m["method"] == "notifications/message")
            .map(|m| {
                let level = m["params"]["level"].as_str().unwrap_or("").to_owned();
                assert_eq!(m["params"]["data"], json!(format!("at {level}")));
                level
            })
            .collect()
    };
    for version in VERSIONS {
        let mut c = Legacy::open(&h, version).await;
        let r = c.call("tools/call", json!({"name": "log_all"})).await;
        assert!(r.notifications().is_empty(), "no level set: {}", r.body);
        assert_eq!(
            result_of(
                &c.call("logging/setLevel", json!({"level": "warning"}))
                    .await
            ),
            &json!({})
        );
        let r = c.call("tools/call", json!({"name": "log_all"})).await;
        assert!(r.is_sse(), "{version}: the messages ride the answer");
        assert_eq!(levels(&r), all[3..], "{version}");
        assert_eq!(text_of(result_of(&r)), "logged");
        c.call("logging/setLevel", json!({"level": "debug"})).await;
        let r = c.call("tools/call", json!({"name": "log_all"})).await;
        assert_eq!(levels(&r), all, "{version}");
        let id = c.next_id();
        c.post_unchecked(
            &request(id, "logging/setLevel", json!({"level": "loud"})),
            &[],
        )
        .await
        .assert_error(200, -32602, Some(json!(id)));
    }
}

/// A session subscribes to at most 1,000 URIs over HTTP as over stdio: the 1,000th is
/// taken, the 1,001st is -32602; one already held is taken again at the bound; an
/// unsubscription makes room, and the update comes on the GET stream.
#[tokio::test]
async fn subscriptions_are_capped_at_1000_per_session_over_http() {
    const MAX: usize = 1000;
    let server = items_server();
    let h = Harness::start(server.clone()).await;
    let mut c = Legacy::open(&h, "2025-06-18").await;
    for n in 0..MAX {
        let r = c
            .call(
                "resources/subscribe",
                json!({"uri": format!("test://r/{n}")}),
            )
            .await;
        assert_eq!(result_of(&r), &json!({}), "subscription {n}");
    }
    let id = c.next_id();
    let past = request(
        id,
        "resources/subscribe",
        json!({"uri": "test://r/one-more"}),
    );
    let r = c.post(&past, &[]).await;
    r.assert_error(200, -32602, Some(json!(id)));
    assert_eq!(
        r.response()["error"]["message"],
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
    let mut get = c.get("", &[]).await;
    server.notify_resource_updated("test://r/one-more");
    let m = get.next(PATIENCE).await.msg("the update");
    assert_eq!(m["method"], json!("notifications/resources/updated"));
    assert_eq!(m["params"], json!({"uri": "test://r/one-more"}));
}

/// `completion/complete` in a session answers from the prompt's completion provider.
#[tokio::test]
async fn completion_is_served_in_a_session_over_http() {
    let h = Harness::start(items_server()).await;
    for version in VERSIONS {
        let mut c = Legacy::open(&h, version).await;
        let r = c
            .call(
                "completion/complete",
                json!({
                    "ref": {"type": "ref/prompt", "name": "hello"},
                    "argument": {"name": "who", "value": ""}
                }),
            )
            .await;
        assert_eq!(
            result_of(&r)["completion"]["values"],
            json!(["Ada", "Bo"]),
            "{version}: {}",
            r.body
        );
    }
}

/// A tool that runs only as a task is -32601 for a session (its revision cannot ask for
/// a task); one that may be a task runs in the request; `tasks/get` is not found.
#[tokio::test]
async fn task_tools_for_a_legacy_client_over_http() {
    let server = task_tools_server();
    let h = Harness::start(server).await;
    for version in VERSIONS {
        let mut c = Legacy::open(&h, version).await;
        let id = c.next_id();
        let r = c
            .post(&request(id, "tools/call", json!({"name": "job"})), &[])
            .await;
        r.assert_error(200, -32601, Some(json!(id)));
        assert_eq!(
            r.response()["error"]["message"],
            json!(format!(
                "Tool job runs only as a task, which this client's protocol revision ({version}) cannot ask for"
            ))
        );
        let r = c.call("tools/call", json!({"name": "maybe"})).await;
        assert_eq!(text_of(result_of(&r)), "ran in the request");
        let id = c.next_id();
        c.post_unchecked(&request(id, "tasks/get", json!({"taskId": "t-1"})), &[])
            .await
            .assert_error(200, -32601, Some(json!(id)));
    }
}

/// A 2025-11-25 client that declared URL elicitation is asked to open the URL, with an
/// `elicitationId`; a 2025-06-18 client never is, whatever it declared: the call fails
/// naming the capability, and a handler asking only what the client supports asks the
/// form.
#[tokio::test]
async fn url_elicitation_follows_the_revision_over_http() {
    let (server, probe) = crate::mrtr::server();
    let h = Harness::start(server).await;
    let c = Legacy::open_with(&h, "2025-11-25", json!({"elicitation": {"url": {}}})).await;
    let (ask, result) = asked_once(&c, 1, "url_consent", json!({"action": "accept"})).await;
    assert_eq!(text_of(&result), "consented");
    assert_eq!(ask["params"]["mode"], json!("url"));
    assert_eq!(ask["params"]["url"], json!(CONSENT_URL));
    assert!(
        ask["params"]["elicitationId"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "{ask}"
    );
    for caps in [
        json!({"elicitation": {}}),
        json!({"elicitation": {"url": {}}}),
    ] {
        let runs = probe.runs();
        let mut c = Legacy::open_with(&h, "2025-06-18", caps.clone()).await;
        let r = c.call("tools/call", json!({"name": "url_consent"})).await;
        assert!(!r.is_sse(), "nothing asked ({caps}): {}", r.body);
        assert_eq!(result_of(&r)["isError"], json!(true));
        assert_eq!(
            text_of(result_of(&r)),
            r#"This needs client capabilities the session did not declare: {"elicitation":{"url":{}}}"#
        );
        assert_eq!(probe.runs(), runs + 1);
        let (ask, result) = asked_once(&c, 2, "picky", accept(json!({"name": "Ada"}))).await;
        assert_eq!(ask["params"]["message"], json!("Name?"), "{caps}");
        assert_eq!(text_of(&result), "form", "{caps}");
    }
}

/// A 2025-06-18 client is asked a titled choice as `enum` with `enumNames`, and not asked
/// a form with a multi-select at all (the call fails naming the field); a 2025-11-25
/// client is asked both as they are.
#[tokio::test]
async fn a_2025_06_18_client_is_asked_only_forms_its_revision_defines_over_http() {
    let server = presa_tests::fixture();
    server.add_tool(scoop_tool()).expect("adds");
    let h = Harness::start(server).await;
    for version in VERSIONS {
        let mut c = Legacy::open_with(&h, version, json!({"elicitation": {}})).await;
        let (ask, result) =
            asked_once(&c, 1, "scoop", accept(json!({"flavour": "chocolate"}))).await;
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
            let r = c
                .call(
                    "tools/call",
                    json!({"name": "test_elicitation_sep1330_enums"}),
                )
                .await;
            assert!(!r.is_sse(), "nothing asked: {}", r.body);
            let text = text_of(result_of(&r));
            assert!(
                text.starts_with("A 2025-06-18 client cannot be asked this form: field ")
                    && text.contains("multi-select"),
                "{text}"
            );
        } else {
            assert_eq!(field["oneOf"][1]["title"], json!("Dark chocolate"), "{ask}");
            let (_, result) = asked_once(
                &c,
                2,
                "test_elicitation_sep1330_enums",
                json!({"action": "decline"}),
            )
            .await;
            assert_eq!(text_of(&result), "The user did not choose.");
        }
    }
}

/// At most `max_pending_asks` questions await answers at once over HTTP: at the bound
/// every one is asked; one past it fails its call at once (a tool error, nothing asked);
/// an answer makes room again.
#[tokio::test]
async fn pending_questions_are_bounded_over_http() {
    let server = Server::builder(Implementation::new("legacy-http-rules", "1"))
        .tool(greet_tool())
        .tool(plain_tool("plain"))
        .sessions(SessionConfig::default().max_pending_asks(2))
        .build()
        .expect("builds");
    let h = Harness::start(server).await;
    for version in VERSIONS {
        let c = Legacy::open_with(&h, version, json!({"elicitation": {}})).await;
        let greet = |id: i64| request(id, "tools/call", json!({"name": "greet"}));
        let mut first = c.open_post(&greet(10), &[]).await;
        let first_ask = next_ask(&mut first).await;
        let mut second = c.open_post(&greet(11), &[]).await;
        let second_ask = next_ask(&mut second).await;
        let past = c.post(&greet(12), &[]).await;
        assert!(!past.is_sse(), "nothing asked: {}", past.body);
        assert_eq!(result_of(&past)["isError"], json!(true));
        assert_eq!(
            text_of(result_of(&past)),
            "The server awaits too many answers from this client to send elicitation/create"
        );
        c.answer(
            "elicitation/create",
            &first_ask["id"],
            accept(json!({"name": "A"})),
        )
        .await
        .assert_accepted();
        let done = first.next(PATIENCE).await.msg("the first answer");
        assert_eq!(text_of(&done["result"]), "Hello, A!");
        let mut third = c.open_post(&greet(13), &[]).await;
        let third_ask = next_ask(&mut third).await;
        for (s, ask, name) in [
            (&mut second, &second_ask, "B"),
            (&mut third, &third_ask, "C"),
        ] {
            c.answer(
                "elicitation/create",
                &ask["id"],
                accept(json!({"name": name})),
            )
            .await
            .assert_accepted();
            let done = s.next(PATIENCE).await.msg("the answer");
            assert_eq!(
                text_of(&done["result"]),
                format!("Hello, {name}!"),
                "{version}"
            );
        }
    }
}

/// A session used again just before its idle limit each time lives on past several
/// limits; left alone past the limit, it ends.
#[tokio::test]
async fn a_session_used_just_within_its_idle_limit_lives_on() {
    let idle = Duration::from_millis(600);
    let server = items_server();
    let config = HttpConfig::default()
        .session_idle(idle)
        .keepalive(Duration::from_millis(50));
    let h = Harness::start_with(server.clone(), config).await;
    let mut c = Legacy::open(&h, "2025-11-25").await;
    // Each request lands two thirds of a limit after the last: four of them span more
    // than two whole limits.
    for _ in 0..4 {
        tokio::time::sleep(idle * 2 / 3).await;
        assert_eq!(
            c.call("ping", json!({})).await.response()["result"],
            json!({}),
            "the session lives"
        );
    }
    until("the idle session ends", || server.open_streams() == 0).await;
    c.call("ping", json!({}))
        .await
        .assert_error(404, -32600, None);
}
