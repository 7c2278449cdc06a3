/// Takes any displayable value.
#[presa::tool]
async fn show(value: impl std::fmt::Display + Send) -> String {
    value.to_string()
}

fn main() {}
