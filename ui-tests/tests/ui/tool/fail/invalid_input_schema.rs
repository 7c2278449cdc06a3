/// A raw schema that is not an object schema.
#[presa::tool(input_schema = r#"{"type": "string"}"#)]
async fn invalid_input_schema() -> String {
    String::new()
}

fn main() {}
