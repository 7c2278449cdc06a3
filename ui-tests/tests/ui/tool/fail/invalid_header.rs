/// Invalid header names.
#[presa::tool]
async fn invalid_header(#[header("has space")] a: String, #[header("")] b: String) -> String {
    a + &b
}

fn main() {}
