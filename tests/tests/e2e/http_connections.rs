//! The bounds `serve_http_on` puts on connections, over real sockets: the header-read,
//! idle and write timeouts, the connection cap, and the memory budget for request data.

use crate::http_util::{builder, raw_answer, raw_post_unchecked, text_tool};
use presa::{HttpConfig, Tool, ToolCall};
use presa_tests::http::{Harness, standard_headers};
use presa_tests::request;
use presa_tests::schema::{check_outgoing, check_server_message};
use presa_tests::wait::{PATIENCE, QUIET, within};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How late past its deadline the server may close a connection: its sweep runs every
/// quarter of the shortest timeout, and a loaded machine schedules late.
const LATE: Duration = Duration::from_millis(1500);

/// How early a close may be seen: the deadline counts from the server's accept, which
/// may come a moment before the client's clock starts.
const EARLY: Duration = Duration::from_millis(100);

fn quick_server() -> presa::Server {
    builder()
        .tool(text_tool("quick", "quick"))
        .build()
        .expect("builds")
}

fn authority(h: &Harness) -> &str {
    h.base.trim_start_matches("http://")
}

/// A whole POST of `message` with the headers a correct client sends, kept alive, to
/// write on a connection of the test's choosing. The message is checked as a client's
/// first: only the HTTP framing is written by hand.
#[track_caller]
fn raw_request(h: &Harness, message: &Value) -> String {
    check_outgoing(message);
    let body = message.to_string();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
        authority(h),
        body.len()
    );
    for (name, value) in standard_headers(message) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    format!("{head}\r\n{body}")
}

/// Sends a whole `tools/call` of `quick` on `stream` (checked, by [`raw_request`]) and
/// reads its 200, checked as the answer to a `tools/call`.
async fn call_quick_on(h: &Harness, stream: &mut TcpStream, id: i64) {
    let message = request(id, "tools/call", json!({"name": "quick"}));
    stream
        .write_all(raw_request(h, &message).as_bytes())
        .await
        .expect("writes");
    let answer = raw_answer(stream, "200").await;
    check_server_message("tools/call", &answer);
    assert_eq!(answer["result"]["content"][0]["text"], "quick", "{answer}");
}

/// Reads until the server closes `stream` (end of stream or reset), ignoring what it
/// sends; how long that took from `since`, or `None` if it was still open after `wait`.
async fn closed_after(stream: &mut TcpStream, since: Instant, wait: Duration) -> Option<Duration> {
    let mut buf = vec![0u8; 64 * 1024];
    let closed = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return since.elapsed(),
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(wait, closed).await.ok()
}

/// Raises this process's soft limit on open files to its hard limit (which needs no
/// privilege) and says whether `needed` files may then be open. A hard limit below
/// `needed` is a property of the machine, not of presa: the caller skips and says why.
fn open_files_allow(needed: u64) -> bool {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return true;
    };
    if soft >= needed {
        return true;
    }
    if hard >= needed && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return true;
    }
    eprintln!(
        "skipped: this test needs {needed} open files and the hard limit (`ulimit -Hn`) is {hard}"
    );
    false
}

/// 2,000 connections that send half a request's headers and nothing more are all closed
/// once the header-read timeout has passed, none before it, while a well-behaved
/// client's calls keep being answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_headers_are_closed_at_the_header_read_timeout() {
    const HALF: usize = 2000;
    // Both ends of every connection live in this process.
    if !open_files_allow(2 * HALF as u64 + 512) {
        return;
    }
    let timeout = Duration::from_secs(2);
    let config = HttpConfig::default()
        .header_read_timeout(timeout)
        .max_connections(HALF + 64);
    let h = Harness::start_with(quick_server(), config).await;
    let addr = authority(&h).to_owned();
    let mut halves = tokio::task::JoinSet::new();
    for _ in 0..HALF {
        let mut stream = TcpStream::connect(&addr).await.expect("connects");
        stream
            .write_all(format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-").as_bytes())
            .await
            .expect("writes");
        let sent = Instant::now();
        halves
            .spawn(async move { closed_after(&mut stream, sent, timeout + LATE + PATIENCE).await });
    }
    // A client that sends whole requests is answered all along.
    let began = Instant::now();
    let mut id = 0;
    while began.elapsed() < timeout + Duration::from_millis(500) {
        id += 1;
        let reply = h.call(id, "tools/call", json!({"name": "quick"})).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut closes = Vec::with_capacity(HALF);
    while let Some(closed) = halves.join_next().await {
        closes.push(
            closed
                .expect("the reader ends")
                .expect("the server closed it"),
        );
    }
    let (first, last) = (
        closes.iter().min().copied().unwrap_or_default(),
        closes.iter().max().copied().unwrap_or_default(),
    );
    assert!(
        first + EARLY >= timeout,
        "one closed after {first:?}, before {timeout:?}"
    );
    assert!(last <= timeout + LATE, "one closed only after {last:?}");
    assert!(id > 10, "the well-behaved client made {id} calls");
}

/// A kept-alive connection may stay idle up to the idle timeout: a request sent just
/// before it is answered on the same connection (and the wait starts again); one that
/// stays idle past it is closed.
#[tokio::test]
async fn idle_connections_are_closed_at_the_idle_timeout() {
    let idle = Duration::from_secs(1);
    let config = HttpConfig::default()
        .idle_timeout(idle)
        .header_read_timeout(Duration::from_secs(5));
    let h = Harness::start_with(quick_server(), config).await;
    let mut stream = TcpStream::connect(authority(&h)).await.expect("connects");
    call_quick_on(&h, &mut stream, 1).await;
    tokio::time::sleep(idle.mul_f32(0.7)).await;
    call_quick_on(&h, &mut stream, 2).await;
    let answered = Instant::now();
    let closed = closed_after(&mut stream, answered, idle + LATE + PATIENCE)
        .await
        .expect("the idle connection is closed");
    assert!(
        closed + EARLY >= idle,
        "closed after {closed:?}, before {idle:?}"
    );
    assert!(closed <= idle + LATE, "closed only after {closed:?}");
}

/// After an idle wait, the header-read timeout counts from the next request's first
/// byte: a connection idle for a while that then sends half a request's headers is
/// closed the header-read timeout after that byte, not the idle timeout after the last
/// answer.
#[tokio::test]
async fn the_header_timeout_counts_from_the_first_byte_after_an_idle_wait() {
    let header = Duration::from_secs(1);
    let config = HttpConfig::default()
        .idle_timeout(Duration::from_secs(30))
        .header_read_timeout(header);
    let h = Harness::start_with(quick_server(), config).await;
    let mut stream = TcpStream::connect(authority(&h)).await.expect("connects");
    call_quick_on(&h, &mut stream, 1).await;
    // Idle for longer than the header timeout: still open.
    assert!(
        closed_after(
            &mut stream,
            Instant::now(),
            header + Duration::from_millis(300)
        )
        .await
        .is_none(),
        "an idle connection is held for the idle timeout, not the header timeout"
    );
    stream
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("writes");
    let sent = Instant::now();
    let closed = closed_after(&mut stream, sent, header + LATE + PATIENCE)
        .await
        .expect("the half request's connection is closed");
    assert!(closed + EARLY >= header, "closed after {closed:?}");
    assert!(closed <= header + LATE, "closed only after {closed:?}");
}

/// At the connection cap every open connection is served; one more is not accepted
/// (its request waits, unanswered) until one of them closes, and is then served.
#[tokio::test]
async fn the_connection_cap_holds_at_and_past_its_bound() {
    let config = HttpConfig::default().max_connections(2);
    let h = Harness::start_with(quick_server(), config).await;
    let mut first = TcpStream::connect(authority(&h)).await.expect("connects");
    call_quick_on(&h, &mut first, 1).await;
    let mut second = TcpStream::connect(authority(&h)).await.expect("connects");
    call_quick_on(&h, &mut second, 2).await;
    // Past the cap: the connection waits in the backlog, its request unanswered.
    let mut third = TcpStream::connect(authority(&h)).await.expect("connects");
    let message = request(3, "tools/call", json!({"name": "quick"}));
    third
        .write_all(raw_request(&h, &message).as_bytes())
        .await
        .expect("writes");
    let mut byte = [0u8; 1];
    assert!(
        tokio::time::timeout(QUIET, third.read(&mut byte))
            .await
            .is_err(),
        "a connection past the cap is not served"
    );
    // The open ones are still served.
    call_quick_on(&h, &mut second, 4).await;
    drop(first);
    let answer = raw_answer(&mut third, "200").await;
    assert_eq!(answer["id"], 3, "{answer}");
}

/// A client that stops reading its response loses its connection once a write has
/// made no progress for the write timeout, which frees the connection's place.
#[tokio::test]
async fn a_client_that_stops_reading_is_cut_off_at_the_write_timeout() {
    let write = Duration::from_secs(1);
    let big = "x".repeat(32 << 20);
    let server = builder()
        .tool(text_tool("quick", "quick"))
        .tool(
            Tool::new("big")
                .description("Answers 32 MiB of text")
                .handler(move |_: ToolCall| {
                    let big = big.clone();
                    async move { big }
                }),
        )
        .build()
        .expect("builds");
    let config = HttpConfig::default()
        .write_timeout(write)
        .max_connections(1);
    let h = Harness::start_with(server, config).await;
    let mut reader = TcpStream::connect(authority(&h)).await.expect("connects");
    let message = request(1, "tools/call", json!({"name": "big"}));
    reader
        .write_all(raw_request(&h, &message).as_bytes())
        .await
        .expect("writes");
    // Reads a little, so the answer is under way, then stops reading.
    let mut some = [0u8; 1024];
    within("the answer begins", reader.read(&mut some))
        .await
        .expect("reads");
    let stopped = Instant::now();
    // The one place is taken: a second connection waits until the first is cut off.
    let mut next = TcpStream::connect(authority(&h)).await.expect("connects");
    let message = request(2, "tools/call", json!({"name": "quick"}));
    next.write_all(raw_request(&h, &message).as_bytes())
        .await
        .expect("writes");
    let answer = raw_answer(&mut next, "200").await;
    let waited = stopped.elapsed();
    assert_eq!(answer["id"], 2, "{answer}");
    assert!(
        waited + EARLY >= write,
        "served after {waited:?}, before the timeout"
    );
    assert!(
        waited <= write + LATE + Duration::from_secs(1),
        "served only after {waited:?}"
    );
}

/// Request data counts against the memory budget: a body being read holds its declared
/// length, so a second one that does not fit beside it is refused with 503, -32603 and
/// `data.retryable`, before any of it is read, while small requests that fit are
/// served; once the first body is given up, the second fits again.
#[tokio::test]
async fn the_memory_budget_refuses_what_does_not_fit() {
    // Sized so that the large request fits alone (its body and its decoded tree, about
    // 72,000 bytes while it is decoded) and the small one beside the slow body, but not
    // the large one's body beside it.
    let budget = 80_000;
    let config = HttpConfig::default().memory_budget(budget);
    let h = Harness::start_with(quick_server(), config).await;
    // Holds 60,000 bytes of the budget while its body trickles in.
    let slow = raw_post_unchecked(&h, "Content-Length: 60000\r\n\r\n{\"jsonrpc\"").await;
    let pad = "p".repeat(30_000);
    let large = request(
        2,
        "tools/call",
        json!({"name": "quick", "arguments": {"pad": pad}}),
    );
    let deadline = presa_tests::wait::Deadline::new("the slow body is charged");
    let refused = loop {
        let reply = h.post_unchecked(&large, &[]).await;
        if reply.status == 503 {
            break reply;
        }
        assert_eq!(reply.status, 200, "{}", reply.body);
        deadline.tick(&reply.body).await;
    };
    refused.assert_error(503, -32603, None);
    assert_eq!(
        refused.response()["error"]["data"]["retryable"],
        true,
        "{}",
        refused.body
    );
    presa_tests::schema::check_response("", refused.response());
    // A small request fits beside the slow body.
    let small = h.call(3, "tools/call", json!({"name": "quick"})).await;
    assert_eq!(small.status, 200, "{}", small.body);
    drop(slow);
    let deadline = presa_tests::wait::Deadline::new("the slow body's charge is given back");
    loop {
        let reply = h.post_unchecked(&large, &[]).await;
        if reply.status == 200 {
            break;
        }
        assert_eq!(reply.status, 503, "{}", reply.body);
        deadline.tick(&reply.body).await;
    }
}

/// A body too large for the whole budget is refused as soon as its length is known,
/// and one that fits exactly is served: the budget holds at and just past its bound.
#[tokio::test]
async fn a_body_is_charged_its_declared_length() {
    let budget = 100_000;
    let config = HttpConfig::default().memory_budget(budget);
    let h = Harness::start_with(quick_server(), config).await;
    let mut past = raw_post_unchecked(&h, &format!("Content-Length: {}\r\n\r\n", budget + 1)).await;
    let refused = raw_answer(&mut past, "503").await;
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    let mut at = raw_post_unchecked(&h, &format!("Content-Length: {budget}\r\n\r\n{{")).await;
    // Charged and being read (not refused): no answer until the body arrives or times out.
    let mut byte = [0u8; 1];
    assert!(
        tokio::time::timeout(QUIET, at.read(&mut byte))
            .await
            .is_err(),
        "a body of exactly the budget is read"
    );
}
