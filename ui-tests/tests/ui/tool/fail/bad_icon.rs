/// An icon over plain http.
#[presa::tool(icons = ["http://example.com/icon.png"])]
async fn bad_icon() -> String {
    String::new()
}

fn main() {}
