/// `#[arg]` and `#[header]` are not for resource parameters.
#[presa::resource(uri = "notes://{id}")]
async fn note(#[arg(description = "The id")] #[header("Id")] id: String) -> String {
    id
}

fn main() {}
