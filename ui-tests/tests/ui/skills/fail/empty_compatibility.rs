/// An empty `compatibility`.
fn main() {
    let _ = presa::skills!("skill-sets/empty-compatibility");
}
