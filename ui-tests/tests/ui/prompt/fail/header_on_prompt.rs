/// Headers are for tools.
#[presa::prompt]
async fn review(#[header("Code")] code: String) -> String {
    code
}

fn main() {}
