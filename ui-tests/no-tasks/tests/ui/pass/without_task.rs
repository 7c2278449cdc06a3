#![deny(warnings)]
// Without the `tasks` feature, every attribute but `task = …` works as with it.

/// Answers at once.
#[presa::tool(annotations(read_only))]
async fn quick(#[header("Region")] region: String) -> String {
    region
}

fn main() {
    let _ = presa::server!().add::<quick>().build().expect("builds");
}
