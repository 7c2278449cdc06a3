//! Micro benchmarks of presa's pipeline in process, through the public
//! `presa::testing::TestClient::send_raw` (no socket: each iteration decodes the bytes of
//! a JSON-RPC message with the transports' decoder, runs admission, the method gate,
//! params validation, dispatch and shaping, and writes the response; nothing is parsed
//! back), and the scaling checks of issue 7.
//!
//! `cargo bench -p bench-micro --bench pipeline` (bench/run runs it with shorter times).
//! Request-state seal and open are measured through the public pipeline, as a multi
//! round-trip tools/call: the first round answers `input_required` with a freshly sealed
//! `requestState`; the retry opens it, checks the answer and completes.

use bench_micro::{bytes, echo_call, mrtr_server, request, server};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use presa::testing::TestClient;
use serde_json::{Value, json};
use std::hint::black_box;
use tokio::runtime::Runtime;

fn rt() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Sends `message` once and checks the answer with `ok`, so a benchmark never measures an
/// error path by mistake; returns the message's bytes, which the benchmark then sends.
fn checked(
    rt: &Runtime,
    client: &TestClient,
    message: &Value,
    ok: impl Fn(&Value) -> bool,
) -> Vec<u8> {
    let bytes = bytes(message);
    let raw = rt.block_on(client.send_raw(&bytes)).message;
    let answer: Value = raw
        .as_deref()
        .and_then(|r| serde_json::from_str(r).ok())
        .unwrap_or(Value::Null);
    assert!(ok(&answer), "unexpected answer to {message}: {answer}");
    bytes
}

fn is_result(v: &Value) -> bool {
    v.get("result").is_some()
}

fn pipeline(c: &mut Criterion) {
    let rt = rt();
    let mut g = c.benchmark_group("pipeline");

    let small = server(0, 100);
    let client = TestClient::new(&small);
    let call = echo_call();
    let call_bytes = checked(&rt, &client, &call, |v| {
        v["result"]["content"][0]["text"] == "hello from the presa bench"
    });
    g.bench_function("tools/call echo", |b| {
        b.to_async(&rt)
            .iter(|| client.send_raw(black_box(&call_bytes)))
    });

    let read = request("resources/read", json!({"uri": "notes://42"}));
    let read_bytes = checked(&rt, &client, &read, |v| {
        v["result"]["contents"][0]["text"] == "note 42"
    });
    g.bench_function("resources/read via template", |b| {
        b.to_async(&rt)
            .iter(|| client.send_raw(black_box(&read_bytes)))
    });

    // A request whose _meta names an unsupported protocol version: rejected at
    // admission, before dispatch.
    let mut bad = echo_call();
    bad["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1999-01-01");
    let bad_bytes = checked(&rt, &client, &bad, |v| v.get("error").is_some());
    g.bench_function("rejected: bad _meta", |b| {
        b.to_async(&rt)
            .iter(|| client.send_raw(black_box(&bad_bytes)))
    });

    // Multi round-trip: seal on the first round, open on the retry.
    let mrtr = mrtr_server();
    let client = TestClient::new(&mrtr);
    let elicitation = json!({"elicitation": {"form": {}}});
    let mut first = request("tools/call", json!({"name": "confirm", "arguments": {}}));
    first["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = elicitation.clone();
    let answer = rt.block_on(client.send(first.clone())).message;
    let state = answer["result"]["requestState"].clone();
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    assert!(state.is_string(), "{answer}");
    let first_bytes = bytes(&first);
    g.bench_function("MRTR first round: input_required, state sealed", |b| {
        b.to_async(&rt)
            .iter(|| client.send_raw(black_box(&first_bytes)))
    });
    let mut retry = request(
        "tools/call",
        json!({
            "name": "confirm",
            "arguments": {},
            "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}},
            "requestState": state,
        }),
    );
    retry["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = elicitation;
    let retry_bytes = checked(&rt, &client, &retry, |v| {
        v["result"]["content"][0]["text"] == "confirmed"
    });
    g.bench_function("MRTR retry: state opened, answer checked", |b| {
        b.to_async(&rt)
            .iter(|| client.send_raw(black_box(&retry_bytes)))
    });

    let list = request("tools/list", json!({}));
    for total in [10usize, 1000] {
        // echo plus filler tools: `total` tools in all, default page size (100).
        let s = server(total - 1, 100);
        let client = TestClient::new(&s);
        let list_bytes = checked(&rt, &client, &list, is_result);
        g.bench_function(format!("tools/list of {total} tools (first page)"), |b| {
            b.to_async(&rt)
                .iter(|| client.send_raw(black_box(&list_bytes)))
        });
    }
    g.finish();
}

fn scaling(c: &mut Criterion) {
    let rt = rt();
    let list = request("tools/list", json!({}));

    // One page of 10 items, whatever the catalog's size: the cost must not grow.
    let mut g = c.benchmark_group("scaling: tools/list, page of 10");
    for total in [10usize, 100, 1000] {
        let s = server(total - 1, 10);
        let client = TestClient::new(&s);
        let list_bytes = checked(&rt, &client, &list, |v| {
            v["result"]["tools"].as_array().map(Vec::len) == Some(10)
        });
        g.bench_with_input(BenchmarkId::from_parameter(total), &total, |b, _| {
            b.to_async(&rt)
                .iter(|| client.send_raw(black_box(&list_bytes)))
        });
    }
    g.finish();

    // The default page size (100): grows up to the page size, then stays flat.
    let mut g = c.benchmark_group("scaling: tools/list, default page (100)");
    for total in [10usize, 100, 1000] {
        let s = server(total - 1, 100);
        let client = TestClient::new(&s);
        let list_bytes = checked(&rt, &client, &list, is_result);
        g.bench_with_input(BenchmarkId::from_parameter(total), &total, |b, _| {
            b.to_async(&rt)
                .iter(|| client.send_raw(black_box(&list_bytes)))
        });
    }
    g.finish();

    // tools/call of echo with 1 and with 1,000 registered tools: lookup stays O(1).
    let mut g = c.benchmark_group("scaling: tools/call echo");
    let call = echo_call();
    for total in [1usize, 1000] {
        let s = server(total - 1, 100);
        let client = TestClient::new(&s);
        let call_bytes = checked(&rt, &client, &call, is_result);
        g.bench_with_input(BenchmarkId::from_parameter(total), &total, |b, _| {
            b.to_async(&rt)
                .iter(|| client.send_raw(black_box(&call_bytes)))
        });
    }
    g.finish();
}

criterion_group!(benches, pipeline, scaling);
criterion_main!(benches);
