use presa::{Completion, CompletionRequest, Error};

async fn ids(_req: CompletionRequest) -> Result<Completion, Error> {
    Ok(Completion::new(["1"]))
}

/// Completion on a resource whose URI has no variable.
#[presa::resource(uri = "notes://all", complete(id = ids))]
async fn all() -> String {
    String::new()
}

fn main() {}
