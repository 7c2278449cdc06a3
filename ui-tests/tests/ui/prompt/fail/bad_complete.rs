/// A `complete(...)` entry without its provider.
#[presa::prompt(complete(language))]
async fn review(language: String) -> String {
    language
}

fn main() {}
