//! stdio bounds that a client which never reads, or leaves work behind, must not break.

use presa::{StdioConfig, Tool, ToolCall};
use presa_tests::stdio::checked_line;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// The value of `count` once it stops rising (the same in two samples a quiet window
/// apart, and above 0, so a machine stalled before anything ran does not count as
/// settled), with `check` asserted at every sample: a bound is judged by where the server
/// stops, not by a deadline, however slow the machine. Fails if it still rises after
/// 60 s. (That nothing more is taken is a rule that nothing happens: only a quiet window
/// can watch it.)
async fn settled(count: &AtomicUsize, mut check: impl FnMut()) -> usize {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut last = usize::MAX;
    loop {
        tokio::time::sleep(presa_tests::wait::QUIET).await;
        check();
        let now = count.load(Ordering::SeqCst);
        if now == last && now > 0 {
            return now;
        }
        last = now;
        assert!(
            std::time::Instant::now() < deadline,
            "still rising after 60 s: {now}"
        );
    }
}

/// Error replies hold in-flight slots until written (a batch of them made in the read
/// loop holds one, and is about 64 KiB): a client that floods
/// invalid lines and never reads stdout makes the server stop reading, instead of
/// queueing replies.
#[tokio::test]
async fn error_replies_are_bounded_when_the_client_never_reads() {
    let server = presa::Server::builder(presa::Implementation::new("t", "1"))
        .build()
        .expect("builds");
    let (mut client_out, server_in) = tokio::io::duplex(4096);
    let (server_out, _client_in) = tokio::io::duplex(4096); // never read
    let config = StdioConfig::default().max_in_flight(4);
    let task = tokio::spawn(async move { server.serve_io(server_in, server_out, config).await });
    // 100k invalid lines: each would get a -32700 reply. With the replies bounded, the
    // server stops reading long before: the writes stall, with at most what its read
    // buffer (64 KiB) and the pipe hold taken in. Judged by the count of lines written
    // once it stops rising, not by a deadline: an unbounded server takes all 100k, however
    // slow the machine.
    let written = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&written);
    let flood = tokio::spawn(async move {
        for _ in 0..100_000 {
            client_out.write_all(b"x\n").await?;
            counter.fetch_add(1, Ordering::SeqCst);
        }
        Ok::<_, std::io::Error>(())
    });
    let last = settled(&written, || {
        assert!(
            !flood.is_finished(),
            "the server read all 100,000 lines although nobody read its replies"
        );
    })
    .await;
    assert!(
        last < 40_000,
        "the server took {last} lines in before it stopped reading"
    );
    flood.abort();
    task.abort();
}

/// A request answered in the read loop that queued notifications keeps its in-flight
/// slot until what it queued is written, in the loop's batch of answers as on its own: a
/// client that pipelines calls to a tool that logs on every call, and never reads
/// stdout, makes the server stop after about `max_in_flight` calls, not after up to a
/// read's worth of them per slot (each 16 KiB of log queued).
#[tokio::test]
async fn notifications_of_answered_requests_are_bounded_when_the_client_never_reads() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let server = presa::Server::builder(presa::Implementation::new("t", "1"))
        .tool(
            Tool::new("loud")
                .description("Logs 16 KiB, then answers at once")
                .handler(move |call: ToolCall| {
                    let counter = Arc::clone(&counter);
                    async move {
                        counter.fetch_add(1, Ordering::SeqCst);
                        call.ctx.log(presa::LogLevel::Info, "x".repeat(16 * 1024));
                        "done"
                    }
                }),
        )
        .build()
        .expect("builds");
    let (mut client_out, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, _client_in) = tokio::io::duplex(4096); // never read
    let config = StdioConfig::default().max_in_flight(4);
    let task = tokio::spawn(async move { server.serve_io(server_in, server_out, config).await });
    let mut bytes = Vec::new();
    for id in 1..=1000 {
        let call = presa_tests::request(
            id,
            "tools/call",
            json!({"name": "loud", "arguments": {},
                   "_meta": {"io.modelcontextprotocol/logLevel": "info"}}),
        );
        bytes.extend(checked_line(&call));
    }
    client_out.write_all(&bytes).await.expect("written");
    let last = settled(&calls, || {}).await;
    assert!(
        (1..=8).contains(&last),
        "{last} calls served although nobody read their logs (bound: 4 in flight)"
    );
    task.abort();
}

/// A task the server started keeps nothing of the request's transport: closing stdin ends
/// the server promptly even while the task waits for input.
#[tokio::test]
async fn stdin_closing_ends_the_server_while_a_task_waits() {
    #[derive(serde::Deserialize, schemars::JsonSchema, presa::ElicitForm)]
    struct Confirm {
        ok: bool,
    }
    let server = presa::Server::builder(presa::Implementation::new("t", "1"))
        .tool(
            Tool::new("waits")
                .description("Waits for an answer, as a task")
                .task(presa::tasks::TaskMode::Required)
                .handler(|call: ToolCall| async move {
                    let answer = call.ctx.elicit::<Confirm>("ok", "Ok?").get();
                    match answer {
                        Ok(presa::mrtr::Elicitation::Accepted(c)) => Ok(format!("ok: {}", c.ok)),
                        Ok(_) => Ok("declined".to_owned()),
                        Err(e) => Err(presa::ToolError::from(e)),
                    }
                }),
        )
        .extension(presa::tasks::Tasks::new())
        .build()
        .expect("builds");
    let mut session = presa_tests::stdio::Session::in_process(server, StdioConfig::default());
    let request = presa_tests::request(
        1,
        "tools/call",
        json!({"name": "waits", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/clientCapabilities": {
                "elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}
            }
        }}),
    );
    session.send(&request).await;
    let created = session.recv().await.expect("the CreateTaskResult");
    assert_eq!(created["result"]["resultType"], json!("task"), "{created}");
    let ended = tokio::time::timeout(Duration::from_secs(3), session.finish()).await;
    assert_eq!(
        ended,
        Ok(true),
        "serve_io returns promptly after stdin closes"
    );
}

/// `usize::MAX` is how a user says "no bound" on requests in flight; the server serves
/// (it once panicked as it began: the bound is a semaphore, whose size tokio caps below
/// `usize::MAX`).
#[tokio::test]
async fn max_in_flight_of_usize_max_means_no_bound() {
    let server = presa::Server::builder(presa::Implementation::new("t", "1"))
        .tool(
            Tool::new("quick")
                .description("Answers at once")
                .handler(|_: ToolCall| async { "quick" }),
        )
        .build()
        .expect("builds");
    let config = StdioConfig::default().max_in_flight(usize::MAX);
    let mut s = presa_tests::stdio::Session::in_process(server, config);
    for id in 1..=3 {
        let messages = s.call(id, "tools/call", json!({"name": "quick"})).await;
        let response = messages.last().expect("a response");
        assert_eq!(
            response["result"]["content"][0]["text"], "quick",
            "{response}"
        );
    }
    assert!(s.finish().await, "the server ends cleanly");
}
