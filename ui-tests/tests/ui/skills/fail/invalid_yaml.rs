/// Frontmatter that is not valid YAML.
fn main() {
    let _ = presa::skills!("skill-sets/invalid-yaml");
}
