use presa::{Completion, CompletionRequest, Error};

async fn provider(_req: CompletionRequest) -> Result<Completion, Error> {
    Ok(Completion::new(["x"]))
}

/// Reviews code.
#[presa::prompt(complete(langauge = provider))]
async fn review(code: String, language: Option<String>) -> String {
    format!("{code} {language:?}")
}

fn main() {}
