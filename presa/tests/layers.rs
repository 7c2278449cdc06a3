//! The layering of presa's modules (ARCHITECTURE.md, "Layers"): every top-level module of
//! `presa/src` imports only modules below it in [`LAYERS`]. The check reads the source:
//! every `crate::…` path outside comments and test modules, with names the crate root
//! re-exports (`crate::Server`) followed to the module that defines them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// presa's top-level modules, lowest first. A module may import only those before it.
const LAYERS: &[&str] = &[
    "error",
    "wire",
    // What presa tells about its work (spans, metrics), and their export: called from
    // everywhere above, knowing nothing of it.
    "observe",
    "otel",
    "shape",
    "schema",
    "auth",
    "context",
    "extract",
    "registry",
    "mrtr",
    "subscriptions",
    "extension",
    "session",
    "pipeline",
    "server",
    "transport",
    "testing",
    "tasks",
    "skills",
    // `__private`, the generated code's one entry point: it re-exports from everything.
    "macro_support",
];

/// Where each name the crate root re-exports is defined (from `lib.rs`'s `pub use`s).
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for statement in strip(lib).split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let module = path
            .split("::")
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned();
        let items = match (path.find('{'), path.rfind('}')) {
            (Some(open), Some(close)) => path[open + 1..close].to_owned(),
            _ => path.rsplit("::").next().unwrap_or_default().to_owned(),
        };
        for item in items.split(',') {
            let name = item.rsplit(" as ").next().unwrap_or_default().trim();
            if !name.is_empty() {
                names.insert(name.to_owned(), module.clone());
            }
        }
    }
    names
}

/// `text` without comments, string and char literals, and `#[cfg(test)]` modules written
/// inline.
fn strip(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if let Some(raw) = rest.strip_prefix("r#\"") {
            i += raw.find("\"#").map_or(rest.len(), |e| e + 5);
        } else if rest.starts_with('"') {
            let mut j = 1;
            while j < rest.len() {
                match rest.as_bytes()[j] {
                    b'\\' => j += 2,
                    b'"' => break,
                    _ => j += 1,
                }
            }
            i += j + 1;
        } else if rest.starts_with("'\"'") || rest.starts_with("'\\''") {
            i += 3;
        } else if rest.starts_with("#[cfg(test)]") && is_inline_mod(&rest[12..]) {
            i += 12 + skip_block(&rest[12..]);
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Whether `rest` (after a `#[cfg(test)]`) is an inline module: `mod name {`.
fn is_inline_mod(rest: &str) -> bool {
    let rest = rest.trim_start();
    let rest = rest.strip_prefix("pub(crate) ").unwrap_or(rest);
    rest.strip_prefix("mod ")
        .and_then(|r| r.find(['{', ';']).map(|at| r.as_bytes()[at] == b'{'))
        .unwrap_or(false)
}

/// The length of `rest` up to the end of its first brace-delimited block.
fn skip_block(rest: &str) -> usize {
    let mut depth = 0usize;
    for (i, b) in rest.bytes().enumerate() {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    rest.len()
}

/// The top-level modules a source names through `crate::` (and `$crate::`) paths,
/// re-exported names resolved through `names`; a name the check cannot place is
/// returned as `?name`.
fn imports(source: &str, names: &BTreeMap<String, String>) -> Vec<String> {
    let text = strip(source);
    let mut found = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("crate::") {
        let after = &rest[at + "crate::".len()..];
        let mut heads = Vec::new();
        if let Some(group) = after.strip_prefix('{') {
            // `crate::{a::b, c}`: the first segment of each path at the group's top level.
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        heads.push(group[start..i].to_owned());
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        heads.push(group[start..i].to_owned());
                        start = i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            heads.push(after.to_owned());
        }
        for head in heads {
            let name: String = head
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if name.is_empty() || name == "self" {
                continue;
            }
            let module = if name == "__private" {
                "macro_support".to_owned()
            } else if LAYERS.contains(&name.as_str()) {
                name
            } else if let Some(module) = names.get(&name) {
                module.clone()
            } else {
                format!("?{name}")
            };
            found.push(module);
        }
        rest = after;
    }
    found
}

/// The top-level module a source file belongs to (`None`: the crate root), and whether
/// it is a test module declared in its own file (`#[cfg(test)] mod tests;`).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).ok()?;
    let first = relative.components().next()?.as_os_str().to_str()?;
    match first {
        "lib.rs" => None,
        _ => Some(first.trim_end_matches(".rs").to_owned()),
    }
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Files declared as test modules by their parent (`#[cfg(test)] mod name;`).
fn test_files(all: &[PathBuf]) -> Vec<PathBuf> {
    let mut tests = Vec::new();
    for file in all {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let dir = match file.file_name().and_then(|n| n.to_str()) {
            Some("mod.rs" | "lib.rs") => file.parent().map(Path::to_path_buf),
            _ => file.with_extension("").into(),
        };
        let Some(dir) = dir else { continue };
        for (i, _) in text.match_indices("#[cfg(test)]") {
            let rest = text[i + 12..].trim_start();
            let rest = rest.strip_prefix("pub(crate) ").unwrap_or(rest);
            if let Some(r) = rest.strip_prefix("mod ")
                && let Some(end) = r.find(';')
                && !r[..end].contains('{')
            {
                let name = r[..end].trim();
                tests.push(dir.join(format!("{name}.rs")));
                tests.push(dir.join(name).join("mod.rs"));
            }
        }
    }
    tests
}

/// Adds the macros a source exports at the crate root (`#[macro_export]`), as defined by
/// `module`.
fn exported_macros(source: &str, module: &str, names: &mut BTreeMap<String, String>) {
    for (at, _) in source.match_indices("#[macro_export]") {
        let rest = &source[at..];
        if let Some(start) = rest.find("macro_rules!") {
            let name: String = rest[start + "macro_rules!".len()..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            names.insert(name, module.to_owned());
        }
    }
}

/// The imports that break the layering, as `file: module -> imported`.
fn violations(src: &Path) -> Vec<String> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("presa/src/lib.rs");
    let mut names = reexports(&lib);
    let mut all = Vec::new();
    files(src, &mut all);
    for file in &all {
        if let (Some(module), Ok(text)) = (module_of(src, file), std::fs::read_to_string(file)) {
            exported_macros(&text, &module, &mut names);
        }
    }
    let tests = test_files(&all);
    let mut bad = Vec::new();
    for file in &all {
        if tests.contains(file) {
            continue;
        }
        let Some(module) = module_of(src, file) else {
            continue;
        };
        let text = std::fs::read_to_string(file).expect("a source file");
        let shown = file.strip_prefix(src).unwrap_or(file).display().to_string();
        let Some(level) = LAYERS.iter().position(|l| *l == module) else {
            bad.push(format!("{shown}: module `{module}` is not in LAYERS"));
            continue;
        };
        for imported in imports(&text, &names) {
            if imported == module {
                continue;
            }
            match LAYERS.iter().position(|l| *l == imported) {
                Some(at) if at < level => {}
                Some(_) => bad.push(format!("{shown}: {module} -> {imported} (points up)")),
                None => bad.push(format!("{shown}: {module} -> {imported} (unknown)")),
            }
        }
    }
    bad.sort();
    bad.dedup();
    bad
}

#[test]
fn no_module_imports_one_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let bad = violations(&src);
    assert!(
        bad.is_empty(),
        "imports against the layering (ARCHITECTURE.md, \"Layers\"):\n{}",
        bad.join("\n")
    );
}

/// The check sees what it must: paths in `use` lines, groups, re-exported names and
/// `$crate`, and nothing in comments, strings or inline test modules.
#[test]
fn the_check_sees_imports_and_nothing_else() {
    let names = reexports("pub use server::{Item, Server};\npub use error::Error as E;");
    let source = r#"
        use crate::wire::meta;
        use crate::{pipeline::Core, registry};
        fn f() -> crate::Server { $crate::tasks::x() }
        // crate::testing::TestClient in a comment
        /* crate::transport in a block comment */
        const S: &str = "crate::transport::http";
        #[cfg(test)]
        mod tests { use crate::testing::TestClient; }
        fn g(_: crate::E, _: crate::Nowhere) {}
    "#;
    let found = imports(source, &names);
    assert_eq!(
        found,
        [
            "wire", "pipeline", "registry", "server", "tasks", "error", "?Nowhere"
        ]
    );
}
