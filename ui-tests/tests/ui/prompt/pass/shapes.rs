#![deny(warnings)]

use presa::{Completion, CompletionRequest, Error, GetPromptResult, PromptMessage, RequestContext};

async fn complete_language(_req: CompletionRequest) -> Result<Completion, Error> {
    Ok(Completion::new(["rust"]))
}

/// Reviews code.
#[presa::prompt(title = "Review", complete(language = complete_language))]
async fn review(
    #[arg(description = "The code", title = "Code")] code: String,
    language: Option<String>,
    #[arg(rename = "maxComments")] max_comments: Option<u32>,
    level: u8,
    ctx: RequestContext,
) -> Vec<PromptMessage> {
    vec![PromptMessage::user(format!(
        "{code} {language:?} {max_comments:?} {level} {}",
        ctx.method()
    ))]
}

/// One text.
#[presa::prompt]
fn hello() -> String {
    "hello".into()
}

/// A full result or an error.
#[presa::prompt]
async fn full(topic: String) -> Result<GetPromptResult, Error> {
    Ok(GetPromptResult::new([PromptMessage::assistant(topic)]))
}

fn main() {
    presa::server!()
        .add::<review>()
        .add::<hello>()
        .add::<full>()
        .build()
        .expect("the server builds");
}
