/// A header on a float and on a list.
#[presa::tool]
async fn header_not_primitive(#[header("Ratio")] ratio: f64, #[header("Tags")] tags: Vec<String>) -> String {
    format!("{ratio} {tags:?}")
}

fn main() {}
