/// No folder at all.
fn main() {
    let _ = presa::skills!();
}
