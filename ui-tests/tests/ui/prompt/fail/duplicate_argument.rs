/// Reviews code.
#[presa::prompt]
async fn review(#[arg(rename = "code")] text: String, code: String) -> String {
    format!("{text} {code}")
}

fn main() {}
