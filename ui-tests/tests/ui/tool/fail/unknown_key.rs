/// Unknown keys.
#[presa::tool(nmae = "x", annotations(readonly))]
async fn unknown_key() -> String {
    String::new()
}

fn main() {}
