/// A skill set embedded while presa's `skills` feature is off.
fn main() {
    let _ = presa::skills!("skills");
}
