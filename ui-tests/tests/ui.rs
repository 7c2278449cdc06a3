//! The compile errors of presa's macros users are most likely to meet, each with its
//! `.stderr` (refresh with `TRYBUILD=overwrite cargo test -p presa-ui-tests` and read the
//! diff; the README lists the errors without a case), and passing cases for every
//! supported signature shape.

use std::fs;
use std::path::{Path, PathBuf};

#[test]
fn ui() {
    write_skill_sets();
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/fail/*.rs");
    t.pass("tests/ui/*/pass/*.rs");
}

/// The folder trybuild compiles the cases in: `<target>/tests/trybuild/<this package>`.
/// It is their `CARGO_MANIFEST_DIR`, which `skills!` resolves its path from.
fn trybuild_project() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let target = tmp.parent().expect("CARGO_TARGET_TMPDIR is <target>/tmp");
    target.join("tests/trybuild").join(env!("CARGO_PKG_NAME"))
}

/// The skill sets the `skills!` cases read, in the project trybuild compiles them in as
/// `skill-sets/<name>`: the ones under `tests/skill-sets/` copied, and those that would
/// weigh on the repository (over the file and size limits) or that git holds badly (a
/// symbolic link) written here.
fn write_skill_sets() {
    let sets = trybuild_project().join("skill-sets");
    if sets.exists() {
        fs::remove_dir_all(&sets).expect("remove the previous skill sets");
    }
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/skill-sets"),
        &sets,
    );
    let skill_md = "---\nname: notes\ndescription: Take notes\n---\n";

    // 513 files in one skill, one past the limit.
    let notes = sets.join("too-many-files/notes");
    fs::create_dir_all(&notes).expect("mkdir");
    fs::write(notes.join("SKILL.md"), skill_md).expect("write");
    for i in 1..=512 {
        fs::write(notes.join(format!("f{i:03}.txt")), "x").expect("write");
    }

    // 16 MiB and one byte in one skill: a sparse file, since the size is refused before
    // a byte is read.
    let notes = sets.join("too-large/notes");
    fs::create_dir_all(&notes).expect("mkdir");
    fs::write(notes.join("SKILL.md"), skill_md).expect("write");
    let big = fs::File::create(notes.join("big.bin")).expect("create");
    big.set_len(16 * 1024 * 1024 + 1 - skill_md.len() as u64)
        .expect("set the length");

    // A symbolic link inside a skill.
    let notes = sets.join("symlink/notes");
    fs::create_dir_all(&notes).expect("mkdir");
    fs::write(notes.join("SKILL.md"), skill_md).expect("write");
    std::os::unix::fs::symlink("/etc/hostname", notes.join("host.txt")).expect("symlink");
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read the skill sets") {
        let entry = entry.expect("an entry");
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(entry.file_name()));
        } else {
            fs::copy(&path, to.join(entry.file_name())).expect("copy");
        }
    }
}
