//! Servers and messages shared by the micro benchmarks (`benches/pipeline.rs`), built from
//! presa's public API only.

use presa::mrtr::{Elicitation, InputRequired};
use presa::testing::RawResponse;
use presa::{RequestContext, Server, Tool, ToolCall};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Echoes the text back.
#[presa::tool]
pub async fn echo(text: String) -> String {
    text
}

/// One note, read through a resource template.
#[presa::resource(uri = "notes://{id}", mime_type = "text/plain")]
pub async fn note(id: u64) -> String {
    format!("note {id}")
}

/// The form the multi round-trip case asks for.
#[derive(Deserialize, schemars::JsonSchema, presa::ElicitForm)]
pub struct Confirm {
    /// Whether to go on.
    pub ok: bool,
}

#[derive(Serialize, Deserialize)]
struct Step {
    step: String,
}

/// Asks the user to confirm (a multi round-trip request), carrying state to the retry in
/// the signed `requestState`: the first round seals it, the retry opens it.
#[presa::tool]
pub async fn confirm(ctx: RequestContext) -> Result<String, InputRequired> {
    ctx.carry(&Step {
        step: "confirm".into(),
    });
    let answer = ctx
        .elicit::<Confirm>("confirm", "Confirm to continue")
        .get()?;
    let carried = ctx.carried::<Step>().map(|s| s.step);
    Ok(match (answer, carried.as_deref()) {
        (Elicitation::Accepted(Confirm { ok: true }), Some("confirm")) => "confirmed".into(),
        _ => "not confirmed".into(),
    })
}

/// The `_meta` of a 2026-07-28 request, as the HTTP and stdio benchmarks send it.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "presa-bench", "version": "0.0.0"}
    })
}

/// A full JSON-RPC request of `method` with `params` and [`meta`].
pub fn request(method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

/// The echo tool call the transport benchmarks send.
pub fn echo_call() -> Value {
    request(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hello from the presa bench"}}),
    )
}

/// `message` as the bytes a transport receives, for
/// [`TestClient::send_raw`](presa::testing::TestClient::send_raw).
pub fn bytes(message: &Value) -> Vec<u8> {
    serde_json::to_vec(message).expect("a JSON value serializes")
}

/// Whether `raw` answers request 1 with a result (`result: true`) or with an error,
/// read from the start of the bytes presa writes (`{"jsonrpc":"2.0","id":1,"result":`):
/// a check inside a measured loop that costs a comparison, not a parse.
pub fn answers(raw: &RawResponse, result: bool) -> bool {
    let start = if result {
        r#"{"jsonrpc":"2.0","id":1,"result":"#
    } else {
        r#"{"jsonrpc":"2.0","id":1,"error":"#
    };
    raw.message.as_deref().is_some_and(|m| m.starts_with(start))
}

/// A server with `echo`, the `notes://{id}` template, and `extra` more tools
/// (`tool_0000`, …, each with a one-property input schema), listing `page_size` items a
/// page.
pub fn server(extra: usize, page_size: usize) -> Server {
    let mut builder = presa::server!()
        .add::<echo>()
        .add::<note>()
        .page_size(page_size);
    for i in 0..extra {
        builder = builder.tool(
            Tool::new(format!("tool_{i:04}"))
                .description(format!("Filler tool number {i}, to grow the catalog."))
                .input_schema(json!({
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "Any text."}},
                    "required": ["text"]
                }))
                .handler(|_call: ToolCall| async { "ok" }),
        );
    }
    builder.build().expect("a valid server")
}

/// A server with the `confirm` tool and a fixed request-state key.
pub fn mrtr_server() -> Server {
    let key = presa::mrtr::StateKey::new("bench", vec![7u8; 32]).expect("a valid key");
    presa::server!()
        .add::<confirm>()
        .state_keys(presa::mrtr::Keyring::new(vec![key]).expect("a keyring"))
        .build()
        .expect("a valid server")
}
