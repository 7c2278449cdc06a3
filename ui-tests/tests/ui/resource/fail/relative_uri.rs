/// A URI without a scheme.
#[presa::resource(uri = "notes/today")]
async fn today() -> String {
    String::new()
}

fn main() {}
