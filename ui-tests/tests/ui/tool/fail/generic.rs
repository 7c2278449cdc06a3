/// Generic.
#[presa::tool]
async fn generic<T: ToString>(value: T) -> String {
    value.to_string()
}

fn main() {}
