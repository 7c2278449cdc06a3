//! A stdio harness: the fixture binary as a child process (`--transport stdio`), or any
//! server over an in-process pipe through [`presa::Server::serve_io`]. Both write lines
//! and read lines, as a real client does.

use presa::{Server, StdioConfig};
use serde_json::Value;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader, Lines};

/// How long a test waits for one line before failing.
pub const LINE_TIMEOUT: Duration = Duration::from_secs(10);

/// A message serialized as one line of stdio input.
pub fn line(message: &Value) -> Vec<u8> {
    let mut l = message.to_string().into_bytes();
    l.push(b'\n');
    l
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

/// One stdio session.
pub struct Session {
    writer: Option<Box<dyn AsyncWrite + Unpin + Send>>,
    lines: Lines<BufReader<Box<dyn tokio::io::AsyncRead + Unpin + Send>>>,
    child: Option<tokio::process::Child>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Session {
    /// Starts the fixture's command line (`--transport stdio`) as a child process; `bin`
    /// is `env!("CARGO_BIN_EXE_fixture")` in a test of this package.
    pub async fn fixture(bin: &str) -> Self {
        let mut child = piped_child(bin, &["--transport", "stdio"], Stdio::inherit());
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        Session {
            writer: Some(Box::new(stdin)),
            lines: BufReader::new(Box::new(stdout) as Box<dyn tokio::io::AsyncRead + Unpin + Send>)
                .lines(),
            child: Some(child),
            task: None,
        }
    }

    /// Serves `server` over an in-process pipe with `config`.
    pub fn in_process(server: Server, config: StdioConfig) -> Self {
        let (client_out, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, client_in) = tokio::io::duplex(1 << 20);
        let task =
            tokio::spawn(async move { server.serve_io(server_in, server_out, config).await });
        Session {
            writer: Some(Box::new(client_out)),
            lines: BufReader::new(
                Box::new(client_in) as Box<dyn tokio::io::AsyncRead + Unpin + Send>
            )
            .lines(),
            child: None,
            task: Some(task),
        }
    }

    /// Writes raw bytes.
    pub async fn write_raw(&mut self, bytes: &[u8]) {
        let w = self.writer.as_mut().expect("stdin is open");
        w.write_all(bytes).await.expect("write to the server");
        w.flush().await.expect("flush to the server");
    }

    /// Writes one message as a line.
    pub async fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.write_raw(line.as_bytes()).await;
    }

    /// Reads one line as JSON, checked against the official schema as any server
    /// message ([`crate::schema::check_message`]); `None` at end of output.
    pub async fn recv(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(LINE_TIMEOUT, self.lines.next_line())
            .await
            .expect("a line within the timeout")
            .expect("read from the server")?;
        Some(parse_line(&line))
    }

    /// Reads one line as [`Session::recv`] does, or `None` if nothing arrives within
    /// `wait`.
    pub async fn recv_within(&mut self, wait: Duration) -> Option<Value> {
        match tokio::time::timeout(wait, self.lines.next_line()).await {
            Ok(Ok(Some(line))) => Some(parse_line(&line)),
            _ => None,
        }
    }

    /// Sends a request and reads lines until its response, checking every line against
    /// the official schema. Returns the notifications then the response.
    pub async fn call(&mut self, id: i64, method: &str, params: Value) -> Vec<Value> {
        self.send(&crate::request(id, method, params)).await;
        let mut messages = Vec::new();
        loop {
            let m = self.recv().await.expect("a response before end of output");
            let done = m.get("id") == Some(&Value::from(id));
            messages.push(m);
            if done {
                break;
            }
        }
        crate::schema::check_exchange(method, &messages);
        messages
    }

    /// Closes stdin.
    pub fn close_stdin(&mut self) {
        self.writer = None;
    }

    /// Closes stdin and waits for the server to end; returns whether it ended cleanly
    /// (exit status 0 for the child, `Ok` for the in-process server).
    pub async fn finish(mut self) -> bool {
        self.close_stdin();
        if let Some(mut child) = self.child.take() {
            let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
                .await
                .expect("the fixture exits after stdin closes")
                .expect("wait for the fixture");
            return status.success();
        }
        if let Some(task) = self.task.take() {
            return matches!(
                tokio::time::timeout(Duration::from_secs(10), task).await,
                Ok(Ok(Ok(())))
            );
        }
        true
    }
}

/// One stdout line as JSON, checked against the official schema as any server message.
#[track_caller]
fn parse_line(line: &str) -> Value {
    let message = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("stdout line {line:?} is not JSON: {e}"));
    crate::schema::check_message(&message);
    message
}
