//! Sessions of the earlier revisions (2025-11-25, 2025-06-18) on the Streamable HTTP
//! endpoint, beside 2026-07-28 requests: how a POST is told to be a legacy one, the
//! session id and its rules (400, 404, DELETE, the cap, idle expiry), JSON and SSE
//! answers, the server's requests answered by POSTed responses, cancellation, the GET
//! stream, resumption with `Last-Event-ID` and its bounded buffer, SSE polling, and the
//! stateless mode. Every message is checked against the schema of the session's
//! revision (`presa_tests::legacy`).

use crate::subscriptions::{plain_prompt, plain_resource, plain_tool};
use presa::mrtr::Elicitation;
use presa::{
    Error, HttpConfig, Implementation, LogLevel, Server, ServerBuilder, SessionConfig, Tool,
    ToolCall,
};
use presa_tests::http::{Harness, Stream};
use presa_tests::legacy::{Legacy, initialize, notification, request};
use presa_tests::sse::{Frame, Next};
use presa_tests::wait::{PATIENCE, QUIET, until};
use presa_tests::{fixture, token_watcher};
use reqwest::Method;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// The legacy revisions presa serves.
const VERSIONS: [&str; 2] = ["2025-11-25", "2025-06-18"];

#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
struct Who {
    /// Your name.
    name: String,
}

/// A tool that asks the user's name (elicitation), then greets them.
pub(crate) fn greet_tool() -> Tool {
    Tool::new("greet")
        .description("Asks the user's name, then greets them")
        .handler(|call: ToolCall| async move {
            let answer = call.ctx.elicit::<Who>("who", "What is your name?").get()?;
            Ok::<_, Error>(match answer {
                Elicitation::Accepted(who) => format!("Hello, {}!", who.name),
                Elicitation::Declined => "declined".to_owned(),
                Elicitation::Cancelled => "cancelled".to_owned(),
            })
        })
}

/// What a [`gated`] tool's handler did, and its release.
#[derive(Clone, Default)]
struct Gate {
    release: Arc<Notify>,
    started: Arc<AtomicBool>,
    finished: Arc<AtomicBool>,
    cancelled: Arc<AtomicBool>,
}

impl Gate {
    fn started(&self) -> bool {
        self.started.load(Ordering::SeqCst)
    }

    fn finished(&self) -> bool {
        self.finished.load(Ordering::SeqCst)
    }

    fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    fn open(&self) {
        self.release.notify_one();
    }
}

/// What a [`gated`] tool does before it waits, and after.
#[derive(Clone, Copy, Default)]
struct Steps {
    /// Reports progress before waiting (the answer becomes a stream).
    progress: bool,
    /// Closes its connection for polling before waiting.
    poll: bool,
    /// Log messages sent once released, before answering.
    logs: usize,
}

/// A tool named `name` that does `steps`, waits for its gate to open, and answers
/// "released"; its gate records whether it started, finished, or saw its cancellation.
fn gated(name: &str, gate: &Gate, steps: Steps) -> Tool {
    let gate = gate.clone();
    Tool::new(name)
        .description("Waits for the test to release it")
        .handler(move |call: ToolCall| {
            let gate = gate.clone();
            async move {
                let token = call.ctx.cancellation_token();
                let cancelled = Arc::clone(&gate.cancelled);
                tokio::spawn(async move {
                    token.cancelled().await;
                    cancelled.store(true, Ordering::SeqCst);
                });
                if steps.progress {
                    call.ctx.progress(1.0, None, Some("waiting"));
                }
                if steps.poll {
                    call.ctx.close_stream_for_polling();
                }
                gate.started.store(true, Ordering::SeqCst);
                gate.release.notified().await;
                for n in 0..steps.logs {
                    call.ctx.log(LogLevel::Info, format!("log {n}"));
                }
                gate.finished.store(true, Ordering::SeqCst);
                "released"
            }
        })
}

/// A server with plain items, an asking tool, and the gated tools of `gate`.
fn builder(gate: &Gate) -> ServerBuilder {
    Server::builder(Implementation::new("legacy-http", "1"))
        .tool(plain_tool("plain"))
        .tool(greet_tool())
        .tool(gated("wait", gate, Steps::default()))
        .tool(gated(
            "progress_then_wait",
            gate,
            Steps {
                progress: true,
                ..Steps::default()
            },
        ))
        .tool(gated(
            "poll",
            gate,
            Steps {
                poll: true,
                ..Steps::default()
            },
        ))
        .tool(gated(
            "poll_then_log_once",
            gate,
            Steps {
                poll: true,
                logs: 1,
                ..Steps::default()
            },
        ))
        .tool(gated(
            "poll_then_log_twice",
            gate,
            Steps {
                poll: true,
                logs: 2,
                ..Steps::default()
            },
        ))
        .prompt(plain_prompt("hello"))
        .resource(plain_resource("test://doc"))
        .resource_notifications(true)
}

fn server(gate: &Gate) -> Server {
    builder(gate).build().expect("builds")
}

/// A `tools/call` of `name` with no arguments.
fn call(id: i64, name: &str) -> Value {
    request(id, "tools/call", json!({"name": name}))
}

/// POSTs `message` in `client`'s session on a task of its own, for a request whose
/// answer (JSON) comes only once it is done; aborting the task closes the connection.
fn spawn_post(
    client: &Legacy,
    message: Value,
) -> tokio::task::JoinHandle<presa_tests::http::Reply> {
    let client = client.clone();
    tokio::spawn(async move { client.post(&message, &[]).await })
}

/// The text of a `tools/call` result's first content block.
#[track_caller]
fn text_of(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {response}"))
}

/// The event ids of an SSE body, in order.
fn ids_in(raw: &str) -> Vec<String> {
    raw.lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .map(str::to_owned)
        .collect()
}

/// The stream number of an event id `<stream>-<seq>`.
#[track_caller]
fn stream_of(id: &str) -> &str {
    id.split_once('-')
        .unwrap_or_else(|| panic!("an event id <stream>-<seq>: {id}"))
        .0
}

// ---- Telling the eras apart, and initialize ----

/// `initialize` without the 2026-07-28 `_meta` opens a session, with or without a version
/// header: the revision offered is agreed to, the session id is visible ASCII (192
/// random bits, base64url), and every session gets its own.
#[tokio::test]
async fn initialize_opens_a_session_with_and_without_the_version_header() {
    let h = Harness::start(server(&Gate::default())).await;
    let mut ids = BTreeSet::new();
    for version in VERSIONS {
        for header in ["", version] {
            let c = Legacy::new(&h, version);
            let r = c
                .post(
                    &initialize(1, version, json!({})),
                    &[("MCP-Protocol-Version", header)],
                )
                .await;
            assert_eq!(r.status, 200, "{}", r.body);
            assert!(!r.is_sse());
            let result = &r.response()["result"];
            assert_eq!(result["protocolVersion"], json!(version));
            assert_eq!(result["serverInfo"]["name"], json!("legacy-http"));
            assert_eq!(
                result["capabilities"]["tools"],
                json!({"listChanged": true})
            );
            assert_eq!(
                result["capabilities"]["resources"],
                json!({"listChanged": true, "subscribe": true})
            );
            let id = r.header("mcp-session-id").expect("a session id").to_owned();
            assert_eq!(id.len(), 32, "{id}");
            assert!(
                id.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "base64url, so visible ASCII (0x21 to 0x7E): {id}"
            );
            assert!(ids.insert(id), "every session has its own id");
        }
    }
}

/// An offer of a revision presa does not serve is answered with the newest it does; an
/// `initialize` that names a session already opens a new one; the headers of 2026-07-28
/// requests (`Mcp-Method`) with a legacy version header do not make it modern (the
/// conformance runner sends them so).
#[tokio::test]
async fn initialize_counter_offers_and_always_opens_a_new_session() {
    let h = Harness::start(server(&Gate::default())).await;
    let mut c = Legacy::new(&h, "2025-11-25");
    let r = c
        .post(
            &initialize(1, "2024-11-05", json!({})),
            &[("MCP-Protocol-Version", "")],
        )
        .await;
    assert_eq!(
        r.response()["result"]["protocolVersion"],
        json!("2025-11-25")
    );
    let first = r.header("mcp-session-id").expect("a session id").to_owned();
    c.session = Some(first.clone());
    let r = c
        .post(
            &initialize(2, "2025-11-25", json!({})),
            &[("Mcp-Method", "initialize")],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let second = r.header("mcp-session-id").expect("a new session id");
    assert_ne!(second, first);
    // The first session lives on.
    assert_eq!(c.call("tools/list", json!({})).await.status, 200);
}

/// An `initialize` that fails (its params are invalid) opens no session: its error goes
/// with HTTP 200 and no session id.
#[tokio::test]
async fn a_failed_initialize_opens_no_session() {
    let h = Harness::start(server(&Gate::default())).await;
    let c = Legacy::new(&h, "2025-11-25");
    let bad = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}}});
    let r = c.post_unchecked(&bad, &[]).await;
    r.assert_error(200, -32602, Some(json!(1)));
    assert!(r.header("mcp-session-id").is_none(), "{r:?}");
}

/// The traps of the 2026-07-28 lane: an `initialize` carrying the 2026-07-28 `_meta` is
/// a 2026-07-28 request for a method that does not exist (404, -32601), and a request
/// with no `_meta` but the 2026-07-28 version header is refused by 2026-07-28's admission
/// (400, -32602); neither opens a session.
#[tokio::test]
async fn modern_requests_never_open_sessions() {
    let h = Harness::start(fixture()).await;
    let modern = presa_tests::request(
        7,
        "initialize",
        json!({"protocolVersion": "2026-07-28", "capabilities": {},
               "clientInfo": {"name": "c", "version": "1"}}),
    );
    let r = h.post_unchecked(&modern, &[]).await;
    r.assert_error(404, -32601, Some(json!(7)));
    assert!(r.header("mcp-session-id").is_none());
    let bare = request(8, "tools/list", json!({}));
    let r = h.post_unchecked(&bare, &[]).await;
    r.assert_error(400, -32602, Some(json!(8)));
    assert!(r.header("mcp-session-id").is_none());
}

/// Both eras on one endpoint at once: a 2026-07-28 request is answered as it always is,
/// also when it carries a session's id (ignored: not echoed, nothing of the session's).
#[tokio::test]
async fn both_eras_interleave_on_one_endpoint() {
    let h = Harness::start(fixture()).await;
    let mut c = Legacy::open(&h, "2025-11-25").await;
    let session = c.session.clone().expect("a session");
    let modern = presa_tests::request(1, "tools/call", json!({"name": "test_simple_text"}));
    let plain = h.post(&modern, &[]).await;
    let legacy = c
        .call("tools/call", json!({"name": "test_simple_text"}))
        .await;
    let stray = h.post(&modern, &[("Mcp-Session-Id", &session)]).await;
    assert_eq!(stray.status, 200);
    assert_eq!(stray.body, plain.body, "the session id changes nothing");
    assert!(stray.header("mcp-session-id").is_none());
    assert_eq!(stray.response()["result"]["resultType"], json!("complete"));
    // The legacy answer is the same tool's, in the legacy shape.
    assert_eq!(text_of(legacy.response()), text_of(stray.response()));
    assert!(legacy.response()["result"].get("resultType").is_none());
    // And the session goes on.
    assert_eq!(
        c.call("ping", json!({})).await.response()["result"],
        json!({})
    );
}

/// A legacy session pages a listing as 2026-07-28 clients do: `tools/list` with a page
/// size of 2 over five tools gives pages of at most two, each but the last with a
/// `nextCursor`, and following them lists every tool exactly once.
#[tokio::test]
async fn a_legacy_session_pages_a_listing_with_cursors() {
    let names = ["alpha", "bravo", "charlie", "delta", "echo"];
    let mut b = crate::http_util::builder().page_size(2);
    for name in names {
        b = b.tool(crate::http_util::text_tool(name, "x"));
    }
    let h = Harness::start(b.build().expect("builds")).await;
    let mut c = Legacy::open(&h, "2025-11-25").await;
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = cursor
            .as_ref()
            .map_or(json!({}), |at| json!({"cursor": at}));
        let r = c.call("tools/list", params).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let result = &r.response()["result"];
        let tools = result["tools"].as_array().expect("a tools array");
        assert!(
            !tools.is_empty() && tools.len() <= 2,
            "a page of one or two: {result}"
        );
        assert!(
            result.get("resultType").is_none(),
            "legacy-shaped: {result}"
        );
        listed.extend(
            tools
                .iter()
                .map(|t| t["name"].as_str().expect("a name").to_owned()),
        );
        pages += 1;
        assert!(pages <= names.len(), "the cursors end: {listed:?}");
        match result.get("nextCursor") {
            None => break,
            Some(Value::String(next)) => cursor = Some(next.clone()),
            Some(other) => panic!("nextCursor must be a string, got {other}"),
        }
    }
    assert_eq!(pages, 3, "{listed:?}");
    let mut sorted = listed.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), listed.len(), "no tool twice: {listed:?}");
    assert_eq!(
        sorted,
        names.map(str::to_owned).to_vec(),
        "every tool: {listed:?}"
    );
}

// ---- The session id ----

/// Every legacy POST but `initialize`, and GET and DELETE, need a session id: 400
/// without one, with a JSON-RPC error that has no id.
#[tokio::test]
async fn a_legacy_message_without_a_session_id_is_400() {
    let h = Harness::start(server(&Gate::default())).await;
    let c = Legacy::new(&h, "2025-11-25");
    c.post(&request(1, "tools/list", json!({})), &[])
        .await
        .assert_error(400, -32600, None);
    c.post(&notification("notifications/initialized", json!({})), &[])
        .await
        .assert_error(400, -32600, None);
    c.answer(
        "elicitation/create",
        &json!(1),
        json!({"action": "decline"}),
    )
    .await
    .assert_error(400, -32600, None);
    c.get("", &[])
        .await
        .reply()
        .await
        .assert_error(400, -32600, None);
    c.delete(&[]).await.assert_error(400, -32600, None);
}

/// A session id that names no live session is 404 on every kind of message.
#[tokio::test]
async fn an_unknown_session_id_is_404() {
    let h = Harness::start(server(&Gate::default())).await;
    let mut c = Legacy::new(&h, "2025-11-25");
    c.session = Some("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".to_owned());
    c.post(&request(1, "tools/list", json!({})), &[])
        .await
        .assert_error(404, -32600, None);
    c.post(&notification("notifications/initialized", json!({})), &[])
        .await
        .assert_error(404, -32600, None);
    c.answer(
        "elicitation/create",
        &json!(1),
        json!({"action": "decline"}),
    )
    .await
    .assert_error(404, -32600, None);
    c.get("", &[])
        .await
        .reply()
        .await
        .assert_error(404, -32600, None);
    c.delete(&[]).await.assert_error(404, -32600, None);
}

/// DELETE ends the session (204): its GET stream ends, and its id is 404 from then on.
#[tokio::test]
async fn delete_ends_the_session_then_404() {
    let h = Harness::start(server(&Gate::default())).await;
    let mut c = Legacy::open(&h, "2025-06-18").await;
    let mut get = c.get("", &[]).await;
    assert_eq!(get.status, 200);
    let r = c.delete(&[]).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert!(r.body.is_empty());
    assert!(matches!(get.next(PATIENCE).await, Next::End));
    c.call("tools/list", json!({}))
        .await
        .assert_error(404, -32600, None);
    c.delete(&[]).await.assert_error(404, -32600, None);
    c.get("", &[])
        .await
        .reply()
        .await
        .assert_error(404, -32600, None);
}

/// At most `max_sessions` sessions: one more `initialize` is 503 (with its id), until a
/// session ends.
#[tokio::test]
async fn the_session_cap_holds_at_and_past_its_bound() {
    let config = HttpConfig::default().max_sessions(2);
    let h = Harness::start_with(server(&Gate::default()), config).await;
    let first = Legacy::open(&h, "2025-11-25").await;
    let _second = Legacy::open(&h, "2025-11-25").await;
    let c = Legacy::new(&h, "2025-11-25");
    let r = c.post(&initialize(1, "2025-11-25", json!({})), &[]).await;
    r.assert_error(503, -32603, Some(json!(1)));
    assert!(r.header("mcp-session-id").is_none());
    assert_eq!(first.delete(&[]).await.status, 204);
    let r = c.post(&initialize(2, "2025-11-25", json!({})), &[]).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.header("mcp-session-id").is_some());
}

/// A session with an open stream is not idle; one with nothing open or running for
/// longer than `session_idle` ends (its feed of list changes stops, which the server's
/// count of open streams shows without touching the session), and its id is 404.
#[tokio::test]
async fn an_idle_session_expires() {
    let idle = Duration::from_millis(500);
    let server = server(&Gate::default());
    let config = HttpConfig::default()
        .session_idle(idle)
        .keepalive(Duration::from_millis(50));
    let h = Harness::start_with(server.clone(), config).await;
    let mut c = Legacy::open(&h, "2025-11-25").await;
    assert_eq!(server.open_streams(), 1, "the session's feed");
    let get = c.get("", &[]).await;
    // Three idle limits with the stream open: the session lives.
    tokio::time::sleep(idle * 3).await;
    assert_eq!(
        server.open_streams(),
        1,
        "a session with an open stream is not idle"
    );
    assert_eq!(c.call("tools/list", json!({})).await.status, 200);
    drop(get);
    until("the idle session ends", || server.open_streams() == 0).await;
    c.call("tools/list", json!({}))
        .await
        .assert_error(404, -32600, None);
}

/// A version header naming a revision the server does not serve is 400; one naming the
/// other legacy revision is served (the header need not repeat the negotiated one).
#[tokio::test]
async fn a_version_header_not_served_is_400() {
    let h = Harness::start(server(&Gate::default())).await;
    let c = Legacy::open(&h, "2025-11-25").await;
    let list = request(9, "tools/list", json!({}));
    for bad in ["2024-11-05", "2025-03-26", "latest"] {
        c.post(&list, &[("MCP-Protocol-Version", bad)])
            .await
            .assert_error(400, -32600, None);
        c.get("", &[("MCP-Protocol-Version", bad)])
            .await
            .reply()
            .await
            .assert_error(400, -32600, None);
    }
    let r = c
        .post(&list, &[("MCP-Protocol-Version", "2025-06-18")])
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = c.post(&list, &[("MCP-Protocol-Version", "")]).await;
    assert_eq!(
        r.status, 200,
        "no header: the session's revision; {}",
        r.body
    );
}

/// The Origin and Host rules hold for GET and DELETE as for POST (403); a refused DELETE
/// ends nothing.
#[tokio::test]
async fn origin_and_host_rules_hold_for_get_and_delete() {
    let host = "mcp.local";
    let config = HttpConfig::default().allowed_hosts([host]);
    let h = Harness::start_with(server(&Gate::default()), config).await;
    let mut c = Legacy::new(&h, "2025-11-25");
    let r = c
        .post(&initialize(1, "2025-11-25", json!({})), &[("Host", host)])
        .await;
    c.session = r.header("mcp-session-id").map(str::to_owned);
    let evil = ("Origin", "http://evil.example.com");
    c.get("", &[("Host", host), evil])
        .await
        .reply()
        .await
        .assert_error(403, -32600, None);
    c.delete(&[("Host", host), evil])
        .await
        .assert_error(403, -32600, None);
    c.get("", &[("Host", "evil.example.com")])
        .await
        .reply()
        .await
        .assert_error(403, -32600, None);
    c.delete(&[("Host", "evil.example.com")])
        .await
        .assert_error(403, -32600, None);
    let r = c
        .post(&request(2, "tools/list", json!({})), &[("Host", host)])
        .await;
    assert_eq!(r.status, 200, "the session lives: {}", r.body);
    assert_eq!(c.delete(&[("Host", host)]).await.status, 204);
}

// ---- Answers ----

/// A request that sends nothing first is answered as JSON; one that reports progress as
/// an event stream whose events have ids `<stream>-<seq>`, primed (an id, no data) in a
/// 2025-11-25 session and not in a 2025-06-18 one, ending with the answer.
#[tokio::test]
async fn answers_are_json_or_an_event_stream() {
    let h = Harness::start(fixture()).await;
    for version in VERSIONS {
        let mut c = Legacy::open(&h, version).await;
        let r = c
            .call("tools/call", json!({"name": "test_simple_text"}))
            .await;
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(
            text_of(r.response()),
            "This is a simple text response for testing."
        );
        let r = c
            .call(
                "tools/call",
                json!({"name": "test_tool_with_progress", "_meta": {"progressToken": "p"}}),
            )
            .await;
        assert!(r.is_sse(), "{r:?}");
        let progress: Vec<_> = r
            .notifications()
            .iter()
            .map(|n| n["params"]["progress"].clone())
            .collect();
        assert_eq!(progress, [json!(0), json!(50), json!(100)]);
        assert!(text_of(r.response()).starts_with("Progress computation completed"));
        let ids = ids_in(&r.body);
        let stream = stream_of(&ids[0]).to_owned();
        let primed = version == "2025-11-25";
        let expected: Vec<String> = (usize::from(!primed)..=4)
            .map(|seq| format!("{stream}-{seq}"))
            .collect();
        assert_eq!(ids, expected, "{}", r.body);
        let prime = format!("id: {stream}-0\ndata:\n\n");
        assert_eq!(r.body.starts_with(&prime), primed, "{:?}", r.body);
    }
}

/// JSON-RPC errors to legacy requests go with HTTP 200 (those revisions give them no
/// status); so does a second request with the id of one still in flight.
#[tokio::test]
async fn legacy_errors_go_with_200() {
    let gate = Gate::default();
    let h = Harness::start(server(&gate)).await;
    let mut c = Legacy::open(&h, "2025-11-25").await;
    let r = c
        .post_unchecked(&request(1, "no/such/method", json!({})), &[])
        .await;
    r.assert_error(200, -32601, Some(json!(1)));
    let r = c.call("prompts/get", json!({"name": "missing"})).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.error_code(), Some(-32602), "{}", r.body);
    let waiting = spawn_post(&c, call(5, "wait"));
    until("the tool runs", || gate.started()).await;
    c.post(&call(5, "plain"), &[])
        .await
        .assert_error(200, -32600, Some(json!(5)));
    gate.open();
    let r = waiting.await.expect("the request task");
    assert_eq!(text_of(r.response()), "released");
    // The id is free again once answered.
    assert_eq!(
        text_of(c.post(&call(5, "plain"), &[]).await.response()),
        "plain"
    );
}

// ---- The server's requests ----

/// A handler that asks the client sends it a real request on the request's stream
/// (2025-06-18's without elicitation's `mode`); the client answers with a POSTed
/// response (202) and the handler goes on with the answer.
#[tokio::test]
async fn elicitation_goes_over_the_stream_and_is_answered_by_a_post() {
    let h = Harness::start(server(&Gate::default())).await;
    for version in VERSIONS {
        let c = Legacy::open_with(&h, version, json!({"elicitation": {}})).await;
        let mut s = c.open_post(&call(1, "greet"), &[]).await;
        assert!(s.is_sse());
        let ask = s.next(PATIENCE).await.msg("the elicitation request");
        assert_eq!(ask["method"], json!("elicitation/create"), "{ask}");
        assert_eq!(ask["params"]["message"], json!("What is your name?"));
        assert_eq!(
            ask["params"].get("mode").is_some(),
            version == "2025-11-25",
            "{ask}"
        );
        c.answer(
            "elicitation/create",
            &ask["id"],
            json!({"action": "accept", "content": {"name": "Ada"}}),
        )
        .await
        .assert_accepted();
        let done = s.next(PATIENCE).await.msg("the answer");
        assert_eq!(text_of(&done), "Hello, Ada!");
        assert!(matches!(s.next(PATIENCE).await, Next::End));
    }
}

/// A request the client never answers: past the ask timeout the server cancels it
/// (`notifications/cancelled` on the stream) and the tool fails; a late answer is taken
/// (202) and dropped; and the wait left nothing behind (with room for one pending ask,
/// the next ask is sent).
#[tokio::test]
async fn an_unanswered_request_times_out_and_leaves_nothing() {
    let sessions = SessionConfig::default()
        .ask_timeout(Duration::from_millis(200))
        .max_pending_asks(1);
    let server = builder(&Gate::default())
        .sessions(sessions)
        .build()
        .expect("builds");
    let h = Harness::start(server).await;
    let c = Legacy::open_with(&h, "2025-11-25", json!({"elicitation": {}})).await;
    let mut s = c.open_post(&call(1, "greet"), &[]).await;
    let ask = s.next(PATIENCE).await.msg("the elicitation request");
    let cancelled = s.next(PATIENCE).await.msg("the cancellation");
    assert_eq!(cancelled["method"], json!("notifications/cancelled"));
    assert_eq!(cancelled["params"]["requestId"], ask["id"]);
    let failed = s.next(PATIENCE).await.msg("the tool's failure");
    assert_eq!(failed["result"]["isError"], json!(true), "{failed}");
    assert_eq!(
        text_of(&failed),
        "The client did not answer the elicitation/create request in time"
    );
    assert!(matches!(s.next(PATIENCE).await, Next::End));
    c.answer(
        "elicitation/create",
        &ask["id"],
        json!({"action": "accept", "content": {"name": "Late"}}),
    )
    .await
    .assert_accepted();
    let mut s = c.open_post(&call(2, "greet"), &[]).await;
    let again = s.next(PATIENCE).await.msg("the next elicitation request");
    assert_ne!(again["id"], ask["id"]);
    c.answer(
        "elicitation/create",
        &again["id"],
        json!({"action": "accept", "content": {"name": "Bo"}}),
    )
    .await
    .assert_accepted();
    assert_eq!(
        text_of(&s.next(PATIENCE).await.msg("the answer")),
        "Hello, Bo!"
    );
}

/// A response to a request the server never sent is accepted (202) and dropped.
#[tokio::test]
async fn an_answer_to_a_request_never_sent_is_dropped() {
    let h = Harness::start(server(&Gate::default())).await;
    let mut c = Legacy::open_with(&h, "2025-06-18", json!({"elicitation": {}})).await;
    c.answer(
        "elicitation/create",
        &json!(4242),
        json!({"action": "decline"}),
    )
    .await
    .assert_accepted();
    let error = json!({"jsonrpc": "2.0", "id": "nope",
        "error": {"code": -32601, "message": "Method not found"}});
    c.post_answering("elicitation/create", &error, &[])
        .await
        .assert_accepted();
    assert_eq!(
        c.call("ping", json!({})).await.response()["result"],
        json!({})
    );
}

/// A client that declared no elicitation gets a tool error, not a request it cannot
/// answer.
#[tokio::test]
async fn asking_a_client_without_the_capability_is_a_tool_error() {
    let h = Harness::start(server(&Gate::default())).await;
    let mut c = Legacy::open(&h, "2025-11-25").await;
    let r = c.call("tools/call", json!({"name": "greet"})).await;
    assert!(!r.is_sse(), "nothing was sent to the client: {}", r.body);
    assert_eq!(r.response()["result"]["isError"], json!(true));
    assert!(
        text_of(r.response()).contains("client capabilities the session did not declare"),
        "{}",
        r.body
    );
}

// ---- Cancellation ----

/// A call cancelled while its question awaits an answer withdraws the question: the
/// server's `notifications/cancelled` for its own request comes on the GET stream (the
/// call's stream, cancelled, carries nothing more).
#[tokio::test]
async fn cancelling_a_call_withdraws_its_question() {
    let h = Harness::start(server(&Gate::default())).await;
    let c = Legacy::open_with(&h, "2025-11-25", json!({"elicitation": {}})).await;
    let mut get = c.get("", &[]).await;
    let mut s = c.open_post(&call(1, "greet"), &[]).await;
    let ask = s.next(PATIENCE).await.msg("the elicitation request");
    assert_eq!(ask["method"], json!("elicitation/create"));
    c.notify("notifications/cancelled", json!({"requestId": 1}))
        .await
        .assert_accepted();
    let withdrawn = get.next(PATIENCE).await.msg("the withdrawal");
    assert_eq!(withdrawn["method"], json!("notifications/cancelled"));
    assert_eq!(withdrawn["params"]["requestId"], ask["id"]);
    assert!(matches!(s.next(PATIENCE).await, Next::End));
}

/// `notifications/cancelled` cancels a legacy request (its handler's token fires); the
/// POST waiting for it gets 204.
#[tokio::test]
async fn notifications_cancelled_cancels_a_legacy_request() {
    let (tool, watch) = token_watcher();
    let server = Server::builder(Implementation::new("cancel", "1"))
        .tool(tool)
        .build()
        .expect("builds");
    let h = Harness::start(server).await;
    let c = Legacy::open(&h, "2025-11-25").await;
    let pending = spawn_post(&c, call(3, "watched"));
    until("the handler runs", || watch.started()).await;
    c.notify(
        "notifications/cancelled",
        json!({"requestId": 3, "reason": "changed my mind"}),
    )
    .await
    .assert_accepted();
    until("the handler's token fires", || watch.saw_cancel()).await;
    let r = pending.await.expect("the request task");
    assert_eq!(r.status, 204, "{}", r.body);
    assert!(r.body.is_empty());
}

/// A closed connection does not cancel a legacy request: the handler runs on, and its
/// answer waits in the stream for the client to resume.
#[tokio::test]
async fn a_closed_connection_does_not_cancel() {
    let gate = Gate::default();
    let h = Harness::start(server(&gate)).await;
    // Answered as JSON: nothing was sent before the client left.
    let c = Legacy::open(&h, "2025-11-25").await;
    let pending = spawn_post(&c, call(1, "wait"));
    until("the tool runs", || gate.started()).await;
    // Dropping the request's future closes its connection.
    pending.abort();
    assert!(pending.await.is_err_and(|e| e.is_cancelled()));
    tokio::time::sleep(QUIET).await;
    assert!(
        !gate.cancelled(),
        "the closed connection cancelled the request"
    );
    gate.open();
    until("the tool finishes", || gate.finished()).await;
    assert!(!gate.cancelled());
}

// ---- Streams: the GET stream, resumption, polling ----

/// The GET stream carries what belongs to no request: list changes (a tool added at run
/// time) and updates of the resources the session subscribed to, after a priming event
/// in a 2025-11-25 session; a second plain GET is 409; keepalive comments while idle.
#[tokio::test]
async fn the_get_stream_carries_list_changes_and_resource_updates() {
    let server = server(&Gate::default());
    let config = HttpConfig::default().keepalive(Duration::from_millis(100));
    let h = Harness::start_with(server.clone(), config).await;
    let mut c = Legacy::open(&h, "2025-11-25").await;
    let mut get = c.get("", &[]).await;
    assert_eq!(get.status, 200);
    assert!(get.is_sse());
    assert_eq!(get.header("cache-control"), Some("no-cache"));
    c.get("", &[])
        .await
        .reply()
        .await
        .assert_error(409, -32600, None);
    server.add_tool(plain_tool("later")).expect("adds");
    let m = get.next(PATIENCE).await.msg("the list change");
    assert_eq!(m["method"], json!("notifications/tools/list_changed"));
    let r = c
        .call("resources/subscribe", json!({"uri": "test://doc"}))
        .await;
    assert_eq!(r.response()["result"], json!({}));
    server.notify_resource_updated("test://doc");
    let m = get.next(PATIENCE).await.msg("the update");
    assert_eq!(m["method"], json!("notifications/resources/updated"));
    assert_eq!(m["params"], json!({"uri": "test://doc"}));
    // The priming event first (keepalive comments may come between the events).
    assert!(
        get.raw().starts_with("id: 0-0\ndata:\n\n"),
        "{:?}",
        get.raw()
    );
    assert_eq!(ids_in(get.raw()), ["0-0", "0-1", "0-2"]);
    assert_eq!(get.last_event_id().as_deref(), Some("0-2"));
    match get.frame(PATIENCE).await {
        Some(Frame::Comment(text)) => assert_eq!(text, "keepalive"),
        other => panic!("a keepalive while idle, got {other:?}"),
    }
    let r = c
        .call("resources/unsubscribe", json!({"uri": "test://doc"}))
        .await;
    assert_eq!(r.response()["result"], json!({}));
}

/// What is sent while no GET stream is open waits in the session's buffer and comes
/// when one opens (2025-06-18: no priming event).
#[tokio::test]
async fn messages_wait_for_a_get_stream() {
    let server = server(&Gate::default());
    let h = Harness::start(server.clone()).await;
    let c = Legacy::open(&h, "2025-06-18").await;
    server.add_tool(plain_tool("later")).expect("adds");
    // The feed delivers on its own task; wait until the change reached the buffer by
    // reading it from the stream, which begins with it.
    let mut get = c.get("", &[]).await;
    let m = get.next(PATIENCE).await.msg("the held list change");
    assert_eq!(m["method"], json!("notifications/tools/list_changed"));
    assert!(get.raw().starts_with("id: 0-1\ndata: {"), "{:?}", get.raw());
}

/// A GET stream dropped and resumed with `Last-Event-ID` replays exactly what followed
/// that event, once and in order, then goes on live; the resumption takes the stream
/// over, so a plain GET meanwhile is 409.
#[tokio::test]
async fn a_dropped_get_stream_resumes_with_last_event_id() {
    let server = server(&Gate::default());
    let h = Harness::start(server.clone()).await;
    let c = Legacy::open(&h, "2025-11-25").await;
    let mut get = c.get("", &[]).await;
    server.add_tool(plain_tool("one")).expect("adds");
    get.next(PATIENCE).await.msg("the first change");
    let last = get.last_event_id().expect("an event id");
    assert_eq!(last, "0-1");
    drop(get);
    server.add_tool(plain_tool("two")).expect("adds");
    server.add_prompt(plain_prompt("three")).expect("adds");
    let mut resumed = c.get("", &[("Last-Event-ID", &last)]).await;
    assert_eq!(resumed.status, 200);
    let a = resumed.next(PATIENCE).await.msg("the second change");
    let b = resumed.next(PATIENCE).await.msg("the third change");
    assert_eq!(a["method"], json!("notifications/tools/list_changed"));
    assert_eq!(b["method"], json!("notifications/prompts/list_changed"));
    assert_eq!(ids_in(resumed.raw()), ["0-2", "0-3"], "{:?}", resumed.raw());
    c.get("", &[])
        .await
        .reply()
        .await
        .assert_error(409, -32600, None);
    server.add_tool(plain_tool("four")).expect("adds");
    resumed.next(PATIENCE).await.msg("a live change");
    assert_eq!(ids_in(resumed.raw()), ["0-2", "0-3", "0-4"]);
    // An id of no stream of this session, or not an event id at all: 400.
    for bad in ["99-1", "junk"] {
        c.get("", &[("Last-Event-ID", bad)])
            .await
            .reply()
            .await
            .assert_error(400, -32600, None);
    }
}

/// A request's stream dropped before its answer resumes with `Last-Event-ID` on a GET:
/// the rest of that stream, the answer included, then the end; the request was not
/// cancelled by the drop; no event of another stream comes with it.
#[tokio::test]
async fn a_dropped_request_stream_resumes_with_its_answer() {
    let gate = Gate::default();
    let server = server(&gate);
    let h = Harness::start(server.clone()).await;
    let c = Legacy::open(&h, "2025-06-18").await;
    let params = json!({"name": "progress_then_wait", "_meta": {"progressToken": 1}});
    let mut s = c.open_post(&request(1, "tools/call", params), &[]).await;
    let progress = s.next(PATIENCE).await.msg("the progress");
    assert_eq!(progress["method"], json!("notifications/progress"));
    let last = s.last_event_id().expect("an event id");
    assert!(last.ends_with("-1"), "{last}");
    drop(s);
    // An event of the GET stream meanwhile stays on the GET stream.
    server.add_tool(plain_tool("elsewhere")).expect("adds");
    gate.open();
    until("the tool finishes", || gate.finished()).await;
    let mut resumed = c.get("tools/call", &[("Last-Event-ID", &last)]).await;
    let done = resumed.next(PATIENCE).await.msg("the answer");
    assert_eq!(done["id"], json!(1));
    assert_eq!(text_of(&done), "released");
    assert!(matches!(resumed.next(PATIENCE).await, Next::End));
    assert_eq!(ids_in(resumed.raw()), [format!("{}-2", stream_of(&last))]);
    assert!(!gate.cancelled());
}

/// SSE polling (2025-11-25): a handler that closes its connection early makes the
/// answer a stream that ends after a priming event and a `retry:` hint; the client
/// resumes with the priming event's id and gets the answer. In a 2025-06-18 session it
/// does nothing: the answer is JSON.
#[tokio::test]
async fn a_handler_may_close_its_connection_for_polling() {
    let gate = Gate::default();
    let config = HttpConfig::default().sse_retry(Duration::from_millis(250));
    let h = Harness::start_with(server(&gate), config).await;
    let c = Legacy::open(&h, "2025-11-25").await;
    let s = c.open_post(&call(1, "poll"), &[]).await;
    assert!(s.is_sse());
    let r = s.reply().await;
    assert!(r.messages.is_empty(), "{}", r.body);
    let ids = ids_in(&r.body);
    assert_eq!(ids.len(), 1, "{}", r.body);
    assert!(ids[0].ends_with("-0"), "a priming event: {}", r.body);
    assert_eq!(r.body, format!("id: {}\ndata:\n\nretry: 250\n\n", ids[0]));
    gate.open();
    let mut resumed = c.get("tools/call", &[("Last-Event-ID", &ids[0])]).await;
    let done = resumed.next(PATIENCE).await.msg("the answer");
    assert_eq!(text_of(&done), "released");
    assert!(matches!(resumed.next(PATIENCE).await, Next::End));

    let c = Legacy::open(&h, "2025-06-18").await;
    gate.started.store(false, Ordering::SeqCst);
    let waiting = spawn_post(&c, call(2, "poll"));
    until("the tool runs again", || gate.started()).await;
    gate.open();
    let r = waiting.await.expect("the request task");
    assert!(!r.is_sse(), "{}", r.body);
    assert_eq!(text_of(r.response()), "released");
}

/// The session's buffer holds at most `session_events` events over all its streams:
/// a stream resumed after more than that replays the newest that many, the answer
/// last. At the bound everything is replayed; one past it, the oldest is gone.
#[tokio::test]
async fn the_event_buffer_is_bounded() {
    let gate = Gate::default();
    let config = HttpConfig::default().session_event_buffer(2, 1024 * 1024);
    let h = Harness::start_with(server(&gate), config).await;
    let mut c = Legacy::open(&h, "2025-11-25").await;
    c.call("logging/setLevel", json!({"level": "info"})).await;
    for (tool, expected) in [
        ("poll_then_log_once", vec!["log 0", "released"]),
        ("poll_then_log_twice", vec!["log 1", "released"]),
    ] {
        let id = c.next_id();
        let r = c.open_post(&call(id, tool), &[]).await.reply().await;
        let primed = ids_in(&r.body).pop().expect("a priming event");
        gate.open();
        // Read once to its end, so the answer is in the buffer; then what it holds.
        c.get("tools/call", &[("Last-Event-ID", &primed)])
            .await
            .reply()
            .await;
        let resumed = c
            .get("tools/call", &[("Last-Event-ID", &primed)])
            .await
            .reply()
            .await;
        let got: Vec<&str> = resumed
            .messages
            .iter()
            .map(|m| m["params"]["data"].as_str().unwrap_or_else(|| text_of(m)))
            .collect();
        assert_eq!(got, expected, "{}", resumed.body);
    }
}

// ---- Stateless ----

/// `legacy_sessions(false)`: `initialize` is answered without a session id, each POST is
/// served on its own (no session id needed), GET and DELETE are 405; the client cannot
/// be asked anything, cannot subscribe, and its streams have no ids.
#[tokio::test]
async fn stateless_legacy_mode() {
    let config = HttpConfig::default().legacy_sessions(false);
    let h = Harness::start_with(fixture(), config).await;
    let mut c = Legacy::new(&h, "2025-11-25");
    let id = c.next_id();
    let r = c
        .post(
            &initialize(id, "2025-06-18", json!({"elicitation": {}})),
            &[("MCP-Protocol-Version", "")],
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.response()["result"]["protocolVersion"],
        json!("2025-06-18")
    );
    assert!(r.header("mcp-session-id").is_none(), "{r:?}");
    c.notify("notifications/initialized", json!({}))
        .await
        .assert_accepted();
    assert_eq!(c.call("tools/list", json!({})).await.status, 200);
    let r = c
        .call(
            "tools/call",
            json!({"name": "test_input_required_result_elicitation"}),
        )
        .await;
    assert_eq!(r.response()["result"]["isError"], json!(true), "{}", r.body);
    let id = c.next_id();
    c.post(
        &request(
            id,
            "resources/subscribe",
            json!({"uri": "test://static-text"}),
        ),
        &[],
    )
    .await
    .assert_error(200, -32600, Some(json!(id)));
    let r = c
        .call(
            "tools/call",
            json!({"name": "test_tool_with_progress", "_meta": {"progressToken": 1}}),
        )
        .await;
    assert!(r.is_sse());
    assert_eq!(r.notifications().len(), 3);
    assert!(ids_in(&r.body).is_empty(), "no event ids: {}", r.body);
    c.answer(
        "elicitation/create",
        &json!(1),
        json!({"action": "decline"}),
    )
    .await
    .assert_accepted();
    for method in [Method::GET, Method::DELETE] {
        let r = h
            .request(method, &h.url, &[("Accept", "text/event-stream")])
            .await;
        r.assert_error(405, -32600, None);
        assert_eq!(r.header("allow"), Some("POST"));
    }
    c.post(
        &request(9, "ping", json!({})),
        &[("MCP-Protocol-Version", "2024-11-05")],
    )
    .await
    .assert_error(400, -32600, None);
}

/// A resumption while the stream's old connection is open takes the stream over: the
/// old connection ends.
#[tokio::test]
async fn a_resumption_replaces_the_connection_it_resumes() {
    let server = server(&Gate::default());
    let h = Harness::start(server.clone()).await;
    let c = Legacy::open(&h, "2025-11-25").await;
    let mut first = c.get("", &[]).await;
    server.add_tool(plain_tool("one")).expect("adds");
    first.next(PATIENCE).await.msg("a change");
    let last = first.last_event_id().expect("an id");
    let mut second: Stream = c.get("", &[("Last-Event-ID", &last)]).await;
    assert!(matches!(first.next(PATIENCE).await, Next::End));
    server.add_tool(plain_tool("two")).expect("adds");
    second
        .next(PATIENCE)
        .await
        .msg("the next change, on the new connection");
}

/// Shutting the endpoint down ends the sessions' open streams (so the server can stop)
/// and the sessions with them.
#[tokio::test]
async fn shutdown_ends_legacy_streams_and_sessions() {
    let gate = Gate::default();
    let server = server(&gate);
    let h = Harness::start(server.clone()).await;
    let http = h.http();
    let c = Legacy::open(&http, "2025-11-25").await;
    let mut get = c.get("", &[]).await;
    let params = json!({"name": "progress_then_wait", "_meta": {"progressToken": 1}});
    let mut post = c.open_post(&request(1, "tools/call", params), &[]).await;
    post.next(PATIENCE).await.msg("the progress");
    until("the tool waits", || gate.started()).await;
    drop(h);
    assert!(matches!(get.next(PATIENCE).await, Next::End));
    assert!(matches!(post.next(PATIENCE).await, Next::End));
    until("the session's request is cancelled", || gate.cancelled()).await;
    until("the session ends", || server.open_streams() == 0).await;
}
