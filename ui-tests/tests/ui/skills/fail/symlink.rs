/// A symbolic link in a skill (written by tests/ui.rs: a link could reach outside the folder).
fn main() {
    let _ = presa::skills!("skill-sets/symlink");
}
