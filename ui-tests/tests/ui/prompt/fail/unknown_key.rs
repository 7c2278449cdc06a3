/// Unknown keys of `#[prompt]` and of a prompt's `#[arg]`.
#[presa::prompt(titel = "Review")]
async fn review(#[arg(default = "x")] code: String) -> String {
    code
}

fn main() {}
