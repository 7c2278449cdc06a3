//! Shared support for presa's end-to-end tests: the schema checks (the official schemas,
//! of 2026-07-28 and of the earlier revisions, and the Tasks extension's), harnesses that
//! drive a server over real Streamable HTTP (an ephemeral loopback port; `legacy` for
//! sessions of the earlier revisions) and real stdio (the fixture binary as a child
//! process, or an in-process pipe; `legacy_stdio` for sessions of the earlier
//! revisions), the one client that runs a rule over both, the one SSE reader, waits
//! on conditions, a real OAuth 2.1 authorization server for the authorization tests
//! (`authz`), a throwaway PostgreSQL server for the PostgreSQL task store
//! (`postgres`), fixture replicas (`replicas`) behind a throwaway HAProxy (`haproxy`),
//! headless Chromium over WebDriver for the catalog page (`browser`), and the receivers
//! of what a server observes of itself: an OTLP/HTTP receiver run in process (`otlp`)
//! and a throwaway Prometheus (`prometheus`).

pub mod authz;
pub mod browser;
pub mod client;
pub mod haproxy;
pub mod http;
pub mod legacy;
pub mod legacy_stdio;
pub mod otlp;
pub mod postgres;
pub mod programs;
pub mod prometheus;
pub mod replicas;
pub mod schema;
pub mod sse;
pub mod stdio;
pub mod wait;

use serde_json::{Value, json};

/// The protocol version the tests speak.
pub const VERSION: &str = "2026-07-28";

/// A complete, valid request `_meta`.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "presa-tests", "version": "0.0.0"}
    })
}

/// `params` with the full `_meta` added (members already in `params._meta` win).
pub fn with_meta(params: Value) -> Value {
    let mut params = match params {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    let mut meta = match meta() {
        Value::Object(m) => m,
        _ => unreachable!(),
    };
    if let Some(Value::Object(given)) = params.remove("_meta") {
        meta.extend(given);
    }
    params.insert("_meta".into(), Value::Object(meta));
    Value::Object(params)
}

/// A JSON-RPC request with the full `_meta`.
pub fn request(id: impl Into<Value>, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": with_meta(params)})
}

/// The top-level `id` and `method` of a JSON object, every other member skipped
/// unparsed.
#[derive(serde::Deserialize)]
struct Head {
    id: Option<Value>,
    method: Option<Value>,
}

/// The id and method of a request a test wrote as bytes (`None` for anything else),
/// read without building a `serde_json::Value` of the whole message: its other members
/// may be made to break that (see [`raw_value_chain`]).
pub fn request_head(bytes: &[u8]) -> Option<(Value, String)> {
    let head: Head = serde_json::from_slice(bytes).ok()?;
    match (head.id?, head.method?) {
        (id, Value::String(method)) if id.is_i64() || id.is_string() => Some((id, method)),
        _ => None,
    }
}

/// The method a message written as bytes names, or `""` (see [`request_head`]).
pub fn method_of_bytes(bytes: &[u8]) -> String {
    match serde_json::from_slice::<Head>(bytes) {
        Ok(Head {
            method: Some(Value::String(m)),
            ..
        }) => m,
        _ => String::new(),
    }
}

/// Asserts a tool error (`isError: true`) whose text is exactly `text`: a stronger
/// `TestResponse::assert_tool_error`, which passes for any text containing its fragment.
#[track_caller]
pub fn assert_tool_error_text(r: &presa::testing::TestResponse, text: &str) {
    r.assert_tool_error(text);
    assert_eq!(r.text(), text, "the tool error's text");
}

/// A loopback port free when asked.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// The fixture's server, built in process.
pub fn fixture() -> presa::Server {
    presa_fixture::build().expect("the fixture builds")
}

/// A chain of objects keyed by serde_json's private RawValue key, each holding the next
/// as its JSON text, `levels` deep with 120 brackets around each: what serde_json's own
/// `Value` parse reads afresh level after level (presa refuses the key).
pub fn raw_value_chain(levels: usize) -> String {
    let mut chain = "1".to_owned();
    for _ in 0..levels {
        let text = serde_json::to_string(&chain).expect("a string");
        chain = format!(
            r#"{}{{"$serde_json::private::RawValue":{text}}}{}"#,
            "[".repeat(120),
            "]".repeat(120)
        );
    }
    chain
}

/// What [`token_watcher`]'s tool reports: whether its handler started, and whether the
/// work it spawned on the request's cancellation token saw the token fire.
#[derive(Clone, Default)]
pub struct Watch {
    /// The handler has started (and handed its token to the spawned work).
    pub started: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// The spawned work saw the cancellation.
    pub saw_cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Watch {
    /// Whether the handler has started.
    pub fn started(&self) -> bool {
        self.started.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Whether the spawned work saw the cancellation.
    pub fn saw_cancel(&self) -> bool {
        self.saw_cancel.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// A tool `watched` whose handler hands `ctx.cancellation_token()` to spawned work (book,
/// cancellation.md), then waits forever: the transports' tests check that the token the
/// handler hands out is the one their cancellation fires.
pub fn token_watcher() -> (presa::Tool, Watch) {
    let watch = Watch::default();
    let flags = watch.clone();
    let tool = presa::Tool::new("watched")
        .description("Hands its token to spawned work, then waits forever")
        .handler(move |call: presa::ToolCall| {
            let flags = flags.clone();
            async move {
                let token = call.ctx.cancellation_token();
                let saw = std::sync::Arc::clone(&flags.saw_cancel);
                tokio::spawn(async move {
                    token.cancelled().await;
                    saw.store(true, std::sync::atomic::Ordering::SeqCst);
                });
                flags
                    .started
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                std::future::pending::<()>().await;
                "unreachable"
            }
        });
    (tool, watch)
}
