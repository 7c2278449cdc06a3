//! Progress, logging and SSE over Streamable HTTP (wire sections 8, 9, 12, 13.3, 13.8;
//! errata W-6, W-7, W-11, W-18): when a response switches to SSE and what the stream
//! looks like, log-level filtering, cancellation when the client disconnects, handler
//! panics, and concurrent streams. Every frame is schema-checked.

use crate::http_util::{builder, first_text, meta_with, request_with_meta, result, serve_tool};
use presa::{Error, Tool, ToolCall};
use presa_tests::http::{Harness, Reply};
use presa_tests::wait::{PATIENCE, QUIET, until};
use presa_tests::{fixture, request, token_watcher};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// A tools/call of `name` whose `_meta` is the full valid one changed by `changes`.
fn tool_call(id: i64, name: &str, changes: Value) -> Value {
    request_with_meta(
        id,
        "tools/call",
        json!({"name": name, "arguments": {}}),
        Some(meta_with(changes)),
    )
}

/// [`tool_call`] posted with the standard headers (the reply schema-checked).
async fn post_tool(h: &Harness, id: i64, name: &str, changes: Value) -> Reply {
    h.post(&tool_call(id, name, changes), &[]).await
}

/// A tool `fails_late` that reports progress, then fails with invalid params; `live`
/// streams its notifications instead of holding them.
fn fails_late(live: bool) -> Tool {
    Tool::new("fails_late")
        .description("Reports progress, then fails with invalid params")
        .live_notifications(live)
        .handler(|call: ToolCall| async move {
            call.ctx.progress(1.0, None, None);
            Err::<String, _>(Error::invalid_params("late failure"))
        })
}

#[track_caller]
fn assert_sse_headers(r: &Reply) {
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.is_sse(), "content-type {:?}", r.header("content-type"));
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    assert_eq!(r.header("x-accel-buffering"), Some("no"));
    // Resumable streams are gone in this revision: no event ids.
    assert!(
        !r.body.lines().any(|l| l.starts_with("id:")),
        "no id: lines in {:?}",
        r.body
    );
}

#[track_caller]
fn assert_plain_json(r: &Reply) {
    assert!(
        r.header("content-type")
            .is_some_and(|c| c.starts_with("application/json")),
        "content-type {:?}",
        r.header("content-type")
    );
    assert_eq!(r.messages.len(), 1, "{}", r.body);
}

/// The notifications of `r` with method `method`.
fn notes<'r>(r: &'r Reply, method: &str) -> Vec<&'r Value> {
    r.notifications()
        .iter()
        .filter(|n| n["method"] == method)
        .collect()
}

// ---- 8.2, 8.3: progress and SSE ----

#[tokio::test]
async fn progress_switches_the_response_to_sse() {
    let h = Harness::start(fixture()).await;
    let msg = tool_call(
        1,
        "test_tool_with_progress",
        json!({"progressToken": "progress-test-1"}),
    );
    let r = h.post(&msg, &[]).await;
    assert_sse_headers(&r);
    // The response is the last frame and answers the request.
    let response = r.response();
    assert_eq!(response["id"], json!(1));
    assert_eq!(
        first_text(&response["result"]),
        "Progress computation completed: 5050"
    );
    let progress = notes(&r, "notifications/progress");
    assert_eq!(progress.len(), 3, "{}", r.body);
    assert_eq!(
        r.notifications().len(),
        3,
        "only progress frames: {}",
        r.body
    );
    let mut last = f64::NEG_INFINITY;
    for n in &progress {
        assert!(n.get("id").is_none(), "a notification has no id: {n}");
        assert_eq!(n["params"]["progressToken"], json!("progress-test-1"));
        assert_eq!(n["params"]["total"], json!(100));
        let value = n["params"]["progress"].as_f64().expect("a number");
        assert!(value > last, "progress must strictly increase: {}", r.body);
        last = value;
    }
    assert_eq!(
        progress[0]["params"]["message"],
        json!("Starting computation")
    );
}

#[tokio::test]
async fn integer_progress_token_is_echoed() {
    let h = Harness::start(fixture()).await;
    let r = post_tool(
        &h,
        2,
        "test_tool_with_progress",
        json!({"progressToken": 77}),
    )
    .await;
    assert_sse_headers(&r);
    let progress = notes(&r, "notifications/progress");
    assert_eq!(progress.len(), 3, "{}", r.body);
    for n in progress {
        assert_eq!(n["params"]["progressToken"], json!(77));
    }
}

#[tokio::test]
async fn without_progress_token_the_response_is_plain_json() {
    let h = Harness::start(fixture()).await;
    let r = h
        .call(
            3,
            "tools/call",
            json!({"name": "test_tool_with_progress", "arguments": {}}),
        )
        .await;
    assert_plain_json(&r);
    assert_eq!(
        first_text(result(&r)),
        "Progress computation completed: 5050"
    );
}

#[tokio::test]
async fn progress_token_without_reports_stays_plain_json() {
    let h = Harness::start(fixture()).await;
    let r = post_tool(&h, 4, "test_simple_text", json!({"progressToken": "p"})).await;
    assert_plain_json(&r);
    result(&r);
}

#[tokio::test]
async fn progress_values_that_do_not_increase_are_dropped() {
    // Errata W-18: progress MUST increase with each notification.
    let h = serve_tool(
        Tool::new("wobbly")
            .description("Reports progress out of order")
            .handler(|call: ToolCall| async move {
                for v in [1.0, 1.0, 0.5, 2.0, 2.5, 2.5, 3.0] {
                    call.ctx.progress(v, None, None);
                }
                "done"
            }),
    )
    .await;
    let r = post_tool(&h, 5, "wobbly", json!({"progressToken": "w"})).await;
    assert_sse_headers(&r);
    let values: Vec<f64> = notes(&r, "notifications/progress")
        .iter()
        .filter_map(|n| n["params"]["progress"].as_f64())
        .collect();
    assert_eq!(values, [1.0, 2.0, 2.5, 3.0]);
}

#[tokio::test]
async fn held_notifications_are_dropped_when_the_call_fails() {
    // By default, tools/call notifications are held until the outcome is known (errata
    // W-11), so a failure keeps its HTTP status and the progress is not sent.
    let h = serve_tool(fails_late(false)).await;
    let r = post_tool(&h, 6, "fails_late", json!({"progressToken": 1})).await;
    assert!(!r.is_sse(), "{}", r.body);
    r.assert_error(400, -32602, Some(json!(6)));
    assert!(r.notifications().is_empty());
}

#[tokio::test]
async fn error_after_live_progress_is_the_last_sse_event() {
    let h = serve_tool(fails_late(true)).await;
    let r = post_tool(&h, 6, "fails_late", json!({"progressToken": 1})).await;
    assert_sse_headers(&r);
    assert_eq!(r.notifications().len(), 1);
    assert_eq!(r.response()["id"], json!(6));
    assert_eq!(r.response()["error"]["code"], json!(-32602));
}

#[tokio::test]
async fn missing_capability_error_is_400_even_after_progress() {
    // Errata W-11: -32021 MUST be sent with HTTP 400, even when the handler has already
    // produced a progress notification.
    let h = serve_tool(
        Tool::new("needs_sampling")
            .description("Reports progress, then needs the sampling capability")
            .handler(|call: ToolCall| async move {
                call.ctx.progress(1.0, None, Some("thinking"));
                Err::<String, _>(Error::missing_client_capability(json!({"sampling": {}})))
            }),
    )
    .await;
    let r = post_tool(&h, 7, "needs_sampling", json!({"progressToken": "s"})).await;
    r.assert_error(400, -32021, Some(json!(7)));
    assert_eq!(
        r.response()["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
}

#[tokio::test]
async fn missing_capability_error_without_progress_is_400() {
    let h = serve_tool(
        Tool::new("needs_sampling")
            .description("Needs the sampling capability")
            .handler(|_: ToolCall| async {
                Err::<String, _>(Error::missing_client_capability(json!({"sampling": {}})))
            }),
    )
    .await;
    let r = post_tool(&h, 8, "needs_sampling", json!({})).await;
    r.assert_error(400, -32021, Some(json!(8)));
}

// ---- 8.1: logging ----

#[tokio::test]
async fn no_log_messages_without_log_level() {
    let h = Harness::start(fixture()).await;
    let r = h
        .call(
            10,
            "tools/call",
            json!({"name": "test_logging_tool", "arguments": {}}),
        )
        .await;
    assert_plain_json(&r);
    assert!(notes(&r, "notifications/message").is_empty());
    assert_eq!(first_text(result(&r)), "Logged at every level");
}

#[tokio::test]
async fn log_level_warning_sends_only_warning_and_above() {
    let h = Harness::start(fixture()).await;
    let r = post_tool(&h, 11, "test_logging_tool", json!({LEVEL: "warning"})).await;
    assert_sse_headers(&r);
    let logs = notes(&r, "notifications/message");
    let levels: Vec<&str> = logs
        .iter()
        .filter_map(|n| n["params"]["level"].as_str())
        .collect();
    assert_eq!(
        levels,
        ["warning", "error", "critical", "alert", "emergency"]
    );
    for n in &logs {
        assert_eq!(n["params"]["logger"], json!("conformance"));
        assert!(n.get("id").is_none());
    }
    assert_eq!(logs[0]["params"]["data"], json!("warning message"));
    assert_eq!(r.response()["id"], json!(11));
}

#[tokio::test]
async fn log_level_debug_sends_every_level_and_emergency_only_one() {
    let h = Harness::start(fixture()).await;
    let r = post_tool(&h, 12, "test_logging_tool", json!({LEVEL: "debug"})).await;
    assert_eq!(notes(&r, "notifications/message").len(), 8, "{}", r.body);
    let r = post_tool(&h, 13, "test_logging_tool", json!({LEVEL: "emergency"})).await;
    let logs = notes(&r, "notifications/message");
    assert_eq!(logs.len(), 1, "{}", r.body);
    assert_eq!(logs[0]["params"]["level"], json!("emergency"));
}

#[tokio::test]
async fn log_level_without_log_calls_stays_plain_json() {
    let h = Harness::start(fixture()).await;
    let r = post_tool(&h, 14, "test_simple_text", json!({LEVEL: "debug"})).await;
    assert_plain_json(&r);
    result(&r);
}

#[tokio::test]
async fn disabled_logging_sends_nothing_and_advertises_nothing() {
    let server =
        builder()
            .logging(false)
            .tool(Tool::new("logs").description("Logs at error").handler(
                |call: ToolCall| async move {
                    call.ctx.log(presa::LogLevel::Error, "an error");
                    "logged"
                },
            ))
            .build()
            .expect("builds");
    let h = Harness::start(server).await;
    let r = post_tool(&h, 15, "logs", json!({LEVEL: "debug"})).await;
    assert_plain_json(&r);
    result(&r);
    let r = h.call(16, "server/discover", json!({})).await;
    assert!(result(&r)["capabilities"].get("logging").is_none());
}

#[tokio::test]
async fn progress_and_logs_share_one_stream_in_order() {
    let h = serve_tool(
        Tool::new("both")
            .description("Interleaves progress and logs")
            .handler(|call: ToolCall| async move {
                call.ctx.progress(1.0, Some(2.0), None);
                call.ctx.log(presa::LogLevel::Info, "half");
                call.ctx.progress(2.0, Some(2.0), None);
                "done"
            }),
    )
    .await;
    let r = post_tool(&h, 17, "both", json!({"progressToken": "b", LEVEL: "info"})).await;
    assert_sse_headers(&r);
    let methods: Vec<&str> = r
        .messages
        .iter()
        .map(|m| m["method"].as_str().unwrap_or("response"))
        .collect();
    assert_eq!(
        methods,
        [
            "notifications/progress",
            "notifications/message",
            "notifications/progress",
            "response"
        ]
    );
}

// ---- 13.8: concurrent streams ----

#[tokio::test]
async fn three_concurrent_tools_list_posts_all_succeed() {
    let h = Harness::start(fixture()).await;
    let accept = [("Accept", "text/event-stream, application/json")];
    let msgs: Vec<Value> = (1000..1003)
        .map(|id| request(id, "tools/list", json!({})))
        .collect();
    let (a, b, c) = tokio::join!(
        h.post(&msgs[0], &accept),
        h.post(&msgs[1], &accept),
        h.post(&msgs[2], &accept),
    );
    for (r, id) in [(a, 1000), (b, 1001), (c, 1002)] {
        assert!((200..300).contains(&r.status), "{}", r.body);
        assert_eq!(r.response()["id"], json!(id));
        assert!(r.response()["result"]["tools"].is_array());
    }
}

#[tokio::test]
async fn concurrent_streams_carry_only_their_own_notifications() {
    let h = Harness::start(fixture()).await;
    let first = tool_call(20, "test_tool_with_progress", json!({"progressToken": "A"}));
    let second = tool_call(21, "test_tool_with_progress", json!({"progressToken": "B"}));
    let (a, b) = tokio::join!(h.post(&first, &[]), h.post(&second, &[]));
    for (r, token, id) in [(a, "A", 20), (b, "B", 21)] {
        assert_sse_headers(&r);
        assert_eq!(r.response()["id"], json!(id));
        let progress = notes(&r, "notifications/progress");
        assert_eq!(progress.len(), 3);
        assert!(
            progress
                .iter()
                .all(|n| n["params"]["progressToken"] == token)
        );
    }
}

// ---- 9 and errata W-7: cancellation by disconnect ----

/// Sets its flag when dropped: proves the handler's future was dropped.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[derive(Clone, Default)]
struct Flags {
    started: Arc<AtomicBool>,
    dropped: Arc<AtomicBool>,
    finished: Arc<AtomicBool>,
}

/// A server with a tool `sleepy` that runs for 30 s (reporting progress first when asked),
/// recording whether it started, finished, and whether its future was dropped.
fn sleepy_server(flags: &Flags) -> presa::Server {
    let flags = flags.clone();
    builder()
        .tool(
            Tool::new("sleepy")
                .description("Sleeps for a long time")
                .live_notifications(true)
                .handler(move |call: ToolCall| {
                    let flags = flags.clone();
                    async move {
                        let _guard = SetOnDrop(Arc::clone(&flags.dropped));
                        flags.started.store(true, Ordering::SeqCst);
                        call.ctx.progress(1.0, None, Some("sleeping"));
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        flags.finished.store(true, Ordering::SeqCst);
                        "woke up"
                    }
                }),
        )
        .build()
        .expect("builds")
}

/// Whether `flag` is set.
fn set(flag: &AtomicBool) -> bool {
    flag.load(Ordering::SeqCst)
}

#[tokio::test]
async fn client_disconnect_cancels_a_json_request() {
    let flags = Flags::default();
    let h = Harness::start(sleepy_server(&flags)).await;
    let msg = request(30, "tools/call", json!({"name": "sleepy"}));
    let http = h.http();
    let pending = tokio::spawn(async move { http.post(&msg, &[]).await });
    until("the handler started", || set(&flags.started)).await;
    assert!(!pending.is_finished(), "the request is still running");
    // Go away: dropping the request closes the connection.
    pending.abort();
    let _ = pending.await;
    until(
        "the handler's future is dropped after the disconnect",
        || set(&flags.dropped),
    )
    .await;
    assert!(!flags.finished.load(Ordering::SeqCst));
    // The server keeps serving.
    result(&h.call(31, "server/discover", json!({})).await);
}

/// Work a handler spawned with `ctx.cancellation_token()` (book, cancellation.md) sees
/// the client go away: the request's token is the one the disconnect fires.
#[tokio::test]
async fn client_disconnect_fires_the_token_handed_to_spawned_work() {
    let (tool, watch) = token_watcher();
    let h = serve_tool(tool).await;
    let msg = request(34, "tools/call", json!({"name": "watched"}));
    let http = h.http();
    let pending = tokio::spawn(async move { http.post(&msg, &[]).await });
    until("the handler started", || watch.started()).await;
    // Nothing fires the token while the client stays (watched for the quiet window).
    tokio::time::sleep(QUIET).await;
    assert!(!watch.saw_cancel(), "not cancelled yet");
    pending.abort();
    let _ = pending.await;
    until("the spawned work sees the disconnect", || {
        watch.saw_cancel()
    })
    .await;
    result(&h.call(35, "server/discover", json!({})).await);
}

/// Over HTTP too, a handler that cancels the token it was handed (to stop work it
/// spawned) still answers: the token is a child of the request's, and only the client
/// going away cancels the request (before, the answer was a 204 with no body).
#[tokio::test]
async fn a_handler_that_cancels_its_own_token_still_answers_over_http() {
    let h = serve_tool(
        Tool::new("quits")
            .description("Cancels the token it was handed, then waits once")
            .handler(|call: ToolCall| async move {
                call.ctx.cancellation_token().cancel();
                tokio::task::yield_now().await;
                "answered anyway"
            }),
    )
    .await;
    let reply = h.call(36, "tools/call", json!({"name": "quits"})).await;
    let answer = result(&reply);
    assert_eq!(
        answer["content"][0]["text"],
        json!("answered anyway"),
        "{answer}"
    );
}

/// Notifications stop with the response over HTTP too (`basic/patterns/progress.mdx`:
/// they "MUST stop after completion"): work a tool left behind that reports through a
/// clone of its context after the response adds nothing to the body, and the body ends
/// with the response without waiting for that work, whether the tool's notifications
/// are held until its result or streamed live.
#[tokio::test]
async fn nothing_is_sent_for_a_request_after_its_response() {
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let late_sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let late = |name: &str, live: bool| {
        let release = Arc::clone(&release);
        let late_sent = Arc::clone(&late_sent);
        Tool::new(name)
            .description("Returns at once, leaving work that reports after the response")
            .live_notifications(live)
            .handler(move |call: ToolCall| {
                let release = Arc::clone(&release);
                let late_sent = Arc::clone(&late_sent);
                async move {
                    call.ctx.progress(1.0, None, Some("before the response"));
                    let ctx = call.ctx.clone();
                    tokio::spawn(async move {
                        if let Ok(p) = release.acquire().await {
                            p.forget();
                        }
                        ctx.progress(2.0, None, Some("after the response"));
                        ctx.log(presa::LogLevel::Emergency, "after the response");
                        late_sent.fetch_add(1, Ordering::SeqCst);
                    });
                    "returned"
                }
            })
    };
    let server = builder()
        .tool(late("late_held", false))
        .tool(late("late_live", true))
        .build()
        .expect("builds");
    let h = Harness::start(server).await;
    for (id, name) in [(40, "late_held"), (41, "late_live")] {
        let msg = tool_call(id, name, json!({"progressToken": name, LEVEL: "debug"}));
        // The late work waits for a permit given only after the body has ended.
        let reply = presa_tests::wait::within(
            "the body ends with the response, without waiting for the late work",
            h.post(&msg, &[]),
        )
        .await;
        presa_tests::schema::check_exchange("tools/call", &reply.messages);
        assert_eq!(reply.messages.len(), 2, "{name}: {}", reply.body);
        assert_eq!(reply.messages[0]["params"]["progress"], json!(1), "{name}");
        assert_eq!(reply.response()["id"], json!(id), "{name}");
        release.add_permits(1);
        let want = if id == 40 { 1 } else { 2 };
        until(&format!("{name}: the late work ran"), || {
            late_sent.load(Ordering::SeqCst) >= want
        })
        .await;
    }
    result(&h.call(42, "server/discover", json!({})).await);
}

#[tokio::test]
async fn client_disconnect_cancels_a_streaming_request() {
    let flags = Flags::default();
    let h = Harness::start(sleepy_server(&flags)).await;
    let msg = tool_call(32, "sleepy", json!({"progressToken": "z"}));
    let mut stream = h.open(&msg, &[]).await;
    assert_eq!(stream.status, 200);
    let first = stream.next(PATIENCE).await.msg("the first event");
    assert_eq!(first["method"], "notifications/progress", "{first}");
    // The progress came alone, in the first chunk.
    let raw = stream.raw().to_owned();
    assert_eq!(
        presa_tests::sse::parse(&raw, "tools/call").len(),
        1,
        "{raw:?}"
    );
    drop(stream);
    until(
        "the handler's future is dropped after the disconnect",
        || set(&flags.dropped),
    )
    .await;
    assert!(!flags.finished.load(Ordering::SeqCst));
    result(&h.call(33, "server/discover", json!({})).await);
}

#[tokio::test]
async fn disconnect_cancels_only_its_own_request_even_with_a_shared_id() {
    // Request ids are unique per sender only: two clients may use the same id, and one
    // client going away must not cancel the other's request. The other request waits at
    // a gate until the first one's handler has been dropped, then answers.
    let flags = Flags::default();
    let napping = Arc::new(AtomicBool::new(false));
    let wake = Arc::new(tokio::sync::Semaphore::new(0));
    let server = sleepy_server(&flags);
    let (nap_flag, nap_wake) = (Arc::clone(&napping), Arc::clone(&wake));
    server
        .add_tool(
            Tool::new("nap")
                .description("Sleeps until woken")
                .handler(move |_: ToolCall| {
                    let (napping, wake) = (Arc::clone(&nap_flag), Arc::clone(&nap_wake));
                    async move {
                        napping.store(true, Ordering::SeqCst);
                        if let Ok(p) = wake.acquire().await {
                            p.forget();
                        }
                        "rested"
                    }
                }),
        )
        .expect("added");
    let h = Harness::start(server).await;
    let leaving = request(7, "tools/call", json!({"name": "sleepy"}));
    let http = h.http();
    let leave = tokio::spawn(async move { http.post(&leaving, &[]).await });
    until("the leaving request runs", || set(&flags.started)).await;
    let staying = request(7, "tools/call", json!({"name": "nap"}));
    let http = h.http();
    let stay = tokio::spawn(async move { http.post(&staying, &[]).await });
    until("the staying request runs", || set(&napping)).await;
    leave.abort();
    let _ = leave.await;
    until("the leaving request's handler is dropped", || {
        set(&flags.dropped)
    })
    .await;
    wake.add_permits(1);
    let r = presa_tests::wait::within("the staying request's answer", stay)
        .await
        .expect("the staying request ends");
    assert_eq!(r.response()["id"], json!(7));
    assert_eq!(first_text(result(&r)), "rested");
}

#[tokio::test]
async fn posted_cancelled_notification_is_accepted_and_does_not_cancel() {
    // Errata W-7: on HTTP a request is cancelled by disconnecting; a posted
    // notifications/cancelled may be answered 202 and ignored. The tool waits at a gate
    // opened only after the notification was accepted, and must then answer: a
    // cancellation, applied at any time, would leave it without one.
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let started = Arc::new(AtomicBool::new(false));
    let (g, s) = (Arc::clone(&gate), Arc::clone(&started));
    let h = serve_tool(
        Tool::new("gated")
            .description("Waits at a gate the test opens")
            .handler(move |_: ToolCall| {
                let (gate, started) = (Arc::clone(&g), Arc::clone(&s));
                async move {
                    started.store(true, Ordering::SeqCst);
                    if let Ok(p) = gate.acquire().await {
                        p.forget();
                    }
                    "finished"
                }
            }),
    )
    .await;
    let msg = request(34, "tools/call", json!({"name": "gated"}));
    let http = h.http();
    let pending = tokio::spawn(async move { http.post(&msg, &[]).await });
    until("the tool started", || set(&started)).await;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 34, "reason": "test"}});
    let r = h.post(&note, &[]).await;
    assert_eq!(r.status, 202);
    assert!(r.body.is_empty());
    gate.add_permits(1);
    let resp = presa_tests::wait::within("the request is answered", pending)
        .await
        .expect("the task ends");
    assert_eq!(resp.status, 200);
    assert!(!resp.is_sse(), "a JSON response: {}", resp.body);
    presa_tests::schema::check_response("tools/call", resp.response());
    assert_eq!(
        first_text(&resp.response()["result"]),
        "finished",
        "{}",
        resp.body
    );
}

// ---- 12: panics are -32603 / 500 ----

fn explode() -> &'static str {
    panic!("secret internal detail")
}

/// A tool `explodes_late` that reports progress, then panics; `live` streams its
/// notifications instead of holding them.
fn explodes_late(live: bool) -> Tool {
    Tool::new("explodes_late")
        .description("Reports progress, then panics")
        .live_notifications(live)
        .handler(|call: ToolCall| async move {
            call.ctx.progress(1.0, None, None);
            explode()
        })
}

#[tokio::test]
async fn handler_panic_is_internal_error_500_without_detail() {
    let server = builder()
        .tool(
            Tool::new("explodes")
                .description("Panics")
                .handler(|_: ToolCall| async { explode() }),
        )
        .tool(crate::http_util::text_tool("fine", "still here"))
        .build()
        .expect("builds");
    let h = Harness::start(server).await;
    let r = h
        .post(&request(40, "tools/call", json!({"name": "explodes"})), &[])
        .await;
    r.assert_error(500, -32603, Some(json!(40)));
    assert!(r.response()["error"].get("data").is_none(), "{}", r.body);
    assert!(!r.body.contains("secret"), "{}", r.body);
    // The server keeps serving, the same tool included.
    let r = h.call(41, "tools/call", json!({"name": "fine"})).await;
    assert_eq!(first_text(result(&r)), "still here");
    h.post(&request(42, "tools/call", json!({"name": "explodes"})), &[])
        .await
        .assert_error(500, -32603, Some(json!(42)));
}

#[tokio::test]
async fn panic_after_live_progress_ends_the_stream_with_internal_error() {
    let h = serve_tool(explodes_late(true)).await;
    let r = post_tool(&h, 43, "explodes_late", json!({"progressToken": 1})).await;
    assert_sse_headers(&r);
    assert_eq!(r.response()["id"], json!(43));
    assert_eq!(r.response()["error"]["code"], json!(-32603));
    assert!(!r.body.contains("secret"));
}

#[tokio::test]
async fn panic_after_held_progress_is_a_plain_500() {
    let h = serve_tool(explodes_late(false)).await;
    let r = post_tool(&h, 44, "explodes_late", json!({"progressToken": 1})).await;
    r.assert_error(500, -32603, Some(json!(44)));
    assert!(!r.body.contains("secret"));
}
