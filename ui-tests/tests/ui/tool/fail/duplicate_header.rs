/// Two headers differing only in case.
#[presa::tool]
async fn duplicate_header(#[header("Region")] a: String, #[header("region")] b: String) -> String {
    a + &b
}

fn main() {}
