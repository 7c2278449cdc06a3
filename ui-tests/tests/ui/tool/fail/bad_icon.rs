/// An icon over plain http.
#[presa::tool(icons = ["http://example.com/icon.png"])]
async fn bad_icon() -> String {
    String::new()
}

/// An https icon whose URI holds a space.
#[presa::tool(icons = ["https://example.com/my icon.png"])]
async fn spaced_icon() -> String {
    String::new()
}

fn main() {}
