//! Bounds that always hold (design: "Limits that always hold"), each tested at the bound
//! and just past it: the pagination cursor's length, and a request's notifications (the
//! number of progress and log messages, log data size, progress message length, and the
//! per-request rate).

use crate::http_util::builder;
use presa::registry::MAX_CURSOR_BYTES;
use presa::testing::TestClient;
use presa::{LogLevel, Server, Tool, ToolCall};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

// The bounds as the book states them (configuration.md, "Limits that always hold").
const MAX_PROGRESS_NOTIFICATIONS: u32 = 1000;
const MAX_LOG_NOTIFICATIONS: u32 = 1000;
const MAX_PROGRESS_MESSAGE_BYTES: usize = 4096;
const MAX_LOG_DATA_BYTES: usize = 64 * 1024;
const NOTIFICATION_RATE_PER_SECOND: f64 = 200.0;

/// A server with one tool, `name`, running `body` on the request context.
fn one_tool<F, Fut>(name: &str, body: F) -> Server
where
    F: Fn(presa::RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = String> + Send + 'static,
{
    let body = std::sync::Arc::new(body);
    builder()
        .tool(
            Tool::new(name)
                .description("Exercises a bound")
                .handler(move |call: ToolCall| {
                    let body = std::sync::Arc::clone(&body);
                    async move { body(call.ctx).await }
                }),
        )
        .build()
        .expect("builds")
}

/// Calls `name` with a progress token, at log level debug; every message of the
/// exchange (the notifications at their bounds included) is checked against the schema.
async fn call(server: &Server, name: &str) -> presa::testing::TestResponse {
    let r = TestClient::new(server)
        .with_log_level(LogLevel::Debug)
        .request(
            "tools/call",
            json!({"name": name, "_meta": {"progressToken": "p"}}),
        )
        .await;
    let mut messages = r.notifications.clone();
    messages.push(r.message.clone());
    presa_tests::schema::check_exchange("tools/call", &messages);
    r
}

fn tool_text(r: &presa::testing::TestResponse) -> String {
    r.result()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn count(r: &presa::testing::TestResponse, method: &str) -> usize {
    r.notifications
        .iter()
        .filter(|n| n["method"] == method)
        .count()
}

/// A cursor of exactly `MAX_CURSOR_BYTES` is read; the next longer one is refused.
/// (Unpadded base64 of 1,536 bytes is 2,048 characters; one more byte makes 2,050.)
#[tokio::test]
async fn cursor_length_is_bounded_at_2048_bytes() {
    use base64::Engine;
    assert_eq!(MAX_CURSOR_BYTES, 2048);
    let server = one_tool("t", |_| async { String::new() });
    let c = TestClient::new(&server);
    let cursor = |key_len: usize| {
        let raw = format!("presa1\ntools\n{}", "a".repeat(key_len));
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
    };
    let at = cursor(1536 - "presa1\ntools\n".len());
    assert_eq!(at.len(), MAX_CURSOR_BYTES);
    let r = c.request("tools/list", json!({"cursor": at})).await;
    assert!(r.message.get("result").is_some(), "{}", r.message);
    presa_tests::schema::check_response("tools/list", &r.message);
    let past = cursor(1537 - "presa1\ntools\n".len());
    assert!(past.len() > MAX_CURSOR_BYTES);
    let r = c.request("tools/list", json!({"cursor": past})).await;
    presa_tests::schema::check_response("tools/list", &r.message);
    assert_eq!(r.message["error"]["code"], -32602, "{}", r.message);
    assert_eq!(r.message["error"]["message"], "Invalid pagination cursor");
}

/// Sends `n` notifications through `send`, waiting for the rate bound to refill when it
/// refuses one; returns how many were sent before `send` kept refusing past a refill.
async fn send_until_refused(mut send: impl FnMut(usize) -> bool, n: usize) -> usize {
    let mut sent = 0;
    while sent < n {
        if send(sent) {
            sent += 1;
            continue;
        }
        // Refused: wait for more than one token's refill and try once more.
        tokio::time::sleep(Duration::from_millis(12)).await;
        if !send(sent) {
            break;
        }
        sent += 1;
    }
    sent
}

/// At most `MAX_PROGRESS_NOTIFICATIONS` progress notifications per request: the
/// thousandth is sent, the next is refused even with the rate bound refilled.
#[tokio::test]
async fn progress_notifications_stop_at_1000_per_request() {
    let server = one_tool("many_progress", |ctx| async move {
        let sent = send_until_refused(
            |i| ctx.progress((i + 1) as f64, None, None),
            MAX_PROGRESS_NOTIFICATIONS as usize + 50,
        )
        .await;
        sent.to_string()
    });
    let r = call(&server, "many_progress").await;
    assert_eq!(tool_text(&r), MAX_PROGRESS_NOTIFICATIONS.to_string());
    assert_eq!(
        count(&r, "notifications/progress"),
        MAX_PROGRESS_NOTIFICATIONS as usize
    );
}

/// At most `MAX_LOG_NOTIFICATIONS` log notifications per request, likewise.
#[tokio::test]
async fn log_notifications_stop_at_1000_per_request() {
    let server = one_tool("many_logs", |ctx| async move {
        let sent = send_until_refused(
            |i| ctx.log(LogLevel::Info, i),
            MAX_LOG_NOTIFICATIONS as usize + 50,
        )
        .await;
        sent.to_string()
    });
    let r = call(&server, "many_logs").await;
    assert_eq!(tool_text(&r), MAX_LOG_NOTIFICATIONS.to_string());
    assert_eq!(
        count(&r, "notifications/message"),
        MAX_LOG_NOTIFICATIONS as usize
    );
}

/// Log data of exactly `MAX_LOG_DATA_BYTES` (as JSON) is sent; one byte more is dropped.
/// A progress message is cut to `MAX_PROGRESS_MESSAGE_BYTES` at a character boundary.
#[tokio::test]
async fn log_data_and_progress_messages_are_bounded() {
    let server = one_tool("sizes", |ctx| async move {
        // A string of n characters is n + 2 bytes of JSON.
        let at = ctx.log(LogLevel::Info, "a".repeat(MAX_LOG_DATA_BYTES - 2));
        let past = ctx.log(LogLevel::Info, "b".repeat(MAX_LOG_DATA_BYTES - 1));
        // 4,095 ASCII bytes then a 2-byte character straddling the bound.
        let message = format!("{}é tail", "x".repeat(MAX_PROGRESS_MESSAGE_BYTES - 1));
        let progress = ctx.progress(1.0, None, Some(&message));
        format!("{at} {past} {progress}")
    });
    let r = call(&server, "sizes").await;
    assert_eq!(tool_text(&r), "true false true");
    let logs: Vec<&Value> = r
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/message")
        .collect();
    assert_eq!(logs.len(), 1);
    assert_eq!(
        logs[0]["params"]["data"].as_str().map(str::len),
        Some(MAX_LOG_DATA_BYTES - 2)
    );
    let progress = r
        .notifications
        .iter()
        .find(|n| n["method"] == "notifications/progress")
        .expect("a progress notification");
    let sent = progress["params"]["message"].as_str().expect("a message");
    assert_eq!(sent, "x".repeat(MAX_PROGRESS_MESSAGE_BYTES - 1));
}

/// The rate bound: a burst of `NOTIFICATION_RATE_PER_SECOND` is sent at once, and more
/// only as it refills (at that rate per second).
#[tokio::test]
async fn notifications_are_rate_bounded_per_request() {
    let server = one_tool("burst", |ctx| async move {
        let started = Instant::now();
        let sent = (0..500)
            .filter(|i| ctx.progress(f64::from(*i) + 1.0, None, None))
            .count();
        format!("{sent} {}", started.elapsed().as_secs_f64())
    });
    let r = call(&server, "burst").await;
    let text = tool_text(&r);
    let mut parts = text.split(' ');
    let sent: usize = parts.next().and_then(|s| s.parse().ok()).expect("a count");
    let secs: f64 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .expect("a duration");
    let burst = NOTIFICATION_RATE_PER_SECOND as usize;
    let refill = (secs * NOTIFICATION_RATE_PER_SECOND).ceil() as usize;
    assert!(
        sent >= burst && sent <= burst + refill,
        "{sent} sent in {secs} s (burst {burst})"
    );
    assert_eq!(count(&r, "notifications/progress"), sent);
}
