//! The items the official runner's legacy lanes (2025-11-25, 2025-06-18) call and the
//! 2026-07-28 lane does not: a logging tool at one level, sampling and elicitation tools,
//! the elicitation schemas of SEP-1034 (defaults) and SEP-1330 (enums), and a resource
//! to subscribe to. Each is an ordinary handler: asked through a 2026-07-28 request it
//! answers `input_required`, asked in a legacy session its asks become real requests to
//! the client.

use presa::mrtr::{Elicitation, InputRequired, SamplingRequest};
use presa::{LogLevel, RequestContext, ServerBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

pub(crate) fn register(builder: ServerBuilder) -> ServerBuilder {
    builder
        .add::<test_tool_with_logging>()
        .add::<test_sampling>()
        .add::<test_elicitation>()
        .add::<test_elicitation_sep1034_defaults>()
        .add::<test_elicitation_sep1330_enums>()
        .add::<watched_resource>()
        .add::<test_trigger_resource_update>()
        .add::<test_reconnection>()
}

/// Ends its response's connection early, for the client to poll (2025-11-25 over
/// Streamable HTTP), and answers about 100 ms later: the answer arrives on the resumed
/// stream.
#[presa::tool]
async fn test_reconnection(ctx: RequestContext) -> &'static str {
    ctx.close_stream_for_polling();
    tokio::time::sleep(Duration::from_millis(100)).await;
    "Reconnection test completed"
}

/// Logs three messages at `info`, about 50 ms apart, while it works.
#[presa::tool]
async fn test_tool_with_logging(ctx: RequestContext) -> &'static str {
    for (i, text) in [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    .into_iter()
    .enumerate()
    {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.log(LogLevel::Info, text);
    }
    "Logging test completed"
}

/// Asks the client's model to answer `prompt` (sampling).
#[presa::tool]
#[allow(deprecated)]
async fn test_sampling(ctx: RequestContext, prompt: String) -> Result<String, InputRequired> {
    let answer = ctx
        .sample("llm", SamplingRequest::new(100).user(prompt))
        .get()?;
    Ok(format!("LLM response: {}", answer.text()))
}

/// A user's name and e-mail address.
#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
struct UserInfo {
    /// The user's name.
    username: String,
    /// The user's e-mail address.
    email: String,
}

/// Asks the user for their name and e-mail address, with `message`.
#[presa::tool]
async fn test_elicitation(ctx: RequestContext, message: String) -> Result<String, InputRequired> {
    Ok(match ctx.elicit::<UserInfo>("user_info", &message).get()? {
        Elicitation::Accepted(u) => {
            format!("User provided: username={}, email={}", u.username, u.email)
        }
        Elicitation::Declined => "The user declined.".into(),
        Elicitation::Cancelled => "The user cancelled.".into(),
    })
}

/// A status, for SEP-1034's enum with a default (serializable, so the default is written
/// into the schema).
#[derive(Deserialize, Serialize, JsonSchema, presa::ElicitForm)]
#[serde(rename_all = "lowercase")]
enum Status {
    Active,
    Inactive,
    Pending,
}

/// A form whose every field has a default (SEP-1034).
#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
struct Defaults {
    /// A name.
    #[serde(default = "default_name")]
    name: String,
    /// An age.
    #[serde(default = "default_age")]
    age: i64,
    /// A score.
    #[serde(default = "default_score")]
    score: f64,
    /// A status.
    #[serde(default = "default_status")]
    status: Status,
    /// Whether the user is verified.
    #[serde(default = "default_verified")]
    verified: bool,
}

fn default_name() -> String {
    "John Doe".into()
}
fn default_age() -> i64 {
    30
}
fn default_score() -> f64 {
    95.5
}
fn default_status() -> Status {
    Status::Active
}
fn default_verified() -> bool {
    true
}

/// Asks for a form whose fields all have defaults (SEP-1034).
#[presa::tool]
async fn test_elicitation_sep1034_defaults(ctx: RequestContext) -> Result<String, InputRequired> {
    let answer = ctx
        .elicit::<Defaults>("defaults", "Please review and update the form fields")
        .get()?;
    Ok(match answer {
        Elicitation::Accepted(d) => format!(
            "Elicitation completed: name={}, age={}, score={}, status={}, verified={}",
            d.name,
            d.age,
            d.score,
            match d.status {
                Status::Active => "active",
                Status::Inactive => "inactive",
                Status::Pending => "pending",
            },
            d.verified
        ),
        Elicitation::Declined | Elicitation::Cancelled => "The user did not fill the form.".into(),
    })
}

/// An enum without titles: a plain `enum` of strings.
#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
#[serde(rename_all = "lowercase")]
enum Untitled {
    Option1,
    Option2,
    Option3,
}

/// An enum with a title per value: a `oneOf` of `const` and `title`.
#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
#[serde(rename_all = "lowercase")]
enum Titled {
    #[schemars(title = "First Option")]
    Value1,
    #[schemars(title = "Second Option")]
    Value2,
    #[schemars(title = "Third Option")]
    Value3,
}

/// An enum in the older shape: `enum` with a parallel `enumNames`.
#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
#[serde(rename_all = "lowercase")]
#[schemars(extend("enumNames" = ["Option One", "Option Two", "Option Three"]))]
enum Legacy {
    Opt1,
    Opt2,
    Opt3,
}

/// The enum shapes of SEP-1330.
#[derive(Deserialize, JsonSchema, presa::ElicitForm)]
#[serde(rename_all = "camelCase")]
struct Enums {
    /// Pick one.
    untitled_single: Untitled,
    /// Pick one.
    titled_single: Titled,
    /// Pick one.
    legacy_enum: Legacy,
    /// Pick any.
    untitled_multi: Vec<Untitled>,
    /// Pick any.
    titled_multi: Vec<Titled>,
}

/// Asks for a form with every enum shape of SEP-1330.
#[presa::tool]
async fn test_elicitation_sep1330_enums(ctx: RequestContext) -> Result<String, InputRequired> {
    Ok(
        match ctx
            .elicit::<Enums>("enums", "Please choose options")
            .get()?
        {
            Elicitation::Accepted(e) => format!(
                "Elicitation completed: {}, {}, {}, and {} multi-select choices",
                match e.untitled_single {
                    Untitled::Option1 => "option1",
                    Untitled::Option2 => "option2",
                    Untitled::Option3 => "option3",
                },
                match e.titled_single {
                    Titled::Value1 => "value1",
                    Titled::Value2 => "value2",
                    Titled::Value3 => "value3",
                },
                match e.legacy_enum {
                    Legacy::Opt1 => "opt1",
                    Legacy::Opt2 => "opt2",
                    Legacy::Opt3 => "opt3",
                },
                e.untitled_multi.len() + e.titled_multi.len()
            ),
            Elicitation::Declined | Elicitation::Cancelled => "The user did not choose.".into(),
        },
    )
}

/// Tells subscribers that `test://watched-resource` changed.
#[presa::tool]
async fn test_trigger_resource_update(ctx: RequestContext) -> &'static str {
    ctx.server()
        .notify_resource_updated("test://watched-resource");
    "Resource update triggered"
}

/// A resource clients subscribe to.
#[presa::resource(uri = "test://watched-resource", mime_type = "text/plain")]
async fn watched_resource() -> &'static str {
    "This resource is watched for changes."
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// The forms have the shapes the runner checks.
    #[tokio::test]
    async fn the_forms_have_the_runners_shapes() {
        let server = crate::build().expect("the fixture builds");
        let client = presa::testing::TestClient::new(&server)
            .with_capabilities(json!({"elicitation": {"form": {}}}));
        let first = client
            .call_tool("test_elicitation_sep1330_enums", json!({}))
            .await;
        let schema = &first.result()["inputRequests"]["enums"]["params"]["requestedSchema"];
        let p = &schema["properties"];
        assert_eq!(
            p["untitledSingle"]["enum"],
            json!(["option1", "option2", "option3"]),
            "{schema}"
        );
        assert!(p["untitledSingle"].get("oneOf").is_none(), "{schema}");
        let titled = p["titledSingle"]["oneOf"].as_array().expect("oneOf");
        assert!(
            titled
                .iter()
                .all(|o| o["const"].is_string() && o["title"].is_string()),
            "{schema}"
        );
        assert!(p["titledSingle"].get("enum").is_none(), "{schema}");
        assert_eq!(
            p["legacyEnum"]["enumNames"].as_array().map(Vec::len),
            Some(3),
            "{schema}"
        );
        assert_eq!(
            p["untitledMulti"]["items"]["enum"],
            json!(["option1", "option2", "option3"]),
            "{schema}"
        );
        assert!(p["titledMulti"]["items"]["anyOf"].is_array(), "{schema}");
        let first = client
            .call_tool("test_elicitation_sep1034_defaults", json!({}))
            .await;
        let p =
            &first.result()["inputRequests"]["defaults"]["params"]["requestedSchema"]["properties"];
        assert_eq!(p["name"]["default"], "John Doe", "{p}");
        assert_eq!(p["age"]["type"], "integer", "{p}");
        assert_eq!(p["age"]["default"], 30, "{p}");
        assert_eq!(p["score"]["default"], 95.5, "{p}");
        assert_eq!(p["status"]["default"], "active", "{p}");
        assert_eq!(p["verified"]["default"], true, "{p}");
    }
}
