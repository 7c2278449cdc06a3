/// A fixed URI with a character past ASCII (it must be percent-encoded).
#[presa::resource(uri = "notes://café")]
async fn unescaped() -> String {
    String::new()
}

/// A fixed URI with a space.
#[presa::resource(uri = "notes://a b")]
async fn spaced() -> String {
    String::new()
}

/// A template whose literal holds a `|`.
#[presa::resource(uri = "notes://a|b/{id}")]
async fn piped(id: String) -> String {
    id
}

/// A template whose literal holds a no-break space (U+00A0), as build() judges it.
#[presa::resource(uri = "notes://a\u{a0}b/{id}")]
async fn no_break(id: String) -> String {
    id
}

fn main() {}
