/// A note.
#[presa::resource(uri = "notes://{id}")]
async fn note(id: String, extra: u64) -> String {
    format!("{id} {extra}")
}

fn main() {}
