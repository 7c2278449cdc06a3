/// A note.
#[presa::resource(uri = "notes://{id}")]
async fn note() -> String {
    String::new()
}

fn main() {}
