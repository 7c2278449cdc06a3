//! `subscriptions/listen` over stdio (wire sections 9, 11, 14; errata W-2 and section 5 on
//! `subscriptions.mdx`, `cancellation.mdx`, `stdio.mdx`): several streams share one
//! connection, each tagged with its own id; the client closes a stream with
//! `notifications/cancelled` and hears nothing more of it; the server ends a stream with
//! `notifications/cancelled` for the listen id (and never for anything else) and no result;
//! closing stdin ends open streams promptly; and a slow listener does not make the server
//! buffer without bound (list changes coalesce; too many pending resource updates end the
//! stream gracefully).

use crate::subscriptions::{
    Client, Kind, Next, PATIENCE, QUIET, assert_ack, builder, full_server, listen_params, method,
    plain_prompt, plain_tool, sub_id,
};
use presa::subscriptions::MAX_PENDING_UPDATES;
use presa::{Server, StdioConfig, Tool, ToolCall};
use presa_tests::request;
use presa_tests::schema::check_notification;
use presa_tests::stdio::{LineReader, Session, checked_line};
use presa_tests::wait::until;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::sync::{Notify, Semaphore};

#[tokio::test]
async fn several_streams_share_one_connection_each_tagged_with_its_own_id() {
    let server = full_server();
    let mut c = Client::start(Kind::Stdio, &server).await;
    let tools = json!("s-tools");
    let prompts = json!(7);
    let both = json!("s-both");
    c.listen_to(tools.clone(), json!({"toolsListChanged": true}))
        .await;
    c.listen_to(prompts.clone(), json!({"promptsListChanged": true}))
        .await;
    c.listen_to(
        both.clone(),
        json!({"toolsListChanged": true, "promptsListChanged": true}),
    )
    .await;
    c.ok(
        1,
        "tools/call",
        json!({"name": "add_tool", "arguments": {"name": "t"}}),
    )
    .await;
    c.ok(
        2,
        "tools/call",
        json!({"name": "add_prompt", "arguments": {"name": "p"}}),
    )
    .await;
    c.expect_event(&tools, "notifications/tools/list_changed")
        .await;
    c.expect_event(&prompts, "notifications/prompts/list_changed")
        .await;
    c.expect_event(&both, "notifications/tools/list_changed")
        .await;
    c.expect_event(&both, "notifications/prompts/list_changed")
        .await;
    for id in [&tools, &prompts, &both] {
        c.expect_quiet(id).await;
    }
    // Every event line on the connection was tagged with a stream that asked for it.
    let wants: HashMap<String, Vec<&str>> = HashMap::from([
        (tools.to_string(), vec!["notifications/tools/list_changed"]),
        (
            prompts.to_string(),
            vec!["notifications/prompts/list_changed"],
        ),
        (
            both.to_string(),
            vec![
                "notifications/tools/list_changed",
                "notifications/prompts/list_changed",
            ],
        ),
    ]);
    for m in &c.seen {
        if method(m).ends_with("list_changed") {
            let id = sub_id(m).map(Value::to_string).unwrap_or_default();
            assert!(
                wants.get(&id).is_some_and(|w| w.contains(&method(m))),
                "an event for a stream that did not ask for it: {m}"
            );
        }
    }
}

#[tokio::test]
async fn a_client_cancel_closes_its_stream_with_nothing_further() {
    let server = full_server();
    let mut c = Client::start(Kind::Stdio, &server).await;
    let id = json!(5);
    let other = json!("stays");
    c.listen_to(id.clone(), json!({"toolsListChanged": true}))
        .await;
    c.listen_to(other.clone(), json!({"toolsListChanged": true}))
        .await;
    c.session()
        .send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": 5, "reason": "done listening"}}),
        )
        .await;
    until("the cancelled stream is closed", || {
        server.open_streams() == 1
    })
    .await;
    c.ok(
        1,
        "tools/call",
        json!({"name": "add_tool", "arguments": {"name": "t"}}),
    )
    .await;
    // The other stream still works; the cancelled one hears nothing: no event, no
    // result, no notifications/cancelled back.
    c.expect_event(&other, "notifications/tools/list_changed")
        .await;
    assert!(matches!(c.next(&id, QUIET).await, Next::Timeout));
    let after_ack: Vec<&Value> = c
        .seen
        .iter()
        .filter(|m| {
            sub_id(m) == Some(&id) && method(m) != "notifications/subscriptions/acknowledged"
        })
        .collect();
    assert!(after_ack.is_empty(), "{after_ack:?}");
    assert!(
        !c.seen
            .iter()
            .any(|m| method(m) == "notifications/cancelled" || m.get("id") == Some(&id)),
        "{:?}",
        c.seen
    );
}

/// A tool that is in flight while streams end: it says it started, then waits for a
/// permit of `gate`.
fn waiter(started: &Arc<Notify>, gate: &Arc<Semaphore>) -> Tool {
    let (started, gate) = (Arc::clone(started), Arc::clone(gate));
    Tool::new("wait")
        .description("Waits for the test to let it go")
        .handler(move |_: ToolCall| {
            let (started, gate) = (Arc::clone(&started), Arc::clone(&gate));
            async move {
                started.notify_one();
                if let Ok(p) = gate.acquire().await {
                    p.forget();
                }
                "waited"
            }
        })
}

#[tokio::test]
async fn close_streams_ends_each_stream_with_notifications_cancelled_and_no_result() {
    let started = Arc::new(Notify::new());
    let gate = Arc::new(Semaphore::new(0));
    let server = builder("subs")
        .resource_notifications(true)
        .tool(waiter(&started, &gate))
        .build()
        .expect("builds");
    let mut c = Client::start(Kind::Stdio, &server).await;
    let ids = [json!("end-a"), json!(9)];
    for id in &ids {
        c.listen_to(id.clone(), json!({"toolsListChanged": true}))
            .await;
    }
    // An ordinary request in flight is not a subscription: it is not cancelled.
    c.send_request(
        json!(1),
        "tools/call",
        json!({"name": "wait", "arguments": {}}),
    )
    .await;
    presa_tests::wait::within("the tool starts", started.notified()).await;
    server.close_streams();
    for id in &ids {
        let m = c.next(id, PATIENCE).await.msg("the end of the stream");
        check_notification(&m);
        assert_eq!(
            method(&m),
            "notifications/cancelled",
            "on stdio the server ends a stream with notifications/cancelled (errata W-2): {m}"
        );
        assert_eq!(m["params"]["requestId"], *id, "{m}");
    }
    gate.add_permits(1);
    let done = c.next(&json!(1), PATIENCE).await.msg("the tool's response");
    assert_eq!(done["result"]["content"][0]["text"], "waited", "{done}");
    c.ok(2, "server/discover", json!({})).await;
    for id in &ids {
        // No result after the cancellation: nothing more at all for the stream.
        assert!(matches!(c.next(id, QUIET).await, Next::Timeout), "{id}");
    }
    // notifications/cancelled is sent for listen requests only.
    for m in &c.seen {
        if method(m) == "notifications/cancelled" {
            assert!(ids.contains(&m["params"]["requestId"]), "{m}");
        }
    }
    assert_eq!(server.open_streams(), 0);
}

#[tokio::test]
async fn closing_stdin_ends_open_streams_promptly() {
    // In process: serve_io returns.
    let server = full_server();
    let mut c = Client::start(Kind::Stdio, &server).await;
    c.listen_to(json!(1), json!({"toolsListChanged": true}))
        .await;
    c.listen_to(json!(2), json!({"promptsListChanged": true}))
        .await;
    let start = Instant::now();
    assert!(c.finish().await, "serve_io ends cleanly");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "streams end at once when stdin closes, took {:?}",
        start.elapsed()
    );
    assert_eq!(server.open_streams(), 0);

    // The fixture's command line exits.
    let mut c = Client::over_stdio(Session::fixture(env!("CARGO_BIN_EXE_fixture")).await);
    c.listen_to(json!("fx"), json!({"toolsListChanged": true}))
        .await;
    let start = Instant::now();
    assert!(c.finish().await, "the fixture exits with status 0");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "took {:?}",
        start.elapsed()
    );
}

// ---- slow listeners ----

/// A writer that notes when a write would block (the pipe behind it is full).
struct Blocking<W> {
    inner: W,
    blocked: Arc<AtomicBool>,
}

impl<W: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Blocking<W> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if polled.is_pending() {
            self.blocked.store(true, Ordering::SeqCst);
        }
        polled
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A stdio connection whose server-to-client pipe holds only 64 bytes, so a client that
/// does not read stalls the server's writer at once (on the acknowledgement).
struct Stalled {
    writer: tokio::io::DuplexStream,
    lines: LineReader<tokio::io::DuplexStream>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Stalled {
    /// Serves `server`, sends listen `id` with `filter`, and returns once the stream is
    /// registered and the server's writer is blocked on the full pipe; the client has
    /// read nothing.
    async fn open(server: &Server, id: &Value, filter: Value) -> Stalled {
        let (mut writer, server_in) = tokio::io::duplex(64 * 1024);
        let (server_out, client_in) = tokio::io::duplex(64);
        let blocked = Arc::new(AtomicBool::new(false));
        let server_out = Blocking {
            inner: server_out,
            blocked: Arc::clone(&blocked),
        };
        let served = server.clone();
        let task = tokio::spawn(async move {
            served
                .serve_io(server_in, server_out, StdioConfig::default())
                .await
        });
        let listen = checked_line(&request(
            id.clone(),
            "subscriptions/listen",
            listen_params(filter),
        ));
        let mut lines = LineReader::new(client_in);
        lines.sent(&listen);
        writer
            .write_all(&listen)
            .await
            .expect("write the listen request");
        until("the stream opens", || server.open_streams() == 1).await;
        until("the writer blocks on the full pipe", || {
            blocked.load(Ordering::SeqCst)
        })
        .await;
        Stalled {
            writer,
            lines,
            task,
        }
    }

    /// Reads lines (each checked) until `done` holds for what was read, failing after
    /// [`PATIENCE`].
    async fn read_until(
        &mut self,
        what: &str,
        mut done: impl FnMut(&[Value]) -> bool,
    ) -> Vec<Value> {
        let mut out = Vec::new();
        while !done(&out) {
            let m = self
                .lines
                .next(PATIENCE)
                .await
                .unwrap_or_else(|| panic!("the output ended before {what}: {out:?}"));
            out.push(m);
        }
        out
    }

    /// Every line arriving within [`QUIET`] (each checked): what a rule says may not
    /// come, read once the stream has delivered what must.
    async fn read_quiet(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(m) = self.lines.next_within(QUIET).await {
            out.push(m);
        }
        out
    }

    /// Sends one request line (checked).
    async fn send(&mut self, message: &Value) {
        let line = checked_line(message);
        self.lines.sent(&line);
        self.writer.write_all(&line).await.expect("write");
    }
}

impl Drop for Stalled {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Lets the listener task run between publications, as a busy server would.
async fn breathe() {
    tokio::task::yield_now().await;
}

/// The most list_changed notifications of one kind a stalled stream may deliver once its
/// client catches up: one taken just before the stall, one for everything coalesced
/// since, and one of slack for a small transport queue. Without coalescing it is
/// hundreds.
const COALESCED_AT_MOST: usize = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_listener_gets_list_changes_coalesced() {
    let server = full_server();
    let id = json!("slow");
    let mut s = Stalled::open(
        &server,
        &id,
        json!({"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true}),
    )
    .await;
    for i in 0..1000usize {
        if i.is_multiple_of(2) {
            server.add_tool(plain_tool("flip")).expect("adds");
            server.add_prompt(plain_prompt("flip")).expect("adds");
        } else {
            assert!(server.remove_tool("flip"));
            assert!(server.remove_prompt("flip"));
        }
        server.notify_resources_list_changed();
        breathe().await;
    }
    // The client catches up: every kind arrives (none is lost), then nothing more (the
    // rest was coalesced).
    const KINDS_OF_CHANGE: [&str; 3] = [
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
    ];
    let mut rest = s
        .read_until("a list change of every kind", |read| {
            KINDS_OF_CHANGE
                .iter()
                .all(|k| read.iter().any(|m| method(m) == *k))
        })
        .await;
    rest.extend(s.read_quiet().await);
    let (ack, rest) = rest.split_first().expect("the acknowledgement");
    assert_ack(ack, &id);
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for m in rest {
        assert_eq!(sub_id(m), Some(&id), "{m}");
        *counts.entry(method(m)).or_default() += 1;
    }
    for kind in KINDS_OF_CHANGE {
        let n = counts.get(kind).copied().unwrap_or(0);
        assert!(n >= 1, "a list change is never lost: {kind} x{n}");
        assert!(
            n <= COALESCED_AT_MOST,
            "1000 {kind} published while the client did not read: it got {n} after catching up \
             (list changes must coalesce, not queue)"
        );
    }
    // The stream is still live: the next change is delivered, once.
    server.add_tool(plain_tool("after")).expect("adds");
    let more = s
        .read_until("the next list change", |read| !read.is_empty())
        .await;
    assert_eq!(method(&more[0]), "notifications/tools/list_changed");
    assert_eq!(sub_id(&more[0]), Some(&id));
    let extra = s.read_quiet().await;
    assert!(extra.is_empty(), "one change, one notification: {extra:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_too_far_behind_on_resource_updates_is_ended_gracefully() {
    let server = full_server();
    let id = json!("behind");
    let mut s = Stalled::open(
        &server,
        &id,
        json!({"resourceSubscriptions": ["test://docs"]}),
    )
    .await;
    let published = MAX_PENDING_UPDATES + 100;
    for i in 0..published {
        server.notify_resource_updated(&format!("test://docs/{i}"));
        breathe().await;
    }
    // The client catches up: updates, then the end of the stream, then nothing more.
    let mut rest = s
        .read_until("the end of the stream", |read| {
            read.iter().any(|m| method(m) == "notifications/cancelled")
        })
        .await;
    rest.extend(s.read_quiet().await);
    let (ack, rest) = rest.split_first().expect("the acknowledgement");
    assert_ack(ack, &id);
    let updates = rest
        .iter()
        .filter(|m| method(m) == "notifications/resources/updated")
        .count();
    let end = rest
        .iter()
        .position(|m| method(m) == "notifications/cancelled");
    let Some(end) = end else {
        panic!(
            "{published} distinct updates published while the client did not read: the stream \
             must end gracefully past {MAX_PENDING_UPDATES} pending, but it got {updates} \
             updates and no notifications/cancelled"
        );
    };
    assert_eq!(rest[end]["params"]["requestId"], id, "{}", rest[end]);
    assert_eq!(end, rest.len() - 1, "nothing after the end of the stream");
    assert!(
        updates <= MAX_PENDING_UPDATES + COALESCED_AT_MOST,
        "at most the pending set (and what was in flight) is delivered: {updates}"
    );
    assert!(
        !rest.iter().any(|m| m.get("id") == Some(&id)),
        "on stdio the end is notifications/cancelled, not a result"
    );
    assert_eq!(server.open_streams(), 0);
    // The connection still serves.
    s.send(&request(1, "server/discover", json!({}))).await;
    let answer = s.read_until("the answer", |read| !read.is_empty()).await;
    assert_eq!(answer[0]["id"], json!(1), "{answer:?}");
}
