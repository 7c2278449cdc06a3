const ICON: &str = "https://example.com/icon.png";

/// An icon given as a constant: the macro reads literals only.
#[presa::tool(icons = [ICON])]
async fn icon_constant() -> String {
    String::new()
}

fn main() {}
