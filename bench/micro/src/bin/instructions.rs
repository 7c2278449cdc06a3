//! Runs one micro-benchmark case N times in process, for counting instructions with
//! callgrind (which, unlike time, does not depend on machine noise). `bench/run` runs
//! each case twice, with N and with 10 N iterations, under
//! `valgrind --tool=callgrind`, and divides the difference by 9 N: instructions per
//! request with the setup cancelled out.
//!
//! Usage: `instructions CASE N`, CASE one of those printed by `instructions list`.

use bench_micro::{answers, bytes, echo_call, mrtr_server, request, server};
use presa::Server;
use presa::testing::TestClient;
use serde_json::{Value, json};

/// A case by its name: its server and its message (whether the answer is a result
/// is told by the name).
fn case(name: &str) -> Option<(Server, Value)> {
    let list = || request("tools/list", json!({}));
    Some(match name {
        "tools/call echo, 1 tool" => (server(0, 100), echo_call()),
        "tools/call echo, 1000 tools" => (server(999, 100), echo_call()),
        "tools/list page of 10, 10 tools" => (server(9, 10), list()),
        "tools/list page of 10, 100 tools" => (server(99, 10), list()),
        "tools/list page of 10, 1000 tools" => (server(999, 10), list()),
        "tools/list page of 100, 100 tools" => (server(99, 100), list()),
        "tools/list page of 100, 1000 tools" => (server(999, 100), list()),
        "resources/read via template" => (
            server(0, 100),
            request("resources/read", json!({"uri": "notes://42"})),
        ),
        "rejected: bad _meta" => {
            let mut bad = echo_call();
            bad["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1999-01-01");
            (server(0, 100), bad)
        }
        "MRTR first round" => {
            let mut first = request("tools/call", json!({"name": "confirm", "arguments": {}}));
            first["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
                json!({"elicitation": {"form": {}}});
            (mrtr_server(), first)
        }
        _ => return None,
    })
}

const CASES: &[&str] = &[
    "tools/call echo, 1 tool",
    "tools/call echo, 1000 tools",
    "tools/list page of 10, 10 tools",
    "tools/list page of 10, 100 tools",
    "tools/list page of 10, 1000 tools",
    "tools/list page of 100, 100 tools",
    "tools/list page of 100, 1000 tools",
    "resources/read via template",
    "rejected: bad _meta",
    "MRTR first round",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("list") {
        for c in CASES {
            println!("{c}");
        }
        return;
    }
    let (Some(name), Some(n)) = (
        args.first(),
        args.get(1).and_then(|n| n.parse::<u64>().ok()),
    ) else {
        eprintln!("usage: instructions (list | CASE N)");
        std::process::exit(2);
    };
    let Some((server, message)) = case(name) else {
        eprintln!("unknown case {name:?}; `instructions list` names them");
        std::process::exit(2);
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let client = TestClient::new(&server);
    let expect_result = !name.starts_with("rejected");
    let message = bytes(&message);
    rt.block_on(async {
        for _ in 0..n {
            let answer = client.send_raw(&message).await;
            if !answers(&answer, expect_result) {
                eprintln!("unexpected answer: {:?}", answer.message);
                std::process::exit(1);
            }
        }
    });
}
