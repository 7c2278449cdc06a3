//! The memory budget holds a real server's memory: 1,000 clients that each send a 1 MiB
//! request at once, to a server in a process of its own (`src/bin/http_stop.rs`, the
//! default `HttpConfig`); every client gets an answer, 200 or 503.
//!
//! The budget counts the bytes request data holds. What the process's RSS shows besides
//! depends on the allocator: glibc's raises its mmap threshold once a large block is
//! freed, and then keeps freed 1 MiB bodies in its heap, resident. So the peak RSS is
//! held to the budget (plus what connections take) with that threshold fixed
//! (`MALLOC_MMAP_THRESHOLD_`), and to twice the budget with glibc's defaults, as the
//! book documents.

use presa_tests::request;
use presa_tests::schema::check_outgoing;
use presa_tests::wait::within;
use serde_json::{Value, json};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::Command;

const CLIENTS: usize = 1000;
const BODY: usize = 1 << 20;
/// `HttpConfig`'s default memory budget.
const BUDGET: u64 = 128 << 20;
/// What else the requests may take besides the budget: each connection's read buffer
/// (up to 32 KiB while its headers arrive), the responses, the runtime.
const BESIDES: u64 = 48 << 20;

/// A `/proc/<pid>/status` field, in bytes.
fn status_bytes(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("reads status");
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in {status}"));
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("a number of kB");
    kib * 1024
}

/// One `tools/call` of `BODY` bytes, its head and body: the same for every client (ids
/// are per connection over HTTP, so they may repeat). The message is checked as a
/// client's; the padding after it is whitespace, which JSON allows.
fn call_of_one_mib(addr: &str) -> (String, Vec<u8>) {
    let pad = "p".repeat(BODY - 300);
    let message = request(
        1,
        "tools/call",
        json!({"name": "slow", "arguments": {"pad": pad}}),
    );
    check_outgoing(&message);
    let mut body = message.to_string().into_bytes();
    body.resize(BODY, b' ');
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {BODY}\r\nExpect: 100-continue\r\nConnection: close\r\n"
    );
    for (name, value) in presa_tests::http::standard_headers(&message) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    (head, body)
}

/// Sends the call, asking to continue first: the server answers 503 before the body
/// when the budget cannot hold it, or 100 and then the call's answer. Returns the final
/// status; the answer's body is read to its end and not checked (what a flood of them
/// says is not the point here, only that each is answered and how).
async fn send_reading_status_unchecked(addr: &str, head: &str, body: &[u8]) -> u16 {
    let mut stream = TcpStream::connect(addr).await.expect("connects");
    stream
        .write_all(head.as_bytes())
        .await
        .expect("writes the head");
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader
        .read_line(&mut status_line)
        .await
        .expect("reads a status");
    if status_line.starts_with("HTTP/1.1 100") {
        let mut blank = String::new();
        reader
            .read_line(&mut blank)
            .await
            .expect("reads the interim end");
        reader
            .get_mut()
            .write_all(body)
            .await
            .expect("writes the body");
        status_line.clear();
        reader
            .read_line(&mut status_line)
            .await
            .expect("reads a status");
    }
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {status_line:?}"));
    // The rest of the answer, to its end.
    let mut rest = Vec::new();
    let _ = reader.read_to_end(&mut rest).await;
    status
}

/// Floods a fresh server, its allocator set by `env`, and returns its RSS before and its
/// peak RSS after.
async fn flood(env: &[(&str, &str)]) -> (u64, u64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_http_stop"))
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("http_stop starts");
    let stdout = child.stdout.take().expect("stdout is piped");
    let ready = within("the ready line", BufReader::new(stdout).lines().next_line())
        .await
        .expect("reads stdout")
        .expect("a ready line");
    let ready: Value = serde_json::from_str(&ready).expect("JSON");
    let url = ready["url"].as_str().expect("a url");
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let pid = child.id().expect("runs");
    let before = status_bytes(pid, "VmRSS:");
    let (head, body) = call_of_one_mib(&addr);
    let (head, body) = (std::sync::Arc::new(head), std::sync::Arc::new(body));
    let mut clients = tokio::task::JoinSet::new();
    for _ in 0..CLIENTS {
        let (addr, head, body) = (addr.clone(), head.clone(), body.clone());
        clients.spawn(async move { send_reading_status_unchecked(&addr, &head, &body).await });
    }
    let (mut served, mut refused) = (0, 0);
    while let Some(status) = clients.join_next().await {
        match status.expect("a client ends") {
            200 => served += 1,
            503 => refused += 1,
            other => panic!("status {other}"),
        }
    }
    let peak = status_bytes(pid, "VmHWM:");
    eprintln!(
        "{env:?}: {CLIENTS} requests of {BODY} bytes: {served} served, {refused} refused; \
         RSS {} MiB before, peak {} MiB",
        before >> 20,
        peak >> 20
    );
    assert!(served > 0, "some requests fit in the budget");
    assert!(refused > 0, "the budget refused some requests");
    (before, peak)
}

/// With glibc's mmap threshold fixed, freed bodies go back to the system, and the peak
/// RSS is the budget's live bytes and what connections take.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_one_mib_requests_stays_within_the_budget() {
    let (before, peak) = flood(&[("MALLOC_MMAP_THRESHOLD_", "131072")]).await;
    assert!(
        peak <= before + BUDGET + BESIDES,
        "peak RSS {} MiB, past the budget's {} MiB over the {} MiB before",
        peak >> 20,
        BUDGET >> 20,
        before >> 20
    );
}

/// With glibc's defaults, the allocator keeps freed bodies resident: the peak RSS stays
/// within twice the budget, as documented.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_one_mib_requests_stays_within_twice_the_budget_by_default() {
    let (before, peak) = flood(&[]).await;
    assert!(
        peak <= before + 2 * BUDGET + BESIDES,
        "peak RSS {} MiB, past twice the budget's {} MiB over the {} MiB before",
        peak >> 20,
        BUDGET >> 20,
        before >> 20
    );
}
