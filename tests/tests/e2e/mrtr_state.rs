//! Request-state integrity (wire section 10.4, `mrtr.mdx` "Server Requirements"): every
//! way a `requestState` can be wrong gets the same -32602 "Invalid or expired request
//! state" with no detail, over both transports; the state is bound to the method, the
//! params, the server's name (audience) and the principal; it expires; it may be made
//! single-use; and keys rotate without breaking tokens in flight.

use crate::mrtr::{
    Got, Kind, NAME, Probe, Wire, accept, builder, call_params, form_caps, greet_tool,
    input_required, key, keyring, retry, server,
};
use presa::mrtr::ReplayStore;
use presa::{Error, Implementation, Prompt, PromptGet, PromptMessage, Server};
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
async fn greet_state(w: &mut Wire, id: i64) -> String {
    input_required(&w.call(id, "tools/call", greet_params()).await).state
}

/// Retries `greet` with `state` and Alice's answer.
async fn greet_retry(w: &mut Wire, id: i64, state: &str) -> Got {
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
        let mut w = Wire::start(kind, &server).await;
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
        let mut w = Wire::start(kind, &server).await;
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
        let mut a = Wire::start(kind, &server).await;
        let token = greet_state(&mut a, 1).await;
        // Another server, same key, same tool, another name (audience).
        let probe = Arc::new(Probe::default());
        let other = Server::builder(Implementation::new("another-server", "1"))
            .state_keys(keyring(vec![key("k1", 7)]))
            .tool(greet_tool("greet", &probe))
            .build()
            .expect("builds");
        let mut b = Wire::start(kind, &other).await;
        greet_retry(&mut b, 2, &token).await.invalid_state();
        assert_eq!(probe.runs(), 0);
        // A replica (same name, same key) accepts it.
        let (replica, _) = server_named(NAME);
        let mut c = Wire::start(kind, &replica).await;
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
        let mut a = Wire::start(kind, &server).await;
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
            let mut b = Wire::start(kind, &other).await;
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
        let mut before = Wire::start(kind, &before).await;
        let mut during = Wire::start(kind, &during).await;
        let mut after = Wire::start(kind, &after).await;

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

#[tokio::test]
async fn an_expired_state_is_refused() {
    // The one slow test here: state_ttl of 1 s, then a wait of 2.1 s.
    let probe = Arc::new(Probe::default());
    let server = builder()
        .state_ttl(Duration::from_secs(1))
        .tool(greet_tool("greet", &probe))
        .build()
        .expect("builds");
    let mut wires = Vec::new();
    for kind in KINDS {
        let mut w = Wire::start(kind, &server).await;
        let token = greet_state(&mut w, 1).await;
        wires.push((w, token));
    }
    tokio::time::sleep(Duration::from_millis(2100)).await;
    for (w, token) in &mut wires {
        greet_retry(w, 2, token).await.invalid_state();
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
        let mut w = Wire::start(kind, &server).await;
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
        let mut w = Wire::fresh(kind).await;
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
    fn first_use(&self, id: &str, _expires_at: u64) -> bool {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().expect("lock").insert(id.to_owned())
    }
}

#[tokio::test]
async fn a_single_use_state_works_once() {
    for kind in KINDS {
        // The default, in-memory store.
        let mut w = Wire::fresh(kind).await;
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
        let mut c = Wire::start(kind, &custom).await;
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
    let mut w = Wire::start(Kind::Http, &server).await;
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
    let mut s = Wire::start(Kind::Stdio, &server).await;
    let token = greet_state(&mut s, 1).await;
    completes(&greet_retry(&mut s, 2, &token).await);
}

// ---- keys from the environment: replicas share state ----

/// The fixture's command line over stdio as a child process with `PRESA_STATE_KEYS` set
/// (or unset), for replicas configured from the environment.
struct Replica {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl Replica {
    fn start(keys: Option<&str>) -> Replica {
        use tokio::io::AsyncBufReadExt;
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
            lines: tokio::io::BufReader::new(stdout).lines(),
        }
    }

    /// One request, one response (the fixture's elicitation tool sends nothing else).
    async fn call(&mut self, id: i64, params: Value) -> Value {
        use tokio::io::AsyncWriteExt;
        let mut line = presa_tests::request(id, "tools/call", params).to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.expect("write");
        self.stdin.flush().await.expect("flush");
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("a response in time")
            .expect("read")
            .expect("a line");
        let m: Value = serde_json::from_str(&line).expect("JSON");
        presa_tests::schema::check_response("tools/call", &m);
        m
    }

    async fn stop(mut self) {
        drop(self.stdin);
        let status = tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .expect("the fixture exits")
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
            json!(crate::mrtr::INVALID_STATE)
        );
        c.stop().await;
    }
    a.stop().await;
}

/// Re-signing presa's documented token format (`presa1.<key id>.<b64url payload>.<b64url
/// HMAC-SHA256 of the rest>`) with a known key, to build tokens the server itself would
/// never issue. SHA-256 and HMAC are written out here because the test crate has no
/// crypto dependency.
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

    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

    pub(crate) fn b64_encode(data: &[u8]) -> String {
        let mut out = String::new();
        for chunk in data.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
            for i in 0..=chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            }
        }
        out
    }

    pub(crate) fn b64_decode(text: &str) -> Option<Vec<u8>> {
        let mut bits = 0u32;
        let mut count = 0;
        let mut out = Vec::new();
        for c in text.bytes() {
            let v = ALPHABET.iter().position(|a| *a == c)? as u32;
            bits = (bits << 6) | v;
            count += 6;
            if count >= 8 {
                count -= 8;
                out.push((bits >> count) as u8);
                bits &= (1 << count) - 1;
            }
        }
        Some(out)
    }

    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];

    pub(crate) fn sha256(data: &[u8]) -> [u8; 32] {
        let mut h: [u32; 8] = [
            0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
            0x5be0cd19,
        ];
        let mut msg = data.to_vec();
        msg.push(0x80);
        while msg.len() % 64 != 56 {
            msg.push(0);
        }
        msg.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
        for block in msg.chunks(64) {
            let mut w = [0u32; 64];
            for (i, word) in block.chunks(4).enumerate() {
                w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
            }
            for i in 16..64 {
                let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
                let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
                w[i] = w[i - 16]
                    .wrapping_add(s0)
                    .wrapping_add(w[i - 7])
                    .wrapping_add(s1);
            }
            let mut v = h;
            for i in 0..64 {
                let [a, b, c, d, e, f, g, hh] = v;
                let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
                let ch = (e & f) ^ (!e & g);
                let t1 = hh
                    .wrapping_add(s1)
                    .wrapping_add(ch)
                    .wrapping_add(K[i])
                    .wrapping_add(w[i]);
                let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
                let maj = (a & b) ^ (a & c) ^ (b & c);
                let t2 = s0.wrapping_add(maj);
                v = [t1.wrapping_add(t2), a, b, c, d.wrapping_add(t1), e, f, g];
            }
            for (x, y) in h.iter_mut().zip(v) {
                *x = x.wrapping_add(y);
            }
        }
        let mut out = [0u8; 32];
        for (i, x) in h.iter().enumerate() {
            out[4 * i..4 * i + 4].copy_from_slice(&x.to_be_bytes());
        }
        out
    }

    pub(crate) fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
        let mut block = [0u8; 64];
        if key.len() > 64 {
            block[..32].copy_from_slice(&sha256(key));
        } else {
            block[..key.len()].copy_from_slice(key);
        }
        let inner: Vec<u8> = block
            .iter()
            .map(|b| b ^ 0x36)
            .chain(message.iter().copied())
            .collect();
        let inner = sha256(&inner);
        let outer: Vec<u8> = block
            .iter()
            .map(|b| b ^ 0x5c)
            .chain(inner.iter().copied())
            .collect();
        sha256(&outer)
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
