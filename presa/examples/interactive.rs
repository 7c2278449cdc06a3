//! An interactive tool (multi round-trip requests): booking a table asks the user for the
//! party, then for confirmation of the slot it found, and only then books. Each question
//! is an `input_required` answer; the client retries with the answers, and the same
//! handler runs again from the top.
//!
//! ```sh
//! cargo run -p presa --example interactive            # stdio
//! cargo run -p presa --example interactive -- --http  # http://127.0.0.1:3000/mcp
//! ```

use presa::RequestContext;
use presa::ToolError;
use presa::extract::State;
use presa::mrtr::Elicitation;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// Every booking made, shared by the handlers (a clone shares the list).
#[derive(Clone, Default)]
pub struct Bookings(Arc<Mutex<Vec<String>>>);

// ANCHOR: forms
/// The form asked first: flat fields of primitive types.
#[derive(Deserialize, schemars::JsonSchema, presa::ElicitForm)]
struct Party {
    /// How many guests.
    guests: u32,
    /// The name for the booking.
    name: String,
}

/// The confirmation asked second.
#[derive(Deserialize, schemars::JsonSchema, presa::ElicitForm)]
struct Confirm {
    /// Book it?
    confirm: bool,
}

/// What the handler carries from one round to the next (signed, not encrypted).
#[derive(Serialize, Deserialize)]
struct Offer {
    slot: String,
}
// ANCHOR_END: forms

// ANCHOR: tool
/// Books a table: asks for the party and a confirmation, then books.
#[presa::tool(annotations(destructive = false, idempotent = false))]
async fn book_table(
    ctx: RequestContext,
    State(bookings): State<Bookings>,
    #[arg(description = "For example: tonight, Friday")] day: String,
) -> Result<String, ToolError> {
    if !ctx.supports_elicitation() {
        // Ask only for what the client declared: this client cannot show a form.
        return Err(ToolError::new(
            "this client cannot answer questions; ask the user and book by phone",
        ));
    }
    // Round 1 asks this; on every later round the answer is already there.
    let party = match ctx.elicit::<Party>("party", "Who is coming?").get()? {
        Elicitation::Accepted(party) => party,
        _ => return Ok("No table booked.".into()),
    };
    // Read-only work may run on every round. The offer made in round 2 is carried into
    // round 3, so the user confirms exactly what they were shown.
    let offer = ctx.carried::<Offer>().unwrap_or_else(|| Offer {
        slot: find_slot(&day, party.guests),
    });
    ctx.carry(&offer);
    ctx.single_use_state(); // the confirming retry cannot be replayed
    let question = format!("Book {} for {} ({})?", offer.slot, party.name, party.guests);
    let confirmed = matches!(
        ctx.elicit::<Confirm>("confirm", &question).get()?,
        Elicitation::Accepted(Confirm { confirm: true })
    );
    if !confirmed {
        return Ok("No table booked.".into());
    }
    // The side effect, once every input is in: it runs on the last round only.
    let booking = format!("{} for {}, {} guests", offer.slot, party.name, party.guests);
    let mut all = bookings
        .0
        .lock()
        .map_err(|_| ToolError::new("bookings unavailable"))?;
    all.push(booking.clone());
    Ok(format!("Booked: {booking}"))
}

/// Finds a free slot (a stand-in for a real availability check).
fn find_slot(day: &str, guests: u32) -> String {
    let time = if guests > 6 { "21:00" } else { "19:30" };
    format!("{day} at {time}")
}
// ANCHOR_END: tool

fn server(bookings: Bookings) -> Result<presa::Server, presa::BuildError> {
    presa::server!().registered().state(bookings).build()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let server = server(Bookings::default())?;
    match std::env::args().nth(1).as_deref() {
        Some("--http") => server.serve_http("127.0.0.1:3000").await?,
        _ => server.serve_stdio().await?,
    }
    Ok(())
}

// ANCHOR: tests
#[cfg(test)]
mod tests {
    use super::*;
    use presa::testing::TestClient;
    use serde_json::{Value, json};

    /// A client that declares form elicitation and answers like a user would.
    fn user(server: &presa::Server) -> TestClient {
        TestClient::new(server)
            .with_capabilities(json!({"elicitation": {"form": {}}}))
            .with_input_handler(|key, _request| match key {
                "party" => json!({"action": "accept", "content": {"guests": 4, "name": "Ada"}}),
                "confirm" => json!({"action": "accept", "content": {"confirm": true}}),
                other => panic!("unexpected question {other}"),
            })
    }

    #[tokio::test]
    async fn asks_then_books_once() {
        let bookings = Bookings::default();
        let server = server(bookings.clone()).unwrap();
        user(&server)
            .call_tool("book_table", json!({"day": "Friday"}))
            .await
            .assert_text("Booked: Friday at 19:30 for Ada, 4 guests");
        // The handler ran three times (two questions, then the booking); it booked once.
        assert_eq!(
            *bookings.0.lock().unwrap(),
            ["Friday at 19:30 for Ada, 4 guests"]
        );
    }

    #[tokio::test]
    async fn round_by_round() {
        let bookings = Bookings::default();
        let server = server(bookings.clone()).unwrap();
        let client = TestClient::new(&server).with_capabilities(json!({"elicitation": {}}));
        // Round 1: the party is asked for.
        let first = client
            .call_tool("book_table", json!({"day": "Friday"}))
            .await;
        let first = first.result();
        assert_eq!(first["resultType"], "input_required");
        assert_eq!(
            first["inputRequests"]["party"]["method"],
            "elicitation/create"
        );
        // Round 2: the answer and the state come back; the confirmation is asked for.
        let second = client
            .request(
                "tools/call",
                json!({"name": "book_table", "arguments": {"day": "Friday"},
                       "requestState": first["requestState"],
                       "inputResponses": {"party": {"action": "accept",
                           "content": {"guests": 8, "name": "Bo"}}}}),
            )
            .await;
        let second = second.result().clone();
        let question = &second["inputRequests"]["confirm"]["params"]["message"];
        assert_eq!(question, "Book Friday at 21:00 for Bo (8)?");
        // Round 3: confirmed. Answers of earlier rounds travel in the signed state.
        let last = json!({"name": "book_table", "arguments": {"day": "Friday"},
                          "requestState": second["requestState"],
                          "inputResponses": {"confirm": {"action": "accept",
                              "content": {"confirm": true}}}});
        client
            .request("tools/call", last.clone())
            .await
            .assert_text("Booked: Friday at 21:00 for Bo, 8 guests");
        // The confirming state was single-use: replaying the last round is refused.
        client
            .request("tools/call", last)
            .await
            .assert_error(-32602);
        assert_eq!(bookings.0.lock().unwrap().len(), 1);
    }

    // ANCHOR: legacy
    /// The same handler, served to a client of 2025-11-25 over stdio: its questions become
    /// `elicitation/create` requests to the client, and the handler runs again with each
    /// answer, as it does for a 2026-07-28 client's retry.
    #[tokio::test]
    async fn a_legacy_client_is_asked_with_real_requests() {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        let bookings = Bookings::default();
        let server = server(bookings.clone()).unwrap();
        let (client, serving) = tokio::io::duplex(1 << 16);
        let (from_client, to_client) = tokio::io::split(serving);
        let config = presa::StdioConfig::default();
        tokio::spawn(async move { server.serve_io(from_client, to_client, config).await });
        let (from_server, mut to_server) = tokio::io::split(client);
        let mut lines = BufReader::new(from_server).lines();
        let mut send = async |message: Value| {
            let line = format!("{message}\n");
            to_server.write_all(line.as_bytes()).await.unwrap();
        };
        send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "a-legacy-host", "version": "1"}}}),
        )
        .await;
        send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "book_table", "arguments": {"day": "Friday"}}}))
        .await;
        loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("the server answers");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["method"] == "elicitation/create" {
                // A question: the user answers it.
                let content = if message["params"]["message"] == "Who is coming?" {
                    json!({"guests": 4, "name": "Ada"})
                } else {
                    json!({"confirm": true})
                };
                send(json!({"jsonrpc": "2.0", "id": message["id"],
                            "result": {"action": "accept", "content": content}}))
                .await;
            } else if message["id"] == 2 {
                let text = &message["result"]["content"][0]["text"];
                assert_eq!(text, "Booked: Friday at 19:30 for Ada, 4 guests");
                break;
            }
        }
        assert_eq!(bookings.0.lock().unwrap().len(), 1);
    }
    // ANCHOR_END: legacy

    #[tokio::test]
    async fn a_client_without_elicitation_gets_a_tool_error() {
        let server = server(Bookings::default()).unwrap();
        TestClient::new(&server)
            .call_tool("book_table", json!({"day": "Friday"}))
            .await
            .assert_tool_error("cannot answer questions");
    }

    #[tokio::test]
    async fn state_bound_to_other_arguments_is_refused() {
        let server = server(Bookings::default()).unwrap();
        let client = TestClient::new(&server).with_capabilities(json!({"elicitation": {}}));
        let first = client
            .call_tool("book_table", json!({"day": "Friday"}))
            .await;
        let state: Value = first.result()["requestState"].clone();
        client
            .request(
                "tools/call",
                json!({"name": "book_table", "arguments": {"day": "Saturday"},
                       "requestState": state}),
            )
            .await
            .assert_error(-32602);
    }
}
// ANCHOR_END: tests
