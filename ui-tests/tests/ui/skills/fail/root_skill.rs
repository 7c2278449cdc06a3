/// A SKILL.md at the root of the set, with no folder to name its skill.
fn main() {
    let _ = presa::skills!("skill-sets/root-skill");
}
