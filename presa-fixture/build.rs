//! Has cargo compile the fixture again when anything in `skills/` changes, a file added
//! included: `presa::skills!` embeds the files it found with `include_bytes!`, and cargo
//! tracks those files, not the folder.

fn main() {
    println!("cargo::rerun-if-changed=skills");
}
