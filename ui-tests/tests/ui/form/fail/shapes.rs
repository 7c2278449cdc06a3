/// A generic form.
#[derive(serde::Deserialize, schemars::JsonSchema, presa::ElicitForm)]
struct Generic<T> {
    value: T,
}

/// A tuple struct: its fields have no names to ask with.
#[derive(serde::Deserialize, schemars::JsonSchema, presa::ElicitForm)]
struct Tuple(String, u32);

/// A union.
#[derive(presa::ElicitForm)]
union Either {
    a: u32,
    b: f32,
}

fn main() {}
