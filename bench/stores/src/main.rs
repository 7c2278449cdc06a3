//! The task stores' cell of the benchmark: tasks created and completed per second on one of
//! presa's task stores (memory, SQLite, PostgreSQL), and the latency from a task's
//! creation to the `tasks/get` that reads it `completed`. It prints one JSON line;
//! `bench-driver report` puts the stores side by side. `bench/run` runs it once per store
//! in every repeat (memory sqlite postgres memory sqlite postgres …).
//!
//! ```text
//! bench-stores --store memory|sqlite|postgres --clients C --duration SECS --warmup SECS
//! bench-stores fanout --streams N --events E
//! ```
//!
//! The second form is the cross-replica fan-out's cell (src/fanout.rs): the latency from
//! a resource update published on one replica to its delivery on another's listen
//! streams, the replicas sharing one PostgreSQL database.
//!
//! One server, built as a user builds one with the Tasks extension on the chosen store,
//! serves one tool that is always a task and answers at once. C clients, each in a loop:
//! create a task (`tools/call` from a client declaring Tasks), then `tasks/get` it until
//! it reads `completed`: again after a yield to the runtime, then every millisecond
//! ([`REREAD`]). They run in process, through `presa::testing::TestClient` (the
//! transports' pipeline with no socket), so the cell's differences are the stores' and
//! not HTTP's, which the other cells measure. The
//! load runs for the warm-up, then for the measured window: the tasks whose creation
//! starts in the window are counted, each timed from its `tools/call` to the `tasks/get`
//! that read it completed. Every answer is checked: a wrong one ends the run with an
//! error, never a number.
//!
//! SQLite keeps its file in a temporary folder; PostgreSQL is a throwaway server started
//! here (tests/src/postgres.rs); where PostgreSQL is not installed that store's run prints
//! why on stderr and no line. Each run begins with an empty store; the tasks are kept
//! (their TTL outlives the run, `max_tasks` is above what a run creates), so the store
//! holds every task the run created, as a server's store does within its TTL.

// The tests' throwaway PostgreSQL server, the same file rather than a copy, and not the
// presa-tests crate: as a dependency it would link its whole tree (reqwest, jsonschema,
// the fixture, presa with `oauth` and `skills`) into this release build, which CI's
// bench smoke step compiles. The bench uses only part of the module.
#[allow(dead_code)]
#[path = "../../../tests/src/postgres.rs"]
mod postgres;

mod fanout;

/// A loopback port free when asked: the PostgreSQL module asks its crate root for one (in
/// the tests, presa-tests' own `free_port`).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

use presa::tasks::{MemoryStore, PgStore, SqliteStore, TaskMode, Tasks, TasksBuilder};
use presa::testing::TestClient;
use presa::{Implementation, Server, Tool, ToolCall};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The Tasks extension's identifier, as a client declares it.
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// The tool's name and the text of its result.
const TOOL: &str = "done";
const ANSWER: &str = "done";

/// Longest a task may take from creation to `completed` before the run is called wrong.
const PATIENCE: Duration = Duration::from_secs(30);

/// How long a client waits before reading a task again, from its third read on (the
/// second follows a yield to the runtime, which is enough for a task of the memory
/// store): reads in a tight loop would compete with the task's own writes to the store
/// and measure them rather than the task.
const REREAD: Duration = Duration::from_millis(1);

/// Most tasks kept at once: above anything a run creates, so no creation is refused.
const MAX_TASKS: usize = 100_000_000;

/// How long a task is kept: beyond any run, so none expires (and none is reaped) in it.
const TTL: Duration = Duration::from_secs(24 * 3600);

/// The store a run measures.
#[derive(Clone, Copy, PartialEq)]
enum Store {
    Memory,
    Sqlite,
    Postgres,
}

impl Store {
    fn parse(name: &str) -> Result<Store, String> {
        match name {
            "memory" => Ok(Store::Memory),
            "sqlite" => Ok(Store::Sqlite),
            "postgres" => Ok(Store::Postgres),
            other => Err(format!(
                "--store {other}: expected memory, sqlite or postgres"
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Store::Memory => "memory",
            Store::Sqlite => "sqlite",
            Store::Postgres => "postgres",
        }
    }
}

/// The command line.
struct Options {
    store: Store,
    clients: usize,
    duration: Duration,
    warmup: Duration,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let mut store = None;
        let mut clients = None;
        let mut duration = None;
        let mut warmup = None;
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it
                .next()
                .ok_or_else(|| format!("{flag}: missing its value"))?;
            let secs = |v: &str| {
                v.parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .map(Duration::from_secs_f64)
                    .ok_or_else(|| format!("{flag} {v}: not a number of seconds"))
            };
            match flag.as_str() {
                "--store" => store = Some(Store::parse(value)?),
                "--clients" => {
                    clients = Some(
                        value
                            .parse::<usize>()
                            .ok()
                            .filter(|c| *c > 0)
                            .ok_or_else(|| format!("--clients {value}: not a positive number"))?,
                    )
                }
                "--duration" => duration = Some(secs(value)?),
                "--warmup" => warmup = Some(secs(value)?),
                other => return Err(format!("unknown flag {other}")),
            }
        }
        let duration = duration.ok_or("missing --duration")?;
        if duration.is_zero() {
            return Err("--duration must be more than 0".into());
        }
        Ok(Options {
            store: store.ok_or("missing --store")?,
            clients: clients.ok_or("missing --clients")?,
            duration,
            warmup: warmup.ok_or("missing --warmup")?,
        })
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.first().is_some_and(|a| a == "fanout") {
        match fanout::Options::parse(&args[1..]) {
            Ok(options) => fanout::run(&options).await,
            Err(e) => Err(e),
        }
    } else {
        match Options::parse(&args) {
            Ok(options) => run(&options).await,
            Err(e) => Err(e),
        }
    };
    match result {
        Ok(Some(line)) => println!("{line}"),
        Ok(None) => {}
        Err(e) => {
            eprintln!("bench-stores: {e}");
            std::process::exit(1);
        }
    }
}

/// One run on `options.store`: its JSON line, or `None` where the store cannot run here
/// (PostgreSQL not installed; said on stderr).
async fn run(options: &Options) -> Result<Option<Value>, String> {
    let knobs = Tasks::builder()
        .max_tasks(MAX_TASKS)
        .max_workers(options.clients.max(64))
        .ttl(Some(TTL));
    // Held to the end of the run: the folder of the SQLite file, the PostgreSQL server.
    let _sqlite_dir;
    let _postgres;
    let knobs = match options.store {
        Store::Memory => knobs.store(MemoryStore::default()),
        Store::Sqlite => {
            let dir = tempfile::Builder::new()
                .prefix("bench-stores-")
                .tempdir()
                .map_err(|e| format!("a temporary folder: {e}"))?;
            let store = SqliteStore::open(dir.path().join("tasks.db"))
                .await
                .map_err(|e| format!("SqliteStore::open: {e}"))?;
            _sqlite_dir = dir;
            knobs.store(store)
        }
        Store::Postgres => {
            let Some(pg) = postgres::Postgres::start().await else {
                eprintln!("bench-stores: the PostgreSQL store is not measured (above: why)");
                return Ok(None);
            };
            let store = PgStore::connect(&pg.url())
                .await
                .map_err(|e| format!("PgStore::connect: {e}"))?;
            _postgres = pg;
            knobs.store(store)
        }
    };
    measure(options, knobs).await.map(Some)
}

/// The server: the Tasks extension with `knobs`, and the one tool, always a task.
fn server(knobs: TasksBuilder) -> Result<Server, String> {
    Server::builder(Implementation::new("bench-stores", "0.0.0"))
        .tool(
            Tool::new(TOOL)
                .description("Answers at once, as a task")
                .task(TaskMode::Required)
                .handler(|_: ToolCall| async { ANSWER }),
        )
        .extension(knobs.build())
        .build()
        .map_err(|e| format!("the server does not build: {e}"))
}

/// What one client saw in the measured window.
#[derive(Default)]
struct Seen {
    /// Creation to completed, of each task counted, in nanoseconds.
    latencies_ns: Vec<u64>,
    /// `tasks/get` requests sent for the counted tasks.
    gets: u64,
}

async fn measure(options: &Options, knobs: TasksBuilder) -> Result<Value, String> {
    let server = server(knobs)?;
    let start = Instant::now();
    let window = start + options.warmup;
    let end = window + options.duration;
    let mut clients = Vec::with_capacity(options.clients);
    for _ in 0..options.clients {
        let client = TestClient::new(&server).with_capabilities(json!({"extensions": {TASKS: {}}}));
        clients.push(tokio::spawn(load(Arc::new(client), window, end)));
    }
    let mut latencies = Vec::new();
    let mut gets = 0;
    for c in clients {
        let seen = c.await.map_err(|e| format!("a client failed: {e}"))??;
        latencies.extend(seen.latencies_ns);
        gets += seen.gets;
    }
    latencies.sort_unstable();
    let tasks = latencies.len();
    let secs = options.duration.as_secs_f64();
    Ok(json!({
        "kind": "tasks",
        "server": options.store.name(),
        "clients": options.clients,
        "duration_s": secs,
        "tasks": tasks,
        "tasks_per_s": tasks as f64 / secs,
        "p50_us": quantile_us(&latencies, 0.50),
        "p99_us": quantile_us(&latencies, 0.99),
        "gets_per_task": if tasks == 0 { f64::NAN } else { gets as f64 / tasks as f64 },
    }))
}

/// One client's loop: create a task, read it until completed; the tasks created from
/// `window` on are counted; none is created from `end` on.
async fn load(client: Arc<TestClient>, window: Instant, end: Instant) -> Result<Seen, String> {
    let mut seen = Seen::default();
    loop {
        let created_at = Instant::now();
        if created_at >= end {
            return Ok(seen);
        }
        let id = create(&client).await?;
        let mut gets = 0;
        while !completed(&client, &id).await? {
            gets += 1;
            if created_at.elapsed() > PATIENCE {
                return Err(format!("task {id} not completed after {PATIENCE:?}"));
            }
            if gets == 1 {
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(REREAD).await;
            }
        }
        let took = created_at.elapsed();
        if created_at >= window {
            seen.latencies_ns
                .push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
            seen.gets += gets + 1;
        }
    }
}

/// `tools/call` of the tool from a client declaring Tasks: checked to be a task, working;
/// its id.
async fn create(client: &TestClient) -> Result<String, String> {
    let got = client
        .request("tools/call", json!({"name": TOOL, "arguments": {}}))
        .await;
    let r = &got.message["result"];
    let id = r["taskId"].as_str().filter(|id| !id.is_empty());
    match id {
        Some(id) if r["resultType"] == "task" && r["status"] == "working" => Ok(id.to_owned()),
        _ => Err(format!(
            "tools/call: expected a working task: {}",
            got.message
        )),
    }
}

/// `tasks/get` of task `id`: whether it is completed, checked to be that task, with the
/// tool's result once completed; working before.
async fn completed(client: &TestClient, id: &str) -> Result<bool, String> {
    let got = client.request("tasks/get", json!({"taskId": id})).await;
    let r = &got.message["result"];
    if r["taskId"] != id {
        return Err(format!(
            "tasks/get {id}: another task's answer: {}",
            got.message
        ));
    }
    match r["status"].as_str() {
        Some("working") => Ok(false),
        Some("completed")
            if r["result"]["content"] == json!([{"type": "text", "text": ANSWER}]) =>
        {
            Ok(true)
        }
        _ => Err(format!(
            "tasks/get {id}: expected working, or completed with {ANSWER:?}: {}",
            got.message
        )),
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
