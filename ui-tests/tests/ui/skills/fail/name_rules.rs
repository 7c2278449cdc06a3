/// A `name` with an uppercase letter.
fn main() {
    let _ = presa::skills!("skill-sets/name-rules");
}
