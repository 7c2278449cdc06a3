//! The benchmark driver. Each subcommand runs one cell against one server binary and
//! prints one JSON line; `report` turns the collected lines into the table. `bench/run`
//! is the script that calls it.
//!
//! ```text
//! bench-driver http  --name N --connections C --duration SECS --warmup SECS [--protocol V] [--auth [--first-calls N]] [--otel] [--server-cpu K] -- SERVER...
//! bench-driver http  --name N --connections C --duration SECS --warmup SECS [--protocol V] --addr HOST:PORT --pid PID
//! bench-driver stdio --name N --pipelined COUNT --sequential SECS [--server-cpu K] -- SERVER...
//! bench-driver cold  --name N --mode http|stdio --runs COUNT [--server-cpu K] -- SERVER...
//! bench-driver listen --name N --streams COUNT --duration SECS [--server-cpu K] -- SERVER...
//! bench-driver sessions --name N --sessions COUNT [--server-cpu K] -- SERVER...
//! bench-driver profile --name N --requests COUNT [--server-cpu K] -- SERVER...
//! bench-driver instructions --iterations N -- INSTRUCTIONS-BINARY
//! bench-driver size  --name N PATH
//! bench-driver report [--criterion DIR] [--svg CHART.svg] RESULTS.jsonl
//! bench-driver chart TABLE.md CHART.svg
//! ```
//!
//! `SERVER...` is the server's command line; the driver appends `http 127.0.0.1:PORT` or
//! `stdio`, pins the server to CPU K when asked (the driver itself is pinned by the
//! caller, with taskset), and checks every response: a wrong answer ends the run with an
//! error, never a number. `http --protocol 2025-11-25` loads the server as clients of
//! that revision do, each connection in a session of its own (2026-07-28, the default,
//! sends the stateless requests). `http --auth` runs a stand-in authorization server
//! (`bench-issuer`, beside the driver), starts the server with `--issuer URL` before
//! `http ADDR`, and sends an access token the issuer signed on every request; it then
//! also measures calls each with a token the server has not seen. `http --otel` runs an
//! OTLP/HTTP receiver in the driver ([`otlp::Receiver`]), starts the server with
//! `--otel URL` before `http ADDR`, and after the window checks that the server exported
//! to it. `report --svg` also
//! draws the chart of the table it prints; `chart` draws it again from a table printed
//! earlier.

mod auth;
mod chart;
mod http;
mod otlp;
mod procstat;
mod proto;
mod report;
mod stdio;

use hyper::header::HeaderValue;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Args {
    flags: HashMap<String, String>,
    rest: Vec<String>,
}

impl Args {
    fn parse(args: &[String]) -> Args {
        let mut flags = HashMap::new();
        let mut rest = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            if a == "--" {
                rest.extend(args[i + 1..].iter().cloned());
                break;
            } else if let Some(k) = a.strip_prefix("--") {
                // A flag followed by another (or by nothing) is a switch: its value is "".
                match args.get(i + 1).filter(|v| !v.starts_with("--")) {
                    Some(v) => {
                        flags.insert(k.to_owned(), v.clone());
                        i += 2;
                    }
                    None => {
                        flags.insert(k.to_owned(), String::new());
                        i += 1;
                    }
                }
            } else {
                rest.push(a.clone());
                i += 1;
            }
        }
        Args { flags, rest }
    }

    fn str(&self, k: &str) -> Result<&str, String> {
        self.flags
            .get(k)
            .map(String::as_str)
            .ok_or_else(|| format!("missing --{k}"))
    }

    fn num<T: std::str::FromStr>(&self, k: &str) -> Result<T, String> {
        self.str(k)?
            .parse()
            .map_err(|_| format!("--{k}: not a number"))
    }

    fn opt_num<T: std::str::FromStr>(&self, k: &str) -> Result<Option<T>, String> {
        match self.flags.get(k) {
            None => Ok(None),
            Some(v) if v.is_empty() || v == "none" => Ok(None),
            Some(_) => self.num(k).map(Some),
        }
    }

    fn secs(&self, k: &str) -> Result<Duration, String> {
        Ok(Duration::from_secs_f64(self.num::<f64>(k)?))
    }

    fn server(&self) -> Result<&[String], String> {
        if self.rest.is_empty() {
            Err("missing the server command after --".into())
        } else {
            Ok(&self.rest)
        }
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = argv.first() else {
        eprintln!(
            "usage: bench-driver (http|stdio|cold|listen|sessions|profile|instructions|size|report|chart) ... (see the source)"
        );
        std::process::exit(2);
    };
    let args = Args::parse(&argv[1..]);
    let result = match cmd.as_str() {
        "http" => http_cell(&args),
        "stdio" => stdio_cell(&args),
        "cold" => cold_cell(&args),
        "listen" => listen_cell(&args),
        "sessions" => sessions_cell(&args),
        "profile" => profile_cell(&args),
        "instructions" => instructions(&args),
        "size" => size(&args),
        "report" => report::run(
            &args.rest,
            args.flags.get("criterion").map(String::as_str),
            args.flags.get("svg").map(String::as_str),
        )
        .map(|()| Value::Null),
        "chart" => chart::run(&args.rest).map(|()| Value::Null),
        other => Err(format!("unknown subcommand {other}")),
    };
    match result {
        Ok(Value::Null) => {}
        Ok(v) => println!("{v}"),
        Err(e) => {
            eprintln!("bench-driver {cmd}: {e}");
            std::process::exit(1);
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn free_addr() -> Result<SocketAddr, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    l.local_addr().map_err(|e| e.to_string())
}

/// Starts `server http ADDR`, pinned to `cpu`.
fn spawn_http(server: &[String], addr: SocketAddr, cpu: Option<usize>) -> Result<Child, String> {
    let mut command = Command::new(&server[0]);
    command
        .args(&server[1..])
        .arg("http")
        .arg(addr.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    procstat::pin_command(&mut command, cpu);
    command.spawn().map_err(|e| format!("{}: {e}", server[0]))
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The `q` quantile of sorted samples, in microseconds.
fn quantile_us(sorted_ns: &[u64], q: f64) -> f64 {
    if sorted_ns.is_empty() {
        return f64::NAN;
    }
    let i = ((q * sorted_ns.len() as f64).ceil() as usize).clamp(1, sorted_ns.len()) - 1;
    sorted_ns[i] as f64 / 1000.0
}

/// The revision `--protocol` names (2026-07-28 when absent).
fn era(a: &Args) -> Result<(http::Era, &str), String> {
    match a.flags.get("protocol").map(String::as_str) {
        None | Some(proto::MODERN_VERSION) => Ok((http::Era::Modern, proto::MODERN_VERSION)),
        Some(proto::LEGACY_VERSION) => Ok((http::Era::Legacy, proto::LEGACY_VERSION)),
        Some(other) => Err(format!(
            "--protocol {other}: not {} or {}",
            proto::MODERN_VERSION,
            proto::LEGACY_VERSION
        )),
    }
}

/// Closed-loop tools/call load over C kept-alive connections: a warm-up on connections
/// of its own, then the measured window. With `--protocol 2025-11-25` each connection
/// opens its session (`initialize`, `notifications/initialized`) before its window
/// starts, and every call is that session's.
///
/// With `--auth` the server is one that requires access tokens (bench-presa-auth): the
/// driver runs a stand-in authorization server ([`auth::Issuer`]), gives the server
/// `--issuer URL`, and has it sign C tokens (each with its own `sub` and `jti`);
/// connection `i` of the warm-up and connection `i` of the window send token `i` on every
/// request, so every token was verified during the warm-up and the window sees cached
/// verdicts only. After the window, [`first_calls`] measures what a token the server has
/// not seen costs.
fn http_cell(a: &Args) -> Result<Value, String> {
    let connections: usize = a.num("connections")?;
    let duration = a.secs("duration")?;
    let warmup = a.secs("warmup")?;
    let cpu = a.opt_num::<usize>("server-cpu")?;
    let (era, protocol) = era(a)?;
    let authenticated = a.flags.contains_key("auth");
    let exporting = a.flags.contains_key("otel");
    let first_call_count = a.opt_num::<usize>("first-calls")?.unwrap_or(200);
    if authenticated && era != http::Era::Modern {
        return Err("--auth: with 2026-07-28 requests only".into());
    }
    if authenticated && connections == 0 {
        return Err("--auth: at least one connection".into());
    }
    // `--addr HOST:PORT --pid PID` loads a server started elsewhere (under a profiler).
    let mut receiver = None;
    let (addr, child, pid, mut issuer) = match a.flags.get("addr") {
        Some(_) if authenticated || exporting => {
            return Err(
                "--auth and --otel start their server themselves, to give it a URL: \
                 attach a profiler to the server they start instead"
                    .into(),
            );
        }
        Some(addr) => {
            let addr: SocketAddr = addr.parse().map_err(|_| "--addr: not HOST:PORT")?;
            (addr, None, a.num::<u32>("pid")?, None)
        }
        None => {
            let addr = free_addr()?;
            let mut server = a.server()?.to_vec();
            let issuer = if authenticated {
                // The audience is the canonical URI the server derives from its address.
                let issuer = auth::Issuer::start(&format!("http://{addr}/mcp"))?;
                server.extend(["--issuer".into(), issuer.url().to_owned()]);
                Some(issuer)
            } else {
                None
            };
            if exporting {
                let started = otlp::Receiver::start()?;
                server.extend(["--otel".into(), started.url.clone()]);
                receiver = Some(started);
            }
            let child = Killed(spawn_http(&server, addr, cpu)?);
            let pid = child.0.id();
            (addr, Some(child), pid, issuer)
        }
    };
    let tokens: Vec<HeaderValue> = match &mut issuer {
        Some(issuer) => issuer.bearers(connections)?,
        None => Vec::new(),
    };
    let rt = runtime();
    rt.block_on(async {
        http::wait_ready(addr, Duration::from_secs(20), tokens.first().cloned()).await?;
        if !warmup.is_zero() {
            http::load(addr, connections, warmup, era, &tokens).await?;
        }
        // The connections (and sessions) are open before the CPU clocks are read.
        let conns = http::connect(addr, connections, era, &tokens).await?;
        let (cpu0, self0) = (procstat::cpu_ns(pid), procstat::self_cpu_ns());
        let mut load = http::run(conns, duration).await?;
        let (cpu1, self1) = (procstat::cpu_ns(pid), procstat::self_cpu_ns());
        let rss = procstat::peak_rss_kib(pid);
        let first = match (&mut issuer, tokens.first()) {
            (Some(issuer), Some(cached)) => {
                Some(first_calls(addr, pid, issuer, cached, first_call_count).await?)
            }
            _ => None,
        };
        let exported = match &receiver {
            Some(receiver) => Some(exported(receiver).await?),
            None => None,
        };
        drop(child);
        load.latencies_ns.sort_unstable();
        let secs = load.elapsed.as_secs_f64();
        let n = load.requests as f64;
        let mut line = json!({
            "kind": "http",
            "server": a.str("name")?,
            "protocol": protocol,
            "connections": connections,
            "requests": load.requests,
            "secs": secs,
            "rps": n / secs,
            "p50_us": quantile_us(&load.latencies_ns, 0.50),
            "p99_us": quantile_us(&load.latencies_ns, 0.99),
            "server_cpu_us_per_req": (cpu1 - cpu0) as f64 / 1000.0 / n,
            "server_util": (cpu1 - cpu0) as f64 / 1e9 / secs,
            "load_util": (self1 - self0) as f64 / 1e9 / secs,
            "peak_rss_kib": rss,
        });
        if let (Value::Object(line), Some(first)) = (&mut line, first) {
            line.insert("auth".into(), true.into());
            line.extend(first);
        }
        if let (Value::Object(line), Some((exports, bytes))) = (&mut line, exported) {
            line.insert("otel".into(), true.into());
            line.insert("otlp_exports".into(), exports.into());
            line.insert("otlp_bytes".into(), bytes.into());
        }
        Ok(line)
    })
}

/// What the server exported to the cell's receiver: the exports and their bytes, once at
/// least one export has arrived (a batch may wait for the exporter's interval after the
/// window). A server that exports nothing in 30 s fails the cell: its CPU figures would
/// not be those of an exporting server.
async fn exported(receiver: &otlp::Receiver) -> Result<(u64, u64), String> {
    use std::sync::atomic::Ordering;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let exports = receiver.received.exports.load(Ordering::Relaxed);
        if exports > 0 {
            return Ok((exports, receiver.received.bytes.load(Ordering::Relaxed)));
        }
        if tokio::time::Instant::now() >= deadline {
            return Err("--otel: the server exported nothing to the receiver in 30 s".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The first call with a new token, against a call with a cached one, after the load
/// (the server idle otherwise): on one new connection, `n` sequential calls all with
/// `cached` (a token the warm-up verified), then `n` sequential calls each with a token
/// never sent before, all signed before the first of them so that signing is in neither
/// the latencies nor the server's CPU readings. Each batch: the server's CPU over it ÷
/// `n`, and its latencies (send to last body byte), every answer checked.
async fn first_calls(
    addr: SocketAddr,
    pid: u32,
    issuer: &mut auth::Issuer,
    cached: &HeaderValue,
    n: usize,
) -> Result<serde_json::Map<String, Value>, String> {
    let mut conn = http::Conn::open(addr).await?;
    conn.set_bearer(Some(cached.clone()));
    let mut id = 0u64;
    // The connection's first request is in neither batch.
    conn.call(id, None).await?;
    let mut batch = async |conn: &mut http::Conn, fresh: Option<Vec<HeaderValue>>| {
        let mut latencies = Vec::with_capacity(n);
        let mut fresh = fresh.map(Vec::into_iter);
        let cpu0 = procstat::cpu_ns(pid);
        for _ in 0..n {
            if let Some(token) = fresh.as_mut().and_then(Iterator::next) {
                conn.set_bearer(Some(token));
            }
            id += 1;
            let t0 = Instant::now();
            conn.call(id, None).await?;
            latencies.push(t0.elapsed().as_nanos() as u64);
        }
        let cpu = procstat::cpu_ns(pid) - cpu0;
        latencies.sort_unstable();
        Ok::<_, String>((cpu as f64 / 1000.0 / n.max(1) as f64, latencies))
    };
    let (cached_cpu, cached_ns) = batch(&mut conn, None).await?;
    let fresh = issuer.bearers(n)?;
    let (first_cpu, first_ns) = batch(&mut conn, Some(fresh)).await?;
    let mut out = serde_json::Map::new();
    for (k, v) in [
        ("first_calls", n as f64),
        ("first_call_cpu_us", first_cpu),
        ("first_call_p50_us", quantile_us(&first_ns, 0.50)),
        ("first_call_p99_us", quantile_us(&first_ns, 0.99)),
        ("cached_call_cpu_us", cached_cpu),
        ("cached_call_p50_us", quantile_us(&cached_ns, 0.50)),
        ("cached_call_p99_us", quantile_us(&cached_ns, 0.99)),
    ] {
        out.insert(k.into(), json!(v));
    }
    Ok(out)
}

fn stdio_cell(a: &Args) -> Result<Value, String> {
    let server = a.server()?;
    let n: u64 = a.num("pipelined")?;
    let seq_for = a.secs("sequential")?;
    let cpu = a.opt_num::<usize>("server-cpu")?;
    let mut s = stdio::Server::spawn(server, cpu)?;
    let pid = s.pid();
    let run = (|| {
        s.round_trip(0)?; // started
        let mut seq = stdio::sequential(&mut s, seq_for, 1_000_000)?;
        seq.latencies_ns.sort_unstable();
        let cpu0 = procstat::cpu_ns(pid);
        let elapsed = stdio::pipelined(&mut s, n, 10_000_000)?;
        let cpu1 = procstat::cpu_ns(pid);
        let rss = procstat::peak_rss_kib(pid);
        let secs = elapsed.as_secs_f64();
        Ok::<_, String>(json!({
            "kind": "stdio",
            "server": a.str("name")?,
            "pipelined": n,
            "secs": secs,
            "rps": n as f64 / secs,
            "server_cpu_us_per_req": (cpu1 - cpu0) as f64 / 1000.0 / n as f64,
            "peak_rss_kib": rss,
            "seq_requests": seq.latencies_ns.len(),
            "seq_rps": seq.latencies_ns.len() as f64 / seq.elapsed.as_secs_f64(),
            "seq_p50_us": quantile_us(&seq.latencies_ns, 0.50),
            "seq_p99_us": quantile_us(&seq.latencies_ns, 0.99),
        }))
    })();
    if run.is_err() {
        let _ = s.child.kill();
    }
    s.finish(Duration::from_secs(10));
    run
}

fn cold_cell(a: &Args) -> Result<Value, String> {
    let server = a.server()?;
    let runs: usize = a.num("runs")?;
    let cpu = a.opt_num::<usize>("server-cpu")?;
    let mode = a.str("mode")?;
    let mut ms = Vec::with_capacity(runs);
    let rt = runtime();
    for _ in 0..runs {
        let t = match mode {
            "stdio" => {
                let start = Instant::now();
                let mut s = stdio::Server::spawn(server, cpu)?;
                let r = s.round_trip(1);
                let t = start.elapsed();
                if r.is_err() {
                    let _ = s.child.kill();
                }
                s.finish(Duration::from_secs(10));
                r?;
                t
            }
            "http" => {
                let addr = free_addr()?;
                let start = Instant::now();
                let child = Killed(spawn_http(server, addr, cpu)?);
                rt.block_on(http::wait_ready(addr, Duration::from_secs(20), None))?;
                let t = start.elapsed();
                drop(child);
                t
            }
            other => return Err(format!("unknown mode {other}")),
        };
        ms.push(t.as_secs_f64() * 1000.0);
    }
    ms.sort_by(f64::total_cmp);
    Ok(json!({
        "kind": "cold",
        "server": a.str("name")?,
        "mode": mode,
        "runs": runs,
        "median_ms": ms[ms.len() / 2],
        "min_ms": ms[0],
    }))
}

/// Current resident set size of `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Memory per open `subscriptions/listen` stream: RSS with COUNT streams open minus RSS
/// before, over COUNT; then tools/call throughput (32 connections) with them still open.
/// The server gets `COUNT` as its stream cap (a third argument after `http ADDR`).
fn listen_cell(a: &Args) -> Result<Value, String> {
    let server = a.server()?;
    let streams: usize = a.num("streams")?;
    let duration = a.secs("duration")?;
    let cpu = a.opt_num::<usize>("server-cpu")?;
    let addr = free_addr()?;
    let mut argv = server.to_vec();
    argv.push("http".into());
    argv.push(addr.to_string());
    argv.push(streams.to_string());
    let mut command = Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    procstat::pin_command(&mut command, cpu);
    let child = Killed(command.spawn().map_err(|e| format!("{}: {e}", argv[0]))?);
    let pid = child.0.id();
    runtime().block_on(async {
        http::wait_ready(addr, Duration::from_secs(20), None).await?;
        // Settle the allocator and the connection paths first.
        http::load(addr, 32, Duration::from_millis(300), http::Era::Modern, &[]).await?;
        let before = rss_kib(pid);
        let mut open = Vec::with_capacity(streams);
        for i in 0..streams {
            open.push(http::listen(addr, 1_000_000 + i as u64).await?);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let after = rss_kib(pid);
        let load = http::load(addr, 32, duration, http::Era::Modern, &[]).await?;
        let still = rss_kib(pid);
        drop(open);
        drop(child);
        Ok(json!({
            "kind": "listen",
            "server": a.str("name")?,
            "streams": streams,
            "rss_before_kib": before,
            "rss_open_kib": after,
            "rss_after_load_kib": still,
            "kib_per_stream": (after as f64 - before as f64) / streams as f64,
            "rps_with_streams_open": load.requests as f64 / load.elapsed.as_secs_f64(),
        }))
    })
}

/// Memory per idle 2025-11-25 session. The server runs `serve_http` as in every other
/// HTTP cell (the default `HttpConfig`, whose cap is 1,000 sessions: COUNT may be up to
/// that). Everything goes through one kept-alive connection, open throughout, so what it
/// holds on the server is in every reading. Warm-up: sessions opened, called in (and
/// 2026-07-28 calls between), and ended with DELETE, so the session table's one-time
/// costs (its map, its reaper task) are paid and no session is left. Then RSS; then
/// COUNT sessions opened one after another (`initialize`, `notifications/initialized`)
/// and left idle; RSS again: the difference over COUNT is a session's memory. Last, one
/// checked tools/call in every session (each is still live) and RSS once more.
fn sessions_cell(a: &Args) -> Result<Value, String> {
    const WARMUP_SESSIONS: u64 = 8;
    const WARMUP_CALLS: u64 = 500;
    let server = a.server()?;
    let count: usize = a.num("sessions")?;
    let cpu = a.opt_num::<usize>("server-cpu")?;
    let addr = free_addr()?;
    let child = Killed(spawn_http(server, addr, cpu)?);
    let pid = child.0.id();
    runtime().block_on(async {
        http::wait_ready(addr, Duration::from_secs(20), None).await?;
        let mut conn = http::Conn::open(addr).await?;
        let mut id = 1u64;
        let mut next = || {
            id += 1;
            id
        };
        for _ in 0..WARMUP_SESSIONS {
            let session = conn.initialize(next()).await?;
            for _ in 0..WARMUP_CALLS {
                conn.call(next(), Some(&session)).await?;
                conn.call(next(), None).await?;
            }
            conn.delete(&session).await?;
        }
        let before = rss_kib(pid);
        let start = Instant::now();
        let mut open = Vec::with_capacity(count);
        for _ in 0..count {
            open.push(conn.initialize(next()).await?);
        }
        let opening = start.elapsed();
        let idle = rss_kib(pid);
        for session in &open {
            conn.call(next(), Some(session)).await?;
        }
        let called = rss_kib(pid);
        drop(child);
        let per = |kib: u64| (kib as f64 - before as f64) / count as f64;
        Ok(json!({
            "kind": "sessions",
            "server": a.str("name")?,
            "protocol": proto::LEGACY_VERSION,
            "sessions": count,
            "rss_before_kib": before,
            "rss_idle_kib": idle,
            "rss_called_kib": called,
            "kib_sessions": idle as f64 - before as f64,
            "kib_per_session": per(idle),
            "kib_per_session_called": per(called),
            "open_us_per_session": opening.as_secs_f64() * 1e6 / count as f64,
        }))
    })
}

/// What cachegrind counts for one whole run of a server.
struct Counts {
    instructions: f64,
    i1_misses: f64,
    d1_misses: f64,
    mispredicts: f64,
}

/// Instructions, simulated L1 cache misses and branch mispredictions per pipelined
/// stdio call, counted by cachegrind with the server fed N and then 5 N requests over
/// pipes (every answer checked); the difference is divided by 4 N, so start-up and
/// shutdown cancel out. The counts hardly move with the machine's noise (instructions
/// within 0.03 % between runs; L1d misses move with scheduling). Counts of a simulated
/// machine: how much each costs in time is not in them (on the development machine a
/// 37 % cut in L1i misses moved CPU per call by 2 %; book/src/performance.md).
fn profile_cell(a: &Args) -> Result<Value, String> {
    let server = a.server()?;
    let n: u64 = a.num("requests")?;
    let cpu = a.opt_num::<usize>("server-cpu")?;
    let run = |requests: u64| -> Result<Counts, String> {
        let base = std::env::temp_dir().join(format!(
            "bench-cachegrind-{}-{requests}",
            std::process::id()
        ));
        let (log, out) = (base.with_extension("log"), base.with_extension("out"));
        let mut argv: Vec<String> = [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=yes",
            "--branch-sim=yes",
        ]
        .map(String::from)
        .into();
        argv.push(format!("--cachegrind-out-file={}", out.display()));
        argv.push(format!("--log-file={}", log.display()));
        argv.extend(server.iter().cloned());
        let mut s = stdio::Server::spawn(&argv, cpu)?;
        let piped = stdio::pipelined(&mut s, requests, 1);
        if piped.is_err() {
            let _ = s.child.kill();
        }
        let exited = s.finish(Duration::from_secs(300));
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        let counts = std::fs::read_to_string(&out);
        let _ = std::fs::remove_file(&log);
        let _ = std::fs::remove_file(&out);
        piped.map_err(|e| format!("{e}; valgrind said:\n{said}"))?;
        if !exited {
            return Err(format!(
                "the server did not exit cleanly under valgrind:\n{said}"
            ));
        }
        let counts = counts.map_err(|e| format!("{}: {e}\n{said}", out.display()))?;
        // The output file's `events:` line names the counters and its `summary:` line
        // gives their totals, in that order: a machine format, unlike the log's summary,
        // whose labels changed in valgrind 3.21.
        let line = |prefix: &str| {
            counts
                .lines()
                .find_map(|l| l.strip_prefix(prefix))
                .ok_or_else(|| format!("no '{prefix}' line in {}", out.display()))
        };
        let events: Vec<&str> = line("events:")?.split_whitespace().collect();
        let totals: Vec<f64> = line("summary:")?
            .split_whitespace()
            .map(|v| v.parse::<f64>().map_err(|e| format!("summary: {v}: {e}")))
            .collect::<Result<_, _>>()?;
        let total = |names: &[&str]| -> Result<f64, String> {
            names.iter().try_fold(0.0, |sum, name| {
                let i = events
                    .iter()
                    .position(|e| e == name)
                    .ok_or_else(|| format!("cachegrind counted no {name}"))?;
                totals
                    .get(i)
                    .map(|v| sum + v)
                    .ok_or_else(|| format!("no total for {name}"))
            })
        };
        Ok(Counts {
            instructions: total(&["Ir"])?,
            i1_misses: total(&["I1mr"])?,
            d1_misses: total(&["D1mr", "D1mw"])?,
            mispredicts: total(&["Bcm", "Bim"])?,
        })
    };
    let small = run(n)?;
    let large = run(5 * n)?;
    let per = |f: fn(&Counts) -> f64| (f(&large) - f(&small)) / (4 * n) as f64;
    Ok(json!({
        "kind": "profile",
        "server": a.str("name")?,
        "requests": n,
        "instructions": per(|c| c.instructions),
        "i1_misses": per(|c| c.i1_misses),
        "d1_misses": per(|c| c.d1_misses),
        "mispredicts": per(|c| c.mispredicts),
    }))
}

/// Instructions per request of every case of the micro crate's `instructions` binary,
/// counted by callgrind: each case runs with N and with 10 N iterations, and the
/// difference is divided by 9 N, so setup cancels out. One JSON line per case.
fn instructions(a: &Args) -> Result<Value, String> {
    let bin = a.server()?;
    let n: u64 = a.num("iterations")?;
    let list = Command::new(&bin[0])
        .arg("list")
        .output()
        .map_err(|e| format!("{}: {e}", bin[0]))?;
    let count = |case: &str, iterations: u64| -> Result<f64, String> {
        let out = Command::new("valgrind")
            .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
            .arg(&bin[0])
            .arg(case)
            .arg(iterations.to_string())
            .output()
            .map_err(|e| format!("valgrind: {e}"))?;
        let text = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            return Err(format!("{case}: {text}"));
        }
        text.lines()
            .find_map(|l| l.split("Collected :").nth(1))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .ok_or_else(|| format!("{case}: no instruction count in {text}"))
    };
    for case in String::from_utf8_lossy(&list.stdout).lines() {
        let small = count(case, n)?;
        let large = count(case, 10 * n)?;
        println!(
            "{}",
            json!({
                "kind": "instructions",
                "server": "presa",
                "case": case,
                "per_request": (large - small) / (9 * n) as f64,
            })
        );
    }
    Ok(Value::Null)
}

fn size(a: &Args) -> Result<Value, String> {
    let path = a.rest.first().ok_or("missing the binary's path")?;
    let bytes = std::fs::metadata(path)
        .map_err(|e| format!("{path}: {e}"))?
        .len();
    let stripped_path = std::env::temp_dir().join(format!("bench-size-{}", std::process::id()));
    let stripped = Command::new("strip")
        .arg("-o")
        .arg(&stripped_path)
        .arg(path)
        .status()
        .ok()
        .filter(|s| s.success())
        .and_then(|_| std::fs::metadata(&stripped_path).ok())
        .map(|m| m.len());
    let _ = std::fs::remove_file(&stripped_path);
    Ok(json!({
        "kind": "size",
        "server": a.str("name")?,
        "bytes": bytes,
        "stripped_bytes": stripped,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Args {
        Args::parse(&args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>())
    }

    /// A flag followed by another flag, by `--` or by nothing is a switch: it takes no
    /// value, and what follows it keeps its meaning.
    #[test]
    fn a_flag_without_a_value_is_a_switch() {
        let a = parse(&[
            "--connections",
            "32",
            "--auth",
            "--",
            "server",
            "--issuer",
            "x",
        ]);
        assert_eq!(a.flags.get("auth").map(String::as_str), Some(""));
        assert_eq!(a.num::<usize>("connections"), Ok(32));
        assert_eq!(
            a.server(),
            Ok(&["server", "--issuer", "x"].map(String::from)[..])
        );
        let a = parse(&["--auth", "--first-calls", "20", "--warmup"]);
        assert!(a.flags.contains_key("auth"));
        assert_eq!(a.num::<usize>("first-calls"), Ok(20));
        assert_eq!(a.opt_num::<f64>("warmup"), Ok(None));
        assert!(!parse(&["--connections", "1"]).flags.contains_key("auth"));
    }
}
