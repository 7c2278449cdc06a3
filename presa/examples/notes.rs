//! The notes server of the book: tools, a resource template with completion, a fixed
//! resource and a prompt, all declared with presa's attributes, sharing one state.
//!
//! ```sh
//! cargo run -p presa --example notes            # stdio
//! cargo run -p presa --example notes -- --http  # http://127.0.0.1:3000/mcp
//! ```

use presa::extract::State;
use presa::{Completion, CompletionRequest, Error, Json, PromptMessage, ResourceError, ToolError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::RwLock;

// ANCHOR: state
/// One note.
#[derive(Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Note {
    /// Its number, from 1.
    pub id: u64,
    /// A short title.
    pub title: String,
    /// The text.
    pub body: String,
    /// Labels.
    pub tags: Vec<String>,
}

/// Every note, shared by all handlers through `State<Notes>`.
#[derive(Default)]
pub struct Notes(RwLock<BTreeMap<u64, Note>>);
// ANCHOR_END: state

// ANCHOR: tools
/// Adds a note and returns it.
#[presa::tool(annotations(idempotent = false))]
async fn add_note(
    State(notes): State<Notes>,
    #[arg(description = "A short title")] title: String,
    body: String,
    #[arg(description = "Labels to find the note by")] tags: Option<Vec<String>>,
) -> Result<Json<Note>, ToolError> {
    let mut map = notes
        .0
        .write()
        .map_err(|_| ToolError::new("the notes are unavailable"))?;
    let id = map.keys().next_back().map_or(1, |last| last + 1);
    let note = Note {
        id,
        title,
        body,
        tags: tags.unwrap_or_default(),
    };
    map.insert(id, note.clone());
    Ok(Json(note))
}

/// Finds notes whose title or body contains the query.
#[presa::tool(annotations(read_only))]
async fn search_notes(
    State(notes): State<Notes>,
    query: String,
    #[arg(default = 10)] limit: u32,
) -> Result<Json<Vec<Note>>, ToolError> {
    let map = notes
        .0
        .read()
        .map_err(|_| ToolError::new("the notes are unavailable"))?;
    let query = query.to_lowercase();
    let found = map
        .values()
        .filter(|n| {
            n.title.to_lowercase().contains(&query) || n.body.to_lowercase().contains(&query)
        })
        .take(limit as usize)
        .cloned()
        .collect();
    Ok(Json(found))
}

/// Deletes a note.
#[presa::tool(annotations(destructive, idempotent))]
async fn delete_note(State(notes): State<Notes>, id: u64) -> Result<String, ToolError> {
    let mut map = notes
        .0
        .write()
        .map_err(|_| ToolError::new("the notes are unavailable"))?;
    match map.remove(&id) {
        Some(n) => Ok(format!("deleted note {id} ({})", n.title)),
        None => Err(ToolError::new(format!("there is no note {id}"))),
    }
}
// ANCHOR_END: tools

// ANCHOR: resources
/// One note, as markdown.
#[presa::resource(uri = "notes://{id}", mime_type = "text/markdown", complete(id = complete_id))]
async fn note(State(notes): State<Notes>, id: u64) -> Result<String, ResourceError> {
    let map = notes.0.read().map_err(|_| Error::internal())?;
    let note = map.get(&id).ok_or(ResourceError::NotFound)?;
    Ok(format!("# {}\n\n{}\n", note.title, note.body))
}

/// Suggests note ids starting with what was typed.
async fn complete_id(req: CompletionRequest) -> Result<Completion, Error> {
    let notes = req.ctx.state::<Notes>().ok_or_else(Error::internal)?;
    let map = notes.0.read().map_err(|_| Error::internal())?;
    let ids = map
        .keys()
        .map(u64::to_string)
        .filter(|id| id.starts_with(&req.value));
    Ok(Completion::new(ids.collect::<Vec<_>>()))
}

/// Every note's id and title.
#[presa::resource(uri = "notes://index", mime_type = "text/plain")]
async fn index(State(notes): State<Notes>) -> Result<String, Error> {
    let map = notes.0.read().map_err(|_| Error::internal())?;
    Ok(map
        .values()
        .map(|n| format!("{} {}\n", n.id, n.title))
        .collect())
}
// ANCHOR_END: resources

// ANCHOR: prompts
/// Asks the model to summarize one note.
#[presa::prompt]
async fn summarize(
    State(notes): State<Notes>,
    #[arg(description = "The note's id")] id: u64,
    #[arg(description = "For example: one line, bullet points")] style: Option<String>,
) -> Result<Vec<PromptMessage>, Error> {
    let map = notes.0.read().map_err(|_| Error::internal())?;
    let note = map
        .get(&id)
        .ok_or_else(|| Error::invalid_params(format!("there is no note {id}")))?;
    let style = style.unwrap_or_else(|| "one paragraph".into());
    Ok(vec![PromptMessage::user(format!(
        "Summarize this note as {style}:\n\n# {}\n\n{}",
        note.title, note.body
    ))])
}
// ANCHOR_END: prompts

// ANCHOR: main
/// Every item of this file, with its state.
fn server() -> Result<presa::Server, presa::BuildError> {
    presa::server!()
        .registered() // every #[tool], #[resource] and #[prompt] linked into the program
        .state(Notes::default())
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let server = server()?;
    if std::env::args().any(|a| a == "--http") {
        server.serve_http("127.0.0.1:3000").await?;
    } else {
        server.serve_stdio().await?;
    }
    Ok(())
}
// ANCHOR_END: main

// ANCHOR: tests
#[cfg(test)]
mod tests {
    use super::*;
    use presa::testing::TestClient;
    use serde_json::json;

    #[tokio::test]
    async fn a_note_round_trip() {
        let client = TestClient::new(&server().unwrap());
        let added = client
            .call_tool(
                "add_note",
                json!({"title": "Groceries", "body": "eggs, milk"}),
            )
            .await;
        assert_eq!(added.result()["structuredContent"]["id"], 1);
        let found = client
            .call_tool("search_notes", json!({"query": "milk"}))
            .await;
        assert_eq!(found.result()["structuredContent"][0]["title"], "Groceries");
        let read = client.read_resource("notes://1").await;
        assert_eq!(
            read.result()["contents"][0]["text"],
            "# Groceries\n\neggs, milk\n"
        );
        client.read_resource("notes://2").await.assert_error(-32602);
        let prompt = client.get_prompt("summarize", json!({"id": "1"})).await;
        assert!(
            prompt.result()["messages"][0]["content"]["text"]
                .as_str()
                .unwrap()
                .contains("eggs, milk")
        );
        client
            .call_tool("delete_note", json!({"id": 7}))
            .await
            .assert_tool_error("there is no note 7");
    }
}
// ANCHOR_END: tests
