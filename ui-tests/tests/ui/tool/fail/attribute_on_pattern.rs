use presa::extract::State;

/// `#[arg]` and `#[header]` name an argument after its parameter: a pattern has no name.
#[presa::tool]
async fn pattern(
    #[arg(description = "The count")] State(count): State<u32>,
    #[header("Region")] State(region): State<String>,
) -> String {
    format!("{count} {region}")
}

fn main() {}
