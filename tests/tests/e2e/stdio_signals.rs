//! Stopping stdio on a signal, over real processes: on SIGINT or SIGTERM the server reads
//! no further line, lets the requests in flight finish within its shutdown grace, cancels
//! the rest at the grace's end, ends subscription streams with their
//! `notifications/cancelled`, and exits 0 within the grace and a second, whatever its
//! stdin and stdout are: pipes, a socket (what Node's `child_process` gives a child) or a
//! terminal. It never sets `O_NONBLOCK` on a descriptor it shares with its parent.
//!
//! Two programs: the fixture (grace [`DRAIN`]), and `stdio_signals`, a plain
//! `#[tokio::main]` server whose runtime's drop would wait for a read or write of stdio
//! left on its blocking pool. Each test starts one with stdin and stdout of one kind,
//! waits for it to be serving by reading an answer, signals it by pid, and waits for its
//! exit with a deadline; stdout is read on a thread of the test's own until it ends.

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::sys::signal::{Signal, kill};
use nix::sys::termios::{LocalFlags, SetArg, tcgetattr, tcsetattr};
use nix::unistd::Pid;
use presa_fixture::cli::DRAIN;
use presa_tests::schema::check_outgoing;
use presa_tests::stdio::Pending;
use presa_tests::wait::PATIENCE;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, Lines};
use tokio::process::{ChildStderr, Command};
use tokio::sync::mpsc;

const FIXTURE: &str = env!("CARGO_BIN_EXE_fixture");
const PLAIN: &str = env!("CARGO_BIN_EXE_stdio_signals");

/// What the fixture promises with nothing in flight: exit within a second of a stop
/// signal (or of stdin's end).
const DEADLINE: Duration = Duration::from_secs(1);

/// With requests in flight: exit within the fixture's grace and a second.
const DRAIN_DEADLINE: Duration = DRAIN.saturating_add(Duration::from_secs(1));

/// The grace `stdio_signals` is started with.
const PLAIN_GRACE: Duration = Duration::from_millis(300);

/// What the server's stdin and stdout are.
#[derive(Clone, Copy, Debug)]
enum Io {
    /// Two pipes, the test holding the other ends.
    Pipe,
    /// One end of a Unix socket pair as both, the test holding the other end.
    Socket,
    /// A pseudo-terminal's slave end as both (echo off, so the master end reads only
    /// what the server writes), the test holding the master end.
    Terminal,
}

const EVERY_IO: [Io; 3] = [Io::Pipe, Io::Socket, Io::Terminal];

/// The test's end of the server's stdin.
enum Feed {
    Pipe(std::io::PipeWriter),
    Socket(UnixStream),
    Terminal(std::fs::File),
}

/// A running server, killed if a test ends (or fails) before it exits.
struct Server {
    child: tokio::process::Child,
    /// Lines of stdout (without `\r\n` or `\n`), until it ends.
    stdout: mpsc::UnboundedReceiver<String>,
    /// The requests sent, to check answers against.
    pending: Pending,
    feed: Option<Feed>,
    stderr: Option<Lines<tokio::io::BufReader<ChildStderr>>>,
    what: String,
}

impl Server {
    /// Starts `bin` with `args` over stdio on `io`, and waits until it answers a request.
    /// It must have left its stdin in blocking mode: `O_NONBLOCK` belongs to the open
    /// file, which a socket or a terminal shares with the process that spawned the
    /// server (here the test), and must not be changed for it.
    async fn start(bin: &str, args: &[&str], io: Io, what: &str) -> Server {
        let mut command = Command::new(bin);
        command
            .args(args)
            .stderr(Stdio::piped())
            // Quiet unless something is wrong (not the warning about a random state key).
            .env("RUST_LOG", "error")
            .kill_on_drop(true);
        let (feed, output, theirs): (Feed, Box<dyn Read + Send>, OwnedFd) = match io {
            Io::Pipe => {
                let (stdin, feed) = std::io::pipe().expect("a pipe");
                let (output, stdout) = std::io::pipe().expect("a pipe");
                let theirs = OwnedFd::from(stdin);
                command
                    .stdin(Stdio::from(theirs.try_clone().expect("dup")))
                    .stdout(Stdio::from(stdout));
                (Feed::Pipe(feed), Box::new(output), theirs)
            }
            Io::Socket => {
                let (ours, theirs) = UnixStream::pair().expect("a socket pair opens");
                let theirs = OwnedFd::from(theirs);
                command
                    .stdin(Stdio::from(theirs.try_clone().expect("dup")))
                    .stdout(Stdio::from(theirs.try_clone().expect("dup")));
                let output = ours.try_clone().expect("dup");
                (Feed::Socket(ours), Box::new(output), theirs)
            }
            Io::Terminal => {
                let pty = nix::pty::openpty(None, None).expect("a pseudo-terminal opens");
                let mut termios = tcgetattr(&pty.slave).expect("the terminal's settings");
                termios.local_flags.remove(LocalFlags::ECHO);
                tcsetattr(&pty.slave, SetArg::TCSANOW, &termios).expect("echo off");
                command
                    .stdin(Stdio::from(pty.slave.try_clone().expect("dup")))
                    .stdout(Stdio::from(pty.slave.try_clone().expect("dup")));
                let master = std::fs::File::from(pty.master);
                let output = master.try_clone().expect("dup");
                (Feed::Terminal(master), Box::new(output), pty.slave)
            }
        };
        let mut child = command.spawn().expect("the server starts");
        // The command's copies of the descriptors go with it.
        drop(command);
        let stderr = child.stderr.take().expect("stderr is piped");
        let (lines, stdout) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            // A terminal's master end fails (EIO) once the slave end is closed everywhere:
            // the end of output, as a pipe's or a socket's end is.
            for line in BufReader::new(output).lines() {
                let Ok(line) = line else { return };
                if lines.send(line.trim_end_matches('\r').to_owned()).is_err() {
                    return;
                }
            }
        });
        let mut server = Server {
            child,
            stdout,
            pending: Pending::default(),
            feed: Some(feed),
            stderr: Some(tokio::io::BufReader::new(stderr).lines()),
            what: format!("{what} over {io:?}"),
        };
        server.send(&request(1, "server/discover", json!({})));
        server.answer(1).await;
        let flags = fcntl(&theirs, FcntlArg::F_GETFL).expect("the flags");
        assert!(
            !OFlag::from_bits_truncate(flags).contains(OFlag::O_NONBLOCK),
            "{}: the server set O_NONBLOCK on its stdin",
            server.what
        );
        // Only the server holds its ends now: their end is the end of its output.
        drop(theirs);
        server
    }

    /// The fixture (grace [`DRAIN`]).
    async fn fixture(io: Io, what: &str) -> Server {
        Server::start(FIXTURE, &["--transport", "stdio"], io, what).await
    }

    /// `stdio_signals` (grace [`PLAIN_GRACE`]), with `args` besides.
    async fn plain(args: &[&str], io: Io, what: &str) -> Server {
        let grace = PLAIN_GRACE.as_millis().to_string();
        let mut all = vec!["--grace-ms", grace.as_str()];
        all.extend_from_slice(args);
        Server::start(PLAIN, &all, io, what).await
    }

    /// The next message on stdout, checked as the server's.
    async fn message(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.stdout.recv())
            .await
            .unwrap_or_else(|_| panic!("{}: a line in time", self.what))
            .unwrap_or_else(|| panic!("{}: a line before stdout ends", self.what));
        self.parse(&line)
    }

    /// The next message, which must answer `id` with a result.
    async fn answer(&mut self, id: i64) -> Value {
        let answer = self.message().await;
        assert_eq!(answer["id"], json!(id), "{}: {answer}", self.what);
        assert!(answer.get("result").is_some(), "{}: {answer}", self.what);
        answer
    }

    /// Every message until stdout ends.
    async fn rest(&mut self) -> Vec<Value> {
        let mut messages = Vec::new();
        loop {
            let line = tokio::time::timeout(PATIENCE, self.stdout.recv())
                .await
                .unwrap_or_else(|_| panic!("{}: stdout ends in time", self.what));
            let Some(line) = line else {
                return messages;
            };
            messages.push(self.parse(&line));
        }
    }

    fn parse(&mut self, line: &str) -> Value {
        let message =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{}: {e}: {line:?}", self.what));
        self.pending.check(&message);
        message
    }

    /// Writes one message to stdin, checked as a client's. A line well under the pipe's,
    /// the terminal's or the socket's buffer: the write does not wait for the reader.
    fn send(&mut self, message: &Value) {
        check_outgoing(message);
        self.pending.sent(message);
        let line = format!("{message}\n");
        let written = match self.feed.as_mut().expect("stdin is open") {
            Feed::Pipe(pipe) => pipe.write_all(line.as_bytes()),
            Feed::Socket(socket) => socket.write_all(line.as_bytes()),
            Feed::Terminal(master) => master.write_all(line.as_bytes()),
        };
        written.expect("writes the line");
    }

    /// Ends stdin (a socket's write side only: its stdout is read on).
    fn close_stdin(&mut self) {
        match self.feed.take() {
            Some(Feed::Socket(socket)) => socket
                .shutdown(std::net::Shutdown::Write)
                .expect("shuts the write side"),
            Some(feed) => drop(feed),
            None => {}
        }
    }

    fn signal(&self, signal: Signal) {
        let pid = self.child.id().expect("the server is still running");
        let pid = i32::try_from(pid).expect("a pid fits in pid_t");
        kill(Pid::from_raw(pid), signal).expect("the signal is sent");
    }

    /// Waits for the server to exit, failing after `deadline`, and requires exit code 0.
    async fn exits_0_within(&mut self, deadline: Duration) {
        let start = Instant::now();
        let status = match tokio::time::timeout(deadline, self.child.wait()).await {
            Ok(status) => status.expect("wait succeeds"),
            Err(_) => panic!(
                "{}: the server was still running {:?} later",
                self.what,
                start.elapsed()
            ),
        };
        assert_eq!(
            status.code(),
            Some(0),
            "{}: exit status {status}",
            self.what
        );
    }

    /// The next line of stderr.
    async fn said(&mut self) -> String {
        let stderr = self.stderr.as_mut().expect("stderr is read");
        tokio::time::timeout(PATIENCE, stderr.next_line())
            .await
            .expect("a line of stderr in time")
            .expect("stderr reads")
            .expect("a line before stderr ends")
    }
}

/// A JSON-RPC request with the `_meta` every 2026-07-28 request carries.
fn request(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "stdio-signals", "version": "0.0.0"},
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

fn listen(id: i64) -> Value {
    request(
        id,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    )
}

// ---- the fixture ----

/// Nothing in flight: `signal` stops it, output ends, and it exits 0 within a second.
async fn stops_on(io: Io, signal: Signal) {
    let mut server = Server::fixture(io, &format!("{signal}")).await;
    server.signal(signal);
    server.exits_0_within(DEADLINE).await;
    assert_eq!(server.rest().await, Vec::<Value>::new(), "{}", server.what);
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_over_pipes_stops_on_sigterm() {
    stops_on(Io::Pipe, Signal::SIGTERM).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_over_pipes_stops_on_sigint() {
    stops_on(Io::Pipe, Signal::SIGINT).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_over_a_socket_stops_on_sigterm() {
    stops_on(Io::Socket, Signal::SIGTERM).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_over_a_socket_stops_on_sigint() {
    stops_on(Io::Socket, Signal::SIGINT).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_over_a_terminal_stops_on_sigterm() {
    stops_on(Io::Terminal, Signal::SIGTERM).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stdio_over_a_terminal_stops_on_sigint() {
    stops_on(Io::Terminal, Signal::SIGINT).await;
}

/// stdin's end stops it too, as promptly.
#[tokio::test(flavor = "multi_thread")]
async fn stdio_stops_at_the_end_of_stdin() {
    for io in [Io::Pipe, Io::Socket] {
        let mut server = Server::fixture(io, "stdin closed").await;
        server.close_stdin();
        server.exits_0_within(DEADLINE).await;
        assert_eq!(server.rest().await, Vec::<Value>::new(), "{}", server.what);
    }
}

/// A call in flight at the signal is answered in full (its progress, then its result)
/// before the server exits.
#[tokio::test(flavor = "multi_thread")]
async fn stdio_answers_a_call_in_flight_at_the_signal_before_the_exit() {
    for io in EVERY_IO {
        let mut server = Server::fixture(io, "a call in flight").await;
        let mut message = call(2, "test_tool_with_progress", json!({}));
        message["params"]["_meta"]["progressToken"] = json!("p");
        server.send(&message);
        // The first progress notification: the call is running (it takes 40 ms more).
        let first = server.message().await;
        assert_eq!(
            first["method"],
            json!("notifications/progress"),
            "{}: {first}",
            server.what
        );
        server.signal(Signal::SIGTERM);
        server.exits_0_within(DRAIN_DEADLINE).await;
        let rest = server.rest().await;
        assert_eq!(rest.len(), 3, "{}: {rest:?}", server.what);
        assert_eq!(rest[0]["method"], json!("notifications/progress"));
        assert_eq!(rest[1]["method"], json!("notifications/progress"));
        assert_eq!(rest[2]["id"], json!(2), "{}: {}", server.what, rest[2]);
        assert_eq!(
            rest[2]["result"]["content"][0]["text"],
            json!("Progress computation completed: 5050"),
            "{}: {}",
            server.what,
            rest[2]
        );
    }
}

/// A call that would outlast the grace is cancelled at the grace's end: no answer, exit
/// 0, no sooner than the grace and within it and a second.
#[tokio::test(flavor = "multi_thread")]
async fn stdio_cancels_a_call_longer_than_the_grace_at_its_end() {
    for io in EVERY_IO {
        let mut server = Server::fixture(io, "an hour-long call").await;
        server.send(&call(2, "slow_compute", json!({"seconds": 3600})));
        // Lines are served in order: once the next one is answered, the call is running.
        server.send(&request(3, "server/discover", json!({})));
        server.answer(3).await;
        let start = Instant::now();
        server.signal(Signal::SIGTERM);
        server.exits_0_within(DRAIN_DEADLINE).await;
        assert!(
            start.elapsed() >= DRAIN,
            "{}: exited after {:?}, before the grace of {DRAIN:?} was over",
            server.what,
            start.elapsed()
        );
        assert_eq!(server.rest().await, Vec::<Value>::new(), "{}", server.what);
    }
}

/// An open subscription stream ends at the signal with `notifications/cancelled` for its
/// id (how the server ends a stream over stdio), and the server exits at once.
#[tokio::test(flavor = "multi_thread")]
async fn stdio_ends_an_open_subscription_stream_at_the_signal() {
    for io in EVERY_IO {
        let mut server = Server::fixture(io, "a stream open").await;
        server.send(&listen(2));
        let acknowledged = server.message().await;
        assert_eq!(
            acknowledged["method"],
            json!("notifications/subscriptions/acknowledged"),
            "{}: {acknowledged}",
            server.what
        );
        server.signal(Signal::SIGTERM);
        server.exits_0_within(DEADLINE).await;
        let rest = server.rest().await;
        assert_eq!(rest.len(), 1, "{}: {rest:?}", server.what);
        assert_eq!(rest[0]["method"], json!("notifications/cancelled"));
        assert_eq!(rest[0]["params"]["requestId"], json!(2), "{}", server.what);
    }
}

/// Once stopped it reads no further line: a request sent after the stop (seen in the end
/// of a stream), while a call keeps the server draining, gets no answer.
#[tokio::test(flavor = "multi_thread")]
async fn stdio_serves_nothing_sent_after_the_stop() {
    let mut server = Server::fixture(Io::Pipe, "a request after the stop").await;
    server.send(&listen(2));
    let acknowledged = server.message().await;
    assert_eq!(
        acknowledged["method"],
        json!("notifications/subscriptions/acknowledged"),
        "{acknowledged}"
    );
    server.send(&call(3, "slow_compute", json!({"seconds": 3600})));
    server.send(&request(4, "server/discover", json!({})));
    server.answer(4).await;
    server.signal(Signal::SIGTERM);
    let ended = server.message().await;
    assert_eq!(ended["method"], json!("notifications/cancelled"), "{ended}");
    server.send(&request(5, "server/discover", json!({})));
    server.exits_0_within(DRAIN_DEADLINE).await;
    assert_eq!(server.rest().await, Vec::<Value>::new());
}

// ---- a plain `#[tokio::main]` program ----

/// A call that never ends and a context kept for good by a task of the handler's hold
/// neither serving nor the process: at SIGTERM, with stdin held open, the program exits 0
/// at the grace's end (within it and a second).
#[tokio::test(flavor = "multi_thread")]
async fn stdio_a_plain_program_exits_at_the_grace_whatever_was_left_running() {
    for io in EVERY_IO {
        let mut server = Server::plain(&[], io, "a plain program").await;
        server.send(&call(2, "keep", json!({})));
        let kept = server.answer(2).await;
        assert_eq!(
            kept["result"]["content"][0]["text"],
            json!("kept"),
            "{kept}"
        );
        server.send(&call(3, "forever", json!({})));
        server.send(&request(4, "server/discover", json!({})));
        server.answer(4).await;
        let start = Instant::now();
        server.signal(Signal::SIGTERM);
        server
            .exits_0_within(PLAIN_GRACE + Duration::from_secs(1))
            .await;
        assert!(
            start.elapsed() >= PLAIN_GRACE,
            "{}: exited after {:?}, before the grace",
            server.what,
            start.elapsed()
        );
        assert_eq!(server.rest().await, Vec::<Value>::new(), "{}", server.what);
    }
}

/// A kept context does not hold the exit at stdin's end either.
#[tokio::test(flavor = "multi_thread")]
async fn stdio_a_plain_program_exits_at_the_end_of_stdin_though_a_context_is_kept() {
    for io in [Io::Pipe, Io::Socket] {
        let mut server = Server::plain(&[], io, "a kept context, stdin closed").await;
        server.send(&call(2, "keep", json!({})));
        server.answer(2).await;
        server.close_stdin();
        server.exits_0_within(DEADLINE).await;
        assert_eq!(server.rest().await, Vec::<Value>::new(), "{}", server.what);
    }
}

/// With `stop_on_signals(false)` SIGTERM is the program's: its own handler sees it and
/// serving goes on, until stdin ends.
#[tokio::test(flavor = "multi_thread")]
async fn stdio_leaves_the_signals_to_the_program_when_told() {
    let mut server = Server::plain(&["--own-signals"], Io::Pipe, "own signals").await;
    server.signal(Signal::SIGTERM);
    assert_eq!(server.said().await, "own handler: SIGTERM");
    server.send(&request(2, "server/discover", json!({})));
    server.answer(2).await;
    server.close_stdin();
    server.exits_0_within(DEADLINE).await;
    assert_eq!(server.rest().await, Vec::<Value>::new());
}
