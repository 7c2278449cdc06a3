/// `crate = "…"` that is not a path.
#[presa::tool(crate = "not a path")]
async fn bad_path() -> String {
    String::new()
}

fn main() {}
