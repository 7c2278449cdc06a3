/// A folder that does not exist.
fn main() {
    let _ = presa::skills!("skill-sets/no-such-folder");
}
