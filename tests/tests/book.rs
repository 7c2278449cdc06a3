//! The listing harness: every Rust listing in the book (`book/src/*.md`) and the README
//! comes from a file that is compiled and tested, so no listing can drift from the code.
//!
//! - A ```` ```rust ```` block in the book holds exactly one `{{#include PATH:ANCHOR}}` and
//!   nothing else. PATH must exist, the ANCHOR must be marked in it (`ANCHOR: name` and
//!   `ANCHOR_END: name`), and the file must be compiled by `cargo test --workspace`: a
//!   cargo example of `presa` declared with `test = true`, a file of the `tests` crate, or
//!   a trybuild case of `ui-tests` (compiled with its expected `.stderr`).
//! - A Markdown file the book includes (the attribute tables of `presa/docs/`) may hold
//!   Rust blocks only as rustdoc doctests: the file must be `include_str!`ed by presa's
//!   sources and the block must not be `ignore`d, so `cargo test --doc` compiles it.
//! - Every fence names its language (an unlabelled block is a Rust block to mdbook's test
//!   runner); text, sh, toml and json blocks are free.
//! - Every `{{#include}}` anywhere resolves, every chapter is in `SUMMARY.md` and every
//!   entry of it exists, and every relative link points at a file that exists.
//! - The README is not processed by mdbook, so each of its Rust blocks is preceded by
//!   `<!-- listing: PATH#ANCHOR -->` and must be byte-identical to that anchored region of
//!   a compiled file.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lives in the workspace")
        .to_path_buf()
}

/// One fenced code block.
#[derive(Debug)]
struct Fence {
    /// 1-based line of the opening fence.
    line: usize,
    /// The info string (`rust,ignore`, `sh`, …).
    info: String,
    /// The lines between the fences.
    body: Vec<String>,
    /// How far the opening fence is indented.
    indent: usize,
}

impl Fence {
    /// The language: the info string's first word.
    fn language(&self) -> &str {
        self.info.split([',', ' ', '{']).next().unwrap_or("").trim()
    }
}

/// The fenced code blocks of a Markdown text (backtick or tilde fences, indented by at
/// most three spaces, closed by a fence of the same character at least as long).
fn fences(text: &str) -> Vec<Fence> {
    let mut out = Vec::new();
    let mut open: Option<(char, usize, Fence)> = None;
    for (i, raw) in text.lines().enumerate() {
        let indent = raw.len() - raw.trim_start_matches(' ').len();
        let line = raw.trim_start_matches(' ');
        let fence_char = line.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = fence_char.map_or(0, |c| line.chars().take_while(|x| *x == c).count());
        match &mut open {
            Some((c, len, fence)) => {
                if indent <= 3
                    && fence_char == Some(*c)
                    && run >= *len
                    && line[run..].trim().is_empty()
                {
                    let (_, _, fence) = open.take().expect("a fence is open");
                    out.push(fence);
                } else {
                    fence.body.push(raw.to_owned());
                }
            }
            None => {
                if indent <= 3 && run >= 3 {
                    let c = fence_char.expect("a run of fence characters");
                    open = Some((
                        c,
                        run,
                        Fence {
                            line: i + 1,
                            info: line[run..].trim().to_owned(),
                            body: Vec::new(),
                            indent,
                        },
                    ));
                }
            }
        }
    }
    if let Some((_, _, fence)) = open {
        out.push(fence); // unclosed: reported by its contents like any other
    }
    out
}

/// One `{{#include …}}` directive.
#[derive(Debug, PartialEq)]
struct Include {
    line: usize,
    path: String,
    anchor: Option<String>,
}

/// Every include directive of a Markdown text (`{{#include}}` and `{{#rustdoc_include}}`).
fn includes(text: &str) -> Vec<Include> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(start) = rest.find("{{#") {
            let after = &rest[start + 3..];
            let Some(end) = after.find("}}") else { break };
            let directive = after[..end].trim();
            rest = &after[end + 2..];
            let target = directive
                .strip_prefix("include ")
                .or_else(|| directive.strip_prefix("rustdoc_include "));
            if let Some(target) = target {
                let target = target.trim();
                let (path, anchor) = match target.split_once(':') {
                    Some((p, a)) => (p.to_owned(), Some(a.to_owned())),
                    None => (target.to_owned(), None),
                };
                out.push(Include {
                    line: i + 1,
                    path,
                    anchor,
                });
            }
        }
    }
    out
}

/// Whether `line` marks `kind` (`ANCHOR` or `ANCHOR_END`) for `name`.
fn marks(line: &str, kind: &str, name: &str) -> bool {
    let needle = format!("{kind}: {name}");
    line.match_indices(&needle).any(|(at, _)| {
        let before_ok = !line[..at].ends_with('_'); // ANCHOR_END is not ANCHOR
        let after = &line[at + needle.len()..];
        let after_ok = !after.starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '-');
        before_ok && after_ok
    })
}

/// The lines between `ANCHOR: name` and `ANCHOR_END: name`, without the lines that mark
/// other anchors (what mdbook includes), or why there are none.
fn anchored(text: &str, name: &str) -> Result<String, String> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| marks(l, "ANCHOR", name))
        .ok_or_else(|| format!("no `ANCHOR: {name}` marker"))?;
    let end = lines[start + 1..]
        .iter()
        .position(|l| marks(l, "ANCHOR_END", name))
        .ok_or_else(|| format!("no `ANCHOR_END: {name}` marker after `ANCHOR: {name}`"))?
        + start
        + 1;
    let mut region = String::new();
    for line in &lines[start + 1..end] {
        if !line.contains("ANCHOR:") && !line.contains("ANCHOR_END:") {
            region.push_str(line);
            region.push('\n');
        }
    }
    if region.trim().is_empty() {
        return Err(format!("anchor `{name}` is empty"));
    }
    Ok(region)
}

/// `base/rel`, with `.` and `..` resolved, as a path relative to the workspace root.
fn resolve(base: &Path, rel: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in base.join(rel).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// The `[[example]]`s of presa's manifest declared with `test = true`.
fn tested_examples(root: &Path) -> BTreeSet<String> {
    let manifest = fs::read_to_string(root.join("presa/Cargo.toml")).expect("presa/Cargo.toml");
    let mut tested = BTreeSet::new();
    for block in manifest.split("[[example]]").skip(1) {
        let block = block.split("\n[").next().unwrap_or("");
        let value = |key: &str| {
            block.lines().find_map(|l| {
                let (k, v) = l.split_once('=')?;
                (k.trim() == key).then(|| v.trim().trim_matches('"').to_owned())
            })
        };
        if let (Some(name), Some(test)) = (value("name"), value("test"))
            && test == "true"
        {
            let path = value("path").unwrap_or_else(|| format!("examples/{name}.rs"));
            tested.insert(format!("presa/{path}"));
        }
    }
    tested
}

/// Why `file` (relative to the root) is not a file that `cargo test --workspace` compiles,
/// if it is not.
fn not_compiled(root: &Path, file: &Path) -> Option<String> {
    let name = file.to_string_lossy().replace('\\', "/");
    if name.starts_with("presa/examples/") {
        return (!tested_examples(root).contains(&name)).then(|| {
            format!("{name} is not an [[example]] of presa/Cargo.toml with `test = true`")
        });
    }
    if (name.starts_with("tests/tests/") || name.starts_with("tests/src/")) && name.ends_with(".rs")
    {
        return None;
    }
    if name.starts_with("ui-tests/tests/ui/") && name.ends_with(".rs") {
        let is_fail = name.contains("/fail/");
        return (is_fail && !root.join(file.with_extension("stderr")).exists())
            .then(|| format!("{name} is a failing trybuild case without its .stderr"));
    }
    Some(format!(
        "{name} is not compiled by `cargo test --workspace` (use a tested example of presa or a file of the tests crate)"
    ))
}

/// Markdown files that presa's sources `include_str!` into rustdoc, whose Rust blocks are
/// therefore doctests.
fn rustdoc_markdown(root: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut dirs = vec![root.join("presa/src")];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let Ok(text) = fs::read_to_string(&path) else {
                continue;
            };
            for piece in text.split("include_str!(\"").skip(1) {
                let Some((rel, _)) = piece.split_once('"') else {
                    continue;
                };
                let base = path
                    .parent()
                    .and_then(|p| p.strip_prefix(root).ok())
                    .unwrap_or(Path::new(""));
                if rel.ends_with(".md")
                    && let Some(target) = resolve(base, rel)
                {
                    found.insert(target);
                }
            }
        }
    }
    found
}

/// The problems of one Markdown file of the book (`file` relative to the root). Markdown
/// files it includes are checked too, once each.
fn check_markdown(
    root: &Path,
    file: &Path,
    text: &str,
    seen: &mut BTreeSet<PathBuf>,
    problems: &mut Vec<String>,
) {
    let here = file.parent().unwrap_or(Path::new(""));
    let name = file.display();
    let included_by_rustdoc = rustdoc_markdown(root).contains(file);
    for fence in fences(text) {
        let at = format!("{name}:{}", fence.line);
        match fence.language() {
            "" => problems.push(format!(
                "{at}: a code block without a language (write ```text, ```sh, ```toml, … or include a Rust listing)"
            )),
            "rust" => {
                let body: Vec<&str> = fence
                    .body
                    .iter()
                    .map(|l| l.trim())
                    .filter(|l| !l.is_empty())
                    .collect();
                let only_include = body.len() == 1 && includes(body[0]).len() == 1;
                let doctest = included_by_rustdoc && !fence.info.contains("ignore");
                if !only_include && !doctest {
                    problems.push(format!(
                        "{at}: a Rust block that is not one `{{{{#include PATH:ANCHOR}}}}` of a compiled file: pasted code can drift; move it into a tested example and include it"
                    ));
                }
                if only_include && fence.indent > 0 {
                    problems.push(format!(
                        "{at}: an included listing inside an indented block (a list item): mdbook inserts the file unindented, which ends the list and breaks the fences after it; move the block out of the list"
                    ));
                }
                if only_include {
                    let include = &includes(body[0])[0];
                    match include.anchor.as_deref() {
                        None if !include.path.starts_with("../../ui-tests/") => {
                            problems.push(format!(
                                "{at}: Rust listing {} includes a whole file; name an ANCHOR",
                                include.path
                            ))
                        }
                        _ => {}
                    }
                    if let Some(target) = resolve(here, &include.path)
                        && root.join(&target).is_file()
                        && let Some(why) = not_compiled(root, &target)
                    {
                        problems.push(format!("{at}: {why}"));
                    }
                }
            }
            _ => {}
        }
    }
    for include in includes(text) {
        let at = format!("{name}:{}", include.line);
        let Some(target) = resolve(here, &include.path) else {
            problems.push(format!(
                "{at}: include path {} leaves the workspace",
                include.path
            ));
            continue;
        };
        let Ok(content) = fs::read_to_string(root.join(&target)) else {
            problems.push(format!(
                "{at}: included file {} does not exist",
                target.display()
            ));
            continue;
        };
        if let Some(anchor) = &include.anchor {
            if anchor
                .split(':')
                .all(|p| p.chars().all(|c| c.is_ascii_digit()))
            {
                problems.push(format!(
                    "{at}: {} is included by line numbers ({anchor}), which drift; mark an ANCHOR",
                    target.display()
                ));
            } else if let Err(why) = anchored(&content, anchor) {
                problems.push(format!("{at}: {}: {why}", target.display()));
            }
        }
        if target.extension().is_some_and(|e| e == "md") && seen.insert(target.clone()) {
            check_markdown(root, &target, &content, seen, problems);
        }
    }
    check_links(root, file, text, problems);
}

/// Relative links (`[text](path)`) must point at files that exist.
fn check_links(root: &Path, file: &Path, text: &str, problems: &mut Vec<String>) {
    let here = file.parent().unwrap_or(Path::new(""));
    let mut in_fence = false;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        for piece in line.split("](").skip(1) {
            let Some(target) = piece.split(')').next() else {
                continue;
            };
            let target = target.split_whitespace().next().unwrap_or("");
            let path = target.split('#').next().unwrap_or("");
            if path.is_empty() || path.contains("://") || path.starts_with("mailto:") {
                continue;
            }
            let exists = resolve(here, path).is_some_and(|p| root.join(p).exists());
            if !exists {
                problems.push(format!(
                    "{}:{}: link to {target}, which does not exist",
                    file.display(),
                    i + 1
                ));
            }
        }
    }
}

/// The README's Rust blocks: each preceded by `<!-- listing: PATH#ANCHOR -->` and equal,
/// byte for byte, to that region of a compiled file.
fn check_readme(root: &Path, text: &str, problems: &mut Vec<String>) {
    let lines: Vec<&str> = text.lines().collect();
    for fence in fences(text) {
        let at = format!("README.md:{}", fence.line);
        match fence.language() {
            "" => problems.push(format!("{at}: a code block without a language")),
            "rust" => {
                let marker = fence
                    .line
                    .checked_sub(2)
                    .and_then(|i| lines.get(i))
                    .map(|l| l.trim())
                    .and_then(|l| l.strip_prefix("<!-- listing:"))
                    .and_then(|l| l.strip_suffix("-->"))
                    .map(str::trim);
                let Some((path, anchor)) = marker.and_then(|m| m.split_once('#')) else {
                    problems.push(format!(
                        "{at}: a Rust block must follow a `<!-- listing: PATH#ANCHOR -->` line naming the compiled file it is copied from"
                    ));
                    continue;
                };
                let Ok(source) = fs::read_to_string(root.join(path)) else {
                    problems.push(format!("{at}: {path} does not exist"));
                    continue;
                };
                if let Some(why) = not_compiled(root, Path::new(path)) {
                    problems.push(format!("{at}: {why}"));
                }
                match anchored(&source, anchor) {
                    Err(why) => problems.push(format!("{at}: {path}: {why}")),
                    Ok(region) => {
                        let block: String = fence.body.iter().map(|l| format!("{l}\n")).collect();
                        if block != region {
                            problems.push(format!(
                                "{at}: the block differs from {path}#{anchor}; copy the region again:\n{region}"
                            ));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    check_links(root, Path::new("README.md"), text, problems);
}

/// The chapters `SUMMARY.md` links to.
fn summary_chapters(summary: &str) -> Vec<String> {
    summary
        .split("](")
        .skip(1)
        .filter_map(|p| p.split(')').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_listing_is_included_from_a_compiled_file() {
    let root = root();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    let src = Path::new("book/src");
    let mut chapters: Vec<PathBuf> = fs::read_dir(root.join(src))
        .expect("book/src")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| src.join(p.file_name().expect("a file name")))
        .collect();
    chapters.sort();
    assert!(chapters.len() > 10, "the book has its chapters");
    for chapter in &chapters {
        let text = fs::read_to_string(root.join(chapter)).expect("a chapter");
        check_markdown(&root, chapter, &text, &mut seen, &mut problems);
    }

    let summary = fs::read_to_string(root.join(src).join("SUMMARY.md")).expect("SUMMARY.md");
    let listed: BTreeSet<String> = summary_chapters(&summary).into_iter().collect();
    for chapter in &chapters {
        let file = chapter.file_name().and_then(|f| f.to_str()).unwrap_or("");
        if file != "SUMMARY.md" && !listed.contains(file) {
            problems.push(format!("{}: not listed in SUMMARY.md", chapter.display()));
        }
    }

    let readme = fs::read_to_string(root.join("README.md")).expect("README.md");
    assert!(
        fences(&readme).iter().any(|f| f.language() == "rust"),
        "the README shows an example"
    );
    check_readme(&root, &readme, &mut problems);

    assert!(
        problems.is_empty(),
        "{} listing problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The harness itself: it catches what it exists to catch.
#[test]
fn the_harness_refuses_pasted_and_dangling_listings() {
    let root = root();
    let check = |text: &str| {
        let mut problems = Vec::new();
        check_markdown(
            &root,
            Path::new("book/src/probe.md"),
            text,
            &mut BTreeSet::new(),
            &mut problems,
        );
        problems
    };
    let pasted = "# Probe\n\n```rust\nfn main() {}\n```\n";
    assert_eq!(check(pasted).len(), 1, "{:?}", check(pasted));
    let unlabelled = "```\nfn main() {}\n```\n";
    assert_eq!(check(unlabelled).len(), 1);
    let missing_file = "```rust\n{{#include ../../presa/examples/nope.rs:all}}\n```\n";
    assert!(check(missing_file)[0].contains("does not exist"));
    let missing_anchor = "```rust\n{{#include ../../presa/examples/hello.rs:nope}}\n```\n";
    assert!(check(missing_anchor)[0].contains("ANCHOR: nope"));
    let whole_file = "```rust\n{{#include ../../presa/examples/hello.rs}}\n```\n";
    assert!(check(whole_file)[0].contains("name an ANCHOR"));
    let by_lines = "```rust\n{{#include ../../presa/examples/hello.rs:3:9}}\n```\n";
    assert!(check(by_lines)[0].contains("line numbers"));
    let uncompiled = "```rust\n{{#include ../../presa/src/lib.rs:all}}\n```\n";
    assert!(check(uncompiled).iter().any(|p| p.contains("not compiled")));
    let good = "```rust,ignore\n{{#include ../../presa/examples/hello.rs:readme}}\n```\n\n```sh\ncargo test\n```\n";
    assert_eq!(check(good), Vec::<String>::new());
    let in_a_list =
        "- item:\n\n  ```rust\n  {{#include ../../presa/examples/hello.rs:readme}}\n  ```\n";
    assert!(check(in_a_list)[0].contains("indented block"));
    let broken_link = "See [the quickstart](nowhere.md).\n";
    assert_eq!(check(broken_link).len(), 1);
}

#[test]
fn anchors_are_read_as_mdbook_reads_them() {
    let text = "a\n// ANCHOR: outer\nb\n// ANCHOR: inner\nc\n// ANCHOR_END: inner\nd\n// ANCHOR_END: outer\n";
    assert_eq!(anchored(text, "outer").unwrap(), "b\nc\nd\n");
    assert_eq!(anchored(text, "inner").unwrap(), "c\n");
    assert!(anchored(text, "out").is_err(), "names match whole");
    assert_eq!(
        includes("x {{#include ../a.rs:tests}} y {{#include b.md}}"),
        [
            Include {
                line: 1,
                path: "../a.rs".into(),
                anchor: Some("tests".into())
            },
            Include {
                line: 1,
                path: "b.md".into(),
                anchor: None
            }
        ]
    );
}
