// On an attribute error the function is still emitted, unchanged (its `#[arg]` removed):
// the code that calls it compiles, and the only error is the attribute's.

/// Doubles a number.
#[presa::tool(name = "double it")]
async fn double(#[arg(description = "The number")] x: i64) -> i64 {
    x * 2
}

/// Its item type is not emitted on error, but the function is, with the same signature.
fn call_it() -> impl std::future::Future<Output = i64> {
    double(21)
}

fn main() {
    let _ = call_it();
}
