//! The comparison of two surfaces: every difference found, each classified as breaking,
//! additive or cosmetic by what it means to a client written against the earlier one.

use super::{LISTINGS, SCOPES};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::fmt;

/// What a difference means to a client written against the earlier surface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ChangeClass {
    /// Such a client may now fail: something it used is gone, or something it sent is
    /// refused, or something it reads may now look different.
    Breaking,
    /// Such a client keeps working; there is more it could use.
    Additive,
    /// Text for people and models changed (descriptions, titles, icons, annotations);
    /// nothing a client sends or reads is affected.
    Cosmetic,
}

impl ChangeClass {
    /// `breaking`, `additive` or `cosmetic`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeClass::Breaking => "breaking",
            ChangeClass::Additive => "additive",
            ChangeClass::Cosmetic => "cosmetic",
        }
    }
}

impl fmt::Display for ChangeClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One difference between two surfaces.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SurfaceChange {
    /// What it means to a client.
    pub class: ChangeClass,
    /// The item it is in: `tool "search"`, `prompt "review"`, `resource "notes://a"`,
    /// `template "notes://{id}"`, or `server` (the `server/discover` result).
    pub item: String,
    /// Where in the item, as a JSON pointer (`/inputSchema/properties/limit`); empty for
    /// the item as a whole.
    pub path: String,
    /// What happened, in words: `removed tool`, `new required argument`, `narrowed
    /// type`, …
    pub what: String,
    /// The value before (`None` when there was none).
    pub before: Option<Value>,
    /// The value after (`None` when there is none).
    pub after: Option<Value>,
}

/// `class item path: what: before → after`; an item added or removed whole reads
/// `class item: what`, its value being the whole item.
impl fmt::Display for SurfaceChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:<9} {}", self.class.as_str(), self.item)?;
        if self.path.is_empty() {
            return write!(f, ": {}", self.what);
        }
        write!(f, " {}", self.path)?;
        write!(
            f,
            ": {}: {} → {}",
            self.what,
            shown(self.before.as_ref()),
            shown(self.after.as_ref())
        )
    }
}

/// Longest value a report line shows in full.
const SHOWN_CHARS: usize = 120;

fn shown(value: Option<&Value>) -> String {
    let Some(value) = value else {
        return "(absent)".to_owned();
    };
    let text = value.to_string();
    if text.chars().count() <= SHOWN_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(SHOWN_CHARS).collect();
    cut.push('…');
    cut
}

/// Every difference between two surfaces, each classified; its `Display` is the report,
/// one line per difference, the breaking ones first:
///
/// ```text
/// breaking  tool "search" /inputSchema/properties/limit: new required argument: (absent) → {"type":"integer"}
/// additive  tool "fetch": new tool
/// ```
///
/// How each difference is classified, an input schema's first (what the server accepts:
/// narrowing breaks callers), then an output schema's (what the server returns: any
/// change a reader may not expect breaks it):
///
/// | difference | class |
/// | --- | --- |
/// | tool, prompt, resource or template removed | breaking |
/// | tool, prompt, resource or template added | additive |
/// | argument (input property) removed | breaking |
/// | argument renamed (one removed, one added with the same schema) | breaking |
/// | new required argument; an optional argument made required | breaking |
/// | new optional argument; a required argument made optional | additive |
/// | input `type` loses a type (`["string","null"]` → `"string"`, `number` → `integer`, any → one) | breaking |
/// | input `type` gains a type | additive |
/// | input `enum` loses a value, or appears | breaking |
/// | input `enum` gains a value, or goes | additive |
/// | input `const` appears or changes | breaking |
/// | input bound added or tightened (`maxLength`, `maximum`, `minLength`, `minimum`, `maxItems`, `minItems`, exclusive bounds, …) | breaking |
/// | input bound removed or loosened | additive |
/// | input `pattern`, `format`, `multipleOf` added or changed; `uniqueItems` turned on | breaking |
/// | input `pattern`, `format`, `multipleOf` removed; `uniqueItems` turned off | additive |
/// | input `additionalProperties` closed (to `false`) | breaking |
/// | input `additionalProperties` opened | additive |
/// | input `anyOf`/`oneOf` alternative removed / added | breaking / additive |
/// | input `default` changed (callers omitting the argument get another value) | breaking |
/// | `x-mcp-header` added, removed or renamed | breaking |
/// | output schema removed | breaking |
/// | output schema added | additive |
/// | output field (property) removed, or no longer required (it may be absent) | breaking |
/// | output field added, or made required | additive |
/// | output `type`, `enum`, `const`, bound or any other keyword changed, either way | breaking |
/// | scope added to an item, or to every request (`Authorization::required_scopes`) | breaking |
/// | scope removed | additive |
/// | protocol version no longer supported / newly supported | breaking / additive |
/// | a capability (or a member of one) removed / added | breaking / additive |
/// | prompt argument removed; new required prompt argument; one made required | breaking |
/// | new optional prompt argument; one made optional | additive |
/// | `description`, `title`, `icons`, `annotations`, `instructions`, schema `examples`, `$comment`, `deprecated`; a resource's or template's `name` | cosmetic |
/// | anything else removed or changed (a resource's `mimeType`, an item's `_meta`, an unknown keyword added to an input schema) | breaking |
/// | anything else added (but a schema keyword) | additive |
///
/// A keyword the comparison does not know is breaking when it appears in an input
/// schema or changes, since it may narrow what is accepted, and additive when it goes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SurfaceDiff {
    changes: Vec<SurfaceChange>,
}

impl SurfaceDiff {
    /// Every difference, the breaking ones first, then additive, then cosmetic; in
    /// surface order within a class.
    pub fn changes(&self) -> &[SurfaceChange] {
        &self.changes
    }

    /// Whether the surfaces are the same.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Whether any difference is breaking.
    pub fn is_breaking(&self) -> bool {
        self.changes
            .iter()
            .any(|c| c.class == ChangeClass::Breaking)
    }

    /// The differences of `class`.
    pub fn of_class(&self, class: ChangeClass) -> impl Iterator<Item = &SurfaceChange> {
        self.changes.iter().filter(move |c| c.class == class)
    }
}

impl fmt::Display for SurfaceDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for change in &self.changes {
            writeln!(f, "{change}")?;
        }
        Ok(())
    }
}

/// Which side of a call a schema describes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    /// What the server accepts: narrowing it breaks callers.
    Input,
    /// What the server returns: any change a reader may not expect breaks it.
    Output,
}

/// Schema keywords meant for people and models.
const COSMETIC_KEYWORDS: [&str; 5] = ["description", "title", "examples", "$comment", "deprecated"];

/// Bounds that narrow what is valid as they fall.
const UPPER_BOUNDS: [&str; 6] = [
    "maximum",
    "exclusiveMaximum",
    "maxLength",
    "maxItems",
    "maxProperties",
    "maxContains",
];

/// Bounds that narrow what is valid as they rise.
const LOWER_BOUNDS: [&str; 6] = [
    "minimum",
    "exclusiveMinimum",
    "minLength",
    "minItems",
    "minProperties",
    "minContains",
];

/// Keywords whose appearance or change narrows what is valid.
const CONSTRAINTS: [&str; 4] = ["pattern", "format", "multipleOf", "const"];

/// The comparison of two surface values (normalised).
pub(super) fn compare(before: &Value, after: &Value) -> SurfaceDiff {
    let mut diff = Differ {
        item: "server".into(),
        changes: Vec::new(),
    };
    diff.server(
        before.get("server").unwrap_or(&Value::Null),
        after.get("server").unwrap_or(&Value::Null),
    );
    for (member, _, key) in LISTINGS {
        let kind = match member {
            "tools" => "tool",
            "prompts" => "prompt",
            "resources" => "resource",
            _ => "template",
        };
        let keyed = |surface: &Value| -> Vec<(String, Value)> {
            let items = surface.get(member).and_then(Value::as_array);
            items
                .into_iter()
                .flatten()
                .map(|i| {
                    let k = i.get(key).and_then(Value::as_str).unwrap_or_default();
                    (k.to_owned(), i.clone())
                })
                .collect()
        };
        let (b, a) = (keyed(before), keyed(after));
        for (name, item) in &b {
            diff.item = format!("{kind} {}", Value::from(name.as_str()));
            match a.iter().find(|(n, _)| n == name) {
                None => diff.push(
                    ChangeClass::Breaking,
                    "",
                    format!("removed {kind}"),
                    Some(item),
                    None,
                ),
                Some((_, after_item)) => diff.item_fields(kind, item, after_item),
            }
        }
        for (name, item) in &a {
            if !b.iter().any(|(n, _)| n == name) {
                diff.item = format!("{kind} {}", Value::from(name.as_str()));
                diff.push(
                    ChangeClass::Additive,
                    "",
                    format!("new {kind}"),
                    None,
                    Some(item),
                );
            }
        }
    }
    let mut changes = diff.changes;
    changes.sort_by_key(|c| c.class);
    SurfaceDiff { changes }
}

struct Differ {
    item: String,
    changes: Vec<SurfaceChange>,
}

/// `path` followed by the JSON pointer token of `name`.
fn child(path: &str, name: &str) -> String {
    format!("{path}/{}", name.replace('~', "~0").replace('/', "~1"))
}

fn object(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
}

/// The strings of a list member (a set).
fn strings(v: Option<&Value>) -> BTreeSet<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

impl Differ {
    fn push(
        &mut self,
        class: ChangeClass,
        path: &str,
        what: impl Into<String>,
        before: Option<&Value>,
        after: Option<&Value>,
    ) {
        self.changes.push(SurfaceChange {
            class,
            item: self.item.clone(),
            path: path.to_owned(),
            what: what.into(),
            before: before.cloned(),
            after: after.cloned(),
        });
    }

    /// The `server/discover` result.
    fn server(&mut self, before: &Value, after: &Value) {
        self.members(before, after, "", |d, name, path, b, a| match name {
            "supportedVersions" => d.set(
                path,
                b,
                a,
                (
                    ChangeClass::Breaking,
                    "protocol version no longer supported",
                ),
                (ChangeClass::Additive, "protocol version newly supported"),
            ),
            SCOPES => d.scopes(path, b, a),
            "instructions" => d.cosmetic(path, name, b, a),
            _ => d.generic(path, b, a),
        });
    }

    /// Calls `each` with every member either object has, in name order, and its values.
    fn members(
        &mut self,
        before: &Value,
        after: &Value,
        path: &str,
        mut each: impl FnMut(&mut Self, &str, &str, Option<&Value>, Option<&Value>),
    ) {
        let (b, a) = (object(Some(before)), object(Some(after)));
        let names: BTreeSet<&String> = b.into_iter().chain(a).flat_map(Map::keys).collect();
        for name in names {
            let bv = b.and_then(|m| m.get(name));
            let av = a.and_then(|m| m.get(name));
            if bv != av {
                each(self, name, &child(path, name), bv, av);
            }
        }
    }

    /// One item present on both sides.
    fn item_fields(&mut self, kind: &str, before: &Value, after: &Value) {
        self.members(before, after, "", |d, name, path, b, a| {
            match (kind, name) {
                (_, "title" | "description" | "icons" | "annotations") => {
                    d.cosmetic(path, name, b, a)
                }
                (_, SCOPES) => d.scopes(path, b, a),
                ("tool", "inputSchema") => d.schema(
                    Dir::Input,
                    path,
                    b.unwrap_or(&Value::Bool(true)),
                    a.unwrap_or(&Value::Bool(true)),
                ),
                ("tool", "outputSchema") => match (b, a) {
                    (Some(b), Some(a)) => d.schema(Dir::Output, path, b, a),
                    (None, a) => d.push(ChangeClass::Additive, path, "new output schema", None, a),
                    (b, None) => d.push(
                        ChangeClass::Breaking,
                        path,
                        "output schema removed",
                        b,
                        None,
                    ),
                },
                ("prompt", "arguments") => d.prompt_arguments(path, b, a),
                ("resource" | "template", "name") => d.cosmetic(path, name, b, a),
                _ => d.generic(path, b, a),
            }
        });
    }

    fn cosmetic(&mut self, path: &str, name: &str, b: Option<&Value>, a: Option<&Value>) {
        let what = match name {
            "description" => "description changed".to_owned(),
            other => format!("{other} changed"),
        };
        self.push(ChangeClass::Cosmetic, path, what, b, a);
    }

    /// Anything without a rule of its own: objects member by member; a value added is
    /// additive, one removed or changed breaking.
    fn generic(&mut self, path: &str, b: Option<&Value>, a: Option<&Value>) {
        match (b, a) {
            (Some(b @ Value::Object(_)), Some(a @ Value::Object(_))) => {
                self.members(b, a, path, |d, _, path, b, a| d.generic(path, b, a))
            }
            (None, a) => self.push(ChangeClass::Additive, path, "added", None, a),
            (b, None) => self.push(ChangeClass::Breaking, path, "removed", b, None),
            (b, a) => self.push(ChangeClass::Breaking, path, "changed", b, a),
        }
    }

    /// A list read as a set: each value gone is `gone`, each new one `new`.
    fn set(
        &mut self,
        path: &str,
        b: Option<&Value>,
        a: Option<&Value>,
        gone: (ChangeClass, &str),
        new: (ChangeClass, &str),
    ) {
        let list = |v: Option<&Value>| v.and_then(Value::as_array).cloned().unwrap_or_default();
        let (b, a) = (list(b), list(a));
        for v in b.iter().filter(|v| !a.contains(v)) {
            self.push(gone.0, path, gone.1, Some(v), None);
        }
        for v in a.iter().filter(|v| !b.contains(v)) {
            self.push(new.0, path, new.1, None, Some(v));
        }
    }

    /// Scopes an item (or every request) needs: each new one is stricter.
    fn scopes(&mut self, path: &str, b: Option<&Value>, a: Option<&Value>) {
        self.set(
            path,
            b,
            a,
            (ChangeClass::Additive, "scope no longer needed"),
            (ChangeClass::Breaking, "stricter scope: newly needed"),
        );
    }

    /// A prompt's `arguments`, by name.
    fn prompt_arguments(&mut self, path: &str, b: Option<&Value>, a: Option<&Value>) {
        let named = |v: Option<&Value>| -> Vec<(String, Value)> {
            v.and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|arg| {
                    let name = arg.get("name").and_then(Value::as_str).unwrap_or_default();
                    (name.to_owned(), arg.clone())
                })
                .collect()
        };
        let required = |arg: &Value| arg.get("required") == Some(&Value::Bool(true));
        let (b, a) = (named(b), named(a));
        for (name, arg) in &b {
            let path = child(path, name);
            match a.iter().find(|(n, _)| n == name) {
                None => self.push(
                    ChangeClass::Breaking,
                    &path,
                    "removed argument",
                    Some(arg),
                    None,
                ),
                Some((_, after)) => {
                    self.members(arg, after, &path, |d, key, p, bv, av| match key {
                        "required" if required(after) => {
                            d.push(ChangeClass::Breaking, p, "argument became required", bv, av)
                        }
                        "required" => {
                            d.push(ChangeClass::Additive, p, "argument became optional", bv, av)
                        }
                        "title" | "description" => d.cosmetic(p, key, bv, av),
                        _ => d.generic(p, bv, av),
                    })
                }
            }
        }
        for (name, arg) in a.iter().filter(|(n, _)| !b.iter().any(|(m, _)| m == n)) {
            let (class, what) = if required(arg) {
                (ChangeClass::Breaking, "new required argument")
            } else {
                (ChangeClass::Additive, "new optional argument")
            };
            self.push(class, &child(path, name), what, None, Some(arg));
        }
    }

    /// Two schemas at `path`, read as `dir` says.
    fn schema(&mut self, dir: Dir, path: &str, b: &Value, a: &Value) {
        if b == a {
            return;
        }
        match (b, a) {
            (Value::Object(bo), Value::Object(ao)) => self.schema_object(dir, path, bo, ao),
            _ => {
                // `true` (or `{}`) accepts anything, `false` nothing.
                let narrowed = *b == Value::Bool(true) || *a == Value::Bool(false);
                let (class, what) = match (dir, narrowed) {
                    (Dir::Input, false) => (ChangeClass::Additive, "widened schema"),
                    (Dir::Input, true) => (ChangeClass::Breaking, "narrowed schema"),
                    (Dir::Output, false) => (ChangeClass::Breaking, "widened output schema"),
                    (Dir::Output, true) => (ChangeClass::Breaking, "narrowed output schema"),
                };
                self.push(class, path, what, Some(b), Some(a));
            }
        }
    }

    fn schema_object(
        &mut self,
        dir: Dir,
        path: &str,
        b: &Map<String, Value>,
        a: &Map<String, Value>,
    ) {
        if b.get("properties") != a.get("properties") || b.get("required") != a.get("required") {
            self.properties(dir, path, b, a);
        }
        let names: BTreeSet<&String> = b.keys().chain(a.keys()).collect();
        for name in names {
            let (bv, av) = (b.get(name), a.get(name));
            if bv == av {
                continue;
            }
            let at = child(path, name);
            match name.as_str() {
                "type" => self.types(dir, &at, bv, av),
                "enum" => self.enumeration(dir, &at, bv, av),
                // Read together, above: which names are new decides what `required` means.
                "properties" | "required" => {}
                "additionalProperties" => self.additional(dir, &at, bv, av),
                "items" => self.schema(
                    dir,
                    &at,
                    bv.unwrap_or(&Value::Bool(true)),
                    av.unwrap_or(&Value::Bool(true)),
                ),
                "x-mcp-header" => {
                    self.push(ChangeClass::Breaking, &at, "header mapping changed", bv, av)
                }
                "anyOf" | "oneOf" if dir == Dir::Input => self.set(
                    &at,
                    bv,
                    av,
                    (ChangeClass::Breaking, "alternative removed"),
                    (ChangeClass::Additive, "new alternative"),
                ),
                n if COSMETIC_KEYWORDS.contains(&n) => self.cosmetic(&at, n, bv, av),
                n if dir == Dir::Output => {
                    let what = match (bv, av) {
                        (None, _) => format!("output {n} added"),
                        (_, None) => format!("output {n} removed"),
                        _ => format!("output {n} changed"),
                    };
                    self.push(ChangeClass::Breaking, &at, what, bv, av);
                }
                n if UPPER_BOUNDS.contains(&n) || LOWER_BOUNDS.contains(&n) => {
                    let upper = UPPER_BOUNDS.contains(&n);
                    let tightened = match (bv.and_then(Value::as_f64), av.and_then(Value::as_f64)) {
                        (_, None) => false,
                        (None, Some(_)) => true,
                        (Some(b), Some(a)) => (upper && a < b) || (!upper && a > b),
                    };
                    if tightened {
                        self.push(ChangeClass::Breaking, &at, format!("{n} tightened"), bv, av);
                    } else {
                        self.push(ChangeClass::Additive, &at, format!("{n} loosened"), bv, av);
                    }
                }
                "uniqueItems" => {
                    if av == Some(&Value::Bool(true)) {
                        self.push(ChangeClass::Breaking, &at, "uniqueItems required", bv, av);
                    } else {
                        self.push(ChangeClass::Additive, &at, "uniqueItems lifted", bv, av);
                    }
                }
                "default" => self.push(ChangeClass::Breaking, &at, "default changed", bv, av),
                n => match av {
                    None => self.push(ChangeClass::Additive, &at, format!("{n} removed"), bv, av),
                    Some(_) if CONSTRAINTS.contains(&n) => {
                        let what = if bv.is_none() { "added" } else { "changed" };
                        self.push(ChangeClass::Breaking, &at, format!("{n} {what}"), bv, av)
                    }
                    Some(_) => {
                        let what = if bv.is_none() { "added" } else { "changed" };
                        self.push(
                            ChangeClass::Breaking,
                            &at,
                            format!("keyword {n} {what}"),
                            bv,
                            av,
                        )
                    }
                },
            }
        }
    }

    /// `type`: absent means any type; `number` covers `integer`.
    fn types(&mut self, dir: Dir, path: &str, b: Option<&Value>, a: Option<&Value>) {
        let set = |v: Option<&Value>| -> Option<BTreeSet<String>> {
            match v? {
                Value::String(t) => Some(BTreeSet::from([t.clone()])),
                list => Some(strings(Some(list))),
            }
        };
        let covers = |set: &Option<BTreeSet<String>>, t: &str| match set {
            None => true,
            Some(s) => s.contains(t) || (t == "integer" && s.contains("number")),
        };
        let (bs, as_) = (set(b), set(a));
        let lost = match &bs {
            None => as_.is_some(),
            Some(s) => s.iter().any(|t| !covers(&as_, t)),
        };
        let gained = match &as_ {
            None => bs.is_some(),
            Some(s) => s.iter().any(|t| !covers(&bs, t)),
        };
        let (class, what) = match (dir, lost, gained) {
            (Dir::Input, true, _) => (ChangeClass::Breaking, "narrowed type"),
            (Dir::Input, false, _) => (ChangeClass::Additive, "widened type"),
            (Dir::Output, true, false) => (ChangeClass::Breaking, "narrowed output type"),
            (Dir::Output, false, true) => (ChangeClass::Breaking, "widened output type"),
            (Dir::Output, _, _) => (ChangeClass::Breaking, "output type changed"),
        };
        self.push(class, path, what, b, a);
    }

    /// `enum`: absent means any value.
    fn enumeration(&mut self, dir: Dir, path: &str, b: Option<&Value>, a: Option<&Value>) {
        match (b, a, dir) {
            (None, _, Dir::Input) => {
                self.push(ChangeClass::Breaking, path, "narrowed to an enum", b, a)
            }
            (_, None, Dir::Input) => self.push(ChangeClass::Additive, path, "enum lifted", b, a),
            (_, _, Dir::Input) => self.set(
                path,
                b,
                a,
                (ChangeClass::Breaking, "enum value removed"),
                (ChangeClass::Additive, "new enum value"),
            ),
            (None, _, Dir::Output) => self.push(
                ChangeClass::Breaking,
                path,
                "output narrowed to an enum",
                b,
                a,
            ),
            (_, None, Dir::Output) => {
                self.push(ChangeClass::Breaking, path, "output enum lifted", b, a)
            }
            (_, _, Dir::Output) => self.set(
                path,
                b,
                a,
                (ChangeClass::Breaking, "output enum value removed"),
                (ChangeClass::Breaking, "new output enum value"),
            ),
        }
    }

    /// `additionalProperties`: absent means any.
    fn additional(&mut self, dir: Dir, path: &str, b: Option<&Value>, a: Option<&Value>) {
        let t = Value::Bool(true);
        let (b, a) = (b.unwrap_or(&t), a.unwrap_or(&t));
        let closed = |v: &Value| *v == Value::Bool(false);
        match (dir, closed(b), closed(a)) {
            (Dir::Input, false, true) => self.push(
                ChangeClass::Breaking,
                path,
                "additionalProperties closed",
                Some(b),
                Some(a),
            ),
            (Dir::Input, true, false) => self.push(
                ChangeClass::Additive,
                path,
                "additionalProperties opened",
                Some(b),
                Some(a),
            ),
            _ => self.schema(dir, path, b, a),
        }
    }

    /// `properties` and `required` of the object schema at `path`.
    fn properties(&mut self, dir: Dir, path: &str, b: &Map<String, Value>, a: &Map<String, Value>) {
        let empty = Map::new();
        let bp = object(b.get("properties")).unwrap_or(&empty);
        let ap = object(a.get("properties")).unwrap_or(&empty);
        let (br, ar) = (strings(b.get("required")), strings(a.get("required")));
        let props = child(path, "properties");
        let noun = match (dir, path) {
            (Dir::Input, "/inputSchema") => "argument",
            (Dir::Input, _) => "property",
            (Dir::Output, _) => "output field",
        };
        let mut removed: Vec<&String> = bp.keys().filter(|k| !ap.contains_key(*k)).collect();
        let mut added: Vec<&String> = ap.keys().filter(|k| !bp.contains_key(*k)).collect();
        let mut renamed: Vec<&String> = Vec::new();
        if dir == Dir::Input {
            // A property gone and another come with the same schema: a rename.
            removed.retain(|old| {
                let same = added.iter().position(|new| bp.get(*old) == ap.get(*new));
                let Some(i) = same else { return true };
                let new = added.remove(i);
                renamed.push(new);
                self.push(
                    ChangeClass::Breaking,
                    &props,
                    format!("renamed {noun}"),
                    Some(&Value::from(old.as_str())),
                    Some(&Value::from(new.as_str())),
                );
                false
            });
        }
        for name in removed {
            self.push(
                ChangeClass::Breaking,
                &child(&props, name),
                format!("removed {noun}"),
                bp.get(name),
                None,
            );
        }
        for name in &added {
            let (class, what) = match (dir, ar.contains(*name)) {
                (Dir::Input, true) => (ChangeClass::Breaking, format!("new required {noun}")),
                (Dir::Input, false) => (ChangeClass::Additive, format!("new optional {noun}")),
                (Dir::Output, _) => (ChangeClass::Additive, format!("new {noun}")),
            };
            self.push(class, &child(&props, name), what, None, ap.get(*name));
        }
        for (name, bs) in bp {
            if let Some(as_) = ap.get(name) {
                self.schema(dir, &child(&props, name), bs, as_);
            }
        }
        // Names required on one side only, of properties on both (or named by neither).
        let required = child(path, "required");
        let known = |n: &&String| {
            !added.contains(n)
                && !renamed.contains(n)
                && (ap.contains_key(*n) || !bp.contains_key(*n))
        };
        for name in ar.difference(&br).filter(|n| known(n)) {
            let (class, what) = match dir {
                Dir::Input => (ChangeClass::Breaking, format!("{noun} became required")),
                Dir::Output => (ChangeClass::Additive, format!("{noun} now always present")),
            };
            self.push(
                class,
                &required,
                what,
                None,
                Some(&Value::from(name.as_str())),
            );
        }
        for name in br.difference(&ar).filter(|n| ap.contains_key(*n)) {
            let (class, what) = match dir {
                Dir::Input => (ChangeClass::Additive, format!("{noun} became optional")),
                Dir::Output => (ChangeClass::Breaking, format!("{noun} may be absent")),
            };
            self.push(
                class,
                &required,
                what,
                Some(&Value::from(name.as_str())),
                None,
            );
        }
    }
}
