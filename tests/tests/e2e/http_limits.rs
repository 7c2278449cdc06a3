//! The cap on requests served at once over HTTP: past it, a clear 503 with a JSON-RPC
//! error echoing the id, and the slot frees when the request ends.

use crate::http_util::{builder, raw_answer, raw_post_unchecked};
use presa::{HttpConfig, Tool, ToolCall};
use presa_tests::http::Harness;
use presa_tests::request;
use presa_tests::wait::Deadline;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// A tool that answers at once.
fn quick() -> Tool {
    Tool::new("quick")
        .description("Answers at once")
        .handler(|_: ToolCall| async { "quick" })
}

#[tokio::test]
async fn requests_past_max_in_flight_get_503() {
    let release = Arc::new(Notify::new());
    let started = Arc::new(Notify::new());
    let (r, s) = (Arc::clone(&release), Arc::clone(&started));
    let server = builder()
        .tool(
            Tool::new("blocks")
                .description("Waits until released")
                .handler(move |_: ToolCall| {
                    let (r, s) = (Arc::clone(&r), Arc::clone(&s));
                    async move {
                        s.notify_one();
                        r.notified().await;
                        "released"
                    }
                }),
        )
        .tool(quick())
        .build()
        .expect("builds");
    let h = Arc::new(Harness::start_with(server, HttpConfig::default().max_in_flight(1)).await);
    let first = {
        let h = Arc::clone(&h);
        tokio::spawn(async move {
            h.post(&request(1, "tools/call", json!({"name": "blocks"})), &[])
                .await
        })
    };
    presa_tests::wait::within("the first request runs", started.notified()).await;
    let busy = h
        .post(&request(2, "tools/call", json!({"name": "quick"})), &[])
        .await;
    busy.assert_error(503, -32603, Some(json!(2)));
    presa_tests::schema::check_response("tools/call", busy.response());
    release.notify_one();
    let first = first.await.expect("the first request ends");
    assert_eq!(first.status, 200, "{}", first.body);
    // The slot is free again.
    let again = h.call(3, "tools/call", json!({"name": "quick"})).await;
    assert_eq!(again.status, 200, "{}", again.body);
}

/// A connection that has sent a POST's head and the first 10 of its 1,000 body bytes,
/// and sends no more.
async fn slow_post_unchecked(h: &Harness) -> tokio::net::TcpStream {
    raw_post_unchecked(h, "Content-Length: 1000\r\n\r\n{\"jsonrpc\"").await
}

/// Calls `quick` once the one slot is free: a 503 is retried (the server frees the slot
/// once the request before has ended, a moment after its answer reached the client),
/// while a slot never given back fails the test at the deadline. Asserts the call is
/// answered 200.
async fn call_quick_when_free(h: &Harness, id: i64) {
    let deadline = Deadline::new("the one slot is free");
    loop {
        let r = h.call(id, "tools/call", json!({"name": "quick"})).await;
        if r.status != 503 {
            assert_eq!(r.status, 200, "{}", r.body);
            return;
        }
        deadline.tick(&r.body).await;
    }
}

/// Bodies being read count against the same cap: while one POST's body is still
/// arriving, with `max_in_flight(1)`, the next POST is refused with 503 before its body
/// is read (so without an id), and once the slow body is given up the slot is free.
#[tokio::test]
async fn bodies_being_read_are_capped_too() {
    let server = builder().tool(quick()).build().expect("builds");
    let h = Harness::start_with(server, HttpConfig::default().max_in_flight(1)).await;
    let slow = slow_post_unchecked(&h).await;
    // The server has taken the slow body's slot once the next POST is refused.
    let deadline = Deadline::new("the slow body takes the one slot");
    let busy = loop {
        let r = h
            .post(&request(2, "tools/call", json!({"name": "quick"})), &[])
            .await;
        if r.status == 503 {
            break r;
        }
        assert_eq!(r.status, 200, "{}", r.body);
        deadline.tick(&r.body).await;
    };
    busy.assert_error(503, -32603, None);
    presa_tests::schema::check_response("", busy.response());
    drop(slow);
    call_quick_when_free(&h, 3).await;
}

/// A body that does not arrive whole within `body_timeout` is given up: 408 with a
/// JSON-RPC error and no id, and its reading slot is free again, so a client trickling
/// bodies cannot hold the reading slots.
#[tokio::test]
async fn a_body_not_received_in_time_is_408() {
    let server = builder().tool(quick()).build().expect("builds");
    let config = HttpConfig::default()
        .max_in_flight(1)
        .body_timeout(Duration::from_millis(200));
    let h = Harness::start_with(server, config).await;
    let mut slow = slow_post_unchecked(&h).await;
    let message = raw_answer(&mut slow, "408").await;
    assert_eq!(message["error"]["code"], -32600, "{message}");
    assert_eq!(message["id"], serde_json::Value::Null, "{message}");
    presa_tests::schema::check_response("", &message);
    // The slot is free again.
    let again = h.call(2, "tools/call", json!({"name": "quick"})).await;
    assert_eq!(again.status, 200, "{}", again.body);
}

/// `usize::MAX` is how a user says "no bound" on either cap; it builds and serves (it
/// once panicked when the router was built: the caps were semaphores, whose size is
/// bounded below `usize::MAX`).
#[tokio::test]
async fn caps_of_usize_max_mean_no_bound() {
    let server = builder().tool(quick()).build().expect("builds");
    let config = HttpConfig::default()
        .max_in_flight(usize::MAX)
        .max_streams(usize::MAX);
    let h = Harness::start_with(server, config).await;
    for id in 1..=3 {
        let reply = h.call(id, "tools/call", json!({"name": "quick"})).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        assert_eq!(reply.response()["result"]["content"][0]["text"], "quick");
    }
}

/// A body framed wrongly (a chunk size that is not hex) could not be read: 400 with
/// -32600 and no id, not the 413 of a body over the limit; and its reading slot is free
/// again.
#[tokio::test]
async fn a_body_that_cannot_be_read_is_400() {
    let server = builder().tool(quick()).build().expect("builds");
    let h = Harness::start_with(server, HttpConfig::default().max_in_flight(1)).await;
    let mut broken = raw_post_unchecked(
        &h,
        "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    )
    .await;
    let message = raw_answer(&mut broken, "400").await;
    assert_eq!(message["error"]["code"], -32600, "{message}");
    assert_eq!(message["id"], serde_json::Value::Null, "{message}");
    assert!(
        message["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("could not be read")),
        "{message}"
    );
    presa_tests::schema::check_response("", &message);
    let again = h.call(2, "tools/call", json!({"name": "quick"})).await;
    assert_eq!(again.status, 200, "{}", again.body);
}

fn panics() -> &'static str {
    panic!("a handler that panics")
}

/// With one slot, every way a request ends gives its slots back: each request below is
/// followed by a quick call, which a slot still held would turn into 503. (A request
/// answered at its first poll as JSON, a body over the limit, a reply sent as SSE
/// because the tool sent progress first, a handler that panicked.)
#[tokio::test]
async fn every_way_a_request_ends_frees_its_slot() {
    let server = builder()
        .tool(quick())
        .tool(
            Tool::new("reports")
                .description("Reports progress, then answers")
                .handler(|call: ToolCall| async move {
                    call.ctx.progress(1.0, None, None);
                    "reported"
                }),
        )
        .tool(
            Tool::new("panics")
                .description("Panics")
                .handler(|_: ToolCall| async { panics() }),
        )
        .build()
        .expect("builds");
    let config = HttpConfig::default().max_in_flight(1).max_body_bytes(1024);
    let h = Harness::start_with(server, config).await;
    for id in 1..=3 {
        call_quick_when_free(&h, id).await;
    }
    let big = request(
        10,
        "tools/call",
        json!({"name": "quick", "arguments": {"pad": "p".repeat(2000)}}),
    );
    h.post(&big, &[]).await.assert_error(413, -32600, None);
    call_quick_when_free(&h, 11).await;
    let mut reports = request(20, "tools/call", json!({"name": "reports"}));
    reports["params"]["_meta"]["progressToken"] = json!("t");
    let sse = h.post(&reports, &[]).await;
    assert!(sse.is_sse(), "{}", sse.body);
    assert_eq!(sse.response()["result"]["content"][0]["text"], "reported");
    call_quick_when_free(&h, 21).await;
    let panicked = h
        .post(&request(30, "tools/call", json!({"name": "panics"})), &[])
        .await;
    assert_eq!(panicked.error_code(), Some(-32603), "{}", panicked.body);
    call_quick_when_free(&h, 31).await;
}
