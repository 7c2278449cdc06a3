//! The attributes end to end: tools, resources and prompts declared with `#[tool]`,
//! `#[resource]` and `#[prompt]`, served through the in-process test client.

use presa::extract::{Args, State};
use presa::testing::TestClient;
use presa::{Completion, CompletionRequest, Error, Json, RequestContext, ToolError};
use presa_tests::raw_value_chain;
use serde_json::json;

/// Adds two numbers.
#[presa::tool(annotations(read_only, idempotent))]
async fn add(a: f64, #[arg(description = "The second number")] b: Option<f64>) -> f64 {
    a + b.unwrap_or(0.0)
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Forecast {
    region: String,
    celsius: i32,
}

/// Looks up the weather for a region.
#[presa::tool(name = "weather.lookup")]
async fn weather(
    #[header("Region")] region: String,
    #[arg(default = 3)] days: u8,
    ctx: RequestContext,
) -> Result<Json<Forecast>, ToolError> {
    let _ = ctx.request_id();
    if region == "mars" {
        return Err(ToolError::new("no weather on mars"));
    }
    Ok(Json(Forecast {
        region,
        celsius: i32::from(days) * 7,
    }))
}

/**
 * Multiplies two numbers.
 *
 * Written as a block doc comment.
 */
#[presa::tool]
async fn multiply(a: f64, b: f64) -> f64 {
    a * b
}

struct Counter(std::sync::atomic::AtomicU32);

/// Counts calls.
#[presa::tool]
fn count(State(counter): State<Counter>) -> u32 {
    counter.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Search {
    /// What to look for.
    query: String,
    limit: Option<u32>,
}

/// Searches.
#[presa::tool]
async fn search(Args(s): Args<Search>) -> String {
    format!("{} ({})", s.query, s.limit.unwrap_or(10))
}

/// A note by id.
#[presa::resource(uri = "notes://{id}", mime_type = "text/plain", complete(id = complete_id))]
async fn note(id: u64) -> Result<String, presa::ResourceError> {
    if id == 0 {
        return Err(presa::ResourceError::NotFound);
    }
    Ok(format!("note {id}"))
}

async fn complete_id(req: CompletionRequest) -> Result<Completion, Error> {
    Ok(Completion::new(
        ["1", "2", "10"]
            .iter()
            .filter(|v| v.starts_with(&req.value))
            .copied(),
    ))
}

/// The readme.
#[presa::resource(uri = "docs://readme")]
fn readme() -> &'static str {
    "read me"
}

/// Reviews code.
#[presa::prompt(complete(language = complete_language))]
async fn review(
    #[arg(description = "The code")] code: String,
    language: Option<String>,
    times: Option<u8>,
) -> String {
    format!(
        "review {} x{} in {}",
        code,
        times.unwrap_or(1),
        language.unwrap_or_default()
    )
}

async fn complete_language(_req: CompletionRequest) -> Result<Completion, Error> {
    Ok(Completion::new(["rust"]))
}

fn server() -> presa::Server {
    presa::server!()
        .add::<add>()
        .add::<multiply>()
        .add::<weather>()
        .add::<count>()
        .add::<search>()
        .add::<note>()
        .add::<readme>()
        .add::<review>()
        .state(Counter(std::sync::atomic::AtomicU32::new(0)))
        .build()
        .expect("the server builds")
}

#[tokio::test]
async fn tools_from_the_attribute() {
    let c = TestClient::new(&server());
    c.call_tool("add", json!({"a": 1.5, "b": 2}))
        .await
        .assert_text("3.5");
    c.call_tool("add", json!({"a": 1})).await.assert_text("1");
    presa_tests::assert_tool_error_text(
        &c.call_tool("add", json!({})).await,
        r#"Invalid arguments for tool add: "a" is a required property"#,
    );
    let w = c.call_tool("weather.lookup", json!({"region": "eu"})).await;
    assert_eq!(
        w.result()["structuredContent"],
        json!({"region": "eu", "celsius": 21})
    );
    presa_tests::assert_tool_error_text(
        &c.call_tool("weather.lookup", json!({"region": "mars"}))
            .await,
        "no weather on mars",
    );
    c.call_tool("count", json!({})).await.assert_text("1");
    c.call_tool("count", json!({})).await.assert_text("2");
    c.call_tool("search", json!({"query": "x"}))
        .await
        .assert_text("x (10)");
    // Descriptions from `///` lines and from a `/** */` block (its `*` margin removed).
    let list = c.list_tools().await;
    let description = |name: &str| {
        list.result()["tools"]
            .as_array()
            .and_then(|tools| tools.iter().find(|t| t["name"] == name))
            .map(|t| t["description"].clone())
    };
    assert_eq!(description("add"), Some(json!("Adds two numbers.")));
    assert_eq!(
        description("multiply"),
        Some(json!(
            "Multiplies two numbers.\n\nWritten as a block doc comment."
        ))
    );
    c.call_tool("multiply", json!({"a": 2, "b": 3}))
        .await
        .assert_text("6");
}

#[tokio::test]
async fn resources_and_prompts_from_the_attribute() {
    let c = TestClient::new(&server());
    let r = c.read_resource("notes://7").await;
    assert_eq!(r.result()["contents"][0]["text"], "note 7");
    assert_eq!(r.result()["contents"][0]["mimeType"], "text/plain");
    c.read_resource("notes://0").await.assert_error(-32602);
    c.read_resource("notes://abc").await.assert_error(-32602);
    let r = c.read_resource("docs://readme").await;
    assert_eq!(r.result()["contents"][0]["text"], "read me");
    let p = c
        .get_prompt("review", json!({"code": "fn x()", "times": "2"}))
        .await;
    assert_eq!(
        p.result()["messages"][0]["content"]["text"],
        "review fn x() x2 in "
    );
    c.get_prompt("review", json!({"code": "x", "times": "many"}))
        .await
        .assert_error(-32602);
    c.get_prompt("review", json!({})).await.assert_error(-32602);
    // The listing carries the attribute's description and which arguments are required;
    // the completion provider named in `complete(...)` answers for its argument.
    let list = c.request("prompts/list", json!({})).await;
    let review = list.result()["prompts"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == "review"))
        .cloned()
        .expect("review is listed");
    assert_eq!(
        review["arguments"],
        json!([
            {"name": "code", "description": "The code", "required": true},
            {"name": "language", "required": false},
            {"name": "times", "required": false}
        ]),
        "{review}"
    );
    let done = c
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "review"},
                   "argument": {"name": "language", "value": "ru"}}),
        )
        .await;
    assert_eq!(
        done.result()["completion"]["values"],
        json!(["rust"]),
        "{}",
        done.message
    );
}

#[test]
fn missing_state_is_refused_at_build() {
    let e = presa::server!()
        .add::<count>()
        .build()
        .err()
        .expect("build fails");
    assert!(e.to_string().contains("count"), "{e}");
    assert!(e.to_string().contains("Counter"), "{e}");
}

/// Another tool that claims the name `add`.
#[presa::tool(name = "add")]
async fn add_again() -> &'static str {
    "again"
}

#[test]
fn duplicate_names_are_refused_naming_both_places() {
    let e = presa::server!()
        .add::<add>()
        .add::<add_again>()
        .build()
        .err()
        .expect("build fails");
    let text = e.to_string();
    assert!(text.contains("\"add\" is registered twice"), "{text}");
    assert_eq!(text.matches("tests/tests/macros.rs:").count(), 2, "{text}");
}

#[test]
fn the_registry_holds_every_declared_item() {
    // Built from the distributed slice, with the state the counter needs. The registry
    // holds both items of this file named `add` (`add` and `add_again`, declared apart),
    // so the whole registry refuses to build, naming the two places; a registry that
    // missed either would build. (The examples' tests build `.registered()` servers that
    // do build, and call what they declare.)
    let e = presa::Server::from_registry(presa::Implementation::new("t", "1"))
        .state(Counter(std::sync::atomic::AtomicU32::new(0)))
        .build()
        .err()
        .expect("the duplicate is refused");
    let text = e.to_string();
    assert!(text.contains("\"add\" is registered twice"), "{text}");
    assert_eq!(text.matches("tests/tests/macros.rs:").count(), 2, "{text}");
}

/// Fails with a protocol error.
#[presa::tool]
async fn protocol_failure() -> Result<String, Error> {
    Err(Error::invalid_params("bad input"))
}

#[derive(Debug)]
struct Oops;

impl std::fmt::Display for Oops {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("oops")
    }
}

/// Fails with a displayable error.
#[presa::tool]
async fn display_failure() -> Result<String, Oops> {
    Err(Oops)
}

#[tokio::test]
async fn errors_keep_their_kind() {
    let server = presa::server!()
        .add::<protocol_failure>()
        .add::<display_failure>()
        .build()
        .expect("builds");
    let c = TestClient::new(&server);
    c.call_tool("protocol_failure", json!({}))
        .await
        .assert_error(-32602);
    presa_tests::assert_tool_error_text(&c.call_tool("display_failure", json!({})).await, "oops");
}

/// Echoes a JSON argument's compact text.
#[presa::prompt]
fn json_spec(spec: serde_json::Value) -> String {
    format!("spec {spec}")
}

/// A resource named by a JSON template variable.
#[presa::resource(uri = "json://{v}")]
fn json_item(v: serde_json::Value) -> String {
    format!("item {v}")
}

/// A prompt argument or template variable is refused when it holds serde_json's private
/// RawValue key, for a `serde_json::Value` parameter (book/src/protocol-notes.md):
/// that parse reads the key's text afresh, and a chain of them overflowed the stack of
/// a debug build (this test's thread aborts without the refusal). Other JSON is parsed.
#[tokio::test]
async fn raw_value_keys_in_text_arguments_are_refused() {
    let server = presa::server!()
        .add::<json_spec>()
        .add::<json_item>()
        .add::<review>()
        .build()
        .expect("builds");
    let c = TestClient::new(&server);
    // Whatever the parameter's type (presa cannot tell which `FromStr` reaches serde_json's
    // parse), a `String` included; a text that only mentions the key is ordinary.
    let mention = "the key $serde_json::private::RawValue, and {\"a\": 1}";
    let p = c.get_prompt("review", json!({ "code": mention })).await;
    assert_eq!(
        p.result()["messages"][0]["content"]["text"],
        format!("review {mention} x1 in ")
    );
    c.get_prompt(
        "review",
        json!({"code": r#"{"$serde_json::private::RawValue":"1"}"#}),
    )
    .await
    .assert_error(-32602);
    let p = c
        .get_prompt("json_spec", json!({"spec": "{\"a\":[1,true]}"}))
        .await;
    assert_eq!(
        p.result()["messages"][0]["content"]["text"],
        "spec {\"a\":[1,true]}"
    );
    let r = c.read_resource("json://%5B1%2C2%5D").await;
    assert_eq!(r.result()["contents"][0]["text"], "item [1,2]");
    let escaped = r#"{"\u0024serde_json::private::RawValue":"1"}"#;
    for spec in [
        r#"{"$serde_json::private::RawValue":"[1,2,3]"}"#.to_owned(),
        r#"[0,{"a":1,"$serde_json::private::RawValue":"1"}]"#.to_owned(),
        escaped.to_owned(),
        raw_value_chain(12),
    ] {
        let got = c.get_prompt("json_spec", json!({ "spec": spec })).await;
        got.assert_error(-32602);
        let message = got
            .error()
            .map(|e| e["message"].to_string())
            .unwrap_or_default();
        assert!(message.contains("RawValue"), "{message}");
    }
    let uri = format!(
        "json://{}",
        r#"{"$serde_json::private::RawValue":"1"}"#
            .bytes()
            .map(|b| format!("%{b:02X}"))
            .collect::<String>()
    );
    // A variable that does not parse names no resource.
    c.read_resource(&uri).await.assert_error(-32602);
}

/// A region code: a header type of your own, mirrored as a string.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Region(String);

impl presa::HeaderArg for Region {
    const KIND: presa::__private::HeaderKind = presa::__private::HeaderKind::String;
}

/// Headers of each kind of type: presa's own, an `Option` of one, a type of your own,
/// and an `Option` of that.
#[presa::tool]
async fn headers(
    #[header("Region")] region: Region,
    #[header("Backup")] backup: Option<Region>,
    #[header("Days")] days: Option<u16>,
    #[header("Fresh")] fresh: bool,
) -> String {
    format!("{} {:?} {days:?} {fresh}", region.0, backup.map(|r| r.0))
}

/// The type decides a header's JSON type, by the traits it implements: the schema says
/// it, and the values arrive.
#[tokio::test]
async fn header_parameters_of_each_kind_of_type() {
    let server = presa::server!().add::<headers>().build().expect("builds");
    let c = TestClient::new(&server);
    let list = c.list_tools().await;
    let properties = &list.result()["tools"][0]["inputSchema"]["properties"];
    for (name, header, ty) in [
        ("region", "Region", "string"),
        ("backup", "Backup", "string"),
        ("days", "Days", "integer"),
        ("fresh", "Fresh", "boolean"),
    ] {
        assert_eq!(properties[name]["x-mcp-header"], header, "{name}");
        assert_eq!(properties[name]["type"], ty, "{name}");
    }
    assert_eq!(properties["days"]["maximum"], 65535);
    c.call_tool(
        "headers",
        json!({"region": "eu", "backup": "us", "days": 3, "fresh": true}),
    )
    .await
    .assert_text("eu Some(\"us\") Some(3) true");
    c.call_tool("headers", json!({"region": "eu", "fresh": false}))
        .await
        .assert_text("eu None None false");
}
