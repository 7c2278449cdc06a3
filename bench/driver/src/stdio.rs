//! stdio: the server as a child process on pipes. Sequential round trips (write one line,
//! read its answer), then N requests pipelined (a writer thread sends them all while the
//! reader checks every answer, in any order).

use crate::procstat;
use crate::proto;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    pub child: Child,
    pub stdin: Option<BufWriter<ChildStdin>>,
    pub stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
}

impl Server {
    pub fn spawn(argv: &[String], cpu: Option<usize>) -> Result<Server, String> {
        let mut command = Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .arg("stdio")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        procstat::pin_command(&mut command, cpu);
        let mut child = command.spawn().map_err(|e| format!("{}: {e}", argv[0]))?;
        let stdin = child
            .stdin
            .take()
            .map(|s| BufWriter::with_capacity(64 * 1024, s));
        let stdout = BufReader::with_capacity(64 * 1024, child.stdout.take().ok_or("no stdout")?);
        Ok(Server {
            child,
            stdin,
            stdout,
            line: Vec::with_capacity(1024),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// One request, written and flushed, then its answer read and checked.
    pub fn round_trip(&mut self, id: u64) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        let mut msg = proto::request(id);
        msg.push('\n');
        stdin.write_all(msg.as_bytes()).map_err(|e| e.to_string())?;
        stdin.flush().map_err(|e| e.to_string())?;
        let got = self.read_answer()?;
        if got != id {
            return Err(format!("answer to id {got}, expected {id}"));
        }
        Ok(())
    }

    fn read_answer(&mut self) -> Result<u64, String> {
        self.line.clear();
        let n = self
            .stdout
            .read_until(b'\n', &mut self.line)
            .map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("server closed stdout".into());
        }
        let line = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
        proto::check(line)
    }

    /// Closes stdin and waits up to `grace` for the server to exit, then kills it.
    /// Whether it exited on its own, successfully.
    pub fn finish(mut self, grace: Duration) -> bool {
        drop(self.stdin.take());
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        false
    }
}

pub struct Sequential {
    pub latencies_ns: Vec<u64>,
    pub elapsed: Duration,
}

/// Round trips one after another for `duration` (at most `max` of them).
pub fn sequential(server: &mut Server, duration: Duration, max: u64) -> Result<Sequential, String> {
    let start = Instant::now();
    let mut latencies = Vec::new();
    for id in 1..=max {
        let t0 = Instant::now();
        server.round_trip(id)?;
        let t1 = Instant::now();
        latencies.push((t1 - t0).as_nanos() as u64);
        if t1 - start >= duration {
            break;
        }
    }
    Ok(Sequential {
        latencies_ns: latencies,
        elapsed: start.elapsed(),
    })
}

/// Writes `n` requests without waiting, reads all `n` answers; the time from the first
/// byte written to the last answer read.
pub fn pipelined(server: &mut Server, n: u64, first_id: u64) -> Result<Duration, String> {
    let mut stdin = server.stdin.take().ok_or("stdin closed")?;
    let start = Instant::now();
    let writer = std::thread::spawn(move || -> Result<BufWriter<ChildStdin>, String> {
        let mut msg = String::with_capacity(512);
        for id in first_id..first_id + n {
            msg.clear();
            msg.push_str(&proto::request(id));
            msg.push('\n');
            stdin.write_all(msg.as_bytes()).map_err(|e| e.to_string())?;
        }
        stdin.flush().map_err(|e| e.to_string())?;
        Ok(stdin)
    });
    let mut seen = vec![false; n as usize];
    let mut result = Ok(());
    for _ in 0..n {
        match server.read_answer() {
            Ok(id) if (first_id..first_id + n).contains(&id) && !seen[(id - first_id) as usize] => {
                seen[(id - first_id) as usize] = true;
            }
            Ok(id) => {
                result = Err(format!("unexpected or repeated answer id {id}"));
                break;
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let elapsed = start.elapsed();
    if result.is_err() {
        // Unblock the writer if it is stuck on a full pipe.
        let _ = server.child.kill();
    }
    let stdin = writer.join().map_err(|_| "writer panicked".to_string())?;
    result?;
    server.stdin = Some(stdin?);
    Ok(elapsed)
}
