//! Authorization over Streamable HTTP with a verifier the test controls (the real
//! verifiers against a real authorization server are in `auth_verifiers` and
//! `auth_oauth`): the protected resource metadata, the status, `WWW-Authenticate`
//! challenge and JSON-RPC body of every refusal, scopes and their hierarchy, and the
//! principal's isolation (tasks, request state, listen streams, legacy sessions).

use crate::mrtr::{Probe, call_params, form_caps, greet_tool};
use crate::tasks::{Lab, declared, task_id, tool};
use presa::auth::{Authorization, TokenError, TokenVerifier, VerifiedToken, Verifying};
use presa::tasks::Tasks;
use presa::{Principal, Server, Tool, ToolCall};
use presa_tests::http::{Harness, Reply};
use presa_tests::legacy::{self, Legacy};
use presa_tests::request;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

/// The canonical URI of the servers here: tokens name it as their audience.
const RESOURCE: &str = "https://mcp.example.test/mcp";
const METADATA_URL: &str = "https://mcp.example.test/.well-known/oauth-protected-resource/mcp";
const ISSUER: &str = "https://auth.example.test";

/// Tokens by name: `alice/<scopes>` and `bob/<scopes>` are valid for this resource
/// (scopes joined by `+`, each with `.` for `:`, as a token may hold neither `:` nor a
/// space), `expired`, `other-audience` and `no-subject` are valid
/// tokens this server must refuse itself, `bad` is refused by the verifier and `down`
/// cannot be checked now. Counts its calls.
#[derive(Default)]
struct Verifier {
    calls: AtomicUsize,
}

impl TokenVerifier for Verifier {
    fn verify<'a>(&'a self, token: &'a str) -> Verifying<'a> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            let mut t = VerifiedToken::default();
            t.audience = vec![RESOURCE.to_owned()];
            t.expires_at = Some(SystemTime::now() + Duration::from_secs(3600));
            t.issuer = Some(ISSUER.to_owned());
            match token {
                "bad" => return Err(TokenError::Invalid("signature does not verify".into())),
                "down" => return Err(TokenError::Unavailable("the JWKS did not answer".into())),
                "expired" => {
                    t.subject = Some("alice".into());
                    t.expires_at = Some(SystemTime::now() - Duration::from_secs(1));
                }
                "other-audience" => {
                    t.subject = Some("alice".into());
                    t.audience = vec!["https://elsewhere.example.test/mcp".into()];
                }
                "no-subject" => {}
                _ => {
                    let (who, scopes) = token.split_once('/').unwrap_or((token, ""));
                    t.subject = Some(who.to_owned());
                    t.client_id = Some("test-client".into());
                    t.scopes = scopes
                        .split('+')
                        .filter(|s| !s.is_empty())
                        .map(|s| s.replace('.', ":"))
                        .collect();
                }
            }
            Ok(t)
        })
    }
}

/// The tools of the servers here: `whoami` needs no scope and answers the principal's
/// id; `write` needs `notes:write`; `both` needs `notes:read` and `notes:write`.
pub(crate) fn tools(builder: presa::ServerBuilder) -> presa::ServerBuilder {
    builder
        .tool(
            Tool::new("whoami")
                .description("Says who is asking")
                .handler(|call: ToolCall| async move {
                    call.ctx
                        .principal()
                        .map_or("anonymous".to_owned(), |p| p.id().to_owned())
                }),
        )
        .tool(
            Tool::new("write")
                .description("Writes a note")
                .scopes(["notes:write"])
                .handler(|_: ToolCall| async { "written" }),
        )
        .tool(
            Tool::new("both")
                .description("Reads and writes")
                .scopes(["notes:read", "notes:write"])
                .handler(|_: ToolCall| async { "read and written" }),
        )
}

fn authorization(verifier: Arc<Verifier>) -> Authorization {
    Authorization::with_verifier(verifier)
        .authorization_server(ISSUER)
        .scope_implies("notes:admin", ["notes:write"])
        .scope_implies("notes:write", ["notes:read"])
}

/// A server with authorization, over HTTP.
async fn serve(more: impl FnOnce(Authorization) -> Authorization) -> (Harness, Arc<Verifier>) {
    let verifier = Arc::new(Verifier::default());
    let server = tools(Server::builder(presa::Implementation::new(
        "auth-tests",
        "1",
    )))
    .canonical_uri(RESOURCE)
    .authorization(more(authorization(Arc::clone(&verifier))))
    .build()
    .expect("builds");
    (Harness::start(server).await, verifier)
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn call(id: i64, name: &str) -> Value {
    request(id, "tools/call", json!({"name": name, "arguments": {}}))
}

async fn call_as(h: &Harness, token: &str, id: i64, name: &str) -> Reply {
    let auth = bearer(token);
    h.post(&call(id, name), &[("Authorization", auth.as_str())])
        .await
}

/// Asserts a refusal: its status, its exact challenge (`None`: no header), its JSON-RPC
/// error code and id.
#[track_caller]
fn assert_refused(r: &Reply, status: u16, challenge: Option<&str>, code: i64, id: Option<Value>) {
    assert_eq!(r.status, status, "{}", r.body);
    assert_eq!(r.header("www-authenticate"), challenge, "{}", r.body);
    r.assert_error(status, code, id);
}

#[tokio::test]
async fn the_protected_resource_metadata_is_served_at_both_well_known_paths() {
    let (h, _) = serve(|a| a.required_scopes(["mcp:use"]).resource_name("Notes")).await;
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let url = format!("{}{path}", h.base);
        // Any origin may read it: it is public metadata (and not an MCP message).
        let r = reqwest::Client::new()
            .get(&url)
            .header("Origin", "https://app.example.com")
            .send()
            .await
            .expect("the metadata is fetched");
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(
            r.headers()
                .get("access-control-allow-origin")
                .and_then(|v| v.to_str().ok()),
            Some("*")
        );
        let text = r.text().await.expect("a body");
        let doc: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(
            doc,
            json!({
                "resource": RESOURCE,
                "authorization_servers": [ISSUER],
                "scopes_supported": ["mcp:use"],
                "bearer_methods_supported": ["header"],
                "resource_name": "Notes",
            }),
            "{path}"
        );
    }
}

#[tokio::test]
async fn refusals_before_the_request_carry_rfc_6750_challenges() {
    let (h, verifier) = serve(|a| a.required_scopes(["mcp:use"])).await;
    let message = call(1, "whoami");
    // No token: 401, no error code, where the metadata is and what scope is needed.
    let r = h.post(&message, &[]).await;
    let needed = format!("Bearer resource_metadata=\"{METADATA_URL}\", scope=\"mcp:use\"");
    assert_refused(&r, 401, Some(&needed), -32600, None);
    // A malformed header, or two: 400, invalid_request.
    let malformed =
        format!("Bearer error=\"invalid_request\", resource_metadata=\"{METADATA_URL}\"");
    for bad in [
        "Basic YWxpY2U6cHc=",
        "Bearer",
        "Bearer a b",
        "Bearer \"quoted\"",
    ] {
        let r = h.post(&message, &[("Authorization", bad)]).await;
        assert_refused(&r, 400, Some(&malformed), -32600, None);
    }
    let r = h
        .post_appending(
            &message,
            &[
                ("Authorization", "Bearer alice:mcp:use"),
                ("Authorization", "Bearer bob"),
            ],
        )
        .await;
    assert_refused(&r, 400, Some(&malformed), -32600, None);
    // Tokens that are not valid, or not for this server: 401, invalid_token.
    let invalid = format!(
        "Bearer error=\"invalid_token\", error_description=\"The access token is not valid\", \
         resource_metadata=\"{METADATA_URL}\", scope=\"mcp:use\""
    );
    for token in ["bad", "expired", "other-audience", "no-subject"] {
        let r = call_as(&h, token, 2, "whoami").await;
        assert_refused(&r, 401, Some(&invalid), -32600, None);
        assert!(
            !r.body.contains(token),
            "the body repeats the token: {}",
            r.body
        );
    }
    // A token that cannot be checked now: 503, retryable, no challenge.
    let r = call_as(&h, "down", 3, "whoami").await;
    assert_refused(&r, 503, None, -32603, None);
    assert_eq!(r.header("retry-after"), Some("5"));
    assert_eq!(r.response()["error"]["data"]["retryable"], true);
    // None of these reached the pipeline, and the verifier was asked once per token.
    let calls = verifier.calls.load(Ordering::SeqCst);
    let _ = call_as(&h, "bad", 4, "whoami").await;
    assert_eq!(
        verifier.calls.load(Ordering::SeqCst),
        calls,
        "an invalid token's verdict is kept"
    );
}

#[tokio::test]
async fn a_valid_token_is_verified_once_and_names_the_principal() {
    let (h, verifier) = serve(|a| a).await;
    for id in 1..=3 {
        let r = call_as(&h, "alice/", id, "whoami").await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.response()["result"]["content"][0]["text"], "alice");
    }
    assert_eq!(
        verifier.calls.load(Ordering::SeqCst),
        1,
        "verdicts are kept"
    );
}

#[tokio::test]
async fn an_operation_without_its_scopes_gets_403_naming_all_of_them() {
    let (h, _) = serve(|a| a.required_scopes(["mcp:use"])).await;
    // Some of `both`'s scopes: the challenge names every scope the call needs, the
    // server-wide one first.
    let r = call_as(&h, "alice/mcp.use+notes.read", 1, "both").await;
    let challenge = format!(
        "Bearer error=\"insufficient_scope\", scope=\"mcp:use notes:read notes:write\", \
         resource_metadata=\"{METADATA_URL}\""
    );
    assert_refused(&r, 403, Some(&challenge), -32600, Some(json!(1)));
    assert_eq!(
        r.response()["error"]["data"]["requiredScopes"],
        json!(["mcp:use", "notes:read", "notes:write"])
    );
    // Without the server-wide scope, even a listing is refused.
    let auth = bearer("alice/notes.read");
    let r = h
        .post(
            &request(2, "tools/list", json!({})),
            &[("Authorization", auth.as_str())],
        )
        .await;
    let challenge = format!(
        "Bearer error=\"insufficient_scope\", scope=\"mcp:use\", resource_metadata=\"{METADATA_URL}\""
    );
    assert_refused(&r, 403, Some(&challenge), -32600, Some(json!(2)));
    // With them all: served.
    let r = call_as(&h, "alice/mcp.use+notes.read+notes.write", 3, "both").await;
    assert_eq!(r.status, 200, "{}", r.body);
}

#[tokio::test]
async fn a_broader_scope_covers_the_narrower_ones_it_implies() {
    let (h, _) = serve(|a| a).await;
    // notes:admin implies notes:write, which implies notes:read.
    let r = call_as(&h, "alice/notes.admin", 1, "both").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call_as(&h, "alice/notes.write", 2, "both").await;
    assert_eq!(r.status, 200, "{}", r.body);
    // Not the other way round.
    let r = call_as(&h, "alice/notes.read", 3, "write").await;
    assert_eq!(r.status, 403, "{}", r.body);
}

#[tokio::test]
async fn lists_show_what_the_principal_cannot_call() {
    let (h, _) = serve(|a| a).await;
    let auth = bearer("alice/");
    let r = h
        .post(
            &request(1, "tools/list", json!({})),
            &[("Authorization", auth.as_str())],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let names: Vec<&str> = r.response()["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["both", "whoami", "write"]);
}

/// A task made under one subject is unknown to another, whose token is valid too.
#[tokio::test]
async fn a_task_is_refused_to_another_subject() {
    let verifier = Arc::new(Verifier::default());
    let lab = Lab::with(Tasks::builder(), |b| {
        b.canonical_uri(RESOURCE)
            .authorization(authorization(Arc::clone(&verifier)))
    });
    let h = Harness::start(lab.server.clone()).await;
    let alice = bearer("alice/");
    let created = h
        .post(
            &request(1, "tools/call", declared(tool("gate", json!({})))),
            &[("Authorization", alice.as_str())],
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    assert_eq!(
        created.response()["result"]["resultType"],
        "task",
        "{}",
        created.body
    );
    let id = created.response()["result"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned();
    let get = |token: &'static str| {
        let id = id.clone();
        let h = &h;
        async move {
            let auth = bearer(token);
            h.post(
                &request(2, "tasks/get", declared(task_id(&id))),
                &[("Authorization", auth.as_str())],
            )
            .await
        }
    };
    let r = get("alice/").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = get("bob/").await;
    r.assert_error(400, -32602, Some(json!(2)));
    lab.gate.add_permits(1);
}

/// A listen stream opened under one subject never carries another subject's task: bob's
/// `taskIds` naming alice's task are dropped from the acknowledged filter, and the next
/// thing bob's stream carries after alice's task completed is a tool list change made
/// after it, while alice's own stream follows the task to its end.
#[tokio::test]
async fn a_listen_stream_never_carries_another_subjects_task() {
    use crate::tasks::{Client, Kind, Tasking, assert_created};
    let verifier = Arc::new(Verifier::default());
    let lab = Lab::with(Tasks::builder(), |b| {
        b.canonical_uri(RESOURCE)
            .authorization(authorization(Arc::clone(&verifier)))
    });
    let mut w = Client::start(Kind::Http, &lab.server).await;
    let (alice, bob) = (bearer("alice/"), bearer("bob/"));
    let alice = [("Authorization", alice.as_str())];
    let bob = [("Authorization", bob.as_str())];
    let got = w
        .send_with("tools/call", declared(tool("gate", json!({}))), &alice)
        .await;
    let id = assert_created(&got);
    let listen = |filter: Value| json!({"notifications": filter});
    let theirs = w
        .listen_tasks_with(
            declared(listen(
                json!({"taskIds": [id.clone()], "toolsListChanged": true}),
            )),
            &bob,
        )
        .await
        .unwrap_or_else(|e| panic!("bob may listen: {e:?}"));
    assert_eq!(
        theirs.ack,
        json!({"toolsListChanged": true}),
        "alice's task is dropped"
    );
    let own = w
        .listen_tasks_with(declared(listen(json!({"taskIds": [id.clone()]}))), &alice)
        .await
        .unwrap_or_else(|e| panic!("alice may listen: {e:?}"));
    assert_eq!(own.ack, json!({"taskIds": [id.clone()]}));
    lab.gate.add_permits(1);
    w.task_events_until(&own, &id, "completed").await;
    lab.server
        .add_tool(
            Tool::new("later")
                .description("Added after the task completed")
                .handler(|_: ToolCall| async { "later" }),
        )
        .expect("adds");
    let got = w.event(&theirs, presa_tests::wait::PATIENCE).await;
    assert_eq!(
        got.as_ref().map(|m| m["method"].clone()),
        Some(json!("notifications/tools/list_changed")),
        "bob's stream got {got:?}"
    );
}

/// A request state sealed for one subject is refused to another.
#[tokio::test]
async fn a_request_state_is_refused_to_another_subject() {
    let verifier = Arc::new(Verifier::default());
    let server = Server::builder(presa::Implementation::new("auth-tests", "1"))
        .tool(greet_tool("greet", &Arc::new(Probe::default())))
        .canonical_uri(RESOURCE)
        .authorization(authorization(verifier))
        .build()
        .expect("builds");
    let h = Harness::start(server).await;
    let params = call_params("greet", json!({}), form_caps());
    let alice = bearer("alice/");
    let round = h
        .post(
            &request(1, "tools/call", params.clone()),
            &[("Authorization", alice.as_str())],
        )
        .await;
    assert_eq!(round.status, 200, "{}", round.body);
    let state = round.response()["result"]["requestState"]
        .as_str()
        .expect("a request state")
        .to_owned();
    let mut retried = params.clone();
    retried["inputResponses"] =
        json!({"user_name": {"action": "accept", "content": {"name": "Ada"}}});
    retried["requestState"] = json!(state);
    let bob = bearer("bob/");
    let r = h
        .post(
            &request(2, "tools/call", retried.clone()),
            &[("Authorization", bob.as_str())],
        )
        .await;
    r.assert_error(400, -32602, Some(json!(2)));
    let r = h
        .post(
            &request(3, "tools/call", retried),
            &[("Authorization", alice.as_str())],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("Ada"), "{}", r.body);
}

/// A legacy session opened by one subject is, to another, a session that does not
/// exist (404), and a request without a token is 401 before the session is looked at.
#[tokio::test]
async fn a_legacy_session_is_bound_to_the_subject_that_opened_it() {
    let (h, _) = serve(|a| a).await;
    let alice = bearer("alice/");
    let bob = bearer("bob/");
    let as_alice = [("Authorization", alice.as_str())];
    let mut client = Legacy::new(&h, "2025-11-25");
    let id = client.next_id();
    let opened = client
        .post(&legacy::initialize(id, "2025-11-25", json!({})), &as_alice)
        .await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    client.session = Some(
        opened
            .header("mcp-session-id")
            .expect("a session id")
            .to_owned(),
    );
    client
        .post(
            &legacy::notification("notifications/initialized", json!({})),
            &as_alice,
        )
        .await
        .assert_accepted();
    let list = legacy::request(2, "tools/list", json!({}));
    assert_eq!(client.post(&list, &as_alice).await.status, 200);
    let stranger = client.post(&list, &[("Authorization", bob.as_str())]).await;
    assert_eq!(stranger.status, 404, "{}", stranger.body);
    let anonymous = client.post(&list, &[("Authorization", "")]).await;
    assert_eq!(anonymous.status, 401, "{}", anonymous.body);
}

/// What is logged on this thread, at every level, while [`Lines::capture`]'s guard lives.
#[derive(Clone, Default)]
pub(crate) struct Lines(Arc<std::sync::Mutex<Vec<u8>>>);

/// Keeps [`Lines`] capturing while it lives.
pub(crate) struct Capturing {
    _default: tracing::subscriber::DefaultGuard,
    _second: tracing::Dispatch,
}

impl Lines {
    /// Captures what is logged on this thread until the guard is dropped (a test's
    /// server, on its one-thread runtime, logs there too).
    ///
    /// A second subscriber that takes nothing is registered alongside. While exactly one
    /// is registered, tracing decides whether a callsite is enabled from the default
    /// subscriber of the thread that first reaches it: a test running at the same time
    /// on another thread, with none, would have the callsite disabled for this one too.
    /// With two, every registered subscriber is asked.
    pub(crate) fn capture() -> (Lines, Capturing) {
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .finish();
        let second = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
        let capturing = Capturing {
            _default: tracing::subscriber::set_default(subscriber),
            _second: second,
        };
        (lines, capturing)
    }

    /// What was logged so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("lines")).into_owned()
    }
}

impl std::io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut lines) = self.0.lock() {
            lines.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What presa logs, at every level, while tokens are refused and accepted, holds none of
/// them; nor does any response.
#[tokio::test]
async fn no_log_line_or_response_holds_a_token() {
    // The server runs on this test's one thread, so the subscriber sees it all.
    let (lines, _default) = Lines::capture();
    let (h, _) = serve(|a| a.required_scopes(["mcp:use"])).await;
    let mut bodies = String::new();
    for token in [
        "bad",
        "down",
        "expired",
        "other-audience",
        "alice/mcp.use",
        "alice/",
    ] {
        let r = call_as(&h, token, 1, "both").await;
        bodies.push_str(&r.body);
        if let Some(c) = r.header("www-authenticate") {
            bodies.push_str(c);
        }
    }
    let logged = lines.text();
    assert!(
        logged.contains("access token refused"),
        "the refusals are logged: {logged}"
    );
    for token in [
        "Bearer bad",
        "Bearer down",
        "Bearer expired",
        "other-audience",
        "alice/mcp.use",
    ] {
        assert!(
            !logged.contains(token),
            "a log line holds {token:?}: {logged}"
        );
        assert!(
            !bodies.contains(token),
            "a response holds {token:?}: {bodies}"
        );
    }
}

/// A handler takes the principal as a parameter.
#[tokio::test]
async fn a_handler_takes_the_principal() {
    #[presa::tool(crate = "presa")]
    /// Says who is asking and what they may do.
    async fn whoami_typed(principal: Principal) -> String {
        format!("{} {:?}", principal.id(), principal.scopes())
    }
    let server = Server::builder(presa::Implementation::new("auth-tests", "1"))
        .add::<whoami_typed>()
        .canonical_uri(RESOURCE)
        .authorization(authorization(Arc::new(Verifier::default())))
        .build()
        .expect("builds");
    let h = Harness::start(server).await;
    let r = call_as(&h, "carol/notes.read", 1, "whoami_typed").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.response()["result"]["content"][0]["text"],
        "carol [\"notes:read\"]"
    );
}

/// Authorization without a canonical URI, or without an authorization server, does not
/// build.
#[test]
fn authorization_is_checked_when_the_server_is_built() {
    let build = |b: presa::ServerBuilder| tools(b).build().map(|_| ()).map_err(|e| e.to_string());
    let base = || Server::builder(presa::Implementation::new("auth-tests", "1"));
    let verifier = || Arc::new(Verifier::default());
    let e = build(base().authorization(authorization(verifier()))).expect_err("no canonical URI");
    assert!(e.contains("canonical URI"), "{e}");
    let e = build(
        base()
            .canonical_uri(RESOURCE)
            .authorization(Authorization::with_verifier(verifier())),
    )
    .expect_err("no authorization server");
    assert!(e.contains("authorization server"), "{e}");
    let e = build(
        base()
            .canonical_uri(RESOURCE)
            .authorization(authorization(verifier()).required_scopes(["bad scope"])),
    )
    .expect_err("a bad scope");
    assert!(e.contains("scope"), "{e}");
    let e = tools(base())
        .tool(
            Tool::new("bad")
                .description("x")
                .scopes(["a\"b"])
                .handler(|_: ToolCall| async { "x" }),
        )
        .build()
        .map(|_| ())
        .expect_err("a tool with a bad scope");
    assert!(e.to_string().contains("scope"), "{e}");
}
