use presa::extract::State;

/// `#[arg]` on a pattern parameter of a prompt.
#[presa::prompt]
async fn pattern(#[arg(description = "The count")] State(count): State<u32>) -> String {
    count.to_string()
}

fn main() {}
