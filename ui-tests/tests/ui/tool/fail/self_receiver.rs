struct Service;

impl Service {
    /// A method.
    #[presa::tool]
    async fn method(&self) -> String {
        String::new()
    }
}

fn main() {}
