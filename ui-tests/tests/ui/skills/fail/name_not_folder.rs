/// A `name` that differs from its folder's name.
fn main() {
    let _ = presa::skills!("skill-sets/name-not-folder");
}
