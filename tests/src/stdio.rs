//! A stdio harness: the fixture binary as a child process (`--transport stdio`), or any
//! server over an in-process pipe through [`presa::Server::serve_io`]. Both write lines
//! and read lines, as a real client does.
//!
//! Every path checks both ways by default: [`Session::send`] checks the message it
//! writes against the client's schema definitions, and every line read is parsed and
//! checked against the server's (a response against the method of the request with its
//! id, when the session sent one). [`Session::send_unchecked`] and
//! [`Session::write_raw_unchecked`] write what a test made invalid on purpose without
//! checking it; what the server answers is checked all the same. The checks are the
//! 2026-07-28 schema's until a test sets others ([`Session::checking`]): a legacy
//! session's (`crate::legacy_stdio`) are those of the revision it negotiated.

use crate::schema::check_outgoing;
use crate::sse::Check;
use presa::{Server, StdioConfig};
use serde_json::Value;
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader, Lines};

/// How long a test waits for one line before failing.
pub const LINE_TIMEOUT: Duration = crate::wait::PATIENCE;

/// A message serialized as one line of stdio input.
pub fn line(message: &Value) -> Vec<u8> {
    let mut l = message.to_string().into_bytes();
    l.push(b'\n');
    l
}

/// [`line()`] of a message checked as a client message first: for a test that writes to a
/// pipe of its own.
#[track_caller]
pub fn checked_line(message: &Value) -> Vec<u8> {
    check_outgoing(message);
    line(message)
}

/// Checks one line a test wrote as a client message, as `check` says: blank lines (stdio
/// skips them) pass; anything else must be a valid message (a `\r` before the newline is
/// framing).
#[track_caller]
fn check_line(check: Check, bytes: &[u8]) {
    let text = std::str::from_utf8(bytes).unwrap_or_else(|e| {
        panic!("a line written is not UTF-8 ({e}): write it with write_raw_unchecked")
    });
    let text = text.strip_suffix('\r').unwrap_or(text);
    if text.trim().is_empty() {
        return;
    }
    let message: Value = serde_json::from_str(text).unwrap_or_else(|e| {
        panic!("a line written is not JSON ({e}): write it with write_raw_unchecked: {text}")
    });
    check.client_message("", &message);
}

/// Starts `bin` with `args` as a child whose stdin and stdout are pipes (stderr as
/// given), killed when dropped.
pub fn piped_child(bin: &str, args: &[&str], stderr: Stdio) -> tokio::process::Child {
    tokio::process::Command::new(bin)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("{bin} starts: {e}"))
}

/// The methods of requests sent and not answered yet, by id (its JSON text), so that a
/// response is checked against its request's method; and how the server's messages are
/// checked (the 2026-07-28 schema by default).
#[derive(Default)]
pub struct Pending {
    sent: HashMap<String, Vec<String>>,
    check: Check,
}

impl Pending {
    /// No request sent yet; the server's messages checked as `check` says.
    pub fn new(check: Check) -> Self {
        Pending {
            sent: HashMap::new(),
            check,
        }
    }

    /// Notes `message` if it is a request.
    pub fn sent(&mut self, message: &Value) {
        if let (Some(id), Some(method)) = (
            message.get("id"),
            message.get("method").and_then(Value::as_str),
        ) {
            self.sent
                .entry(id.to_string())
                .or_default()
                .push(method.to_owned());
        }
    }

    /// Notes every whole line of `bytes` that is a request.
    pub fn sent_bytes(&mut self, bytes: &[u8]) {
        for l in bytes.split(|b| *b == b'\n') {
            if let Some((id, method)) = crate::request_head(l) {
                self.sent.entry(id.to_string()).or_default().push(method);
            }
        }
    }

    /// Checks `message` as the server's: a response against the method of the request
    /// with its id (one sent twice: the method it validates against), anything else as
    /// any server message.
    #[track_caller]
    pub fn check(&mut self, message: &Value) {
        let check = self.check;
        let is_response = message.get("method").is_none();
        let key = message.get("id").map(Value::to_string);
        let methods = match (is_response, key) {
            (true, Some(key)) => self.sent.get_mut(&key),
            _ => None,
        };
        let Some(methods) = methods.filter(|m| !m.is_empty()) else {
            check.server_message("", message);
            return;
        };
        if message.get("result").is_none() || methods.len() == 1 {
            // An error is checked the same for every method; it answers the latest
            // request with its id (the one refused, when an id in flight was reused).
            let method = if message.get("result").is_none() {
                methods.pop()
            } else {
                Some(methods.remove(0))
            };
            check.server_message(method.as_deref().unwrap_or(""), message);
            return;
        }
        let at = methods
            .iter()
            .position(|m| std::panic::catch_unwind(|| check.server_message(m, message)).is_ok())
            .unwrap_or_else(|| {
                panic!("{message} answers none of the requests {methods:?} with its id")
            });
        methods.remove(at);
    }
}

/// One stdio session.
pub struct Session {
    writer: Option<Box<dyn AsyncWrite + Unpin + Send>>,
    /// What [`Session::write_bytes`] wrote of a line not ended yet.
    partial: Vec<u8>,
    lines: Lines<BufReader<Box<dyn tokio::io::AsyncRead + Unpin + Send>>>,
    child: Option<tokio::process::Child>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    pending: Pending,
}

impl Session {
    /// Starts the fixture's command line (`--transport stdio`) as a child process; `bin`
    /// is `env!("CARGO_BIN_EXE_fixture")` in a test of this package.
    pub async fn fixture(bin: &str) -> Self {
        Self::fixture_with(bin, &[]).await
    }

    /// [`Session::fixture`] with `args` added (`--otel ENDPOINT`, say).
    pub async fn fixture_with(bin: &str, args: &[&str]) -> Self {
        let mut all = vec!["--transport", "stdio"];
        all.extend_from_slice(args);
        let mut child = piped_child(bin, &all, Stdio::inherit());
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        Session {
            writer: Some(Box::new(stdin)),
            partial: Vec::new(),
            lines: BufReader::new(Box::new(stdout) as Box<dyn tokio::io::AsyncRead + Unpin + Send>)
                .lines(),
            child: Some(child),
            task: None,
            pending: Pending::default(),
        }
    }

    /// Serves `server` over an in-process pipe with `config`.
    pub fn in_process(server: Server, config: StdioConfig) -> Self {
        let (client_out, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, client_in) = tokio::io::duplex(1 << 20);
        Self::over(server, config, client_out, server_in, server_out, client_in)
    }

    /// Serves `server` over an in-process pipe with `config`, watching the server's
    /// reads of its input: the returned [`Reads`] tells how many reads gave bytes and
    /// whether the server has seen the end of its input, so that a test can wait for
    /// the server to have read what it wrote (split a line over two reads, say).
    pub fn in_process_watched(server: Server, config: StdioConfig) -> (Self, Reads) {
        let (client_out, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, client_in) = tokio::io::duplex(1 << 20);
        let reads = Reads::default();
        let server_in = Watched {
            inner: server_in,
            reads: reads.clone(),
        };
        let session = Self::over(server, config, client_out, server_in, server_out, client_in);
        (session, reads)
    }

    /// Serves `server` over the pipes given: the session writes `client_out` and reads
    /// `client_in`; the server reads `server_in` and writes `server_out` (a test wraps
    /// one to watch or limit it).
    pub fn over(
        server: Server,
        config: StdioConfig,
        client_out: impl AsyncWrite + Unpin + Send + 'static,
        server_in: impl tokio::io::AsyncRead + Unpin + Send + 'static,
        server_out: impl AsyncWrite + Unpin + Send + 'static,
        client_in: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    ) -> Self {
        let task =
            tokio::spawn(async move { server.serve_io(server_in, server_out, config).await });
        Session {
            writer: Some(Box::new(client_out)),
            partial: Vec::new(),
            lines: BufReader::new(
                Box::new(client_in) as Box<dyn tokio::io::AsyncRead + Unpin + Send>
            )
            .lines(),
            child: None,
            task: Some(task),
            pending: Pending::default(),
        }
    }

    /// Writes bytes a test framed by hand (several messages in one write, a line split
    /// over writes, CRLF endings, blank lines, a last line without its newline), every
    /// message in them checked as a client message once its line is whole (a last line
    /// without a newline when stdin closes). A line that is not a valid message fails
    /// the test: such bytes go through [`Session::write_raw_unchecked`].
    #[track_caller]
    pub fn write_bytes<'a>(
        &'a mut self,
        bytes: &'a [u8],
    ) -> impl std::future::Future<Output = ()> + 'a {
        self.partial.extend_from_slice(bytes);
        while let Some(end) = self.partial.iter().position(|b| *b == b'\n') {
            let whole: Vec<u8> = self.partial.drain(..=end).collect();
            check_line(self.pending.check, &whole[..end]);
        }
        self.write_raw_unchecked(bytes)
    }

    /// Writes every message of `messages` as a line, all in one write (a pipelined
    /// burst), each checked as a client message first.
    #[track_caller]
    pub fn send_all<'a>(
        &'a mut self,
        messages: &[Value],
    ) -> impl std::future::Future<Output = ()> + 'a {
        let mut bytes = Vec::new();
        for m in messages {
            self.pending.check.client_message("", m);
            bytes.extend(line(m));
        }
        async move { self.write_raw_unchecked(&bytes).await }
    }

    /// Writes raw bytes a test made invalid on purpose (not JSON, not UTF-8, not a
    /// message, over a bound), unchecked (the requests among its whole lines are noted,
    /// so that their responses are checked against their methods).
    pub async fn write_raw_unchecked(&mut self, bytes: &[u8]) {
        self.pending.sent_bytes(bytes);
        let w = self.writer.as_mut().expect("stdin is open");
        w.write_all(bytes).await.expect("write to the server");
        w.flush().await.expect("flush to the server");
    }

    /// Writes one message as a line, checked as a client message first.
    #[track_caller]
    pub fn send<'a>(
        &'a mut self,
        message: &'a Value,
    ) -> impl std::future::Future<Output = ()> + 'a {
        self.pending.check.client_message("", message);
        self.send_unchecked(message)
    }

    /// Sets how the messages of the session are checked from now on, both ways: a legacy
    /// session's against the schema of the revision it negotiated.
    pub fn checking(&mut self, check: Check) {
        self.pending.check = check;
    }

    /// Writes one message, invalid on purpose, as a line, unchecked.
    pub async fn send_unchecked(&mut self, message: &Value) {
        self.write_raw_unchecked(&line(message)).await;
    }

    /// Reads one line as JSON, checked against the server's schema definitions; `None`
    /// at end of output. Fails when nothing arrives within [`LINE_TIMEOUT`].
    pub async fn recv(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(LINE_TIMEOUT, self.lines.next_line())
            .await
            .expect("a line within the timeout")
            .expect("read from the server")?;
        Some(self.parse_line(&line))
    }

    /// Reads one line as [`Session::recv`] does, or `None` if nothing arrives within
    /// `wait` (or at end of output).
    pub async fn recv_within(&mut self, wait: Duration) -> Option<Value> {
        match tokio::time::timeout(wait, self.lines.next_line()).await {
            Ok(Ok(Some(line))) => Some(self.parse_line(&line)),
            _ => None,
        }
    }

    /// Sends a request (full `_meta`; members of `params._meta` win), checked first, and
    /// reads lines until its response, every line checked. Returns the notifications
    /// then the response.
    #[track_caller]
    pub fn call<'a>(
        &'a mut self,
        id: i64,
        method: &'a str,
        params: Value,
    ) -> impl std::future::Future<Output = Vec<Value>> + 'a {
        let message = crate::request(id, method, params);
        self.pending.check.client_message("", &message);
        async move { self.exchange_unchecked(id, method, &message).await }
    }

    /// [`Session::call`] of a request invalid on purpose: sent unchecked.
    pub async fn call_unchecked(&mut self, id: i64, method: &str, params: Value) -> Vec<Value> {
        let message = crate::request(id, method, params);
        self.exchange_unchecked(id, method, &message).await
    }

    async fn exchange_unchecked(&mut self, id: i64, method: &str, message: &Value) -> Vec<Value> {
        self.send_unchecked(message).await;
        let messages = self.until_response(&Value::from(id)).await;
        if let Check::Modern = self.pending.check {
            crate::schema::check_exchange(method, &messages);
        }
        messages
    }

    /// Reads lines, every one checked, until the response with `id`: all of them, the
    /// response last. Fails when a line does not arrive within [`LINE_TIMEOUT`].
    pub async fn until_response(&mut self, id: &Value) -> Vec<Value> {
        let mut messages = Vec::new();
        loop {
            let m = self.recv().await.expect("a response before end of output");
            let done = m.get("id") == Some(id) && m.get("method").is_none();
            messages.push(m);
            if done {
                return messages;
            }
        }
    }

    /// Closes stdin (checking a last line [`Session::write_bytes`] left without its
    /// newline).
    #[track_caller]
    pub fn close_stdin(&mut self) {
        let last = std::mem::take(&mut self.partial);
        check_line(self.pending.check, &last);
        self.writer = None;
    }

    /// Closes stdin and waits for the server to end; returns whether it ended cleanly
    /// (exit status 0 for the child, `Ok` for the in-process server).
    pub async fn finish(mut self) -> bool {
        self.close_stdin();
        if let Some(mut child) = self.child.take() {
            let status = tokio::time::timeout(crate::wait::PATIENCE, child.wait())
                .await
                .expect("the fixture exits after stdin closes")
                .expect("wait for the fixture");
            return status.success();
        }
        if let Some(task) = self.task.take() {
            return matches!(
                tokio::time::timeout(crate::wait::PATIENCE, task).await,
                Ok(Ok(Ok(())))
            );
        }
        true
    }

    /// One stdout line as JSON, checked as the server's.
    #[track_caller]
    fn parse_line(&mut self, line: &str) -> Value {
        let message = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("stdout line {line:?} is not JSON: {e}"));
        self.pending.check(&message);
        message
    }
}

/// What a watched input has given its reader (see [`Session::in_process_watched`]).
#[derive(Clone, Default)]
pub struct Reads {
    count: Arc<AtomicUsize>,
    eof: Arc<AtomicBool>,
}

impl Reads {
    /// How many reads gave bytes.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Whether a read found the end of the input.
    pub fn eof(&self) -> bool {
        self.eof.load(Ordering::SeqCst)
    }
}

/// An input that counts its reads into a [`Reads`].
struct Watched<R> {
    inner: R,
    reads: Reads,
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Watched<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let (before, room) = (buf.filled().len(), buf.remaining());
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if let std::task::Poll::Ready(Ok(())) = polled {
            if buf.filled().len() > before {
                self.reads.count.fetch_add(1, Ordering::SeqCst);
            } else if room > 0 {
                self.reads.eof.store(true, Ordering::SeqCst);
            }
        }
        polled
    }
}

/// Reads lines of a server's output outside a [`Session`] (a child started by hand, a
/// pipe a test holds), each parsed and checked as the server's.
pub struct LineReader<R> {
    lines: Lines<BufReader<R>>,
    pending: Pending,
}

impl<R: tokio::io::AsyncRead + Unpin> LineReader<R> {
    /// Reads `reader`; responses are checked against the requests noted with
    /// [`LineReader::sent`].
    pub fn new(reader: R) -> Self {
        LineReader {
            lines: BufReader::new(reader).lines(),
            pending: Pending::default(),
        }
    }

    /// Notes the requests among the whole lines of `bytes`, written by the test.
    pub fn sent(&mut self, bytes: &[u8]) {
        self.pending.sent_bytes(bytes);
    }

    /// The next line, checked; `None` at end of output. Fails after `wait`.
    pub async fn next(&mut self, wait: Duration) -> Option<Value> {
        let line = tokio::time::timeout(wait, self.lines.next_line())
            .await
            .expect("a line within the timeout")
            .expect("read from the server")?;
        Some(self.parse(&line))
    }

    /// The next line, checked, or `None` when nothing arrives within `wait` (or at end
    /// of output).
    pub async fn next_within(&mut self, wait: Duration) -> Option<Value> {
        match tokio::time::timeout(wait, self.lines.next_line()).await {
            Ok(Ok(Some(line))) => Some(self.parse(&line)),
            _ => None,
        }
    }

    /// The next line, checked, until `deadline`: `Ok(None)` at end of output, `Err(())`
    /// when the deadline passes first.
    pub async fn next_until(
        &mut self,
        deadline: tokio::time::Instant,
    ) -> Result<Option<Value>, ()> {
        match tokio::time::timeout_at(deadline, self.lines.next_line()).await {
            Ok(next) => Ok(next.expect("read from the server").map(|l| self.parse(&l))),
            Err(_) => Err(()),
        }
    }

    #[track_caller]
    fn parse(&mut self, line: &str) -> Value {
        let message = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("output line {line:?} is not JSON: {e}"));
        self.pending.check(&message);
        message
    }
}
