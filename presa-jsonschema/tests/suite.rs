//! The official JSON-Schema-Test-Suite, draft 2020-12, against the validator: every test
//! of every vendored file (`tests/suite/`, whose README names the suite's commit).
//!
//! Each test group's schema either compiles, and then the validator's verdict on every
//! instance of the group is the suite's (by [`Validator::is_valid`] and by
//! [`Validator::validate`] alike), or is refused as [`CompileError::Unsupported`] for a
//! reason the tables below name and the refusal's message confirms. A group that does not
//! compile as `Invalid`, a verdict that differs, a refusal not in the tables, and a table
//! entry that no longer matches a refusal all fail the test; they are collected and listed
//! together.

use presa_jsonschema::{CompileError, Validator};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why the validator refuses a group: each reason is a text its refusal message contains.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Why {
    /// `unevaluatedProperties` or `unevaluatedItems`.
    Unevaluated,
    /// `$dynamicRef` or `$dynamicAnchor`.
    Dynamic,
    /// `$id` below the root: an embedded schema resource, with a base URI of its own.
    EmbeddedId,
    /// A `$ref` to another document (the meta-schema, a remote, a URN): nothing is fetched.
    OtherDocument,
    /// `$schema` naming a dialect other than 2020-12 (a custom meta-schema).
    Dialect,
    /// Draft 7's `dependencies`.
    Dependencies,
    /// A `pattern` the regex-lite engine cannot run as ECMA-262 means it.
    Regex,
}

impl Why {
    /// A text the refusal's message contains.
    fn said(self) -> &'static str {
        match self {
            Why::Unevaluated => "the keyword unevaluated",
            Why::Dynamic => "the keyword $dynamic",
            Why::EmbeddedId => "$id below the root",
            Why::OtherDocument => "is not a same-document reference",
            Why::Dialect => "only draft 2020-12 is implemented",
            Why::Dependencies => "the keyword dependencies",
            Why::Regex => "which the regex-lite engine cannot run",
        }
    }
}

use Why::*;

/// Files none of whose groups compile, with the reasons their refusals give (each group's
/// is one of them: a group meets the first thing refused in it).
const REFUSED_FILES: &[(&str, &[Why])] = &[
    ("dynamicRef.json", &[Dynamic, EmbeddedId, OtherDocument]),
    ("refRemote.json", &[OtherDocument, EmbeddedId]),
    ("unevaluatedItems.json", &[Unevaluated, Dynamic, EmbeddedId]),
    (
        "unevaluatedProperties.json",
        &[Unevaluated, Dynamic, EmbeddedId],
    ),
    ("vocabulary.json", &[Dialect]),
    ("optional/cross-draft.json", &[OtherDocument]),
    ("optional/dependencies-compatibility.json", &[Dependencies]),
    ("optional/dynamicRef.json", &[EmbeddedId]),
    ("optional/format-assertion.json", &[Dialect]),
    ("optional/id.json", &[EmbeddedId]),
    ("optional/unknownKeyword.json", &[EmbeddedId]),
];

/// Groups refused in files whose other groups compile: (file, group description, why).
const REFUSED_GROUPS: &[(&str, &str, Why)] = &[
    (
        "anchor.json",
        "Location-independent identifier with absolute URI",
        EmbeddedId,
    ),
    (
        "anchor.json",
        "Location-independent identifier with base URI change in subschema",
        EmbeddedId,
    ),
    (
        "anchor.json",
        "same $anchor with different base uri",
        EmbeddedId,
    ),
    (
        "defs.json",
        "validate definition against metaschema",
        OtherDocument,
    ),
    (
        "not.json",
        "collect annotations inside a 'not', even if collection is disabled",
        Unevaluated,
    ),
    (
        "ref.json",
        "remote ref, containing refs itself",
        OtherDocument,
    ),
    (
        "ref.json",
        "Recursive references between schemas",
        EmbeddedId,
    ),
    (
        "ref.json",
        "ref creates new scope when adjacent to keywords",
        Unevaluated,
    ),
    ("ref.json", "refs with relative uris and defs", EmbeddedId),
    (
        "ref.json",
        "relative refs with absolute uris and defs",
        EmbeddedId,
    ),
    (
        "ref.json",
        "$id must be resolved against nearest parent, not just immediate parent",
        EmbeddedId,
    ),
    ("ref.json", "order of evaluation: $id and $ref", EmbeddedId),
    (
        "ref.json",
        "order of evaluation: $id and $anchor and $ref",
        EmbeddedId,
    ),
    (
        "ref.json",
        "simple URN base URI with $ref via the URN",
        OtherDocument,
    ),
    (
        "ref.json",
        "URN base URI with URN and JSON pointer ref",
        OtherDocument,
    ),
    (
        "ref.json",
        "URN base URI with URN and anchor ref",
        OtherDocument,
    ),
    ("ref.json", "URN ref with nested pointer ref", EmbeddedId),
    ("ref.json", "ref to if", EmbeddedId),
    ("ref.json", "ref to then", EmbeddedId),
    ("ref.json", "ref to else", EmbeddedId),
    ("ref.json", "ref with absolute-path-reference", EmbeddedId),
    (
        "optional/ecmascript-regex.json",
        "ECMA 262 regex escapes control codes with \\c and upper letter",
        Regex,
    ),
    (
        "optional/ecmascript-regex.json",
        "ECMA 262 regex escapes control codes with \\c and lower letter",
        Regex,
    ),
    (
        "optional/ecmascript-regex.json",
        "patterns always use unicode semantics with pattern",
        Regex,
    ),
    (
        "optional/ecmascript-regex.json",
        "pattern with non-ASCII digits",
        Regex,
    ),
    (
        "optional/ecmascript-regex.json",
        "patterns always use unicode semantics with patternProperties",
        Regex,
    ),
    (
        "optional/ecmascript-regex.json",
        "patternProperties with non-ASCII digits",
        Regex,
    ),
];

/// The vendored suite's size (files, groups, tests): a file left out of the run, or a
/// group skipped, shows here.
const SUITE_SIZE: (usize, usize, usize) = (59, 416, 1415);

/// The vendored files, as paths relative to `draft2020-12/`, sorted.
fn suite_files(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for dir in ["", "optional"] {
        let entries = std::fs::read_dir(root.join(dir))
            .unwrap_or_else(|e| panic!("reading {}: {e}", root.join(dir).display()));
        for entry in entries {
            let name = entry.expect("a directory entry").file_name();
            let name = name.to_str().expect("a UTF-8 file name");
            if name.ends_with(".json") {
                files.push(if dir.is_empty() {
                    name.to_owned()
                } else {
                    format!("{dir}/{name}")
                });
            }
        }
    }
    files.sort();
    files
}

/// What one run found.
#[derive(Default)]
struct Tally {
    files: usize,
    groups: usize,
    tests: usize,
    /// Groups whose schema compiled, and the tests in them (all of which agreed, unless
    /// `failures` says otherwise).
    compiled_groups: usize,
    passed_tests: usize,
    /// Refused groups, and their tests, by reason.
    refused: BTreeMap<Why, (usize, usize)>,
    failures: Vec<String>,
}

#[test]
fn official_suite_draft2020_12() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/suite/draft2020-12");
    let files = suite_files(&root);
    let mut tally = Tally::default();
    for (file, _) in REFUSED_FILES {
        if !files.iter().any(|f| f == file) {
            tally
                .failures
                .push(format!("{file}: listed as refused, not vendored"));
        }
    }
    let mut listed_groups_met = vec![false; REFUSED_GROUPS.len()];
    for file in &files {
        let text = std::fs::read_to_string(root.join(file)).expect("a vendored file");
        let groups: Vec<Value> = serde_json::from_str(&text).expect("a suite file is JSON");
        tally.files += 1;
        let whole_file = REFUSED_FILES
            .iter()
            .find(|(f, _)| f == file)
            .map(|(_, why)| *why);
        for group in &groups {
            let description = group["description"].as_str().expect("a group description");
            let tests = group["tests"].as_array().expect("a group's tests");
            tally.groups += 1;
            tally.tests += tests.len();
            let listed = REFUSED_GROUPS
                .iter()
                .position(|(f, g, _)| f == file && *g == description);
            if let Some(at) = listed {
                listed_groups_met[at] = true;
            }
            let expected: Option<&[Why]> = match (whole_file, listed) {
                (Some(why), _) => Some(why),
                (None, Some(at)) => Some(std::slice::from_ref(&REFUSED_GROUPS[at].2)),
                (None, None) => None,
            };
            let at = format!("{file} / {description}");
            match (Validator::compile(&group["schema"]), expected) {
                (Ok(validator), None) => {
                    tally.compiled_groups += 1;
                    for test in tests {
                        let data = &test["data"];
                        let valid = test["valid"].as_bool().expect("a test's verdict");
                        let quick = validator.is_valid(data);
                        let worded = validator.validate(data);
                        if quick == valid && worded.is_ok() == valid {
                            tally.passed_tests += 1;
                        } else {
                            tally.failures.push(format!(
                                "{at} / {}: the suite says valid={valid}, is_valid says \
                                 {quick}, validate says {worded:?}",
                                test["description"]
                            ));
                        }
                    }
                }
                (Ok(_), Some(_)) => tally.failures.push(format!(
                    "{at}: listed as refused, but the schema compiles (run its tests: take \
                     it off the list)"
                )),
                (Err(CompileError::Unsupported(message)), Some(reasons)) => {
                    match reasons.iter().find(|why| message.contains(why.said())) {
                        Some(why) => {
                            let count = tally.refused.entry(*why).or_default();
                            count.0 += 1;
                            count.1 += tests.len();
                        }
                        None => tally.failures.push(format!(
                            "{at}: refused for another reason than {reasons:?}: {message}"
                        )),
                    }
                }
                (Err(CompileError::Unsupported(message)), None) => tally.failures.push(format!(
                    "{at}: refused, and not listed as refused: {message}"
                )),
                (Err(CompileError::Invalid(message)), _) => tally.failures.push(format!(
                    "{at}: a valid schema is refused as malformed: {message}"
                )),
            }
        }
    }
    for ((file, group, _), met) in REFUSED_GROUPS.iter().zip(listed_groups_met) {
        if !met {
            tally.failures.push(format!(
                "{file} / {group}: listed as refused, no such group"
            ));
        }
    }

    let refused_groups: usize = tally.refused.values().map(|c| c.0).sum();
    println!(
        "JSON-Schema-Test-Suite draft2020-12: {} files, {} groups, {} tests; {} groups \
         compiled, {} tests passed; {refused_groups} groups refused:",
        tally.files, tally.groups, tally.tests, tally.compiled_groups, tally.passed_tests,
    );
    for (why, (groups, tests)) in &tally.refused {
        println!("  {why:?}: {groups} groups ({tests} tests)");
    }
    assert!(
        tally.failures.is_empty(),
        "{} problems with the suite:\n{}",
        tally.failures.len(),
        tally.failures.join("\n")
    );
    assert_eq!(
        (tally.files, tally.groups, tally.tests),
        SUITE_SIZE,
        "the vendored suite's size (files, groups, tests)"
    );
    assert_eq!(
        tally.compiled_groups + refused_groups,
        tally.groups,
        "every group compiled or refused"
    );
    let refused_tests: usize = tally.refused.values().map(|c| c.1).sum();
    assert_eq!(
        tally.passed_tests + refused_tests,
        tally.tests,
        "every test passed or in a refused group"
    );
}
