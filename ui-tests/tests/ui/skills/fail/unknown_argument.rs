/// An argument other than `crate = "…"` after the folder.
fn main() {
    let _ = presa::skills!("skill-sets/valid", watch = true);
}
