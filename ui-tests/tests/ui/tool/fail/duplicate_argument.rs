/// Adds.
#[presa::tool]
async fn add(#[arg(rename = "b")] a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}
