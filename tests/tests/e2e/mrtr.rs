//! Multi round-trip requests (wire section 10; errata W-10, W-11, T-4 and section 5 on
//! `mrtr.mdx`, `elicitation.mdx`, `sampling.mdx`): the `input_required` result of round 1,
//! the retries, the capability check (-32021), the structure checks of 10.3, and the
//! typed answers a handler sees. Request-state integrity (10.4) is in `mrtr_state`.
//!
//! Rules whose bytes matter run over both real transports ([`Client`]: Streamable HTTP on
//! a loopback port, and stdio over an in-process pipe), with every message checked against
//! the official schema; rules about what a handler sees run through
//! `presa::testing::TestClient`, which plays the rounds as a client would.

// Sampling and roots are deprecated in 2026-07-28 but still served (errata W-6).
#![allow(deprecated)]

use presa::mrtr::{Elicitation, Keyring, SamplingRequest, StateKey, UrlElicitation};
use presa::testing::{TestClient, TestResponse};
use presa::{
    CachePolicy, CacheScope, Completion, CompletionRequest, Error, Implementation, Prompt,
    PromptArgument, PromptGet, PromptMessage, Resource, ResourceRead, Role, Server, ServerBuilder,
    Tool, ToolCall,
};
use presa_tests::http::Harness;
use presa_tests::request;
use presa_tests::schema::{Schema, assert_valid_in, check_exchange, check_response};
use presa_tests::stdio::Session;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub(crate) const CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
pub(crate) const NOT_PERMITTED: &str = "Input-required result is not permitted for this operation";

/// The name of the servers built here (the audience of their request state).
pub(crate) const NAME: &str = "mrtr-tests";

/// Every client capability an input request can need.
pub(crate) fn all_caps() -> Value {
    json!({
        "elicitation": {"form": {}, "url": {}},
        "sampling": {"tools": {}, "context": {}},
        "roots": {"listChanged": true}
    })
}

/// Form elicitation only (`{}` counts as form support).
pub(crate) fn form_caps() -> Value {
    json!({"elicitation": {}})
}

// ---- the two transports ----

pub(crate) use presa_tests::client::{Client, Got, KINDS, Kind};

/// Serves a fresh [`server`] (its probe unused) over `kind`.
pub(crate) async fn fresh(kind: Kind) -> Client {
    let (server, _) = server();
    Client::start(kind, &server).await
}

/// Retries with answers (see [`retry`]).
pub(crate) trait Answer {
    /// Retries `params` with `answers` as `inputResponses` and the `requestState` of
    /// `round`, as request `id`.
    async fn answer(
        &mut self,
        id: i64,
        method: &str,
        params: &Value,
        answers: Value,
        round: &Round,
    ) -> Got;
}

impl Answer for Client {
    async fn answer(
        &mut self,
        id: i64,
        method: &str,
        params: &Value,
        answers: Value,
        round: &Round,
    ) -> Got {
        self.call(id, method, retry(params, answers, Some(&round.state)))
            .await
    }
}

/// Round 1 of a multi round-trip request, as checked by [`input_required`].
#[derive(Debug)]
pub(crate) struct Round {
    pub(crate) requests: Map<String, Value>,
    pub(crate) state: String,
}

impl Round {
    /// The ids of the input requests.
    pub(crate) fn keys(&self) -> BTreeSet<String> {
        self.requests.keys().cloned().collect()
    }
}

/// Asserts an `input_required` result of the shape of wire 10.1 (errata W-10: no caching
/// hints) from a server named [`NAME`], and returns its requests and state.
#[track_caller]
pub(crate) fn input_required(got: &Got) -> Round {
    input_required_from(got, &json!({"name": NAME, "version": "1"}))
}

/// [`input_required`] for a server identifying itself as `server_info`.
#[track_caller]
pub(crate) fn input_required_from(got: &Got, server_info: &Value) -> Round {
    let result = got.result();
    let kind = got.kind;
    assert_eq!(
        result["resultType"], "input_required",
        "{kind:?}: expected input_required, got {result}"
    );
    let requests = result["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("{kind:?}: inputRequests is an object: {result}"))
        .clone();
    assert!(!requests.is_empty(), "{kind:?}: {result}");
    for (id, r) in &requests {
        let keys: BTreeSet<&str> = r
            .as_object()
            .unwrap_or_else(|| panic!("{kind:?}: input request {id} is an object"))
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            BTreeSet::from(["method", "params"]),
            "{kind:?}: input request {id} is a bare {{method, params}} (no jsonrpc, no id): {r}"
        );
    }
    let state = result["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("{kind:?}: requestState is a string: {result}"))
        .to_owned();
    assert!(!state.is_empty(), "{kind:?}: {result}");
    assert_eq!(
        result["_meta"][SERVER_INFO], *server_info,
        "{kind:?}: serverInfo in _meta: {result}"
    );
    for hint in ["ttlMs", "cacheScope"] {
        assert!(
            result.get(hint).is_none(),
            "{kind:?}: an input_required result carries no {hint} (errata W-10): {result}"
        );
    }
    Round { requests, state }
}

/// tools/call params declaring `caps`.
pub(crate) fn call_params(name: &str, arguments: Value, caps: Value) -> Value {
    json!({"name": name, "arguments": arguments, "_meta": {CAPS: caps}})
}

/// `params` with `inputResponses` and, when given, `requestState` added.
pub(crate) fn retry(params: &Value, answers: Value, state: Option<&str>) -> Value {
    let mut p = params.clone();
    p["inputResponses"] = answers;
    if let Some(s) = state {
        p["requestState"] = Value::from(s);
    }
    p
}

/// A form answer.
pub(crate) fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

/// A sampling answer.
pub(crate) fn sampled(text: &str) -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": text}, "model": "test-model", "stopReason": "endTurn"})
}

/// A roots answer.
pub(crate) fn roots_answer() -> Value {
    json!({"roots": [{"uri": "file:///work", "name": "Work"}, {"uri": "file:///home"}]})
}

/// Checks a TestClient response against the schema and returns it.
#[track_caller]
fn checked(method: &str, r: TestResponse) -> TestResponse {
    check_response(method, &r.message);
    r
}

// ---- the server under test ----

/// A signing key with a fixed secret.
pub(crate) fn key(id: &str, byte: u8) -> StateKey {
    StateKey::new(id, vec![byte; 32]).expect("a valid request-state key")
}

/// A keyring (the first key signs).
pub(crate) fn keyring(keys: Vec<StateKey>) -> Keyring {
    Keyring::new(keys).expect("a valid keyring")
}

/// What the handlers of [`server`] saw.
#[derive(Default)]
pub(crate) struct Probe {
    runs: AtomicUsize,
    seen: Mutex<Vec<String>>,
}

impl Probe {
    fn ran(&self) {
        self.runs.fetch_add(1, Ordering::SeqCst);
    }

    fn log(&self, what: impl Into<String>) {
        self.seen.lock().expect("probe lock").push(what.into());
    }

    /// How many times a handler ran.
    pub(crate) fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }

    /// What the handlers logged, in order.
    pub(crate) fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("probe lock").clone()
    }
}

#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
pub(crate) struct Name {
    /// Your name.
    name: String,
}

#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
struct Color {
    /// Your favourite colour.
    color: String,
}

#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
struct Confirm {
    /// Whether to go on.
    ok: bool,
}

#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
struct Profile {
    /// Your name.
    name: String,
    /// Your age.
    age: u32,
    /// Whether to subscribe.
    newsletter: bool,
}

/// A choice without titles: an `enum` of strings.
#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
#[serde(rename_all = "lowercase")]
enum Size {
    Small,
    Large,
}

/// A choice with a title per value: a `oneOf` of `const` and `title`.
#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Flavour {
    #[schemars(title = "Vanilla")]
    Vanilla,
    #[schemars(title = "Dark chocolate")]
    Chocolate,
}

#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
struct Order {
    /// One size.
    size: Size,
    /// One flavour.
    flavour: Flavour,
    /// Any sizes.
    sizes: Vec<Size>,
    /// Any flavours.
    flavours: Vec<Flavour>,
}

#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
struct Context {
    /// Some context.
    context: String,
}

#[derive(Serialize, Deserialize)]
struct Stage {
    n: u32,
}

/// A URL fit for URL elicitation: https, a host, no user information, nothing personal.
pub(crate) const CONSENT_URL: &str = "https://auth.example.com/connect?flow=f81d4fae";

fn greeting(answer: Elicitation<Name>) -> String {
    match answer {
        Elicitation::Accepted(n) => format!("Hello, {}!", n.name),
        Elicitation::Declined => "declined".into(),
        Elicitation::Cancelled => "cancelled".into(),
    }
}

fn url_outcome(answer: UrlElicitation) -> &'static str {
    match answer {
        UrlElicitation::Accepted => "consented",
        UrlElicitation::Declined => "declined",
        UrlElicitation::Cancelled => "cancelled",
    }
}

/// A tool handler's success (names the error type for `?` in async blocks).
pub(crate) fn ok(text: impl Into<String>) -> Result<String, Error> {
    Ok(text.into())
}

/// A tool named `name` whose handler gets the probe and the call.
pub(crate) fn probed<F, Fut>(name: &str, probe: &Arc<Probe>, f: F) -> Tool
where
    F: Fn(Arc<Probe>, ToolCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, Error>> + Send + 'static,
{
    let probe = Arc::clone(probe);
    Tool::new(name)
        .description(format!("MRTR test tool {name}"))
        .handler(move |call: ToolCall| {
            let probe = Arc::clone(&probe);
            probe.ran();
            f(probe, call)
        })
}

/// The `greet` tool: asks the user's name (form), then greets them.
pub(crate) fn greet_tool(name: &str, probe: &Arc<Probe>) -> Tool {
    probed(name, probe, |_, call| async move {
        let answer = call
            .ctx
            .elicit::<Name>("user_name", "What is your name?")
            .get()?;
        ok(greeting(answer))
    })
}

/// A builder named [`NAME`] with a fixed key.
pub(crate) fn builder() -> ServerBuilder {
    Server::builder(Implementation::new(NAME, "1")).state_keys(keyring(vec![key("k1", 7)]))
}

/// A live tool's gate: the test opens it once it has seen the progress.
#[derive(Default)]
struct Gate(tokio::sync::Notify);

/// The server of these tests, with its probe.
pub(crate) fn server() -> (Server, Arc<Probe>) {
    let probe = Arc::new(Probe::default());
    let gate = Arc::new(Gate::default());
    let server = tools(builder(), &probe, &gate)
        .resource(preview_resource(&probe))
        .resource(
            Resource::new("mrtr://plain", "plain")
                .description("Needs no input")
                .mime_type("text/plain")
                .cache(CachePolicy::new(60_000, CacheScope::Public))
                .handler(|_: ResourceRead| async { "plain" }),
        )
        .prompt(
            Prompt::new("needs_context")
                .description("Asks for context first")
                .handler({
                    let probe = Arc::clone(&probe);
                    move |get: PromptGet| {
                        // Counted as the tools are, so "no handler ran" covers prompts.
                        probe.ran();
                        needs_context(get)
                    }
                }),
        )
        .prompt(
            Prompt::new("travel")
                .description("Completes a city, and its completion tries to ask the user")
                .argument(PromptArgument::new("city"))
                .handler(|_: PromptGet| async { "Travel".to_owned() })
                .complete("city", |req: CompletionRequest| async move {
                    let who = req
                        .ctx
                        .elicit::<Name>("user_name", "Who is travelling?")
                        .get()?;
                    Ok::<_, Error>(Completion::new([greeting(who)]))
                }),
        )
        .build()
        .expect("the MRTR test server builds");
    (server, probe)
}

fn preview_resource(probe: &Arc<Probe>) -> Resource {
    let probe = Arc::clone(probe);
    Resource::new("mrtr://preview", "preview")
        .description("Needs the user's name first")
        .mime_type("text/plain")
        .cache(CachePolicy::new(60_000, CacheScope::Public))
        .handler(move |read: ResourceRead| {
            probe.ran();
            async move {
                let answer = read
                    .ctx
                    .elicit::<Name>("user_name", "What is your name?")
                    .get()?;
                Ok::<_, Error>(format!("Preview for {}", greeting(answer)))
            }
        })
}

fn tools(b: ServerBuilder, probe: &Arc<Probe>, gate: &Arc<Gate>) -> ServerBuilder {
    let live_gate = Arc::clone(gate);
    b.tool(greet_tool("greet", probe))
        .tool(greet_tool("greet_again", probe))
        .tool(
            probed("echo_x", probe, |_, call| async move {
                let x = call.arguments["x"].as_str().unwrap_or_default().to_owned();
                let answer = call.ctx.elicit::<Name>("user_name", "Name?").get()?;
                ok(format!("x={x} {}", greeting(answer)))
            })
            .input_schema(json!({
                "type": "object",
                "properties": {"x": {"type": "string"}},
                "required": ["x"]
            })),
        )
        .tool(probed("steps", probe, |probe, call| async move {
            // A multi-step flow written as straight-line code.
            let ctx = call.ctx;
            let name = match ctx.elicit::<Name>("step1", "Step 1: your name").get()? {
                Elicitation::Accepted(n) => n.name,
                _ => "nobody".into(),
            };
            probe.log(format!("step1={name}"));
            let color = match ctx.elicit::<Color>("step2", "Step 2: a colour").get()? {
                Elicitation::Accepted(c) => c.color,
                _ => "none".into(),
            };
            probe.log(format!("step2={color}"));
            let confirmed = matches!(
                ctx.elicit::<Confirm>("step3", "Step 3: confirm").get()?,
                Elicitation::Accepted(Confirm { ok: true })
            );
            probe.log(format!("step3={confirmed}"));
            ok(format!("{name} likes {color} (confirmed: {confirmed})"))
        }))
        .tool(probed("several", probe, |_, call| async move {
            let ctx = call.ctx;
            let name = ctx.elicit::<Name>("user_name", "What is your name?");
            let words = ctx.sample(
                "greeting",
                SamplingRequest::new(50).user("Generate a greeting"),
            );
            let roots = ctx.roots("client_roots");
            let name = greeting(name.get()?);
            let words = words.get()?.text();
            let roots = roots.get()?.len();
            ok(format!("{name} | {words} | {roots} roots"))
        }))
        .tool(probed("profile", probe, |_, call| async move {
            match call
                .ctx
                .elicit::<Profile>("profile", "Your profile")
                .get()?
            {
                Elicitation::Accepted(p) => ok(format!(
                    "{} is {} (newsletter: {})",
                    p.name, p.age, p.newsletter
                )),
                Elicitation::Declined => ok("declined"),
                Elicitation::Cancelled => ok("cancelled"),
            }
        }))
        .tool(probed("order", probe, |_, call| async move {
            match call.ctx.elicit::<Order>("order", "Your order").get()? {
                Elicitation::Accepted(o) => {
                    let size = match o.size {
                        Size::Small => "small",
                        Size::Large => "large",
                    };
                    let flavour = match o.flavour {
                        Flavour::Vanilla => "vanilla",
                        Flavour::Chocolate => "chocolate",
                    };
                    let (sizes, flavours) = (o.sizes.len(), o.flavours.len());
                    ok(format!(
                        "{size} {flavour}, then {sizes} sizes and {flavours} flavours"
                    ))
                }
                _ => ok("no order"),
            }
        }))
        .tool(probed("url_consent", probe, |_, call| async move {
            let answer = call
                .ctx
                .elicit_url("consent", "Sign in to the calendar", CONSENT_URL)
                .get()?;
            ok(url_outcome(answer).to_owned())
        }))
        .tool(probed("needs_much", probe, |_, call| async move {
            let ctx = call.ctx;
            let consent = ctx.elicit_url("consent", "Sign in", CONSENT_URL);
            let search = ctx.sample(
                "search",
                SamplingRequest::new(20)
                    .user("Find it")
                    .tools(json!([{"name": "search", "inputSchema": {"type": "object"}}])),
            );
            let consent = url_outcome(consent.get()?);
            let found = search.get()?.text();
            ok(format!("{consent} {found}"))
        }))
        .tool(probed("sample_context", probe, |_, call| async move {
            let answer = call
                .ctx
                .sample(
                    "summary",
                    SamplingRequest::new(20)
                        .user("Summarise")
                        .include_context("thisServer"),
                )
                .get()?;
            ok(answer.text())
        }))
        .tool(probed("sample", probe, |_, call| async move {
            let answer = call
                .ctx
                .sample(
                    "question",
                    SamplingRequest::new(100)
                        .system_prompt("Be brief")
                        .user("What is the capital of France?"),
                )
                .get()?;
            ok(format!(
                "model={} role={:?} stop={} text={}",
                answer.model,
                answer.role,
                answer.stop_reason.as_deref().unwrap_or("-"),
                answer.text()
            ))
        }))
        .tool(probed("roots", probe, |_, call| async move {
            let roots = call.ctx.roots("client_roots").get()?;
            ok(roots
                .iter()
                .map(|r| match &r.name {
                    Some(n) => format!("{} ({n})", r.uri),
                    None => r.uri.clone(),
                })
                .collect::<Vec<_>>()
                .join(", "))
        }))
        .tool(probed("picky", probe, |_, call| async move {
            // Asks only for what the client declared.
            let ctx = call.ctx;
            let form = ctx
                .supports_elicitation()
                .then(|| ctx.elicit::<Name>("user_name", "Name?"));
            let url = ctx
                .supports_url_elicitation()
                .then(|| ctx.elicit_url("consent", "Sign in", CONSENT_URL));
            let words = ctx
                .supports_sampling()
                .then(|| ctx.sample("greeting", SamplingRequest::new(10).user("Say hi")));
            let roots = ctx.supports_roots().then(|| ctx.roots("client_roots"));
            let mut asked = Vec::new();
            if let Some(a) = form {
                a.get()?;
                asked.push("form");
            }
            if let Some(a) = url {
                a.get()?;
                asked.push("url");
            }
            if let Some(a) = words {
                a.get()?;
                asked.push("sampling");
            }
            if let Some(a) = roots {
                a.get()?;
                asked.push("roots");
            }
            ok(if asked.is_empty() {
                "nothing asked".to_owned()
            } else {
                asked.join(",")
            })
        }))
        .tool(probed("once", probe, |_, call| async move {
            call.ctx.single_use_state();
            let answer = call.ctx.elicit::<Name>("user_name", "Name?").get()?;
            ok(greeting(answer))
        }))
        .tool(probed("carrier", probe, |probe, call| async move {
            let ctx = call.ctx;
            let n = ctx.carried::<Stage>().map_or(0, |s| s.n);
            probe.log(format!("carried={n}"));
            ctx.carry(&Stage { n: n + 1 });
            let name = greeting(ctx.elicit::<Name>("step1", "Name?").get()?);
            let color = match ctx.elicit::<Color>("step2", "Colour?").get()? {
                Elicitation::Accepted(c) => c.color,
                _ => "none".into(),
            };
            ok(format!("{name} {color} stage {n}"))
        }))
        .tool(probed("huge_carry", probe, |_, call| async move {
            call.ctx.carry(&"x".repeat(20 * 1024));
            let answer = call.ctx.elicit::<Name>("user_name", "Name?").get()?;
            ok(greeting(answer))
        }))
        .tool(probed("optional", probe, |_, call| async move {
            let nickname = call
                .ctx
                .elicit::<Name>("nickname", "A nickname, if you like")
                .try_get();
            ok(match nickname {
                Some(answer) => greeting(answer),
                None => "no nickname".to_owned(),
            })
        }))
        .tool(probed(
            "progress_then_sample",
            probe,
            |_, call| async move {
                call.ctx.progress(1.0, Some(2.0), Some("thinking"));
                let answer = call
                    .ctx
                    .sample("question", SamplingRequest::new(10).user("Hi?"))
                    .get()?;
                ok(answer.text())
            },
        ))
        .tool(
            probed("live_then_ask", probe, move |_, call| {
                let gate = Arc::clone(&live_gate);
                async move {
                    call.ctx.progress(1.0, Some(2.0), Some("before asking"));
                    gate.0.notified().await;
                    let answer = call.ctx.elicit::<Name>("user_name", "Name?").get()?;
                    ok(greeting(answer))
                }
            })
            .live_notifications(true),
        )
        .tool(probed("open_gate", probe, {
            let gate = Arc::clone(gate);
            move |_, _| {
                gate.0.notify_one();
                async { ok("opened") }
            }
        }))
        .tool(probed("bad_sampling", probe, |_, call| async move {
            // A tool use not followed by its result breaks client/sampling.mdx.
            let request = SamplingRequest::new(10)
                .user("hi")
                .message(
                    Role::Assistant,
                    json!([{"type": "tool_use", "id": "u1", "name": "search", "input": {}}]),
                )
                .user("and then?");
            let answer = call.ctx.sample("s", request).get()?;
            ok(answer.text())
        }))
        .tool(probed("bad_url", probe, |_, call| async move {
            let answer = call
                .ctx
                .elicit_url("consent", "Sign in", "https://alice:secret@example.com/x")
                .get()?;
            ok(url_outcome(answer).to_owned())
        }))
}

// ---- 10.1 and 10.3: round 1, then the retry ----

#[tokio::test]
async fn round_one_is_input_required_then_the_retry_completes() {
    for kind in KINDS {
        let (server, probe) = server();
        let mut w = Client::start(kind, &server).await;
        let params = call_params("greet", json!({}), form_caps());
        let got = w.call(1, "tools/call", params.clone()).await;
        assert!(!got.sse, "{kind:?}: a plain input_required result is JSON");
        assert!(
            got.notifications().is_empty(),
            "{kind:?}: {:?}",
            got.messages
        );
        let round = input_required(&got);
        assert_eq!(
            Value::Object(round.requests.clone()),
            json!({"user_name": {"method": "elicitation/create", "params": {
                "mode": "form",
                "message": "What is your name?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "description": "Your name."}},
                    "required": ["name"]
                }
            }}}),
            "{kind:?}"
        );
        let got = w
            .answer(
                2,
                "tools/call",
                &params,
                json!({"user_name": accept(json!({"name": "Alice"}))}),
                &round,
            )
            .await;
        assert_eq!(got.text(), "Hello, Alice!", "{kind:?}");
        assert_eq!(
            got.response()["id"],
            json!(2),
            "{kind:?}: a new id per round"
        );
        assert_eq!(
            got.result()["_meta"][SERVER_INFO],
            json!({"name": NAME, "version": "1"})
        );
        assert_eq!(probe.runs(), 2, "{kind:?}: the handler runs once per round");
    }
}

#[tokio::test]
async fn resources_read_input_required_has_no_caching_hints_and_the_retry_is_not_cacheable() {
    for kind in KINDS {
        let mut w = fresh(kind).await;
        // The resources' own policy, as a first read without input shows.
        let plain = w
            .call(1, "resources/read", json!({"uri": "mrtr://plain"}))
            .await;
        assert_eq!(plain.result()["ttlMs"], json!(60_000), "{kind:?}");
        assert_eq!(plain.result()["cacheScope"], "public", "{kind:?}");

        let params = json!({"uri": "mrtr://preview", "_meta": {CAPS: form_caps()}});
        let got = w.call(2, "resources/read", params.clone()).await;
        // input_required: no ttlMs, no cacheScope (errata W-10), checked by input_required.
        let round = input_required(&got);
        assert_eq!(round.keys(), BTreeSet::from(["user_name".to_owned()]));
        let got = w
            .answer(
                3,
                "resources/read",
                &params,
                json!({"user_name": accept(json!({"name": "Bea"}))}),
                &round,
            )
            .await;
        let result = got.result();
        assert_eq!(result["resultType"], "complete", "{kind:?}: {result}");
        assert_eq!(
            result["contents"][0]["text"], "Preview for Hello, Bea!",
            "{kind:?}"
        );
        assert_eq!(result["contents"][0]["uri"], "mrtr://preview");
        // A complete result produced by a retry must not be cached (errata W-10).
        assert_eq!(result["ttlMs"], json!(0), "{kind:?}: {result}");
        assert_eq!(result["cacheScope"], "private", "{kind:?}: {result}");

        // Any retry (it carries inputResponses) is marked so, even one that asked nothing.
        let got = w
            .call(
                4,
                "resources/read",
                json!({"uri": "mrtr://plain", "inputResponses": {}}),
            )
            .await;
        assert_eq!(got.result()["ttlMs"], json!(0), "{kind:?}");
        assert_eq!(got.result()["cacheScope"], "private", "{kind:?}");
    }
}

#[tokio::test]
async fn prompts_get_can_ask_for_input() {
    for kind in KINDS {
        let mut w = fresh(kind).await;
        let params = json!({"name": "needs_context", "_meta": {CAPS: form_caps()}});
        let got = w.call(1, "prompts/get", params.clone()).await;
        let round = input_required(&got);
        assert_eq!(
            round.requests["user_context"]["method"],
            "elicitation/create"
        );
        let got = w
            .answer(
                2,
                "prompts/get",
                &params,
                json!({"user_context": accept(json!({"context": "trip to Rome"}))}),
                &round,
            )
            .await;
        let result = got.result();
        assert_eq!(result["resultType"], "complete", "{kind:?}: {result}");
        assert_eq!(
            result["messages"][0]["content"]["text"],
            "Context: trip to Rome"
        );
    }
}

#[tokio::test]
async fn multi_round_flow_gets_a_new_state_each_round_and_sees_every_answer() {
    for kind in KINDS {
        let (server, probe) = server();
        let mut w = Client::start(kind, &server).await;
        let params = call_params("steps", json!({}), form_caps());
        let mut states = Vec::new();
        let answers = [
            ("step1", json!({"name": "Alice"})),
            ("step2", json!({"color": "blue"})),
            ("step3", json!({"ok": true})),
        ];
        let mut got = w.call(1, "tools/call", params.clone()).await;
        for (round_no, (key, content)) in answers.iter().enumerate() {
            let round = input_required(&got);
            // Each question is asked once per call: only the next step is requested.
            assert_eq!(
                round.keys(),
                BTreeSet::from([(*key).to_owned()]),
                "{kind:?}: round {}",
                round_no + 1
            );
            assert!(
                !states.contains(&round.state),
                "{kind:?}: every round issues a different requestState"
            );
            states.push(round.state.clone());
            // Only this round's answer is sent: earlier ones travel in the state.
            got = w
                .answer(
                    round_no as i64 + 2,
                    "tools/call",
                    &params,
                    json!({ *key: accept(content.clone()) }),
                    &round,
                )
                .await;
        }
        assert_eq!(got.text(), "Alice likes blue (confirmed: true)", "{kind:?}");
        assert_eq!(probe.runs(), 4, "{kind:?}");
        assert_eq!(
            probe.seen(),
            [
                "step1=Alice",
                "step1=Alice",
                "step2=blue",
                "step1=Alice",
                "step2=blue",
                "step3=true"
            ],
            "{kind:?}: on every round the handler sees every answer given so far"
        );
    }
}

/// An answer the signed state holds from an earlier round stands: sending a different
/// one for the same key in a later round does not rewrite what the handler acted on.
#[tokio::test]
async fn an_answer_taken_in_an_earlier_round_is_not_rewritten() {
    for kind in KINDS {
        let (server, _probe) = server();
        let mut w = Client::start(kind, &server).await;
        let params = call_params("steps", json!({}), form_caps());
        let first = input_required(&w.call(1, "tools/call", params.clone()).await);
        let got = w
            .answer(
                2,
                "tools/call",
                &params,
                json!({"step1": accept(json!({"name": "Alice"}))}),
                &first,
            )
            .await;
        let second = input_required(&got);
        // The next round's answer, and a different one for the first step.
        let got = w
            .answer(
                3,
                "tools/call",
                &params,
                json!({
                    "step1": accept(json!({"name": "Mallory"})),
                    "step2": accept(json!({"color": "blue"})),
                }),
                &second,
            )
            .await;
        let third = input_required(&got);
        let got = w
            .answer(
                4,
                "tools/call",
                &params,
                json!({"step3": accept(json!({"ok": true}))}),
                &third,
            )
            .await;
        assert_eq!(got.text(), "Alice likes blue (confirmed: true)", "{kind:?}");
    }
}

/// The next round's state carries the answers as sent; answers too large for it (past
/// the state's 16 KiB) are the client's to shorten: -32602 naming the limit, not a
/// server error.
#[tokio::test]
async fn answers_too_large_to_carry_are_invalid_params() {
    for kind in KINDS {
        let (server, _probe) = server();
        let mut w = Client::start(kind, &server).await;
        let params = call_params("steps", json!({}), form_caps());
        let first = input_required(&w.call(1, "tools/call", params.clone()).await);
        let long = "A".repeat(20_000);
        let got = w
            .answer(
                2,
                "tools/call",
                &params,
                json!({"step1": accept(json!({"name": long}))}),
                &first,
            )
            .await;
        let e = got.error(-32602, 400);
        assert!(
            e["message"]
                .as_str()
                .is_some_and(|m| m.contains("16384 bytes")),
            "{kind:?}: {e}"
        );
    }
}

#[tokio::test]
async fn several_inputs_can_be_asked_in_one_round() {
    for kind in KINDS {
        let mut w = fresh(kind).await;
        let params = call_params("several", json!({}), all_caps());
        let got = w.call(1, "tools/call", params.clone()).await;
        let round = input_required(&got);
        assert_eq!(
            round.keys(),
            BTreeSet::from(["user_name".into(), "greeting".into(), "client_roots".into()]),
            "{kind:?}"
        );
        assert_eq!(round.requests["user_name"]["method"], "elicitation/create");
        assert_eq!(
            round.requests["greeting"],
            json!({"method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}],
                "maxTokens": 50
            }}),
            "{kind:?}"
        );
        assert_eq!(
            round.requests["client_roots"],
            json!({"method": "roots/list", "params": {}}),
            "{kind:?}"
        );
        let got = w
            .answer(
                2,
                "tools/call",
                &params,
                json!({
                    "user_name": accept(json!({"name": "Alice"})),
                    "greeting": sampled("Hi there!"),
                    "client_roots": roots_answer(),
                }),
                &round,
            )
            .await;
        assert_eq!(
            got.text(),
            "Hello, Alice! | Hi there! | 2 roots",
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn unknown_answer_ids_are_ignored() {
    for kind in KINDS {
        let mut w = fresh(kind).await;
        let params = call_params("greet", json!({}), form_caps());
        let round = input_required(&w.call(1, "tools/call", params.clone()).await);
        let got = w
            .answer(
                2,
                "tools/call",
                &params,
                json!({
                    "user_name": accept(json!({"name": "Alice"})),
                    "not_asked": {"action": "accept", "content": {"x": 1}},
                    "another": {"roots": []}
                }),
                &round,
            )
            .await;
        assert_eq!(got.text(), "Hello, Alice!", "{kind:?}");
    }
}

#[tokio::test]
async fn a_missing_answer_is_requested_again_not_an_error() {
    for kind in KINDS {
        let mut w = fresh(kind).await;
        let params = call_params("greet", json!({}), form_caps());
        let first = input_required(&w.call(1, "tools/call", params.clone()).await);
        // No answer at all: a new input_required asking the same question.
        let got = w.answer(2, "tools/call", &params, json!({}), &first).await;
        let again = input_required(&got);
        assert_eq!(again.requests, first.requests, "{kind:?}");
        assert_ne!(again.state, first.state, "{kind:?}: every round is fresh");

        // Two of three answers: only the third is asked again, the others are kept.
        let params = call_params("several", json!({}), all_caps());
        let r1 = input_required(&w.call(3, "tools/call", params.clone()).await);
        let got = w
            .answer(
                4,
                "tools/call",
                &params,
                json!({"user_name": accept(json!({"name": "Ann"})), "client_roots": roots_answer()}),
                &r1,
            )
            .await;
        let r2 = input_required(&got);
        assert_eq!(
            r2.keys(),
            BTreeSet::from(["greeting".to_owned()]),
            "{kind:?}"
        );
        let got = w
            .answer(
                5,
                "tools/call",
                &params,
                json!({"greeting": sampled("Hey")}),
                &r2,
            )
            .await;
        assert_eq!(got.text(), "Hello, Ann! | Hey | 2 roots", "{kind:?}");
    }
}

#[tokio::test]
async fn answers_given_on_the_first_call_without_state_are_used() {
    for kind in KINDS {
        let mut w = fresh(kind).await;
        let params = retry(
            &call_params("greet", json!({}), form_caps()),
            json!({"user_name": accept(json!({"name": "Bob"}))}),
            None,
        );
        let got = w.call(1, "tools/call", params).await;
        assert_eq!(got.text(), "Hello, Bob!", "{kind:?}");
    }
}

// ---- errata T-4: answers are checked against what was asked ----

#[tokio::test]
async fn an_elicitation_answer_not_matching_the_requested_schema_is_invalid_params() {
    let wrong = [
        json!({"action": "accept", "content": {"name": "A", "age": 3}}),
        json!({"action": "accept", "content": {"name": "A", "age": "three", "newsletter": true}}),
        json!({"action": "accept", "content": {"name": 5, "age": 3, "newsletter": true}}),
        json!({"action": "accept", "content": {"name": "A", "age": -1, "newsletter": true}}),
        json!({"action": "accept", "content": {"name": "A", "age": 3, "newsletter": "yes"}}),
        json!({"action": "accept"}),
        json!({"action": "maybe"}),
        json!({"content": {"name": "A", "age": 3, "newsletter": true}}),
        json!({"roots": []}),
    ];
    for kind in KINDS {
        let mut w = fresh(kind).await;
        let params = call_params("profile", json!({}), form_caps());
        let round = input_required(&w.call(1, "tools/call", params.clone()).await);
        let schema = &round.requests["profile"]["params"]["requestedSchema"];
        assert_eq!(schema["properties"]["age"]["type"], "integer", "{schema}");
        for (i, answer) in wrong.iter().enumerate() {
            // Answers off the requested schema, some off the protocol's too: unchecked.
            let retried = retry(&params, json!({ "profile": answer }), Some(&round.state));
            let got = w.call_unchecked(10 + i as i64, "tools/call", retried).await;
            got.error(-32602, 400);
            assert!(
                got.response()["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("profile")),
                "{kind:?}: the message names the input: {}",
                got.response()
            );
        }
        // The same state still works with a valid answer.
        let got = w
            .answer(
                99,
                "tools/call",
                &params,
                json!({"profile": accept(json!({"name": "Cy", "age": 30, "newsletter": false}))}),
                &round,
            )
            .await;
        assert_eq!(got.text(), "Cy is 30 (newsletter: false)", "{kind:?}");
    }
}

/// Enum fields take the shapes the schema names (`EnumSchema` in 2026-07-28 and
/// 2025-11-25): a titled single choice is `{"type": "string", "oneOf": [{const, title}]}`
/// and a titled multi-select's items are an `anyOf`; the answers are read back into the
/// enums.
#[tokio::test]
async fn enum_fields_take_the_schema_shapes() {
    for kind in KINDS {
        let mut w = fresh(kind).await;
        let params = call_params("order", json!({}), form_caps());
        let round = input_required(&w.call(1, "tools/call", params.clone()).await);
        let asked = &round.requests["order"]["params"];
        let props = &asked["requestedSchema"]["properties"];
        assert_eq!(
            props["size"]["enum"],
            json!(["small", "large"]),
            "{kind:?}: {props}"
        );
        assert_eq!(props["size"]["type"], "string", "{kind:?}: {props}");
        assert_eq!(props["flavour"]["type"], "string", "{kind:?}: {props}");
        assert_eq!(
            props["flavour"]["oneOf"][1]["const"], "chocolate",
            "{kind:?}: {props}"
        );
        assert_eq!(
            props["flavour"]["oneOf"][1]["title"], "Dark chocolate",
            "{kind:?}: {props}"
        );
        assert_eq!(
            props["sizes"]["items"]["type"], "string",
            "{kind:?}: {props}"
        );
        assert_eq!(props["flavours"]["type"], "array", "{kind:?}: {props}");
        let items = &props["flavours"]["items"];
        assert!(items.get("oneOf").is_none(), "{kind:?}: {items}");
        assert_eq!(items["anyOf"][0]["const"], "vanilla", "{kind:?}: {items}");
        for (field, def) in [
            ("size", "UntitledSingleSelectEnumSchema"),
            ("flavour", "TitledSingleSelectEnumSchema"),
            ("sizes", "UntitledMultiSelectEnumSchema"),
            ("flavours", "TitledMultiSelectEnumSchema"),
        ] {
            for schema in [Schema::Core, Schema::Nov2025] {
                assert_valid_in(schema, def, &props[field]);
            }
        }
        assert_valid_in(Schema::Nov2025, "ElicitRequestFormParams", asked);
        let content = json!({
            "size": "large", "flavour": "chocolate",
            "sizes": ["small"], "flavours": ["vanilla", "chocolate"]
        });
        let got = w
            .answer(
                2,
                "tools/call",
                &params,
                json!({"order": accept(content)}),
                &round,
            )
            .await;
        assert_eq!(
            got.text(),
            "large chocolate, then 1 sizes and 2 flavours",
            "{kind:?}"
        );
        let wrong =
            json!({"size": "large", "flavour": "chocolate", "sizes": [], "flavours": ["mint"]});
        let retried = retry(&params, json!({"order": accept(wrong)}), Some(&round.state));
        w.call_unchecked(3, "tools/call", retried)
            .await
            .error(-32602, 400);
    }
}

#[tokio::test]
async fn decline_and_cancel_are_distinguishable() {
    let (server, _) = server();
    for (action, expected) in [
        ("accept", "Hello, Dee!"),
        ("decline", "declined"),
        ("cancel", "cancelled"),
    ] {
        let client = TestClient::new(&server)
            .with_capabilities(form_caps())
            .with_input_handler(move |_, _| {
                if action == "accept" {
                    accept(json!({"name": "Dee"}))
                } else {
                    json!({ "action": action })
                }
            });
        let r = checked("tools/call", client.call_tool("greet", json!({})).await);
        r.assert_text(expected);
    }
}

// ---- the kinds of input ----

#[tokio::test]
async fn every_kind_of_input_request_validates_against_the_schema() {
    for kind in KINDS {
        let mut w = fresh(kind).await;
        // URL elicitation.
        let got = w
            .call(
                1,
                "tools/call",
                call_params(
                    "url_consent",
                    json!({}),
                    json!({"elicitation": {"url": {}}}),
                ),
            )
            .await;
        let round = input_required(&got);
        assert_eq!(
            round.requests["consent"],
            json!({"method": "elicitation/create", "params": {
                "mode": "url", "message": "Sign in to the calendar", "url": CONSENT_URL
            }}),
            "{kind:?}"
        );
        // Sampling with a system prompt.
        let got = w
            .call(
                2,
                "tools/call",
                call_params("sample", json!({}), all_caps()),
            )
            .await;
        let round = input_required(&got);
        assert_eq!(
            round.requests["question"],
            json!({"method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}],
                "maxTokens": 100,
                "systemPrompt": "Be brief"
            }}),
            "{kind:?}"
        );
        // Roots.
        let got = w
            .call(3, "tools/call", call_params("roots", json!({}), all_caps()))
            .await;
        let round = input_required(&got);
        assert_eq!(
            round.requests["client_roots"],
            json!({"method": "roots/list", "params": {}})
        );
    }
}

#[tokio::test]
async fn url_elicitation_accept_means_consent_and_decline_cancel_are_told_apart() {
    let (server, _) = server();
    for (action, expected) in [
        ("accept", "consented"),
        ("decline", "declined"),
        ("cancel", "cancelled"),
    ] {
        let client = TestClient::new(&server)
            .with_capabilities(json!({"elicitation": {"url": {}}}))
            .with_input_handler(move |key, request| {
                assert_eq!(key, "consent");
                assert_eq!(request["params"]["mode"], "url");
                assert_eq!(request["params"]["url"], CONSENT_URL);
                // URL mode: no content, only the action.
                json!({ "action": action })
            });
        let r = checked(
            "tools/call",
            client.call_tool("url_consent", json!({})).await,
        );
        r.assert_text(expected);
    }
}

#[tokio::test]
async fn sampling_answers_are_typed_and_checked() {
    let (server, _) = server();
    let answer_with = |answer: Value| {
        TestClient::new(&server)
            .with_capabilities(all_caps())
            .with_input_handler(move |_, _| answer.clone())
    };
    let r = answer_with(sampled("Paris"))
        .call_tool("sample", json!({}))
        .await;
    checked("tools/call", r).assert_text("model=test-model role=Assistant stop=endTurn text=Paris");
    // Content may be a list of blocks; stopReason is optional.
    let r = answer_with(json!({
        "role": "assistant",
        "content": [{"type": "text", "text": "Pa"}, {"type": "text", "text": "ris"}],
        "model": "m2"
    }))
    .call_tool("sample", json!({}))
    .await;
    checked("tools/call", r).assert_text("model=m2 role=Assistant stop=- text=Paris");
    // A CreateMessageResult needs role, content and model.
    for bad in [
        json!({"role": "assistant", "content": {"type": "text", "text": "x"}}),
        json!({"content": {"type": "text", "text": "x"}, "model": "m"}),
        json!({"role": "assistant", "model": "m"}),
        json!({"action": "accept", "content": {"name": "x"}}),
    ] {
        let r = answer_with(bad.clone())
            .call_tool("sample", json!({}))
            .await;
        checked("tools/call", r).assert_error(-32602);
    }
}

#[tokio::test]
async fn roots_answers_are_typed_and_checked() {
    let (server, _) = server();
    let answer_with = |answer: Value| {
        TestClient::new(&server)
            .with_capabilities(all_caps())
            .with_input_handler(move |_, _| answer.clone())
    };
    let r = answer_with(roots_answer())
        .call_tool("roots", json!({}))
        .await;
    checked("tools/call", r).assert_text("file:///work (Work), file:///home");
    let r = answer_with(json!({"roots": []}))
        .call_tool("roots", json!({}))
        .await;
    checked("tools/call", r).assert_text("");
    for bad in [
        json!({}),
        json!({"roots": "file:///x"}),
        json!({"roots": [{"name": "no uri"}]}),
    ] {
        let r = answer_with(bad).call_tool("roots", json!({})).await;
        checked("tools/call", r).assert_error(-32602);
    }
}

#[tokio::test]
async fn carried_state_travels_typed_from_round_to_round() {
    let (server, probe) = server();
    let client = TestClient::new(&server)
        .with_capabilities(form_caps())
        .with_input_handler(|key, _| match key {
            "step1" => accept(json!({"name": "Eve"})),
            _ => accept(json!({"color": "green"})),
        });
    let r = checked("tools/call", client.call_tool("carrier", json!({})).await);
    r.assert_text("Hello, Eve! green stage 2");
    assert_eq!(probe.seen(), ["carried=0", "carried=1", "carried=2"]);
}

#[tokio::test]
async fn an_optional_ask_does_not_make_the_call_input_required() {
    let (server, _) = server();
    let client = TestClient::new(&server).with_capabilities(form_caps());
    let r = checked("tools/call", client.call_tool("optional", json!({})).await);
    r.assert_text("no nickname");
    // Given anyway, the answer is used.
    let r = client
        .request(
            "tools/call",
            json!({"name": "optional", "arguments": {},
                   "inputResponses": {"nickname": accept(json!({"name": "Zed"}))}}),
        )
        .await;
    checked("tools/call", r).assert_text("Hello, Zed!");
}

#[tokio::test]
async fn sampling_message_rules_and_url_rules_are_enforced_before_asking() {
    // client/sampling.mdx: a tool use must be followed by its result; elicitation.mdx: no
    // user information in the URL. Both are the server's bug, so -32603, not a request.
    let (server, _) = server();
    let client = TestClient::new(&server)
        .with_capabilities(all_caps())
        .with_input_handler(|_, _| panic!("nothing may be asked"));
    for tool in ["bad_sampling", "bad_url"] {
        let r = checked("tools/call", client.call_tool(tool, json!({})).await);
        r.assert_error(-32603);
        assert_eq!(r.error().expect("an error")["message"], "Internal error");
    }
}

// ---- 10: which methods may answer input_required ----

#[tokio::test]
async fn a_completion_handler_asking_for_input_is_internal_error() {
    for kind in KINDS {
        let mut w = fresh(kind).await;
        let got = w
            .call(
                1,
                "completion/complete",
                json!({
                    "ref": {"type": "ref/prompt", "name": "travel"},
                    "argument": {"name": "city", "value": "Pa"},
                    "_meta": {CAPS: all_caps()}
                }),
            )
            .await;
        let e = got.error(-32603, 500);
        assert_eq!(e["message"], NOT_PERMITTED, "{kind:?}");
        // Even with the answer given, a completion cannot take part in a round trip.
        let got = w
            .call(
                2,
                "completion/complete",
                json!({
                    "ref": {"type": "ref/prompt", "name": "travel"},
                    "argument": {"name": "city", "value": "Pa"},
                    "inputResponses": {"user_name": accept(json!({"name": "Al"}))},
                    "_meta": {CAPS: all_caps()}
                }),
            )
            .await;
        assert!(
            got.response().get("error").is_some()
                || got.result()["completion"]["values"] == json!(["Hello, Al!"]),
            "{kind:?}: never input_required: {}",
            got.response()
        );
    }
}

// ---- 10.2: the capability check ----

#[tokio::test]
async fn missing_capabilities_are_one_error_with_the_merged_requirements() {
    let cases = [
        (
            "needs_much",
            json!({}),
            json!({"elicitation": {"url": {}}, "sampling": {"tools": {}}}),
        ),
        (
            "needs_much",
            json!({"sampling": {}}),
            json!({"elicitation": {"url": {}}, "sampling": {"tools": {}}}),
        ),
        (
            "needs_much",
            json!({"elicitation": {"form": {}}, "sampling": {"context": {}}}),
            json!({"elicitation": {"url": {}}, "sampling": {"tools": {}}}),
        ),
        (
            "sample_context",
            json!({"sampling": {}}),
            json!({"sampling": {"context": {}}}),
        ),
        ("sample", json!({}), json!({"sampling": {}})),
        (
            "greet",
            json!({"elicitation": {"url": {}}}),
            json!({"elicitation": {"form": {}}}),
        ),
        ("roots", json!({"sampling": {}}), json!({"roots": {}})),
        (
            "several",
            json!({"elicitation": {}}),
            json!({"sampling": {}, "roots": {}}),
        ),
    ];
    for kind in KINDS {
        let mut w = fresh(kind).await;
        for (i, (tool, caps, required)) in cases.iter().enumerate() {
            let got = w
                .call(
                    i as i64 + 1,
                    "tools/call",
                    call_params(tool, json!({}), caps.clone()),
                )
                .await;
            let e = got.error(-32021, 400);
            assert_eq!(e["message"], "Missing required client capability");
            assert_eq!(
                e["data"]["requiredCapabilities"], *required,
                "{kind:?}: {tool} with {caps}"
            );
        }
        // Declared, the same tool answers input_required.
        let got = w
            .call(
                50,
                "tools/call",
                call_params(
                    "needs_much",
                    json!({}),
                    json!({"elicitation": {"url": {}}, "sampling": {"tools": {}}}),
                ),
            )
            .await;
        assert_eq!(
            input_required(&got).keys(),
            BTreeSet::from(["consent".to_owned(), "search".to_owned()])
        );
    }
}

#[tokio::test]
async fn supports_helpers_let_a_tool_ask_only_what_the_client_declared() {
    let cases = [
        (json!({}), None),
        (json!({"sampling": {}}), Some(vec!["greeting"])),
        (json!({"elicitation": {}}), Some(vec!["user_name"])),
        (json!({"elicitation": {"url": {}}}), Some(vec!["consent"])),
        (json!({"roots": {}}), Some(vec!["client_roots"])),
        (
            all_caps(),
            Some(vec!["client_roots", "consent", "greeting", "user_name"]),
        ),
    ];
    for kind in KINDS {
        let (server, _) = server();
        let mut w = Client::start(kind, &server).await;
        for (i, (caps, asked)) in cases.iter().enumerate() {
            let got = w
                .call(
                    i as i64 + 1,
                    "tools/call",
                    call_params("picky", json!({}), caps.clone()),
                )
                .await;
            match asked {
                None => assert_eq!(got.text(), "nothing asked", "{kind:?}"),
                Some(keys) => {
                    let round = input_required(&got);
                    let expected: BTreeSet<String> = keys.iter().map(|k| (*k).to_owned()).collect();
                    assert_eq!(round.keys(), expected, "{kind:?}: caps {caps}");
                }
            }
        }
    }
    // Played to the end with a client that declares only sampling.
    let (server, _) = server();
    let client = TestClient::new(&server)
        .with_capabilities(json!({"sampling": {}}))
        .with_input_handler(|key, request| {
            assert_eq!(key, "greeting");
            assert_eq!(request["method"], "sampling/createMessage");
            sampled("hi")
        });
    let r = checked("tools/call", client.call_tool("picky", json!({})).await);
    r.assert_text("sampling");
}

// ---- errata W-11: -32021 keeps its HTTP 400 even after progress ----

#[tokio::test]
async fn missing_capability_after_progress_is_still_http_400() {
    let (server, _) = server();
    let h = Harness::start(server).await;
    let params = json!({
        "name": "progress_then_sample",
        "arguments": {},
        "_meta": {CAPS: {}, "progressToken": "p1"}
    });
    let reply = h.call(1, "tools/call", params).await;
    reply.assert_error(400, -32021, Some(json!(1)));
    assert!(
        !reply.is_sse(),
        "no SSE byte before the outcome: {}",
        reply.body
    );
    assert!(
        reply.notifications().is_empty(),
        "the held progress is dropped: {}",
        reply.body
    );
    assert_eq!(
        reply.response()["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );

    // With the capability declared, the held progress comes before the input_required.
    let params = json!({
        "name": "progress_then_sample",
        "arguments": {},
        "_meta": {CAPS: {"sampling": {}}, "progressToken": "p2"}
    });
    let reply = h.call(2, "tools/call", params).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let progress: Vec<&Value> = reply
        .notifications()
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 1, "{}", reply.body);
    assert_eq!(progress[0]["params"]["progressToken"], "p2");
    assert_eq!(reply.response()["result"]["resultType"], "input_required");
}

#[tokio::test]
async fn a_live_notifications_tool_streams_progress_before_it_asks() {
    let (server, _) = server();
    let h = Harness::start(server).await;
    let msg = request(
        1,
        "tools/call",
        json!({"name": "live_then_ask", "arguments": {},
               "_meta": {CAPS: form_caps(), "progressToken": "live"}}),
    );
    let mut stream = h.open(&msg, &[]).await;
    assert_eq!(stream.status, 200);
    assert!(stream.is_sse(), "{:?}", stream.header("content-type"));
    // The progress arrives while the handler is still waiting at its gate.
    let first = stream
        .next(presa_tests::wait::PATIENCE)
        .await
        .msg("the live progress, before the handler finishes");
    assert_eq!(first["method"], "notifications/progress", "{first}");
    // Open the gate (another request), then read to the end.
    let other = h
        .call(
            2,
            "tools/call",
            call_params("open_gate", json!({}), json!({})),
        )
        .await;
    assert_eq!(other.status, 200);
    let mut messages = vec![first];
    messages.extend(stream.reply().await.messages);
    check_exchange("tools/call", &messages);
    let last = messages.last().expect("a response");
    assert_eq!(last["id"], json!(1));
    assert_eq!(
        last["result"]["resultType"], "input_required",
        "{messages:?}"
    );
}

// ---- 10.3: structure of inputResponses and requestState, at admission ----

#[tokio::test]
async fn input_responses_and_request_state_structure_is_checked_before_any_handler() {
    let cases = [
        (
            json!({"inputResponses": "x"}),
            "inputResponses must be an object",
        ),
        (
            json!({"inputResponses": []}),
            "inputResponses must be an object",
        ),
        (
            json!({"inputResponses": null}),
            "inputResponses must be an object",
        ),
        (
            json!({"inputResponses": 7}),
            "inputResponses must be an object",
        ),
        (
            json!({"inputResponses": {"user_name": 12345}}),
            "inputResponses must map string IDs to bare result objects",
        ),
        (
            json!({"inputResponses": {"user_name": "accept"}}),
            "inputResponses must map string IDs to bare result objects",
        ),
        (
            json!({"inputResponses": {"a": {"action": "accept"}, "b": [1]}}),
            "inputResponses must map string IDs to bare result objects",
        ),
        (
            json!({"inputResponses": {"user_name": null}}),
            "inputResponses must map string IDs to bare result objects",
        ),
        (json!({"requestState": 5}), "requestState must be a string"),
        (
            json!({"requestState": {"s": 1}}),
            "requestState must be a string",
        ),
        (
            json!({"requestState": null}),
            "requestState must be a string",
        ),
        (
            json!({"inputResponses": {}, "requestState": ["x"]}),
            "requestState must be a string",
        ),
    ];
    let targets = [
        ("tools/call", json!({"name": "greet", "arguments": {}})),
        ("resources/read", json!({"uri": "mrtr://preview"})),
        ("prompts/get", json!({"name": "needs_context"})),
    ];
    for kind in KINDS {
        let (server, probe) = server();
        let mut w = Client::start(kind, &server).await;
        let mut id = 0;
        for (method, base) in &targets {
            for (extra, message) in &cases {
                id += 1;
                let mut params = base.clone();
                params["_meta"] = json!({CAPS: form_caps()});
                for (k, v) in extra.as_object().expect("an object") {
                    params[k] = v.clone();
                }
                let got = w.call_unchecked(id, method, params).await;
                got.invalid_params(message);
            }
        }
        assert_eq!(probe.runs(), 0, "{kind:?}: refused before any handler ran");
    }
}

// ---- the fixture's interactive items (wire 16.1, 16.2, 16.3) ----

#[tokio::test]
async fn the_fixture_missing_capability_tool_is_32021_naming_sampling() {
    // Streamable HTTP.
    let h = Harness::start(presa_tests::fixture()).await;
    let reply = h
        .call(
            401,
            "tools/call",
            call_params("test_missing_capability", json!({}), json!({})),
        )
        .await;
    reply.assert_error(400, -32021, Some(json!(401)));
    let required = &reply.response()["error"]["data"]["requiredCapabilities"];
    assert!(required["sampling"].is_object(), "{required}");
    // stdio, the fixture's command line as a child process.
    let mut s = Session::fixture(env!("CARGO_BIN_EXE_fixture")).await;
    let messages = s
        .call(
            402,
            "tools/call",
            call_params("test_missing_capability", json!({}), json!({})),
        )
        .await;
    let last = messages.last().expect("a response");
    assert_eq!(last["error"]["code"], json!(-32021), "{last}");
    assert!(last["error"]["data"]["requiredCapabilities"]["sampling"].is_object());
    assert!(s.finish().await, "the fixture exits cleanly");
}

/// Asserts no message is a request from the server (both `method` and `id`): in
/// 2026-07-28 the server never sends requests, it answers input_required.
#[track_caller]
fn no_server_requests(messages: &[Value]) {
    for m in messages {
        assert!(
            !(m.get("method").is_some() && m.get("id").is_some()),
            "the server sent a request: {m}"
        );
    }
}

#[tokio::test]
async fn the_fixture_streaming_elicitation_is_input_required_not_a_request() {
    let params = call_params("test_streaming_elicitation", json!({}), form_caps());
    let server_info =
        serde_json::to_value(presa_tests::fixture().info()).expect("serverInfo serializes");
    let h = Harness::start(presa_tests::fixture()).await;
    let reply = h.call(1, "tools/call", params.clone()).await;
    no_server_requests(&reply.messages);
    let got = Got {
        kind: Kind::Http,
        status: Some(reply.status),
        sse: reply.is_sse(),
        messages: reply.messages,
    };
    let round = input_required_from(&got, &server_info);
    assert_eq!(round.requests["user_name"]["method"], "elicitation/create");

    let mut s = Session::fixture(env!("CARGO_BIN_EXE_fixture")).await;
    let messages = s.call(2, "tools/call", params.clone()).await;
    no_server_requests(&messages);
    let got = Got {
        kind: Kind::Stdio,
        status: None,
        sse: false,
        messages,
    };
    let round = input_required_from(&got, &server_info);
    let messages = s
        .call(
            3,
            "tools/call",
            retry(
                &params,
                json!({"user_name": accept(json!({"name": "Alice"}))}),
                Some(&round.state),
            ),
        )
        .await;
    no_server_requests(&messages);
    assert_eq!(
        messages.last().expect("a response")["result"]["content"][0]["text"],
        "Hello, Alice!"
    );
    assert!(s.finish().await);
}

#[tokio::test]
async fn every_fixture_interactive_item_completes_with_a_client_that_answers() {
    let server = presa_tests::fixture();
    let client = TestClient::new(&server)
        .with_capabilities(all_caps())
        .with_input_handler(|key, request| match request["method"].as_str() {
            Some("sampling/createMessage") => sampled("Paris"),
            Some("roots/list") => {
                json!({"roots": [{"uri": "file:///test/root", "name": "Test Root"}]})
            }
            _ => match key {
                "step2" => accept(json!({"color": "blue"})),
                "confirm" => accept(json!({"ok": true})),
                "user_context" => accept(json!({"context": "test context"})),
                _ => accept(json!({"name": "Alice"})),
            },
        });
    let tools = [
        ("test_input_required_result_elicitation", "Alice"),
        ("test_input_required_result_sampling", "Paris"),
        ("test_input_required_result_list_roots", "file:///test/root"),
        ("test_input_required_result_request_state", "state-ok"),
        ("test_input_required_result_multiple_inputs", "Alice"),
        ("test_input_required_result_multi_round", "blue"),
        ("test_input_required_result_tampered_state", "state-ok"),
        ("test_input_required_result_capabilities", "Paris"),
        ("test_streaming_elicitation", "Alice"),
        ("test_missing_capability", "Paris"),
    ];
    for (tool, fragment) in tools {
        let r = checked("tools/call", client.call_tool(tool, json!({})).await);
        let text = r.text();
        assert!(
            text.contains(fragment),
            "{tool}: {text:?} lacks {fragment:?}"
        );
    }
    let r = checked(
        "prompts/get",
        client
            .get_prompt("test_input_required_result_prompt", json!({}))
            .await,
    );
    assert!(r.result()["messages"].to_string().contains("test context"));
    let r = checked(
        "resources/read",
        client
            .read_resource("z-mrtr://input-required-preview")
            .await,
    );
    assert!(
        r.result()["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("test context"))
    );
    assert_eq!(r.result()["ttlMs"], json!(0));
    assert_eq!(r.result()["cacheScope"], "private");
}

// ---- a tool declared not to ask for input ----

#[tokio::test]
async fn a_tool_declared_not_to_ask_for_input_that_asks_is_an_internal_error() {
    // `asks_input(false)` skips preparing the request-state binding; a handler that asks
    // anyway must get a clean -32603, never a state bound to nothing.
    for kind in KINDS {
        let probe = Arc::new(Probe::default());
        let server = builder()
            .tool(greet_tool("greet", &probe))
            .tool(greet_tool("greet_undeclared", &probe).asks_input(false))
            .build()
            .expect("the server builds");
        let mut w = Client::start(kind, &server).await;
        let got = w
            .call(
                1,
                "tools/call",
                call_params("greet_undeclared", json!({}), form_caps()),
            )
            .await;
        let error = got.error(-32603, 500);
        assert!(
            got.response().get("result").is_none() && error.get("data").is_none(),
            "{kind:?}: {}",
            got.response()
        );
        // The same handler, left to the default, asks as usual.
        let got = w
            .call(
                2,
                "tools/call",
                call_params("greet", json!({}), form_caps()),
            )
            .await;
        let round = input_required(&got);
        assert!(round.requests.contains_key("user_name"), "{kind:?}");
        assert_eq!(probe.runs(), 2, "{kind:?}");
    }
}

/// A `#[tool]` with no injected parameter cannot ask for input itself, but an extension
/// sees every tool call with its context and may: with one registered, the call still
/// answers `input_required` with a state bound to it, and the retry completes.
#[presa::tool]
async fn context_free() -> String {
    "ran".to_owned()
}

/// Asks the user for a name before any tool runs (an approval gate).
struct Gatekeeper;

impl presa::extension::Extension for Gatekeeper {
    fn id(&self) -> &'static str {
        "x.example/gatekeeper"
    }

    fn intercept_tool_call(
        &self,
        call: presa::extension::ToolInvocation,
    ) -> Result<presa::extension::Intercepted, Error> {
        // A missing answer marks the call input_required; the tool still runs.
        let _ = call.ctx().elicit::<Name>("gate", "Who is asking?").get();
        Ok(presa::extension::Intercepted::Continue(call))
    }
}

/// Calls `tool` (no arguments, form elicitation declared), which must answer
/// `input_required` asking `key` for a name; answers "Alice" and returns the retry's reply.
async fn one_name_round(w: &mut Client, tool: &str, key: &str) -> Got {
    let params = call_params(tool, json!({}), form_caps());
    let got = w.call(1, "tools/call", params.clone()).await;
    let round = input_required(&got);
    assert!(
        round.requests.contains_key(key),
        "{:?}: {:?}",
        got.kind,
        round.requests
    );
    w.answer(
        2,
        "tools/call",
        &params,
        json!({key: accept(json!({"name": "Alice"}))}),
        &round,
    )
    .await
}

#[tokio::test]
async fn an_extension_may_ask_for_input_around_a_context_free_tool() {
    for kind in KINDS {
        let server = builder()
            .add::<context_free>()
            .extension(Gatekeeper)
            .build()
            .expect("the server builds");
        let mut w = Client::start(kind, &server).await;
        let got = one_name_round(&mut w, "context_free", "gate").await;
        assert_eq!(got.text(), "ran", "{kind:?}");
    }
}

/// A `#[tool]` whose context is injected can ask for input even with no extension
/// registered: the macro marks it as one that may ask, so the call prepares the binding
/// its request state is signed with (the fixture registers Tasks, which prepares it
/// anyway, so only a server without extensions shows the mark working).
#[presa::tool]
async fn asks_through_its_context(
    ctx: presa::RequestContext,
) -> Result<String, presa::mrtr::InputRequired> {
    Ok(greeting(
        ctx.elicit::<Name>("user_name", "What is your name?")
            .get()?,
    ))
}

#[tokio::test]
async fn a_macro_tool_with_an_injected_context_asks_without_any_extension() {
    for kind in KINDS {
        let server = builder()
            .add::<asks_through_its_context>()
            .build()
            .expect("the server builds");
        let mut w = Client::start(kind, &server).await;
        let got = one_name_round(&mut w, "asks_through_its_context", "user_name").await;
        assert_eq!(got.text(), "Hello, Alice!", "{kind:?}");
    }
}

/// `needs_context`'s prompt: asks for context first, then renders it.
async fn needs_context(get: PromptGet) -> Result<Vec<PromptMessage>, Error> {
    let context = match get
        .ctx
        .elicit::<Context>("user_context", "Some context, please")
        .get()?
    {
        Elicitation::Accepted(c) => c.context,
        _ => "none".into(),
    };
    Ok(vec![PromptMessage::user(format!("Context: {context}"))])
}
