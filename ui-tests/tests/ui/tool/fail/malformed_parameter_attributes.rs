/// `#[arg]` without its list, `#[header]` without its name, a second `#[header]`, and an
/// unknown `#[arg]` key.
#[presa::tool]
async fn malformed(
    #[arg] a: String,
    #[header] b: String,
    #[header("First")]
    #[header("Second")]
    c: String,
    #[arg(descripton = "typo")] d: String,
) -> String {
    format!("{a}{b}{c}{d}")
}

fn main() {}
