//! The Tasks extension (`io.modelcontextprotocol/tasks`, Tasks reference sections 2 and 3;
//! errata T-1 to T-5 and section 4): capability advertisement, the per-request decision
//! table, and the CreateTaskResult. This module also holds what the other `tasks_*`
//! modules share: the task methods on the shared client ([`Tasking`]; the client runs a
//! rule over Streamable HTTP on a loopback port and stdio through the fixture binary or
//! an in-process pipe), the shape assertions of the task results, and a small server of
//! task tools whose progress a test can observe and steer ([`Lab`]).
//!
//! The core schema defines nothing for Tasks (reference section 1): the client checks a
//! CreateTaskResult, every `tasks/*` request and result and every `notifications/tasks`
//! against the extension's own schema (vendored in `tests/schema/`); what that schema
//! leaves open (timestamps, the payload a status carries, the v1 fields that must be
//! gone) is asserted here field by field.

use presa::tasks::{TaskMode, TaskStatus, Tasks, TasksBuilder};
use presa::{Error, Implementation, Server, ServerBuilder, Tool, ToolCall};
use presa_tests::schema::{assert_valid, check_notification};
use presa_tests::sse::Next;
use presa_tests::wait::{Deadline, PATIENCE};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::Semaphore;

pub(crate) use presa_tests::client::TASKS;
pub(crate) const CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
pub(crate) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
pub(crate) const UNKNOWN_TASK: &str = "Unknown or inaccessible taskId";

// ---- client capabilities ----

/// Client capabilities declaring Tasks (and form elicitation, which the fixture's
/// input-taking tools need).
pub(crate) fn tasks_caps() -> Value {
    json!({"elicitation": {}, "extensions": {TASKS: {}}})
}

/// Client capabilities without Tasks.
pub(crate) fn plain_caps() -> Value {
    json!({"elicitation": {}})
}

/// `params` with `_meta` client capabilities `caps` (the other `_meta` members are the
/// harness defaults).
pub(crate) fn with_caps(params: Value, caps: Value) -> Value {
    let mut params = params;
    params["_meta"][CAPS] = caps;
    params
}

/// `params` from a client that declared Tasks.
pub(crate) fn declared(params: Value) -> Value {
    with_caps(params, tasks_caps())
}

/// `params` from a client that did not declare Tasks.
pub(crate) fn undeclared(params: Value) -> Value {
    with_caps(params, plain_caps())
}

/// `tools/call` params.
pub(crate) fn tool(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

/// `{"taskId": id}`.
pub(crate) fn task_id(id: &str) -> Value {
    json!({"taskId": id})
}

/// A form answer.
pub(crate) fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

// ---- the two transports ----

pub(crate) use presa_tests::client::{Client, Got, KINDS, Kind};

/// The fixture over `kind`: in process on HTTP, the fixture binary on stdio.
pub(crate) async fn fixture(kind: Kind) -> Client {
    Client::fixture(kind, env!("CARGO_BIN_EXE_fixture")).await
}

/// An open listen stream of task notifications.
pub(crate) struct Listening {
    /// The listen request's id (the subscription id).
    pub(crate) id: Value,
    /// The acknowledged filter (`params.notifications` of the acknowledgement).
    pub(crate) ack: Value,
}

/// The task methods, as a client declaring Tasks calls them, with the shapes of their
/// results asserted beyond the schema.
pub(crate) trait Tasking {
    /// Calls `name` as a client declaring Tasks, asserts a CreateTaskResult, and returns
    /// the task id.
    async fn create(&mut self, name: &str, arguments: Value) -> String;
    /// `tasks/get`; the DetailedTask, checked for its status.
    async fn get(&mut self, id: &str) -> Value;
    /// `tasks/update`; asserts the empty acknowledgement.
    async fn update(&mut self, id: &str, responses: Value);
    /// [`Tasking::update`] with answers invalid on purpose: sent unchecked.
    async fn update_unchecked(&mut self, id: &str, responses: Value);
    /// `tasks/cancel`; asserts the empty acknowledgement.
    async fn cancel(&mut self, id: &str);
    /// Polls `tasks/get` until the status is one of `statuses` (failing when the task
    /// reaches another terminal status, or past the tests' patience); the DetailedTask.
    async fn wait_for(&mut self, id: &str, statuses: &[&str]) -> Value;
    /// Polls until the task is terminal; the DetailedTask.
    async fn wait_terminal(&mut self, id: &str) -> Value;
    /// Opens a `subscriptions/listen` stream with `params`: the stream and its
    /// acknowledged filter, or the error reply.
    async fn listen_tasks(&mut self, params: Value) -> Result<Listening, Got>;
    /// Like [`Tasking::listen_tasks`], with HTTP headers replaced or added (ignored on
    /// stdio).
    async fn listen_tasks_with(
        &mut self,
        params: Value,
        headers: &[(&str, &str)],
    ) -> Result<Listening, Got>;
    /// The next message of a listen stream within `within`, or `None`.
    async fn event(&mut self, l: &Listening, within: Duration) -> Option<Value>;
    /// Reads `notifications/tasks` events for task `id` until one has `status`; every
    /// event is checked as a full DetailedTask (errata T-2) tagged with the stream's
    /// subscription id. Returns the events read, the last one with `status`.
    async fn task_events_until(&mut self, l: &Listening, id: &str, status: &str) -> Vec<Value>;
}

impl Tasking for Client {
    async fn create(&mut self, name: &str, arguments: Value) -> String {
        let got = self
            .send("tools/call", declared(tool(name, arguments)))
            .await;
        assert_created(&got)
    }

    async fn get(&mut self, id: &str) -> Value {
        let got = self.send("tasks/get", declared(task_id(id))).await;
        let r = got.result().clone();
        assert_eq!(
            r["taskId"],
            json!(id),
            "{:?}: the task asked for: {r}",
            self.kind
        );
        let status = r["status"].as_str().unwrap_or("").to_owned();
        assert_detailed(&r, &status);
        r
    }

    async fn update(&mut self, id: &str, responses: Value) {
        let got = self
            .send(
                "tasks/update",
                declared(json!({"taskId": id, "inputResponses": responses})),
            )
            .await;
        assert_ack(got.result());
    }

    async fn update_unchecked(&mut self, id: &str, responses: Value) {
        let got = self
            .send_unchecked(
                "tasks/update",
                declared(json!({"taskId": id, "inputResponses": responses})),
            )
            .await;
        assert_ack(got.result());
    }

    async fn cancel(&mut self, id: &str) {
        let got = self.send("tasks/cancel", declared(task_id(id))).await;
        assert_ack(got.result());
    }

    async fn wait_for(&mut self, id: &str, statuses: &[&str]) -> Value {
        let deadline = Deadline::new(format!("task {id} reaches {statuses:?}"));
        loop {
            let task = self.get(id).await;
            let status = task["status"].as_str().unwrap_or("");
            if statuses.contains(&status) {
                return task;
            }
            assert!(
                !is_terminal(status),
                "{:?}: task {id} ended {status}, expected one of {statuses:?}: {task}",
                self.kind
            );
            deadline.tick(&task).await;
        }
    }

    async fn wait_terminal(&mut self, id: &str) -> Value {
        self.wait_for(id, &["completed", "failed", "cancelled"])
            .await
    }

    async fn listen_tasks(&mut self, params: Value) -> Result<Listening, Got> {
        self.listen_tasks_with(params, &[]).await
    }

    async fn listen_tasks_with(
        &mut self,
        params: Value,
        headers: &[(&str, &str)],
    ) -> Result<Listening, Got> {
        let id = json!(self.next_id());
        let ack = self.try_listen(id.clone(), params, headers).await?;
        check_notification(&ack);
        Ok(Listening {
            id,
            ack: ack["params"]["notifications"].clone(),
        })
    }

    async fn event(&mut self, l: &Listening, within: Duration) -> Option<Value> {
        match self.next(&l.id, within).await {
            Next::Msg(m) => Some(m),
            Next::End | Next::Timeout => None,
        }
    }

    async fn task_events_until(&mut self, l: &Listening, id: &str, status: &str) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let m = self.event(l, PATIENCE).await.unwrap_or_else(|| {
                panic!(
                    "{:?}: no notifications/tasks with status {status} for {id}; saw {seen:#?}",
                    self.kind
                )
            });
            assert_eq!(m["method"], "notifications/tasks", "{:?}: {m}", self.kind);
            assert_task_note(&m, &l.id);
            assert_eq!(m["params"]["taskId"], json!(id), "{:?}: {m}", self.kind);
            let done = m["params"]["status"] == status;
            seen.push(m);
            if done {
                return seen;
            }
        }
    }
}

// ---- shapes ----

fn is_terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

/// The keys of an object.
pub(crate) fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// Unix milliseconds of a `YYYY-MM-DDTHH:MM:SS.mmmZ` timestamp (UTC at millisecond
/// precision, as presa writes them), or `None` for any other form.
pub(crate) fn iso_ms(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() != 24 {
        return None;
    }
    for (i, c) in [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
        (23, b'Z'),
    ] {
        if b[i] != c {
            return None;
        }
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        let part = s.get(from..to)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (y, m, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hh, mm, ss, ms) = (num(11, 13)?, num(14, 16)?, num(17, 19)?, num(20, 23)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 59 {
        return None;
    }
    // Days from 1970-01-01 to a civil date (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(((days * 24 + hh) * 60 + mm) * 60 * 1000 + ss * 1000 + ms).ok()
}

/// Unix milliseconds now.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The fields every task shape shares (reference 3.3): a task id, a known status, UTC
/// ISO timestamps at millisecond precision close to now, `ttlMs` present (null or a
/// positive integer), a positive integer `pollIntervalMs`, and none of the v1 or MRTR
/// fields.
#[track_caller]
pub(crate) fn assert_task_fields(t: &Value) {
    let id = t["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("taskId is a string at the top level: {t}"));
    assert!(
        !id.is_empty() && id.len() <= 256,
        "taskId is 1 to 256 bytes: {t}"
    );
    let status = t["status"].as_str().unwrap_or("");
    assert!(
        matches!(
            status,
            "working" | "input_required" | "completed" | "failed" | "cancelled"
        ),
        "a known status: {t}"
    );
    if let Some(m) = t.get("statusMessage") {
        assert!(m.is_string(), "statusMessage is a string: {t}");
    }
    let created = iso_ms(t["createdAt"].as_str().unwrap_or(""))
        .unwrap_or_else(|| panic!("createdAt is UTC ISO 8601 with milliseconds: {t}"));
    let updated = iso_ms(t["lastUpdatedAt"].as_str().unwrap_or(""))
        .unwrap_or_else(|| panic!("lastUpdatedAt is UTC ISO 8601 with milliseconds: {t}"));
    let now = now_ms();
    assert!(
        created <= now + 1000 && now < created + 120_000,
        "createdAt is the creation time ({now} ms now): {t}"
    );
    assert!(
        updated >= created,
        "lastUpdatedAt is not before createdAt: {t}"
    );
    assert!(
        updated <= now + 1000,
        "lastUpdatedAt is not in the future: {t}"
    );
    match t.get("ttlMs") {
        Some(Value::Null) => {}
        Some(v) => assert!(
            v.as_u64().is_some_and(|n| n > 0),
            "ttlMs is null or a positive integer: {t}"
        ),
        None => panic!("the ttlMs key is present: {t}"),
    }
    assert!(
        t["pollIntervalMs"].as_u64().is_some_and(|n| n > 0),
        "pollIntervalMs is a positive integer: {t}"
    );
    for absent in ["ttl", "pollInterval", "requestState", "task"] {
        assert!(t.get(absent).is_none(), "no {absent}: {t}");
    }
}

/// Asserts the status-specific payload of a DetailedTask (reference 4.2; errata T-2 for
/// notifications): exactly the one field its status carries.
#[track_caller]
pub(crate) fn assert_payload(t: &Value, status: &str) {
    assert_eq!(t["status"], json!(status), "{t}");
    let has = |k: &str| t.get(k).is_some();
    match status {
        "working" | "cancelled" => {
            for k in ["result", "error", "inputRequests"] {
                assert!(!has(k), "a {status} task has no {k}: {t}");
            }
        }
        "input_required" => {
            assert!(!has("result") && !has("error"), "{t}");
            let requests = t["inputRequests"]
                .as_object()
                .unwrap_or_else(|| panic!("inputRequests is an object: {t}"));
            assert!(!requests.is_empty(), "inputRequests is not empty: {t}");
            assert_valid("InputRequests", &t["inputRequests"]);
            for (key, r) in requests {
                assert_eq!(
                    keys(r),
                    BTreeSet::from(["method", "params"]),
                    "input request {key} is a bare {{method, params}}: {t}"
                );
            }
        }
        "completed" => {
            assert!(!has("error") && !has("inputRequests"), "{t}");
            let result = &t["result"];
            assert!(
                result.is_object(),
                "a completed task inlines its result: {t}"
            );
            assert_valid("CallToolResult", result);
            assert!(
                result["content"].as_array().is_some_and(|c| !c.is_empty()),
                "the inlined result has non-empty content: {t}"
            );
            assert!(
                result["_meta"]
                    .get("io.modelcontextprotocol/related-task")
                    .is_none(),
                "no v1 related-task _meta on the inlined result: {t}"
            );
            assert_ne!(result["resultType"], "task", "{t}");
        }
        "failed" => {
            assert!(!has("result") && !has("inputRequests"), "{t}");
            assert!(t["error"]["code"].is_i64(), "error.code is an integer: {t}");
            assert!(
                t["error"]["message"].is_string(),
                "error.message is a string: {t}"
            );
            assert!(
                t["statusMessage"].is_string(),
                "a failed task says why in statusMessage (errata section 3): {t}"
            );
        }
        other => panic!("unknown status {other}: {t}"),
    }
}

/// Asserts a `tasks/get` result: a DetailedTask with `resultType: "complete"` and
/// serverInfo `_meta`.
#[track_caller]
pub(crate) fn assert_detailed(t: &Value, status: &str) {
    assert_eq!(t["resultType"], "complete", "tasks/get is complete: {t}");
    assert_task_fields(t);
    assert_payload(t, status);
    assert!(
        t["_meta"][SERVER_INFO]["name"].is_string(),
        "serverInfo in _meta: {t}"
    );
}

/// Asserts a CreateTaskResult (reference 3.3) and returns the task id.
#[track_caller]
pub(crate) fn assert_created(got: &Got) -> String {
    let r = got.result();
    assert_eq!(
        r["resultType"], "task",
        "{:?}: expected a CreateTaskResult: {r}",
        got.kind
    );
    assert_task_fields(r);
    assert_eq!(r["status"], "working", "{:?}: {r}", got.kind);
    for absent in [
        "result",
        "error",
        "inputRequests",
        "content",
        "isError",
        "structuredContent",
    ] {
        assert!(r.get(absent).is_none(), "{:?}: no {absent}: {r}", got.kind);
    }
    assert!(
        r["_meta"][SERVER_INFO]["name"].is_string(),
        "{:?}: serverInfo in _meta: {r}",
        got.kind
    );
    r["taskId"].as_str().unwrap_or_default().to_owned()
}

/// Asserts the empty acknowledgement of `tasks/update` and `tasks/cancel`.
#[track_caller]
pub(crate) fn assert_ack(r: &Value) {
    assert_eq!(
        keys(r),
        BTreeSet::from(["_meta", "resultType"]),
        "an empty acknowledgement: {r}"
    );
    assert_eq!(r["resultType"], "complete", "{r}");
    assert!(r["_meta"][SERVER_INFO]["name"].is_string(), "{r}");
}

/// Asserts a synchronous `tools/call` result (no task) and returns its text.
#[track_caller]
pub(crate) fn assert_sync(got: &Got) -> String {
    let r = got.result();
    assert_eq!(
        r["resultType"], "complete",
        "{:?}: not a task: {r}",
        got.kind
    );
    assert!(r.get("taskId").is_none(), "{:?}: no taskId: {r}", got.kind);
    assert!(r.get("task").is_none(), "{:?}: no task: {r}", got.kind);
    text(r)
}

/// The text blocks of a `tools/call` result, joined.
pub(crate) fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Asserts a `notifications/tasks`: a full DetailedTask without `resultType`, tagged with
/// the subscription id `sub` (reference section 8, errata T-2).
#[track_caller]
pub(crate) fn assert_task_note(m: &Value, sub: &Value) {
    let p = &m["params"];
    assert!(p.get("resultType").is_none(), "no resultType: {m}");
    assert_task_fields(p);
    let status = p["status"].as_str().unwrap_or("");
    assert_payload(p, status);
    assert_eq!(p["_meta"][SUBSCRIPTION_ID], *sub, "{m}");
}

/// A DetailedTask without `resultType` and `_meta`, to compare a notification with
/// `tasks/get`.
pub(crate) fn bare(t: &Value) -> Value {
    let mut t = t.clone();
    if let Some(m) = t.as_object_mut() {
        m.remove("resultType");
        m.remove("_meta");
    }
    t
}

// ---- a server of observable task tools ----

/// Counters a [`Lab`]'s tools bump.
#[derive(Default)]
pub(crate) struct Probe {
    /// Runs of `gate` and `sleeper` that began.
    pub(crate) started: AtomicUsize,
    /// Runs that returned normally.
    pub(crate) finished: AtomicUsize,
    /// Drop guards dropped (at the end of a run, or when its future was dropped).
    pub(crate) dropped: AtomicUsize,
    /// Runs whose context saw cancellation.
    pub(crate) saw_cancel: AtomicUsize,
    /// Runs of `quick`.
    pub(crate) quick_runs: AtomicUsize,
    /// Runs of `pair`.
    pub(crate) pair_runs: AtomicUsize,
}

impl Probe {
    pub(crate) fn get(counter: &AtomicUsize) -> usize {
        counter.load(Ordering::SeqCst)
    }
}

struct DropGuard(Arc<Probe>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

/// A server of task tools, with the [`Tasks`] value installed in it.
pub(crate) struct Lab {
    pub(crate) server: Server,
    pub(crate) tasks: Tasks,
    /// `gate` and `ask` wait for a permit of this before going on.
    pub(crate) gate: Arc<Semaphore>,
    pub(crate) probe: Arc<Probe>,
}

#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
struct Proceed {
    /// Whether to go on.
    proceed: bool,
}

/// `builder` deriving each HTTP request's principal from its `X-Principal` header.
pub(crate) fn by_principal(builder: ServerBuilder) -> ServerBuilder {
    builder.principal(|headers| {
        headers
            .and_then(|h| h.get("x-principal"))
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    })
}

/// The `X-Principal` header of principal alice.
pub(crate) const ALICE: [(&str, &str); 1] = [("X-Principal", "alice")];

/// A lab scoping tasks by principal (see [`by_principal`]) served over HTTP, with alice's
/// `gate` task created: the lab, the client and the task id.
pub(crate) async fn alice_gate_task() -> (Lab, Client, String) {
    let lab = Lab::with(Tasks::builder(), by_principal);
    let mut w = Client::start(Kind::Http, &lab.server).await;
    let got = w
        .send_with("tools/call", declared(tool("gate", json!({}))), &ALICE)
        .await;
    let id = assert_created(&got);
    (lab, w, id)
}

impl Lab {
    /// A lab with these Tasks knobs.
    pub(crate) fn new(knobs: TasksBuilder) -> Lab {
        Lab::with(knobs, |b| b)
    }

    /// A lab with these Tasks knobs and more builder settings.
    pub(crate) fn with(
        knobs: TasksBuilder,
        more: impl FnOnce(ServerBuilder) -> ServerBuilder,
    ) -> Lab {
        let tasks = knobs.build();
        let gate = Arc::new(Semaphore::new(0));
        let probe = Arc::new(Probe::default());
        let builder = Server::builder(Implementation::new("presa-tasks-tests", "0.0.1"))
            .tool(gate_tool(&gate, &probe))
            .tool(sleeper_tool(&probe))
            .tool(quick_tool(&probe))
            .tool(ask_tool(&gate))
            .tool(gate_fail_tool(&gate))
            .tool(pair_tool(&gate, &probe))
            .tool(
                Tool::new("panicky")
                    .description("Panics")
                    .task(TaskMode::Required)
                    .handler(|_: ToolCall| async move {
                        if std::hint::black_box(true) {
                            panic!("secret panic detail 7f3a");
                        }
                        "unreachable"
                    }),
            )
            .tool(
                Tool::new("chatty")
                    .description("Tries to send progress and a log message")
                    .task(TaskMode::Required)
                    .handler(|call: ToolCall| async move {
                        let progress = call.ctx.progress(0.5, Some(1.0), Some("half"));
                        let log = call.ctx.log(presa::LogLevel::Error, "from a task");
                        format!("progress sent: {progress}, log sent: {log}")
                    }),
            )
            .extension(tasks.clone());
        let server = more(builder).build().expect("the lab server builds");
        Lab {
            server,
            tasks,
            gate,
            probe,
        }
    }

    /// How many tasks the store holds, expired or not.
    pub(crate) fn stored(&self) -> usize {
        at_once(self.tasks.store().count(None, 0))
    }

    /// The stored record of task `id`, if any.
    pub(crate) fn record(&self, id: &str) -> Option<presa::tasks::TaskRecord> {
        at_once(self.tasks.store().get(id))
    }

    /// The stored status of task `id`.
    pub(crate) fn stored_status(&self, id: &str) -> Option<TaskStatus> {
        self.record(id).map(|r| r.status)
    }

    /// Takes every permit left on the gate.
    pub(crate) fn drain_gate(&self) {
        while let Ok(p) = self.gate.try_acquire() {
            p.forget();
        }
    }

    /// Waits until `counter` reaches `n`.
    pub(crate) async fn wait_count(&self, counter: &AtomicUsize, n: usize, what: &str) {
        presa_tests::wait::until(&format!("{what} reaches {n}"), || {
            counter.load(Ordering::SeqCst) >= n
        })
        .await;
    }
}

/// `gate` (always a task): waits for a permit of the gate, then answers `released`. It
/// bumps `started`, `finished`, `dropped` (a guard held across the wait) and `saw_cancel`
/// (a watcher of its context's cancellation).
fn gate_tool(gate: &Arc<Semaphore>, probe: &Arc<Probe>) -> Tool {
    let gate = Arc::clone(gate);
    let probe = Arc::clone(probe);
    Tool::new("gate")
        .description("Waits for the test to open the gate")
        .task(TaskMode::Required)
        .handler(move |call: ToolCall| {
            let gate = Arc::clone(&gate);
            let probe = Arc::clone(&probe);
            async move {
                probe.started.fetch_add(1, Ordering::SeqCst);
                let _guard = DropGuard(Arc::clone(&probe));
                let token = call.ctx.cancellation_token();
                let watcher = Arc::clone(&probe);
                tokio::spawn(async move {
                    token.cancelled().await;
                    watcher.saw_cancel.fetch_add(1, Ordering::SeqCst);
                });
                if let Ok(p) = gate.acquire().await {
                    p.forget();
                }
                probe.finished.fetch_add(1, Ordering::SeqCst);
                "released"
            }
        })
}

/// `sleeper` (a task when declared): sleeps `ms` milliseconds, then answers `slept <ms>`.
fn sleeper_tool(probe: &Arc<Probe>) -> Tool {
    let probe = Arc::clone(probe);
    Tool::new("sleeper")
        .description("Sleeps")
        .input_schema(json!({
            "type": "object",
            "properties": {"ms": {"type": "integer", "minimum": 0}},
            "required": ["ms"]
        }))
        .task(TaskMode::Optional)
        .handler(move |call: ToolCall| {
            let probe = Arc::clone(&probe);
            async move {
                probe.started.fetch_add(1, Ordering::SeqCst);
                let _guard = DropGuard(Arc::clone(&probe));
                let ms = call
                    .arguments
                    .get("ms")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                probe.finished.fetch_add(1, Ordering::SeqCst);
                format!("slept {ms}")
            }
        })
}

/// `quick` (always a task): answers `quick <n>` at once.
fn quick_tool(probe: &Arc<Probe>) -> Tool {
    let probe = Arc::clone(probe);
    Tool::new("quick")
        .description("Answers at once")
        .input_schema(json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "additionalProperties": false
        }))
        .task(TaskMode::Required)
        .handler(move |call: ToolCall| {
            let probe = Arc::clone(&probe);
            async move {
                probe.quick_runs.fetch_add(1, Ordering::SeqCst);
                format!(
                    "quick {}",
                    call.arguments.get("n").and_then(Value::as_i64).unwrap_or(0)
                )
            }
        })
}

/// `gate_fail` (always a task): waits for a gate permit, then fails with a protocol
/// error.
fn gate_fail_tool(gate: &Arc<Semaphore>) -> Tool {
    let gate = Arc::clone(gate);
    Tool::new("gate_fail")
        .description("Waits for the gate, then fails")
        .task(TaskMode::Required)
        .handler(move |_: ToolCall| {
            let gate = Arc::clone(&gate);
            async move {
                if let Ok(p) = gate.acquire().await {
                    p.forget();
                }
                Err::<String, _>(Error::internal())
            }
        })
}

/// `pair` (always a task): asks `a` and `b` at once; every run after the first waits for
/// a gate permit before asking (slow work between rounds). Bumps `pair_runs`.
fn pair_tool(gate: &Arc<Semaphore>, probe: &Arc<Probe>) -> Tool {
    let gate = Arc::clone(gate);
    let probe = Arc::clone(probe);
    Tool::new("pair")
        .description("Asks two questions, slowly")
        .task(TaskMode::Required)
        .handler(move |call: ToolCall| {
            let gate = Arc::clone(&gate);
            let probe = Arc::clone(&probe);
            async move {
                let run = probe.pair_runs.fetch_add(1, Ordering::SeqCst);
                if run > 0
                    && let Ok(p) = gate.acquire().await
                {
                    p.forget();
                }
                let a = call.ctx.elicit::<Proceed>("a", "A?");
                // The question names the run that asks it, so a run that asked `b`
                // again while it was pending would show in `inputRequests`.
                let b = call
                    .ctx
                    .elicit::<Proceed>("b", &format!("B? (run {})", run + 1));
                let yes = |e: presa::mrtr::Elicitation<Proceed>| {
                    matches!(
                        e,
                        presa::mrtr::Elicitation::Accepted(Proceed { proceed: true })
                    )
                };
                let (a, b) = (yes(a.get()?), yes(b.get()?));
                Ok::<_, Error>(format!("a: {a}, b: {b}"))
            }
        })
}

/// `ask` (always a task): waits for a gate permit, then asks `proceed` with a form.
fn ask_tool(gate: &Arc<Semaphore>) -> Tool {
    let gate = Arc::clone(gate);
    Tool::new("ask")
        .description("Waits for the gate, then asks whether to proceed")
        .task(TaskMode::Required)
        .handler(move |call: ToolCall| {
            let gate = Arc::clone(&gate);
            async move {
                if let Ok(p) = gate.acquire().await {
                    p.forget();
                }
                let answer = call.ctx.elicit::<Proceed>("proceed", "Proceed?").get()?;
                let go = matches!(
                    answer,
                    presa::mrtr::Elicitation::Accepted(Proceed { proceed: true })
                );
                Ok::<_, Error>(format!("proceed: {go}"))
            }
        })
}

/// A server with the fixture-like tools but no Tasks extension.
pub(crate) fn without_tasks() -> Server {
    Server::builder(Implementation::new("presa-no-tasks", "0.0.1"))
        .tool(
            Tool::new("optional_tool")
                .description("Would be a task if Tasks were installed")
                .task(TaskMode::Optional)
                .handler(|_: ToolCall| async move { "ran in the request" }),
        )
        .build()
        .expect("the server builds")
}

/// The keys a tool listing may have: no task decoration (reference 2.1).
pub(crate) const LISTING_KEYS: &[&str] = &[
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "icons",
    "_meta",
];

/// Asserts a tools/list result carries no task decoration.
#[track_caller]
pub(crate) fn assert_no_task_decoration(list: &Value) {
    for t in list["tools"].as_array().expect("a tools list") {
        for k in keys(t) {
            assert!(LISTING_KEYS.contains(&k), "no task decoration ({k}) in {t}");
        }
        for k in keys(&t["_meta"]) {
            assert!(!k.contains("task"), "no task decoration in _meta: {t}");
        }
    }
}

pub(crate) use presa_tests::http::base64_of;

// ---- section 2: capability negotiation ----

/// 2.1: `server/discover` advertises the extension with empty settings, no v1
/// `capabilities.tasks`, and `tools/list` carries no task decoration.
#[tokio::test]
async fn discover_advertises_tasks_with_empty_settings_and_no_legacy_key() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        for caps in [tasks_caps(), plain_caps()] {
            let got = w.send("server/discover", with_caps(json!({}), caps)).await;
            let caps = &got.result()["capabilities"];
            assert_eq!(caps["extensions"][TASKS], json!({}), "{kind:?}: {caps}");
            assert!(
                caps.get("tasks").is_none(),
                "{kind:?}: no v1 tasks key: {caps}"
            );
            assert_eq!(
                caps["tools"],
                json!({"listChanged": true}),
                "{kind:?}: {caps}"
            );
        }
        let list = w.send("tools/list", declared(json!({}))).await;
        assert_no_task_decoration(list.result());
    }
}

/// A server without the extension advertises no `extensions` and has no task methods.
#[tokio::test]
async fn without_the_extension_nothing_is_advertised_and_task_methods_are_32601() {
    let server = without_tasks();
    for kind in KINDS {
        let mut w = Client::start(kind, &server).await;
        let got = w.send("server/discover", declared(json!({}))).await;
        let caps = &got.result()["capabilities"];
        assert!(caps.get("extensions").is_none(), "{kind:?}: {caps}");
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            w.send(
                method,
                declared(json!({"taskId": "t", "inputResponses": {}})),
            )
            .await
            .method_not_found();
        }
        let got = w
            .send("tools/call", declared(tool("optional_tool", json!({}))))
            .await;
        assert_eq!(assert_sync(&got), "ran in the request", "{kind:?}");
    }
}

// ---- section 3.2: the decision table ----

/// A sync tool runs in the request whether or not the client declared Tasks.
#[tokio::test]
async fn sync_tool_runs_in_the_request_either_way() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        for caps in [tasks_caps(), plain_caps(), json!({})] {
            let got = w
                .send(
                    "tools/call",
                    with_caps(tool("greet", json!({"name": "World"})), caps),
                )
                .await;
            assert_eq!(assert_sync(&got), "Hello, World!", "{kind:?}");
        }
    }
}

/// An optional tool is a task only when the request declared Tasks; the declaration is
/// read per request, so one session can do both (reference 2.2).
#[tokio::test]
async fn optional_tool_is_a_task_only_for_a_declaring_request() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let args = json!({"seconds": 0, "label": "opt"});
        let got = w
            .send("tools/call", undeclared(tool("slow_compute", args.clone())))
            .await;
        assert_eq!(assert_sync(&got), "Completed opt", "{kind:?}");
        let id = w.create("slow_compute", args.clone()).await;
        let got = w
            .send(
                "tools/call",
                with_caps(tool("slow_compute", args.clone()), json!({})),
            )
            .await;
        assert_eq!(assert_sync(&got), "Completed opt", "{kind:?}");
        let done = w.wait_for(&id, &["completed"]).await;
        assert_eq!(text(&done["result"]), "Completed opt", "{kind:?}");
    }
}

/// A required tool without the declaration is -32021 (HTTP 400) with the full data
/// shape, and its handler never runs; with the declaration it is a task.
#[tokio::test]
async fn required_tool_without_the_declaration_is_32021_and_does_not_run() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        for caps in [plain_caps(), json!({})] {
            w.send(
                "tools/call",
                with_caps(tool("failing_job", json!({})), caps),
            )
            .await
            .missing_tasks();
        }
        let id = w.create("failing_job", json!({})).await;
        w.wait_terminal(&id).await;

        let lab = Lab::new(Tasks::builder());
        let mut w = Client::start(kind, &lab.server).await;
        w.send("tools/call", undeclared(tool("quick", json!({"n": 1}))))
            .await
            .missing_tasks();
        assert_eq!(
            Probe::get(&lab.probe.quick_runs),
            0,
            "{kind:?}: the handler did not run"
        );
        assert_eq!(lab.stored(), 0, "{kind:?}: no task stored");
    }
}

/// SEP-2663 backward compatibility: a client declaring only the v1 `tasks` capability
/// is a non-declaring client.
#[tokio::test]
async fn legacy_tasks_client_capability_counts_as_undeclared() {
    let legacy = json!({
        "elicitation": {},
        "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    });
    for kind in KINDS {
        let mut w = fixture(kind).await;
        w.send(
            "tools/call",
            with_caps(tool("failing_job", json!({})), legacy.clone()),
        )
        .await
        .missing_tasks();
        let got = w
            .send(
                "tools/call",
                with_caps(tool("slow_compute", json!({"label": "v1"})), legacy.clone()),
            )
            .await;
        assert_eq!(assert_sync(&got), "Completed v1", "{kind:?}");
        for method in ["tasks/get", "tasks/cancel"] {
            w.send(method, with_caps(task_id("gate-test"), legacy.clone()))
                .await
                .missing_tasks();
        }
    }
}

/// 3.1: a v1 `params.task` is accepted and ignored: it neither makes a sync tool a task
/// nor an undeclared call a task, nor sets a task's TTL or poll interval.
#[tokio::test]
async fn legacy_task_param_is_accepted_and_ignored() {
    let hint = json!({"ttl": 60000, "pollInterval": 5000});
    for kind in KINDS {
        let mut w = fixture(kind).await;
        for caps in [tasks_caps(), plain_caps()] {
            let mut params = tool("greet", json!({"name": "legacy-hint"}));
            params["task"] = hint.clone();
            let got = w.send("tools/call", with_caps(params, caps)).await;
            assert_eq!(assert_sync(&got), "Hello, legacy-hint!", "{kind:?}");
        }
        let mut params = tool("slow_compute", json!({"label": "hinted"}));
        params["task"] = hint.clone();
        let got = w.send("tools/call", undeclared(params.clone())).await;
        assert_eq!(assert_sync(&got), "Completed hinted", "{kind:?}");
        let got = w.send("tools/call", declared(params)).await;
        assert_created(&got);
        let r = got.result();
        assert_eq!(
            r["ttlMs"],
            json!(3_600_000),
            "{kind:?}: the server's TTL: {r}"
        );
        assert_eq!(
            r["pollIntervalMs"],
            json!(100),
            "{kind:?}: the server's interval: {r}"
        );
    }
}

/// 3.2 step 4: invalid arguments get the direct call's `isError` result synchronously,
/// and no task is created.
#[tokio::test]
async fn invalid_arguments_answer_is_error_synchronously_and_create_no_task() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let bad = tool("slow_compute", json!({"seconds": "soon"}));
        let direct = w.send("tools/call", undeclared(bad.clone())).await;
        let as_task = w.send("tools/call", declared(bad)).await;
        for got in [&direct, &as_task] {
            let r = got.result();
            assert_eq!(r["resultType"], "complete", "{kind:?}: {r}");
            assert_eq!(r["isError"], json!(true), "{kind:?}: {r}");
            assert!(r.get("taskId").is_none(), "{kind:?}: {r}");
        }
        assert_eq!(
            direct.result()["content"],
            as_task.result()["content"],
            "{kind:?}: the same result as the direct call"
        );

        let lab = Lab::new(Tasks::builder());
        let mut w = Client::start(kind, &lab.server).await;
        for args in [json!({"n": "one"}), json!({"n": 1, "extra": true})] {
            let got = w.send("tools/call", declared(tool("quick", args))).await;
            assert_eq!(got.result()["isError"], json!(true), "{kind:?}");
            assert!(got.result().get("taskId").is_none(), "{kind:?}");
        }
        assert_eq!(lab.stored(), 0, "{kind:?}: no task stored");
        assert_eq!(Probe::get(&lab.probe.quick_runs), 0, "{kind:?}");
    }
}

/// 3.2 step 4: an unknown tool is -32602 `Unknown tool: <name>` before any task exists;
/// malformed arguments are the core -32602.
#[tokio::test]
async fn unknown_tool_is_32602_before_task_creation() {
    let lab = Lab::new(Tasks::builder());
    for kind in KINDS {
        let mut w = Client::start(kind, &lab.server).await;
        w.send("tools/call", declared(tool("no_such_tool", json!({}))))
            .await
            .invalid_params("Unknown tool: no_such_tool");
        w.send_unchecked(
            "tools/call",
            declared(json!({"name": "quick", "arguments": [1]})),
        )
        .await
        .error(-32602, 400);
        assert_eq!(lab.stored(), 0, "{kind:?}: no task stored");
    }
}

/// Errata section 4: only `tools/call` creates tasks; other methods answer as usual for a
/// client declaring Tasks.
#[tokio::test]
async fn only_tools_call_creates_tasks() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let got = w
            .send(
                "prompts/get",
                declared(json!({"name": "test_simple_prompt"})),
            )
            .await;
        assert_eq!(got.result()["resultType"], "complete", "{kind:?}");
        let got = w
            .send(
                "resources/read",
                declared(json!({"uri": "test://static-text"})),
            )
            .await;
        assert_eq!(got.result()["resultType"], "complete", "{kind:?}");
    }
}

// ---- section 3.3: the CreateTaskResult ----

/// The CreateTaskResult is flat: resultType `task`, a top-level taskId, status
/// `working`, ISO timestamps with milliseconds, ttlMs and pollIntervalMs as integers,
/// serverInfo `_meta`; no task wrapper, result, error, inputRequests, requestState, ttl
/// or pollInterval. It is a single plain JSON response with no notifications before it.
#[tokio::test]
async fn create_task_result_is_flat() {
    for kind in KINDS {
        let mut w = fixture(kind).await;
        let got = w
            .send(
                "tools/call",
                declared(tool("slow_compute", json!({"seconds": 60}))),
            )
            .await;
        let id = assert_created(&got);
        let r = got.result();
        assert_eq!(
            got.messages.len(),
            1,
            "{kind:?}: no notifications: {:?}",
            got.messages
        );
        assert!(!got.sse, "{kind:?}: plain JSON");
        assert!(
            w.take_backlog().is_empty(),
            "{kind:?}: nothing else was sent"
        );
        assert_eq!(r["ttlMs"], json!(3_600_000), "{kind:?}: {r}");
        assert_eq!(r["pollIntervalMs"], json!(100), "{kind:?}: {r}");
        assert_eq!(r["createdAt"], r["lastUpdatedAt"], "{kind:?}: {r}");
        assert_eq!(
            r["_meta"][SERVER_INFO]["name"], "presa-conformance",
            "{kind:?}: {r}"
        );
        w.cancel(&id).await;
    }
}

/// How many task ids the entropy test draws.
const SAMPLES: usize = 512;

/// The Shannon entropy, in bits, of each character position over `ids` (of one length),
/// with the Miller-Madow correction for a finite sample.
fn entropy_by_position(ids: &[String]) -> Vec<f64> {
    let n = ids.len() as f64;
    (0..ids[0].len())
        .map(|at| {
            let mut counts = std::collections::HashMap::new();
            for id in ids {
                *counts.entry(id.as_bytes()[at]).or_insert(0usize) += 1;
            }
            let shannon: f64 = counts
                .values()
                .map(|&c| {
                    let p = c as f64 / n;
                    -p * p.log2()
                })
                .sum();
            shannon + (counts.len() as f64 - 1.0) / (2.0 * n * std::f64::consts::LN_2)
        })
        .collect()
}

/// The entropy measure itself: ids drawn at random over the whole alphabet come out
/// near their ceiling, and ids of the same length made from a counter or a clock fall
/// far short of 128 bits, with their fixed positions near zero.
#[test]
fn the_entropy_measure_tells_random_ids_from_counters() {
    use base64::Engine;
    let random: Vec<String> = (0..SAMPLES)
        .map(|i| {
            // A keyed hash stands in for randomness: what matters is its spread.
            let digest = <sha2::Sha256 as sha2::Digest>::digest(format!("sample {i}"));
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..24])
        })
        .collect();
    let bits: f64 = entropy_by_position(&random).iter().sum();
    assert!(bits > 180.0, "{bits}");
    let counter: Vec<String> = (0..SAMPLES).map(|i| format!("{i:032}")).collect();
    let positions = entropy_by_position(&counter);
    assert!(positions.iter().sum::<f64>() < 20.0, "{positions:?}");
    assert!(positions[0] < 0.01, "{positions:?}");
    let clock: Vec<String> = (0..SAMPLES)
        .map(|i| format!("{}{}", 1_795_939_501_123u64 + i as u64, &random[i][..19]))
        .collect();
    let positions = entropy_by_position(&clock);
    assert!(positions.iter().sum::<f64>() < 128.0, "{positions:?}");
}

/// Errata section 4: task ids are unguessable ("sufficient entropy that a third party
/// cannot enumerate or guess them"): long url-safe strings, distinct, and random in
/// every place. The entropy is measured on ids the server made, not read off their
/// alphabet: each character position's Shannon entropy over the sample (with the
/// Miller-Madow correction for a finite sample), summed, must reach 128 bits, no
/// position may be nearly fixed (a counter or a clock in the id), and every bit of the
/// decoded ids must be set about half the time.
#[tokio::test]
async fn task_ids_are_distinct_and_unguessable() {
    use base64::Engine;
    let lab = Lab::new(Tasks::builder().max_workers(SAMPLES));
    let mut w = Client::start(Kind::Http, &lab.server).await;
    let mut ids = Vec::new();
    for n in 0..SAMPLES {
        let id = w.create("quick", json!({"n": n})).await;
        assert!(id.len() >= 22, "at least 128 bits of base64url: {id}");
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "url-safe: {id}"
        );
        ids.push(id);
    }
    let distinct: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), SAMPLES, "distinct ids");

    let len = ids[0].len();
    assert!(ids.iter().all(|id| id.len() == len), "one length: {ids:?}");
    // The most an id of this length and alphabet can hold.
    let ceiling = len as f64 * 64f64.log2();
    let positions = entropy_by_position(&ids);
    for (at, bits) in positions.iter().enumerate() {
        assert!(
            *bits > 5.0,
            "character {at} of the ids is far from random: {bits:.2} bits"
        );
    }
    let bits: f64 = positions.iter().sum();
    assert!(
        bits >= 128.0,
        "task ids carry about {bits:.0} bits (at most {ceiling:.0} for {len} base64url \
         characters); at least 128 are needed"
    );
    let n = SAMPLES as f64;
    let decoded: Vec<Vec<u8>> = ids
        .iter()
        .map(|id| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(id)
                .unwrap_or_else(|e| panic!("{id} is base64url: {e}"))
        })
        .collect();
    for bit in 0..decoded[0].len() * 8 {
        let ones = decoded
            .iter()
            .filter(|d| d[bit / 8] & (0x80 >> (bit % 8)) != 0)
            .count();
        let share = ones as f64 / n;
        assert!(
            (0.35..=0.65).contains(&share),
            "bit {bit} of the decoded ids is set in {share:.2} of them"
        );
    }
}

/// 3.3: creation is strongly consistent: the task is stored before the response is
/// written, and a `tasks/get` sent right after finds it as created.
#[tokio::test]
async fn creation_is_strongly_consistent() {
    let lab = Lab::new(Tasks::builder());
    for kind in KINDS {
        let mut w = Client::start(kind, &lab.server).await;
        let got = w
            .send(
                "tools/call",
                declared(tool("sleeper", json!({"ms": 60_000}))),
            )
            .await;
        let id = assert_created(&got);
        assert!(
            lab.record(&id).is_some(),
            "{kind:?}: stored when the response arrived"
        );
        let task = w.get(&id).await;
        assert_eq!(task["status"], "working", "{kind:?}: {task}");
        assert_eq!(task["createdAt"], got.result()["createdAt"], "{kind:?}");
        w.cancel(&id).await;
    }
    let mut w = fixture(Kind::Stdio).await;
    let id = w.create("slow_compute", json!({"seconds": 60})).await;
    assert_eq!(w.get(&id).await["status"], "working");
    w.cancel(&id).await;
}

/// `ttlMs` and `pollIntervalMs` follow the builder: `ttl(None)` is `"ttlMs": null`
/// (never reaped), on the CreateTaskResult and on `tasks/get`.
#[tokio::test]
async fn ttl_and_poll_interval_follow_the_builder() {
    let cases = [
        (
            Tasks::builder()
                .ttl(None)
                .poll_interval(Duration::from_millis(40)),
            json!(null),
            40_u64,
        ),
        (
            Tasks::builder().ttl(Some(Duration::from_secs(90))),
            json!(90_000),
            250,
        ),
        // Past the schema's integer bound (2^53 − 1): clamped to it, not wrapped (this
        // TTL was written as 384 ms before).
        (
            Tasks::builder()
                .ttl(Some(Duration::from_secs(18_446_744_073_709_552)))
                .poll_interval(Duration::MAX),
            json!(9_007_199_254_740_991_u64),
            9_007_199_254_740_991,
        ),
    ];
    for (knobs, ttl, poll) in cases {
        let lab = Lab::new(knobs);
        for kind in KINDS {
            let mut w = Client::start(kind, &lab.server).await;
            let got = w
                .send("tools/call", declared(tool("quick", json!({}))))
                .await;
            let id = assert_created(&got);
            let done = w.wait_terminal(&id).await;
            for r in [got.result(), &done] {
                assert_eq!(r["ttlMs"], ttl, "{kind:?}: {r}");
                assert_eq!(r["pollIntervalMs"], json!(poll), "{kind:?}: {r}");
            }
            assert_eq!(done["createdAt"], got.result()["createdAt"], "{kind:?}");
        }
    }
}

/// The timestamp reader itself.
#[test]
fn iso_ms_reads_utc_millisecond_timestamps() {
    assert_eq!(iso_ms("1970-01-01T00:00:00.000Z"), Some(0));
    assert_eq!(iso_ms("2026-11-29T08:05:01.123Z"), Some(1_795_939_501_123));
    assert_eq!(iso_ms("2000-02-29T00:00:00.000Z"), Some(951_782_400_000));
    assert_eq!(iso_ms("2026-11-29T08:05:01Z"), None);
    assert_eq!(iso_ms("2026-11-29T08:05:01.123+00:00"), None);
    assert_eq!(iso_ms("2026-11-29 08:05:01.123Z"), None);
}

/// What a lab's store answers: its stores are in memory, so their futures are done at
/// their first poll, which lets the lab's helpers be called from synchronous checks.
fn at_once<T>(answer: presa::tasks::StoreFuture<'_, T>) -> T {
    use futures_util::FutureExt;
    answer
        .now_or_never()
        .expect("an in-memory store answers at once")
        .expect("an in-memory store does not fail")
}
