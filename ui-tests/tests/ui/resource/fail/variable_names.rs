/// RFC 6570's variable names, as the runtime reads them: a `.` only between two name
/// characters.
#[presa::resource(uri = "notes://{a..b}")]
async fn two_dots(a: String) -> String {
    a
}

/// A valid name no parameter can have: `.` and `%XX` are not in Rust names.
#[presa::resource(uri = "notes://{note.id}/{caf%C3%A9}")]
async fn dotted() -> String {
    String::new()
}

/// A keyword as a variable: its parameter is a raw identifier.
#[presa::resource(uri = "notes://{type}")]
async fn keyword() -> String {
    String::new()
}

fn main() {}
