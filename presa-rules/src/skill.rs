//! Agent Skills served over MCP (the Skills extension, SEP-2640): what makes a folder of
//! files a valid set of skills, and what each skill looks like on the wire.
//!
//! A skill is a folder holding a `SKILL.md` whose YAML frontmatter names and describes it;
//! every file under that folder (subfolders and nested skills included) is one of its
//! files. A skill set is a root folder: each folder below it that holds a `SKILL.md` is a
//! skill whose *skill path* is that folder's path from the root (`git-workflow`, or
//! `acme/billing/refunds` with the organizational prefix `acme/billing`). Files outside
//! every skill are not part of the set.
//!
//! The rules, each checked by [`check_set`] (and, for the folder's shape and the limits,
//! by [`check_layout`] before a byte is read):
//!
//! | [`Rule`] | what holds |
//! | --- | --- |
//! | `Path` | file paths are relative, `/`-separated, without empty, `.` or `..` segments, and no `SKILL.md` sits at the root |
//! | `Frontmatter` | `SKILL.md` is UTF-8 and begins with a `---` line, then YAML, then a `---` line |
//! | `Yaml` | the frontmatter is valid YAML: one mapping with string keys, no duplicate keys, no aliases, finite numbers |
//! | `Name` | `name` is 1 to 64 of `a-z 0-9 -`, not starting or ending with `-`, without `--` |
//! | `NameMatchesFolder` | `name` equals the skill's folder name (the last segment of its skill path) |
//! | `Description` | `description` is a string of 1 to 1024 characters |
//! | `Compatibility` | `compatibility`, when present, is a string of 1 to 500 characters |
//! | `Metadata` | `metadata`, when present, maps strings to strings |
//! | `ReservedPrefix` | no `metadata` key starts with `io.modelcontextprotocol/` (reserved for MCP extensions) |
//! | `TooManyFiles` | a skill holds at most 512 files, `SKILL.md` and nested skills' files included |
//! | `TooLarge` | a skill's files add up to at most [`MAX_BYTES`], the extension's limit |
//! | `DuplicateName` | no two skills of the set share a name |
//!
//! On the wire a file of skill path `p` at path `f` within it is the resource
//! `skill://p/f` (segments percent-encoded where RFC 3986 asks), with the digest
//! `sha256:` and 64 lowercase hex digits of its bytes, and its size in bytes.

use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use yaml_rust2::Yaml;
use yaml_rust2::parser::{Event, Parser};

/// The extension's identifier, under `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/skills";
/// The URI scheme skills are served under.
pub const SCHEME: &str = "skill";
/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// The MIME type of `SKILL.md`.
pub const SKILL_MIME: &str = "text/markdown";
/// The MIME type of a directory resource.
pub const DIRECTORY_MIME: &str = "inode/directory";
/// Most files one skill holds, `SKILL.md` included.
pub const MAX_FILES: usize = 512;
/// Most bytes one skill's files add up to: the extension's limit per skill.
pub const MAX_BYTES: u64 = 16 * 1024 * 1024;
/// Most characters of a skill's `name`.
pub const MAX_NAME_CHARS: usize = 64;
/// Most characters of a skill's `description`.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Most characters of a skill's `compatibility`.
pub const MAX_COMPATIBILITY_CHARS: usize = 500;
/// The prefix of the `metadata` keys reserved for MCP extensions.
pub const RESERVED_METADATA_PREFIX: &str = "io.modelcontextprotocol/";

/// Which rule a skill set broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// A path that is not a relative `/`-separated path of plain segments, a file that is
    /// not a regular file (a symlink, say), or a `SKILL.md` at the root of the set.
    Path,
    /// A file that could not be read.
    Io,
    /// `SKILL.md` is not UTF-8 or does not begin with `---`-delimited frontmatter.
    Frontmatter,
    /// The frontmatter is not valid YAML, or not a mapping JSON can carry.
    Yaml,
    /// `name` is missing or breaks the naming rules.
    Name,
    /// `name` differs from the skill's folder name.
    NameMatchesFolder,
    /// `description` is missing, empty or too long.
    Description,
    /// `compatibility` is not a string of 1 to 500 characters.
    Compatibility,
    /// `metadata` is not a map of strings to strings.
    Metadata,
    /// A `metadata` key under the reserved `io.modelcontextprotocol/` prefix.
    ReservedPrefix,
    /// More than [`MAX_FILES`] files in one skill.
    TooManyFiles,
    /// More than [`MAX_BYTES`] bytes in one skill.
    TooLarge,
    /// Two skills with one name.
    DuplicateName,
}

impl Rule {
    /// The rule, stated in words (the same for a compile error and a build error).
    pub fn statement(self) -> &'static str {
        match self {
            Rule::Path => {
                "skill files are regular files at relative `/`-separated paths without empty, `.` or `..` segments, and each SKILL.md sits in a folder named after its skill"
            }
            Rule::Io => "every file of a skill must be readable",
            Rule::Frontmatter => {
                "SKILL.md is UTF-8 and begins with YAML frontmatter between two `---` lines"
            }
            Rule::Yaml => {
                "the frontmatter is one YAML mapping with string keys, no duplicate keys, no aliases and finite numbers"
            }
            Rule::Name => {
                "`name` is 1 to 64 characters of a-z, 0-9 and `-`, neither starting nor ending with `-`, without `--`"
            }
            Rule::NameMatchesFolder => "`name` equals the name of the skill's folder",
            Rule::Description => "`description` is a string of 1 to 1024 characters",
            Rule::Compatibility => "`compatibility` is a string of 1 to 500 characters",
            Rule::Metadata => "`metadata` maps strings to strings",
            Rule::ReservedPrefix => {
                "`metadata` keys starting with `io.modelcontextprotocol/` are reserved for MCP extensions"
            }
            Rule::TooManyFiles => "a skill holds at most 512 files, SKILL.md included",
            Rule::TooLarge => "a skill's files add up to at most 16 MiB (16,777,216 bytes)",
            Rule::DuplicateName => "no two skills of a set share a name",
        }
    }
}

/// Why a skill set is invalid: the file at fault (relative to the set's root), the rule,
/// and what about the file broke it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillError {
    /// The file at fault, relative to the set's root (`pdf/SKILL.md`).
    pub file: String,
    /// The rule it breaks.
    pub rule: Rule,
    /// What about the file breaks it.
    pub detail: String,
}

impl SkillError {
    fn new(file: impl Into<String>, rule: Rule, detail: impl Into<String>) -> Self {
        SkillError {
            file: file.into(),
            rule,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} ({})",
            self.file,
            self.detail,
            self.rule.statement()
        )
    }
}

impl std::error::Error for SkillError {}

/// One file of a skill set as the caller holds it: its path relative to the set's root
/// (`/`-separated) and its bytes.
#[derive(Clone, Copy, Debug)]
pub struct SourceFile<'a> {
    /// The path relative to the set's root, `/`-separated (`pdf/references/FORMS.md`).
    pub path: &'a str,
    /// The file's bytes.
    pub bytes: &'a [u8],
}

/// A checked skill set: its skills sorted by skill path, and its files sorted by path.
#[derive(Clone, Debug, PartialEq)]
pub struct SkillSet {
    /// The skills, sorted by skill path.
    pub skills: Vec<Skill>,
    /// Every file of some skill, once, sorted by path.
    pub files: Vec<File>,
}

/// One checked skill.
#[derive(Clone, Debug, PartialEq)]
pub struct Skill {
    /// The skill path: the folder's path from the set's root (`acme/billing/refunds`).
    pub path: String,
    /// The frontmatter's `name` (the skill path's last segment).
    pub name: String,
    /// The frontmatter's `description`.
    pub description: String,
    /// The URI of its `SKILL.md`: `skill://<skill-path>/SKILL.md`.
    pub uri: String,
    /// The frontmatter, verbatim, as a JSON object.
    pub frontmatter: Map<String, Value>,
    /// Its files (nested skills' included), as indexes into [`SkillSet::files`], in
    /// path order; `SKILL.md` is among them.
    pub files: Vec<usize>,
}

/// One file of a skill set, as the wire describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct File {
    /// The path relative to the set's root.
    pub path: String,
    /// Which of the checked [`SourceFile`]s it is (its index in the slice).
    pub source: usize,
    /// Its resource URI: `skill://<skill-path>/<file-path>`.
    pub uri: String,
    /// `sha256:` and the 64 lowercase hex digits of its bytes' SHA-256.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
    /// Its MIME type ([`mime_type`]).
    pub mime_type: &'static str,
    /// Whether it is served as text (UTF-8 of a textual type) rather than as a blob.
    pub text: bool,
}

/// A checked layout: which folders are skills and which files each holds, from paths and
/// sizes alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Each skill's path (sorted) with the indexes of its files in the checked input,
    /// in path order.
    pub skills: Vec<(String, Vec<usize>)>,
}

/// Checks the shape of a skill set from each file's path and size, before any file is
/// read: the paths, which folders are skills, the per-skill limits and duplicate names.
/// `files` are `(path, size)`; files outside every skill are left out of the layout.
pub fn check_layout(files: &[(&str, u64)]) -> Result<Layout, SkillError> {
    for (path, _) in files {
        check_path(path)?;
    }
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by(|&a, &b| files[a].0.cmp(files[b].0));
    for pair in order.windows(2) {
        if files[pair[0]].0 == files[pair[1]].0 {
            return Err(SkillError::new(
                files[pair[0]].0,
                Rule::Path,
                "the same path is given twice",
            ));
        }
    }
    let mut skills: Vec<(String, Vec<usize>)> = Vec::new();
    for &i in &order {
        let path = files[i].0;
        if path == SKILL_FILE {
            return Err(SkillError::new(
                path,
                Rule::Path,
                "a SKILL.md at the root of the skill set has no folder to name its skill",
            ));
        }
        if let Some(dir) = path.strip_suffix("/SKILL.md") {
            skills.push((dir.to_owned(), Vec::new()));
        }
    }
    skills.sort();
    let mut names: HashMap<&str, &str> = HashMap::new();
    for (dir, _) in &skills {
        let name = last_segment(dir);
        if let Some(first) = names.insert(name, dir) {
            return Err(SkillError::new(
                format!("{dir}/{SKILL_FILE}"),
                Rule::DuplicateName,
                format!("the skill {name:?} is also at {first}/{SKILL_FILE}"),
            ));
        }
    }
    for (dir, members) in &mut skills {
        let prefix = format!("{dir}/");
        let mut total: u64 = 0;
        for &i in &order {
            if files[i].0.starts_with(&prefix) {
                members.push(i);
                total = total.saturating_add(files[i].1);
            }
        }
        if members.len() > MAX_FILES {
            return Err(SkillError::new(
                format!("{dir}/{SKILL_FILE}"),
                Rule::TooManyFiles,
                format!(
                    "the skill holds {} files, more than {MAX_FILES}",
                    members.len()
                ),
            ));
        }
        if total > MAX_BYTES {
            return Err(SkillError::new(
                format!("{dir}/{SKILL_FILE}"),
                Rule::TooLarge,
                format!("the skill's files add up to {total} bytes, more than {MAX_BYTES}"),
            ));
        }
    }
    Ok(Layout { skills })
}

/// Checks a whole skill set and describes it as the wire carries it: every rule of the
/// module, each `SKILL.md`'s frontmatter parsed, each file's URI, digest, size and MIME
/// type. The first broken rule is returned, naming its file.
pub fn check_set(files: &[SourceFile<'_>]) -> Result<SkillSet, SkillError> {
    let sized: Vec<(&str, u64)> = files
        .iter()
        .map(|f| (f.path, f.bytes.len() as u64))
        .collect();
    let layout = check_layout(&sized)?;

    // Every file of some skill, once, with its URI taken from the innermost skill that
    // holds it (an enclosing skill's path is a prefix of the nested one's, so the URI is
    // the same either way: `skill://` and the file's path from the root).
    let mut members: Vec<usize> = layout
        .skills
        .iter()
        .flat_map(|(_, m)| m.iter().copied())
        .collect();
    members.sort_by(|&a, &b| files[a].path.cmp(files[b].path));
    members.dedup();
    let mut index_of: HashMap<usize, usize> = HashMap::new();
    let mut out_files = Vec::with_capacity(members.len());
    for source in members {
        let f = files[source];
        let (mime, text) = mime_type(f.path, f.bytes);
        index_of.insert(source, out_files.len());
        out_files.push(File {
            path: f.path.to_owned(),
            source,
            uri: uri_of(f.path),
            digest: digest(f.bytes),
            size: f.bytes.len() as u64,
            mime_type: mime,
            text,
        });
    }

    let by_path: HashMap<&str, &SourceFile<'_>> = files.iter().map(|f| (f.path, f)).collect();
    let mut skills = Vec::with_capacity(layout.skills.len());
    for (dir, m) in &layout.skills {
        let file = format!("{dir}/{SKILL_FILE}");
        let Some(source) = by_path.get(file.as_str()) else {
            return Err(SkillError::new(file, Rule::Io, "SKILL.md is missing"));
        };
        let text = std::str::from_utf8(source.bytes)
            .map_err(|_| SkillError::new(&file, Rule::Frontmatter, "SKILL.md is not UTF-8"))?;
        let frontmatter =
            frontmatter(text).map_err(|(rule, detail)| SkillError::new(&file, rule, detail))?;
        let (name, description) = check_frontmatter(&frontmatter)
            .map_err(|(rule, detail)| SkillError::new(&file, rule, detail))?;
        let folder = last_segment(dir);
        if name != folder {
            return Err(SkillError::new(
                &file,
                Rule::NameMatchesFolder,
                format!("the name {name:?} differs from its folder's name {folder:?}"),
            ));
        }
        let mut indexes: Vec<usize> = m.iter().filter_map(|i| index_of.get(i).copied()).collect();
        indexes.sort_by(|&a, &b| out_files[a].path.cmp(&out_files[b].path));
        skills.push(Skill {
            path: dir.clone(),
            name,
            description,
            uri: uri_of(&file),
            frontmatter,
            files: indexes,
        });
    }
    Ok(SkillSet {
        skills,
        files: out_files,
    })
}

/// Reads a skill set from a folder: every regular file below `root`, with paths relative
/// to it. The layout (paths, limits, duplicate names) is checked from the files' sizes
/// first, so an over-limit skill is refused before it is read, and only files within
/// some skill are read. Symbolic links are refused (they could reach outside the
/// folder); paths must be UTF-8. The files come back sorted by path.
pub fn read_folder(root: &Path) -> Result<Vec<(String, Vec<u8>)>, SkillError> {
    let mut found: Vec<(String, u64)> = Vec::new();
    walk(root, root, &mut found)?;
    let sized: Vec<(&str, u64)> = found.iter().map(|(p, s)| (p.as_str(), *s)).collect();
    let layout = check_layout(&sized)?;
    let mut wanted: Vec<usize> = layout
        .skills
        .iter()
        .flat_map(|(_, m)| m.iter().copied())
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut out = Vec::with_capacity(wanted.len());
    for i in wanted {
        let path = &found[i].0;
        let bytes = std::fs::read(root.join(path))
            .map_err(|e| SkillError::new(path.as_str(), Rule::Io, e.to_string()))?;
        out.push((path.clone(), bytes));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn walk(root: &Path, dir: &Path, found: &mut Vec<(String, u64)>) -> Result<(), SkillError> {
    let shown = |p: &Path| {
        p.strip_prefix(root)
            .unwrap_or(p)
            .to_string_lossy()
            .replace('\\', "/")
    };
    let entries = std::fs::read_dir(dir).map_err(|e| {
        let at = shown(dir);
        SkillError::new(
            if at.is_empty() { "." } else { &at },
            Rule::Io,
            e.to_string(),
        )
    })?;
    for entry in entries {
        let entry = entry.map_err(|e| SkillError::new(shown(dir), Rule::Io, e.to_string()))?;
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|e| SkillError::new(shown(&path), Rule::Io, e.to_string()))?;
        let relative = path.strip_prefix(root).unwrap_or(&path);
        let Some(relative) = relative.to_str() else {
            return Err(SkillError::new(
                shown(&path),
                Rule::Path,
                "the path is not UTF-8",
            ));
        };
        let relative = relative.replace(std::path::MAIN_SEPARATOR, "/");
        if kind.is_symlink() {
            return Err(SkillError::new(
                relative,
                Rule::Path,
                "symbolic links are not followed",
            ));
        } else if kind.is_dir() {
            walk(root, &path, found)?;
        } else if kind.is_file() {
            let size = entry
                .metadata()
                .map_err(|e| SkillError::new(&relative, Rule::Io, e.to_string()))?
                .len();
            found.push((relative, size));
        } else {
            return Err(SkillError::new(relative, Rule::Path, "not a regular file"));
        }
    }
    Ok(())
}

fn check_path(path: &str) -> Result<(), SkillError> {
    let bad = |why: &str| Err(SkillError::new(path, Rule::Path, why));
    if path.is_empty() {
        return bad("the path is empty");
    }
    if path.starts_with('/') {
        return bad("the path is absolute");
    }
    if path.contains('\\') {
        return bad("the path holds a backslash (paths are `/`-separated)");
    }
    for segment in path.split('/') {
        match segment {
            "" => return bad("the path has an empty segment"),
            "." | ".." => return bad("the path has a `.` or `..` segment"),
            s if s.chars().any(char::is_control) => {
                return bad("the path holds a control character");
            }
            _ => {}
        }
    }
    Ok(())
}

fn last_segment(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Whether `name` follows the naming rules: 1 to 64 characters of `a-z`, `0-9` and `-`,
/// neither starting nor ending with `-`, without `--`.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_CHARS
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The frontmatter of a `SKILL.md`, as a JSON object: the YAML between a first line
/// `---` and the next line `---` (trailing spaces and tabs allowed on it, `\r\n` line
/// ends too). Errors are a rule ([`Rule::Frontmatter`] or [`Rule::Yaml`]) and what broke
/// it; the fields themselves are checked by [`check_frontmatter`].
pub fn frontmatter(text: &str) -> Result<Map<String, Value>, (Rule, String)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or((
            Rule::Frontmatter,
            "SKILL.md does not begin with a `---` line".to_owned(),
        ))?;
    // The closing line: `---`, then only spaces or tabs, then a line end or the end.
    let mut yaml = None;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches('\n').trim_end_matches('\r');
        if let Some(after) = bare.strip_prefix("---")
            && after.bytes().all(|b| b == b' ' || b == b'\t')
        {
            yaml = Some(&rest[..at]);
            break;
        }
        at += line.len();
    }
    let yaml = yaml.ok_or((
        Rule::Frontmatter,
        "the frontmatter has no closing `---` line".to_owned(),
    ))?;
    parse_yaml(yaml).map_err(|e| (Rule::Yaml, e))
}

fn parse_yaml(yaml: &str) -> Result<Map<String, Value>, String> {
    // Aliases are refused before the document is built: the loader expands each by
    // copying, so a few nested aliases could make a document exponentially large.
    let mut parser = Parser::new_from_str(yaml);
    loop {
        match parser.next_token() {
            Ok((Event::StreamEnd, _)) => break,
            Ok((Event::Alias(_), mark)) => {
                return Err(format!(
                    "YAML aliases are not supported (line {})",
                    mark.line()
                ));
            }
            Ok(_) => {}
            Err(e) => return Err(format!("invalid YAML: {e}")),
        }
    }
    let docs =
        yaml_rust2::YamlLoader::load_from_str(yaml).map_err(|e| format!("invalid YAML: {e}"))?;
    match docs.as_slice() {
        [Yaml::Hash(_)] => match to_json(&docs[0])? {
            Value::Object(m) => Ok(m),
            _ => Err("the frontmatter is not a mapping".to_owned()),
        },
        [] => Err("the frontmatter is empty".to_owned()),
        [_] => Err("the frontmatter is not a mapping".to_owned()),
        _ => Err("the frontmatter holds more than one YAML document".to_owned()),
    }
}

fn to_json(yaml: &Yaml) -> Result<Value, String> {
    Ok(match yaml {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::Real(text) => {
            let n = yaml
                .as_f64()
                .and_then(Number::from_f64)
                .ok_or_else(|| format!("the number {text} is not finite"))?;
            Value::Number(n)
        }
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Array(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Yaml::Hash(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                let Yaml::String(key) = k else {
                    return Err(format!("the key {k:?} is not a string"));
                };
                out.insert(key.clone(), to_json(v)?);
            }
            Value::Object(out)
        }
        Yaml::Alias(_) => return Err("YAML aliases are not supported".to_owned()),
        Yaml::BadValue => return Err("a value does not match its YAML tag".to_owned()),
    })
}

/// Checks the fields of a parsed frontmatter: `name` ([`is_valid_name`]), `description`,
/// and, when present, `compatibility` and `metadata` (strings to strings, no key under
/// the reserved prefix). Returns the name and the description.
pub fn check_frontmatter(
    frontmatter: &Map<String, Value>,
) -> Result<(String, String), (Rule, String)> {
    let name = match frontmatter.get("name") {
        Some(Value::String(n)) if is_valid_name(n) => n.clone(),
        Some(Value::String(n)) => {
            return Err((
                Rule::Name,
                format!("the name {n:?} breaks the naming rules"),
            ));
        }
        Some(_) => return Err((Rule::Name, "`name` is not a string".to_owned())),
        None => return Err((Rule::Name, "the frontmatter has no `name`".to_owned())),
    };
    let description = match frontmatter.get("description") {
        Some(Value::String(d)) if d.is_empty() => {
            return Err((Rule::Description, "`description` is empty".to_owned()));
        }
        Some(Value::String(d)) if d.chars().count() > MAX_DESCRIPTION_CHARS => {
            return Err((
                Rule::Description,
                format!(
                    "`description` has {} characters, more than {MAX_DESCRIPTION_CHARS}",
                    d.chars().count()
                ),
            ));
        }
        Some(Value::String(d)) => d.clone(),
        Some(_) => {
            return Err((
                Rule::Description,
                "`description` is not a string".to_owned(),
            ));
        }
        None => {
            return Err((
                Rule::Description,
                "the frontmatter has no `description`".to_owned(),
            ));
        }
    };
    match frontmatter.get("compatibility") {
        None => {}
        Some(Value::String(c)) if !c.is_empty() && c.chars().count() <= MAX_COMPATIBILITY_CHARS => {
        }
        Some(_) => {
            return Err((
                Rule::Compatibility,
                "`compatibility` is not a string of 1 to 500 characters".to_owned(),
            ));
        }
    }
    match frontmatter.get("metadata") {
        None => {}
        Some(Value::Object(m)) => {
            for (key, value) in m {
                if key.starts_with(RESERVED_METADATA_PREFIX) {
                    return Err((
                        Rule::ReservedPrefix,
                        format!("the metadata key {key:?} uses the reserved prefix"),
                    ));
                }
                if !value.is_string() {
                    return Err((
                        Rule::Metadata,
                        format!("the metadata value of {key:?} is not a string (quote it)"),
                    ));
                }
            }
        }
        Some(_) => {
            return Err((Rule::Metadata, "`metadata` is not a mapping".to_owned()));
        }
    }
    Ok((name, description))
}

/// `sha256:` and the 64 lowercase hex digits of the SHA-256 of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in hash {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

/// The `skill://` URI of a path relative to the set's root (a file's, or a folder's with
/// no trailing slash). Each segment is percent-encoded where RFC 3986 asks: the first,
/// which is the URI's authority, as a `reg-name`; the others as path segments.
pub fn uri_of(path: &str) -> String {
    let mut out = String::with_capacity(SCHEME.len() + 3 + path.len());
    out.push_str(SCHEME);
    out.push_str("://");
    for (i, segment) in path.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        for &b in segment.as_bytes() {
            let plain = b.is_ascii_alphanumeric()
                || b"-._~!$&'()*+,;=".contains(&b)
                || (i > 0 && (b == b':' || b == b'@'));
            if plain {
                out.push(char::from(b));
            } else {
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                out.push('%');
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xf)]));
            }
        }
    }
    out
}

/// The MIME type of a skill file, from its name's extension (`SKILL.md` and other
/// Markdown are `text/markdown`), and whether it is served as text: a textual type whose
/// bytes are UTF-8. A file with an unknown extension is `text/plain` when its bytes are
/// UTF-8 and `application/octet-stream` otherwise.
pub fn mime_type(path: &str, bytes: &[u8]) -> (&'static str, bool) {
    let name = last_segment(path);
    let extension = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    let utf8 = std::str::from_utf8(bytes).is_ok();
    let (mime, textual) = match extension.as_str() {
        "md" | "markdown" => ("text/markdown", true),
        "txt" | "text" => ("text/plain", true),
        "py" => ("text/x-python", true),
        "sh" | "bash" => ("text/x-shellscript", true),
        "js" | "mjs" | "cjs" => ("text/javascript", true),
        "ts" => ("text/x-typescript", true),
        "rs" => ("text/x-rust", true),
        "html" | "htm" => ("text/html", true),
        "css" => ("text/css", true),
        "csv" => ("text/csv", true),
        "json" => ("application/json", true),
        "yaml" | "yml" => ("application/yaml", true),
        "toml" => ("application/toml", true),
        "xml" => ("application/xml", true),
        "svg" => ("image/svg+xml", true),
        "png" => ("image/png", false),
        "jpg" | "jpeg" => ("image/jpeg", false),
        "gif" => ("image/gif", false),
        "webp" => ("image/webp", false),
        "pdf" => ("application/pdf", false),
        "zip" => ("application/zip", false),
        "wasm" => ("application/wasm", false),
        _ if utf8 => ("text/plain", true),
        _ => ("application/octet-stream", false),
    };
    (mime, textual && utf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PDF: &str = "---\nname: pdf\ndescription: Work with PDF files\nlicense: MIT\nmetadata:\n  version: \"2.1\"\n---\n# PDF\n";

    fn set(files: &[(&str, &str)]) -> Result<SkillSet, SkillError> {
        let sources: Vec<SourceFile<'_>> = files
            .iter()
            .map(|(p, b)| SourceFile {
                path: p,
                bytes: b.as_bytes(),
            })
            .collect();
        check_set(&sources)
    }

    fn skill_md(name: &str, extra: &str) -> String {
        format!("---\nname: {name}\ndescription: d\n{extra}---\nbody\n")
    }

    #[test]
    fn a_set_is_described_as_the_wire_carries_it() {
        let set = set(&[
            ("pdf/SKILL.md", PDF),
            ("pdf/references/FORMS.md", "forms"),
            ("README.md", "outside every skill"),
        ])
        .expect("a valid set");
        assert_eq!(set.skills.len(), 1);
        let skill = &set.skills[0];
        assert_eq!(skill.path, "pdf");
        assert_eq!(skill.name, "pdf");
        assert_eq!(skill.uri, "skill://pdf/SKILL.md");
        assert_eq!(
            Value::Object(skill.frontmatter.clone()),
            serde_json::json!({"name": "pdf", "description": "Work with PDF files", "license": "MIT", "metadata": {"version": "2.1"}})
        );
        let uris: Vec<&str> = skill
            .files
            .iter()
            .map(|&i| set.files[i].uri.as_str())
            .collect();
        assert_eq!(
            uris,
            ["skill://pdf/SKILL.md", "skill://pdf/references/FORMS.md"]
        );
        let forms = &set.files[skill.files[1]];
        assert_eq!(forms.size, 5);
        assert_eq!(forms.source, 1);
        assert_eq!(forms.mime_type, "text/markdown");
        assert!(forms.text);
        assert_eq!(
            set.files.len(),
            2,
            "README.md outside every skill is left out"
        );
    }

    #[test]
    fn digests_are_sha256_in_lowercase_hex() {
        assert_eq!(
            digest(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(digest(b"").len(), 7 + 64);
    }

    #[test]
    fn nested_skills_are_skills_and_files_of_the_enclosing_one() {
        let outer = skill_md("outer", "");
        let inner = skill_md("inner", "");
        let set = set(&[
            ("acme/outer/SKILL.md", &outer),
            ("acme/outer/inner/SKILL.md", &inner),
            ("acme/outer/inner/notes.txt", "n"),
        ])
        .expect("a valid set");
        let paths: Vec<&str> = set.skills.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(paths, ["acme/outer", "acme/outer/inner"]);
        assert_eq!(set.skills[0].files.len(), 3);
        assert_eq!(set.skills[1].files.len(), 2);
        assert_eq!(set.skills[1].uri, "skill://acme/outer/inner/SKILL.md");
        assert_eq!(set.files.len(), 3, "each file once in the set");
    }

    #[test]
    fn names_follow_the_agent_skills_rules() {
        for ok in ["a", "pdf", "git-workflow", "a1-b2", &"a".repeat(64)] {
            assert!(is_valid_name(ok), "{ok}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "a--b",
            "A",
            "a_b",
            "a.b",
            "é",
            &"a".repeat(65),
        ] {
            assert!(!is_valid_name(bad), "{bad:?}");
        }
        let e = set(&[("Bad/SKILL.md", &skill_md("Bad", ""))]).expect_err("bad name");
        assert_eq!(e.rule, Rule::Name);
        assert_eq!(e.file, "Bad/SKILL.md");
    }

    #[test]
    fn the_name_must_equal_the_folder() {
        let e = set(&[("pdf-tools/SKILL.md", PDF)]).expect_err("mismatch");
        assert_eq!(e.rule, Rule::NameMatchesFolder);
        assert!(
            e.to_string()
                .starts_with("pdf-tools/SKILL.md: the name \"pdf\"")
        );
    }

    #[test]
    fn frontmatter_must_be_present_and_valid_yaml() {
        let cases: &[(&str, Rule)] = &[
            ("# no frontmatter\n", Rule::Frontmatter),
            ("---\nname: a\ndescription: d\n", Rule::Frontmatter),
            ("---\nname: [a\n---\n", Rule::Yaml),
            ("---\n- a\n---\n", Rule::Yaml),
            ("---\n---\n", Rule::Yaml),
            ("---\nname: a\nname: b\ndescription: d\n---\n", Rule::Yaml),
            (
                "---\nname: a\ndescription: d\nx: &x [1]\ny: *x\n---\n",
                Rule::Yaml,
            ),
            ("---\nname: a\ndescription: d\n1: one\n---\n", Rule::Yaml),
            ("---\nname: a\ndescription: d\nx: .inf\n---\n", Rule::Yaml),
            ("---\ndescription: d\n---\n", Rule::Name),
            ("---\nname: 7\ndescription: d\n---\n", Rule::Name),
            ("---\nname: a\n---\n", Rule::Description),
            ("---\nname: a\ndescription: \"\"\n---\n", Rule::Description),
            (
                "---\nname: a\ndescription: d\ncompatibility: \"\"\n---\n",
                Rule::Compatibility,
            ),
            (
                "---\nname: a\ndescription: d\nmetadata: [1]\n---\n",
                Rule::Metadata,
            ),
            (
                "---\nname: a\ndescription: d\nmetadata:\n  v: 2.1\n---\n",
                Rule::Metadata,
            ),
            (
                "---\nname: a\ndescription: d\nmetadata:\n  io.modelcontextprotocol/x: y\n---\n",
                Rule::ReservedPrefix,
            ),
        ];
        for (text, rule) in cases {
            let e = set(&[("a/SKILL.md", text)]).expect_err(text);
            assert_eq!(e.rule, *rule, "{text:?}: {e}");
            assert_eq!(e.file, "a/SKILL.md");
        }
        let e = check_set(&[SourceFile {
            path: "a/SKILL.md",
            bytes: b"---\nname: a\xff\n---\n",
        }])
        .expect_err("not UTF-8");
        assert_eq!(e.rule, Rule::Frontmatter);
    }

    #[test]
    fn frontmatter_is_read_as_the_wire_needs_it() {
        let text = "---\r\nname: a\r\ndescription: >\r\n  folded\r\n  text\r\nn: 3\r\nf: 1.5\r\nt: true\r\nz: ~\r\nd: 2024-01-01\r\nl: [x, 2]\r\n---  \r\nbody";
        let fm = frontmatter(text).expect("valid");
        assert_eq!(
            Value::Object(fm),
            serde_json::json!({"name": "a", "description": "folded text\n", "n": 3, "f": 1.5, "t": true, "z": null, "d": "2024-01-01", "l": ["x", 2]})
        );
        // The closing line is `---` alone (spaces and tabs after it allowed), not `----`.
        assert_eq!(
            frontmatter("---\na: b\n----\n").map_err(|e| e.0),
            Err(Rule::Frontmatter)
        );
        assert!(
            frontmatter("---\nname: a\n---").is_ok(),
            "a closing line at the end of the file"
        );
        // At the description's bound and past it.
        let at = format!("---\nname: a\ndescription: {}\n---\n", "d".repeat(1024));
        assert!(set(&[("a/SKILL.md", &at)]).is_ok());
        let past = format!("---\nname: a\ndescription: {}\n---\n", "d".repeat(1025));
        assert_eq!(
            set(&[("a/SKILL.md", &past)]).map_err(|e| e.rule).err(),
            Some(Rule::Description)
        );
        let at = format!(
            "---\nname: a\ndescription: d\ncompatibility: {}\n---\n",
            "c".repeat(500)
        );
        assert!(set(&[("a/SKILL.md", &at)]).is_ok());
        let past = format!(
            "---\nname: a\ndescription: d\ncompatibility: {}\n---\n",
            "c".repeat(501)
        );
        assert_eq!(
            set(&[("a/SKILL.md", &past)]).map_err(|e| e.rule).err(),
            Some(Rule::Compatibility)
        );
    }

    #[test]
    fn a_skill_holds_at_most_512_files() {
        let mut files: Vec<(String, u64)> = vec![("s/SKILL.md".to_owned(), 10)];
        files.extend((1..512).map(|i| (format!("s/f{i}.txt"), 1)));
        fn sized(f: &[(String, u64)]) -> Vec<(&str, u64)> {
            f.iter().map(|(p, s)| (p.as_str(), *s)).collect()
        }
        let layout = check_layout(&sized(&files)).expect("512 files");
        assert_eq!(layout.skills[0].1.len(), 512);
        files.push(("s/f512.txt".to_owned(), 1));
        let e = check_layout(&sized(&files)).expect_err("513 files");
        assert_eq!(e.rule, Rule::TooManyFiles);
        assert_eq!(e.file, "s/SKILL.md");
        assert!(e.detail.contains("513"));
    }

    #[test]
    fn a_skill_holds_at_most_16_mib() {
        let at = [("s/SKILL.md", 100), ("s/big.bin", MAX_BYTES - 100)];
        assert!(check_layout(&at).is_ok());
        let past = [("s/SKILL.md", 100), ("s/big.bin", MAX_BYTES - 99)];
        let e = check_layout(&past).expect_err("one byte over");
        assert_eq!(e.rule, Rule::TooLarge);
        assert!(e.detail.contains("16777217"));
        // Files outside every skill do not count.
        let outside = [("s/SKILL.md", 100), ("big.bin", MAX_BYTES * 2)];
        assert!(check_layout(&outside).is_ok());
    }

    #[test]
    fn names_are_unique_and_paths_are_plain() {
        let a = skill_md("a", "");
        let e = set(&[("x/a/SKILL.md", &a), ("y/a/SKILL.md", &a)]).expect_err("duplicate");
        assert_eq!(e.rule, Rule::DuplicateName);
        assert_eq!(e.file, "y/a/SKILL.md");
        for bad in [
            "SKILL.md",
            "/a/SKILL.md",
            "a//SKILL.md",
            "a/../SKILL.md",
            "a\\b",
            "",
        ] {
            let e = check_layout(&[(bad, 1)]).expect_err(bad);
            assert_eq!(e.rule, Rule::Path, "{bad:?}");
        }
        let e = check_layout(&[("a/x", 1), ("a/x", 1)]).expect_err("twice");
        assert_eq!(e.rule, Rule::Path);
    }

    #[test]
    fn uris_escape_what_rfc_3986_asks() {
        assert_eq!(uri_of("pdf/SKILL.md"), "skill://pdf/SKILL.md");
        assert_eq!(uri_of("a b/x:y@z/n%1.md"), "skill://a%20b/x:y@z/n%251.md");
        assert_eq!(uri_of("a:b@c/d"), "skill://a%3Ab%40c/d");
        assert_eq!(uri_of("é/x"), "skill://%C3%A9/x");
    }

    #[test]
    fn mime_types_come_from_the_extension() {
        assert_eq!(mime_type("a/SKILL.md", b"x"), ("text/markdown", true));
        assert_eq!(mime_type("a/s.py", b"x"), ("text/x-python", true));
        assert_eq!(mime_type("a/i.png", b"x"), ("image/png", false));
        assert_eq!(mime_type("a/LICENSE", b"x"), ("text/plain", true));
        assert_eq!(
            mime_type("a/blob", b"\xff\xfe"),
            ("application/octet-stream", false)
        );
        assert_eq!(mime_type("a/bad.txt", b"\xff"), ("text/plain", false));
    }

    #[test]
    fn folders_are_read_with_the_layout_checked_first() {
        let root = std::env::temp_dir().join(format!("presa-rules-skill-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("pdf/references")).expect("mkdir");
        std::fs::write(root.join("pdf/SKILL.md"), PDF).expect("write");
        std::fs::write(root.join("pdf/references/FORMS.md"), "forms").expect("write");
        std::fs::write(root.join("notes.txt"), "outside").expect("write");
        let files = read_folder(&root).expect("readable");
        let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["pdf/SKILL.md", "pdf/references/FORMS.md"]);
        std::fs::create_dir_all(root.join("twin/pdf")).expect("mkdir");
        std::fs::write(root.join("twin/pdf/SKILL.md"), PDF).expect("write");
        let e = read_folder(&root).expect_err("duplicate");
        assert_eq!(e.rule, Rule::DuplicateName);
        let _ = std::fs::remove_dir_all(&root);
        let e = read_folder(&root).expect_err("missing folder");
        assert_eq!(e.rule, Rule::Io);
    }
}
