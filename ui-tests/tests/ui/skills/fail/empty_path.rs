/// An empty path.
fn main() {
    let _ = presa::skills!("");
}
