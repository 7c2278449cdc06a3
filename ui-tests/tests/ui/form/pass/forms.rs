#![deny(warnings)]

#[derive(serde::Deserialize, schemars::JsonSchema, presa::ElicitForm)]
#[serde(rename_all = "lowercase")]
enum Color {
    Red,
    Green,
}

/// Every kind of form field.
#[derive(serde::Deserialize, schemars::JsonSchema, presa::ElicitForm)]
struct Everything {
    name: String,
    age: u32,
    ratio: f64,
    subscribe: bool,
    color: Color,
    colors: Vec<Color>,
    nickname: Option<String>,
}

fn needs_form<T: presa::mrtr::ElicitForm>() {}

fn main() {
    needs_form::<Everything>();
}
