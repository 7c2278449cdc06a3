//! The notes server of the book, grown chapter by chapter: tools, a resource template with
//! completion, a fixed resource, a prompt, shared state, a confirmation asked of the user
//! (multi round-trip), progress and cancellation, resource subscriptions, and an export
//! that runs as a task.
//!
//! ```sh
//! cargo run -p presa --example notes            # stdio
//! cargo run -p presa --example notes -- --http  # http://127.0.0.1:3000/mcp
//! ```

use presa::extract::State;
use presa::mrtr::Elicitation;
use presa::{
    Completion, CompletionRequest, Error, Json, LogLevel, PromptMessage, RequestContext,
    ResourceError, ToolError,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

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

/// Every note by id, shared by all handlers through `State<Notes>`, and the last id
/// given out.
#[derive(Default)]
pub struct Notes(RwLock<BTreeMap<u64, Note>>, AtomicU64);

impl Notes {
    /// Stores a new note under a new id. Ids only grow, so the id of a deleted note never
    /// names another one.
    fn insert(&self, title: String, body: String, tags: Vec<String>) -> Result<Note, ToolError> {
        let mut map = self
            .0
            .write()
            .map_err(|_| ToolError::new("the notes are unavailable"))?;
        let id = self.1.fetch_add(1, Ordering::Relaxed) + 1;
        let note = Note {
            id,
            title,
            body,
            tags,
        };
        map.insert(id, note.clone());
        Ok(note)
    }
}
// ANCHOR_END: state

// ANCHOR: tools
/// Adds a note and returns it.
#[presa::tool(annotations(idempotent = false))]
async fn add_note(
    ctx: RequestContext,
    State(notes): State<Notes>,
    #[arg(description = "A short title")] title: String,
    body: String,
    #[arg(description = "Labels to find the note by")] tags: Option<Vec<String>>,
) -> Result<Json<Note>, ToolError> {
    let note = notes.insert(title, body, tags.unwrap_or_default())?;
    changed(&ctx, note.id);
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
// ANCHOR_END: tools

// ANCHOR: delete
/// The confirmation form: flat fields of primitive types.
#[derive(Deserialize, schemars::JsonSchema, presa::ElicitForm)]
struct Confirm {
    /// Delete it?
    confirm: bool,
}

/// Deletes a note, after the user confirms (when the client can ask them).
#[presa::tool(annotations(destructive, idempotent))]
async fn delete_note(
    ctx: RequestContext,
    State(notes): State<Notes>,
    id: u64,
) -> Result<String, ToolError> {
    let title = match notes.0.read() {
        Ok(map) => map.get(&id).map(|n| n.title.clone()),
        Err(_) => return Err(ToolError::new("the notes are unavailable")),
    };
    let Some(title) = title else {
        return Err(ToolError::new(format!("there is no note {id}")));
    };
    if ctx.supports_elicitation() {
        // The first round ends here with `input_required`; the client retries with the
        // answer, and this handler runs again from the top.
        let question = format!("Delete note {id} ({title})?");
        let answer = ctx.elicit::<Confirm>("confirm", &question).get()?;
        if !matches!(answer, Elicitation::Accepted(Confirm { confirm: true })) {
            return Ok(format!("kept note {id}"));
        }
    }
    // The side effect comes after every input: it runs once, on the last round.
    let removed = notes
        .0
        .write()
        .map_err(|_| ToolError::new("the notes are unavailable"))?
        .remove(&id);
    match removed {
        Some(_) => {
            changed(&ctx, id);
            Ok(format!("deleted note {id} ({title})"))
        }
        None => Err(ToolError::new(format!("there is no note {id}"))),
    }
}
// ANCHOR_END: delete

// ANCHOR: import
/// One note to import.
#[derive(Deserialize, schemars::JsonSchema)]
struct NewNote {
    title: String,
    body: String,
    tags: Option<Vec<String>>,
}

/// Imports several notes at once, reporting progress.
#[presa::tool(live_notifications, annotations(idempotent = false))]
async fn import_notes(
    ctx: RequestContext,
    State(store): State<Notes>,
    notes: Vec<NewNote>,
) -> Result<String, ToolError> {
    let total = notes.len() as f64;
    for (done, new) in notes.into_iter().enumerate() {
        let note = store.insert(new.title, new.body, new.tags.unwrap_or_default())?;
        changed(&ctx, note.id);
        // Sent only when the request carries a progressToken.
        let message = format!("imported {}", note.title);
        ctx.progress(done as f64 + 1.0, Some(total), Some(&message));
        // Operational logs go to `tracing`; `ctx.log` (deprecated in MCP) reaches only
        // clients that asked for a `logLevel`.
        tracing::debug!(id = note.id, "imported a note");
        ctx.log(LogLevel::Debug, serde_json::json!({"imported": note.id}));
        // A cancelled request is dropped at an await: between two whole notes here.
        tokio::task::yield_now().await;
    }
    Ok(format!("imported {total} notes"))
}
// ANCHOR_END: import

// ANCHOR: publish
/// Tells subscribers that note `id` and the index changed, and that the list of
/// resources may have.
fn changed(ctx: &RequestContext, id: u64) {
    let server = ctx.server();
    server.notify_resource_updated(&format!("notes://{id}"));
    server.notify_resource_updated("notes://index");
    server.notify_resources_list_changed();
}
// ANCHOR_END: publish

// ANCHOR: export
/// Exports every note as one markdown document. Runs as a task when the client declared
/// the Tasks extension, and in the request otherwise.
#[presa::tool(task = "optional", annotations(read_only))]
async fn export_notes(State(notes): State<Notes>) -> Result<String, ToolError> {
    let all: Vec<Note> = match notes.0.read() {
        Ok(map) => map.values().cloned().collect(),
        Err(_) => return Err(ToolError::new("the notes are unavailable")),
    };
    let mut out = String::new();
    for note in all {
        out.push_str(&format!("# {}\n\n{}\n\n", note.title, note.body));
        // Stands in for slow work (rendering, uploading).
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    Ok(out)
}
// ANCHOR_END: export

// ANCHOR: resources
/// One note, as markdown.
#[presa::resource(uri = "notes://{id}", mime_type = "text/markdown", complete(id = complete_id))]
async fn note(State(notes): State<Notes>, id: u64) -> Result<String, ResourceError> {
    let map = notes.0.read().map_err(|_| Error::internal())?;
    let note = map.get(&id).ok_or(ResourceError::NotFound)?;
    Ok(format!("# {}\n\n{}\n", note.title, note.body))
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

// ANCHOR: completion
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
// ANCHOR_END: completion

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
/// Every item of this file, with its state and the Tasks extension.
fn server() -> Result<presa::Server, presa::BuildError> {
    presa::server!()
        .registered() // every #[tool], #[resource] and #[prompt] linked into the program
        .state(Notes::default())
        .resource_notifications(true) // this server publishes resource events
        .extension(presa::tasks::Tasks::new())
        .build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Logs go to stderr: on stdio, stdout carries protocol messages only.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let server = server()?;
    match std::env::args().nth(1).as_deref() {
        Some("--http") => server.serve_http("127.0.0.1:3000").await?,
        _ => server.serve_stdio().await?,
    }
    Ok(())
}
// ANCHOR_END: main

#[cfg(test)]
mod tests {
    use super::*;
    use presa::testing::TestClient;
    use serde_json::{Value, json};

    // ANCHOR: tests
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
    // ANCHOR_END: tests

    /// A deleted note's id is not given to the next note: a client holding `notes://2`
    /// must not find another note there.
    #[tokio::test]
    async fn ids_are_not_reused() {
        let client = TestClient::new(&server().unwrap()); // no forms: deletes at once
        for title in ["one", "two"] {
            client
                .call_tool("add_note", json!({"title": title, "body": "…"}))
                .await;
        }
        client
            .call_tool("delete_note", json!({"id": 2}))
            .await
            .assert_text("deleted note 2 (two)");
        let added = client
            .call_tool("add_note", json!({"title": "three", "body": "…"}))
            .await;
        assert_eq!(added.result()["structuredContent"]["id"], 3);
        client.read_resource("notes://2").await.assert_error(-32602);
        let index = client.read_resource("notes://index").await;
        assert_eq!(index.result()["contents"][0]["text"], "1 one\n3 three\n");
    }

    // ANCHOR: test_completion
    #[tokio::test]
    async fn note_ids_complete() {
        let client = TestClient::new(&server().unwrap());
        for title in ["one", "two"] {
            client
                .call_tool("add_note", json!({"title": title, "body": "…"}))
                .await;
        }
        let completion = client
            .request(
                "completion/complete",
                json!({"ref": {"type": "ref/resource", "uri": "notes://{id}"},
                       "argument": {"name": "id", "value": "2"}}),
            )
            .await;
        assert_eq!(completion.result()["completion"]["values"], json!(["2"]));
    }
    // ANCHOR_END: test_completion

    // ANCHOR: test_delete
    #[tokio::test]
    async fn delete_asks_first() {
        let server = server().unwrap();
        // A client that can show a form, and a user who says yes.
        let client = TestClient::new(&server)
            .with_capabilities(json!({"elicitation": {"form": {}}}))
            .with_input_handler(|key, request| {
                assert_eq!(key, "confirm");
                assert_eq!(request["params"]["message"], "Delete note 1 (Old)?");
                json!({"action": "accept", "content": {"confirm": true}})
            });
        client
            .call_tool("add_note", json!({"title": "Old", "body": "…"}))
            .await;
        client
            .call_tool("delete_note", json!({"id": 1}))
            .await
            .assert_text("deleted note 1 (Old)");
        client.read_resource("notes://1").await.assert_error(-32602);
    }
    // ANCHOR_END: test_delete

    // ANCHOR: test_progress
    #[tokio::test]
    async fn import_reports_progress() {
        let client = TestClient::new(&server().unwrap()).with_log_level(LogLevel::Debug);
        let notes = json!([{"title": "a", "body": "1"}, {"title": "b", "body": "2"}]);
        let imported = client
            .request(
                "tools/call",
                json!({"name": "import_notes", "arguments": {"notes": notes},
                       "_meta": {"progressToken": "import-1"}}),
            )
            .await;
        imported.assert_text("imported 2 notes");
        let methods: Vec<&str> = imported
            .notifications
            .iter()
            .map(|n| n["method"].as_str().unwrap())
            .collect();
        assert_eq!(
            methods,
            [
                "notifications/progress",
                "notifications/message",
                "notifications/progress",
                "notifications/message"
            ]
        );
        assert_eq!(imported.notifications[2]["params"]["progress"], 2);
        assert_eq!(imported.notifications[2]["params"]["total"], 2);
    }
    // ANCHOR_END: test_progress

    // ANCHOR: test_subscriptions
    #[tokio::test]
    async fn subscribers_hear_about_changes() {
        let server = server().unwrap();
        let client = std::sync::Arc::new(TestClient::new(&server));
        // Open a stream (it lasts until the server ends it) in the background.
        let listener = std::sync::Arc::clone(&client);
        let stream = tokio::spawn(async move {
            let filter = json!({"resourceSubscriptions": ["notes://index"]});
            listener
                .request("subscriptions/listen", json!({"notifications": filter}))
                .await
        });
        while server.open_streams() == 0 {
            tokio::task::yield_now().await;
        }
        client
            .call_tool("add_note", json!({"title": "New", "body": "…"}))
            .await;
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        server.close_streams(); // what a transport does when it shuts down
        let stream = stream.await.unwrap();
        let methods: Vec<&Value> = stream.notifications.iter().map(|n| &n["method"]).collect();
        assert_eq!(
            methods,
            [
                "notifications/subscriptions/acknowledged",
                "notifications/resources/updated"
            ]
        );
        assert_eq!(stream.notifications[1]["params"]["uri"], "notes://index");
    }
    // ANCHOR_END: test_subscriptions

    // ANCHOR: test_export
    #[tokio::test]
    async fn export_runs_as_a_task() {
        let server = server().unwrap();
        let client = TestClient::new(&server)
            .with_capabilities(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}));
        client
            .call_tool("add_note", json!({"title": "Kept", "body": "safe"}))
            .await;
        let created = client.call_tool("export_notes", json!({})).await;
        assert_eq!(created.result()["resultType"], "task");
        let id = created.result()["taskId"].clone();
        loop {
            let task = client.request("tasks/get", json!({"taskId": id})).await;
            let task = task.result();
            if task["status"] == "completed" {
                let text = &task["result"]["content"][0]["text"];
                assert_eq!(text, "# Kept\n\nsafe\n\n");
                break;
            }
            assert_eq!(task["status"], "working");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
    // ANCHOR_END: test_export
}
