/// `meta` that is not JSON.
#[presa::tool(meta = "{not json")]
async fn not_json() -> String {
    String::new()
}

/// `meta` that is JSON but not an object.
#[presa::tool(meta = "[1, 2]")]
async fn not_object() -> String {
    String::new()
}

fn main() {}
