/// Has a space in its name.
#[presa::tool(name = "bad name")]
async fn bad_name() -> String {
    String::new()
}

fn main() {}
