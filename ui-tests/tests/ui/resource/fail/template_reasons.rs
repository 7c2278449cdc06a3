/// A `}` without its `{`.
#[presa::resource(uri = "notes://a}b")]
async fn unopened() -> String {
    String::new()
}

/// A `{` without its `}`.
#[presa::resource(uri = "notes://{id")]
async fn unclosed(id: String) -> String {
    id
}

/// One variable twice.
#[presa::resource(uri = "notes://{id}/{id}")]
async fn twice(id: String) -> String {
    id
}

/// A `complete(...)` entry without its provider.
#[presa::resource(uri = "notes://{id}", complete(id))]
async fn bare_complete(id: String) -> String {
    id
}

fn main() {}
