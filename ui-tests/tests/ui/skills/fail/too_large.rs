/// A skill of 16 MiB and one byte (written by tests/ui.rs, as a sparse file).
fn main() {
    let _ = presa::skills!("skill-sets/too-large");
}
