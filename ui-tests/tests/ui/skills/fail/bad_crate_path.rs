/// A `crate = "…"` that is not a path.
fn main() {
    let _ = presa::skills!("skill-sets/valid", crate = "not a path");
}
