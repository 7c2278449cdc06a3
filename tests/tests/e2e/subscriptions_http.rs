//! `subscriptions/listen` over Streamable HTTP (wire sections 11, 13.3; errata W-2, W-7):
//! the listen response is always SSE with the acknowledgement first, idle streams send
//! keepalive comments, open streams are capped (503 past the cap), a client closing its
//! connection ends its stream, and the server's graceful end (`close_streams`, shutdown)
//! is the empty listen result with the subscription id, then the end of the body.

use crate::subscriptions::{
    Frame, Next, PATIENCE, QUIET, SUB_ID, assert_ack, full_server, listen_params, method, sub_id,
};
use presa::HttpConfig;
use presa_tests::http::{Harness, Stream};
use presa_tests::request;
use presa_tests::schema::check_response;
use presa_tests::wait::{until, until_async};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn listen(id: Value, notifications: Value) -> Value {
    request(id, "subscriptions/listen", listen_params(notifications))
}

/// Opens a listen stream and reads its acknowledgement.
async fn open(h: &Harness, id: Value) -> Stream {
    let mut sse = h
        .open(&listen(id.clone(), json!({"toolsListChanged": true})), &[])
        .await;
    assert_eq!(sse.status, 200, "listen {id}");
    let ack = sse.next(PATIENCE).await.msg("the acknowledgement");
    assert_ack(&ack, &id);
    sse
}

#[tokio::test]
async fn a_listen_response_is_sse_with_the_acknowledgement_first() {
    let server = full_server();
    let h = Harness::start(server.clone()).await;
    let mut sse = h
        .open(&listen(json!(9), json!({"toolsListChanged": true})), &[])
        .await;
    assert_eq!(sse.status, 200);
    assert!(
        sse.header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream")),
        "{:?}",
        sse.header("content-type")
    );
    assert_eq!(sse.header("cache-control"), Some("no-cache"));
    assert_eq!(sse.header("x-accel-buffering"), Some("no"));
    // The very first frame is the acknowledgement (not a comment, not anything else).
    match sse.frame(PATIENCE).await {
        Some(Frame::Data(m)) => {
            assert_ack(&m, &json!(9));
            assert_eq!(
                m["params"]["notifications"],
                json!({"toolsListChanged": true})
            );
        }
        other => panic!("expected the acknowledgement first, got {other:?}"),
    }
    let raw = sse.raw().to_owned();
    assert!(raw.starts_with("data: "), "{raw:?}");
    // No event ids: resumable streams are gone in this revision.
    assert!(!raw.lines().any(|l| l.starts_with("id:")), "{raw:?}");
    // The listen stream stays open, with no result: nothing comes while nothing
    // changes, and the next change is the next message.
    assert!(matches!(sse.next(QUIET).await, Next::Timeout));
    server
        .add_tool(crate::subscriptions::plain_tool("later"))
        .expect("adds");
    let m = sse.next(PATIENCE).await.msg("the list change");
    assert_eq!(method(&m), "notifications/tools/list_changed", "{m}");
    assert!(!sse.raw().contains("id:"), "{:?}", sse.raw());
}

#[tokio::test]
async fn idle_listen_streams_send_keepalive_comments() {
    let server = full_server();
    let h = Harness::start_with(
        server.clone(),
        HttpConfig::default().keepalive(Duration::from_millis(100)),
    )
    .await;
    let mut sse = open(&h, json!("idle")).await;
    // Three keepalives, and nothing else, while nothing happens; at most one every
    // 100 ms (the first comes after 100 ms idle), however slow the machine.
    let started = Instant::now();
    for _ in 0..3 {
        match sse.frame(PATIENCE).await {
            Some(Frame::Comment(text)) => assert_eq!(text, "keepalive"),
            Some(Frame::Data(m)) => panic!("nothing happened, yet the stream sent {m}"),
            None => panic!("no keepalive within {PATIENCE:?}"),
        }
    }
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(250),
        "three keepalives 100 ms apart came within {took:?}"
    );
    assert!(sse.raw().contains(": keepalive\n\n"), "{:?}", sse.raw());
    // Between keepalives the stream still carries events.
    server
        .add_tool(crate::subscriptions::plain_tool("later"))
        .expect("adds");
    let m = sse.next(PATIENCE).await.msg("the list change");
    assert_eq!(method(&m), "notifications/tools/list_changed");
    assert_eq!(sub_id(&m), Some(&json!("idle")));
}

#[tokio::test]
async fn open_streams_are_capped_with_503_past_max_streams() {
    let server = full_server();
    let h = Harness::start_with(
        server.clone(),
        HttpConfig::default()
            .max_streams(2)
            .keepalive(Duration::from_millis(50)),
    )
    .await;
    let first = open(&h, json!(1)).await;
    let _second = open(&h, json!(2)).await;
    assert_eq!(server.open_streams(), 2);

    let reply = h
        .post(&listen(json!(3), json!({"toolsListChanged": true})), &[])
        .await;
    assert_eq!(reply.status, 503, "{}", reply.body);
    let response = reply.response();
    check_response("subscriptions/listen", response);
    assert_eq!(response["id"], json!(3), "{response}");
    assert!(
        response["error"]["code"].is_i64(),
        "a JSON-RPC error body: {response}"
    );
    assert_eq!(
        server.open_streams(),
        2,
        "the refused stream was not opened"
    );

    // Other requests are not capped.
    let tools = h.call(4, "tools/list", json!({})).await;
    assert_eq!(tools.status, 200);

    // Once a client goes away, its place is free again (refused with 503 until the
    // server has seen the connection close).
    drop(first);
    let mut reopened = until_async(
        "a stream slot frees once its client disconnects",
        || async {
            let sse = h
                .open(&listen(json!(5), json!({"toolsListChanged": true})), &[])
                .await;
            if sse.status == 503 {
                let refused = sse.reply().await;
                check_response("subscriptions/listen", refused.response());
                return None;
            }
            Some(sse)
        },
    )
    .await;
    assert_eq!(reopened.status, 200);
    assert_ack(&reopened.next(PATIENCE).await.msg("ack"), &json!(5));
}

#[tokio::test]
async fn a_client_closing_its_connection_ends_its_stream() {
    let server = full_server();
    let h = Harness::start_with(
        server.clone(),
        HttpConfig::default().keepalive(Duration::from_millis(50)),
    )
    .await;
    let sse = open(&h, json!("gone")).await;
    assert_eq!(server.open_streams(), 1);
    drop(sse);
    until(
        "the stream of a disconnected client is dropped (errata W-7)",
        || server.open_streams() == 0,
    )
    .await;
}

/// Asserts `m` is the graceful end of listen `id`: the empty listen result, with the
/// subscription id and serverInfo in `_meta`.
#[track_caller]
fn assert_graceful_end(m: &Value, id: &Value) {
    assert!(
        m.get("method").is_none(),
        "expected the listen result, got {m}"
    );
    assert_eq!(m["id"], *id, "{m}");
    let result = &m["result"];
    assert_eq!(result["resultType"], "complete", "{m}");
    assert_eq!(result["_meta"][SUB_ID], *id, "{m}");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"],
        json!({"name": "subs", "version": "1"}),
        "{m}"
    );
    let keys: Vec<&String> = result
        .as_object()
        .map(|r| r.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys.len(), 2, "the result body is otherwise empty: {m}");
}

/// Reads `sse` to its graceful end: the listen result of `id`, then the end of the body.
async fn read_to_graceful_end(sse: &mut Stream, id: &Value) {
    loop {
        let m = sse.next(PATIENCE).await.msg("the graceful end");
        if m.get("method").is_some() {
            // Errata W-2 leaves open whether HTTP also gets notifications/cancelled; if it
            // is sent, it names this listen request.
            assert_eq!(method(&m), "notifications/cancelled", "{m}");
            assert_eq!(m["params"]["requestId"], *id, "{m}");
            continue;
        }
        assert_graceful_end(&m, id);
        break;
    }
    assert!(
        matches!(sse.next(PATIENCE).await, Next::End),
        "the stream closes after the listen result"
    );
}

#[tokio::test]
async fn close_streams_sends_the_empty_listen_result_then_closes() {
    let server = full_server();
    let h = Harness::start(server.clone()).await;
    let ids = [json!("end-a"), json!(17)];
    let mut streams = Vec::new();
    for id in &ids {
        streams.push(open(&h, id.clone()).await);
    }
    server.close_streams();
    for (sse, id) in streams.iter_mut().zip(&ids) {
        read_to_graceful_end(sse, id).await;
    }
    until("every stream is closed", || server.open_streams() == 0).await;
    // The server itself still serves requests.
    assert_eq!(h.call(1, "tools/list", json!({})).await.status, 200);
}

#[tokio::test]
async fn shutting_the_server_down_ends_streams_with_the_listen_result() {
    let server = full_server();
    let h = Harness::start(server.clone()).await;
    let id = json!("shutdown");
    let mut sse = open(&h, id.clone()).await;
    drop(h);
    read_to_graceful_end(&mut sse, &id).await;
}

/// A listen whose request arrives on an open connection after shutdown began (its body
/// still coming when the streams were closed) ends gracefully too, and the server's
/// `serve_http_on` returns; before, the late stream lived on with its keepalives and
/// held the shutdown open.
#[tokio::test]
async fn a_listen_arriving_during_shutdown_ends_and_serving_returns() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = full_server();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let addr = listener.local_addr().expect("an address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(async move {
        server
            .serve_http_on(listener, HttpConfig::default(), async {
                let _ = stopped.await;
            })
            .await
    });
    let message = listen(json!("late"), json!({"toolsListChanged": true}));
    presa_tests::schema::check_outgoing(&message);
    let body = message.to_string();
    let (first, rest) = body.split_at(body.len() / 2);
    let mut tcp = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connects");
    // `Expect: 100-continue`: the server says `100 Continue` once it reads the body, so
    // the test knows the request is in (its body still coming) before shutdown begins.
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: {}\r\nMcp-Method: subscriptions/listen\r\n\
         Expect: 100-continue\r\nContent-Length: {}\r\n\r\n{first}",
        presa::PROTOCOL_VERSION,
        body.len()
    );
    tcp.write_all(head.as_bytes()).await.expect("writes");
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("\r\n\r\n") {
        let n = presa_tests::wait::within("100 Continue", tcp.read(&mut buf))
            .await
            .expect("reads");
        assert!(n > 0, "the connection closed before 100 Continue");
        seen.extend_from_slice(&buf[..n]);
    }
    let interim = String::from_utf8_lossy(&seen).into_owned();
    let (continued, after) = interim.split_once("\r\n\r\n").expect("an interim head");
    assert!(continued.starts_with("HTTP/1.1 100"), "{interim}");
    let mut seen = after.as_bytes().to_vec();
    let _ = stop.send(());
    // Shutdown has begun once the server no longer takes connections.
    until_async("the server stops taking connections", || async move {
        tokio::net::TcpStream::connect(addr)
            .await
            .is_err()
            .then_some(())
    })
    .await;
    tcp.write_all(rest.as_bytes())
        .await
        .expect("writes the rest");
    // The stream answers, acknowledges and ends with the listen result.
    loop {
        let n = presa_tests::wait::within("the end of the stream", tcp.read(&mut buf))
            .await
            .expect("reads");
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&seen);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.contains("\"result\"") && text.contains("\"late\""),
        "the graceful end: {text}"
    );
    // The events, read out of the chunked body (each event's `data:` line is whole in
    // its chunk), each checked against the schema as answering the listen: the
    // acknowledgement, then the listen result that ends the stream.
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .replace("\r\n", "\n");
    let events = presa_tests::sse::parse(&body, "subscriptions/listen");
    let last = events.last().expect("events on the stream");
    assert_graceful_end(last, &json!("late"));
    let returned = tokio::time::timeout(PATIENCE, serving).await;
    assert!(
        matches!(returned, Ok(Ok(Ok(())))),
        "serve_http_on returns: {returned:?}"
    );
}
