#![deny(warnings)]

use presa::extract::State;
use presa::{Completion, CompletionRequest, Error, ReadResourceResult, RequestContext, ResourceContents, ResourceError};

/// A fixed text resource.
#[presa::resource(uri = "docs://readme", mime_type = "text/markdown", title = "Readme", size = 7)]
async fn readme() -> &'static str {
    "# hello"
}

/// Bytes.
#[presa::resource(uri = "files://logo", mime_type = "image/png")]
fn logo() -> Vec<u8> {
    vec![1, 2, 3]
}

async fn complete_id(_req: CompletionRequest) -> Result<Completion, Error> {
    Ok(Completion::new(["1"]))
}

/// A template with typed variables, completion, and injected parameters.
#[presa::resource(uri = "notes://{folder}/{id}", complete(id = complete_id))]
async fn note(folder: String, id: u64, ctx: RequestContext, State(_db): State<Db>) -> Result<String, ResourceError> {
    if id == 0 {
        return Err(ResourceError::NotFound);
    }
    Ok(format!("{folder}/{id} via {}", ctx.method()))
}

struct Db;

/// A variable named by a keyword: its parameter is a raw identifier, and so is its
/// completion key.
#[presa::resource(uri = "kinds://{type}", complete(r#type = complete_id))]
async fn kind(r#type: String) -> String {
    r#type
}

/// Full contents.
#[presa::resource(uri = "multi://all")]
async fn all() -> ReadResourceResult {
    ReadResourceResult::new([ResourceContents::text("multi://all", "a")])
}

fn main() {
    presa::server!()
        .add::<readme>()
        .add::<logo>()
        .add::<note>()
        .add::<all>()
        .add::<kind>()
        .state(Db)
        .build()
        .expect("the server builds");
}
