/// An empty name.
#[presa::prompt(name = "")]
async fn nameless() -> String {
    String::new()
}

fn main() {}
