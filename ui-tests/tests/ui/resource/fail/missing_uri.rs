/// No URI.
#[presa::resource(mime_type = "text/plain")]
async fn no_uri() -> String {
    String::new()
}

fn main() {}
