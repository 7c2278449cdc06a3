use presa::{Completion, CompletionRequest, Error};

async fn provider(_req: CompletionRequest) -> Result<Completion, Error> {
    Ok(Completion::new(["x"]))
}

/// A note.
#[presa::resource(uri = "notes://{id}", complete(name = provider))]
async fn note(id: String) -> String {
    id
}

fn main() {}
