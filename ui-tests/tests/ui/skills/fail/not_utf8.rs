/// A SKILL.md that is not UTF-8.
fn main() {
    let _ = presa::skills!("skill-sets/not-utf8");
}
