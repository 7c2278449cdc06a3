//! stdio end to end (wire section 14, errata section 5 `basic/transports/stdio.mdx`): the
//! fixture's command line as a child process over real pipes, and purpose-built servers
//! over an in-process pipe (`Server::serve_io`) where a test needs to hold a handler open
//! or watch it stop.
//!
//! Every line the server writes is parsed as JSON (the harness panics otherwise) and
//! checked against the official 2026-07-28 schema; every error's code is exact, and its
//! `id` is either the request's, echoed, or absent when it could not be read (errata W-1:
//! never `"id": null`).

use presa::{CallToolResult, Implementation, LogLevel, Server, StdioConfig, Tool, ToolCall};
use presa_tests::schema::{check_notification, check_response};
use presa_tests::stdio::{LineReader, Session, checked_line, line, piped_child};
use presa_tests::wait::{Deadline, PATIENCE, QUIET, until, within};
use presa_tests::{meta, raw_value_chain, request, token_watcher};
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::sync::Semaphore;

const FIXTURE: &str = env!("CARGO_BIN_EXE_fixture");

async fn fixture() -> Session {
    Session::fixture(FIXTURE).await
}

/// Asserts `m` is an error with `code`, echoing `id`, or with no `id` member at all when
/// `id` is `None`, and valid against the schema.
#[track_caller]
fn assert_error(m: &Value, code: i64, id: Option<&Value>) {
    assert_eq!(
        m["error"]["code"],
        json!(code),
        "expected error {code}: {m}"
    );
    assert!(m.get("result").is_none(), "{m}");
    match id {
        Some(id) => assert_eq!(m.get("id"), Some(id), "the error must echo the id: {m}"),
        None => assert!(
            m.get("id").is_none(),
            "an error whose id cannot be read has no id member (errata W-1): {m}"
        ),
    }
    check_response("", m);
}

/// Reads the next line, which must be the error described by [`assert_error`].
async fn expect_error(s: &mut Session, code: i64, id: Option<Value>) -> Value {
    let m = s
        .recv()
        .await
        .expect("an error response before end of output");
    assert_error(&m, code, id.as_ref());
    m
}

/// Sends a `server/discover` with `id` and asserts that the very next line is its result,
/// so nothing was written for anything sent before it (stdio serves lines in order).
async fn next_is_answer_to(s: &mut Session, id: i64) {
    s.send(&request(id, "server/discover", json!({}))).await;
    let m = s.recv().await.expect("the sentinel's response");
    assert_eq!(
        m.get("id"),
        Some(&json!(id)),
        "expected only the answer to sentinel {id}, got {m}"
    );
    check_response("server/discover", &m);
}

/// Counters shared with the tools of [`probe_server`].
struct Probe {
    /// Permits that let `wait` calls finish.
    release: Semaphore,
    started: AtomicUsize,
    running: AtomicUsize,
    max_running: AtomicUsize,
    /// Handler futures dropped before they finished.
    dropped_unfinished: AtomicUsize,
    finished: AtomicUsize,
    /// Work a `late` call left behind that has run.
    late_done: AtomicUsize,
    /// How the work a `keeper` call left behind ended: 1 its token was cancelled, 2 it
    /// was released with its token untouched (0: not yet).
    kept_token: AtomicUsize,
}

impl Probe {
    fn new() -> Arc<Self> {
        Arc::new(Probe {
            release: Semaphore::new(0),
            started: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            max_running: AtomicUsize::new(0),
            dropped_unfinished: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            late_done: AtomicUsize::new(0),
            kept_token: AtomicUsize::new(0),
        })
    }

    fn get(counter: &AtomicUsize) -> usize {
        counter.load(Ordering::SeqCst)
    }

    /// Marks a handler as running until the returned guard drops.
    fn enter(self: &Arc<Self>) -> Running {
        self.started.fetch_add(1, Ordering::SeqCst);
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        Running {
            probe: Arc::clone(self),
            finished: false,
        }
    }
}

/// A drop guard inside a handler's future: records whether the future was dropped before
/// it finished (the pipeline stopped it) or ran to its end.
struct Running {
    probe: Arc<Probe>,
    finished: bool,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.probe.running.fetch_sub(1, Ordering::SeqCst);
        if self.finished {
            self.probe.finished.fetch_add(1, Ordering::SeqCst);
        } else {
            self.probe.dropped_unfinished.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// A server whose tools let a test hold handlers open, watch them stop, and make them
/// panic: `fast`, `wait` (until the test adds a permit), `ticker` (progress every 5 ms
/// for up to 10 s), `late` and `keeper` (answer at once, leaving work that waits for a
/// permit), `boom` (panics) and `big` (a large text with line breaks inside).
fn probe_server(probe: &Arc<Probe>) -> Server {
    let wait = Arc::clone(probe);
    let ticker = Arc::clone(probe);
    let late = Arc::clone(probe);
    let keeper = Arc::clone(probe);
    Server::builder(Implementation::new("stdio-probe", "1"))
        .tool(
            Tool::new("fast")
                .description("Answers at once")
                .handler(|_: ToolCall| async { "fast" }),
        )
        .tool(
            Tool::new("wait")
                .description("Waits for the test to release it")
                .handler(move |_: ToolCall| {
                    let probe = Arc::clone(&wait);
                    async move {
                        let mut guard = probe.enter();
                        let permit = probe
                            .release
                            .acquire()
                            .await
                            .expect("the semaphore is open");
                        permit.forget();
                        guard.finished = true;
                        "released"
                    }
                }),
        )
        .tool(
            Tool::new("ticker")
                .description("Reports progress every 5 ms for up to 10 s")
                .handler(move |call: ToolCall| {
                    let probe = Arc::clone(&ticker);
                    async move {
                        let mut guard = probe.enter();
                        for i in 1..=2000 {
                            call.ctx.progress(f64::from(i), None, Some("tick"));
                            call.ctx.log(LogLevel::Info, format!("tick {i}"));
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                        guard.finished = true;
                        "ticked"
                    }
                }),
        )
        .tool(
            Tool::new("late")
                .description("Returns at once, leaving work that reports after the response")
                .handler(move |call: ToolCall| {
                    let probe = Arc::clone(&late);
                    async move {
                        call.ctx.progress(1.0, None, Some("before the response"));
                        let ctx = call.ctx.clone();
                        tokio::spawn(async move {
                            let permit = probe.release.acquire().await.expect("open");
                            permit.forget();
                            ctx.progress(2.0, None, Some("after the response"));
                            ctx.log(LogLevel::Emergency, "after the response");
                            probe.late_done.fetch_add(1, Ordering::SeqCst);
                        });
                        "returned"
                    }
                }),
        )
        .tool(
            Tool::new("keeper")
                .description("Hands its cancellation token to spawned work, answers at once")
                .handler(move |call: ToolCall| {
                    let token = call.ctx.cancellation_token();
                    let probe = Arc::clone(&keeper);
                    tokio::spawn(async move {
                        let outcome = tokio::select! {
                            () = token.cancelled() => 1,
                            permit = probe.release.acquire() => {
                                if let Ok(p) = permit {
                                    p.forget();
                                }
                                2
                            }
                        };
                        probe.kept_token.store(outcome, Ordering::SeqCst);
                    });
                    async { "kept a token" }
                }),
        )
        .tool(
            Tool::new("boom")
                .description("Panics")
                .handler(|_: ToolCall| async {
                    if true {
                        panic!("the boom tool panics on purpose");
                    }
                    "unreachable"
                }),
        )
        .tool(
            Tool::new("boom-later")
                .description("Panics after it has waited")
                .handler(|_: ToolCall| async {
                    // Pending at its first poll: the panic comes from a later one.
                    tokio::task::yield_now().await;
                    if true {
                        panic!("the boom-later tool panics on purpose");
                    }
                    "unreachable"
                }),
        )
        .tool(
            Tool::new("big")
                .description("Returns a large text with line breaks inside")
                .handler(|_: ToolCall| async { CallToolResult::text(big_text()) }),
        )
        .build()
        .expect("the probe server builds")
}

/// 200 KB of text full of characters a line-based writer could break on.
fn big_text() -> String {
    "line one\nline two\r\nseparator \u{2028} paragraph \u{2029} end\n".repeat(4000)
}

/// A session over an in-process pipe with a server of the one tool `tool`.
fn one_tool_session(tool: Tool, config: StdioConfig) -> Session {
    let server = Server::builder(Implementation::new("stdio-one-tool", "1"))
        .tool(tool)
        .build()
        .expect("the server builds");
    Session::in_process(server, config)
}

fn call(id: impl Into<Value>, tool: &str) -> Value {
    request(id, "tools/call", json!({"name": tool, "arguments": {}}))
}

fn call_with_token(id: impl Into<Value>, tool: &str, token: Value) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": {}, "_meta": {"progressToken": token}}),
    )
}

/// `notifications/cancelled` for the request `id`.
fn cancel(id: impl Into<Value>) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
           "params": {"requestId": id.into()}})
}

/// Nothing more is written for a cancelled request whose handler is gone: what it queued
/// would be written before the answer to a request sent now (`sentinel`, an id of its
/// own), which must be the very next line.
async fn nothing_more_after_cancel(s: &mut Session, sentinel: i64) {
    next_is_answer_to(s, sentinel).await;
}

// ---------------------------------------------------------------------------------------
// Framing: one message per line, nothing else on stdout.
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn discover_over_stdio() {
    let mut s = fixture().await;
    let m = s.call(1, "server/discover", json!({})).await;
    assert_eq!(m.len(), 1);
    assert_eq!(m[0]["result"]["supportedVersions"], json!(["2026-07-28"]));
    assert!(s.finish().await);
}

/// Every line on stdout is one whole JSON-RPC message that validates; nothing else is
/// written, not even after the last response (stdout MUST carry only MCP messages).
#[tokio::test]
async fn stdout_carries_only_protocol_messages() {
    let mut s = fixture().await;
    let mut methods: HashMap<i64, &str> = HashMap::new();
    let mut sent = Vec::new();
    let mut add = |id: i64, method: &'static str, params: Value| {
        methods.insert(id, method);
        sent.extend(line(&request(id, method, params)));
    };
    add(1, "server/discover", json!({}));
    add(2, "tools/list", json!({}));
    add(3, "resources/list", json!({}));
    add(4, "resources/templates/list", json!({}));
    add(5, "prompts/list", json!({}));
    add(6, "resources/read", json!({"uri": "test://static-text"}));
    add(7, "resources/read", json!({"uri": "test://static-binary"}));
    add(
        8,
        "resources/read",
        json!({"uri": "test://template/42/data"}),
    );
    add(9, "prompts/get", json!({"name": "test_simple_prompt"}));
    add(
        10,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
               "argument": {"name": "arg1", "value": "te"}}),
    );
    add(
        11,
        "tools/call",
        json!({"name": "test_tool_with_progress", "arguments": {},
               "_meta": {"progressToken": "p-1"}}),
    );
    add(
        12,
        "tools/call",
        json!({"name": "test_logging_tool", "arguments": {},
               "_meta": {"io.modelcontextprotocol/logLevel": "debug"}}),
    );
    add(
        13,
        "tools/call",
        json!({"name": "test_multiple_content_types", "arguments": {}}),
    );
    add(14, "tools/call", json!({"name": "test_error_handling"}));
    add(15, "nope/nope", json!({}));
    add(16, "resources/read", json!({"uri": "test://missing"}));
    add(17, "tools/call", json!({"name": "test_image_content"}));
    add(18, "tools/call", json!({"name": "test_audio_content"}));
    add(19, "tools/call", json!({"name": "test_embedded_resource"}));
    s.write_raw_unchecked(&sent).await;
    s.close_stdin();

    let mut answered = BTreeSet::new();
    let mut notifications = 0;
    while let Some(m) = s.recv().await {
        match m.get("id").and_then(Value::as_i64) {
            Some(id) => {
                let method = methods
                    .get(&id)
                    .unwrap_or_else(|| panic!("unknown id in {m}"));
                check_response(method, &m);
                assert!(answered.insert(id), "answered twice: {m}");
            }
            None => {
                check_notification(&m);
                notifications += 1;
            }
        }
    }
    assert_eq!(answered, methods.keys().copied().collect::<BTreeSet<_>>());
    assert_eq!(notifications, 3 + 8, "3 progress and 8 log notifications");
    assert!(s.finish().await);
}

/// Text with line breaks (and U+2028/U+2029) inside is escaped: each response is one
/// line, written whole even while other responses are being written.
#[tokio::test]
async fn large_responses_are_written_whole_on_one_line() {
    let probe = Probe::new();
    let mut s = Session::in_process(probe_server(&probe), StdioConfig::default());
    let mut sent = Vec::new();
    for id in 1..=40 {
        let tool = if id % 2 == 0 { "big" } else { "fast" };
        sent.extend(line(&call(id, tool)));
    }
    s.write_bytes(&sent).await;
    let expected = big_text();
    let mut seen = BTreeSet::new();
    for _ in 0..40 {
        let m = s.recv().await.expect("a response");
        check_response("tools/call", &m);
        let id = m["id"].as_i64().expect("an integer id");
        let text = m["result"]["content"][0]["text"].as_str().expect("text");
        if id % 2 == 0 {
            assert_eq!(text, expected, "the big text arrives intact");
        } else {
            assert_eq!(text, "fast");
        }
        assert!(seen.insert(id));
    }
    assert_eq!(seen.len(), 40);
    assert!(s.finish().await);
}

#[tokio::test]
async fn blank_lines_are_ignored() {
    let mut s = fixture().await;
    s.write_bytes(b"\n\n   \n\t\n\r\n \r\n").await;
    next_is_answer_to(&mut s, 1).await;
    assert!(s.finish().await);
}

#[tokio::test]
async fn crlf_line_endings_are_accepted() {
    let mut s = fixture().await;
    let mut bytes = request(1, "server/discover", json!({}))
        .to_string()
        .into_bytes();
    bytes.extend(b"\r\n");
    bytes.extend(request(2, "tools/list", json!({})).to_string().into_bytes());
    bytes.extend(b"\r\n");
    s.write_bytes(&bytes).await;
    let first = s.recv().await.expect("a response");
    let second = s.recv().await.expect("a response");
    let mut by_id: HashMap<i64, Value> = HashMap::new();
    for m in [first, second] {
        by_id.insert(m["id"].as_i64().expect("an id"), m);
    }
    check_response("server/discover", &by_id[&1]);
    check_response("tools/list", &by_id[&2]);
    assert!(by_id[&1].get("result").is_some() && by_id[&2].get("result").is_some());
    assert!(s.finish().await);
}

/// A line that arrives in several writes is one message. The first write is longer than
/// a pipe holds (64 KiB on Linux), so it returns only once the server has read part of
/// the line: the line spans several of the server's reads.
#[tokio::test]
async fn a_line_split_across_writes_is_one_message() {
    let mut s = fixture().await;
    let mut bytes = padded(1, 200_000);
    bytes.push(b'\n');
    let (a, b) = bytes.split_at(150_000);
    s.write_bytes(a).await;
    s.write_bytes(b).await;
    let m = s.recv().await.expect("a response");
    assert_eq!(m["id"], json!(1));
    check_response("server/discover", &m);
    // Exactly one response: the next line answers the next request.
    next_is_answer_to(&mut s, 2).await;
    assert!(s.finish().await);
}

/// The last message before end of input needs no trailing newline.
#[tokio::test]
async fn a_final_line_without_newline_is_served() {
    let mut s = fixture().await;
    s.write_bytes(
        request(9, "server/discover", json!({}))
            .to_string()
            .as_bytes(),
    )
    .await;
    s.close_stdin();
    let m = s.recv().await.expect("a response");
    assert_eq!(m["id"], json!(9));
    check_response("server/discover", &m);
    assert!(s.recv().await.is_none());
    assert!(s.finish().await);
}

// ---------------------------------------------------------------------------------------
// Envelope errors (wire section 1, 14; errata W-1, W-16).
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn unparsable_json_is_a_parse_error_without_id() {
    let mut s = fixture().await;
    for junk in [
        &b"{not json}\n"[..],
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\"\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"server/discover\",}\n",
        b"hello\n",
        b"{\"jsonrpc\":\"2.0\",\"id\":3} trailing\n",
    ] {
        s.write_raw_unchecked(junk).await;
        let m = expect_error(&mut s, -32700, None).await;
        assert!(m["error"]["message"].is_string());
    }
    // Pretty-printed JSON is split at its line breaks: every line is a parse error.
    s.write_raw_unchecked(b"{\n\"jsonrpc\": \"2.0\"\n}\n").await;
    for _ in 0..3 {
        expect_error(&mut s, -32700, None).await;
    }
    next_is_answer_to(&mut s, 100).await;
    assert!(s.finish().await);
}

/// Nesting too deep to parse is a parse error too, and does not bring the server down.
#[tokio::test]
async fn deeply_nested_json_is_a_parse_error() {
    let mut s = fixture().await;
    let depth = 100_000;
    let mut m =
        String::from(r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"x":"#);
    m.push_str(&"[".repeat(depth));
    m.push_str(&"]".repeat(depth));
    m.push_str("}}\n");
    s.write_raw_unchecked(m.as_bytes()).await;
    expect_error(&mut s, -32700, None).await;
    next_is_answer_to(&mut s, 2).await;
    assert!(s.finish().await);
}

/// JSON-RPC messages MUST be UTF-8: other bytes are -32700 without an id, even when the
/// rest of the message is well formed.
#[tokio::test]
async fn non_utf8_bytes_are_a_parse_error_without_id() {
    let mut s = fixture().await;
    s.write_raw_unchecked(b"\xff\xfe\xfd\n").await;
    expect_error(&mut s, -32700, None).await;
    let mut bad = br#"{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{"x":""#.to_vec();
    bad.extend(b"\xc3\x28");
    bad.extend(br#""}}"#);
    bad.push(b'\n');
    s.write_raw_unchecked(&bad).await;
    expect_error(&mut s, -32700, None).await;
    next_is_answer_to(&mut s, 6).await;
    assert!(s.finish().await);
}

/// Batching is forbidden in 2026-07-28: an array is -32600 without an id; so is any
/// message that is not an object.
#[tokio::test]
async fn arrays_and_scalars_are_invalid_requests_without_id() {
    let mut s = fixture().await;
    let batch = json!([
        request(1, "server/discover", json!({})),
        request(2, "tools/list", json!({}))
    ]);
    for message in [
        batch,
        json!([]),
        json!(42),
        json!("server/discover"),
        json!(null),
        json!(true),
    ] {
        s.send_unchecked(&message).await;
        expect_error(&mut s, -32600, None).await;
    }
    next_is_answer_to(&mut s, 3).await;
    assert!(s.finish().await);
}

/// An id that is not a string or an integer cannot be read: -32600 with no id member.
/// A readable id outside presa's bounds (a string over 256 bytes, an integer beyond
/// int64) is echoed (errata W-16).
#[tokio::test]
async fn bad_id_kinds() {
    let mut s = fixture().await;
    for id in [
        json!(null),
        json!(1.5),
        json!(true),
        json!({}),
        json!([1]),
        json!(-0.5),
    ] {
        let mut m = request(0, "server/discover", json!({}));
        m["id"] = id.clone();
        s.send_unchecked(&m).await;
        expect_error(&mut s, -32600, None).await;
    }
    for id in [json!("x".repeat(257)), json!(u64::MAX)] {
        let mut m = request(0, "server/discover", json!({}));
        m["id"] = id.clone();
        s.send(&m).await;
        expect_error(&mut s, -32600, Some(id)).await;
    }
    next_is_answer_to(&mut s, 1).await;
    assert!(s.finish().await);
}

/// Valid ids of every kind are echoed exactly.
#[tokio::test]
async fn valid_ids_are_echoed_exactly() {
    let mut s = fixture().await;
    for id in [
        json!(0),
        json!(-1),
        json!(i64::MAX),
        json!(i64::MIN),
        json!(""),
        json!("abc"),
        json!("x".repeat(256)),
        json!("ünïcödé ✓"),
    ] {
        s.send(&request(id.clone(), "server/discover", json!({})))
            .await;
        let m = s.recv().await.expect("a response");
        assert_eq!(m.get("id"), Some(&id), "{m}");
        check_response("server/discover", &m);
    }
    assert!(s.finish().await);
}

/// Envelope errors on a message whose id can be read echo the id.
#[tokio::test]
async fn envelope_errors_echo_a_readable_id() {
    let mut s = fixture().await;
    let params = json!({"_meta": meta()});
    let cases = [
        (
            json!({"id": 1, "method": "server/discover", "params": params}),
            -32600,
        ),
        (
            json!({"jsonrpc": "1.0", "id": 2, "method": "server/discover", "params": params}),
            -32600,
        ),
        (
            json!({"jsonrpc": 2.0, "id": 3, "method": "server/discover", "params": params}),
            -32600,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 4, "method": 5, "params": params}),
            -32600,
        ),
        (json!({"jsonrpc": "2.0", "id": 5, "method": null}), -32600),
        (json!({"jsonrpc": "2.0", "id": 6}), -32600),
        (
            json!({"jsonrpc": "2.0", "id": "seven", "method": "server/discover", "params": [1]}),
            -32602,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 8, "method": "server/discover", "params": "x"}),
            -32602,
        ),
    ];
    for (message, code) in cases {
        s.send_unchecked(&message).await;
        let m = expect_error(&mut s, code, Some(message["id"].clone())).await;
        if code == -32602 {
            assert_eq!(m["error"]["message"], "Request params must be an object");
        }
    }
    // No method and no id: nothing can be echoed.
    s.send_unchecked(&json!({"jsonrpc": "2.0"})).await;
    expect_error(&mut s, -32600, None).await;
    next_is_answer_to(&mut s, 9).await;
    assert!(s.finish().await);
}

#[tokio::test]
async fn unknown_and_removed_methods_are_method_not_found_with_id() {
    let mut s = fixture().await;
    for (id, method) in [
        (1, "nope/nope"),
        (2, "ping"),
        (3, "logging/setLevel"),
        (4, "resources/subscribe"),
        (5, "resources/unsubscribe"),
    ] {
        let m = s.call_unchecked(id, method, json!({})).await;
        assert_eq!(m.len(), 1);
        assert_error(&m[0], -32601, Some(&json!(id)));
        assert_eq!(
            m[0]["error"]["message"],
            format!("Method not found: {method}")
        );
    }
    assert!(s.finish().await);
}

#[tokio::test]
async fn unsupported_version_over_stdio() {
    let mut s = fixture().await;
    let m = s
        .call(
            4,
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "v999.0.0"}}),
        )
        .await;
    assert_error(&m[0], -32022, Some(&json!(4)));
    assert_eq!(m[0]["error"]["data"]["requested"], "v999.0.0");
    assert_eq!(m[0]["error"]["data"]["supported"], json!(["2026-07-28"]));
    // _meta missing entirely.
    s.send_unchecked(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}}))
        .await;
    expect_error(&mut s, -32602, Some(json!(5))).await;
    assert!(s.finish().await);
}

/// A `server/discover` whose JSON text is exactly `len` bytes (a `pad` param fills it).
fn padded(id: i64, len: usize) -> Vec<u8> {
    let mut m = request(id, "server/discover", json!({"pad": ""}));
    let base = m.to_string().len();
    assert!(base <= len, "the base request fits");
    m["params"]["pad"] = json!("x".repeat(len - base));
    let text = m.to_string().into_bytes();
    assert_eq!(text.len(), len);
    text
}

/// Writes `bytes` in two parts split at `at`, the second once the server has read the
/// first, so the server reads them in two reads.
async fn write_in_two_reads(
    s: &mut Session,
    reads: &presa_tests::stdio::Reads,
    bytes: &[u8],
    at: usize,
) {
    let before = reads.count();
    s.write_bytes(&bytes[..at]).await;
    until("the server read the first part", || reads.count() > before).await;
    s.write_bytes(&bytes[at..]).await;
}

/// An oversize line is -32600 without an id (it was never parsed), and the session goes
/// on; a line of exactly the limit is served.
#[tokio::test]
async fn oversize_line_is_invalid_request_without_id_and_the_session_continues() {
    const MAX: usize = 512;
    let probe = Probe::new();
    let config = StdioConfig::default().max_line_bytes(MAX);
    let mut s = Session::in_process(probe_server(&probe), config);

    let padded = |id, len| String::from_utf8(padded(id, len)).expect("text");
    s.write_bytes(format!("{}\n", padded(1, MAX + 1)).as_bytes())
        .await;
    let m = expect_error(&mut s, -32600, None).await;
    assert!(m["error"]["message"].is_string());
    // Far over the limit, and in several writes.
    let huge = padded(2, MAX * 50);
    s.write_bytes(&huge.as_bytes()[..MAX * 10]).await;
    s.write_bytes(&huge.as_bytes()[MAX * 10..]).await;
    s.write_bytes(b"\n").await;
    expect_error(&mut s, -32600, None).await;

    s.write_bytes(format!("{}\n", padded(3, MAX)).as_bytes())
        .await;
    let m = s.recv().await.expect("a response");
    assert_eq!(
        m["id"],
        json!(3),
        "a line of exactly max_line_bytes is served: {m}"
    );
    check_response("server/discover", &m);
    next_is_answer_to(&mut s, 4).await;
    assert!(s.finish().await);
}

/// The bound counts the same bytes whether a line lies whole in one read or spans two:
/// a `\r` before the `\n` counts, the `\n` does not (the `max_line_bytes` doc says so).
#[tokio::test]
async fn the_line_bound_counts_the_same_bytes_whole_or_split() {
    const MAX: usize = 512;
    let probe = Probe::new();
    let config = StdioConfig::default().max_line_bytes(MAX);
    let (mut s, reads) = Session::in_process_watched(probe_server(&probe), config);
    // Exactly the bound, split over two reads: gathered, and served.
    let mut text = padded(1, MAX);
    text.push(b'\n');
    write_in_two_reads(&mut s, &reads, &text, MAX / 2).await;
    let m = s.recv().await.expect("a response");
    assert_eq!(
        m["id"],
        json!(1),
        "a split line of exactly the bound is served: {m}"
    );
    // One over, split the same way: -32600.
    let mut text = padded(2, MAX + 1);
    text.push(b'\n');
    write_in_two_reads(&mut s, &reads, &text, MAX / 2).await;
    expect_error(&mut s, -32600, None).await;
    // With \r\n: the \r counts, whole or split.
    for (id, len, split) in [(3, MAX - 1, false), (4, MAX - 1, true)] {
        let mut text = padded(id, len);
        text.extend_from_slice(b"\r\n");
        if split {
            write_in_two_reads(&mut s, &reads, &text, len + 1).await;
        } else {
            s.write_bytes(&text).await;
        }
        let m = s.recv().await.expect("a response");
        assert_eq!(
            m["id"],
            json!(id),
            "bound - 1 bytes and \\r are served: {m}"
        );
    }
    for split in [false, true] {
        let mut text = padded(5, MAX);
        text.extend_from_slice(b"\r\n");
        if split {
            write_in_two_reads(&mut s, &reads, &text, MAX + 1).await;
        } else {
            s.write_bytes(&text).await;
        }
        expect_error(&mut s, -32600, None).await;
    }
    next_is_answer_to(&mut s, 6).await;
    assert!(s.finish().await);
}

/// A writer that fails ends the session: `serve_io` returns the writer's error once it
/// reads the next line, instead of serving on with nowhere to answer.
#[tokio::test]
async fn a_failed_writer_ends_serving_with_its_error() {
    struct Broken;
    impl tokio::io::AsyncWrite for Broken {
        fn poll_write(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            _: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            std::task::Poll::Ready(Err(std::io::Error::other("stdout is gone")))
        }
        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
        fn poll_shutdown(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }
    let probe = Probe::new();
    let server = probe_server(&probe);
    let (mut client, input) = tokio::io::duplex(64 * 1024);
    let serving =
        tokio::spawn(async move { server.serve_io(input, Broken, StdioConfig::default()).await });
    // The client goes on writing, a line at a time, and never closes its end.
    let deadline = Deadline::new("serving ends after its writer failed");
    let mut id = 0;
    while !serving.is_finished() {
        id += 1;
        let written = within(
            "a line is taken",
            client.write_all(&checked_line(&call(id, "fast"))),
        )
        .await;
        if written.is_err() {
            break; // the server has just dropped its end
        }
        deadline.tick(format!("{id} lines written")).await;
    }
    let result = serving.await.expect("serving does not panic");
    let error = result.expect_err("the writer's error");
    assert_eq!(error.to_string(), "stdout is gone");
}

/// The same over real pipes with the default limit (4 MiB).
#[tokio::test]
async fn oversize_line_over_the_default_limit_from_the_fixture() {
    let mut s = fixture().await;
    let mut m = request(1, "server/discover", json!({}));
    m["params"]["pad"] = json!("x".repeat(4 * 1024 * 1024 + 10));
    s.send(&m).await;
    expect_error(&mut s, -32600, None).await;
    next_is_answer_to(&mut s, 2).await;
    assert!(s.finish().await);
}

// ---------------------------------------------------------------------------------------
// Messages that are never answered (wire section 1).
// ---------------------------------------------------------------------------------------

/// A notification is never answered, even when it is malformed.
#[tokio::test]
async fn notifications_are_never_answered_even_malformed() {
    let mut s = fixture().await;
    let junk = [
        json!({"jsonrpc": "2.0", "method": "notifications/unknown"}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 999}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": null}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": 5}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled"}),
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": "x"}),
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": [1, 2]}),
        json!({"jsonrpc": "2.0", "method": "x", "params": {"_meta": "not an object"}}),
        json!({"jsonrpc": "2.0", "method": "x", "params": {"_meta": {"bad key": 1}}}),
        json!({"jsonrpc": "1.0", "method": "notifications/unknown"}),
        json!({"method": "notifications/unknown"}),
        json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "test_simple_text"}}),
    ];
    for n in &junk {
        s.send_unchecked(n).await;
    }
    next_is_answer_to(&mut s, 1).await;
    next_is_answer_to(&mut s, 2).await;
    assert!(s.finish().await);
}

/// A response object sent by the client is not answered.
#[tokio::test]
async fn a_posted_response_is_ignored() {
    let mut s = fixture().await;
    for m in [
        json!({"jsonrpc": "2.0", "id": 5, "result": {}}),
        json!({"jsonrpc": "2.0", "id": "x", "result": {"resultType": "complete"}}),
        json!({"jsonrpc": "2.0", "id": 6, "error": {"code": -32603, "message": "x"}}),
        json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "x"}}),
    ] {
        s.send_unchecked(&m).await;
    }
    next_is_answer_to(&mut s, 1).await;
    next_is_answer_to(&mut s, 2).await;
    assert!(s.finish().await);
}

// ---------------------------------------------------------------------------------------
// Concurrency, progress, cancellation.
// ---------------------------------------------------------------------------------------

/// Requests run concurrently: a fast request sent after a slow one is answered first.
#[tokio::test]
async fn a_fast_request_overtakes_a_slow_one() {
    let probe = Probe::new();
    let mut s = Session::in_process(probe_server(&probe), StdioConfig::default());
    let mut bytes = line(&call(1, "wait"));
    bytes.extend(line(&call(2, "fast")));
    bytes.extend(line(&request(3, "server/discover", json!({}))));
    s.write_bytes(&bytes).await;
    let mut first = Vec::new();
    for _ in 0..2 {
        let m = s.recv().await.expect("a response");
        let method = if m["id"] == 3 {
            "server/discover"
        } else {
            "tools/call"
        };
        check_response(method, &m);
        first.push(m);
    }
    let ids: BTreeSet<i64> = first
        .iter()
        .map(|m| m["id"].as_i64().unwrap_or(0))
        .collect();
    assert_eq!(
        ids,
        BTreeSet::from([2, 3]),
        "the fast ones come first: {first:?}"
    );
    assert_eq!(Probe::get(&probe.started), 1);
    probe.release.add_permits(1);
    let m = s.recv().await.expect("the slow response");
    assert_eq!(m["id"], json!(1));
    assert_eq!(m["result"]["content"][0]["text"], "released");
    check_response("tools/call", &m);
    assert!(s.finish().await);
}

/// Progress for a request with a progressToken: lines before its response, for that
/// token, strictly increasing (errata W-18).
#[tokio::test]
async fn progress_notifications_precede_the_response_and_increase() {
    let mut s = fixture().await;
    for (id, token) in [(1, json!("p-1")), (2, json!(77))] {
        let m = s
            .call(
                id,
                "tools/call",
                json!({"name": "test_tool_with_progress", "arguments": {},
                       "_meta": {"progressToken": token}}),
            )
            .await;
        let (response, notes) = m.split_last().expect("messages");
        assert_eq!(notes.len(), 3, "{m:?}");
        let mut last = f64::NEG_INFINITY;
        for n in notes {
            assert_eq!(n["method"], "notifications/progress");
            assert_eq!(n["params"]["progressToken"], token);
            let p = n["params"]["progress"].as_f64().expect("a number");
            assert!(p > last, "progress must strictly increase: {notes:?}");
            last = p;
        }
        assert_eq!(
            response["result"]["content"][0]["text"],
            "Progress computation completed: 5050"
        );
    }
    // Without a token: no notification at all.
    let m = s
        .call(3, "tools/call", json!({"name": "test_tool_with_progress"}))
        .await;
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(s.finish().await);
}

/// `notifications/cancelled` for an in-flight request: its handler's future is dropped,
/// no response and no further message at all is written for it (errata section 5,
/// `basic/transports/stdio.mdx`), and other requests are still answered.
#[tokio::test]
async fn cancelled_request_stops_and_sends_nothing_more() {
    let probe = Probe::new();
    let mut s = Session::in_process(probe_server(&probe), StdioConfig::default());
    let with_notes = request(
        10,
        "tools/call",
        json!({"name": "ticker", "arguments": {},
               "_meta": {"progressToken": "tick", "io.modelcontextprotocol/logLevel": "info"}}),
    );
    s.send(&with_notes).await;
    let first = s.recv().await.expect("a first progress notification");
    check_notification(&first);
    assert_eq!(first["params"]["progressToken"], "tick");

    let mut cancel_10 = cancel(10);
    cancel_10["params"]["reason"] = json!("the user gave up");
    s.send(&cancel_10).await;
    s.send(&call(11, "fast")).await;
    // Progress queued before the server read the cancellation may still come; the answer
    // to 11 was queued after it, so nothing for 10 may follow that answer.
    let mut last = first["params"]["progress"].as_f64().unwrap_or(0.0);
    loop {
        let m = s.recv().await.expect("the answer to 11");
        if m.get("id") == Some(&json!(11)) {
            check_response("tools/call", &m);
            break;
        }
        check_notification(&m);
        if m["method"] == "notifications/message" {
            continue;
        }
        assert_eq!(m["method"], "notifications/progress", "unexpected {m}");
        let p = m["params"]["progress"].as_f64().unwrap_or(0.0);
        assert!(p > last);
        last = p;
    }
    until("the cancelled handler's future is dropped", || {
        Probe::get(&probe.dropped_unfinished) == 1
    })
    .await;
    nothing_more_after_cancel(&mut s, 13).await;
    assert_eq!(Probe::get(&probe.finished), 0);
    assert_eq!(Probe::get(&probe.running), 0);
    next_is_answer_to(&mut s, 12).await;
    assert!(s.finish().await);
}

/// Once a request is cancelled its handler is not polled again, even when what it awaits
/// became ready in the same wake-up: code after the handler's own `cancelled().await`
/// never runs (book, cancellation.md: presa drops the handler's future).
#[tokio::test]
async fn a_cancelled_handler_is_never_polled_again() {
    let ran_on = Arc::new(AtomicUsize::new(0));
    let gone = Arc::new(AtomicBool::new(false));
    let (seen, dropped) = (Arc::clone(&ran_on), Arc::clone(&gone));
    let mut s = one_tool_session(
        Tool::new("awaits_cancel")
            .description("Waits for its own cancellation, then counts")
            .handler(move |call: ToolCall| {
                let (seen, dropped) = (Arc::clone(&seen), Arc::clone(&dropped));
                async move {
                    let _gone = SetOnDrop(dropped);
                    call.ctx.cancelled().await;
                    seen.fetch_add(1, Ordering::SeqCst);
                    "ran on after cancellation"
                }
            }),
        StdioConfig::default(),
    );
    s.send(&call(1, "awaits_cancel")).await;
    s.send(&cancel(1)).await;
    // Answered after the cancellation was read; once the handler's future is dropped it
    // can never be polled again, so what it did until then decides.
    next_is_answer_to(&mut s, 2).await;
    until("the handler's future is dropped", || {
        gone.load(Ordering::SeqCst)
    })
    .await;
    assert_eq!(
        ran_on.load(Ordering::SeqCst),
        0,
        "the handler ran past its await"
    );
    nothing_more_after_cancel(&mut s, 3).await;
    assert!(s.finish().await);
}

/// The token a handler hands to spawned work (made on demand: most requests never ask
/// for one) fires when the client cancels the request.
#[tokio::test]
async fn a_spawned_watcher_of_the_cancellation_token_sees_the_cancellation() {
    let (tool, watch) = token_watcher();
    let mut s = one_tool_session(tool, StdioConfig::default());
    s.send(&call(1, "watched")).await;
    until("the handler started", || watch.started()).await;
    tokio::time::sleep(QUIET).await;
    assert!(!watch.saw_cancel(), "not cancelled yet");
    s.send(&cancel(1)).await;
    until("the watcher saw the cancellation", || watch.saw_cancel()).await;
    nothing_more_after_cancel(&mut s, 2).await;
    assert!(s.finish().await);
}

/// A handler that cancels the token it was handed (to stop work it spawned) does not
/// cancel its request: only the client does that, and a request the client did not
/// cancel gets its answer (JSON-RPC 2.0). The token is a child of the request's.
#[tokio::test]
async fn a_handler_that_cancels_its_own_token_still_answers() {
    let mut s = one_tool_session(
        Tool::new("quits")
            .description("Cancels the token it was handed, then waits once")
            .handler(|call: ToolCall| async move {
                let token = call.ctx.cancellation_token();
                token.cancel();
                assert!(token.is_cancelled());
                assert!(
                    !call.ctx.is_cancelled(),
                    "the request itself is not cancelled"
                );
                tokio::task::yield_now().await;
                "answered anyway"
            }),
        StdioConfig::default(),
    );
    s.send(&call(1, "quits")).await;
    let m = s.recv().await.expect("the answer");
    check_response("tools/call", &m);
    assert_eq!(m["id"], json!(1), "{m}");
    assert_eq!(
        m["result"]["content"][0]["text"],
        json!("answered anyway"),
        "{m}"
    );
    assert!(s.finish().await);
}

/// Notifications stop with the response (`basic/patterns/progress.mdx`: they "MUST stop
/// after completion"; wire section 8.2: they precede the response): work a handler left
/// behind that reports through a clone of its context after the response is written
/// must not put anything more on stdout.
#[tokio::test]
async fn nothing_is_written_for_a_request_after_its_response() {
    let probe = Probe::new();
    let mut s = Session::in_process(probe_server(&probe), StdioConfig::default());
    call_late(&mut s).await;
    late_work_writes_nothing(&mut s, &probe, "after the request's response").await;
    assert!(s.finish().await);
}

/// Calls `late` as request 1 (with a progress token and debug logs) and reads its
/// progress, then its response: its left-behind work waits for a permit of the probe.
async fn call_late(s: &mut Session) {
    s.send(&request(
        1,
        "tools/call",
        json!({"name": "late", "arguments": {},
               "_meta": {"progressToken": "late", "io.modelcontextprotocol/logLevel": "debug"}}),
    ))
    .await;
    let progress = s.recv().await.expect("the progress before the response");
    check_notification(&progress);
    assert_eq!(progress["params"]["progress"], 1, "{progress}");
    let response = s.recv().await.expect("the response");
    assert_eq!(response["id"], json!(1));
    check_response("tools/call", &response);
}

/// Lets `late`'s left-behind work report through the context it kept, and checks that
/// nothing is written (`when`: what the test has running meanwhile): what the work
/// queued would come before the answer to a request sent after it ran.
async fn late_work_writes_nothing(s: &mut Session, probe: &Probe, when: &str) {
    probe.release.add_permits(1);
    until("the left-behind work ran", || {
        Probe::get(&probe.late_done) == 1
    })
    .await;
    s.send(&request(900, "server/discover", json!({}))).await;
    let m = s.recv().await.expect("the sentinel's response");
    assert_eq!(
        m["id"],
        json!(900),
        "a notification was written {when}: {m}"
    );
}

/// A gate is handed to the next request only when nothing else holds it: the context a
/// handler left behind (with its response written) keeps its request's gate closed, and
/// the request served next, still open while that work reports, does not carry the
/// report.
#[tokio::test]
async fn a_kept_context_does_not_write_through_the_next_request() {
    let probe = Probe::new();
    let mut s = Session::in_process(probe_server(&probe), StdioConfig::default());
    call_late(&mut s).await;
    // Answered in the read loop, as the first request was, then one that stays open.
    s.send(&call(2, "fast")).await;
    let m = s.recv().await.expect("the answer to 2");
    assert_eq!(m["id"], json!(2), "{m}");
    start_ticker(&mut s, &probe, 3).await;
    late_work_writes_nothing(&mut s, &probe, "for request 1 while request 3 runs").await;
    cancel_ticker(&mut s, &probe, 3).await;
    assert!(s.finish().await);
}

/// Calls the probe's `ticker` as request `id`, the first handler of the test to start,
/// and waits until it runs.
async fn start_ticker(s: &mut Session, probe: &Probe, id: i64) {
    s.send(&call(id, "ticker")).await;
    until("the ticker started", || Probe::get(&probe.started) == 1).await;
}

/// Cancels the ticker running as request `id` and waits until its handler is dropped.
async fn cancel_ticker(s: &mut Session, probe: &Probe, id: i64) {
    s.send(&cancel(id)).await;
    until("the ticker stopped", || {
        Probe::get(&probe.dropped_unfinished) == 1
    })
    .await;
}

/// A token a request answered in the read loop handed to spawned work belongs to that
/// request alone: cancelling the request served next, which may reuse its gate, does not
/// cancel it.
#[tokio::test]
async fn cancelling_the_next_request_leaves_an_earlier_requests_token_alone() {
    let probe = Probe::new();
    let mut s = Session::in_process(probe_server(&probe), StdioConfig::default());
    s.send(&call(1, "keeper")).await;
    let m = s.recv().await.expect("the answer to 1");
    assert_eq!(m["id"], json!(1), "{m}");
    // Served next (on the gate request 1 left, if no one kept it), then cancelled.
    start_ticker(&mut s, &probe, 2).await;
    cancel_ticker(&mut s, &probe, 2).await;
    probe.release.add_permits(1);
    until("the spawned work ended", || {
        Probe::get(&probe.kept_token) != 0
    })
    .await;
    assert_eq!(
        Probe::get(&probe.kept_token),
        2,
        "request 1's token was cancelled with request 2"
    );
    assert!(s.finish().await);
}

/// Cancellation names the id exactly: the string "10" does not cancel the integer 10, and
/// cancelling an unknown or finished request does nothing.
#[tokio::test]
async fn cancellation_matches_the_exact_id() {
    let probe = Probe::new();
    let mut s = Session::in_process(probe_server(&probe), StdioConfig::default());
    s.send(&call(10, "wait")).await;
    until("the handler started", || Probe::get(&probe.started) == 1).await;
    for rid in [json!("10"), json!(11), json!(10.0)] {
        s.send(&cancel(rid)).await;
    }
    next_is_answer_to(&mut s, 1).await;
    assert_eq!(Probe::get(&probe.dropped_unfinished), 0);
    probe.release.add_permits(1);
    let m = s.recv().await.expect("the response to 10");
    assert_eq!(m["id"], json!(10));
    check_response("tools/call", &m);
    // Cancelling it now, after its response, is ignored.
    s.send(&cancel(10)).await;
    next_is_answer_to(&mut s, 2).await;
    assert!(s.finish().await);
}

/// A string id is cancelled like an integer one.
#[tokio::test]
async fn a_request_with_a_string_id_can_be_cancelled() {
    let probe = Probe::new();
    let mut s = Session::in_process(probe_server(&probe), StdioConfig::default());
    s.send(&call("job-1", "wait")).await;
    until("the handler started", || Probe::get(&probe.started) == 1).await;
    s.send(&cancel("job-1")).await;
    until("the handler's future is dropped", || {
        Probe::get(&probe.dropped_unfinished) == 1
    })
    .await;
    probe.release.add_permits(1);
    next_is_answer_to(&mut s, 1).await;
    next_is_answer_to(&mut s, 2).await;
    assert!(s.finish().await);
}

/// Sending an id that is still in flight is -32600 with that id; the original request is
/// unaffected and answered once.
#[tokio::test]
async fn a_duplicate_in_flight_id_is_refused_with_the_id() {
    let probe = Probe::new();
    let mut s = Session::in_process(probe_server(&probe), StdioConfig::default());
    s.send(&call(7, "wait")).await;
    until("the handler started", || Probe::get(&probe.started) == 1).await;
    s.send(&request(7, "server/discover", json!({}))).await;
    let m = expect_error(&mut s, -32600, Some(json!(7))).await;
    assert!(m["error"]["message"].is_string());
    probe.release.add_permits(1);
    let m = s.recv().await.expect("the original response");
    assert_eq!(m["id"], json!(7));
    check_response("tools/call", &m);
    assert_eq!(m["result"]["content"][0]["text"], "released");
    next_is_answer_to(&mut s, 8).await;
    assert!(s.finish().await);
}

/// Once answered, an id may be used again (a client's ids need only be unique among its
/// requests still awaiting a response).
#[tokio::test]
async fn an_id_can_be_reused_once_answered() {
    let probe = Probe::new();
    let mut s = Session::in_process(probe_server(&probe), StdioConfig::default());
    for round in 0..50 {
        s.send(&call(1, "fast")).await;
        let m = s.recv().await.expect("a response");
        assert!(
            m.get("result").is_some(),
            "round {round}: reusing an answered id must be served: {m}"
        );
        check_response("tools/call", &m);
    }
    assert!(s.finish().await);
}

/// A panicking handler is answered -32603 with its id and no detail; the session goes on.
#[tokio::test]
async fn a_handler_panic_is_an_internal_error_and_the_session_continues() {
    let probe = Probe::new();
    let mut s = Session::in_process(probe_server(&probe), StdioConfig::default());
    s.send(&call(3, "boom")).await;
    let m = expect_error(&mut s, -32603, Some(json!(3))).await;
    assert!(m["error"].get("data").is_none(), "no detail: {m}");
    assert!(
        !m.to_string().contains("on purpose"),
        "the panic text is never sent"
    );
    s.send(&call(4, "fast")).await;
    let m = s.recv().await.expect("a response");
    assert_eq!(m["id"], json!(4));
    assert_eq!(m["result"]["content"][0]["text"], "fast");
    assert!(s.finish().await);
}

/// The same for a handler that panics only after it has waited: the panic comes from
/// the request's task (registered in flight), not from the first poll where most calls
/// complete, and the id is free again once it is answered.
#[tokio::test]
async fn a_handler_panic_after_a_wait_is_an_internal_error_and_the_session_continues() {
    let probe = Probe::new();
    let mut s = Session::in_process(probe_server(&probe), StdioConfig::default());
    s.send(&call(3, "boom-later")).await;
    let m = expect_error(&mut s, -32603, Some(json!(3))).await;
    assert!(m["error"].get("data").is_none(), "no detail: {m}");
    assert!(!m.to_string().contains("on purpose"), "{m}");
    s.send(&call(3, "fast")).await;
    let m = s.recv().await.expect("a response");
    assert_eq!(m["id"], json!(3), "the id is free again once answered");
    assert_eq!(m["result"]["content"][0]["text"], "fast");
    assert!(s.finish().await);
}

/// Backpressure: with max_in_flight(2), at most two handlers run and the server reads no
/// further line until a slot frees, so a request behind the blocked ones waits.
#[tokio::test]
async fn backpressure_bounds_requests_in_flight() {
    let probe = Probe::new();
    let config = StdioConfig::default().max_in_flight(2);
    let mut s = Session::in_process(probe_server(&probe), config);
    let mut bytes = Vec::new();
    for id in 1..=5 {
        bytes.extend(line(&call(id, "wait")));
    }
    bytes.extend(line(&request(6, "server/discover", json!({}))));
    s.write_bytes(&bytes).await;
    until("two handlers run", || Probe::get(&probe.running) == 2).await;
    // Nothing may happen until a slot frees: watched for the quiet window.
    assert!(
        s.recv_within(QUIET).await.is_none(),
        "the discover behind the blocked requests is not read yet"
    );
    assert_eq!(Probe::get(&probe.started), 2, "no third handler starts");

    probe.release.add_permits(1);
    let m = s.recv().await.expect("one response");
    check_response("tools/call", &m);
    until("a third handler starts", || Probe::get(&probe.started) == 3).await;
    assert_eq!(Probe::get(&probe.running), 2);

    probe.release.add_permits(4);
    let mut ids = BTreeSet::from([m["id"].as_i64().unwrap_or(0)]);
    while ids.len() < 6 {
        let m = s.recv().await.expect("a response");
        let id = m["id"].as_i64().expect("an id");
        check_response(
            if id == 6 {
                "server/discover"
            } else {
                "tools/call"
            },
            &m,
        );
        assert!(ids.insert(id));
    }
    assert_eq!(Probe::get(&probe.started), 5);
    assert_eq!(
        Probe::get(&probe.max_running),
        2,
        "never more than two at once"
    );
    assert!(s.finish().await);
}

/// Serving ends when stdin closes even if a handler kept its request context alive in a
/// task of its own (the context holds a sender of the writer's queue, which then never
/// closes): the writer is told to end, after writing what is queued.
#[tokio::test]
async fn serving_ends_at_eof_though_a_handler_kept_its_context() {
    let kept = Arc::new(std::sync::Mutex::new(Vec::new()));
    let keeper = Arc::clone(&kept);
    let mut s = one_tool_session(
        Tool::new("keeper")
            .description("Keeps its context in a task that never ends, then answers")
            .handler(move |call: ToolCall| {
                let ctx = call.ctx.clone();
                let task = tokio::spawn(async move {
                    let _ctx = ctx;
                    std::future::pending::<()>().await;
                });
                if let Ok(mut k) = keeper.lock() {
                    k.push(task);
                }
                async { "kept" }
            }),
        StdioConfig::default().shutdown_grace(Duration::from_millis(100)),
    );
    let m = s
        .call(1, "tools/call", json!({"name": "keeper", "arguments": {}}))
        .await;
    assert_eq!(m[0]["result"]["content"][0]["text"], "kept", "{m:?}");
    assert!(s.finish().await, "serve_io returned once stdin closed");
    if let Ok(k) = kept.lock() {
        k.iter().for_each(tokio::task::JoinHandle::abort);
    }
}

/// A cancelled request's in-flight slot is freed only once what it queued is written,
/// as an answer's slot is. Otherwise a client that stops reading could cancel requests
/// that notify and send new ones, each round leaving its notifications queued with no
/// slot held for them, without bound. With one slot and a 16 KiB pipe the client does
/// not read: the request after the cancelled one does not start until the client reads.
#[tokio::test]
async fn a_cancelled_request_frees_its_slot_once_its_output_is_written() {
    let started = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&started);
    let server = Server::builder(Implementation::new("stdio-release", "1"))
        .tool(
            Tool::new("chatty")
                .description("Logs 100 KB, then waits until cancelled")
                .handler(move |call: ToolCall| {
                    counted.fetch_add(1, Ordering::SeqCst);
                    async move {
                        for _ in 0..100 {
                            call.ctx.log(LogLevel::Info, "x".repeat(1000));
                        }
                        call.ctx.cancellation_token().cancelled().await;
                        "cancelled"
                    }
                }),
        )
        .build()
        .expect("the server builds");
    let (mut client_out, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, client_in) = tokio::io::duplex(16 * 1024);
    let serving = tokio::spawn(async move {
        let config = StdioConfig::default().max_in_flight(1);
        server.serve_io(server_in, server_out, config).await
    });
    let chatty = |id: i64| {
        checked_line(&request(
            id,
            "tools/call",
            json!({"name": "chatty", "arguments": {},
                   "_meta": {"io.modelcontextprotocol/logLevel": "info"}}),
        ))
    };
    client_out.write_all(&chatty(1)).await.expect("written");
    until("the first call runs", || {
        started.load(Ordering::SeqCst) == 1
    })
    .await;
    let mut bytes = checked_line(&cancel(1));
    bytes.extend(chatty(2));
    client_out.write_all(&bytes).await.expect("written");
    // Nothing may start until the client reads: watched for the quiet window.
    tokio::time::sleep(QUIET).await;
    assert_eq!(
        started.load(Ordering::SeqCst),
        1,
        "the second call waits for the first's output to be written"
    );
    // Reading frees the slot: the second call starts.
    let mut lines = LineReader::new(client_in);
    lines.sent(&chatty(1));
    while started.load(Ordering::SeqCst) < 2 {
        let m = lines
            .next(PATIENCE)
            .await
            .expect("the first call's logs, then the second call");
        check_notification(&m);
        assert_eq!(m["method"], "notifications/message", "{m}");
    }
    client_out
        .write_all(&checked_line(&cancel(2)))
        .await
        .expect("written");
    drop(client_out);
    drop(lines);
    let _ = tokio::time::timeout(PATIENCE, serving).await;
}

/// Answers made in the read loop (a request that completes at its first poll, an error
/// reply) are gathered into one batch whose in-flight slots are held until it is written.
/// With a single slot, every next line needs the slot the batch holds: the loop must hand
/// the batch to the writer before it waits, or the session stops. Every one of 200
/// pipelined lines, written at once, is answered exactly once.
#[tokio::test]
async fn answers_made_at_once_never_wait_on_their_own_slots() {
    let probe = Probe::new();
    let config = StdioConfig::default().max_in_flight(1);
    let mut s = Session::in_process(probe_server(&probe), config);
    let mut bytes = Vec::new();
    for id in 1..=200 {
        if id % 50 == 0 {
            // An error reply takes a slot too.
            bytes.extend(line(&request(id, "no/such/method", json!({}))));
        } else {
            bytes.extend(line(&call(id, "fast")));
        }
    }
    s.write_raw_unchecked(&bytes).await;
    let mut ids = BTreeSet::new();
    while ids.len() < 200 {
        let m = s.recv().await.expect("a response");
        let id = m["id"].as_i64().expect("an id");
        if id % 50 == 0 {
            assert_error(&m, -32601, Some(&json!(id)));
        } else {
            check_response("tools/call", &m);
            assert_eq!(m["result"]["content"][0]["text"], "fast", "{m}");
        }
        assert!(ids.insert(id), "answered twice: {m}");
    }
    // Nothing more: the next line answers the next request.
    next_is_answer_to(&mut s, 201).await;
    assert!(s.finish().await);
}

/// Sets its flag when dropped: shows a handler's future was dropped.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A writer that counts the writes it takes and passes them on.
struct CountingWriter<W> {
    inner: W,
    writes: Arc<AtomicUsize>,
}

impl<W: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for CountingWriter<W> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if let std::task::Poll::Ready(Ok(_)) = polled {
            self.writes.fetch_add(1, Ordering::SeqCst);
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

/// The read loop's batch holds one in-flight slot, not one per answer: with two slots,
/// 300 pipelined calls that complete at once are written in a few batches (each handed
/// over before a read of stdin or at 64 KiB), not two answers at a time as when every
/// answer kept its slot until written. Every call is answered once.
#[tokio::test]
async fn a_batch_of_answers_holds_one_slot() {
    let probe = Probe::new();
    let (mut client_out, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, client_in) = tokio::io::duplex(1 << 20);
    let writes = Arc::new(AtomicUsize::new(0));
    let writer = CountingWriter {
        inner: server_out,
        writes: Arc::clone(&writes),
    };
    let server = probe_server(&probe);
    let config = StdioConfig::default().max_in_flight(2);
    let serving = tokio::spawn(async move { server.serve_io(server_in, writer, config).await });
    let mut bytes = Vec::new();
    for id in 1..=300 {
        bytes.extend(checked_line(&call(id, "fast")));
    }
    client_out.write_all(&bytes).await.expect("written");
    drop(client_out);
    let mut lines = LineReader::new(client_in);
    lines.sent(&bytes);
    let mut ids = BTreeSet::new();
    while let Some(m) = lines.next(PATIENCE).await {
        check_response("tools/call", &m);
        assert!(
            ids.insert(m["id"].as_i64().expect("an id")),
            "answered twice: {m}"
        );
    }
    assert_eq!(ids.len(), 300, "every call answered");
    let served = tokio::time::timeout(PATIENCE, serving).await;
    assert!(matches!(served, Ok(Ok(Ok(())))), "{served:?}");
    let writes = writes.load(Ordering::SeqCst);
    assert!(
        writes <= 10,
        "{writes} writes for 300 answers: the batch waited on its own answers' slots"
    );
}

/// An answer made at once is written before the loop waits for more input, even when
/// the next line has only partly arrived: a client that writes in pieces and waits for
/// each answer is never left waiting on an answer the server holds.
#[tokio::test]
async fn an_answer_is_written_while_the_next_line_is_still_partial() {
    let probe = Probe::new();
    let mut s = Session::in_process(probe_server(&probe), StdioConfig::default());
    let second = line(&call(2, "fast"));
    let (head, tail) = second.split_at(second.len() / 2);
    let mut bytes = line(&call(1, "fast"));
    bytes.extend_from_slice(head);
    s.write_bytes(&bytes).await;
    let m = s.recv().await.expect("the first answer");
    assert_eq!(m["id"], json!(1), "{m}");
    check_response("tools/call", &m);
    assert!(
        s.recv_within(QUIET).await.is_none(),
        "the second request is not complete yet"
    );
    s.write_bytes(tail).await;
    let m = s.recv().await.expect("the second answer");
    assert_eq!(m["id"], json!(2), "{m}");
    check_response("tools/call", &m);
    assert!(s.finish().await);
}

/// A request that notifies and completes at its first poll: its notifications are
/// queued as they are sent, its answer in the read loop's batch, and each request's
/// notifications still come before its own response, for every request of a pipelined
/// burst.
#[tokio::test]
async fn notifications_of_a_request_answered_at_once_come_before_its_response() {
    let mut s = one_tool_session(
        Tool::new("chatty")
            .description("Reports progress and logs, then answers at once")
            .input_schema(json!({"type": "object", "properties": {"n": {"type": "integer"}}}))
            .handler(|call: ToolCall| async move {
                let n = call.arguments.get("n").cloned().unwrap_or_default();
                call.ctx.progress(1.0, None, Some("half"));
                call.ctx.log(LogLevel::Info, format!("working on {n}"));
                "done"
            }),
        StdioConfig::default().max_in_flight(4),
    );
    let mut bytes = Vec::new();
    for id in 1..=40 {
        bytes.extend(line(&request(
            id,
            "tools/call",
            json!({"name": "chatty", "arguments": {"n": id}, "_meta": {
                "progressToken": format!("t{id}"),
                "io.modelcontextprotocol/logLevel": "info"}}),
        )));
    }
    s.write_bytes(&bytes).await;
    // Per request: progress seen, log seen, answered.
    let mut seen: HashMap<i64, (bool, bool)> = HashMap::new();
    let mut answered = BTreeSet::new();
    while answered.len() < 40 {
        let m = s.recv().await.expect("a message");
        match m["method"].as_str() {
            Some("notifications/progress") => {
                check_notification(&m);
                let token = m["params"]["progressToken"].as_str().expect("a token");
                let id: i64 = token[1..].parse().expect("t<id>");
                assert!(!answered.contains(&id), "progress after the response: {m}");
                seen.entry(id).or_default().0 = true;
            }
            Some("notifications/message") => {
                check_notification(&m);
                let data = m["params"]["data"].as_str().expect("a text");
                let id: i64 = data
                    .strip_prefix("working on ")
                    .and_then(|n| n.parse().ok())
                    .expect("working on <id>");
                assert!(!answered.contains(&id), "a log after the response: {m}");
                let entry = seen.entry(id).or_default();
                assert!(entry.0, "the log comes after the progress: {m}");
                entry.1 = true;
            }
            _ => {
                check_response("tools/call", &m);
                let id = m["id"].as_i64().expect("an id");
                assert_eq!(
                    seen.get(&id),
                    Some(&(true, true)),
                    "request {id} answered before its notifications: {m}"
                );
                assert!(answered.insert(id), "answered twice: {m}");
            }
        }
    }
    assert!(s.finish().await);
}

// ---------------------------------------------------------------------------------------
// Logging over stdio (wire section 8.1).
// ---------------------------------------------------------------------------------------

/// Log messages are sent only when the request carries a logLevel, only at or above it,
/// as lines before the response.
#[tokio::test]
async fn log_messages_only_with_log_level_and_filtered() {
    let mut s = fixture().await;
    let levels = [
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    ];
    let m = s
        .call(
            1,
            "tools/call",
            json!({"name": "test_logging_tool", "arguments": {}}),
        )
        .await;
    assert_eq!(m.len(), 1, "no log messages without a logLevel: {m:?}");
    for (i, level) in levels.iter().enumerate() {
        let id = 10 + i as i64;
        let m = s
            .call(
                id,
                "tools/call",
                json!({"name": "test_logging_tool", "arguments": {},
                       "_meta": {"io.modelcontextprotocol/logLevel": level}}),
            )
            .await;
        let (response, notes) = m.split_last().expect("messages");
        assert_eq!(response["id"], json!(id));
        let got: Vec<&str> = notes
            .iter()
            .map(|n| {
                assert_eq!(n["method"], "notifications/message");
                assert_eq!(n["params"]["logger"], "conformance");
                n["params"]["level"].as_str().unwrap_or_default()
            })
            .collect();
        assert_eq!(got, levels[i..].to_vec(), "threshold {level}");
    }
    let m = s
        .call_unchecked(
            30,
            "tools/call",
            json!({"name": "test_logging_tool", "arguments": {},
                   "_meta": {"io.modelcontextprotocol/logLevel": "verbose"}}),
        )
        .await;
    assert_eq!(m.len(), 1);
    assert_error(&m[0], -32602, Some(&json!(30)));
    assert!(s.finish().await);
}

// ---------------------------------------------------------------------------------------
// End of input (errata section 5, `basic/transports/stdio.mdx`, "Shutdown").
// ---------------------------------------------------------------------------------------

/// The fixture exits 0 promptly when stdin closes, with or without prior traffic.
#[tokio::test]
async fn the_fixture_exits_promptly_when_stdin_closes() {
    let s = fixture().await;
    let started = Instant::now();
    assert!(s.finish().await, "exit status 0 with no traffic");
    assert!(started.elapsed() < Duration::from_secs(5));

    let mut s = fixture().await;
    s.call(1, "tools/list", json!({})).await;
    let started = Instant::now();
    assert!(s.finish().await, "exit status 0 after traffic");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn serve_io_returns_ok_when_input_ends() {
    let probe = Probe::new();
    let mut s = Session::in_process(probe_server(&probe), StdioConfig::default());
    s.send(&call(1, "fast")).await;
    let m = s.recv().await.expect("a response");
    check_response("tools/call", &m);
    assert!(s.finish().await);
}

/// A request still running when stdin closes is answered before the server ends.
#[tokio::test]
async fn a_request_in_flight_at_end_of_input_is_answered() {
    let probe = Probe::new();
    let (mut s, reads) = Session::in_process_watched(probe_server(&probe), StdioConfig::default());
    s.send(&call(1, "wait")).await;
    until("the handler started", || Probe::get(&probe.started) == 1).await;
    s.close_stdin();
    until("the server has read the end of its input", || reads.eof()).await;
    probe.release.add_permits(1);
    let m = s.recv().await.expect("the response after stdin closed");
    assert_eq!(m["id"], json!(1));
    check_response("tools/call", &m);
    assert!(s.recv().await.is_none(), "then end of output");
    assert!(s.finish().await);
}

/// Over real pipes: a request still running when stdin closes gets its notifications and
/// its response before the fixture exits 0.
#[tokio::test]
async fn the_fixture_answers_in_flight_requests_before_exiting() {
    let mut s = fixture().await;
    let m = request(
        1,
        "tools/call",
        json!({"name": "test_tool_with_progress", "arguments": {},
               "_meta": {"progressToken": "last"}}),
    );
    s.send(&m).await;
    s.close_stdin();
    let mut messages = Vec::new();
    while let Some(m) = s.recv().await {
        messages.push(m);
    }
    assert_eq!(
        messages.len(),
        4,
        "three progress notifications, then the response"
    );
    presa_tests::schema::check_exchange("tools/call", &messages);
    assert_eq!(messages[3]["id"], json!(1));
    assert!(s.finish().await);
}

/// Past the shutdown grace, a request still running is cancelled: its future is dropped,
/// nothing is written for it, and the server ends.
#[tokio::test]
async fn past_the_shutdown_grace_requests_are_cancelled() {
    let probe = Probe::new();
    let config = StdioConfig::default().shutdown_grace(Duration::from_millis(100));
    let mut s = Session::in_process(probe_server(&probe), config);
    s.send(&call_with_token(1, "ticker", json!("t"))).await;
    let n = s.recv().await.expect("progress");
    check_notification(&n);
    let started = Instant::now();
    s.close_stdin();
    // Progress sent before the grace ran out may still come; no response, ever: every
    // line up to the end of output is progress.
    let mut last = n["params"]["progress"].as_f64().unwrap_or(0.0);
    while let Some(m) = s.recv().await {
        assert_eq!(m["method"], "notifications/progress", "no response: {m}");
        check_notification(&m);
        let p = m["params"]["progress"].as_f64().unwrap_or(0.0);
        assert!(p > last);
        last = p;
    }
    until("the handler's future is dropped", || {
        Probe::get(&probe.dropped_unfinished) == 1
    })
    .await;
    assert_eq!(Probe::get(&probe.finished), 0);
    assert!(
        s.finish().await,
        "serve_io must return Ok once the shutdown grace has run out"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// A writer that never takes a byte: a client that stopped reading its stdout.
struct Stuck;

impl tokio::io::AsyncWrite for Stuck {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        _: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::task::Poll::Pending
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Pending
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Pending
    }
}

/// At the end of input, what is queued for stdout is written within the shutdown grace:
/// a client that stopped reading holds serving until the grace has passed, no longer;
/// `serve_io` then returns `Ok`, what was left unwritten dropped.
#[tokio::test]
async fn a_client_that_stops_reading_holds_serving_no_longer_than_the_grace() {
    const GRACE: Duration = Duration::from_millis(300);
    let probe = Probe::new();
    let server = probe_server(&probe);
    let mut input = Vec::new();
    for id in 1..=3 {
        input.extend(checked_line(&call(id, "fast")));
    }
    let config = StdioConfig::default().shutdown_grace(GRACE);
    let started = Instant::now();
    let served = within(
        "serve_io returns",
        server.serve_io(std::io::Cursor::new(input), Stuck, config),
    )
    .await;
    served.expect("Ok once the grace has passed");
    assert!(
        started.elapsed() >= GRACE,
        "returned after {:?}, before the grace",
        started.elapsed()
    );
    assert!(
        started.elapsed() < GRACE + Duration::from_secs(1),
        "returned after {:?}",
        started.elapsed()
    );
}

/// Within the grace, what is queued is written: a client that closes stdin and then
/// reads slowly (the pipe holds 16 bytes, so the writer waits on it for every answer)
/// gets every answer.
#[tokio::test]
async fn answers_queued_at_the_end_of_input_are_written_to_a_late_reader() {
    let probe = Probe::new();
    // A pipe of 16 bytes: the first answer fills it, and the writer waits for the reader.
    let (client_out, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, client_in) = tokio::io::duplex(16);
    let mut s = Session::over(
        probe_server(&probe),
        StdioConfig::default(),
        client_out,
        server_in,
        server_out,
        client_in,
    );
    for id in 1..=3 {
        s.send(&call(id, "fast")).await;
    }
    s.close_stdin();
    for id in 1..=3 {
        let m = s.recv().await.expect("an answer");
        assert_eq!(m["id"], json!(id), "{m}");
        check_response("tools/call", &m);
    }
    assert!(s.recv().await.is_none(), "then end of output");
    assert!(s.finish().await);
}

/// A pipelined flood written at once, then end of input: every request is answered
/// exactly once, then output ends.
#[tokio::test]
async fn a_pipelined_flood_is_answered_before_exit_in_process() {
    const N: i64 = 500;
    let probe = Probe::new();
    let mut s = Session::in_process(probe_server(&probe), StdioConfig::default());
    let mut bytes = Vec::new();
    for id in 1..=N {
        if id % 2 == 0 {
            bytes.extend(line(&call(id, "fast")));
        } else {
            bytes.extend(line(&request(id, "server/discover", json!({}))));
        }
    }
    s.write_bytes(&bytes).await;
    s.close_stdin();
    let mut ids = BTreeSet::new();
    for _ in 0..N {
        let m = s.recv().await.expect("a response");
        let id = m["id"].as_i64().expect("an integer id");
        check_response(
            if id % 2 == 0 {
                "tools/call"
            } else {
                "server/discover"
            },
            &m,
        );
        assert!(ids.insert(id), "answered twice: {id}");
    }
    assert_eq!(ids, (1..=N).collect::<BTreeSet<_>>());
    assert!(s.recv().await.is_none(), "nothing after the last response");
    assert!(s.finish().await);
}

/// The same flood against the fixture over real pipes (written while the responses are
/// read, so neither pipe can fill up and deadlock the test): 500 responses, then exit 0.
#[tokio::test]
async fn a_pipelined_flood_is_answered_before_exit_over_real_pipes() {
    const N: i64 = 500;
    let method = |id: i64| match id % 4 {
        0 => "server/discover",
        1 => "tools/call",
        2 => "tools/list",
        _ => "resources/read",
    };
    let mut bytes = Vec::new();
    for id in 1..=N {
        let params = match method(id) {
            "tools/call" => json!({"name": "test_simple_text"}),
            "resources/read" => json!({"uri": "test://static-text"}),
            _ => json!({}),
        };
        bytes.extend(checked_line(&request(id, method(id), params)));
    }
    let mut child = piped_child(FIXTURE, &["--transport", "stdio"], Stdio::inherit());
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = LineReader::new(child.stdout.take().expect("stdout"));
    lines.sent(&bytes);
    let writer = tokio::spawn(async move {
        stdin.write_all(&bytes).await.expect("write the flood");
        stdin.flush().await.expect("flush");
        drop(stdin); // end of input
    });
    let read = async {
        let mut ids = BTreeSet::new();
        while let Some(m) = lines.next(Duration::from_secs(60)).await {
            let id = m["id"]
                .as_i64()
                .unwrap_or_else(|| panic!("not a response: {m}"));
            check_response(method(id), &m);
            assert!(m.get("result").is_some(), "{m}");
            assert!(ids.insert(id), "answered twice: {id}");
        }
        ids
    };
    let ids = tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("the flood is answered and output ends");
    writer.await.expect("the writer finished");
    assert_eq!(ids, (1..=N).collect::<BTreeSet<_>>());
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the fixture exits")
        .expect("wait");
    assert!(status.success(), "exit status {status}");
}

/// The fixture over real pipes, sent `n` `tools/list` requests and then the end of its
/// input, its stdout read `chunk` bytes at a time with `pause` between reads until it
/// ends (failing past `within_at_most`): what it wrote, and the fixture.
async fn slow_reader(
    n: i64,
    chunk: usize,
    pause: Duration,
    within_at_most: Duration,
) -> (Vec<u8>, tokio::process::Child) {
    use tokio::io::AsyncReadExt;
    let mut bytes = Vec::new();
    for id in 1..=n {
        bytes.extend(checked_line(&request(id, "tools/list", json!({}))));
    }
    let mut child = piped_child(FIXTURE, &["--transport", "stdio"], Stdio::null());
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = child.stdout.take().expect("stdout");
    let writer = tokio::spawn(async move {
        stdin.write_all(&bytes).await.expect("write the requests");
        drop(stdin); // end of input
    });
    let read = async {
        let mut out = Vec::new();
        let mut buf = vec![0; chunk];
        loop {
            let got = stdout.read(&mut buf).await.expect("read stdout");
            if got == 0 {
                return out;
            }
            out.extend_from_slice(&buf[..got]);
            tokio::time::sleep(pause).await;
        }
    };
    let out = tokio::time::timeout(within_at_most, read)
        .await
        .expect("the output ends");
    writer.await.expect("the writer finished");
    (out, child)
}

/// A client that reads its stdout slowly, well past the fixture's grace, still gets every
/// answer made before the end of its input, each a whole line: the grace bounds the
/// requests, not the writing of answers already made to a client that reads them, and
/// stdout never ends within a line. The reading is paced so that writing everything
/// takes longer than the grace (the test checks that it did).
#[tokio::test]
async fn a_slow_reader_gets_every_answer_whole_past_the_grace_over_real_pipes() {
    const N: i64 = 128;
    let started = Instant::now();
    let (out, mut child) = slow_reader(N, 8 * 1024, Duration::from_millis(5), PATIENCE).await;
    assert!(
        started.elapsed() > presa_fixture::cli::DRAIN,
        "the reading outlasted the grace ({:?}): the test tests nothing",
        started.elapsed()
    );
    assert_eq!(out.last(), Some(&b'\n'), "stdout ends with a whole line");
    let mut ids = BTreeSet::new();
    for text in out.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let m: Value = serde_json::from_slice(text).unwrap_or_else(|e| {
            panic!(
                "a line is not JSON ({e}): {}",
                String::from_utf8_lossy(text)
            )
        });
        assert!(m["result"]["tools"].is_array(), "{m}");
        assert!(ids.insert(m["id"].as_i64().expect("an id")), "{m}");
    }
    assert_eq!(ids, (1..=N).collect::<BTreeSet<_>>());
    let status = within("the fixture exits", child.wait())
        .await
        .expect("wait");
    assert!(status.success(), "exit status {status}");
}

/// A client that reads, but too slowly to take everything queued, does not hold serving
/// for ever: the fixture stops writing at most 5 s past its grace and exits; every line
/// it wrote before the last is whole.
#[tokio::test]
async fn a_very_slow_reader_holds_serving_at_most_five_seconds_past_the_grace() {
    const N: i64 = 256;
    let started = Instant::now();
    // Paced so that taking the whole output would outlast the grace and the 5 s after
    // it (the test checks that not everything was written).
    let (out, mut child) =
        slow_reader(N, 1024, Duration::from_millis(50), Duration::from_secs(20)).await;
    let took = started.elapsed();
    let bound = presa_fixture::cli::DRAIN + Duration::from_secs(5);
    assert!(took >= bound, "it wrote on while the client read: {took:?}");
    assert!(
        took < bound + Duration::from_secs(3),
        "ended within the grace and 5 s: {took:?}"
    );
    let lines: Vec<&[u8]> = out.split(|b| *b == b'\n').collect();
    let whole = &lines[..lines.len() - 1];
    assert!(
        whole.len() < N as usize,
        "not everything was written: {}",
        whole.len()
    );
    for text in whole {
        let m: Value = serde_json::from_slice(text).unwrap_or_else(|e| {
            panic!(
                "a line is not JSON ({e}): {}",
                String::from_utf8_lossy(text)
            )
        });
        assert!(m["result"]["tools"].is_array(), "{m}");
    }
    let status = within("the fixture exits", child.wait())
        .await
        .expect("wait");
    assert!(status.success(), "exit status {status}");
}

/// At the end of input the fixture exits as soon as nothing is in flight, not once its
/// grace has passed: with nothing in flight, and with a request that ends well within
/// the grace (a sleep of a fifth of it), it exits before the grace would have run out.
#[tokio::test]
async fn the_end_of_input_ends_serving_once_nothing_is_in_flight_over_real_pipes() {
    let drain = presa_fixture::cli::DRAIN;
    let sleep =
        json!({"name": "slow_compute", "arguments": {"seconds": drain.as_secs_f64() / 5.0}});
    for in_flight in [None, Some(sleep)] {
        let mut child = piped_child(FIXTURE, &["--transport", "stdio"], Stdio::null());
        let mut stdin = child.stdin.take().expect("stdin");
        let mut lines = LineReader::new(child.stdout.take().expect("stdout"));
        // One answer first: the fixture is serving.
        let discover = checked_line(&request(1, "server/discover", json!({})));
        lines.sent(&discover);
        stdin.write_all(&discover).await.expect("write");
        lines.next(PATIENCE).await.expect("an answer");
        if let Some(params) = &in_flight {
            let call = checked_line(&request(2, "tools/call", params.clone()));
            lines.sent(&call);
            stdin.write_all(&call).await.expect("write");
        }
        stdin.flush().await.expect("flush");
        let closed = Instant::now();
        drop(stdin);
        if in_flight.is_some() {
            let m = lines.next(PATIENCE).await.expect("the call's answer");
            assert_eq!(m["id"], json!(2), "{m}");
            assert!(m.get("result").is_some(), "{m}");
        }
        assert!(lines.next(PATIENCE).await.is_none(), "then the output ends");
        let status = within("the fixture exits", child.wait())
            .await
            .expect("wait");
        let took = closed.elapsed();
        assert!(status.success(), "exit status {status}");
        assert!(
            took < drain,
            "exited {took:?} after the end of input, with {in_flight:?} in flight"
        );
    }
}

/// stdin and stdout are usually pipes, which presa reopens as non-blocking pipes on the
/// reactor; plain files are read and written by threads of presa's own. Both ways must
/// serve every line and exit at the end of the input.
#[tokio::test]
async fn files_as_stdin_and_stdout_are_served_too() {
    let dir = std::env::temp_dir().join(format!("presa-stdio-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let input = dir.join("in.jsonl");
    let output = dir.join("out.jsonl");
    let mut lines = Vec::new();
    for id in 1..=50 {
        let call = request(
            id,
            "tools/call",
            json!({"name": "test_simple_text", "arguments": {}}),
        );
        presa_tests::schema::check_outgoing(&call);
        lines.extend(line(&call));
    }
    std::fs::write(&input, &lines).expect("input written");
    let status = tokio::process::Command::new(FIXTURE)
        .args(["--transport", "stdio"])
        .stdin(std::fs::File::open(&input).expect("input opens"))
        .stdout(std::fs::File::create(&output).expect("output opens"))
        .stderr(Stdio::inherit())
        .status();
    let status = tokio::time::timeout(Duration::from_secs(20), status)
        .await
        .expect("the server exits at the end of its input")
        .expect("the server runs");
    assert!(status.success(), "{status}");
    let written = std::fs::read_to_string(&output).expect("output read");
    let mut ids = BTreeSet::new();
    for text in written.lines() {
        let m: Value = serde_json::from_str(text).expect("each line is JSON");
        check_response("tools/call", &m);
        assert!(m.get("result").is_some(), "{m}");
        ids.insert(m["id"].as_i64().expect("an integer id"));
    }
    assert_eq!(ids, (1..=50).collect::<BTreeSet<i64>>());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Some clients hand the server a socket, not pipes, as stdin and stdout (Node's child
/// processes do). A socket is not reopened (only pipes are): it is served by threads of
/// presa's own, answering every line, and the server exits when the client shuts its
/// side.
#[tokio::test]
async fn a_socket_as_stdin_and_stdout_is_served_too() {
    use std::io::{BufRead, Write};
    use std::os::unix::net::UnixStream;
    let (mut client, server_end) = UnixStream::pair().expect("a socket pair");
    let stdout_end = server_end.try_clone().expect("a second descriptor");
    let mut child = tokio::process::Command::new(FIXTURE)
        .args(["--transport", "stdio"])
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(server_end)))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(stdout_end)))
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the fixture starts");
    let answers = tokio::task::spawn_blocking(move || {
        for id in 1..=20 {
            let call = request(
                id,
                "tools/call",
                json!({"name": "test_simple_text", "arguments": {}}),
            );
            presa_tests::schema::check_outgoing(&call);
            client.write_all(&checked_line(&call)).expect("writes");
        }
        client
            .shutdown(std::net::Shutdown::Write)
            .expect("shuts the write side");
        let mut ids = BTreeSet::new();
        for text in std::io::BufReader::new(client).lines() {
            let m: Value = serde_json::from_str(&text.expect("a line")).expect("JSON");
            check_response("tools/call", &m);
            assert!(m.get("result").is_some(), "{m}");
            ids.insert(m["id"].as_i64().expect("an integer id"));
        }
        ids
    });
    let ids = tokio::time::timeout(Duration::from_secs(20), answers)
        .await
        .expect("answers before the deadline")
        .expect("the reader ends");
    assert_eq!(ids, (1..=20).collect::<BTreeSet<i64>>());
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the server exits once its input ends")
        .expect("waits");
    assert!(status.success(), "{status}");
}

/// Dropping the `serve_stdio` future (raced in a `select!` against Ctrl-C or a timeout)
/// stops serving, as it would if the read loop ran on the caller's task: the loop is a
/// task of its own, aborted when the future is dropped. The process goes on with stdin
/// still open, and a request written afterwards is never answered.
#[tokio::test]
async fn dropping_serve_stdio_stops_serving() {
    let mut child = piped_child(env!("CARGO_BIN_EXE_stdio_stop"), &[], Stdio::piped());
    use tokio::io::AsyncBufReadExt;
    let mut stdin = child.stdin.take().expect("stdin");
    let mut out = LineReader::new(child.stdout.take().expect("stdout"));
    let mut err = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    let call = |id: i64, name: &str, arguments: Value| {
        let message = request(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        );
        presa_tests::schema::check_outgoing(&message);
        line(&message)
    };

    let written = call(1, "echo", json!({"text": "before"}));
    out.sent(&written);
    stdin.write_all(&written).await.expect("write");
    let first = out.next(PATIENCE).await.expect("answered while serving");
    check_response("tools/call", &first);
    assert_eq!(first["id"], 1, "{first}");
    assert_eq!(first["result"]["content"][0]["text"], "before", "{first}");

    let written = call(2, "stop", json!({}));
    out.sent(&written);
    stdin.write_all(&written).await.expect("write");
    let said = within("the race is decided", err.next_line())
        .await
        .expect("read stderr");
    assert_eq!(said.as_deref(), Some("stopped serving"));

    let written = call(3, "echo", json!({"text": "after"}));
    out.sent(&written);
    stdin
        .write_all(&written)
        .await
        .expect("stdin is still open");
    // Nothing may be served now: watched for the quiet window (three of them), in which
    // at most the answer to `stop` (queued before the drop) may still come out.
    let deadline = tokio::time::Instant::now() + 3 * QUIET;
    while let Ok(Some(m)) = out.next_until(deadline).await {
        check_response("tools/call", &m);
        assert_eq!(m["id"], 2, "served after the future was dropped: {m}");
    }
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "the process goes on after serving stopped"
    );
    child.kill().await.expect("kill");
}

/// serde_json's private RawValue key is refused (-32700), wherever it stands: serde_json's
/// own `Value` parse would read its text afresh, with a fresh nesting limit, so a 135 KB
/// line of such keys nested in one another overflowed the fixture's stack (a debug build,
/// as this test runs it) and aborted the process. The fixture answers it and goes on.
#[tokio::test]
async fn a_chain_of_raw_value_keys_is_refused_and_serving_goes_on() {
    let chain = raw_value_chain(15);
    let mut message = request(
        1,
        "tools/call",
        json!({"name": "test_simple_text", "arguments": {"x": "PLACE"}}),
    )
    .to_string();
    message = message.replacen(r#""PLACE""#, &chain, 1);
    assert!(message.len() > 100_000, "{}", message.len());
    message.push('\n');
    let mut s = fixture().await;
    s.write_raw_unchecked(message.as_bytes()).await;
    expect_error(&mut s, -32700, None).await;
    next_is_answer_to(&mut s, 2).await;
}
