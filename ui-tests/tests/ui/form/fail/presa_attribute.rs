/// An unknown key in `#[presa(…)]`.
#[derive(serde::Deserialize, schemars::JsonSchema, presa::ElicitForm)]
#[presa(krate = "presa")]
struct Misspelt {
    name: String,
}

/// `crate = "…"` that is not a path.
#[derive(serde::Deserialize, schemars::JsonSchema, presa::ElicitForm)]
#[presa(crate = "1presa")]
struct NotAPath {
    name: String,
}

fn main() {}
