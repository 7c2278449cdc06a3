/// The folder built by another macro, which runs after this one reads its argument.
fn main() {
    let _ = presa::skills!(concat!(env!("CARGO_MANIFEST_DIR"), "/skill-sets/valid"));
}
