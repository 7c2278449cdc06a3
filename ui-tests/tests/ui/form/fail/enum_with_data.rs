#[derive(serde::Deserialize, schemars::JsonSchema, presa::ElicitForm)]
enum Choice {
    Yes,
    Other(String),
}

fn main() {}
