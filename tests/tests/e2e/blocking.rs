//! Plain (non-`async`) handlers, which run on the blocking pool and cannot be stopped
//! from outside: a request whose client went away (HTTP) or cancelled it (stdio) keeps
//! its in-flight slot until its closure returns, so calling and leaving in a loop cannot
//! pile closures on the pool past `max_in_flight` (nor cancelling tasks, past the Tasks
//! extension's `max_workers`); and the handler sees the cancellation through its
//! context.

use crate::http_util::builder;
use crate::tasks::{Client, Kind, Lab, Tasking, assert_created, declared, tool};
use presa::extract::State;
use presa::tasks::Tasks;
use presa::{HttpConfig, RequestContext, StdioConfig, Tool, ToolCall};
use presa_tests::http::Harness;
use presa_tests::request;
use presa_tests::stdio::Session;
use presa_tests::wait::{Deadline, QUIET, until};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// What the `gated` tool blocks on, and what it reports, shared with the test.
#[derive(Clone, Default)]
struct Gate(Arc<GateInner>);

#[derive(Default)]
struct GateInner {
    open: Mutex<bool>,
    opened: Condvar,
    /// Closures that started.
    started: AtomicUsize,
    /// Closures that saw their request cancelled (each counts once).
    saw_cancel: AtomicUsize,
    /// Closures that returned.
    returned: AtomicUsize,
}

impl Gate {
    fn open(&self) {
        *self.0.open.lock().expect("the gate's lock") = true;
        self.0.opened.notify_all();
    }

    /// Opens the gate when dropped, also when the test fails: the runtime waits for
    /// closures still blocked before a test can end.
    fn opens_on_drop(&self) -> OpensOnDrop {
        OpensOnDrop(self.clone())
    }

    fn close(&self) {
        *self.0.open.lock().expect("the gate's lock") = false;
    }

    fn started(&self) -> usize {
        self.0.started.load(Ordering::SeqCst)
    }

    fn saw_cancel(&self) -> usize {
        self.0.saw_cancel.load(Ordering::SeqCst)
    }

    fn returned(&self) -> usize {
        self.0.returned.load(Ordering::SeqCst)
    }
}

struct OpensOnDrop(Gate);

impl Drop for OpensOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

/// Blocks its thread until the test opens the gate, polling its request's cancellation
/// meanwhile (as a plain handler that wants to stop early does), and notes once that it
/// saw it.
#[presa::tool]
fn gated(gate: State<Gate>, ctx: RequestContext) -> String {
    wait_at(&gate.0.0, &ctx)
}

/// `gated`, always run as a task.
#[presa::tool(task = "required")]
fn gated_task(gate: State<Gate>, ctx: RequestContext) -> String {
    wait_at(&gate.0.0, &ctx)
}

/// What `gated` does.
fn wait_at(gate: &GateInner, ctx: &RequestContext) -> String {
    gate.started.fetch_add(1, Ordering::SeqCst);
    let mut noted = false;
    let mut open = gate.open.lock().expect("the gate's lock");
    while !*open {
        if !noted && ctx.is_cancelled() {
            noted = true;
            gate.saw_cancel.fetch_add(1, Ordering::SeqCst);
        }
        open = gate
            .opened
            .wait_timeout(open, Duration::from_millis(5))
            .expect("the gate's lock")
            .0;
    }
    drop(open);
    gate.returned.fetch_add(1, Ordering::SeqCst);
    "opened".to_owned()
}

/// A server with `gated` and a tool that answers at once.
fn server(gate: &Gate) -> presa::Server {
    builder()
        .state(gate.clone())
        .add::<gated>()
        .tool(
            Tool::new("quick")
                .description("Answers at once")
                .handler(|_: ToolCall| async { "quick" }),
        )
        .build()
        .expect("builds")
}

fn call(id: i64, tool: &str) -> Value {
    request(id, "tools/call", json!({"name": tool, "arguments": {}}))
}

/// The in-flight bound over HTTP.
const N: usize = 2;
/// How many calls past the bound the client makes while the closures run.
const K: usize = 3;

/// With `max_in_flight(N)`: N calls to the plain `gated` tool, each left by its client
/// once it runs. Each closure sees its request cancelled, yet its slot stays held, so
/// the next K calls (connect, call, leave) get 503 and start no closure. Once the gate
/// opens and the closures return, the slots are free again.
#[tokio::test]
async fn http_slots_of_a_plain_handler_are_held_until_it_returns() {
    let gate = Gate::default();
    let _opens = gate.opens_on_drop();
    let h = Harness::start_with(server(&gate), HttpConfig::default().max_in_flight(N)).await;
    let mut pending = Vec::new();
    for id in 1..=N as i64 {
        let http = h.http();
        pending.push(tokio::spawn(async move {
            http.post(&call(id, "gated"), &[]).await
        }));
        until("the closure starts", || gate.started() == id as usize).await;
    }
    // Go away: dropping the requests closes their connections.
    for p in pending {
        p.abort();
        let _ = p.await;
    }
    until("every closure sees its request cancelled", || {
        gate.saw_cancel() == N
    })
    .await;
    // The requests are gone, their closures are not: no slot is free.
    for id in 10..10 + K as i64 {
        let busy = presa_tests::wait::within("a refusal", h.post(&call(id, "gated"), &[])).await;
        busy.assert_error(503, -32603, Some(json!(id)));
        presa_tests::schema::check_response("tools/call", busy.response());
    }
    assert_eq!(gate.started(), N, "no closure started past the bound");
    assert_eq!(gate.returned(), 0);
    gate.open();
    until("the closures return", || gate.returned() == N).await;
    // Every slot is free again: with the gate closed, N calls run at once (each retried
    // while it is refused: a slot is given back a moment after its closure counts
    // itself), and the next is refused.
    gate.close();
    let mut running = Vec::new();
    for id in 100..100 + N as i64 {
        let http = h.http();
        running.push(tokio::spawn(async move {
            let deadline = Deadline::new("a slot is free again");
            loop {
                let r = http.call(id, "tools/call", json!({"name": "gated"})).await;
                if r.status != 503 {
                    return r;
                }
                deadline.tick(&r.body).await;
            }
        }));
    }
    until("N closures run again", || gate.started() == 2 * N).await;
    let busy = h.post(&call(200, "quick"), &[]).await;
    busy.assert_error(503, -32603, Some(json!(200)));
    gate.open();
    for r in running {
        let r = r.await.expect("the call ends");
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.response()["result"]["content"][0]["text"], "opened");
    }
}

/// A plain handler's request that ends normally gives its slot back as the answer is
/// sent, as an `async` one does: one slot serves call after call.
#[tokio::test]
async fn http_a_plain_handler_that_returns_frees_its_slot() {
    let gate = Gate::default();
    gate.open();
    let h = Harness::start_with(server(&gate), HttpConfig::default().max_in_flight(1)).await;
    for id in 1..=5 {
        let deadline = Deadline::new("the one slot is free");
        loop {
            let r = h.call(id, "tools/call", json!({"name": "gated"})).await;
            if r.status != 503 {
                assert_eq!(r.status, 200, "{}", r.body);
                assert_eq!(r.response()["result"]["content"][0]["text"], "opened");
                break;
            }
            deadline.tick(&r.body).await;
        }
    }
    assert_eq!(gate.returned(), 5);
}

/// `notifications/cancelled` for the request `id`.
fn cancel(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
           "params": {"requestId": id, "reason": "the client gave up"}})
}

/// With `max_in_flight(N)` over stdio: N calls to `gated`, each cancelled once it runs.
/// Each closure sees the cancellation, yet its slot stays held: K calls sent next are
/// not served (stdin is not read past the bound) until the gate opens and the closures
/// return; then they are answered, and the cancelled calls never are.
#[tokio::test]
async fn stdio_slots_of_a_plain_handler_are_held_until_it_returns() {
    let gate = Gate::default();
    let _opens = gate.opens_on_drop();
    let mut s = Session::in_process(server(&gate), StdioConfig::default().max_in_flight(N));
    // The channel works: a call is answered.
    let answered = s.call(1, "tools/call", json!({"name": "quick"})).await;
    assert_eq!(
        answered.last().expect("a response")["result"]["content"][0]["text"],
        "quick"
    );
    for id in 10..10 + N as i64 {
        s.send(&call(id, "gated")).await;
        until("the closure starts", || gate.started() == (id - 9) as usize).await;
    }
    for id in 10..10 + N as i64 {
        s.send(&cancel(id)).await;
    }
    until("every closure sees its request cancelled", || {
        gate.saw_cancel() == N
    })
    .await;
    for id in 20..20 + K as i64 {
        s.send(&call(id, "quick")).await;
    }
    // No slot is free while the closures run: nothing is answered (the cancelled calls
    // never are; the quick ones wait).
    assert_eq!(
        s.recv_within(QUIET).await,
        None,
        "answered while the closures run"
    );
    assert_eq!(gate.started(), N);
    gate.open();
    for id in 20..20 + K as i64 {
        let m = s.recv().await.expect("an answer once the closures return");
        assert_eq!(m["id"], json!(id), "{m}");
        assert_eq!(m["result"]["content"][0]["text"], "quick", "{m}");
    }
    until("the closures return", || gate.returned() == N).await;
    assert!(s.finish().await, "the server ends cleanly");
}

/// A task's worker slot (`max_workers`) is held as a request's in-flight slot is: a
/// cancelled task whose plain tool still runs keeps it, so the next task is refused
/// (-32603, `limit: "max_workers"`) until the tool returns; the tool sees the
/// cancellation.
#[tokio::test]
async fn a_cancelled_task_keeps_its_worker_slot_until_its_plain_tool_returns() {
    let gate = Gate::default();
    let _opens = gate.opens_on_drop();
    let lab = Lab::with(Tasks::builder().max_workers(1), |b| {
        b.state(gate.clone()).add::<gated_task>()
    });
    let mut w = Client::start(Kind::Stdio, &lab.server).await;
    let id = w.create("gated_task", json!({})).await;
    until("the closure starts", || gate.started() == 1).await;
    w.cancel(&id).await;
    until("the closure sees the task cancelled", || {
        gate.saw_cancel() == 1
    })
    .await;
    for _ in 0..3 {
        let got = w
            .send("tools/call", declared(tool("gated_task", json!({}))))
            .await;
        let e = got.error(-32603, 500);
        assert_eq!(e["data"]["limit"], "max_workers", "{e}");
    }
    assert_eq!(gate.started(), 1, "no second closure started");
    gate.open();
    let deadline = Deadline::new("the worker slot frees once the closure returns");
    loop {
        let got = w
            .send("tools/call", declared(tool("gated_task", json!({}))))
            .await;
        if got.response().get("result").is_some() {
            let id = assert_created(&got);
            let task = w.wait_for(&id, &["completed"]).await;
            assert_eq!(task["result"]["content"][0]["text"], "opened", "{task}");
            break;
        }
        assert_eq!(got.error(-32603, 500)["data"]["limit"], "max_workers");
        deadline.tick(got.response()).await;
    }
}
