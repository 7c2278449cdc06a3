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

/// `meta` whose keys break the `_meta` key syntax (checked again by `build()`).
#[presa::tool(meta = r#"{"com.example/ok": 1, "bad key": 2, "-x": 3}"#)]
async fn bad_keys() -> String {
    String::new()
}

fn main() {}
