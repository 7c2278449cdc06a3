/// `metadata` with a number for a value.
fn main() {
    let _ = presa::skills!("skill-sets/metadata-not-strings");
}
