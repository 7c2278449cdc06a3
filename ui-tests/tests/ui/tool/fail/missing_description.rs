#[presa::tool]
async fn undocumented() -> String {
    String::new()
}

fn main() {}
