//! The fixture's skills (the Skills extension, SEP-2640): what the three `sep-2640-*`
//! scenarios read. Two skills, one under an organizational prefix (`tools/`), the first
//! with a subfolder holding a reference file (the directory scenario descends into it).
//! The files are checked when the fixture compiles and embedded in the binary
//! (`presa::skills!`), so it serves them from any working directory; `build.rs` has cargo
//! compile it again when a file is added to the folder.

use presa::ServerBuilder;

/// Installs the Skills extension with the fixture's skill set, `presa-fixture/skills/`
/// (`directoryRead` on).
pub fn register(builder: ServerBuilder) -> ServerBuilder {
    builder.extension(presa::skills!("skills").directory_read(true))
}
