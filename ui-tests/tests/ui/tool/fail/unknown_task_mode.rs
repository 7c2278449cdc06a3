/// A task mode that does not exist.
#[presa::tool(task = "sometimes")]
async fn sometimes() -> String {
    String::new()
}

fn main() {}
