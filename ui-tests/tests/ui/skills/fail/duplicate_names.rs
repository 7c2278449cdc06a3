/// Two skills named alike, in two folders.
fn main() {
    let _ = presa::skills!("skill-sets/duplicate-names");
}
