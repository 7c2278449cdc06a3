/// Frontmatter without a `description`.
fn main() {
    let _ = presa::skills!("skill-sets/no-description");
}
