//! Request-state integrity (wire section 10.4, `mrtr.mdx` "Server Requirements"): every
//! way a `requestState` can be wrong gets the same -32602 "Invalid or expired request
//! state" with no detail, over both transports; the state is bound to the method, the
//! params, the server's name (audience) and the principal; it expires; it may be made
//! single-use; and keys rotate without breaking tokens in flight.

use crate::mrtr::{
    Client, Got, Kind, NAME, Probe, accept, builder, call_params, form_caps, greet_tool,
    input_required, key, keyring, retry, server,
};
use presa::mrtr::{ReplayError, ReplayFuture, ReplayStore};
use presa::{Error, Implementation, Prompt, PromptGet, PromptMessage, Server};
use presa_tests::wait::Deadline;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::mrtr::KINDS;

/// The answer every retry here gives to `greet`.
fn alice() -> Value {
    json!({"user_name": accept(json!({"name": "Alice"}))})
}

fn greet_params() -> Value {
    call_params("greet", json!({}), form_caps())
}

/// Round 1 of `greet`: its state.
async fn greet_state(w: &mut Client, id: i64) -> String {
    input_required(&w.call(id, "tools/call", greet_params()).await).state
}

/// Retries `greet` with `state` and Alice's answer.
async fn greet_retry(w: &mut Client, id: i64, state: &str) -> Got {
    w.call(
        id,
        "tools/call",
        retry(&greet_params(), alice(), Some(state)),
    )
    .await
}

#[track_caller]
fn completes(got: &Got) {
    assert_eq!(got.text(), "Hello, Alice!", "{:?}", got.kind);
}

// ---- tampering and garbage ----

/// `token` with the character at byte `at` replaced by another base64url character.
fn flip(token: &str, at: usize) -> String {
    let mut bytes = token.as_bytes().to_vec();
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    String::from_utf8(bytes).expect("ASCII")
}

#[tokio::test]
async fn tampered_and_garbage_states_are_refused_with_no_detail() {
    for kind in KINDS {
        let (server, probe) = server();
        let mut w = Client::start(kind, &server).await;
        let token = greet_state(&mut w, 1).await;
        let parts: Vec<&str> = token.split('.').collect();
        let payload_at = token.len() - parts[parts.len() - 1].len() - 10;
        let bad = vec![
            format!("{token}-TAMPERED"),
            flip(&token, payload_at),
            flip(&token, token.len() - 3),
            token[..token.len() - 1].to_owned(),
            token.replacen('.', "x.", 1),
            token
                .rsplit_once('.')
                .map(|(body, _)| body.to_owned())
                .unwrap_or_default(),
            format!("x{token}"),
            token.to_uppercase(),
            String::new(),
            "garbage".to_owned(),
            "....".to_owned(),
            "presa1.k1.e30.AAAA".to_owned(),
            "presa1.k1.!!!.***".to_owned(),
            "presa1.nokey.e30.AAAA".to_owned(),
            "é☃".to_owned(),
            "A".repeat(17 * 1024),
            format!("{token}.{}", "A".repeat(17 * 1024)),
        ];
        for (i, state) in bad.iter().enumerate() {
            let got = greet_retry(&mut w, 10 + i as i64, state).await;
            got.invalid_state();
        }
        assert_eq!(
            probe.runs(),
            1,
            "{kind:?}: a bad state never reaches the handler"
        );
        // The genuine token still works: nothing above consumed or poisoned it.
        completes(&greet_retry(&mut w, 99, &token).await);
    }
}

// ---- binding ----

/// The MRTR server plus a prompt also named `greet`, so the same params differ only in
/// the method.
fn server_with_greet_prompt() -> Server {
    let probe = Arc::new(Probe::default());
    builder()
        .tool(greet_tool("greet", &probe))
        .tool(greet_tool("greet_again", &probe))
        .tool(
            crate::mrtr::probed("echo_x", &probe, |_, call| async move {
                let x = call.arguments["x"].as_str().unwrap_or_default().to_owned();
                let y = call.arguments["y"].as_str().unwrap_or_default().to_owned();
                call.ctx
                    .elicit::<crate::mrtr::Name>("user_name", "Name?")
                    .get()?;
                crate::mrtr::ok(format!("x={x} y={y}"))
            })
            .input_schema(json!({
                "type": "object",
                "properties": {"x": {"type": "string"}, "y": {"type": "string"}},
                "required": ["x"]
            })),
        )
        .prompt(
            Prompt::new("greet")
                .description("Same name as the tool")
                .handler(|get: PromptGet| async move {
                    get.ctx
                        .elicit::<crate::mrtr::Name>("user_name", "What is your name?")
                        .get()?;
                    Ok::<_, Error>(vec![PromptMessage::user("hi")])
                }),
        )
        .build()
        .expect("builds")
}

#[tokio::test]
async fn a_state_is_bound_to_its_method_tool_and_arguments() {
    for kind in KINDS {
        let server = server_with_greet_prompt();
        let mut w = Client::start(kind, &server).await;
        let meta = json!({crate::mrtr::CAPS: form_caps()});

        // Another tool asking the same question.
        let token = greet_state(&mut w, 1).await;
        let got = w
            .call(
                2,
                "tools/call",
                retry(
                    &call_params("greet_again", json!({}), form_caps()),
                    alice(),
                    Some(&token),
                ),
            )
            .await;
        got.invalid_state();

        // The same params under another method: tools/call greet vs prompts/get greet.
        let tool = json!({"name": "greet", "_meta": meta});
        let token = input_required(&w.call(3, "tools/call", tool.clone()).await).state;
        let got = w
            .call(
                4,
                "prompts/get",
                retry(
                    &json!({"name": "greet", "_meta": meta}),
                    alice(),
                    Some(&token),
                ),
            )
            .await;
        got.invalid_state();
        completes(
            &w.call(5, "tools/call", retry(&tool, alice(), Some(&token)))
                .await,
        );

        // Other arguments.
        let a = call_params("echo_x", json!({"x": "a", "y": "b"}), form_caps());
        let token = input_required(&w.call(6, "tools/call", a.clone()).await).state;
        for (i, other) in [
            json!({"x": "b", "y": "b"}),
            json!({"x": "a"}),
            json!({"x": "a", "y": "b", "z": "c"}),
            json!({"x": "a", "y": "B"}),
        ]
        .into_iter()
        .enumerate()
        {
            let got = w
                .call(
                    10 + i as i64,
                    "tools/call",
                    retry(
                        &call_params("echo_x", other, form_caps()),
                        alice(),
                        Some(&token),
                    ),
                )
                .await;
            got.invalid_state();
        }
        // The same arguments in another order, and another _meta, are the same request.
        let reordered = json!({"name": "echo_x", "arguments": {"y": "b", "x": "a"},
                               "_meta": {crate::mrtr::CAPS: {"elicitation": {"form": {}}, "roots": {}}}});
        let got = w
            .call(20, "tools/call", retry(&reordered, alice(), Some(&token)))
            .await;
        assert_eq!(got.text(), "x=a y=b", "{kind:?}");
    }
}

#[tokio::test]
async fn a_state_minted_by_another_server_sharing_the_key_is_refused() {
    for kind in KINDS {
        let (server, _) = server();
        let mut a = Client::start(kind, &server).await;
        let token = greet_state(&mut a, 1).await;
        // Another server, same key, same tool, another name (audience).
        let probe = Arc::new(Probe::default());
        let other = Server::builder(Implementation::new("another-server", "1"))
            .state_keys(keyring(vec![key("k1", 7)]))
            .tool(greet_tool("greet", &probe))
            .build()
            .expect("builds");
        let mut b = Client::start(kind, &other).await;
        greet_retry(&mut b, 2, &token).await.invalid_state();
        assert_eq!(probe.runs(), 0);
        // A replica (same name, same key) accepts it.
        let (replica, _) = server_named(NAME);
        let mut c = Client::start(kind, &replica).await;
        completes(&greet_retry(&mut c, 3, &token).await);
    }
}

fn server_named(name: &str) -> (Server, Arc<Probe>) {
    let probe = Arc::new(Probe::default());
    let server = Server::builder(Implementation::new(name, "1"))
        .state_keys(keyring(vec![key("k1", 7)]))
        .tool(greet_tool("greet", &probe))
        .build()
        .expect("builds");
    (server, probe)
}

#[tokio::test]
async fn a_state_signed_with_another_key_is_refused() {
    for kind in KINDS {
        let (server, _) = server();
        let mut a = Client::start(kind, &server).await;
        let token = greet_state(&mut a, 1).await;
        let probe = Arc::new(Probe::default());
        for (i, ring) in [
            keyring(vec![key("k1", 8)]), // same id, another secret
            keyring(vec![key("k2", 7)]), // same secret, another id
            keyring(vec![key("k2", 9), key("k3", 10)]),
        ]
        .into_iter()
        .enumerate()
        {
            let other = builder()
                .state_keys(ring)
                .tool(greet_tool("greet", &probe))
                .build()
                .expect("builds");
            let mut b = Client::start(kind, &other).await;
            greet_retry(&mut b, 10 + i as i64, &token)
                .await
                .invalid_state();
        }
        assert_eq!(probe.runs(), 0, "{kind:?}");
    }
}

#[tokio::test]
async fn rotated_keys_keep_tokens_in_flight_valid_and_sign_with_the_new_key() {
    let server_with = |ring| {
        let probe = Arc::new(Probe::default());
        builder()
            .state_keys(ring)
            .tool(greet_tool("greet", &probe))
            .build()
            .expect("builds")
    };
    for kind in KINDS {
        let before = server_with(keyring(vec![key("old", 1)]));
        let during = server_with(keyring(vec![key("new", 2), key("old", 1)]));
        let after = server_with(keyring(vec![key("new", 2)]));
        let mut before = Client::start(kind, &before).await;
        let mut during = Client::start(kind, &during).await;
        let mut after = Client::start(kind, &after).await;

        let old_token = greet_state(&mut before, 1).await;
        assert_eq!(old_token.split('.').nth(1), Some("old"), "{old_token}");
        // Signed with the old key, verified by a keyring holding it behind the new one.
        completes(&greet_retry(&mut during, 2, &old_token).await);
        // New tokens carry the new key's id, and verify once the old key is gone.
        let new_token = greet_state(&mut during, 3).await;
        assert_eq!(
            new_token.split('.').nth(1),
            Some("new"),
            "{kind:?}: the first key of the keyring signs: {new_token}"
        );
        completes(&greet_retry(&mut after, 4, &new_token).await);
        // Once the old key is dropped, its tokens are refused.
        greet_retry(&mut after, 5, &old_token).await.invalid_state();
        // A keyring without the new key refuses the new tokens.
        greet_retry(&mut before, 6, &new_token)
            .await
            .invalid_state();
    }
}

// ---- expiry ----

/// A state past its `state_ttl` (1 s; the state's times are whole seconds, so it
/// expires between 1 and 2 s after it was made) is refused: until then the same state,
/// which is not single-use, keeps working, retried until the server refuses it.
#[tokio::test]
async fn an_expired_state_is_refused() {
    let probe = Arc::new(Probe::default());
    let server = builder()
        .state_ttl(Duration::from_secs(1))
        .tool(greet_tool("greet", &probe))
        .build()
        .expect("builds");
    let mut wires = Vec::new();
    for kind in KINDS {
        let mut w = Client::start(kind, &server).await;
        let made = std::time::Instant::now();
        let token = greet_state(&mut w, 1).await;
        wires.push((w, token, made));
    }
    for (w, token, made) in &mut wires {
        let kind = w.kind;
        let deadline = Deadline::new(format!("{kind:?}: the state expires"));
        loop {
            let got = greet_retry(w, 2, token).await;
            if got.response().get("error").is_some() {
                got.invalid_state();
                break;
            }
            completes(&got);
            deadline.tick(got.response()).await;
        }
        assert!(
            made.elapsed() >= Duration::from_secs(1),
            "{kind:?}: refused {:?} after it was made, before its TTL",
            made.elapsed()
        );
        // A fresh token from the same server works: the refusal was the expiry.
        let fresh = greet_state(w, 3).await;
        completes(&greet_retry(w, 4, &fresh).await);
    }
}

// ---- size ----

#[tokio::test]
async fn an_oversize_state_is_refused_even_when_correctly_signed() {
    for kind in KINDS {
        let (server, probe) = server();
        let mut w = Client::start(kind, &server).await;
        let token = greet_state(&mut w, 1).await;
        // A re-signed copy of a genuine token verifies (so the forging below is sound)...
        let same = forge::resign(&token, &[7; 32], |_| {});
        assert_ne!(same, "", "the token has presa's documented format");
        completes(&greet_retry(&mut w, 2, &same).await);
        // ...and one padded past 16 KiB, signed with the right key, is refused.
        let token = greet_state(&mut w, 3).await;
        let big = forge::resign(&token, &[7; 32], |payload| {
            payload["pad"] = Value::from("p".repeat(17 * 1024));
        });
        assert!(big.len() > 16 * 1024, "{}", big.len());
        greet_retry(&mut w, 4, &big).await.invalid_state();
        // Just under the cap, the same padding is accepted.
        let fits = forge::resign(&token, &[7; 32], |payload| {
            payload["pad"] = Value::from("p".repeat(10 * 1024));
        });
        assert!(fits.len() < 16 * 1024);
        completes(&greet_retry(&mut w, 5, &fits).await);
        assert_eq!(probe.runs(), 4, "{kind:?}");
    }
}

#[tokio::test]
async fn the_server_never_issues_a_state_over_16_kib() {
    for kind in KINDS {
        let mut w = crate::mrtr::fresh(kind).await;
        let got = w
            .call(
                1,
                "tools/call",
                call_params("huge_carry", json!({}), form_caps()),
            )
            .await;
        let response = got.response();
        match response.get("error") {
            Some(_) => {
                let e = got.error(-32603, 500);
                assert_eq!(e["message"], "Internal error", "{kind:?}: no detail: {e}");
            }
            None => {
                let round = input_required(&got);
                assert!(
                    round.state.len() <= 16 * 1024,
                    "{kind:?}: {}",
                    round.state.len()
                );
            }
        }
    }
}

// ---- single use ----

/// A replay store that counts what it is asked.
struct CountingStore {
    seen: Mutex<HashSet<String>>,
    asked: Arc<AtomicUsize>,
}

impl ReplayStore for CountingStore {
    fn first_use<'a>(&'a self, id: &'a str, _expires_at: u64) -> ReplayFuture<'a> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let first = self.seen.lock().expect("lock").insert(id.to_owned());
        Box::pin(std::future::ready(Ok(first)))
    }
}

#[tokio::test]
async fn a_single_use_state_works_once() {
    for kind in KINDS {
        // The default, in-memory store.
        let mut w = crate::mrtr::fresh(kind).await;
        let params = call_params("once", json!({}), form_caps());
        let token = input_required(&w.call(1, "tools/call", params.clone()).await).state;
        let first = w
            .call(2, "tools/call", retry(&params, alice(), Some(&token)))
            .await;
        completes(&first);
        let second = w
            .call(3, "tools/call", retry(&params, alice(), Some(&token)))
            .await;
        second.invalid_state();

        // A state that is not single-use may be retried (signed, replayable until expiry).
        let token = greet_state(&mut w, 4).await;
        completes(&greet_retry(&mut w, 5, &token).await);
        completes(&greet_retry(&mut w, 6, &token).await);

        // A store given to the builder is the one consulted.
        let asked = Arc::new(AtomicUsize::new(0));
        let probe = Arc::new(Probe::default());
        let custom = builder()
            .replay_store(CountingStore {
                seen: Mutex::default(),
                asked: Arc::clone(&asked),
            })
            .tool(crate::mrtr::probed("once", &probe, |_, call| async move {
                call.ctx.single_use_state();
                call.ctx
                    .elicit::<crate::mrtr::Name>("user_name", "Name?")
                    .get()?;
                crate::mrtr::ok("done")
            }))
            .build()
            .expect("builds");
        let mut c = Client::start(kind, &custom).await;
        let token = input_required(&c.call(7, "tools/call", params.clone()).await).state;
        let got = c
            .call(8, "tools/call", retry(&params, alice(), Some(&token)))
            .await;
        assert_eq!(got.text(), "done");
        c.call(9, "tools/call", retry(&params, alice(), Some(&token)))
            .await
            .invalid_state();
        assert!(
            asked.load(Ordering::SeqCst) >= 2,
            "{kind:?}: the store was consulted"
        );
    }
}

/// A replay store whose answer comes only at a later poll: a first use, or a fault.
struct LateStore {
    fails: bool,
}

impl ReplayStore for LateStore {
    fn first_use<'a>(&'a self, id: &'a str, _expires_at: u64) -> ReplayFuture<'a> {
        let fails = self.fails;
        let first = !id.is_empty();
        Box::pin(async move {
            tokio::task::yield_now().await;
            if fails {
                Err(ReplayError::new("the test store is down"))
            } else {
                Ok(first)
            }
        })
    }
}

/// A replay store that answers later is awaited before the handler runs; one that fails
/// gives the retryable -32603 and the handler does not run (the state is never taken as
/// unused).
#[tokio::test]
async fn a_single_use_state_waits_for_its_store_and_a_fault_is_retryable() {
    for kind in KINDS {
        for fails in [false, true] {
            let probe = Arc::new(Probe::default());
            let server = builder()
                .replay_store(LateStore { fails })
                .tool(crate::mrtr::probed("once", &probe, |_, call| async move {
                    call.ctx.single_use_state();
                    call.ctx
                        .elicit::<crate::mrtr::Name>("user_name", "Name?")
                        .get()?;
                    crate::mrtr::ok("done")
                }))
                .build()
                .expect("builds");
            let mut c = Client::start(kind, &server).await;
            let params = call_params("once", json!({}), form_caps());
            let token = input_required(&c.call(1, "tools/call", params.clone()).await).state;
            assert_eq!(probe.runs(), 1);
            let got = c
                .call(2, "tools/call", retry(&params, alice(), Some(&token)))
                .await;
            if fails {
                let e = got.error(-32603, 500);
                assert_eq!(e["data"]["retryable"], json!(true), "{kind:?}: {e}");
                assert_eq!(probe.runs(), 1, "{kind:?}: the handler did not run");
            } else {
                assert_eq!(got.text(), "done", "{kind:?}");
                assert_eq!(probe.runs(), 2);
            }
        }
    }
}

// ---- principal ----

#[tokio::test]
async fn a_state_bound_to_a_principal_is_refused_for_another_principal() {
    let probe = Arc::new(Probe::default());
    let server = builder()
        .principal(|headers| {
            headers
                .and_then(|h| h.get("x-user"))
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })
        .tool(greet_tool("greet", &probe))
        .build()
        .expect("builds");
    let mut w = Client::start(Kind::Http, &server).await;
    let params = greet_params();
    let alice_round = w
        .call_with(1, "tools/call", params.clone(), &[("x-user", "alice")])
        .await;
    let token = input_required(&alice_round).state;
    let with = |p: &'static str| -> Vec<(&'static str, &'static str)> {
        if p.is_empty() {
            vec![]
        } else {
            vec![("x-user", p)]
        }
    };
    for (i, principal) in ["bob", "Alice", ""].into_iter().enumerate() {
        let got = w
            .call_with(
                2 + i as i64,
                "tools/call",
                retry(&params, alice(), Some(&token)),
                &with(principal),
            )
            .await;
        got.invalid_state();
    }
    let got = w
        .call_with(
            10,
            "tools/call",
            retry(&params, alice(), Some(&token)),
            &with("alice"),
        )
        .await;
    completes(&got);
    // A state minted without a principal does not pass for one.
    let anonymous = input_required(&w.call(11, "tools/call", params.clone()).await).state;
    w.call_with(
        12,
        "tools/call",
        retry(&params, alice(), Some(&anonymous)),
        &with("alice"),
    )
    .await
    .invalid_state();
    // On stdio there are no headers, hence no principal: rounds still work.
    let mut s = Client::start(Kind::Stdio, &server).await;
    let token = greet_state(&mut s, 1).await;
    completes(&greet_retry(&mut s, 2, &token).await);
}

// ---- keys from the environment: replicas share state ----

/// The fixture's command line over stdio as a child process with `PRESA_STATE_KEYS` set
/// (or unset), for replicas configured from the environment.
struct Replica {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: presa_tests::stdio::LineReader<tokio::process::ChildStdout>,
}

impl Replica {
    fn start(keys: Option<&str>) -> Replica {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_fixture"));
        command
            .args(["--transport", "stdio"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true);
        match keys {
            Some(k) => command.env("PRESA_STATE_KEYS", k),
            None => command.env_remove("PRESA_STATE_KEYS"),
        };
        let mut child = command.spawn().expect("the fixture starts");
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        Replica {
            child,
            stdin,
            lines: presa_tests::stdio::LineReader::new(stdout),
        }
    }

    /// One request (checked), one response (the fixture's elicitation tool sends nothing
    /// else), checked against tools/call.
    async fn call(&mut self, id: i64, params: Value) -> Value {
        use tokio::io::AsyncWriteExt;
        let line =
            presa_tests::stdio::checked_line(&presa_tests::request(id, "tools/call", params));
        self.lines.sent(&line);
        self.stdin.write_all(&line).await.expect("write");
        self.stdin.flush().await.expect("flush");
        self.lines
            .next(presa_tests::wait::PATIENCE)
            .await
            .expect("a response")
    }

    async fn stop(mut self) {
        drop(self.stdin);
        let status = presa_tests::wait::within("the fixture exits", self.child.wait())
            .await
            .expect("wait");
        assert!(status.success());
    }
}

#[tokio::test]
async fn replicas_configured_with_the_same_presa_state_keys_accept_each_others_state() {
    const KEY_7: &str = "k1:BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";
    const KEY_9: &str = "k1:CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk=";
    let params = call_params(
        "test_input_required_result_elicitation",
        json!({}),
        form_caps(),
    );
    let mut a = Replica::start(Some(KEY_7));
    let round = a.call(1, params.clone()).await;
    let state = round["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("input_required: {round}"))
        .to_owned();
    let retried = retry(&params, alice(), Some(&state));
    // Another process with the same key (a rotated keyring holding it, too) accepts it.
    for keys in [KEY_7.to_owned(), format!("k2:{},{KEY_7}", &KEY_9[3..])] {
        let mut b = Replica::start(Some(&keys));
        let done = b.call(2, retried.clone()).await;
        assert_eq!(
            done["result"]["content"][0]["text"], "Hello, Alice!",
            "{done}"
        );
        b.stop().await;
    }
    // A process with another key, or with its own random key, refuses it.
    for keys in [Some(KEY_9), None] {
        let mut c = Replica::start(keys);
        let refused = c.call(3, retried.clone()).await;
        assert_eq!(refused["error"]["code"], json!(-32602), "{refused}");
        assert_eq!(
            refused["error"]["message"],
            json!(presa_tests::client::INVALID_STATE)
        );
        c.stop().await;
    }
    a.stop().await;
}

/// Re-signing presa's documented token format (`presa1.<key id>.<b64url payload>.<b64url
/// HMAC-SHA256 of the rest>`) with a known key, to build tokens the server itself would
/// never issue, using the same well-kept crates (base64, sha2, hmac) as presa; the
/// known-answer test below pins them to the published vectors.
mod forge {
    use serde_json::Value;

    /// `token` with its payload changed by `edit`, signed again with `secret`; `""` when
    /// the token does not have the documented format.
    pub(crate) fn resign(token: &str, secret: &[u8], edit: impl FnOnce(&mut Value)) -> String {
        let parts: Vec<&str> = token.split('.').collect();
        let [version, kid, payload, _] = parts.as_slice() else {
            return String::new();
        };
        let Some(json) = b64_decode(payload) else {
            return String::new();
        };
        let Ok(mut value) = serde_json::from_slice::<Value>(&json) else {
            return String::new();
        };
        edit(&mut value);
        let body = format!(
            "{version}.{kid}.{}",
            b64_encode(value.to_string().as_bytes())
        );
        let mac = hmac_sha256(secret, body.as_bytes());
        format!("{body}.{}", b64_encode(&mac))
    }

    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use hmac::{Hmac, KeyInit, Mac};
    use sha2::{Digest, Sha256};

    pub(crate) fn b64_encode(data: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(data)
    }

    pub(crate) fn b64_decode(text: &str) -> Option<Vec<u8>> {
        URL_SAFE_NO_PAD.decode(text).ok()
    }

    pub(crate) fn sha256(data: &[u8]) -> [u8; 32] {
        Sha256::digest(data).into()
    }

    pub(crate) fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
        // HMAC takes a key of any length.
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else {
            return [0; 32];
        };
        mac.update(message);
        mac.finalize().into_bytes().into()
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn the_helpers_match_known_vectors() {
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex(&sha256(&[b'a'; 1000])),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"
        );
        // RFC 4231, test case 2.
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        for text in ["", "f", "fo", "foo", "foob", "fooba", "foobar"] {
            let encoded = b64_encode(text.as_bytes());
            assert!(!encoded.contains('='));
            assert_eq!(b64_decode(&encoded).as_deref(), Some(text.as_bytes()));
        }
        assert_eq!(b64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(b64_encode(&[0xfb, 0xff]), "-_8");
    }
}
