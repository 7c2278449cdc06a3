/// An unknown `#[resource]` key.
#[presa::resource(uri = "notes://today", mime = "text/plain")]
async fn today() -> String {
    String::new()
}

fn main() {}
