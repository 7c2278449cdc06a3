//! The fixture binary stops as a server should: SIGINT and SIGTERM stop it within a second
//! with exit code 0 whether its stdin is `/dev/null`, a pipe held open, a terminal or a
//! socket (what Node's `child_process` gives a child, so what the TypeScript SDK's stdio
//! client spawns a server with); over HTTP it never reads stdin unless
//! `--exit-on-stdin-close` asks it to stop at stdin's end. (Over stdio: `stdio_signals.rs`.)
//!
//! Each test starts the real binary, waits for it to be serving by reading its ready
//! line, signals it by pid, and waits for its exit with a deadline.

#![cfg(unix)]

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const FIXTURE: &str = env!("CARGO_BIN_EXE_presa-fixture");

/// What the fixture promises: exit within a second of a stop signal (or of stdin's end).
const DEADLINE: Duration = Duration::from_secs(1);

/// For starting up and answering, on a machine busy with other builds.
const PATIENCE: Duration = Duration::from_secs(30);

/// The protocol revision the requests speak.
const VERSION: &str = "2026-07-28";

/// What the fixture's stdin is.
#[derive(Clone, Copy, Debug)]
enum Input {
    /// `/dev/null`: at its end from the start.
    Null,
    /// A pipe whose write end the test holds open.
    Pipe,
    /// A pseudo-terminal whose master end the test holds open; reads of it block until a
    /// line is typed.
    Terminal,
    /// One end of a Unix socket pair, the test holding the other.
    Socket,
}

/// A running fixture, killed if a test ends (or fails) before it exits.
struct Fixture {
    child: Child,
    stdout: Lines<BufReader<ChildStdout>>,
    /// The write end of the stdin pipe, held open until dropped.
    stdin: Option<ChildStdin>,
    /// The terminal's master end or the socket's other end, held open until dropped.
    _other_end: Option<Box<dyn Write + Send>>,
}

impl Fixture {
    fn start(args: &[&str], input: Input) -> Fixture {
        let mut command = Command::new(FIXTURE);
        command
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            // Quiet unless something is wrong (not the warning about a random state key).
            .env("RUST_LOG", "error")
            .env_remove("MCP_PORT")
            .kill_on_drop(true);
        let mut other_end: Option<Box<dyn Write + Send>> = None;
        match input {
            Input::Null => {
                command.stdin(Stdio::null());
            }
            Input::Pipe => {
                command.stdin(Stdio::piped());
            }
            Input::Terminal => {
                let pty = nix::pty::openpty(None, None).expect("a pseudo-terminal opens");
                command.stdin(Stdio::from(pty.slave));
                other_end = Some(Box::new(std::fs::File::from(pty.master)));
            }
            Input::Socket => {
                let (ours, theirs) = UnixStream::pair().expect("a socket pair opens");
                command.stdin(Stdio::from(OwnedFd::from(theirs)));
                other_end = Some(Box::new(ours));
            }
        }
        let mut child = command.spawn().expect("the fixture starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stdin = child.stdin.take();
        Fixture {
            child,
            stdout: BufReader::new(stdout).lines(),
            stdin,
            _other_end: other_end,
        }
    }

    /// Starts the fixture over HTTP and returns it with its URL, once its ready line says
    /// it is listening.
    async fn http(args: &[&str], input: Input) -> (Fixture, String) {
        let mut fixture = Fixture::start(args, input);
        let line = fixture.line().await;
        let ready: Value = serde_json::from_str(&line).expect("the ready line is JSON");
        assert_eq!(ready["conformanceReady"], json!(true), "ready line {line}");
        let url = ready["url"].as_str().expect("the ready line has a url");
        let addr = url
            .strip_prefix("http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("not a loopback /mcp URL: {url}"))
            .to_owned();
        (fixture, addr)
    }

    /// The next line of stdout.
    async fn line(&mut self) -> String {
        tokio::time::timeout(PATIENCE, self.stdout.next_line())
            .await
            .expect("a line in time")
            .expect("stdout reads")
            .expect("a line before stdout ends")
    }

    fn signal(&self, signal: Signal) {
        let pid = self.child.id().expect("the fixture is still running");
        let pid = i32::try_from(pid).expect("a pid fits in pid_t");
        kill(Pid::from_raw(pid), signal).expect("the signal is sent");
    }

    /// Waits for the fixture to exit, failing after `deadline`.
    async fn exit_within(&mut self, deadline: Duration, what: &str) -> ExitStatus {
        let start = Instant::now();
        match tokio::time::timeout(deadline, self.child.wait()).await {
            Ok(status) => status.expect("wait succeeds"),
            Err(_) => panic!(
                "{what}: the fixture was still running {:?} later",
                start.elapsed()
            ),
        }
    }

    /// Sends `signal` and requires exit code 0 within [`DEADLINE`].
    async fn stops_on(&mut self, signal: Signal, what: &str) {
        self.signal(signal);
        let status = self.exit_within(DEADLINE, what).await;
        assert_eq!(status.code(), Some(0), "{what}: exit status {status}");
    }

    /// Requires the fixture to be running still after `interval`.
    async fn still_running_after(&mut self, interval: Duration, what: &str) {
        if let Ok(status) = tokio::time::timeout(interval, self.child.wait()).await {
            panic!("{what}: the fixture exited ({status:?}) while it should serve");
        }
    }
}

/// A JSON-RPC request with the `_meta` every 2026-07-28 request carries.
fn request(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "fixture-signals", "version": "0.0.0"},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn call(id: i64, tool: &str, arguments: Value) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

/// Opens a connection to `addr` and sends `message` as one POST to /mcp, asking the
/// server to close the connection after its answer.
async fn post(addr: &str, message: &Value) -> tokio::net::TcpStream {
    let method = message["method"].as_str().expect("a request");
    // A tool call names its tool in a header too.
    let name = match message["params"]["name"].as_str() {
        Some(name) => format!("Mcp-Name: {name}\r\n"),
        None => String::new(),
    };
    let body = message.to_string();
    let mut tcp = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connects");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {VERSION}\r\n\
         Mcp-Method: {method}\r\n{name}Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    tcp.write_all(head.as_bytes()).await.expect("writes");
    tcp
}

/// Everything the server sends on `tcp` until it closes the connection.
async fn read_to_close(tcp: &mut tokio::net::TcpStream, so_far: Vec<u8>) -> String {
    let mut bytes = so_far;
    tokio::time::timeout(PATIENCE, tcp.read_to_end(&mut bytes))
        .await
        .expect("the answer ends in time")
        .expect("reads");
    String::from_utf8(bytes).expect("UTF-8")
}

/// Reads from `tcp` until what arrived contains `needle`.
async fn read_until(tcp: &mut tokio::net::TcpStream, needle: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&bytes).contains(needle) {
        let n = tokio::time::timeout(PATIENCE, tcp.read(&mut buf))
            .await
            .unwrap_or_else(|_| panic!("no {needle:?} in time; got {bytes:?}"))
            .expect("reads");
        assert!(
            n > 0,
            "closed before {needle:?}: {}",
            String::from_utf8_lossy(&bytes)
        );
        bytes.extend_from_slice(&buf[..n]);
    }
    bytes
}

/// Calls `test_simple_text` and requires its answer: the fixture is serving.
async fn serves(addr: &str) {
    let mut tcp = post(addr, &call(7, "test_simple_text", json!({}))).await;
    let answer = read_to_close(&mut tcp, Vec::new()).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "answer {answer}");
    let (_, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    let body: Value = serde_json::from_str(body).expect("a JSON body");
    assert_eq!(body["id"], json!(7), "answer {answer}");
    assert_eq!(
        body["result"]["content"][0]["text"],
        json!("This is a simple text response for testing."),
        "answer {answer}"
    );
}

// ---- HTTP: a signal stops it, whatever stdin is ----

/// Over HTTP with stdin at `input`: serving, then `signal` stops it within the deadline
/// with exit code 0.
async fn http_stops_on(input: Input, signal: Signal) {
    let what = format!("HTTP, stdin {input:?}, {signal}");
    let (mut fixture, addr) = Fixture::http(&[], input).await;
    serves(&addr).await;
    fixture.stops_on(signal, &what).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_with_stdin_at_dev_null_serves_until_signalled() {
    let (mut fixture, addr) = Fixture::http(&[], Input::Null).await;
    // stdin's end is no reason to stop: still serving a while later.
    fixture
        .still_running_after(Duration::from_millis(300), "stdin /dev/null")
        .await;
    serves(&addr).await;
    fixture.stops_on(Signal::SIGTERM, "stdin /dev/null").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_with_stdin_at_dev_null_stops_on_sigterm() {
    http_stops_on(Input::Null, Signal::SIGTERM).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_with_stdin_at_dev_null_stops_on_sigint() {
    http_stops_on(Input::Null, Signal::SIGINT).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_with_stdin_a_pipe_held_open_stops_on_sigterm() {
    http_stops_on(Input::Pipe, Signal::SIGTERM).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_with_stdin_a_pipe_held_open_stops_on_sigint() {
    http_stops_on(Input::Pipe, Signal::SIGINT).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_with_stdin_a_terminal_stops_on_sigterm() {
    http_stops_on(Input::Terminal, Signal::SIGTERM).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_with_stdin_a_terminal_stops_on_sigint() {
    http_stops_on(Input::Terminal, Signal::SIGINT).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_with_stdin_a_socket_stops_on_sigterm() {
    http_stops_on(Input::Socket, Signal::SIGTERM).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_with_exit_on_stdin_close_stops_when_the_pipe_closes() {
    let (mut fixture, addr) = Fixture::http(&["--exit-on-stdin-close"], Input::Pipe).await;
    serves(&addr).await;
    drop(fixture.stdin.take());
    let status = fixture.exit_within(DEADLINE, "stdin closed").await;
    assert_eq!(status.code(), Some(0), "exit status {status}");
}

#[tokio::test(flavor = "multi_thread")]
async fn http_with_exit_on_stdin_close_still_stops_on_a_signal_while_stdin_is_open() {
    let (mut fixture, addr) = Fixture::http(&["--exit-on-stdin-close"], Input::Pipe).await;
    serves(&addr).await;
    fixture
        .stops_on(Signal::SIGTERM, "--exit-on-stdin-close, stdin open")
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_with_exit_on_stdin_close_and_a_terminal_stops_on_sigint() {
    let (mut fixture, addr) = Fixture::http(&["--exit-on-stdin-close"], Input::Terminal).await;
    serves(&addr).await;
    fixture
        .stops_on(Signal::SIGINT, "--exit-on-stdin-close, stdin a terminal")
        .await;
}

// ---- HTTP: what is open when the signal arrives ----

#[tokio::test(flavor = "multi_thread")]
async fn a_call_in_flight_at_the_signal_is_answered_in_full() {
    let (mut fixture, addr) = Fixture::http(&[], Input::Null).await;
    let mut message = call(3, "test_tool_with_progress", json!({}));
    message["params"]["_meta"]["progressToken"] = json!("p");
    let mut tcp = post(&addr, &message).await;
    // The first progress notification: the call is running (it takes 40 ms more).
    let so_far = read_until(&mut tcp, "notifications/progress").await;
    fixture.signal(Signal::SIGTERM);
    let answer = read_to_close(&mut tcp, so_far).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "answer {answer}");
    assert!(
        answer.contains(r#""text":"Progress computation completed: 5050""#),
        "answer {answer}"
    );
    let status = fixture.exit_within(DEADLINE, "after the call").await;
    assert_eq!(status.code(), Some(0), "exit status {status}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_open_subscription_stream_ends_at_the_signal() {
    let (mut fixture, addr) = Fixture::http(&[], Input::Null).await;
    let listen = request(
        4,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let mut tcp = post(&addr, &listen).await;
    // The acknowledgement: the stream is open, and would stay open.
    let so_far = read_until(&mut tcp, "notifications/subscriptions/acknowledged").await;
    fixture.signal(Signal::SIGTERM);
    let status = fixture.exit_within(DEADLINE, "a listen stream open").await;
    assert_eq!(status.code(), Some(0), "exit status {status}");
    // The stream was ended, not left hanging.
    read_to_close(&mut tcp, so_far).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_longer_than_the_drain_does_not_hold_the_exit() {
    let (mut fixture, addr) = Fixture::http(&[], Input::Null).await;
    // 30 s, far past the drain. Its connection is accepted before the next one (one
    // listener, accepted in order), so once the next one is answered it is being served.
    let mut slow = post(&addr, &call(5, "slow_compute", json!({"seconds": 30}))).await;
    serves(&addr).await;
    let start = Instant::now();
    fixture
        .stops_on(Signal::SIGTERM, "a 30 s call in flight")
        .await;
    assert!(
        start.elapsed() >= presa_fixture::cli::DRAIN,
        "exited after {:?}, before the drain of {:?} was over: the call was not in flight",
        start.elapsed(),
        presa_fixture::cli::DRAIN
    );
    // The call got no answer: its connection was closed.
    let answer = read_to_close(&mut slow, Vec::new()).await;
    assert!(!answer.contains("Completed"), "answer {answer}");
}

// ---- the command line ----

#[test]
fn help_names_the_flag_and_the_stop_rule() {
    let output = std::process::Command::new(FIXTURE)
        .arg("--help")
        .stdin(Stdio::null())
        .output()
        .expect("the fixture runs");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let help = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(help.starts_with("usage: presa-fixture "), "{help}");
    assert!(help.contains("--exit-on-stdin-close"), "{help}");
    assert!(
        help.contains("SIGINT (Ctrl-C) and SIGTERM stop either transport within a second"),
        "{help}"
    );
}

#[test]
fn an_unknown_argument_exits_2() {
    let output = std::process::Command::new(FIXTURE)
        .arg("--exit-on-stdin")
        .stdin(Stdio::null())
        .output()
        .expect("the fixture runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let error = String::from_utf8(output.stderr).expect("UTF-8");
    assert!(
        error.contains(r#"unknown argument "--exit-on-stdin""#),
        "{error}"
    );
}
