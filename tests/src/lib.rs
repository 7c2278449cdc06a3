//! Shared support for presa's end-to-end tests: the official schema check, and harnesses
//! that drive a server over real Streamable HTTP (an ephemeral loopback port) and real
//! stdio (the fixture binary as a child process, or an in-process pipe).

pub mod http;
pub mod schema;
pub mod stdio;

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
