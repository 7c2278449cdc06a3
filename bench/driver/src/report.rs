//! The table: medians over the repeats of each cell, ratios to bare (and presa to rmcp),
//! the targets checked against those ratios, presa's legacy-session and
//! authenticated cells beside its own c=32 cell, the task stores side by side, the
//! fan-out's publish-to-delivery latency across replicas, and the criterion results;
//! and, when asked, the chart of that table beside it (`chart.rs`).

use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

const SERVERS: [&str; 3] = ["bare", "presa", "rmcp"];

/// The median of `v`; `None` when it is empty.
fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        None
    } else if n % 2 == 1 {
        Some(v[n / 2])
    } else {
        Some((v[n / 2 - 1] + v[n / 2]) / 2.0)
    }
}

/// Every sample of every metric: (cell, server, metric) -> values over the repeats.
#[derive(Default)]
struct Samples(BTreeMap<(String, String, String), Vec<f64>>);

impl Samples {
    fn get(&self, cell: &str, server: &str, metric: &str) -> Option<&Vec<f64>> {
        self.0
            .get(&(cell.to_owned(), server.to_owned(), metric.to_owned()))
    }

    fn median(&self, cell: &str, server: &str, metric: &str) -> Option<f64> {
        median(self.get(cell, server, metric)?.clone())
    }

    /// The median over the repeats of each repeat's own ratio of a metric of `cell` to
    /// the same metric of `base` (the two cells run back to back in every repeat, so a
    /// repeat's ratio is of two runs under the same load on the machine). The samples
    /// pair by their order in the results; when the counts differ (results of runs
    /// without one of the cells), the ratio of the medians.
    fn paired_ratio(&self, cell: &str, base: &str, server: &str, metric: &str) -> Option<f64> {
        self.paired((cell, server, metric), (base, server, metric))
    }

    /// [`Samples::paired_ratio`] of any two series, each named by (cell, server,
    /// metric): another server's cell of the same repeat, or another metric of the same
    /// runs.
    fn paired(&self, of: (&str, &str, &str), to: (&str, &str, &str)) -> Option<f64> {
        let (a, b) = (self.get(of.0, of.1, of.2)?, self.get(to.0, to.1, to.2)?);
        if a.len() != b.len() {
            return ratio(self.median(of.0, of.1, of.2), self.median(to.0, to.1, to.2));
        }
        median(
            a.iter()
                .zip(b)
                .filter(|(_, b)| **b != 0.0)
                .map(|(a, b)| a / b)
                .collect(),
        )
    }

    fn count(&self, cell: &str, server: &str, metric: &str) -> usize {
        self.0
            .get(&(cell.to_owned(), server.to_owned(), metric.to_owned()))
            .map_or(0, Vec::len)
    }
}

fn cell_of(v: &Value) -> Option<String> {
    Some(match v["kind"].as_str()? {
        // The authenticated cell never joins an unauthenticated one, whatever its name.
        "http" if v["auth"] == true => format!("http auth c={}", v["connections"].as_u64()?),
        // So does the exporting one: its twin without export is the same server's "http".
        "http" if v["otel"] == true => format!("http otel c={}", v["connections"].as_u64()?),
        // Lines of runs before the legacy cell have no protocol: 2026-07-28.
        "http" => match v["protocol"].as_str() {
            Some(p) if p != crate::proto::MODERN_VERSION => {
                format!("http {p} c={}", v["connections"].as_u64()?)
            }
            _ => format!("http c={}", v["connections"].as_u64()?),
        },
        "cold" => format!("cold {}", v["mode"].as_str()?),
        "instructions" => format!("instructions {}", v["case"].as_str()?),
        k => k.to_owned(),
    })
}

struct Row {
    label: &'static str,
    cell: &'static str,
    metric: &'static str,
    /// Multiplies the stored value for display (KiB to MiB, …).
    scale: f64,
    decimals: usize,
}

const fn row(
    label: &'static str,
    cell: &'static str,
    metric: &'static str,
    scale: f64,
    decimals: usize,
) -> Row {
    Row {
        label,
        cell,
        metric,
        scale,
        decimals,
    }
}

const MIB_PER_KIB: f64 = 1.0 / 1024.0;
const MIB_PER_B: f64 = 1.0 / 1048576.0;

const ROWS: &[Row] = &[
    row(
        "HTTP tools/call throughput, c=1 (req/s)",
        "http c=1",
        "rps",
        1.0,
        0,
    ),
    row("HTTP latency p50, c=1 (µs)", "http c=1", "p50_us", 1.0, 1),
    row("HTTP latency p99, c=1 (µs)", "http c=1", "p99_us", 1.0, 1),
    row(
        "HTTP tools/call throughput, c=32 (req/s)",
        "http c=32",
        "rps",
        1.0,
        0,
    ),
    row("HTTP latency p50, c=32 (µs)", "http c=32", "p50_us", 1.0, 1),
    row("HTTP latency p99, c=32 (µs)", "http c=32", "p99_us", 1.0, 1),
    row(
        "server CPU per HTTP call, c=32 (µs)",
        "http c=32",
        "server_cpu_us_per_req",
        1.0,
        2,
    ),
    row(
        "server CPU per HTTP call, c=1 (µs)",
        "http c=1",
        "server_cpu_us_per_req",
        1.0,
        2,
    ),
    row(
        "server core busy, c=32 (%)",
        "http c=32",
        "server_util",
        100.0,
        0,
    ),
    row(
        "load core busy, c=32 (%)",
        "http c=32",
        "load_util",
        100.0,
        0,
    ),
    row(
        "HTTP peak RSS under c=32 load (MiB)",
        "http c=32",
        "peak_rss_kib",
        MIB_PER_KIB,
        1,
    ),
    row("stdio pipelined throughput (req/s)", "stdio", "rps", 1.0, 0),
    row(
        "stdio server CPU per call, pipelined (µs)",
        "stdio",
        "server_cpu_us_per_req",
        1.0,
        2,
    ),
    row(
        "stdio peak RSS, pipelined run (MiB)",
        "stdio",
        "peak_rss_kib",
        MIB_PER_KIB,
        1,
    ),
    row(
        "stdio sequential round trip p50 (µs)",
        "stdio",
        "seq_p50_us",
        1.0,
        1,
    ),
    row(
        "stdio instructions per call (cachegrind)",
        "profile",
        "instructions",
        1.0,
        0,
    ),
    row(
        "stdio L1i misses per call (cachegrind, simulated)",
        "profile",
        "i1_misses",
        1.0,
        2,
    ),
    row(
        "stdio L1d misses per call (cachegrind, simulated)",
        "profile",
        "d1_misses",
        1.0,
        1,
    ),
    row(
        "stdio branch mispredictions per call (cachegrind, simulated)",
        "profile",
        "mispredicts",
        1.0,
        1,
    ),
    row(
        "cold start to first response, stdio (ms)",
        "cold stdio",
        "median_ms",
        1.0,
        2,
    ),
    row(
        "cold start to first response, HTTP (ms)",
        "cold http",
        "median_ms",
        1.0,
        2,
    ),
    row("binary size (MiB)", "size", "bytes", MIB_PER_B, 2),
    row(
        "binary size, stripped (MiB)",
        "size",
        "stripped_bytes",
        MIB_PER_B,
        2,
    ),
];

/// The stdio gaps split in two, under the table: bare's loop run on tokio as presa runs
/// its own (what reactor-driven pipe I/O, tokio's buffers and, at start, the hand-off to a
/// worker cost it) and presa against that loop (presa's own work). Only when the run has
/// bare-tokio's stdio cell.
fn stdio_split(s: &Samples, out: &mut String) {
    if s.count("stdio", "bare-tokio", "rps") == 0 {
        return;
    }
    let rps = |srv: &str| s.median("stdio", srv, "rps");
    let cpu = |srv: &str| s.median("stdio", srv, "server_cpu_us_per_req");
    let cold = |srv: &str| s.median("cold stdio", srv, "median_ms");
    let _ = writeln!(
        out,
        "\nstdio, with bare's loop also run on tokio (a task on a worker, non-blocking pipes on the reactor, tokio's buffered reader and writer):\n"
    );
    let _ = writeln!(
        out,
        "| server | pipelined throughput (req/s) | CPU per call (µs) | instructions per call (cachegrind) | throughput ÷ bare | CPU ÷ bare | presa's throughput ÷ this | cold start (ms) | cold start ÷ bare | presa's cold start ÷ this |"
    );
    let _ = writeln!(
        out,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for srv in ["bare", "bare-tokio", "presa"] {
        let _ = writeln!(
            out,
            "| {srv} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            fmt(rps(srv), 0),
            fmt(cpu(srv), 2),
            fmt(s.median("profile", srv, "instructions"), 0),
            fmt(ratio(rps(srv), rps("bare")), 2),
            fmt(ratio(cpu(srv), cpu("bare")), 2),
            fmt(ratio(rps("presa"), rps(srv)), 2),
            fmt(cold(srv), 2),
            fmt(ratio(cold(srv), cold("bare")), 2),
            fmt(ratio(cold("presa"), cold(srv)), 2),
        );
    }
}

/// A target's line: its value, its bound, and whether the value meets it.
fn target(label: &str, value: Option<f64>, goal: Goal) -> String {
    let verdict = match value {
        None => "not measured",
        Some(v) if goal.holds(v) => "met",
        Some(_) => "MISSED",
    };
    format!(
        "- {label}: {} (target {}): {verdict}",
        fmt(value, 2),
        goal.text()
    )
}

/// The cell of presa's load from clients of 2025-11-25, each connection in a session.
const LEGACY_CELL: &str = "http 2025-11-25 c=32";

/// Throughput over established 2025-11-25 sessions against presa's own 2026-07-28
/// throughput, both at c=32 in the same run.
const LEGACY_THROUGHPUT: Goal = Goal::AtLeast(0.9);

/// A metric of presa's legacy c=32 cell over the same metric of its 2026-07-28 c=32 cell:
/// the median of the repeats' own ratios (the two cells run back to back).
fn legacy_ratio(s: &Samples, metric: &str) -> Option<f64> {
    s.paired_ratio(LEGACY_CELL, "http c=32", "presa", metric)
}

/// The rows of a c=32 cell set beside another: label, metric, scale for display, decimals.
const C32_ROWS: [(&str, &str, f64, usize); 7] = [
    ("HTTP tools/call throughput, c=32 (req/s)", "rps", 1.0, 0),
    ("HTTP latency p50, c=32 (µs)", "p50_us", 1.0, 1),
    ("HTTP latency p99, c=32 (µs)", "p99_us", 1.0, 1),
    (
        "server CPU per HTTP call, c=32 (µs)",
        "server_cpu_us_per_req",
        1.0,
        2,
    ),
    ("server core busy, c=32 (%)", "server_util", 100.0, 0),
    ("load core busy, c=32 (%)", "load_util", 100.0, 0),
    (
        "HTTP peak RSS under c=32 load (MiB)",
        "peak_rss_kib",
        MIB_PER_KIB,
        1,
    ),
];

/// One row per metric of `rows`: the median of cell `of` (cell, server), the median of
/// cell `to`, and the median of the repeats' own ratios of the two (they run in every
/// repeat, so each ratio is of two runs under the same load).
fn beside(
    s: &Samples,
    out: &mut String,
    rows: &[(&str, &str, f64, usize)],
    of: (&str, &str),
    to: (&str, &str),
) {
    for (label, metric, scale, decimals) in rows {
        let a = s.median(of.0, of.1, metric).map(|v| v * scale);
        let b = s.median(to.0, to.1, metric).map(|v| v * scale);
        let ratio = s.paired((of.0, of.1, metric), (to.0, to.1, metric));
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} |",
            fmt(a, *decimals),
            fmt(b, *decimals),
            fmt(ratio, 2),
        );
    }
}

/// presa serving clients of the earlier revisions, under the table (presa only: bare and
/// rmcp serve 2026-07-28 alone here): tools/call over established 2025-11-25 sessions at
/// c=32 beside presa's own 2026-07-28 c=32 figures of the same run, and the memory of
/// idle sessions. Only the rows whose cells ran.
fn earlier_revisions(s: &Samples, out: &mut String) {
    let load = s.count(LEGACY_CELL, "presa", "rps") > 0;
    let idle = s.count("sessions", "presa", "kib_per_session") > 0;
    if load {
        let _ = writeln!(
            out,
            "\nClients of 2025-11-25 (presa only; bare and rmcp serve 2026-07-28 alone here): each of 32 connections in a session of its own, opened before the measured window; beside presa's 2026-07-28 c=32 cell of the same run, which runs right before it in every repeat. Medians of each; the ratios are the median of the repeats' own ratios:\n"
        );
        let _ = writeln!(
            out,
            "| metric | presa, 2025-11-25 sessions | presa, 2026-07-28 | sessions ÷ 2026-07-28 |"
        );
        let _ = writeln!(out, "| --- | ---: | ---: | ---: |");
        beside(
            s,
            out,
            &C32_ROWS,
            (LEGACY_CELL, "presa"),
            ("http c=32", "presa"),
        );
    }
    if idle {
        let m = |metric: &str| s.median("sessions", "presa", metric);
        let _ = writeln!(
            out,
            "\nIdle 2025-11-25 sessions (presa only), {:.0} opened one after another on one connection and left idle:\n",
            m("sessions").unwrap_or(0.0)
        );
        let _ = writeln!(out, "| metric | presa |");
        let _ = writeln!(out, "| --- | ---: |");
        for (label, value, decimals) in [
            (
                "memory of all the sessions (MiB)",
                m("kib_sessions").map(|k| k * MIB_PER_KIB),
                2,
            ),
            ("memory per idle session (KiB)", m("kib_per_session"), 2),
            (
                "… after one tools/call in each (KiB)",
                m("kib_per_session_called"),
                2,
            ),
            (
                "RSS before the sessions (MiB)",
                m("rss_before_kib").map(|k| k * MIB_PER_KIB),
                1,
            ),
            (
                "RSS with the sessions open (MiB)",
                m("rss_idle_kib").map(|k| k * MIB_PER_KIB),
                1,
            ),
            (
                "opening a session: initialize + initialized (µs)",
                m("open_us_per_session"),
                0,
            ),
        ] {
            let _ = writeln!(out, "| {label} | {} |", fmt(value, decimals));
        }
    }
}

/// The cell of presa behind its authorization (`http --auth`), and its server's name.
const AUTH_CELL: &str = "http auth c=32";
const AUTH_SERVER: &str = "presa-auth";

/// Server CPU per call with a cached valid token against presa's own unauthenticated
/// CPU per call, both at c=32 in the same run.
const AUTH_CPU: Goal = Goal::AtMost(1.15);

/// A metric of the authenticated c=32 cell over the same metric of presa's own c=32
/// cell: the median of the repeats' own ratios (the two run in every repeat, with only
/// the legacy cell between them).
fn auth_ratio(s: &Samples, metric: &str) -> Option<f64> {
    s.paired(
        (AUTH_CELL, AUTH_SERVER, metric),
        ("http c=32", "presa", metric),
    )
}

/// presa behind its authorization, under the table: the authenticated c=32 load beside
/// presa's own c=32 figures of the same run, then what a call with a token the server
/// has not seen costs against one with a cached token. Only when the cell ran.
fn authorization(s: &Samples, out: &mut String) {
    if s.count(AUTH_CELL, AUTH_SERVER, "rps") == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "
Authenticated tools/call (presa only): presa behind its authorization (`oauth`, a `JwtVerifier` with its default verdict cache), every request with an RS256 access token, one per connection, each verified during the warm-up, so the window sees cached verdicts; beside presa's unauthenticated c=32 cell of the same run (in every repeat the two run with only presa's 2025-11-25 cell between them). Medians of each; the ratios are the median of the repeats' own ratios:\n"
    );
    let _ = writeln!(
        out,
        "| metric | presa, authenticated | presa | authenticated ÷ presa |"
    );
    let _ = writeln!(out, "| --- | ---: | ---: | ---: |");
    beside(
        s,
        out,
        &C32_ROWS,
        (AUTH_CELL, AUTH_SERVER),
        ("http c=32", "presa"),
    );
    let m = |metric: &str| s.median(AUTH_CELL, AUTH_SERVER, metric);
    let _ = writeln!(
        out,
        "
The first call with a new token, after the window: {:.0} sequential calls on one connection (the server otherwise idle), each with a token never sent before, against as many with a cached token:\n",
        m("first_calls").unwrap_or(0.0)
    );
    let _ = writeln!(
        out,
        "| per call | with a new token | with a cached token | new ÷ cached |"
    );
    let _ = writeln!(out, "| --- | ---: | ---: | ---: |");
    for (label, first, cached) in [
        ("server CPU (µs)", "first_call_cpu_us", "cached_call_cpu_us"),
        (
            "latency p50 (µs)",
            "first_call_p50_us",
            "cached_call_p50_us",
        ),
        (
            "latency p99 (µs)",
            "first_call_p99_us",
            "cached_call_p99_us",
        ),
    ] {
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} |",
            fmt(m(first), 1),
            fmt(m(cached), 1),
            fmt(
                s.paired(
                    (AUTH_CELL, AUTH_SERVER, first),
                    (AUTH_CELL, AUTH_SERVER, cached)
                ),
                2
            ),
        );
    }
}

/// The observability cell (`http --otel`) and its server: presa built with `otel`, once
/// exporting spans and metrics to the driver's OTLP receiver, once (its plain `http c=32`
/// cell) with nothing installed.
const OTEL_CELL: &str = "http otel c=32";
const OTEL_SERVER: &str = "presa-otel";

/// Server CPU per call exporting over OTLP against the same build exporting nothing, both
/// at c=32 in the same run.
const OTEL_CPU: Goal = Goal::AtMost(1.2);

/// A metric of the exporting c=32 cell over the same metric of the same server not
/// exporting: the median of the repeats' own ratios (the two run back to back).
fn otel_ratio(s: &Samples, metric: &str) -> Option<f64> {
    s.paired_ratio(OTEL_CELL, "http c=32", OTEL_SERVER, metric)
}

/// presa exporting its telemetry, under the table: the exporting c=32 load beside the
/// same build's c=32 load with nothing installed, in the same run. Only when the cell ran.
fn observability(s: &Samples, out: &mut String) {
    if s.count(OTEL_CELL, OTEL_SERVER, "rps") == 0 {
        return;
    }
    let exports = s.median(OTEL_CELL, OTEL_SERVER, "otlp_exports");
    let _ = writeln!(
        out,
        "
Exporting telemetry (presa only): presa built with `otel`, once with `otel::Telemetry` exporting every request's span and the metrics over OTLP/HTTP to a receiver in the driver (on the load's core; {} exports received, median), once with nothing installed; the same binary, back to back in every repeat. Medians of each; the ratios are the median of the repeats' own ratios:\n",
        fmt(exports, 0)
    );
    let _ = writeln!(
        out,
        "| metric | exporting | not exporting | exporting ÷ not |"
    );
    let _ = writeln!(out, "| --- | ---: | ---: | ---: |");
    let rows = C32_ROWS
        .iter()
        .filter(|(_, metric, _, _)| !metric.ends_with("_util"))
        .copied()
        .collect::<Vec<_>>();
    beside(
        s,
        out,
        &rows,
        (OTEL_CELL, OTEL_SERVER),
        ("http c=32", OTEL_SERVER),
    );
}

/// The task stores' cell (bench/stores), and its stores in the order it runs them.
const TASKS_CELL: &str = "tasks";
const STORES: [&str; 3] = ["memory", "sqlite", "postgres"];

/// The task stores side by side, under the table: tasks created and completed per second
/// on each, the latency from creation to the read that saw the task completed, and each
/// store against the memory store. The ratios are the median of the repeats' own ratios
/// (the stores run back to back in every repeat). Measured, with no target; only when the
/// cell ran, and a row only for each store that ran.
fn task_stores(s: &Samples, out: &mut String) {
    if STORES
        .iter()
        .all(|st| s.count(TASKS_CELL, st, "tasks_per_s") == 0)
    {
        return;
    }
    let clients = STORES
        .iter()
        .find_map(|st| s.median(TASKS_CELL, st, "clients"))
        .unwrap_or(0.0);
    let _ = writeln!(
        out,
        "\nTask stores (presa only), in process through `TestClient`: {clients:.0} clients, each creating a task of a tool that answers at once and reading it with `tasks/get` until completed. Medians of each; the ratios to memory are the median of the repeats' own ratios. Measured, with no target:\n"
    );
    let _ = writeln!(
        out,
        "| store | tasks created and completed (tasks/s) | creation to completed p50 (µs) | p99 (µs) | tasks/get per task | tasks/s ÷ memory | p50 ÷ memory | p99 ÷ memory |"
    );
    let _ = writeln!(
        out,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    let to_memory =
        |st: &str, metric: &str| s.paired((TASKS_CELL, st, metric), (TASKS_CELL, "memory", metric));
    for st in STORES {
        if s.count(TASKS_CELL, st, "tasks_per_s") == 0 {
            let _ = writeln!(out, "| {st} | not measured | | | | | | |");
            continue;
        }
        let m = |metric: &str| s.median(TASKS_CELL, st, metric);
        let _ = writeln!(
            out,
            "| {st} | {} | {} | {} | {} | {} | {} | {} |",
            fmt(m("tasks_per_s"), 0),
            fmt(m("p50_us"), 1),
            fmt(m("p99_us"), 1),
            fmt(m("gets_per_task"), 1),
            fmt(to_memory(st, "tasks_per_s"), 2),
            fmt(to_memory(st, "p50_us"), 2),
            fmt(to_memory(st, "p99_us"), 2),
        );
    }
}

/// The fan-out's cell (bench-stores fanout) and the fan-out it measures.
const FANOUT_CELL: &str = "fanout";
const FANOUT: &str = "postgres";

/// Publish to delivery across replicas, under the table: the latency from a resource
/// update published on one replica to its read on each listen stream of another, both on
/// one PostgreSQL database. Medians over the repeats of each run's p50 and p99. Measured,
/// with no target; only when the cell ran.
fn fanout(s: &Samples, out: &mut String) {
    if s.count(FANOUT_CELL, FANOUT, "p50_us") == 0 {
        return;
    }
    let m = |metric: &str| s.median(FANOUT_CELL, FANOUT, metric);
    let _ = writeln!(
        out,
        "\nPublish to delivery across replicas (presa only): two servers on one PostgreSQL database, each with `PgStore::fanout`; {} `subscriptions/listen` streams over HTTP on one, subscribed to a resource; {} updates of resources under it published on the other, one at a time, each timed from the publishing call to its read on every stream. Medians over the repeats of each run's p50 and p99. Measured, with no target:\n",
        fmt(m("streams"), 0),
        fmt(m("events"), 0),
    );
    let _ = writeln!(
        out,
        "| fan-out | streams | updates | publish to delivery p50 (µs) | p99 (µs) |"
    );
    let _ = writeln!(out, "| --- | ---: | ---: | ---: | ---: |");
    let _ = writeln!(
        out,
        "| {FANOUT} | {} | {} | {} | {} |",
        fmt(m("streams"), 0),
        fmt(m("events"), 0),
        fmt(m("p50_us"), 1),
        fmt(m("p99_us"), 1),
    );
}

fn fmt(v: Option<f64>, decimals: usize) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.decimals$}"),
        _ => "–".into(),
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    }
}

/// The labels of the table's rows, in order.
#[cfg(test)]
pub(crate) fn row_labels() -> impl Iterator<Item = &'static str> {
    ROWS.iter().map(|r| r.label)
}

/// Prints the table of `files` (JSON lines written by the cells) and, when `criterion` is
/// given, the micro benchmarks found under it; when `svg` is given, writes the chart of
/// the printed table there.
pub fn run(files: &[String], criterion: Option<&str>, svg: Option<&str>) -> Result<(), String> {
    let mut text = String::new();
    for f in files {
        let t = std::fs::read_to_string(f).map_err(|e| format!("{f}: {e}"))?;
        for line in t.lines().filter(|l| !l.trim().is_empty()) {
            serde_json::from_str::<Value>(line).map_err(|e| format!("{f}: {e}: {line}"))?;
            text.push_str(line);
            text.push('\n');
        }
    }
    let micro = match criterion {
        Some(dir) => read_criterion(Path::new(dir)),
        None => BTreeMap::new(),
    };
    let out = render(&text, &micro)?;
    print!("{out}");
    if let Some(path) = svg {
        let chart = crate::chart::from_table(&out)?;
        std::fs::write(path, chart).map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(())
}

/// The table of the cells' JSON lines in `jsonl` and of the criterion results `micro`.
fn render(jsonl: &str, micro: &BTreeMap<String, f64>) -> Result<String, String> {
    let mut s = Samples::default();
    let mut meta = Vec::new();
    for line in jsonl.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).map_err(|e| format!("{e}: {line}"))?;
        if v["kind"] == "meta" {
            meta.push(v);
            continue;
        }
        let (Some(cell), Some(server)) = (cell_of(&v), v["server"].as_str()) else {
            continue;
        };
        if let Value::Object(m) = &v {
            for (k, x) in m {
                if let Some(x) = x.as_f64() {
                    s.0.entry((cell.clone(), server.to_owned(), k.clone()))
                        .or_default()
                        .push(x);
                }
            }
        }
    }

    let mut out = String::new();
    for m in &meta {
        if let Some(line) = m["text"].as_str() {
            let _ = writeln!(out, "- {line}");
        }
    }
    let repeats = s.count("http c=32", "presa", "rps");
    let _ = writeln!(
        out,
        "\nMedians of {repeats} run(s) per cell; ratios of those medians.\n"
    );
    let _ = writeln!(
        out,
        "| metric | bare | presa | rmcp | presa ÷ bare | rmcp ÷ bare | presa ÷ rmcp |"
    );
    let _ = writeln!(out, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for r in ROWS {
        let [b, p, m] = SERVERS.map(|srv| s.median(r.cell, srv, r.metric).map(|v| v * r.scale));
        if b.is_none() && p.is_none() && m.is_none() {
            continue;
        }
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.label,
            fmt(b, r.decimals),
            fmt(p, r.decimals),
            fmt(m, r.decimals),
            fmt(ratio(p, b), 2),
            fmt(ratio(m, b), 2),
            fmt(ratio(p, m), 2),
        );
    }

    if s.count("listen", "presa", "kib_per_stream") > 0 {
        let streams = s.median("listen", "presa", "streams").unwrap_or(0.0);
        let _ = writeln!(
            out,
            "\nSubscriptions (presa only; rmcp and bare have no `subscriptions/listen` here), {streams:.0} open streams:\n"
        );
        let _ = writeln!(out, "| metric | presa |");
        let _ = writeln!(out, "| --- | ---: |");
        let per = s.median("listen", "presa", "kib_per_stream");
        let _ = writeln!(out, "| memory per open stream (KiB) | {} |", fmt(per, 1));
        let open = s
            .median("listen", "presa", "rss_open_kib")
            .map(|k| k * MIB_PER_KIB);
        let _ = writeln!(
            out,
            "| RSS with the streams open (MiB) | {} |",
            fmt(open, 1)
        );
        let with = s.median("listen", "presa", "rps_with_streams_open");
        let _ = writeln!(
            out,
            "| tools/call throughput c=32 with the streams open (req/s) | {} |",
            fmt(with, 0)
        );
        let _ = writeln!(
            out,
            "| … ÷ throughput c=32 without them | {} |",
            fmt(ratio(with, s.median("http c=32", "presa", "rps")), 2)
        );
    }

    earlier_revisions(&s, &mut out);
    authorization(&s, &mut out);
    observability(&s, &mut out);
    stdio_split(&s, &mut out);
    task_stores(&s, &mut out);
    fanout(&s, &mut out);

    if !micro.is_empty() {
        let _ = writeln!(
            out,
            "\nMicro benchmarks (criterion, in process through `presa::testing::TestClient::send_raw`: from the request's bytes to the answer's, nothing parsed back):\n"
        );
        let _ = writeln!(out, "| benchmark | time per request (µs) |");
        let _ = writeln!(out, "| --- | ---: |");
        for (id, ns) in micro {
            let _ = writeln!(out, "| {id} | {:.2} |", ns / 1000.0);
        }
    }

    let instructions: Vec<(&str, f64)> =
        s.0.iter()
            .filter_map(|((cell, _, metric), v)| {
                let case = cell.strip_prefix("instructions ")?;
                (metric == "per_request").then(|| (case, v.iter().sum::<f64>() / v.len() as f64))
            })
            .collect();
    if !instructions.is_empty() {
        let _ = writeln!(
            out,
            "\nInstructions per request (callgrind, in process through `TestClient::send_raw`; counts, not times, so free of machine noise):\n"
        );
        let _ = writeln!(out, "| case | instructions |");
        let _ = writeln!(out, "| --- | ---: |");
        for (case, n) in &instructions {
            let _ = writeln!(out, "| {case} | {n:.0} |");
        }
    }
    let instr = |case: &str| {
        instructions
            .iter()
            .find(|(c, _)| *c == case)
            .map(|(_, n)| *n)
    };

    let _ = writeln!(out, "\nTargets of issue 7:\n");
    let m = |cell: &str, srv: &str, metric: &str| s.median(cell, srv, metric);
    // One bound per target, printed from the same number it is judged by.
    let mut check = |label: &str, value: Option<f64>, goal: Goal| {
        let _ = writeln!(out, "{}", target(label, value, goal));
    };
    let (rps_b, rps_p, rps_r) = (
        m("http c=32", "bare", "rps"),
        m("http c=32", "presa", "rps"),
        m("http c=32", "rmcp", "rps"),
    );
    check(
        "HTTP throughput c=32, presa ÷ bare",
        ratio(rps_p, rps_b),
        Goal::AtLeast(0.85),
    );
    check(
        "HTTP throughput c=32, presa ÷ rmcp",
        ratio(rps_p, rps_r),
        Goal::AtLeast(2.0),
    );
    check(
        "server CPU per HTTP call (c=32), presa ÷ bare",
        ratio(
            m("http c=32", "presa", "server_cpu_us_per_req"),
            m("http c=32", "bare", "server_cpu_us_per_req"),
        ),
        Goal::AtMost(1.3),
    );
    check(
        "HTTP p50 latency c=1, presa ÷ bare",
        ratio(
            m("http c=1", "presa", "p50_us"),
            m("http c=1", "bare", "p50_us"),
        ),
        Goal::AtMost(1.2),
    );
    let (st_b, st_p, st_r) = (
        m("stdio", "bare", "rps"),
        m("stdio", "presa", "rps"),
        m("stdio", "rmcp", "rps"),
    );
    check(
        "stdio pipelined throughput, presa ÷ bare",
        ratio(st_p, st_b),
        Goal::AtLeast(0.5),
    );
    check(
        "stdio pipelined throughput, presa ÷ rmcp",
        ratio(st_p, st_r),
        Goal::AtLeast(5.0),
    );
    check(
        "stdio peak RSS of the pipelined run, presa (MiB)",
        m("stdio", "presa", "peak_rss_kib").map(|k| k * MIB_PER_KIB),
        Goal::Below(64.0),
    );
    check(
        "HTTP peak RSS under load, presa ÷ bare",
        ratio(
            m("http c=32", "presa", "peak_rss_kib"),
            m("http c=32", "bare", "peak_rss_kib"),
        ),
        Goal::AtMost(1.5),
    );
    for mode in ["stdio", "http"] {
        let cell = format!("cold {mode}");
        check(
            &format!("cold start ({mode}), presa ÷ bare"),
            ratio(
                m(&cell, "presa", "median_ms"),
                m(&cell, "bare", "median_ms"),
            ),
            Goal::AtMost(1.3),
        );
    }
    // Scaling: instruction counts when callgrind ran, else criterion's times.
    // A catalog of 10 fills the page of 10 and has no next page; 100 and 1,000 both
    // have one, whose cursor is written into the answer: 100 against 1,000 compares
    // pages that do the same work, each beyond the page size.
    let (page, beyond, call, how) = if instructions.is_empty() {
        let t = |id: &str| micro.get(id).copied();
        (
            ratio(
                t("scaling: tools/list, page of 10/1000"),
                t("scaling: tools/list, page of 10/10"),
            ),
            ratio(
                t("scaling: tools/list, page of 10/1000"),
                t("scaling: tools/list, page of 10/100"),
            ),
            ratio(
                t("scaling: tools/call echo/1000"),
                t("scaling: tools/call echo/1"),
            ),
            "time",
        )
    } else {
        (
            ratio(
                instr("tools/list page of 10, 1000 tools"),
                instr("tools/list page of 10, 10 tools"),
            ),
            ratio(
                instr("tools/list page of 10, 1000 tools"),
                instr("tools/list page of 10, 100 tools"),
            ),
            ratio(
                instr("tools/call echo, 1000 tools"),
                instr("tools/call echo, 1 tool"),
            ),
            "instructions",
        )
    };
    check(
        &format!("tools/list one page (10 items), 1,000 ÷ 10 registered tools ({how})"),
        page,
        Goal::AboutOne,
    );
    check(
        &format!(
            "tools/list one page (10 items), 1,000 ÷ 100 registered tools, both with a next page ({how})"
        ),
        beyond,
        Goal::AboutOne,
    );
    check(
        &format!("tools/call with 1,000 ÷ 1 registered tools ({how})"),
        call,
        Goal::AboutOne,
    );
    if s.count(LEGACY_CELL, "presa", "rps") > 0 {
        let _ = writeln!(
            out,
            "\nTarget of the earlier revisions' sessions:\n\n{}",
            target(
                "HTTP throughput c=32, presa in 2025-11-25 sessions ÷ presa 2026-07-28 (same run)",
                legacy_ratio(&s, "rps"),
                LEGACY_THROUGHPUT,
            )
        );
    }
    if s.count(AUTH_CELL, AUTH_SERVER, "rps") > 0 {
        let _ = writeln!(
            out,
            "\nTarget of authorization (issue 33):\n\n{}",
            target(
                "server CPU per HTTP call c=32, presa with a cached valid JWT ÷ presa without authorization (same run)",
                auth_ratio(&s, "server_cpu_us_per_req"),
                AUTH_CPU,
            )
        );
    }
    if s.count(OTEL_CELL, OTEL_SERVER, "rps") > 0 {
        let _ = writeln!(
            out,
            "\nTarget of observability (issue 36):\n\n{}",
            target(
                "server CPU per HTTP call c=32, presa exporting spans and metrics over OTLP ÷ the same build not exporting (same run)",
                otel_ratio(&s, "server_cpu_us_per_req"),
                OTEL_CPU,
            )
        );
    }
    Ok(out)
}

/// A target's bound.
#[derive(Clone, Copy)]
pub(crate) enum Goal {
    AtLeast(f64),
    AtMost(f64),
    Below(f64),
    /// Flat: at most 1.1, printed as "≈ 1 (≤ 1.1)".
    AboutOne,
}

impl Goal {
    /// Whether `v` meets the target.
    pub(crate) fn holds(self, v: f64) -> bool {
        match self {
            Goal::AtLeast(b) => v >= b,
            Goal::AtMost(b) => v <= b,
            Goal::Below(b) => v < b,
            Goal::AboutOne => v <= 1.1,
        }
    }

    /// The bound's value: where a chart marks it.
    pub(crate) fn bound(self) -> f64 {
        match self {
            Goal::AtLeast(b) | Goal::AtMost(b) | Goal::Below(b) => b,
            Goal::AboutOne => 1.1,
        }
    }

    /// The bound as the table prints it (`≥ 0.85`).
    pub(crate) fn text(self) -> String {
        match self {
            Goal::AtLeast(b) => format!("≥ {b}"),
            Goal::AtMost(b) => format!("≤ {b}"),
            Goal::Below(b) => format!("< {b}"),
            Goal::AboutOne => "≈ 1 (≤ 1.1)".to_owned(),
        }
    }
}

/// `full_id -> ns per iteration` of every benchmark under a criterion output directory.
fn read_criterion(dir: &Path) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if !p.is_dir() {
                continue;
            }
            if p.file_name().is_some_and(|n| n == "new") {
                let read = |f: &str| -> Option<Value> {
                    serde_json::from_str(&std::fs::read_to_string(p.join(f)).ok()?).ok()
                };
                if let (Some(b), Some(est)) = (read("benchmark.json"), read("estimates.json")) {
                    let ns = est["slope"]["point_estimate"]
                        .as_f64()
                        .or_else(|| est["mean"]["point_estimate"].as_f64());
                    if let (Some(id), Some(ns)) = (b["full_id"].as_str(), ns) {
                        out.insert(id.to_owned(), ns);
                    }
                }
            } else {
                stack.push(p);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(cells: &[(&str, &str, &str, f64)]) -> Samples {
        let mut s = Samples::default();
        for (cell, server, metric, v) in cells {
            s.0.entry(((*cell).into(), (*server).into(), (*metric).into()))
                .or_default()
                .push(*v);
        }
        s
    }

    /// The split table's cold-start columns read bare-tokio's own stdio cold cell, divide
    /// by bare's, and put presa against each row.
    #[test]
    fn stdio_split_has_the_cold_start_of_each_server() {
        let mut cells = Vec::new();
        for (srv, rps, cpu, cold) in [
            ("bare", 1000.0, 1.0, 1.0),
            ("bare-tokio", 800.0, 1.25, 1.25),
            ("presa", 400.0, 2.5, 1.5),
        ] {
            cells.push(("stdio", srv, "rps", rps));
            cells.push(("stdio", srv, "server_cpu_us_per_req", cpu));
            cells.push(("cold stdio", srv, "median_ms", cold));
        }
        let mut out = String::new();
        stdio_split(&samples(&cells), &mut out);
        let rows: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("| b") || l.starts_with("| p"))
            .collect();
        assert_eq!(
            rows,
            [
                "| bare | 1000 | 1.00 | – | 1.00 | 1.00 | 0.40 | 1.00 | 1.00 | 1.50 |",
                "| bare-tokio | 800 | 1.25 | – | 0.80 | 1.25 | 0.50 | 1.25 | 1.25 | 1.20 |",
                "| presa | 400 | 2.50 | – | 0.40 | 2.50 | 1.00 | 1.50 | 1.50 | 1.00 |",
            ]
        );
    }

    /// An HTTP cell's JSON line.
    fn http_line(connections: u64, protocol: Option<&str>, rps: f64) -> String {
        let mut v = serde_json::json!({
            "kind": "http", "server": "presa", "connections": connections,
            "rps": rps, "p50_us": 300.0, "server_cpu_us_per_req": 8.0,
        });
        if let Some(p) = protocol {
            v["protocol"] = p.into();
        }
        v.to_string()
    }

    fn line_of<'a>(out: &'a str, start: &str) -> Option<&'a str> {
        out.lines().find(|l| l.starts_with(start))
    }

    /// The legacy cell is a cell of its own: it never joins presa's 2026-07-28 medians
    /// (lines without a protocol, from runs before it, are 2026-07-28 ones), it gets its
    /// table beside them, and its target is judged on the ratio printed there: the median
    /// of the repeats' own ratios, so a repeat the machine disturbed in one cell of the
    /// pair does not decide the verdict as it would through the ratio of the medians.
    #[test]
    fn legacy_sessions_are_a_cell_of_their_own() {
        let repeats = |third_legacy: f64| {
            [
                http_line(32, None, 100.0),
                http_line(32, Some("2025-11-25"), 97.0),
                http_line(32, Some("2026-07-28"), 120.0),
                http_line(32, Some("2025-11-25"), 70.0),
                http_line(32, Some("2026-07-28"), 60.0),
                http_line(32, Some("2025-11-25"), third_legacy),
                http_line(1, Some("2026-07-28"), 10.0),
            ]
            .join("\n")
        };
        let out = render(&repeats(57.0), &BTreeMap::new()).expect("a table");
        assert_eq!(
            line_of(&out, "| HTTP tools/call throughput, c=32 (req/s) |"),
            Some("| HTTP tools/call throughput, c=32 (req/s) | – | 100 | – | – | – | – |")
        );
        assert_eq!(
            line_of(&out, "| HTTP tools/call throughput, c=1 (req/s) |"),
            Some("| HTTP tools/call throughput, c=1 (req/s) | – | 10 | – | – | – | – |")
        );
        assert!(out.contains(
            "| metric | presa, 2025-11-25 sessions | presa, 2026-07-28 | sessions ÷ 2026-07-28 |"
        ));
        // The medians are 70 and 100; the repeats' ratios 0.97, 0.58 and 0.95.
        assert!(
            out.contains("| HTTP tools/call throughput, c=32 (req/s) | 70 | 100 | 0.95 |"),
            "{out}"
        );
        assert!(out.contains("| server CPU per HTTP call, c=32 (µs) | 8.00 | 8.00 | 1.00 |"));
        assert!(out.contains(
            "- HTTP throughput c=32, presa in 2025-11-25 sessions ÷ presa 2026-07-28 (same run): 0.95 (target ≥ 0.9): met"
        ));
        // The repeats' ratios 0.97, 0.58 and 0.83.
        let out = render(&repeats(50.0), &BTreeMap::new()).expect("a table");
        assert!(
            out.contains("(same run): 0.83 (target ≥ 0.9): MISSED"),
            "{out}"
        );
        // The chart reads the main table as before.
        assert!(crate::chart::from_table(&out).is_ok());
    }

    /// An authenticated cell's JSON line, as `http --auth` prints it.
    fn auth_line(server: &str, cpu: f64, first_cpu: f64) -> String {
        serde_json::json!({
            "kind": "http", "server": server, "protocol": "2026-07-28", "connections": 32,
            "auth": true, "rps": 90.0, "p50_us": 330.0, "server_cpu_us_per_req": cpu,
            "first_calls": 200.0, "first_call_cpu_us": first_cpu, "first_call_p50_us": 120.0,
            "first_call_p99_us": 300.0, "cached_call_cpu_us": 40.0, "cached_call_p50_us": 50.0,
            "cached_call_p99_us": 80.0,
        })
        .to_string()
    }

    /// A presa c=32 line with this CPU per call.
    fn presa_cpu_line(cpu: f64) -> String {
        serde_json::json!({
            "kind": "http", "server": "presa", "protocol": "2026-07-28", "connections": 32,
            "rps": 100.0, "p50_us": 300.0, "server_cpu_us_per_req": cpu,
        })
        .to_string()
    }

    /// The authenticated cell is a cell of its own (even under presa's name it never
    /// joins presa's unauthenticated medians), gets its table beside presa's c=32 cell,
    /// and its target is judged on the median of the repeats' own CPU ratios, printed
    /// there; the first-call figures get theirs, new against cached.
    #[test]
    fn the_authenticated_cell_is_judged_against_presa_of_the_same_repeat() {
        let repeats = |third_auth_cpu: f64| {
            [
                presa_cpu_line(10.0),
                auth_line("presa-auth", 11.0, 100.0),
                presa_cpu_line(20.0),
                auth_line("presa-auth", 26.0, 140.0),
                presa_cpu_line(8.0),
                auth_line("presa-auth", third_auth_cpu, 110.0),
                // Under presa's own name, still not presa's unauthenticated cell.
                auth_line("presa", 1000.0, 1000.0),
            ]
            .join("\n")
        };
        // CPU medians 10 and 11; the repeats' ratios 1.1, 1.3 and 1.125.
        let out = render(&repeats(9.0), &BTreeMap::new()).expect("a table");
        assert_eq!(
            line_of(&out, "| server CPU per HTTP call, c=32 (µs) |"),
            Some("| server CPU per HTTP call, c=32 (µs) | – | 10.00 | – | – | – | – |"),
            "{out}"
        );
        assert!(out.contains("| metric | presa, authenticated | presa | authenticated ÷ presa |"));
        assert!(
            out.contains("| server CPU per HTTP call, c=32 (µs) | 11.00 | 10.00 | 1.12 |"),
            "{out}"
        );
        assert!(out.contains("| HTTP tools/call throughput, c=32 (req/s) | 90 | 100 | 0.90 |"));
        assert!(
            out.contains("200 sequential calls on one connection"),
            "{out}"
        );
        assert!(
            out.contains("| server CPU (µs) | 110.0 | 40.0 | 2.75 |"),
            "{out}"
        );
        assert!(
            out.contains("| latency p50 (µs) | 120.0 | 50.0 | 2.40 |"),
            "{out}"
        );
        assert!(out.contains(
            "- server CPU per HTTP call c=32, presa with a cached valid JWT ÷ presa without authorization (same run): 1.12 (target ≤ 1.15): met"
        ));
        // The repeats' ratios 1.1, 1.3 and 1.25: the median misses.
        let out = render(&repeats(10.0), &BTreeMap::new()).expect("a table");
        assert!(
            out.contains("(same run): 1.25 (target ≤ 1.15): MISSED"),
            "{out}"
        );
        // The chart reads the main table as before.
        assert!(crate::chart::from_table(&out).is_ok());
    }

    /// Without the authenticated cell (results of an older run) neither its tables nor
    /// its target are printed.
    #[test]
    fn no_authenticated_cell_no_authorization_tables() {
        let out = render(&presa_cpu_line(10.0), &BTreeMap::new()).expect("a table");
        assert!(!out.contains("Authenticated"), "{out}");
        assert!(!out.contains("issue 33"), "{out}");
    }

    /// A c=32 line of the observability cell's server, exporting or not.
    fn otel_line(exporting: bool, cpu: f64) -> String {
        let mut line = serde_json::json!({
            "kind": "http", "server": "presa-otel", "protocol": "2026-07-28",
            "connections": 32, "rps": 100.0, "p50_us": 300.0, "server_cpu_us_per_req": cpu,
        });
        if exporting {
            line["otel"] = true.into();
            line["otlp_exports"] = 12.into();
        }
        line.to_string()
    }

    /// The exporting cell is judged against the same server not exporting, repeat by
    /// repeat, and neither joins presa's own c=32 figures.
    #[test]
    fn the_exporting_cell_is_judged_against_the_same_build_not_exporting() {
        let repeats = |third: f64| {
            [
                presa_cpu_line(5.0),
                otel_line(false, 10.0),
                otel_line(true, 11.0),
                otel_line(false, 20.0),
                otel_line(true, 26.0),
                otel_line(false, 8.0),
                otel_line(true, third),
            ]
            .join("\n")
        };
        // The repeats' ratios 1.1, 1.3 and 1.125.
        let out = render(&repeats(9.0), &BTreeMap::new()).expect("a table");
        assert_eq!(
            line_of(&out, "| server CPU per HTTP call, c=32 (µs) |"),
            Some("| server CPU per HTTP call, c=32 (µs) | – | 5.00 | – | – | – | – |"),
            "{out}"
        );
        assert!(out.contains("| metric | exporting | not exporting | exporting ÷ not |"));
        assert!(
            out.contains("| server CPU per HTTP call, c=32 (µs) | 11.00 | 10.00 | 1.12 |"),
            "{out}"
        );
        assert!(out.contains("12 exports received"), "{out}");
        assert!(out.contains(
            "- server CPU per HTTP call c=32, presa exporting spans and metrics over OTLP ÷ the same build not exporting (same run): 1.12 (target ≤ 1.2): met"
        ), "{out}");
        // The repeats' ratios 1.1, 1.3 and 1.25: the median misses.
        let out = render(&repeats(10.0), &BTreeMap::new()).expect("a table");
        assert!(
            out.contains("(same run): 1.25 (target ≤ 1.2): MISSED"),
            "{out}"
        );
        // Without the cell, neither table nor target.
        let out = render(&presa_cpu_line(10.0), &BTreeMap::new()).expect("a table");
        assert!(!out.contains("Exporting telemetry"), "{out}");
        assert!(!out.contains("issue 36"), "{out}");
    }

    /// Pairs by order; counts that differ fall back to the ratio of the medians.
    #[test]
    fn paired_ratio_pairs_by_order() {
        let s = samples(&[
            ("a", "p", "rps", 90.0),
            ("b", "p", "rps", 100.0),
            ("a", "p", "rps", 10.0),
            ("b", "p", "rps", 20.0),
            ("a", "p", "rps", 40.0),
            ("b", "p", "rps", 50.0),
        ]);
        // 0.9, 0.5, 0.8.
        assert_eq!(s.paired_ratio("a", "b", "p", "rps"), Some(0.8));
        let s = samples(&[
            ("a", "p", "rps", 90.0),
            ("b", "p", "rps", 100.0),
            ("b", "p", "rps", 20.0),
        ]);
        assert_eq!(s.paired_ratio("a", "b", "p", "rps"), Some(1.5));
        assert_eq!(s.paired_ratio("a", "c", "p", "rps"), None);
    }

    /// Without the legacy cells (results of an older run) neither their tables nor their
    /// target are printed.
    #[test]
    fn no_legacy_cells_no_legacy_tables() {
        let out = render(&http_line(32, None, 100.0), &BTreeMap::new()).expect("a table");
        assert!(!out.contains("2025-11-25"), "{out}");
    }

    /// The idle sessions' table: the whole delta, the delta per session, both readings.
    #[test]
    fn idle_sessions_have_their_table() {
        let line = serde_json::json!({
            "kind": "sessions", "server": "presa", "protocol": "2025-11-25",
            "sessions": 1000, "rss_before_kib": 5120, "rss_idle_kib": 8192,
            "rss_called_kib": 8704, "kib_sessions": 3072.0, "kib_per_session": 3.072,
            "kib_per_session_called": 3.584, "open_us_per_session": 141.3,
        });
        let out = render(&line.to_string(), &BTreeMap::new()).expect("a table");
        let rows: Vec<&str> = out
            .lines()
            .skip_while(|l| !l.starts_with("Idle 2025-11-25 sessions (presa only), 1000 opened"))
            .filter(|l| {
                l.starts_with("| ") && !l.starts_with("| metric") && !l.starts_with("| ---")
            })
            .take(6)
            .collect();
        assert_eq!(
            rows,
            [
                "| memory of all the sessions (MiB) | 3.00 |",
                "| memory per idle session (KiB) | 3.07 |",
                "| … after one tools/call in each (KiB) | 3.58 |",
                "| RSS before the sessions (MiB) | 5.0 |",
                "| RSS with the sessions open (MiB) | 8.0 |",
                "| opening a session: initialize + initialized (µs) | 141 |",
            ]
        );
        // No load cell, so no throughput target.
        assert!(!out.contains("Target of the earlier revisions"));
    }

    /// A task stores' line, as bench-stores prints it.
    fn stores_line(store: &str, tasks_per_s: f64, p50: f64) -> String {
        serde_json::json!({
            "kind": "tasks", "server": store, "clients": 16, "duration_s": 3.0,
            "tasks": tasks_per_s * 3.0, "tasks_per_s": tasks_per_s, "p50_us": p50,
            "p99_us": p50 * 2.0, "gets_per_task": 1.5,
        })
        .to_string()
    }

    /// The task stores get their table: medians of each store, and each against memory as
    /// the median of the repeats' own ratios; a store that never ran is said to be not
    /// measured. The main table and its chart are untouched.
    #[test]
    fn task_stores_have_their_table() {
        let lines = [
            presa_cpu_line(10.0),
            stores_line("memory", 1000.0, 100.0),
            stores_line("sqlite", 500.0, 300.0),
            stores_line("memory", 2000.0, 50.0),
            stores_line("sqlite", 400.0, 200.0),
            stores_line("memory", 800.0, 100.0),
            stores_line("sqlite", 600.0, 250.0),
        ]
        .join("\n");
        let out = render(&lines, &BTreeMap::new()).expect("a table");
        assert!(
            out.contains("Task stores (presa only), in process through `TestClient`: 16 clients"),
            "{out}"
        );
        // Medians 1000 and 500; the repeats' ratios 0.5, 0.2 and 0.75; p50 ratios 3, 4, 2.5.
        assert!(
            out.contains("| memory | 1000 | 100.0 | 200.0 | 1.5 | 1.00 | 1.00 | 1.00 |"),
            "{out}"
        );
        assert!(
            out.contains("| sqlite | 500 | 250.0 | 500.0 | 1.5 | 0.50 | 3.00 | 3.00 |"),
            "{out}"
        );
        assert!(
            out.contains("| postgres | not measured | | | | | | |"),
            "{out}"
        );
        assert!(crate::chart::from_table(&out).is_ok());
        // Without the cell (results of an older run), no table.
        let out = render(&presa_cpu_line(10.0), &BTreeMap::new()).expect("a table");
        assert!(!out.contains("Task stores"), "{out}");
    }

    /// A fan-out line, as bench-stores fanout prints it.
    fn fanout_line(p50: f64) -> String {
        serde_json::json!({
            "kind": "fanout", "server": "postgres", "streams": 1000, "events": 200,
            "samples": 200_000, "p50_us": p50, "p99_us": p50 * 3.0,
        })
        .to_string()
    }

    /// The fan-out gets its table, medians of its runs' p50 and p99; the main table and
    /// its chart are untouched, and without the cell there is no table.
    #[test]
    fn fanout_has_its_table() {
        let lines = [
            presa_cpu_line(10.0),
            fanout_line(1000.0),
            fanout_line(3000.0),
            fanout_line(2000.0),
        ]
        .join("\n");
        let out = render(&lines, &BTreeMap::new()).expect("a table");
        assert!(
            out.contains("Publish to delivery across replicas (presa only)"),
            "{out}"
        );
        assert!(out.contains("1000 `subscriptions/listen` streams"), "{out}");
        assert!(
            out.contains("| postgres | 1000 | 200 | 2000.0 | 6000.0 |"),
            "{out}"
        );
        assert!(crate::chart::from_table(&out).is_ok());
        let out = render(&presa_cpu_line(10.0), &BTreeMap::new()).expect("a table");
        assert!(!out.contains("Publish to delivery"), "{out}");
    }

    /// Without bare-tokio's stdio cell (results of an older run) there is no split table.
    #[test]
    fn stdio_split_needs_bare_tokio() {
        let mut out = String::new();
        stdio_split(&samples(&[("stdio", "bare", "rps", 1.0)]), &mut out);
        assert!(out.is_empty());
    }
}
