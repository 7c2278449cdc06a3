//! The fixture's skills (the Skills extension, SEP-2640): what the three `sep-2640-*`
//! scenarios read. Two skills, one under an organizational prefix (`tools/`), the first
//! with a subfolder holding a reference file (the directory scenario descends into it).
//! The files are embedded in the binary, so it serves them from any working directory.

use presa::ServerBuilder;
use presa::skills::{EmbeddedFile, Skills};

macro_rules! embedded {
    ($($path:literal),* $(,)?) => {
        &[$(EmbeddedFile {
            path: $path,
            bytes: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/skills/", $path)),
        }),*]
    };
}

/// The skill set, as files relative to `presa-fixture/skills/`.
const FILES: &[EmbeddedFile] = embedded![
    "fixture-guide/SKILL.md",
    "fixture-guide/references/REFERENCE.md",
    "fixture-guide/scripts/list.py",
    "tools/echo-usage/SKILL.md",
];

/// Installs the Skills extension with the fixture's skill set (`directoryRead` on).
pub fn register(builder: ServerBuilder) -> ServerBuilder {
    builder.extension(Skills::from_embedded(FILES).directory_read(true))
}
