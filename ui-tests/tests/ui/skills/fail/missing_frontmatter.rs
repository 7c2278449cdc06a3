/// A SKILL.md without frontmatter.
fn main() {
    let _ = presa::skills!("skill-sets/no-frontmatter");
}
