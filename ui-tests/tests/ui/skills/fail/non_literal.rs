/// The folder as a constant: the macro reads the folder before constants are known.
const FOLDER: &str = "skill-sets/valid";

fn main() {
    let _ = presa::skills!(FOLDER);
}
