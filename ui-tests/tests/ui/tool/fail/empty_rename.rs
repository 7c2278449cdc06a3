/// Echoes.
#[presa::tool]
async fn echo(#[arg(rename = "")] text: String) -> String {
    text
}

fn main() {}
