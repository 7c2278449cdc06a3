//! Every attribute used through a renamed dependency, told where presa is with
//! `crate = "presa_renamed"`, beside a local `presa` that is `std`: generated code that
//! named `::presa` (no such crate here) or `presa` (this module) would not compile. The
//! skill set `skills!` embeds is `skills/`, beside this crate's Cargo.toml.

use presa_renamed::testing::TestClient;
use serde_json::json;
use std as presa;

/// Echoes its text, with the mode mirrored into a header.
#[presa_renamed::tool(crate = "presa_renamed", task = "optional", annotations(read_only))]
async fn echo(
    text: String,
    #[header("Mode")] mode: Option<String>,
    #[arg(default = 1)] times: u8,
) -> String {
    let text = text.repeat(usize::from(times));
    match mode {
        Some(mode) => format!("{text} ({mode})"),
        None => text,
    }
}

/// Greets someone.
#[presa_renamed::prompt(crate = "presa_renamed")]
async fn greet(name: String) -> String {
    format!("Hello, {name}!")
}

/// One note.
#[presa_renamed::resource(crate = "presa_renamed", uri = "notes://{id}")]
async fn note(id: u32) -> String {
    format!("note {id}")
}

/// A form, checked through the renamed crate.
#[derive(serde::Deserialize, schemars::JsonSchema, presa_renamed::ElicitForm)]
#[presa(crate = "presa_renamed")]
#[allow(dead_code)]
struct Contact {
    name: String,
}

#[tokio::test]
async fn items_declared_under_another_name_are_served() {
    let server = presa_renamed::server!()
        .add::<echo>()
        .add::<greet>()
        .add::<note>()
        .extension(presa_renamed::skills!("skills", crate = "presa_renamed"))
        .build()
        .expect("builds");
    let c = TestClient::new(&server);
    c.call_tool("echo", json!({"text": "hi", "mode": "loud", "times": 2}))
        .await
        .assert_text("hihi (loud)");
    c.call_tool("echo", json!({"text": "hi"}))
        .await
        .assert_text("hi");
    let listed = c.list_tools().await;
    let tool = &listed.result()["tools"][0];
    assert_eq!(
        tool["inputSchema"]["properties"]["mode"]["x-mcp-header"],
        "Mode"
    );
    assert_eq!(tool["annotations"]["readOnlyHint"], true);
    let prompt = c.get_prompt("greet", json!({"name": "Ada"})).await;
    assert_eq!(
        prompt.result()["messages"][0]["content"]["text"],
        "Hello, Ada!"
    );
    let read = c.read_resource("notes://7").await;
    assert_eq!(read.result()["contents"][0]["text"], "note 7");
    let skills = c.request("skills/list", json!({})).await;
    assert_eq!(
        skills.result()["skills"][0]["uri"],
        "skill://notes/SKILL.md"
    );
    // The local `presa` is `std`, untouched by the expansions.
    assert_eq!(presa::mem::size_of::<u8>(), 1);
}
