//! How serving over Streamable HTTP stops on SIGTERM, in a real process
//! (`src/bin/http_stop.rs`): requests in flight finish within the drain deadline, what
//! still runs at the deadline is cancelled, listen streams end gracefully, the process
//! exits 0; and with `stop_on_signals(false)` presa leaves the signal alone.

use crate::subscriptions::listen_params;
use presa_tests::http::Http;
use presa_tests::request;
use presa_tests::sse::Next;
use presa_tests::wait::{PATIENCE, until_async, within};
use serde_json::{Value, json};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How much later than asked a process may exit: the drain's deadline, then the
/// runtime's end and the exit, on a loaded machine.
const LATE: Duration = Duration::from_secs(1);

/// A running `http_stop` and what it wrote on stderr so far.
struct Stopper {
    child: Child,
    http: Http,
    stderr: Arc<Mutex<Vec<String>>>,
    /// Ends once stderr is read to its end.
    stderr_read: Option<tokio::task::JoinHandle<()>>,
}

impl Stopper {
    async fn start(args: &[&str]) -> Stopper {
        let mut child = Command::new(env!("CARGO_BIN_EXE_http_stop"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("http_stop starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut lines = BufReader::new(stdout).lines();
        let ready = within("the ready line", lines.next_line())
            .await
            .expect("reads stdout")
            .expect("a ready line");
        let ready: Value = serde_json::from_str(&ready).expect("the ready line is JSON");
        let url = ready["url"].as_str().expect("a url").to_owned();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&stderr);
        let err = child.stderr.take().expect("stderr is piped");
        let stderr_read = tokio::spawn(async move {
            let mut lines = BufReader::new(err).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                seen.lock().expect("stderr lock").push(line);
            }
        });
        Stopper {
            child,
            http: Http::at(&url),
            stderr,
            stderr_read: Some(stderr_read),
        }
    }

    fn said(&self, line: &str) -> bool {
        self.stderr
            .lock()
            .expect("stderr lock")
            .iter()
            .any(|l| l == line)
    }

    async fn until_said(&self, line: &str) {
        until_async(&format!("http_stop says {line:?}"), || async {
            self.said(line).then_some(())
        })
        .await;
    }

    fn signal(&self, name: &str) {
        let pid = self.child.id().expect("the process runs");
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), &pid.to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{name} {pid}");
    }

    /// Waits for the process to exit, at most `wait`, and for what it wrote on stderr.
    async fn exit_within(&mut self, wait: Duration) -> ExitStatus {
        let status = tokio::time::timeout(wait, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("http_stop still runs {wait:?} later"))
            .expect("waits for http_stop");
        if let Some(read) = self.stderr_read.take() {
            within("stderr's end", read).await.expect("stderr is read");
        }
        status
    }
}

fn call(id: i64, tool: &str) -> Value {
    request(id, "tools/call", json!({"name": tool}))
}

/// A request in flight when SIGTERM arrives is answered; meanwhile no new connection is
/// taken, and the process exits 0 once it is done.
#[tokio::test]
async fn sigterm_lets_a_request_in_flight_finish() {
    let mut s = Stopper::start(&["--grace", "5000"]).await;
    let http = s.http.clone();
    let slow =
        tokio::spawn(async move { http.call(1, "tools/call", json!({"name": "slow"})).await });
    s.until_said("slow began").await;
    s.signal("TERM");
    let addr = s.http.base.trim_start_matches("http://").to_owned();
    until_async("the listener is closed", || {
        let addr = addr.clone();
        async move {
            tokio::net::TcpStream::connect(&addr)
                .await
                .is_err()
                .then_some(())
        }
    })
    .await;
    let answer = within("the slow answer", slow)
        .await
        .expect("the call task ends");
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(
        answer.response()["result"]["content"][0]["text"],
        "slow done"
    );
    let status = s.exit_within(LATE + Duration::from_secs(1)).await;
    assert!(status.success(), "{status:?}");
    assert!(s.said("serving ended"));
}

/// A handler still running at the drain deadline is cancelled (its future dropped), its
/// client's connection closes without an answer, and the process exits 0 within the
/// deadline plus a second.
#[tokio::test]
async fn sigterm_cancels_what_outlives_the_grace() {
    let grace = Duration::from_millis(1000);
    let mut s = Stopper::start(&["--grace", "1000"]).await;
    let http = s.http.clone();
    let forever = tokio::spawn(async move { http.post_unchecked(&call(1, "forever"), &[]).await });
    s.until_said("forever began").await;
    let signalled = Instant::now();
    s.signal("TERM");
    let status = s.exit_within(grace + LATE + PATIENCE).await;
    let took = signalled.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(
        took + Duration::from_millis(100) >= grace,
        "exited after {took:?}"
    );
    assert!(took <= grace + LATE, "exited only after {took:?}");
    assert!(s.said("forever was cancelled"), "{:?}", s.stderr);
    let unanswered = within("the call ends", forever).await;
    assert!(unanswered.is_err(), "no answer reached the client");
}

/// An open listen stream ends with the graceful listen result on SIGTERM, and the
/// process exits 0 without waiting out the drain deadline.
#[tokio::test]
async fn sigterm_ends_listen_streams_gracefully() {
    let mut s = Stopper::start(&["--grace", "10000"]).await;
    let id = json!("stopping");
    let message = request(
        id.clone(),
        "subscriptions/listen",
        listen_params(json!({"toolsListChanged": true})),
    );
    let mut sse = s.http.open(&message, &[]).await;
    assert_eq!(sse.status, 200);
    let ack = sse.next(PATIENCE).await.msg("the acknowledgement");
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    let signalled = Instant::now();
    s.signal("TERM");
    let end = loop {
        let m = sse.next(PATIENCE).await.msg("the graceful end");
        if m.get("method").is_none() {
            break m;
        }
    };
    assert_eq!(end["id"], id, "{end}");
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert!(matches!(sse.next(PATIENCE).await, Next::End));
    let status = s.exit_within(LATE + PATIENCE).await;
    assert!(status.success(), "{status:?}");
    assert!(
        signalled.elapsed() < LATE + Duration::from_secs(1),
        "exited {:?} after the signal: the drain did not wait for the ended stream",
        signalled.elapsed()
    );
}

/// With `stop_on_signals(false)` presa installs no handler: SIGTERM takes its default
/// action, which ends the process by the signal.
#[tokio::test]
async fn without_stop_on_signals_sigterm_is_left_alone() {
    use std::os::unix::process::ExitStatusExt;
    let mut s = Stopper::start(&["--no-signals"]).await;
    let reply = s.http.call(1, "tools/call", json!({"name": "slow"})).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    s.signal("TERM");
    let status = s.exit_within(PATIENCE).await;
    assert_eq!(status.signal(), Some(15), "{status:?}");
    assert!(!s.said("serving ended"));
}
