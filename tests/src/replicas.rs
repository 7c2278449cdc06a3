//! Replicas of the fixture over Streamable HTTP for the multi-replica tests: each the
//! fixture's binary as a child process on a loopback port of its own, started with the
//! same arguments and environment, killable one by one (SIGKILL, as a crash) and
//! restartable on the same port (so a balancer in front of them finds it again). Each is
//! killed when the [`Replicas`] is dropped. What each writes on stderr goes to a file of
//! its own ([`Replicas::stderr`]), kept across a restart.

use std::net::SocketAddr;
use std::process::Stdio;
use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};

/// Replicas of one fixture binary, all started with the same arguments and environment.
pub struct Replicas {
    bin: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    replicas: Vec<Replica>,
    /// Holds each replica's stderr (`replica-<i>.log`); removed on drop.
    logs: tempfile::TempDir,
}

/// One replica: its port, and its process while it runs.
struct Replica {
    port: u16,
    child: Option<Child>,
}

impl Replicas {
    /// Starts `n` replicas of `bin` (`env!("CARGO_BIN_EXE_fixture")`) over HTTP with
    /// `args` added (`--tasks-store URL`, say) and `env` set, each on a free loopback
    /// port, and waits until each one serves (has printed its ready line).
    pub async fn start(bin: &str, n: usize, args: &[&str], env: &[(&str, &str)]) -> Replicas {
        let mut replicas = Replicas {
            bin: bin.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            replicas: Vec::new(),
            logs: tempfile::Builder::new()
                .prefix("presa-replicas-")
                .tempdir()
                .expect("a temporary folder"),
        };
        for i in 0..n {
            // A port found free may be taken before the replica binds it: a few tries.
            let mut last = String::new();
            let started = loop {
                let port = crate::free_port();
                match replicas.spawn(i, port).await {
                    Ok(child) => break Some((port, child)),
                    Err(why) if last.is_empty() => last = why,
                    Err(why) => panic!("a replica did not start: {last}\nthen: {why}"),
                }
            };
            if let Some((port, child)) = started {
                replicas.replicas.push(Replica {
                    port,
                    child: Some(child),
                });
            }
        }
        replicas
    }

    /// How many replicas there are (running or not).
    pub fn len(&self) -> usize {
        self.replicas.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.replicas.is_empty()
    }

    /// The address of each replica, in order (for the balancer's configuration).
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.replicas
            .iter()
            .map(|r| SocketAddr::from(([127, 0, 0, 1], r.port)))
            .collect()
    }

    /// The MCP endpoint of replica `i`, to reach it directly.
    pub fn url(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}/mcp", self.replicas[i].port)
    }

    /// Whether replica `i` is running (not killed, not exited).
    pub fn running(&mut self, i: usize) -> bool {
        self.replicas[i]
            .child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Kills replica `i` with SIGKILL (no shutdown of its own, as a crash) and waits
    /// until it has exited.
    pub async fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.replicas[i].child.take() {
            let _ = child.start_kill();
            let _ = crate::wait::within("the killed replica exits", child.wait()).await;
        }
    }

    /// Starts replica `i` again on its port (after [`Replicas::kill`]), with the same
    /// arguments and environment, and waits until it serves. Panics when it does not.
    pub async fn restart(&mut self, i: usize) {
        self.kill(i).await;
        let port = self.replicas[i].port;
        let child = self
            .spawn(i, port)
            .await
            .unwrap_or_else(|why| panic!("replica {i} did not start again: {why}"));
        self.replicas[i].child = Some(child);
    }

    /// What replica `i` has written on stderr so far, over every start of it.
    pub fn stderr(&self, i: usize) -> String {
        std::fs::read_to_string(self.log(i)).unwrap_or_default()
    }

    fn log(&self, i: usize) -> std::path::PathBuf {
        self.logs.path().join(format!("replica-{i}.log"))
    }

    /// Starts the binary as replica `i` on `port` and waits for its ready line; why not,
    /// when it exits without one.
    async fn spawn(&self, i: usize, port: u16) -> Result<Child, String> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log(i))
            .expect("a replica's log opens");
        let mut child = Command::new(&self.bin)
            .args(["--transport", "http", "--port", &port.to_string()])
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env_remove("MCP_PORT")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("{} starts: {e}", self.bin));
        let stdout = child.stdout.take().expect("piped");
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let ready = crate::wait::within("a replica's ready line", lines.next_line()).await;
        match ready {
            Ok(Some(line)) => {
                let ready: serde_json::Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("the ready line is JSON ({e}): {line}"));
                assert_eq!(ready["conformanceReady"], true, "{ready}");
                Ok(child)
            }
            _ => {
                let status = crate::wait::within("the replica exits", child.wait()).await;
                Err(format!(
                    "exited without serving: {status:?}; its stderr: {}",
                    self.stderr(i)
                ))
            }
        }
    }
}
