/// A skill of 513 files (written by tests/ui.rs).
fn main() {
    let _ = presa::skills!("skill-sets/too-many-files");
}
