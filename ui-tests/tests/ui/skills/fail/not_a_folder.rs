/// A path to a file.
fn main() {
    let _ = presa::skills!("skill-sets/not-a-folder");
}
