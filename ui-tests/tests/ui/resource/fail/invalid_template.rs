/// Two variables side by side, and an operator.
#[presa::resource(uri = "notes://{a}{b}")]
async fn adjacent(a: String, b: String) -> String {
    a + &b
}

/// A level 2 operator.
#[presa::resource(uri = "notes://{+path}")]
async fn reserved(path: String) -> String {
    path
}

fn main() {}
