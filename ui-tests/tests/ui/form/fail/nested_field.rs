#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Address {
    street: String,
}

/// A form with a nested struct and a map: not flat.
#[derive(serde::Deserialize, schemars::JsonSchema, presa::ElicitForm)]
struct Signup {
    name: String,
    address: Address,
    extra: std::collections::HashMap<String, String>,
}

fn main() {}
