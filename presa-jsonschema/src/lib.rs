//! presa's JSON Schema 2020-12 validator: [`Validator::compile`] compiles a schema once
//! into a tree of keyword checks, then [`Validator::is_valid`] answers "valid or not" for
//! each instance and [`Validator::validate`] words the first few problems of an invalid
//! one, each with its instance path. What it leaves out is refused by name as
//! [`CompileError::Unsupported`], never skipped. The crate's README follows: what it
//! implements, every refusal, and its bounds.
//!
#![doc = include_str!("../README.md")]

use serde_json::{Map, Number, Value};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt::Write as _;

/// The 2020-12 dialect, the only `$schema` recognised.
const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// How many problems an error message lists.
const MAX_PROBLEMS: usize = 5;

/// How many schema steps (subschemas, references) evaluation may take on one instance
/// value before it stops: a reference cycle that reads no instance would otherwise never
/// end. The count starts again at each step into the instance (a property, an item), so
/// a deep instance is not mistaken for a cycle; the instance's own depth bounds the rest.
const MAX_EVAL_DEPTH: u32 = 128;

/// How many schema steps may be in progress at once, counting every step into the
/// instance too (unlike [`MAX_EVAL_DEPTH`]): each is a pair of stack frames, so this
/// bounds the stack a client's arguments can make evaluation use, whatever chain of
/// references the schema has between two levels of the instance (without it, arguments
/// 20 levels deep under a 40-reference chain overflowed a 2 MiB worker stack and aborted
/// the process). A recursive schema of a few steps per level still reaches serde_json's
/// own nesting limit (128) well within it.
const MAX_EVAL_FRAMES: u32 = 512;

/// Why a schema could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompileError {
    /// The schema is malformed: no validator accepts it.
    Invalid(String),
    /// The schema is well formed, but uses something this validator does not implement
    /// (the keyword or feature is named).
    Unsupported(String),
}

impl std::error::Error for CompileError {}

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompileError::Invalid(why) | CompileError::Unsupported(why) => f.write_str(why),
        }
    }
}

type Compiled<T> = Result<T, CompileError>;

fn invalid<T>(why: impl Into<String>) -> Compiled<T> {
    Err(CompileError::Invalid(why.into()))
}

/// The default of [`Validator::max_steps`]: how many steps one pass of evaluation may
/// take. A step is one visit of a (subschema, instance value) pair, a remembered answer
/// included. Every value of an instance is visited a number of times fixed by the schema
/// (see the crate's doc, "Cost"), so a budget in steps bounds the time any instance can
/// take; past it the instance is invalid, with the problem "the value is too complex to
/// evaluate against this schema".
pub const DEFAULT_MAX_STEPS: u64 = 1_000_000;

/// The problem reported when evaluation runs out of steps.
const TOO_COMPLEX: &str = "the value is too complex to evaluate against this schema";

/// What is known of a memoised (subschema, instance value) pair during one validation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Known {
    /// The value passes the subschema.
    Valid,
    /// It does not; its problems were not recorded.
    Invalid,
    /// It does not, and its problems were recorded (or there was no room left for
    /// them): evaluating it again with a report would only repeat them.
    Reported,
}

/// A bound evaluation reached. Each makes the whole instance invalid, whatever keyword
/// the step was under (`not` included): evaluation fails closed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stop {
    /// More than [`MAX_EVAL_DEPTH`] steps on one value without stepping into it.
    Cycle,
    /// More than [`MAX_EVAL_FRAMES`] steps in progress at once.
    Frames,
    /// More than [`Validator::max_steps`] steps in one pass.
    Budget,
}

impl Stop {
    fn message(self, max_steps: u64) -> String {
        match self {
            Stop::Cycle => {
                "the schema nests too deeply to evaluate (a reference cycle?)".to_owned()
            }
            Stop::Frames => "the value nests too deeply to evaluate against this schema".to_owned(),
            Stop::Budget => format!("{TOO_COMPLEX} (more than {max_steps} steps)"),
        }
    }
}

/// The state of one pass of evaluation: what each memoised (subschema, instance value)
/// pair answered, the steps taken and in progress, and the bound reached, if any.
///
/// Evaluation is pure, so a pair needs evaluating once per validation. Which pairs are
/// kept is decided per subschema at compile time ([`memoised`]): those of a subschema
/// that more than one place applies (two `$ref`s to it, `allOf` branches that both lead
/// to it, a `$ref` beside keywords that reach it again, the root under `#`, a name
/// matched by `properties` and by `patternProperties` whose schemas both lead to it) and
/// that applies subschemas itself. Any other subschema is evaluated at a value once per
/// evaluation of the place that applies it, which is itself either kept or applied from
/// one place, up to the root, evaluated once. By induction, every pair of a subschema and
/// an array or object is evaluated at most once without a report and once with one in a
/// pass, and every value is visited a number of times that depends on the schema alone:
/// time linear in the instance, whatever keywords recurse. A cycle of references enters
/// through a subschema applied from two places (the way in, the way round), so every
/// recursive type is kept at least once per turn.
///
/// Of a memoised subschema, pairs with a scalar are kept only once [`MEMO_SCALARS_FROM`]
/// steps were taken on it in place: a scalar near the top of its evaluation costs no
/// more to evaluate again than to look up, and keeping it would make the memo as long as
/// a flat array of scalars under a recursive type, several times the memory of the
/// arguments themselves.
///
/// The key is the value's address, which names its location in the instance (the
/// instance is borrowed, unchanged, for the whole validation); a value that is not part
/// of the instance (a `propertyNames` name) is evaluated with a memo of its own. The key
/// leaves out the depth, which only decides anything past [`MAX_EVAL_DEPTH`], where
/// evaluation stops.
struct Memo {
    seen: HashMap<(NodeId, *const Value), Known>,
    /// Steps in progress, held to [`MAX_EVAL_FRAMES`].
    frames: u32,
    /// Steps taken in this pass, held to `max_steps`.
    steps: u64,
    /// [`Validator::max_steps`].
    max_steps: u64,
    /// The bound reached, after which every step answers "invalid" at once.
    stop: Option<Stop>,
    /// The bound's problem, worded with its instance path, when a report was kept.
    stop_line: Option<String>,
}

impl Memo {
    fn new(max_steps: u64) -> Memo {
        Memo {
            seen: HashMap::new(),
            frames: 0,
            steps: 0,
            max_steps,
            stop: None,
            stop_line: None,
        }
    }

    /// Stops evaluation at `stop`, noting where when reporting; answers `false`.
    fn halt(&mut self, stop: Stop, report: &Option<Report<'_>>) -> bool {
        self.stop = Some(stop);
        if let Some(r) = report {
            self.stop_line = Some(line(&r.path, &stop.message(self.max_steps)));
        }
        false
    }

    /// The problem of the bound reached, if any.
    fn stopped(&self) -> Option<String> {
        let stop = self.stop?;
        Some(
            self.stop_line
                .clone()
                .unwrap_or_else(|| stop.message(self.max_steps)),
        )
    }
}

/// Steps in place after which a scalar's evaluations are memoised too (see [`Memo`]).
const MEMO_SCALARS_FROM: u32 = 4;

/// A compiled schema: built once by [`Validator::compile`], then used for any number of
/// instances (it is `Send` and `Sync`; evaluation keeps its state on the caller's stack).
#[derive(Debug)]
pub struct Validator {
    nodes: Vec<Node>,
    /// Per node, whether its evaluations are memoised (see [`Memo`]).
    memoised: Vec<bool>,
    /// The steps one pass of evaluation may take.
    max_steps: u64,
    /// The root's checks, when they have the flat shape (see [`Flat`]).
    flat: Option<Flat>,
}

/// The shape most tool input schemas have (`#[tool]`'s for plain parameters among them):
/// an object whose named properties constrain at most their type, no pattern properties,
/// other members allowed or refused, some names required. [`Flat::passes`] checks it in
/// one pass over the instance's members. An instance it does not pass is evaluated in
/// full, which gives the verdict and the problems, so it only ever answers "valid" early.
/// (The full evaluation of `#[tool]`'s schema for one string parameter was about 650
/// instructions of every call.)
#[derive(Debug)]
struct Flat {
    /// The named properties and the types each allows ([`ANY`] for a `true` or empty
    /// schema, none for `false`).
    named: Named<u8>,
    /// Whether members the schema does not name are refused.
    closed: bool,
    /// The required names.
    required: Vec<String>,
}

impl Flat {
    /// The root's checks as a [`Flat`], when they have its shape.
    fn of(nodes: &[Node]) -> Option<Flat> {
        let Node::Checks(checks) = nodes.first()? else {
            return None;
        };
        let types = |id: NodeId| match nodes.get(id)? {
            Node::Bool(true) => Some(ANY),
            Node::Bool(false) => Some(0),
            Node::Checks(checks) => match checks.as_slice() {
                [] => Some(ANY),
                [Check::Type(t)] => Some(*t),
                _ => None,
            },
            Node::Pending => None,
        };
        let mut allowed = Vec::new();
        let mut closed = false;
        let mut required = Vec::new();
        for check in checks {
            match check {
                Check::Type(t) if t & OBJECT != 0 => {}
                Check::Required(names) => required.extend(names.iter().cloned()),
                Check::Properties {
                    named,
                    patterns,
                    additional,
                } if patterns.is_empty() => {
                    closed = match additional {
                        None => false,
                        Some(a) => match nodes.get(*a)? {
                            Node::Bool(allowed) => !allowed,
                            _ => return None,
                        },
                    };
                    for (name, id) in &named.list {
                        allowed.push((name.clone(), types(*id)?));
                    }
                }
                _ => return None,
            }
        }
        Some(Flat {
            named: Named::new(allowed),
            closed,
            required,
        })
    }

    /// Whether `v` passes every check (`false` may also mean "not an object": the full
    /// evaluation decides then).
    #[inline]
    fn passes(&self, v: &Value) -> bool {
        let Value::Object(o) = v else {
            return false;
        };
        for (key, value) in o {
            match self.named.get(key) {
                Some(types) if type_of(value) & types == 0 => return false,
                Some(_) => {}
                None if self.closed => return false,
                None => {}
            }
        }
        self.required.iter().all(|name| o.contains_key(name))
    }
}

/// Index of a node in [`Validator::nodes`]; the root is 0.
type NodeId = usize;

/// Per node, whether its evaluations are memoised: whether more than one place applies
/// it (the root counts as applied once, by the caller) and it applies subschemas itself
/// (see [`Memo`] for why exactly these).
fn memoised(nodes: &[Node]) -> Vec<bool> {
    let mut applied = vec![0u32; nodes.len()];
    if let Some(root) = applied.first_mut() {
        *root = 1;
    }
    let mut applies = vec![false; nodes.len()];
    for (id, node) in nodes.iter().enumerate() {
        let Node::Checks(checks) = node else {
            continue;
        };
        for check in checks {
            check.each_subschema(|sub| {
                applies[id] = true;
                applied[sub] = applied[sub].saturating_add(1);
            });
        }
    }
    applied
        .iter()
        .zip(&applies)
        .map(|(count, applies)| *count > 1 && *applies)
        .collect()
}

#[derive(Debug)]
enum Node {
    /// `true` or `false`.
    Bool(bool),
    /// A schema object's checks, in the order they run.
    Checks(Vec<Check>),
    /// Reserved while its schema is being compiled (a reference may point back to it).
    Pending,
}

/// JSON types, as a bit set.
const NULL: u8 = 1;
const BOOLEAN: u8 = 2;
const OBJECT: u8 = 4;
const ARRAY: u8 = 8;
const NUMBER: u8 = 16;
const STRING: u8 = 32;
const INTEGER: u8 = 64;
/// Every type.
const ANY: u8 = NULL | BOOLEAN | OBJECT | ARRAY | NUMBER | STRING | INTEGER;

/// The `properties` of one schema object: in the schema's order (the order problems are
/// reported in), and indexed by name for the members looked up one by one. What each
/// name holds is its schema, or, in a [`Flat`], the types it allows.
#[derive(Debug)]
struct Named<T = NodeId> {
    /// The names and what they hold, in the schema's order.
    list: Vec<(String, T)>,
    /// Indices into `list`, sorted by name (names are unique: they are an object's keys).
    by_name: Box<[usize]>,
}

impl<T: Copy> Named<T> {
    /// Indexes `list`, whatever its order (with serde_json's `preserve_order`, a
    /// schema's keys come in the order written).
    fn new(list: Vec<(String, T)>) -> Named<T> {
        let mut by_name: Box<[usize]> = (0..list.len()).collect();
        by_name.sort_unstable_by(|a, b| list[*a].0.cmp(&list[*b].0));
        Named { list, by_name }
    }

    /// What the property named `key` holds, if the schema names it.
    fn get(&self, key: &str) -> Option<T> {
        let at = self
            .by_name
            .binary_search_by(|i| self.list[*i].0.as_str().cmp(key))
            .ok()?;
        Some(self.list[self.by_name[at]].1)
    }
}

#[derive(Debug)]
enum Check {
    Type(u8),
    Enum(Vec<Value>),
    Const(Value),
    MultipleOf(Number),
    Minimum(Number),
    Maximum(Number),
    ExclusiveMinimum(Number),
    ExclusiveMaximum(Number),
    MinLength(u64),
    MaxLength(u64),
    Pattern(Pattern),
    MinItems(u64),
    MaxItems(u64),
    UniqueItems,
    Items {
        prefix: Vec<NodeId>,
        rest: Option<NodeId>,
    },
    Contains {
        schema: NodeId,
        min: u64,
        max: Option<u64>,
    },
    MinProperties(u64),
    MaxProperties(u64),
    Required(Vec<String>),
    DependentRequired(Vec<(String, Vec<String>)>),
    DependentSchemas(Vec<(String, NodeId)>),
    Properties {
        named: Named,
        patterns: Vec<(Pattern, NodeId)>,
        additional: Option<NodeId>,
    },
    PropertyNames(NodeId),
    AllOf(Vec<NodeId>),
    AnyOf(Vec<NodeId>),
    OneOf(Vec<NodeId>),
    Not(NodeId),
    IfThenElse {
        condition: NodeId,
        then: Option<NodeId>,
        otherwise: Option<NodeId>,
    },
    Ref(NodeId),
}

impl Check {
    /// Calls `f` with each subschema this check applies, once per place it names one.
    fn each_subschema(&self, mut f: impl FnMut(NodeId)) {
        match self {
            Check::Items { prefix, rest } => prefix.iter().chain(rest).copied().for_each(f),
            Check::Contains { schema, .. }
            | Check::PropertyNames(schema)
            | Check::Not(schema)
            | Check::Ref(schema) => f(*schema),
            Check::DependentSchemas(deps) => deps.iter().for_each(|(_, s)| f(*s)),
            Check::Properties {
                named,
                patterns,
                additional,
            } => {
                named.list.iter().for_each(|(_, s)| f(*s));
                patterns.iter().for_each(|(_, s)| f(*s));
                additional.iter().copied().for_each(f);
            }
            Check::AllOf(all) | Check::AnyOf(all) | Check::OneOf(all) => {
                all.iter().copied().for_each(f)
            }
            Check::IfThenElse {
                condition,
                then,
                otherwise,
            } => [Some(*condition), *then, *otherwise]
                .into_iter()
                .flatten()
                .for_each(f),
            Check::Type(_)
            | Check::Enum(_)
            | Check::Const(_)
            | Check::MultipleOf(_)
            | Check::Minimum(_)
            | Check::Maximum(_)
            | Check::ExclusiveMinimum(_)
            | Check::ExclusiveMaximum(_)
            | Check::MinLength(_)
            | Check::MaxLength(_)
            | Check::Pattern(_)
            | Check::MinItems(_)
            | Check::MaxItems(_)
            | Check::UniqueItems
            | Check::MinProperties(_)
            | Check::MaxProperties(_)
            | Check::Required(_)
            | Check::DependentRequired(_) => {}
        }
    }
}

/// A compiled `pattern`, with its source for messages.
#[derive(Debug)]
struct Pattern {
    source: String,
    regex: regex_lite::Regex,
}

impl Pattern {
    fn compile(source: &str) -> Compiled<Pattern> {
        let Some(lite) = ecma_to_lite(source) else {
            return Err(CompileError::Unsupported(format!(
                "pattern {source:?}, which the regex-lite engine cannot run as ECMA-262 means \
                 it (`\\S` in a class, `[]` or `[^]`)"
            )));
        };
        match regex_lite::Regex::new(&lite) {
            Ok(regex) => Ok(Pattern {
                source: source.to_owned(),
                regex,
            }),
            Err(e) => Err(CompileError::Unsupported(format!(
                "pattern {source:?}, which the regex-lite engine cannot run (lookaround, \
                 backreferences and Unicode classes are beyond it): {e}"
            ))),
        }
    }
}

/// ECMA-262 white space and line terminators, what its `\s` matches (regex-lite's `\s` is
/// ASCII only), as the inside of a character class.
const ECMA_SPACE: &str = r"\x{9}-\x{D}\x{20}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";

/// Rewrites an ECMA-262 pattern where regex-lite would read it differently and still
/// compile it: `\s`/`\S` (Unicode in ECMA), `.` (ECMA's excludes `\r`, U+2028 and
/// U+2029), and `[` inside a class (a literal in ECMA; a nested or POSIX class in
/// regex-lite). `None` for `\S` inside a class, which a class cannot spell, and for
/// `[]`/`[^]`.
fn ecma_to_lite(source: &str) -> Option<String> {
    let mut out = String::with_capacity(source.len());
    let mut in_class = false;
    let mut chars = source.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('s') if in_class => out.push_str(ECMA_SPACE),
                Some('s') => {
                    let _ = write!(out, "[{ECMA_SPACE}]");
                }
                Some('S') if in_class => return None,
                Some('S') => {
                    let _ = write!(out, "[^{ECMA_SPACE}]");
                }
                Some(next) => {
                    out.push('\\');
                    out.push(next);
                }
                None => out.push('\\'),
            },
            '[' if in_class => out.push_str(r"\["),
            '[' => {
                in_class = true;
                out.push('[');
                if chars.clone().next() == Some('^') {
                    out.push('^');
                    chars.next();
                }
                // `[]` and `[^]` are ECMA's empty and full classes; regex-lite would read
                // the `]` as a literal.
                if chars.clone().next() == Some(']') {
                    return None;
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            '&' | '~' if in_class => {
                // Literals in ECMA; `&&` and `~~` are class operators in regex-lite.
                out.push('\\');
                out.push(c);
            }
            '.' if !in_class => out.push_str(r"[^\n\r\x{2028}\x{2029}]"),
            _ => out.push(c),
        }
    }
    Some(out)
}

/// Keywords this validator refuses rather than ignores (their meaning would be lost).
const UNSUPPORTED: [&str; 8] = [
    "unevaluatedProperties",
    "unevaluatedItems",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "$vocabulary",
    // Draft 7's `dependentRequired` + `dependentSchemas`; the `jsonschema` crate still
    // applies it under 2020-12, so ignoring it would disagree silently.
    "dependencies",
];

impl Validator {
    /// Compiles `schema` (a schema object or boolean), a whole document: `$ref`s are
    /// resolved within it, once, here.
    ///
    /// # Errors
    ///
    /// [`CompileError::Invalid`] for a schema no validator accepts (a keyword with a value
    /// of the wrong form, a `$ref` naming nothing); [`CompileError::Unsupported`] for a
    /// well-formed one that uses what this validator leaves out (see the crate's doc).
    pub fn compile(schema: &Value) -> Compiled<Validator> {
        if let Value::Object(root) = schema {
            if let Some(dialect) = root.get("$schema") {
                match dialect.as_str() {
                    Some(DRAFT_2020_12) => {}
                    Some(other) => {
                        return Err(CompileError::Unsupported(format!(
                            "$schema {other:?} (only draft 2020-12 is implemented)"
                        )));
                    }
                    None => return invalid("$schema must be a string"),
                }
            }
            if let Some(id) = root.get("$id")
                && !id.is_string()
            {
                return invalid("$id must be a string");
            }
        }
        let mut compiler = Compiler {
            root: schema,
            nodes: Vec::new(),
            seen: HashMap::new(),
            anchors: HashMap::new(),
            depth: 0,
        };
        compiler.collect_anchors(schema, true)?;
        compiler.node(schema, true)?;
        Ok(Validator {
            flat: Flat::of(&compiler.nodes),
            memoised: memoised(&compiler.nodes),
            nodes: compiler.nodes,
            max_steps: DEFAULT_MAX_STEPS,
        })
    }

    /// Sets how many steps one pass of evaluation may take ([`DEFAULT_MAX_STEPS`] unless
    /// set). A step is one visit of a (subschema, instance value) pair; an instance that
    /// needs more is invalid, with the problem "the value is too complex to evaluate
    /// against this schema". [`Validator::is_valid`] makes one pass, and so does
    /// [`Validator::validate`] on a valid instance; on an invalid one it makes a second,
    /// with its own budget, to word the problems.
    #[must_use]
    pub fn max_steps(mut self, steps: u64) -> Validator {
        self.max_steps = steps;
        self
    }

    /// Whether `instance` is valid.
    #[inline]
    pub fn is_valid(&self, instance: &Value) -> bool {
        if self.flat.as_ref().is_some_and(|flat| flat.passes(instance)) {
            return true;
        }
        let mut memo = Memo::new(self.max_steps);
        self.eval(0, instance, &mut None, &mut memo, 0) && memo.stop.is_none()
    }

    /// Validates `instance`.
    ///
    /// # Errors
    ///
    /// The instance's first few problems (at most five), each after the JSON Pointer of
    /// the instance location it is at, separated by `; `, for example
    /// `/tags/1: 7 is not of type "string"; "n" is a required property`. When evaluation
    /// reached one of its bounds (see the crate's doc), that bound's problem alone.
    #[inline]
    pub fn validate(&self, instance: &Value) -> Result<(), String> {
        if self.flat.as_ref().is_some_and(|flat| flat.passes(instance)) {
            return Ok(());
        }
        let mut memo = Memo::new(self.max_steps);
        let ok = self.eval(0, instance, &mut None, &mut memo, 0);
        let first = memo.stop;
        match first {
            None if ok => return Ok(()),
            // Wording the problems would take as many steps again.
            Some(Stop::Budget) => return Err(Stop::Budget.message(self.max_steps)),
            // The answers kept are those of a complete evaluation: the second pass
            // reuses them, skipping every pair already found valid.
            None => memo.steps = 0,
            // Evaluated again from the start, to find where the bound was reached.
            Some(_) => memo = Memo::new(self.max_steps),
        }
        let mut report = Some(Report::default());
        self.eval(0, instance, &mut report, &mut memo, 0);
        if let Some(stopped) = memo.stopped() {
            return Err(stopped);
        }
        if let Some(stop) = first {
            return Err(stop.message(self.max_steps));
        }
        let problems = report.map(|r| r.problems).unwrap_or_default();
        if problems.is_empty() {
            // Not expected: every failing check records a problem.
            return Err("the value does not match the schema".to_owned());
        }
        Err(problems.join("; "))
    }

    /// Evaluates node `id` against `v` (one step). With a report, problems are recorded
    /// and evaluation goes on to find more (up to [`MAX_PROBLEMS`]); without one, it
    /// stops at the first. `depth` counts the steps taken on `v` in place.
    fn eval<'v>(
        &self,
        id: NodeId,
        v: &'v Value,
        report: &mut Option<Report<'v>>,
        memo: &mut Memo,
        depth: u32,
    ) -> bool {
        if memo.stop.is_some() {
            return false;
        }
        memo.steps += 1;
        if memo.steps > memo.max_steps {
            return memo.halt(Stop::Budget, report);
        }
        if depth > MAX_EVAL_DEPTH {
            return memo.halt(Stop::Cycle, report);
        }
        if memo.frames >= MAX_EVAL_FRAMES {
            return memo.halt(Stop::Frames, report);
        }
        let key = (self.memoised[id]
            && (v.is_object() || v.is_array() || depth >= MEMO_SCALARS_FROM))
            .then_some((id, v as *const Value));
        if let Some(key) = key {
            match memo.seen.get(&key) {
                Some(Known::Valid) => return true,
                Some(Known::Reported) => return false,
                Some(Known::Invalid) if report.is_none() => return false,
                Some(Known::Invalid) | None => {}
            }
        }
        memo.frames += 1;
        let ok = self.eval_checks(id, v, report, memo, depth);
        memo.frames -= 1;
        if let Some(key) = key
            && memo.stop.is_none()
        {
            let known = match (ok, report) {
                (true, _) => Known::Valid,
                (false, None) => Known::Invalid,
                (false, Some(_)) => Known::Reported,
            };
            memo.seen.insert(key, known);
        }
        ok
    }

    /// [`Validator::eval`] past its bounds and its memo.
    fn eval_checks<'v>(
        &self,
        id: NodeId,
        v: &'v Value,
        report: &mut Option<Report<'v>>,
        memo: &mut Memo,
        depth: u32,
    ) -> bool {
        let checks = match &self.nodes[id] {
            Node::Bool(true) => return true,
            Node::Bool(false) => {
                note(report, || "no value is allowed here".to_owned());
                return false;
            }
            Node::Checks(checks) => checks,
            Node::Pending => return false,
        };
        let mut ok = true;
        for check in checks {
            if !self.check(check, v, report, memo, depth + 1) {
                ok = false;
                match report {
                    Some(r) if r.problems.len() < MAX_PROBLEMS => {}
                    _ => return false,
                }
            }
        }
        ok
    }

    /// Whether `v` passes `id`, without recording anything.
    fn passes(&self, id: NodeId, v: &Value, memo: &mut Memo, depth: u32) -> bool {
        self.eval(id, v, &mut None, memo, depth)
    }

    fn check<'v>(
        &self,
        check: &Check,
        v: &'v Value,
        report: &mut Option<Report<'v>>,
        memo: &mut Memo,
        depth: u32,
    ) -> bool {
        match check {
            Check::Type(types) => {
                type_of(v) & types != 0
                    || fail(report, || {
                        format!("{} is not of type {}", show(v), type_names(*types))
                    })
            }
            Check::Enum(values) => {
                values.iter().any(|e| equal(e, v))
                    || fail(report, || {
                        format!("{} is not one of the allowed values", show(v))
                    })
            }
            Check::Const(c) => {
                equal(c, v) || fail(report, || format!("{} is not {}", show(v), show(c)))
            }
            Check::MultipleOf(m) => match v {
                Value::Number(n) if !is_multiple(n, m) => {
                    fail(report, || format!("{n} is not a multiple of {m}"))
                }
                _ => true,
            },
            Check::Minimum(limit) => bound(report, v, limit, &[Ordering::Less], "less than"),
            Check::Maximum(limit) => bound(report, v, limit, &[Ordering::Greater], "greater than"),
            Check::ExclusiveMinimum(limit) => bound(
                report,
                v,
                limit,
                &[Ordering::Less, Ordering::Equal],
                "less than or equal to",
            ),
            Check::ExclusiveMaximum(limit) => bound(
                report,
                v,
                limit,
                &[Ordering::Greater, Ordering::Equal],
                "greater than or equal to",
            ),
            Check::MinLength(min) => match v {
                Value::String(s) if (s.chars().count() as u64) < *min => fail(report, || {
                    format!("{} is shorter than {min} characters", show(v))
                }),
                _ => true,
            },
            Check::MaxLength(max) => match v {
                Value::String(s) if s.chars().count() as u64 > *max => fail(report, || {
                    format!("{} is longer than {max} characters", show(v))
                }),
                _ => true,
            },
            Check::Pattern(p) => match v {
                Value::String(s) if !p.regex.is_match(s) => fail(report, || {
                    format!("{} does not match the pattern {:?}", show(v), p.source)
                }),
                _ => true,
            },
            Check::MinItems(min) => match v {
                Value::Array(a) if (a.len() as u64) < *min => {
                    fail(report, || format!("the array has fewer than {min} items"))
                }
                _ => true,
            },
            Check::MaxItems(max) => match v {
                Value::Array(a) if a.len() as u64 > *max => {
                    fail(report, || format!("the array has more than {max} items"))
                }
                _ => true,
            },
            Check::UniqueItems => match v {
                Value::Array(a) if !all_unique(a) => {
                    fail(report, || "the array's items are not unique".to_owned())
                }
                _ => true,
            },
            Check::Items { prefix, rest } => {
                let Value::Array(items) = v else {
                    return true;
                };
                let mut ok = true;
                for (i, item) in items.iter().enumerate() {
                    let schema = match prefix.get(i) {
                        Some(s) => *s,
                        None => match rest {
                            Some(s) => *s,
                            None => break,
                        },
                    };
                    if !self.eval_at(schema, item, Seg::Index(i), report, memo) {
                        ok = false;
                        if report.is_none() {
                            return false;
                        }
                    }
                }
                ok
            }
            Check::Contains { schema, min, max } => {
                let Value::Array(items) = v else {
                    return true;
                };
                let found = items
                    .iter()
                    // A step into the instance, as in `eval_at`.
                    .filter(|item| self.passes(*schema, item, memo, 0))
                    .count() as u64;
                if found < *min {
                    return fail(report, || {
                        if *min == 1 {
                            "no item of the array matches the `contains` schema".to_owned()
                        } else {
                            format!("fewer than {min} items match the `contains` schema")
                        }
                    });
                }
                match max {
                    Some(max) if found > *max => fail(report, || {
                        format!("more than {max} items match the `contains` schema")
                    }),
                    _ => true,
                }
            }
            Check::MinProperties(min) => match v {
                Value::Object(o) if (o.len() as u64) < *min => fail(report, || {
                    format!("the object has fewer than {min} properties")
                }),
                _ => true,
            },
            Check::MaxProperties(max) => match v {
                Value::Object(o) if o.len() as u64 > *max => fail(report, || {
                    format!("the object has more than {max} properties")
                }),
                _ => true,
            },
            Check::Required(names) => {
                let Value::Object(o) = v else {
                    return true;
                };
                required(report, o, names, None)
            }
            Check::DependentRequired(deps) => {
                let Value::Object(o) = v else {
                    return true;
                };
                let mut ok = true;
                for (trigger, names) in deps {
                    if o.contains_key(trigger) && !required(report, o, names, Some(trigger)) {
                        ok = false;
                        if report.is_none() {
                            return false;
                        }
                    }
                }
                ok
            }
            Check::DependentSchemas(deps) => {
                let Value::Object(o) = v else {
                    return true;
                };
                let mut ok = true;
                for (trigger, schema) in deps {
                    if o.contains_key(trigger) && !self.eval(*schema, v, report, memo, depth) {
                        ok = false;
                        if report.is_none() {
                            return false;
                        }
                    }
                }
                ok
            }
            Check::Properties {
                named,
                patterns,
                additional,
            } => {
                let Value::Object(o) = v else {
                    return true;
                };
                self.properties(o, named, patterns, *additional, report, memo)
            }
            Check::PropertyNames(schema) => {
                let Value::Object(o) = v else {
                    return true;
                };
                // Each name is a temporary, at an address the next one may reuse: it is
                // evaluated with a memo of its own (the steps still count).
                let instance = std::mem::take(&mut memo.seen);
                let mut ok = true;
                for key in o.keys() {
                    let name = Value::String(key.clone());
                    // A value of its own: no steps taken on it yet.
                    let passed = self.passes(*schema, &name, memo, 0);
                    memo.seen.clear();
                    if !passed {
                        ok = fail(report, || {
                            format!(
                                "the property name {} does not match `propertyNames`",
                                show_key(key)
                            )
                        });
                        break;
                    }
                }
                memo.seen = instance;
                ok
            }
            Check::AllOf(all) => {
                let mut ok = true;
                for schema in all {
                    if !self.eval(*schema, v, report, memo, depth) {
                        ok = false;
                        if report.is_none() {
                            return false;
                        }
                    }
                }
                ok
            }
            Check::AnyOf(any) => {
                any.iter().any(|s| self.passes(*s, v, memo, depth))
                    || fail(report, || {
                        format!("{} matches none of the `anyOf` schemas", show(v))
                    })
            }
            Check::OneOf(one) => {
                let mut matched = 0;
                for s in one {
                    if self.passes(*s, v, memo, depth) {
                        matched += 1;
                        if matched > 1 {
                            return fail(report, || {
                                format!("{} matches more than one `oneOf` schema", show(v))
                            });
                        }
                    }
                }
                matched == 1
                    || fail(report, || {
                        format!("{} matches none of the `oneOf` schemas", show(v))
                    })
            }
            Check::Not(schema) => {
                !self.passes(*schema, v, memo, depth)
                    || fail(report, || {
                        format!("{} matches the schema under `not`", show(v))
                    })
            }
            Check::IfThenElse {
                condition,
                then,
                otherwise,
            } => {
                let branch = if self.passes(*condition, v, memo, depth) {
                    then
                } else {
                    otherwise
                };
                branch.is_none_or(|s| self.eval(s, v, report, memo, depth))
            }
            Check::Ref(target) => self.eval(*target, v, report, memo, depth),
        }
    }

    /// `properties`, `patternProperties` and `additionalProperties` of one schema object.
    fn properties<'v>(
        &self,
        o: &'v Map<String, Value>,
        named: &Named,
        patterns: &[(Pattern, NodeId)],
        additional: Option<NodeId>,
        report: &mut Option<Report<'v>>,
        memo: &mut Memo,
    ) -> bool {
        let mut ok = true;
        // The usual shape (what `#[tool]` generates): a few named properties, no
        // patterns, and additional properties allowed or refused. The named ones are
        // looked up by name; when they account for every member, none is additional.
        let closed = additional.is_some_and(|a| matches!(self.nodes[a], Node::Bool(false)));
        if patterns.is_empty() && (additional.is_none() || closed) {
            let mut present = 0;
            for (name, schema) in &named.list {
                if let Some((key, value)) = o.get_key_value(name) {
                    present += 1;
                    if !self.eval_at(*schema, value, Seg::Key(key), report, memo) {
                        ok = false;
                        if report.is_none() {
                            return false;
                        }
                    }
                }
            }
            if !closed || present == o.len() {
                return ok;
            }
            if report.is_none() {
                return false;
            }
            for key in o.keys() {
                if named.get(key).is_none() {
                    fail(report, || {
                        format!("the property {} is not allowed", show_key(key))
                    });
                }
            }
            return false;
        }
        for (key, value) in o {
            let mut matched = false;
            // Looked up, not compared with every name: an object's members against a
            // schema's named properties cost O(m log n), not O(m n).
            if let Some(schema) = named.get(key) {
                matched = true;
                ok &= self.eval_at(schema, value, Seg::Key(key), report, memo);
            }
            for (pattern, schema) in patterns {
                if pattern.regex.is_match(key) {
                    matched = true;
                    ok &= self.eval_at(*schema, value, Seg::Key(key), report, memo);
                }
            }
            if !matched && let Some(schema) = additional {
                let passed = match &self.nodes[schema] {
                    // Worded as what it is rather than "no value is allowed here".
                    Node::Bool(false) => fail(report, || {
                        format!("the property {} is not allowed", show_key(key))
                    }),
                    _ => self.eval_at(schema, value, Seg::Key(key), report, memo),
                };
                ok &= passed;
            }
            if !ok && report.is_none() {
                return false;
            }
        }
        ok
    }

    /// Evaluates `id` against `v`, one step (`seg`) below the current instance path.
    fn eval_at<'v>(
        &self,
        id: NodeId,
        v: &'v Value,
        seg: Seg<'v>,
        report: &mut Option<Report<'v>>,
        memo: &mut Memo,
    ) -> bool {
        if let Some(r) = report {
            r.path.push(seg);
        }
        // A step into the instance: the count of steps in place starts again.
        let ok = self.eval(id, v, report, memo, 0);
        if let Some(r) = report {
            r.path.pop();
        }
        ok
    }
}

/// Problems found so far, and where evaluation stands in the instance.
#[derive(Default)]
struct Report<'v> {
    path: Vec<Seg<'v>>,
    problems: Vec<String>,
}

/// One step of an instance path.
#[derive(Clone, Copy)]
enum Seg<'v> {
    Key(&'v str),
    Index(usize),
}

/// Records a problem at the current path (when reporting).
fn note(report: &mut Option<Report<'_>>, message: impl FnOnce() -> String) {
    let Some(r) = report else {
        return;
    };
    if r.problems.len() >= MAX_PROBLEMS {
        return;
    }
    let problem = line(&r.path, &message());
    // A value reached by two paths through the schema (two `allOf` branches over the
    // same items) may fail the same way on both: the problem is listed once.
    if !r.problems.contains(&problem) {
        r.problems.push(problem);
    }
}

/// A problem's line: the JSON Pointer of `path` (each key cut as [`cut`] says), then
/// `message`.
fn line(path: &[Seg<'_>], message: &str) -> String {
    let mut line = String::new();
    for seg in path {
        line.push('/');
        match seg {
            Seg::Key(k) => {
                let (head, cut) = cut(k);
                line.push_str(&head.replace('~', "~0").replace('/', "~1"));
                if cut {
                    line.push('…');
                }
            }
            Seg::Index(i) => {
                let _ = write!(line, "{i}");
            }
        }
    }
    if !line.is_empty() {
        line.push_str(": ");
    }
    line.push_str(message);
    line
}

/// The first [`MAX_SHOWN`] bytes of `text`, cut back to a character boundary, and
/// whether anything was cut: what a problem repeats of a text the client chose.
fn cut(text: &str) -> (&str, bool) {
    if text.len() <= MAX_SHOWN {
        return (text, false);
    }
    let mut end = MAX_SHOWN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

/// Records a problem and answers `false`, for `ok || fail(...)`.
fn fail(report: &mut Option<Report<'_>>, message: impl FnOnce() -> String) -> bool {
    note(report, message);
    false
}

/// A numeric bound: fails when `v` compares to `limit` as any of `failing`.
fn bound(
    report: &mut Option<Report<'_>>,
    v: &Value,
    limit: &Number,
    failing: &[Ordering],
    words: &str,
) -> bool {
    let Value::Number(n) = v else {
        return true;
    };
    match compare(n, limit) {
        Some(o) if !failing.contains(&o) => true,
        _ => fail(report, || format!("{n} is {words} {limit}")),
    }
}

/// `required` (or one `dependentRequired` entry, naming its trigger).
fn required(
    report: &mut Option<Report<'_>>,
    o: &Map<String, Value>,
    names: &[String],
    trigger: Option<&str>,
) -> bool {
    let mut ok = true;
    for name in names {
        if !o.contains_key(name) {
            ok = false;
            if report.is_none() {
                return false;
            }
            note(report, || match trigger {
                None => format!("{name:?} is a required property"),
                Some(t) => format!("{name:?} is required when {t:?} is present"),
            });
        }
    }
    ok
}

/// How many bytes of a client's key or value a problem repeats: a key in an instance
/// path, or the JSON text of a value or key in a message, is cut there (at a character
/// boundary) and ends with `…`.
const MAX_SHOWN: usize = 60;

/// A short rendering of a value for messages: its JSON text, cut as [`MAX_SHOWN`] says.
fn show(v: &Value) -> String {
    shown(|head| serde_json::to_writer(head, v))
}

/// A key of the instance as [`show`] renders a value: a JSON string, cut the same way.
fn show_key(key: &str) -> String {
    shown(|head| serde_json::to_writer(head, key))
}

/// The JSON text `write` writes, cut as [`MAX_SHOWN`] says, written only as far as that:
/// a large argument is not serialized whole to show its start.
fn shown(write: impl FnOnce(&mut Head) -> serde_json::Result<()>) -> String {
    let mut head = Head(Vec::with_capacity(MAX_SHOWN + 4));
    // Ends with an error once the head is full, which is the point.
    let _ = write(&mut head);
    // A character cut at the end becomes U+FFFD there, past `MAX_SHOWN`, and is cut off
    // below.
    let text = String::from_utf8_lossy(&head.0);
    let (text, was_cut) = cut(&text);
    let mut text = text.to_owned();
    if was_cut {
        text.push('…');
    }
    text
}

/// Keeps the first bytes written, past [`MAX_SHOWN`] by at most one character, then
/// refuses more.
struct Head(Vec<u8>);

impl std::io::Write for Head {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let room = (MAX_SHOWN + 4).saturating_sub(self.0.len());
        if room == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        let n = room.min(bytes.len());
        self.0.extend_from_slice(&bytes[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn type_names(types: u8) -> String {
    let names: Vec<&str> = [
        (NULL, "null"),
        (BOOLEAN, "boolean"),
        (OBJECT, "object"),
        (ARRAY, "array"),
        (STRING, "string"),
    ]
    .into_iter()
    .chain(if types & NUMBER != 0 {
        Some((NUMBER, "number"))
    } else {
        Some((INTEGER, "integer"))
    })
    .filter(|(bit, _)| types & bit != 0)
    .map(|(_, name)| name)
    .collect();
    match names.as_slice() {
        [one] => format!("{one:?}"),
        many => format!(
            "any of {}",
            many.iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Compilation state: the document, the nodes made so far, and which schema value each
/// was made from (so a reference and the schema it names share one node).
struct Compiler<'s> {
    root: &'s Value,
    nodes: Vec<Node>,
    seen: HashMap<*const Value, NodeId>,
    anchors: HashMap<String, &'s Value>,
    /// Schemas being compiled, one inside the other (through subschemas and references).
    depth: u32,
}

impl<'s> Compiler<'s> {
    /// Finds every `$anchor` in the document, and refuses `$id` below the root and the
    /// [`UNSUPPORTED`] keywords. Only schema positions are walked: a property named `$id`
    /// is not an `$id`. Refusing here, before any `$ref` is resolved, makes the refusal
    /// name the keyword whatever order the schema's keys come in: a `$ref` to a
    /// `$dynamicAnchor` compiled before the keyword is met would otherwise be refused as
    /// naming no `$anchor`.
    fn collect_anchors(&mut self, schema: &'s Value, root: bool) -> Compiled<()> {
        let Value::Object(map) = schema else {
            return Ok(());
        };
        if let Some(key) = map.keys().find(|k| UNSUPPORTED.contains(&k.as_str())) {
            return Err(CompileError::Unsupported(format!("the keyword {key}")));
        }
        // Before its `$anchor`: an embedded resource's anchor may reuse a name.
        if !root && map.contains_key("$id") {
            return Err(CompileError::Unsupported(
                "$id below the root (an embedded schema resource)".to_owned(),
            ));
        }
        if let Some(anchor) = map.get("$anchor") {
            let Some(name) = anchor.as_str().filter(|n| is_anchor(n)) else {
                return invalid(format!("$anchor {anchor} is not a valid anchor name"));
            };
            if self.anchors.insert(name.to_owned(), schema).is_some() {
                return invalid(format!("$anchor {name:?} is defined twice"));
            }
        }
        for (key, value) in map {
            match key.as_str() {
                "items"
                | "contains"
                | "additionalProperties"
                | "propertyNames"
                | "not"
                | "if"
                | "then"
                | "else"
                | "contentSchema" => self.collect_anchors(value, false)?,
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                    for item in value.as_array().into_iter().flatten() {
                        self.collect_anchors(item, false)?;
                    }
                }
                "properties" | "patternProperties" | "$defs" | "dependentSchemas" => {
                    for item in value.as_object().into_iter().flat_map(|m| m.values()) {
                        self.collect_anchors(item, false)?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Compiles one schema, or returns the node already made from it.
    fn node(&mut self, schema: &'s Value, root: bool) -> Compiled<NodeId> {
        let key = schema as *const Value;
        if let Some(id) = self.seen.get(&key) {
            return Ok(*id);
        }
        // A chain of references (each to a schema not compiled yet) nests compilation as
        // deep as the chain is long: bounded, so that neither compiling (recursive) nor
        // evaluating (which allows `MAX_EVAL_DEPTH` steps without reading the instance)
        // runs out of room on a chain without a cycle. Subschemas alone nest no deeper
        // than `MAX_SCHEMA_DEPTH`.
        if self.depth >= MAX_EVAL_DEPTH {
            return Err(CompileError::Unsupported(format!(
                "a chain of $ref and subschemas nested more than {MAX_EVAL_DEPTH} deep"
            )));
        }
        let id = self.nodes.len();
        self.nodes.push(Node::Pending);
        self.seen.insert(key, id);
        self.depth += 1;
        let node = match schema {
            Value::Bool(b) => Ok(Node::Bool(*b)),
            Value::Object(map) => self.checks(map, root).map(Node::Checks),
            other => invalid(format!(
                "a schema must be an object or a boolean, not {other}"
            )),
        };
        self.depth -= 1;
        self.nodes[id] = node?;
        Ok(id)
    }

    fn subschemas(&mut self, value: &'s Value, keyword: &str) -> Compiled<Vec<NodeId>> {
        match value {
            Value::Array(items) if !items.is_empty() => {
                items.iter().map(|s| self.node(s, false)).collect()
            }
            _ => invalid(format!("{keyword} must be a non-empty array of schemas")),
        }
    }

    fn named_subschemas(
        &mut self,
        value: &'s Value,
        keyword: &str,
    ) -> Compiled<Vec<(String, NodeId)>> {
        let Value::Object(map) = value else {
            return invalid(format!("{keyword} must be an object of schemas"));
        };
        map.iter()
            .map(|(name, s)| Ok((name.clone(), self.node(s, false)?)))
            .collect()
    }

    fn checks(&mut self, map: &'s Map<String, Value>, root: bool) -> Compiled<Vec<Check>> {
        let mut checks = Vec::new();
        let mut named = Vec::new();
        let mut patterns = Vec::new();
        let mut additional = None;
        let mut prefix = Vec::new();
        let mut rest = None;
        let mut contains = None;
        let (mut min_contains, mut max_contains) = (None, None);
        let (mut condition, mut then, mut otherwise) = (None, None, None);
        for (key, value) in map {
            let key = key.as_str();
            if UNSUPPORTED.contains(&key) {
                return Err(CompileError::Unsupported(format!("the keyword {key}")));
            }
            match key {
                "type" => checks.push(Check::Type(types(value)?)),
                "enum" => match value {
                    Value::Array(values) => checks.push(Check::Enum(values.clone())),
                    _ => return invalid("enum must be an array"),
                },
                "const" => checks.push(Check::Const(value.clone())),
                "multipleOf" => {
                    let m = number(value, key)?;
                    if compare(&m, &Number::from(0)) != Some(Ordering::Greater) {
                        return invalid("multipleOf must be greater than 0");
                    }
                    checks.push(Check::MultipleOf(m));
                }
                "minimum" => checks.push(Check::Minimum(number(value, key)?)),
                "maximum" => checks.push(Check::Maximum(number(value, key)?)),
                "exclusiveMinimum" => checks.push(Check::ExclusiveMinimum(number(value, key)?)),
                "exclusiveMaximum" => checks.push(Check::ExclusiveMaximum(number(value, key)?)),
                "minLength" => checks.push(Check::MinLength(count(value, key)?)),
                "maxLength" => checks.push(Check::MaxLength(count(value, key)?)),
                "pattern" => match value.as_str() {
                    Some(source) => checks.push(Check::Pattern(Pattern::compile(source)?)),
                    None => return invalid("pattern must be a string"),
                },
                "minItems" => checks.push(Check::MinItems(count(value, key)?)),
                "maxItems" => checks.push(Check::MaxItems(count(value, key)?)),
                "uniqueItems" => match value {
                    Value::Bool(true) => checks.push(Check::UniqueItems),
                    Value::Bool(false) => {}
                    _ => return invalid("uniqueItems must be a boolean"),
                },
                "prefixItems" => prefix = self.subschemas(value, key)?,
                "items" => rest = Some(self.node(value, false)?),
                "contains" => contains = Some(self.node(value, false)?),
                "minContains" => min_contains = Some(count(value, key)?),
                "maxContains" => max_contains = Some(count(value, key)?),
                "minProperties" => checks.push(Check::MinProperties(count(value, key)?)),
                "maxProperties" => checks.push(Check::MaxProperties(count(value, key)?)),
                "required" => checks.push(Check::Required(names(value, key)?)),
                "dependentRequired" => {
                    let Value::Object(deps) = value else {
                        return invalid("dependentRequired must be an object");
                    };
                    let deps = deps
                        .iter()
                        .map(|(trigger, names_value)| {
                            Ok((trigger.clone(), names(names_value, key)?))
                        })
                        .collect::<Compiled<_>>()?;
                    checks.push(Check::DependentRequired(deps));
                }
                "dependentSchemas" => {
                    checks.push(Check::DependentSchemas(self.named_subschemas(value, key)?))
                }
                "properties" => named = self.named_subschemas(value, key)?,
                "patternProperties" => {
                    let Value::Object(map) = value else {
                        return invalid("patternProperties must be an object of schemas");
                    };
                    for (source, s) in map {
                        patterns.push((Pattern::compile(source)?, self.node(s, false)?));
                    }
                }
                "additionalProperties" => additional = Some(self.node(value, false)?),
                "propertyNames" => checks.push(Check::PropertyNames(self.node(value, false)?)),
                "allOf" => checks.push(Check::AllOf(self.subschemas(value, key)?)),
                "anyOf" => checks.push(Check::AnyOf(self.subschemas(value, key)?)),
                "oneOf" => checks.push(Check::OneOf(self.subschemas(value, key)?)),
                "not" => checks.push(Check::Not(self.node(value, false)?)),
                "if" => condition = Some(self.node(value, false)?),
                "then" => then = Some(self.node(value, false)?),
                "else" => otherwise = Some(self.node(value, false)?),
                "$ref" => {
                    let target = self.resolve(value)?;
                    checks.push(Check::Ref(self.node(target, false)?));
                }
                "$defs" => {
                    // Compiled whether referenced or not, so a malformed one is caught.
                    self.named_subschemas(value, key)?;
                }
                "$schema" | "$id" if root => {}
                "$schema" | "$id" => {
                    return Err(CompileError::Unsupported(format!(
                        "{key} below the root (an embedded schema resource)"
                    )));
                }
                "title" | "description" | "format" | "$comment" | "contentEncoding"
                | "contentMediaType"
                    if !value.is_string() =>
                {
                    return invalid(format!("{key} must be a string"));
                }
                "deprecated" | "readOnly" | "writeOnly" if !value.is_boolean() => {
                    return invalid(format!("{key} must be a boolean"));
                }
                "examples" if !value.is_array() => return invalid("examples must be an array"),
                "contentSchema" => {
                    self.node(value, false)?;
                }
                // Annotations and unknown keywords: ignored, as 2020-12 says.
                _ => {}
            }
        }
        if !prefix.is_empty() || rest.is_some() {
            checks.push(Check::Items { prefix, rest });
        }
        if let Some(schema) = contains {
            checks.push(Check::Contains {
                schema,
                min: min_contains.unwrap_or(1),
                max: max_contains,
            });
        }
        if !named.is_empty() || !patterns.is_empty() || additional.is_some() {
            checks.push(Check::Properties {
                named: Named::new(named),
                patterns,
                additional,
            });
        }
        if let Some(condition) = condition {
            checks.push(Check::IfThenElse {
                condition,
                then,
                otherwise,
            });
        }
        Ok(checks)
    }

    /// The schema a `$ref` names: `#`, `#/json/pointer` or `#anchor`.
    fn resolve(&self, reference: &Value) -> Compiled<&'s Value> {
        let Some(r) = reference.as_str() else {
            return invalid("$ref must be a string");
        };
        let Some(fragment) = r.strip_prefix('#') else {
            return Err(CompileError::Unsupported(format!(
                "$ref {r:?} is not a same-document reference"
            )));
        };
        let fragment = percent_decode(fragment)
            .ok_or_else(|| CompileError::Invalid(format!("$ref {r:?} is not a valid URI")))?;
        if fragment.is_empty() {
            return Ok(self.root);
        }
        if fragment.starts_with('/') {
            // RFC 6901, as serde_json reads it (an array index without a sign or leading
            // zeros).
            return self
                .root
                .pointer(&fragment)
                .ok_or_else(|| CompileError::Invalid(format!("$ref {r:?} names nothing")));
        }
        self.anchors
            .get(&fragment)
            .copied()
            // Anchors are looked for in schema positions only (not under `definitions` or
            // an unknown keyword), where the `jsonschema` crate may still find one.
            .ok_or_else(|| {
                CompileError::Unsupported(format!(
                    "$ref {r:?}, which names no $anchor in a schema position this validator reads"
                ))
            })
    }
}

/// A `$ref` fragment with its percent-escapes decoded (RFC 3986, section 2.1: `%` then
/// exactly two hex digits), giving the JSON Pointer (RFC 6901, section 6) or anchor name
/// it spells. `None` for a `%` not followed by two hex digits (a sign is no digit: `%+1`
/// is malformed) and for escapes whose bytes are not UTF-8. The decoding is presa's one
/// rule for percent-escapes (`presa-rules`).
fn percent_decode(fragment: &str) -> Option<String> {
    presa_rules::uri::percent_decode(fragment)
}

/// An `$anchor` name: a letter or `_`, then letters, digits, `-`, `.` and `_`.
fn is_anchor(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
}

fn types(value: &Value) -> Compiled<u8> {
    let one = |name: &str| {
        Ok(match name {
            "null" => NULL,
            "boolean" => BOOLEAN,
            "object" => OBJECT,
            "array" => ARRAY,
            // A number of any kind; integers are numbers too.
            "number" => NUMBER | INTEGER,
            "string" => STRING,
            "integer" => INTEGER,
            other => return invalid(format!("type {other:?} is not a JSON Schema type")),
        })
    };
    match value {
        Value::String(s) => one(s),
        Value::Array(names) if !names.is_empty() => {
            let mut set = 0;
            let mut seen: Vec<&str> = Vec::with_capacity(names.len());
            for name in names {
                let Some(name) = name.as_str() else {
                    return invalid("type names must be strings");
                };
                // Names must be unique (the meta-schema says so).
                if seen.contains(&name) {
                    return invalid(format!("type {name:?} is listed twice"));
                }
                seen.push(name);
                set |= one(name)?;
            }
            Ok(set)
        }
        _ => invalid("type must be a type name or a non-empty array of them"),
    }
}

fn number(value: &Value, keyword: &str) -> Compiled<Number> {
    match value {
        Value::Number(n) => Ok(n.clone()),
        _ => invalid(format!("{keyword} must be a number")),
    }
}

/// A non-negative integer keyword value (`minLength`, ...); 2020-12 counts `2.0` as one.
fn count(value: &Value, keyword: &str) -> Compiled<u64> {
    match value {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 1.8e19)
                    .map(|f| f as u64)
            })
            .ok_or_else(|| {
                CompileError::Invalid(format!("{keyword} must be a non-negative integer"))
            }),
        _ => invalid(format!("{keyword} must be a non-negative integer")),
    }
}

/// An array of unique strings (`required`, a `dependentRequired` entry).
fn names(value: &Value, keyword: &str) -> Compiled<Vec<String>> {
    let Value::Array(items) = value else {
        return invalid(format!("{keyword} must be an array of strings"));
    };
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let Some(name) = item.as_str() else {
            return invalid(format!("{keyword} must be an array of strings"));
        };
        if out.iter().any(|n| n == name) {
            return invalid(format!("{keyword} lists {name:?} twice"));
        }
        out.push(name.to_owned());
    }
    Ok(out)
}

/// The type bit of an instance; an integer-valued number is both a number and an
/// integer (2020-12: 1.0 is an integer).
fn type_of(v: &Value) -> u8 {
    match v {
        Value::Null => NULL,
        Value::Bool(_) => BOOLEAN,
        Value::Object(_) => OBJECT,
        Value::Array(_) => ARRAY,
        Value::String(_) => STRING,
        Value::Number(n) => {
            let integral = n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0);
            if integral { NUMBER | INTEGER } else { NUMBER }
        }
    }
}

/// An integer-valued number as an `i128`, exactly (floats up to ±1e20).
fn as_int(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

/// Compares two numbers by value, exactly: an integer against a float is not rounded to
/// a float first (9007199254740993 is above 9007199254740992.0).
fn compare(a: &Number, b: &Number) -> Option<Ordering> {
    match (as_int(a), as_int(b)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        (Some(x), None) => int_against_float(x, b.as_f64()?),
        (None, Some(y)) => int_against_float(y, a.as_f64()?).map(Ordering::reverse),
        (None, None) => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

/// `i` compared with `f`.
fn int_against_float(i: i128, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    // Beyond any i64 or u64 the integer cannot reach the float.
    if f >= 1e20 {
        return Some(Ordering::Less);
    }
    if f <= -1e20 {
        return Some(Ordering::Greater);
    }
    let whole = f.trunc();
    // Exact: |whole| < 1e20 fits an i128, and a float's integer part converts exactly.
    Some(match i.cmp(&(whole as i128)) {
        Ordering::Equal if f > whole => Ordering::Less,
        Ordering::Equal if f < whole => Ordering::Greater,
        other => other,
    })
}

/// A number as `mantissa × 10^exponent`, from its shortest decimal text (the text a
/// float is written with, so `0.1` is exactly one tenth here).
fn decimal(n: &Number) -> Option<(i128, i32)> {
    let text = n.to_string();
    let (digits, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], text[at + 1..].parse::<i32>().ok()?),
        None => (text.as_str(), 0),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let mantissa: i128 = format!("{whole}{fraction}").parse().ok()?;
    Some((
        mantissa,
        exponent.checked_sub(i32::try_from(fraction.len()).ok()?)?,
    ))
}

/// Whether `x` is an integer multiple of `m` (`m > 0`), in decimal arithmetic: `0.3` is
/// a multiple of `0.1`, as its author meant, though not in binary floating point.
fn is_multiple(x: &Number, m: &Number) -> bool {
    if let (Some(a), Some(b)) = (as_int(x), as_int(m)) {
        return b != 0 && a % b == 0;
    }
    let (Some((a, p)), Some((b, q))) = (decimal(x), decimal(m)) else {
        // Out of decimal range: fall back to floating point.
        return float_multiple(x, m);
    };
    if a == 0 {
        return true;
    }
    if b == 0 {
        return false;
    }
    // x / m = (a / b) × 10^(p - q). The exponents are those of the text, which under
    // serde_json's `arbitrary_precision` can be anything an `i32` holds: the difference
    // is taken in `i64` (it cannot overflow there), and neither branch below loops or
    // multiplies more than a fixed number of times whatever it is.
    let shift = i64::from(p) - i64::from(q);
    let (a, b) = (a.unsigned_abs(), b.unsigned_abs());
    if shift >= 0 {
        // Whether b divides a × 10^shift. Once the shift covers every factor 2 and 5 of
        // b (fewer than 128 of either, as b < 2^128), a longer one changes nothing, so it
        // is capped; the powers are reduced mod b.
        let mut factor: u128 = 1;
        for _ in 0..shift.min(128) {
            match factor.checked_mul(10) {
                Some(f) => factor = f % b,
                None => return float_multiple(x, m),
            }
        }
        match (a % b).checked_mul(factor) {
            Some(product) => product % b == 0,
            None => float_multiple(x, m),
        }
    } else {
        // Whether b × 10^-shift divides a: never once 10^-shift exceeds a (a != 0).
        let Some(scaled) = u32::try_from(shift.unsigned_abs())
            .ok()
            .and_then(|e| 10u128.checked_pow(e))
            .and_then(|p| p.checked_mul(b))
        else {
            return false;
        };
        a % scaled == 0
    }
}

/// [`is_multiple`] in floating point, where decimal arithmetic would overflow.
fn float_multiple(x: &Number, m: &Number) -> bool {
    match (x.as_f64(), m.as_f64()) {
        (Some(x), Some(m)) => (x / m).is_finite() && (x / m).fract() == 0.0,
        _ => false,
    }
}

/// JSON equality as `enum`, `const` and `uniqueItems` define it: numbers by value,
/// objects regardless of member order.
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare(x, y) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| equal(p, q)))
        }
        _ => a == b,
    }
}

/// Whether no two items are [`equal`]: pairwise for short arrays, by a canonical text
/// otherwise (linear, so a long array cannot make the check quadratic).
fn all_unique(items: &[Value]) -> bool {
    if items.len() <= 16 {
        return items
            .iter()
            .enumerate()
            .all(|(i, a)| items[i + 1..].iter().all(|b| !equal(a, b)));
    }
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    items.iter().all(|item| {
        let mut text = String::new();
        canonical(item, &mut text);
        seen.insert(text)
    })
}

/// A text equal for exactly the values [`equal`] calls equal.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Number(n) => {
            let integral = as_int(n).or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 1e20)
                    .map(|f| f as i128)
            });
            match integral {
                Some(i) => {
                    let _ = write!(out, "{i}");
                }
                None => {
                    let _ = write!(out, "{n}");
                }
            }
        }
        Value::Array(items) => {
            out.push('[');
            for item in items {
                canonical(item, out);
                out.push(',');
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for key in keys {
                let _ = write!(out, "{key:?}:");
                if let Some(value) = map.get(key) {
                    canonical(value, out);
                }
                out.push(',');
            }
            out.push('}');
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reference(schema: &Value) -> jsonschema::Validator {
        jsonschema::options()
            .should_validate_formats(false)
            .build(schema)
            .expect("test schemas compile")
    }

    /// Schemas the validator compiles, over every keyword it implements.
    fn schemas() -> Vec<Value> {
        vec![
            json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}),
            json!({"type":"object","properties":{"n":{"type":"integer","format":"int32"},"r":{"type":"number"},"b":{"type":"boolean"}}}),
            json!({"type":"object","properties":{"o":{"type":["string","null"]}},"required":[]}),
            json!({"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":2}}}),
            json!({"type":"object","properties":{"u":{"$ref":"#/$defs/Unit"}},"$defs":{"Unit":{"type":"string","enum":["c","f"]}}}),
            json!({"type":"object","properties":{"p":{"$ref":"#/$defs/P","description":"d"}},"$defs":{"P":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}}}),
            json!({"type":"object","properties":{"l":{"type":["integer","null"],"minimum":0,"maximum":10}}}),
            json!({"type":"object","properties":{"c":{"type":"integer","minimum":-9007199254740991_i64,"maximum":9007199254740991_i64}}}),
            json!({"type":"object","properties":{"e":{"exclusiveMinimum":1.5,"exclusiveMaximum":3}}}),
            json!({"type":"object","properties":{"big":{"maximum":9007199254740992.0_f64,"minimum":-2.5}}}),
            json!({"type":"object","properties":{"s":{"type":"string","minLength":2,"maxLength":3}}}),
            json!({"type":"object","properties":{"k":{"const":{"a":[1,2.0]}}}}),
            json!({"type":"object","properties":{"m":{"enum":[1,"x",null,[1],{"a":1}]}}}),
            json!({"$schema":"https://json-schema.org/draft/2020-12/schema","title":"T","type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"]}),
            json!({"type":"object","properties":{"t":{"$ref":"#/$defs/Tree"}},"$defs":{"Tree":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/Tree"}}}}}}),
            json!({"type":"object","x-extra":1,"properties":{"h":{"type":"string","x-mcp-header":"H","default":"a","examples":["b"],"deprecated":false}}}),
            json!({"type":["object","array"],"items":{"type":"number"}}),
            json!({"properties":{"n":{"type":["number","integer"]},"i":{"type":["integer","string"]}}}),
            json!(true),
            json!(false),
            json!({"type":"object","properties":{"text":{"type":"string","pattern":"^h[a-z]+$"}}}),
            json!({"properties":{"s":{"pattern":"^\\s.$"},"xa":{"pattern":"^[[:a&]+$"}}}),
            json!({"patternProperties":{"^x":{"type":"integer"},"s$":{"type":"string"}},"additionalProperties":false}),
            json!({"properties":{"n":{}},"additionalProperties":{"type":"string"}}),
            json!({"anyOf":[{"type":"string"},{"type":"integer","minimum":0}]}),
            json!({"oneOf":[{"type":"integer"},{"type":"number","maximum":2}]}),
            json!({"allOf":[{"required":["n"]},{"properties":{"n":{"type":"integer"}}}]}),
            json!({"not":{"type":"object"}}),
            json!({"if":{"properties":{"b":{"const":true}},"required":["b"]},"then":{"required":["n"]},"else":{"required":["s"]}}),
            json!({"if":{"type":"integer"},"then":{"minimum":3}}),
            json!({"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":false}),
            json!({"prefixItems":[{"type":"integer"}],"items":{"type":"string"}}),
            json!({"contains":{"type":"string"},"minContains":2,"maxContains":3}),
            json!({"contains":{"type":"integer"}}),
            json!({"contains":{"type":"integer"},"minContains":0}),
            json!({"uniqueItems":true}),
            json!({"minProperties":1,"maxProperties":2}),
            json!({"dependentRequired":{"b":["n","s"]}}),
            json!({"dependentSchemas":{"b":{"properties":{"n":{"maximum":0}}}}}),
            json!({"propertyNames":{"maxLength":1}}),
            json!({"propertyNames":{"pattern":"^[a-m]"}}),
            json!({"multipleOf":0.5}),
            json!({"multipleOf":3}),
            json!({"multipleOf":0.25,"type":"number"}),
            json!({"$ref":"#/$defs/a","$defs":{"a":{"anyOf":[{"type":"null"},{"type":"array","items":{"$ref":"#"}}]}}}),
            json!({"properties":{"a":{"$ref":"#node"},"b":{"$ref":"#/properties/a"}},"$defs":{"n":{"$anchor":"node","type":"integer"}}}),
            json!({"properties":{"a":{"$ref":"#/$defs/A~1B"},"b":{"$ref":"#/$defs/c%25d"}},"$defs":{"A/B":{"type":"string"},"c%d":{"type":"integer"}}}),
            json!({"type":"object","properties":{"$id":{"type":"string"},"$anchor":{"type":"integer"}}}),
            json!({"$id":"https://example.com/root","type":"object","properties":{"i":{"$ref":"#/$defs/I"}},"$defs":{"I":{"type":"integer"}}}),
            json!({"minLength":2.0,"maxItems":1.0}),
            json!({"type":"object","unknownKeyword":{"type":"string"},"title":"t","contentMediaType":"text/plain"}),
            json!({"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false}),
            // Many named properties beside a pattern: the members are looked up by name.
            json!({"properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"integer"},"l":{"type":"integer"},"m":{"type":"integer"},"n":{"type":"integer"},"o":{"type":"string"},"text":{"type":"string"},"y":{"type":"integer"},"z":{"type":"integer"}},"patternProperties":{"^x":{"type":"string"}},"additionalProperties":false}),
            json!({}),
        ]
    }

    /// Every schema compiles, and is valid exactly where jsonschema says.
    #[test]
    fn agrees_with_jsonschema() {
        let schemas = schemas();
        let instances = [
            json!({"text":"hi"}),
            json!({"text":1}),
            json!({"a":1,"z":2,"m":3,"xs":"s"}),
            json!({"a":1,"z":"2"}),
            json!({"a":1,"q":2}),
            json!({"xs":1,"b":2}),
            json!({"text":"hi","extra":true}),
            json!({}),
            json!(null),
            json!([]),
            json!([1, 2.5]),
            json!([1, "x"]),
            json!({"n":1,"r":2.5,"b":true}),
            json!({"n":1.0}),
            json!({"n":1.5}),
            json!({"n":"1"}),
            json!({"o":null}),
            json!({"o":3}),
            json!({"tags":[]}),
            json!({"tags":["a"]}),
            json!({"tags":["a","b","c"]}),
            json!({"tags":["a",1]}),
            json!({"u":"c"}),
            json!({"u":"k"}),
            json!({"p":{"x":1}}),
            json!({"p":{}}),
            json!({"p":{"x":"1"}}),
            json!({"l":0}),
            json!({"l":-1}),
            json!({"l":10}),
            json!({"l":11}),
            json!({"l":null}),
            json!({"c":9007199254740991_i64}),
            json!({"c":9007199254740992_i64}),
            json!({"c":-9007199254740992_i64}),
            json!({"c":18446744073709551615_u64}),
            json!({"e":1.5}),
            json!({"e":2}),
            json!({"e":3}),
            json!({"e":"x"}),
            json!({"big":9007199254740992_u64}),
            json!({"big":9007199254740993_u64}),
            json!({"big":18446744073709551615_u64}),
            json!({"big":-2}),
            json!({"big":-3}),
            json!({"big":-2.5}),
            json!({"big":-2.6}),
            json!({"s":"ab"}),
            json!({"s":"é€😀"}),
            json!({"s":"a"}),
            json!({"s":"abcd"}),
            json!({"s":"\u{a0}x"}),
            json!({"s":" \r"}),
            json!({"s":"\u{2003}\u{2028}"}),
            json!({"xa":"a:&["}),
            json!({"xa":"alpha"}),
            json!({"k":{"a":[1.0,2]}}),
            json!({"k":{"a":[1,3]}}),
            json!({"m":1.0}),
            json!({"m":{"a":1}}),
            json!({"m":[1]}),
            json!({"m":"y"}),
            json!({"sum":3}),
            json!({"sum":3.5}),
            json!({"t":{"kids":[{"kids":[]},{}]}}),
            json!({"t":{"kids":[{"kids":[1]}]}}),
            json!({"h":"x"}),
            json!({"h":false}),
            json!("text"),
            json!(7),
            json!({"n":2.5,"i":2}),
            json!({"n":"x"}),
            json!({"i":2.5}),
            json!({"i":"2"}),
            json!({"text":"hello"}),
            json!({"text":"Hello"}),
            json!({"xa":1,"bs":"s"}),
            json!({"xa":"1"}),
            json!({"q":1}),
            json!({"n":1,"q":"s","r":2}),
            json!([1, "a"]),
            json!([1, "a", 2]),
            json!(["a", 1]),
            json!(["a", "b"]),
            json!(["a", "b", "c", "d"]),
            json!([1, 1.0]),
            json!([{"a":1,"b":2},{"b":2,"a":1.0}]),
            json!([[1], [1.0]]),
            json!((0..40).collect::<Vec<_>>()),
            json!((0..40).map(|i| i % 39).collect::<Vec<_>>()),
            json!((0..40).map(|i| json!({"k": i % 39})).collect::<Vec<_>>()),
            json!(1.5),
            json!(-1),
            json!(0.75),
            json!(4.5),
            json!(9),
            json!({"b":true}),
            json!({"b":true,"n":1}),
            json!({"b":false,"s":"x"}),
            json!({"b":true,"n":1,"s":"x"}),
            json!({"b":1,"n":5}),
            json!({"a":"x"}),
            json!({"a":3,"b":4}),
            json!({"a":"x","b":3}),
            json!({"$id":"x","$anchor":2}),
            json!({"$id":1}),
            json!({"i":1}),
            json!({"name":"n","phone":"1"}),
            json!({"name":"n","email":"e"}),
            json!({"contactMethod":"phone","email":"e"}),
            json!({"contactMethod":"phone","phone":"1","address":{"city":"c"}}),
            json!({"email":"e","address":{"city":1}}),
            json!({"email":"e","other":1}),
            json!(null),
            json!([null]),
            json!([null, [null, []]]),
            json!([null, [1]]),
        ];
        for schema in &schemas {
            let own = Validator::compile(schema)
                .unwrap_or_else(|e| panic!("does not compile: {schema}: {e}"));
            let full = reference(schema);
            for instance in &instances {
                let valid = full.is_valid(instance);
                assert_eq!(
                    own.is_valid(instance),
                    valid,
                    "schema {schema}\ninstance {instance}"
                );
                // The wording path agrees with the quick path.
                assert_eq!(
                    own.validate(instance).is_ok(),
                    valid,
                    "schema {schema}\ninstance {instance}"
                );
            }
        }
    }

    /// The flat shape is recognised where it holds and only there, and it answers
    /// "valid" exactly where the full evaluation does on the instances it passes (the
    /// two tests above run every schema through it as well, against jsonschema).
    #[test]
    fn the_flat_shape_answers_as_the_full_evaluation() {
        let flat = [
            json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}),
            json!({"type":"object","properties":{"n":{"type":"integer","format":"int32"},"r":{"type":"number"},"b":{"type":"boolean"}}}),
            json!({"properties":{"n":{"type":["number","integer"]},"a":true,"z":false,"e":{}},"additionalProperties":true}),
            json!({"type":["object","null"],"required":["x"]}),
            json!({}),
        ];
        let not_flat = [
            json!({"type":"object","properties":{"s":{"type":"string","minLength":1}}}),
            json!({"type":"object","patternProperties":{"^x":{"type":"string"}}}),
            json!({"type":"object","additionalProperties":{"type":"string"}}),
            json!({"type":"string"}),
            json!({"type":"object","properties":{"p":{"$ref":"#/$defs/P"}},"$defs":{"P":{"type":"string"}}}),
            json!({"type":"object","minProperties":1}),
            json!(true),
        ];
        let instances = [
            json!({"text":"hi"}),
            json!({"text":1}),
            json!({"text":"hi","x":1}),
            json!({}),
            json!({"n":1,"r":2.5,"b":true}),
            json!({"n":1.0,"a":[1],"e":null}),
            json!({"n":1.5}),
            json!({"z":1}),
            json!({"x":null}),
            json!(null),
            json!([]),
            json!("s"),
        ];
        for schema in &flat {
            let v = Validator::compile(schema).expect("compiles");
            let shape = v.flat.as_ref().unwrap_or_else(|| panic!("flat: {schema}"));
            let mut passed = 0;
            for instance in &instances {
                let full = v.eval(0, instance, &mut None, &mut Memo::new(DEFAULT_MAX_STEPS), 0);
                if shape.passes(instance) {
                    passed += 1;
                    assert!(full, "schema {schema}\ninstance {instance}");
                }
                // An object the full evaluation accepts, the flat check accepts too.
                if instance.is_object() {
                    assert_eq!(
                        shape.passes(instance),
                        full,
                        "schema {schema}\ninstance {instance}"
                    );
                }
            }
            assert!(passed > 0, "{schema}");
        }
        for schema in &not_flat {
            let v = Validator::compile(schema).expect("compiles");
            assert!(v.flat.is_none(), "{schema}");
        }
    }

    /// The same on a few thousand generated instances: random shapes over the property
    /// names and value kinds the schemas use (a fixed seed, so a failure reproduces).
    #[test]
    fn agrees_with_jsonschema_on_generated_instances() {
        struct Lcg(u64);
        impl Lcg {
            fn next(&mut self, n: u64) -> u64 {
                self.0 = self
                    .0
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (self.0 >> 33) % n
            }
        }
        const NAMES: [&str; 20] = [
            "text", "n", "r", "b", "o", "tags", "u", "p", "x", "l", "c", "e", "s", "k", "m", "t",
            "xa", "bs", "a", "phone",
        ];
        fn value(rng: &mut Lcg, depth: u32) -> Value {
            match rng.next(if depth > 2 { 9 } else { 11 }) {
                0 => Value::Null,
                1 => json!(rng.next(2) == 1),
                2 => json!(rng.next(25) as i64 - 12),
                3 => json!((rng.next(40) as f64 - 20.0) / 4.0),
                4 => json!(
                    ["", "a", "ab", "abcd", "c", "f", "x", "1", "hello", "phone"]
                        [rng.next(10) as usize]
                ),
                5 => json!(9_007_199_254_740_990_u64 + rng.next(4)),
                6 => json!(-9_007_199_254_740_993_i64 + rng.next(3) as i64),
                7 => json!(1.0),
                8 => json!("é€😀"),
                9 => Value::Array((0..rng.next(4)).map(|_| value(rng, depth + 1)).collect()),
                _ => Value::Object(
                    (0..rng.next(4))
                        .map(|_| {
                            (
                                NAMES[rng.next(20) as usize].to_owned(),
                                value(rng, depth + 1),
                            )
                        })
                        .collect(),
                ),
            }
        }
        let mut rng = Lcg(7);
        let schemas: Vec<(Value, Validator, jsonschema::Validator)> = schemas()
            .into_iter()
            .map(|s| {
                let own = Validator::compile(&s).expect("compiles");
                let full = reference(&s);
                (s, own, full)
            })
            .collect();
        for _ in 0..3000 {
            let instance = value(&mut rng, 0);
            for (schema, own, full) in &schemas {
                assert_eq!(
                    own.is_valid(&instance),
                    full.is_valid(&instance),
                    "schema {schema}\ninstance {instance}"
                );
            }
        }
    }

    /// What the validator leaves out is refused by name, never skipped.
    #[test]
    fn what_it_leaves_out_is_refused() {
        // Pattern syntax regex-lite would read otherwise than ECMA-262, or not at all.
        for pattern in ["(a)\\1", "[^]", "(?<n>a)\\k<n>"] {
            assert!(
                matches!(
                    Validator::compile(&json!({ "pattern": pattern })),
                    Err(CompileError::Unsupported(_))
                ),
                "{pattern}"
            );
        }
        for schema in [
            json!({"unevaluatedProperties":false}),
            json!({"properties":{"a":{"unevaluatedItems":false}}}),
            json!({"$dynamicRef":"#x"}),
            json!({"$defs":{"a":{"$dynamicAnchor":"x"}}}),
            json!({"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}),
            json!({"properties":{"a":{"$id":"https://example.com/a"}}}),
            json!({"pattern":"(?=a)"}),
            json!({"patternProperties":{"\\p{L}+":{}}}),
            json!({"pattern":"[\\S]"}),
            json!({"pattern":"[]a]"}),
            json!({"dependencies":{"a":["b"]}}),
            json!({"$ref":"#nowhere"}),
            json!({"$ref":"#a","definitions":{"x":{"$anchor":"a"}}}),
            json!({"$ref":"#/definitions/a","definitions":{"a":{"$id":"https://example.com/a"}}}),
            json!({"$defs":{"a":{"$anchor":"x"},"b":{"$id":"https://example.com/b","$anchor":"x"}}}),
        ] {
            assert!(
                matches!(
                    Validator::compile(&schema),
                    Err(CompileError::Unsupported(_))
                ),
                "{schema}"
            );
        }
    }

    /// A refusal names the keyword refused, whatever order the schema's keys come in
    /// (sorted by default; as written under serde_json's `preserve_order`): a `$ref` met
    /// before the `$dynamicAnchor` it names is refused for the `$dynamicAnchor`, not for
    /// naming no `$anchor`.
    #[test]
    fn refusals_name_the_keyword_in_any_key_order() {
        for holder in ["$defs", "properties"] {
            let anchored = json!({"foo": {"$dynamicAnchor": "items"}});
            let mut ref_first = Map::new();
            ref_first.insert("$ref".to_owned(), json!("#items"));
            ref_first.insert(holder.to_owned(), anchored.clone());
            let mut ref_last = Map::new();
            ref_last.insert(holder.to_owned(), anchored);
            ref_last.insert("$ref".to_owned(), json!("#items"));
            for schema in [Value::Object(ref_first), Value::Object(ref_last)] {
                match Validator::compile(&schema) {
                    Err(CompileError::Unsupported(why)) => {
                        assert_eq!(why, "the keyword $dynamicAnchor", "{schema}")
                    }
                    other => panic!("{schema}: {other:?}"),
                }
            }
        }
    }

    /// A value in a message is its JSON text, cut after 60 bytes at a character boundary,
    /// written only as far as needed.
    #[test]
    fn values_are_shown_by_their_start() {
        let whole = |v: &Value| {
            let mut text = v.to_string();
            if text.len() > 60 {
                let mut end = 60;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.truncate(end);
                text.push('…');
            }
            text
        };
        let mut values = vec![json!(1), json!("short"), json!(null)];
        for pad in 55..66 {
            values.push(json!("x".repeat(pad)));
            values.push(json!(format!("{}é😀é", "y".repeat(pad - 4))));
        }
        values.push(json!((0..100_000).collect::<Vec<_>>()));
        for v in &values {
            assert_eq!(show(v), whole(v), "{v:.80}");
        }
    }

    /// The pattern rewrites book/src/tools.md describes, each against jsonschema: `.`
    /// matches no line terminator of ECMA-262 (`\n`, `\r`, U+2028, U+2029), and `~`
    /// inside a class is a literal (regex-lite reads `~~` there as an operator).
    #[test]
    fn documented_pattern_rewrites_hold() {
        let cases = [
            ("^.$", "a", true),
            ("^.$", "\r", false),
            ("^.$", "\u{2028}", false),
            ("^.$", "\u{2029}", false),
            ("^.$", "\u{85}", true),
            ("^[a~~b]+$", "a~~b", true),
            ("^[a~~b]+$", "~", true),
            ("^[a~~b]+$", "c", false),
        ];
        for (pattern, text, expected) in cases {
            let schema = json!({ "pattern": pattern });
            let own = Validator::compile(&schema).expect("compiles");
            let instance = json!(text);
            assert_eq!(own.is_valid(&instance), expected, "{pattern} {text:?}");
            assert_eq!(
                reference(&schema).is_valid(&instance),
                expected,
                "jsonschema: {pattern} {text:?}"
            );
        }
    }

    /// Malformed schemas do not compile, and jsonschema agrees that they are malformed.
    #[test]
    fn malformed_schemas_are_refused() {
        for schema in [
            json!(3),
            json!({"type":"strin"}),
            json!({"type":["string","string"]}),
            json!({"type":[]}),
            json!({"required":["a","a"]}),
            json!({"required":"a"}),
            json!({"items":[{"type":"string"}]}),
            json!({"minLength":-1}),
            json!({"minLength":1.5}),
            json!({"minimum":"1"}),
            json!({"multipleOf":0}),
            json!({"multipleOf":-2}),
            json!({"enum":3}),
            json!({"anyOf":[]}),
            json!({"allOf":{}}),
            json!({"not":3}),
            json!({"properties":{"a":3}}),
            json!({"uniqueItems":1}),
            json!({"$ref":3}),
            json!({"$ref":"#/$defs/missing"}),
            json!({"$anchor":"1x"}),
            json!({"title":3}),
            json!({"$schema":3}),
            json!({"dependentRequired":{"a":[1]}}),
        ] {
            assert!(
                matches!(Validator::compile(&schema), Err(CompileError::Invalid(_))),
                "{schema}"
            );
            assert!(
                jsonschema::options().build(&schema).is_err(),
                "jsonschema accepts {schema}"
            );
        }
    }

    /// The named properties are found by name whatever order they come in (serde_json
    /// sorts a schema's keys unless `preserve_order` is on, so the differential tests
    /// alone would not notice an index left unsorted).
    #[test]
    fn named_properties_are_found_in_any_order() {
        let names = ["z", "a", "text", "m", "ab", "b"];
        let named = Named::new(
            names
                .iter()
                .zip(0..)
                .map(|(n, i)| (n.to_string(), i))
                .collect(),
        );
        for (i, name) in names.iter().enumerate() {
            assert_eq!(named.get(name), Some(i), "{name}");
        }
        for missing in ["", "c", "aa", "zz", "tex", "texts"] {
            assert_eq!(named.get(missing), None, "{missing}");
        }
        assert_eq!(Named::<NodeId>::new(Vec::new()).get("a"), None);
    }

    /// Problems are worded with their instance paths, at most five of them. (The
    /// properties are written sorted: their problems come in the schema's order, which
    /// is the written one under serde_json's `preserve_order`.)
    #[test]
    fn problems_name_their_paths() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a/b": {"minimum": 3},
                "n": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 2}},
                "text": {"type": "string"}
            },
            "required": ["text", "n"],
            "additionalProperties": false
        });
        let v = Validator::compile(&schema).expect("compiles");
        let problems = v
            .validate(&json!({"text": 1, "tags": ["ok", 7, "long"], "a/b": 2, "zz": 0}))
            .expect_err("invalid");
        assert_eq!(
            problems,
            "\"n\" is a required property; /a~1b: 2 is less than 3; \
             /tags/1: 7 is not of type \"string\"; /tags/2: \"long\" is longer than 2 \
             characters; /text: 1 is not of type \"string\""
        );
        let one = v
            .validate(&json!({"text": "t", "n": 1, "zz": 0}))
            .expect_err("invalid");
        assert_eq!(one, "the property \"zz\" is not allowed");
        assert_eq!(v.validate(&json!({"text": "t", "n": 1})), Ok(()));
    }

    /// multipleOf is decimal: what the schema's author wrote is what is checked.
    #[test]
    fn multiple_of_is_decimal() {
        let cases = [
            (json!(0.3), json!(0.1), true),
            (json!(0.0075), json!(0.0001), true),
            (json!(0.00751), json!(0.0001), false),
            (json!(10), json!(0.1), true),
            (json!(1e300), json!(3), false),
            (json!(3e300), json!(3), true),
            (json!(1e-7), json!(1e-8), true),
            (json!(18446744073709551615_u64), json!(5), true),
            (json!(18446744073709551615_u64), json!(0.5), true),
            (json!(-4.5), json!(1.5), true),
            (json!(0), json!(0.7), true),
        ];
        for (x, m, expected) in cases {
            let v = Validator::compile(&json!({"multipleOf": m})).expect("compiles");
            assert_eq!(v.is_valid(&x), expected, "{x} multipleOf {m}");
        }
    }

    /// Exponents past any float's, which only serde_json's `arbitrary_precision` lets a
    /// number carry (CI runs these tests under it; without it such texts do not parse
    /// and the cases are skipped), are decided at once and exactly: no loop as long as
    /// the exponent (`1e2000000000` against 5 ran two billion steps), no overflow of the
    /// exponents' difference (`1e2147483647` against 0.5 overflowed an `i32`).
    #[test]
    fn multiple_of_decides_huge_exponents_at_once() {
        let cases = [
            ("1e2000000000", "5", true),
            ("3e2000000000", "7", false),
            ("7e2147483647", "7", true),
            ("1e2147483647", "0.5", true),
            ("1e2147483647", "3", false),
            ("1e-2147483648", "5e3", false),
            ("1e-2147483648", "1e-2147483648", true),
            ("2e-2147483648", "1e-2147483647", false),
        ];
        // Without the feature, the first text is out of range (and the last ones round
        // to zero): nothing here to check.
        if serde_json::from_str::<Number>(cases[0].0).is_err() {
            return;
        }
        for (x, m, expected) in cases {
            let x: Number = serde_json::from_str(x).expect("a number");
            let m: Number = serde_json::from_str(m).expect("a number");
            assert_eq!(is_multiple(&x, &m), expected, "{x} multipleOf {m}");
        }
    }

    /// A deep instance is not taken for a reference cycle: the count of schema steps
    /// starts again at each step into the instance.
    #[test]
    fn deep_instances_are_not_cycles() {
        let v = Validator::compile(
            &json!({"anyOf":[{"type":"integer"},{"type":"array","items":{"$ref":"#"}}]}),
        )
        .expect("compiles");
        let mut deep = json!(1);
        for _ in 0..120 {
            deep = json!([deep]);
        }
        assert_eq!(v.validate(&deep), Ok(()));
        let mut bad = json!("x");
        for _ in 0..120 {
            bad = json!([bad]);
        }
        assert!(!v.is_valid(&bad));
    }

    /// Alternatives that recurse into the same children cost each (schema, value) pair
    /// once: a 40-deep tagged tree would otherwise take 2^40 evaluations.
    #[test]
    fn recursive_alternatives_are_linear() {
        let v = Validator::compile(&json!({"$defs":{"node":{"oneOf":[
            {"properties":{"kind":{"const":"a"},"kids":{"items":{"$ref":"#/$defs/node"}}}},
            {"properties":{"kind":{"const":"b"},"kids":{"items":{"$ref":"#/$defs/node"}}}}]}},
            "$ref":"#/$defs/node"}))
        .expect("compiles");
        let mut tree = json!({"kind":"a"});
        for _ in 0..40 {
            tree = json!({"kind":"b","kids":[tree]});
        }
        assert!(v.is_valid(&tree));
        assert!(v.validate(&json!({"kind":"c","kids":[tree]})).is_err());
        let cycle =
            Validator::compile(&json!({"anyOf":[{"$ref":"#"},{"$ref":"#"}]})).expect("compiles");
        assert!(!cycle.is_valid(&json!(1)));
    }

    /// A client's arguments cannot make evaluation use an unbounded stack, whatever chain
    /// of references the schema has between two levels of the instance: past
    /// `MAX_EVAL_FRAMES` steps in progress the value is invalid, with a reason. (Before
    /// the bound, this argument overflowed a 2 MiB worker stack and aborted the process;
    /// the test runs on a thread of that size.) A recursive schema of a few steps per
    /// level still takes arguments as deep as serde_json parses.
    #[test]
    fn deep_arguments_under_a_long_reference_chain_are_refused_not_a_crash() {
        let check = || {
            // 40 references between two levels of the instance.
            let mut defs = serde_json::Map::new();
            for i in 0..40 {
                let next = if i == 39 {
                    json!({"type": ["object", "null"], "properties": {"next": {"$ref": "#/$defs/d0"}}})
                } else {
                    json!({"allOf": [{"$ref": format!("#/$defs/d{}", i + 1)}]})
                };
                defs.insert(format!("d{i}"), next);
            }
            let v = Validator::compile(&json!({"$defs": defs.clone(), "$ref": "#/$defs/d0"}))
                .expect("compiles");
            let mut deep = json!(null);
            for _ in 0..60 {
                deep = json!({ "next": deep });
            }
            assert!(!v.is_valid(&deep));
            let why = v.validate(&deep).expect_err("refused");
            assert!(why.contains("nests too deeply"), "{why}");
            assert!(v.is_valid(&json!({"next": {"next": null}})));
            // Under `not` too: the bound makes the instance invalid, not the schema false.
            let negated =
                Validator::compile(&json!({"$defs": defs, "not": {"$ref": "#/$defs/d0"}}))
                    .expect("compiles");
            assert!(!negated.is_valid(&deep));
            assert_eq!(
                negated.validate(&deep),
                Err("the value nests too deeply to evaluate against this schema".to_owned())
            );
            assert!(!negated.is_valid(&json!({"next": {"next": null}})));
            assert!(negated.is_valid(&json!({"next": 1})));

            // A plain recursive schema: 120 levels (serde_json parses at most 128).
            let tree = Validator::compile(&json!({"$defs": {"t": {"type": "object",
                "properties": {"kid": {"$ref": "#/$defs/t"}}}}, "$ref": "#/$defs/t"}))
            .expect("compiles");
            let mut deep = json!({});
            for _ in 0..120 {
                deep = json!({ "kid": deep });
            }
            assert!(tree.is_valid(&deep));
            assert!(tree.validate(&deep).is_ok());
        };
        std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn(check)
            .expect("a thread")
            .join()
            .expect("no panic and no overflow");
    }

    /// A long chain of references without a cycle either compiles and validates (up to
    /// `MAX_EVAL_DEPTH` schemas deep, which evaluation then never mistakes for a cycle),
    /// or is refused at build, naming why, without compiling it recursively past that
    /// depth (a chain of 500 overflowed a 2 MiB stack before). `$ref` pointers are read
    /// as RFC 6901 says (serde_json's `Value::pointer`): no signs or leading zeros.
    #[test]
    fn long_reference_chains_and_pointers() {
        let chain = |n: usize| {
            let mut defs = serde_json::Map::new();
            for i in 0..n {
                defs.insert(
                    format!("c{i}"),
                    json!({"$ref": format!("#/$defs/c{}", i + 1)}),
                );
            }
            defs.insert(format!("c{n}"), json!({"type": "integer"}));
            json!({"$defs": defs, "$ref": "#/$defs/c0"})
        };
        let run = move || {
            let v = Validator::compile(&chain(100)).expect("a chain of 100 compiles");
            assert!(v.is_valid(&json!(1)));
            assert!(v.validate(&json!(1)).is_ok());
            assert!(!v.is_valid(&json!("x")));
            match Validator::compile(&chain(500)) {
                Err(CompileError::Unsupported(why)) => {
                    assert!(why.contains("chain of $ref"), "{why}")
                }
                other => panic!("{other:?}"),
            }
        };
        std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn(run)
            .expect("a thread")
            .join()
            .expect("no panic and no overflow");
        let tuple = |index: &str| {
            Validator::compile(&json!({"prefixItems": [{"type": "string"}],
                "items": {"$ref": format!("#/prefixItems/{index}")}}))
        };
        let v = tuple("0").expect("compiles");
        assert!(v.is_valid(&json!(["a", "b"])));
        assert!(!v.is_valid(&json!(["a", 1])));
        for bad in ["00", "+0", "-0", "1"] {
            assert!(matches!(tuple(bad), Err(CompileError::Invalid(_))), "{bad}");
        }
    }

    /// `$ref` fragments are percent-decoded before they are read as a pointer or an
    /// anchor: `%` takes exactly two hex digits, of either case, and the bytes must be
    /// UTF-8; anything else is malformed, and so is the `$ref`.
    #[test]
    fn ref_fragments_are_percent_decoded() {
        for (fragment, decoded) in [
            ("", ""),
            ("/$defs/a", "/$defs/a"),
            ("/$defs/c%25d", "/$defs/c%d"),
            ("/a%2Fb%7e", "/a/b~"),
            ("%C3%A9", "é"),
            ("%c3%a9x", "éx"),
        ] {
            assert_eq!(
                percent_decode(fragment).as_deref(),
                Some(decoded),
                "{fragment}"
            );
        }
        for bad in [
            "%", "%2", "a%2", "%zz", "%+1", "%-1", "% 1", "%1g", "%FF", "%C3",
        ] {
            assert_eq!(percent_decode(bad), None, "{bad}");
        }
        let schema = |r: &str| json!({"$defs": {"é": {"type": "string"}}, "$ref": r});
        let v = Validator::compile(&schema("#/$defs/%C3%A9")).expect("compiles");
        assert!(v.is_valid(&json!("s")));
        assert!(!v.is_valid(&json!(1)));
        for bad in ["#/$defs/%C3", "#/$defs/%+1"] {
            assert!(
                matches!(
                    Validator::compile(&schema(bad)),
                    Err(CompileError::Invalid(_))
                ),
                "{bad}"
            );
        }
    }

    /// A compiled schema can be shared between threads.
    #[test]
    fn validators_are_send_and_sync() {
        fn shared<T: Send + Sync>() {}
        shared::<Validator>();
        shared::<CompileError>();
    }

    /// A reference cycle that reads no instance ends, as invalid.
    #[test]
    fn reference_cycles_end() {
        let v = Validator::compile(&json!({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}))
            .expect("compiles");
        assert!(!v.is_valid(&json!(1)));
        assert!(v.validate(&json!(1)).is_err());
    }

    /// One pass without a report, with no step budget: the verdict, the steps taken and
    /// how many pairs the memo kept.
    fn run(v: &Validator, instance: &Value) -> (bool, u64, usize) {
        let mut memo = Memo::new(u64::MAX);
        let ok = v.eval(0, instance, &mut None, &mut memo, 0);
        assert_eq!(memo.frames, 0, "every step in progress ended");
        assert_eq!(memo.stop, None, "no bound reached");
        (ok, memo.steps, memo.seen.len())
    }

    /// A tree of `{"kids": [...]}` objects, one kid per level, `levels` deep, with `leaf`
    /// at the bottom.
    fn kids(levels: usize, leaf: Value) -> Value {
        let mut tree = json!({ "kids": [leaf] });
        for _ in 1..levels {
            tree = json!({ "kids": [tree] });
        }
        tree
    }

    /// The steps one pass takes on `instance(n)` for n = 10, 20, 40 and 80: exactly
    /// linear in n (each doubling of n adds twice the steps the previous one added), and
    /// at most `per_level` steps for each level. Each instance is valid, `validate`
    /// agrees within that many steps per pass, and so it does on `invalid(n)` when given,
    /// naming its problem once.
    fn linear(
        schema: Value,
        instance: impl Fn(usize) -> Value,
        invalid: Option<(&dyn Fn(usize) -> Value, &str)>,
        per_level: u64,
    ) -> Vec<u64> {
        let v = Validator::compile(&schema).expect("compiles");
        let steps: Vec<u64> = [10, 20, 40, 80]
            .into_iter()
            .map(|n| {
                let (ok, steps, _) = run(&v, &instance(n));
                assert!(ok, "{schema} on {n} levels");
                assert!(
                    steps <= per_level * n as u64,
                    "{schema}: {steps} steps on {n}"
                );
                let bounded = Validator::compile(&schema)
                    .expect("compiles")
                    .max_steps(per_level * n as u64);
                assert_eq!(bounded.validate(&instance(n)), Ok(()), "{schema}");
                if let Some((invalid, problem)) = &invalid {
                    let why = bounded.validate(&invalid(n)).expect_err("invalid");
                    assert!(why.ends_with(problem), "{schema}: {why}");
                    assert_eq!(why.matches(problem).count(), 1, "said once: {why}");
                }
                steps
            })
            .collect();
        let added: Vec<u64> = steps.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(added[1], 2 * added[0], "{schema}: {steps:?}");
        assert_eq!(added[2], 2 * added[1], "{schema}: {steps:?}");
        steps
    }

    /// The hardening issue's case: a recursive `allOf` of two branches over the same
    /// children, which took 4^levels/2 evaluations before `allOf` was memoised.
    fn recursive_all_of() -> Value {
        let branch = json!({"properties":{"kids":{"items":{"$ref":"#/$defs/node"}}}});
        json!({"$defs":{"node":{"type":"object","allOf":[branch.clone(), branch]}},
            "$ref":"#/$defs/node"})
    }

    /// `allOf` whose branches recurse into the same children is linear, reported problems
    /// included: the problem of the leaf is found once, not once per path to it.
    #[test]
    fn recursive_all_of_is_linear() {
        linear(
            recursive_all_of(),
            |n| kids(n, json!({})),
            Some((
                &|n| kids(n, json!(1)),
                "/kids/0: 1 is not of type \"object\"",
            )),
            10,
        );
    }

    /// The same case, timed, at 40 levels: well under 10 ms (a release build's test;
    /// a debug build measures nothing).
    #[test]
    #[cfg_attr(debug_assertions, ignore = "timed: run with --release")]
    fn recursive_all_of_40_deep_is_fast() {
        let v = Validator::compile(&recursive_all_of()).expect("compiles");
        let deep = kids(40, json!({}));
        let bad = kids(40, json!(1));
        let started = std::time::Instant::now();
        assert!(v.is_valid(&deep));
        assert_eq!(v.validate(&deep), Ok(()));
        assert!(v.validate(&bad).is_err());
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_millis(10), "{took:?}");
    }

    /// `dependentSchemas` recursing beside `properties`.
    #[test]
    fn recursive_dependent_schemas_are_linear() {
        let down = json!({"properties":{"kids":{"items":{"$ref":"#/$defs/node"}}}});
        linear(
            json!({"$defs":{"node":{"type":"object","properties":{"kids":{"items":{"$ref":"#/$defs/node"}}},
                "dependentSchemas":{"kids":down}}},"$ref":"#/$defs/node"}),
            |n| kids(n, json!({})),
            Some((
                &|n| kids(n, json!(1)),
                "/kids/0: 1 is not of type \"object\"",
            )),
            8,
        );
    }

    /// `$ref` beside keywords that recurse too.
    #[test]
    fn recursive_ref_beside_keywords_is_linear() {
        linear(
            json!({"$defs":{
                "base":{"properties":{"kids":{"items":{"$ref":"#/$defs/node"}}}},
                "node":{"type":"object","$ref":"#/$defs/base",
                    "properties":{"kids":{"items":{"$ref":"#/$defs/node"}}}}},
                "$ref":"#/$defs/node"}),
            |n| kids(n, json!({})),
            Some((
                &|n| kids(n, json!(1)),
                "/kids/0: 1 is not of type \"object\"",
            )),
            8,
        );
    }

    /// A key matched by `properties` and by `patternProperties` at once.
    #[test]
    fn recursive_properties_and_patterns_on_one_key_are_linear() {
        linear(
            json!({"$defs":{"node":{"type":"object",
                "properties":{"kids":{"items":{"$ref":"#/$defs/node"}}},
                "patternProperties":{"^k":{"items":{"$ref":"#/$defs/node"}}}}},
                "$ref":"#/$defs/node"}),
            |n| kids(n, json!({})),
            Some((
                &|n| kids(n, json!(1)),
                "/kids/0: 1 is not of type \"object\"",
            )),
            8,
        );
    }

    /// `if` and `then` over the same children (and `else` likewise).
    #[test]
    fn recursive_conditions_are_linear() {
        let down = json!({"properties":{"kids":{"items":{"$ref":"#/$defs/node"}}}});
        for branch in ["then", "else"] {
            let mut node = json!({"type":"object","if":down,
                "properties":{"kids":{"items":{"$ref":"#/$defs/node"}}}});
            node[branch] = down.clone();
            if branch == "else" {
                // The condition fails on every object below the leaf, so `else` applies.
                node["if"] = json!({"allOf":[down, {"required":["none"]}]});
            }
            linear(
                json!({"$defs":{"node":node},"$ref":"#/$defs/node"}),
                |n| kids(n, json!({})),
                Some((
                    &|n| kids(n, json!(1)),
                    "/kids/0: 1 is not of type \"object\"",
                )),
                16,
            );
        }
    }

    /// Alternatives: `anyOf` whose first branch fails after recursing, `oneOf` whose
    /// branches both recurse, `not` twice over, `contains` beside `items`; each stays
    /// linear.
    #[test]
    fn recursive_alternatives_stay_linear() {
        let down = json!({"properties":{"kids":{"items":{"$ref":"#/$defs/node"}}}});
        let alternatives = [
            json!({"anyOf":[{"allOf":[down, {"required":["none"]}]}, down]}),
            json!({"oneOf":[down, {"allOf":[down, {"required":["none"]}]}]}),
            json!({"not":{"not":down}, "allOf":[down]}),
        ];
        for node in alternatives {
            let mut node = node;
            node["type"] = json!("object");
            linear(
                json!({"$defs":{"node":node},"$ref":"#/$defs/node"}),
                |n| kids(n, json!({})),
                None,
                12,
            );
        }
        let nested = |n: usize| {
            let mut v = json!([]);
            for _ in 0..n {
                v = json!([v]);
            }
            v
        };
        linear(
            json!({"$defs":{"node":{"type":"array","items":{"$ref":"#/$defs/node"},
                "contains":{"$ref":"#/$defs/node"},"minContains":0}},"$ref":"#/$defs/node"}),
            nested,
            None,
            8,
        );
    }

    /// `propertyNames` in a recursive type whose `allOf` branches reach the same
    /// children: the memo of the instance survives the names' own (each name is a
    /// temporary value, evaluated with a memo of its own, cleared between names since the
    /// next name may take the same address).
    #[test]
    fn recursive_property_names_are_linear() {
        // A name schema that applies `d` sixteen times in place, memoised from there.
        let defs = json!({
            "name":{"allOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"}]},
            "a":{"allOf":[{"$ref":"#/$defs/b"},{"$ref":"#/$defs/b"}]},
            "b":{"allOf":[{"$ref":"#/$defs/c"},{"$ref":"#/$defs/c"}]},
            "c":{"allOf":[{"$ref":"#/$defs/d"},{"$ref":"#/$defs/d"}]},
            "d":{"allOf":[{"maxLength":4}]}});
        let mut with_node = defs.clone();
        let down = json!({"properties":{"kids":{"items":{"$ref":"#/$defs/node"}}}});
        // The names are checked between the two branches.
        with_node["node"] = json!({"type":"object",
            "allOf":[down.clone(), {"propertyNames":{"$ref":"#/$defs/name"}}, down]});
        linear(
            json!({"$defs":with_node,"$ref":"#/$defs/node"}),
            |n| kids(n, json!({})),
            Some((
                &|n| kids(n, json!({"long name": 1})),
                "/kids/0: the property name \"long name\" does not match `propertyNames`",
            )),
            40,
        );
        let names =
            Validator::compile(&json!({"$defs":defs,"propertyNames":{"$ref":"#/$defs/name"}}))
                .expect("compiles");
        let mut o = Map::new();
        o.insert("kids".to_owned(), json!(1));
        o.insert("long name".to_owned(), json!(1));
        assert!(!names.is_valid(&Value::Object(o)));
    }

    /// The memo keeps only pairs that can be met again: nothing for a schema without a
    /// subschema applied from two places, and no scalar near the top of its evaluation
    /// under one, so a flat array of scalars costs no memory even under a recursive type.
    #[test]
    fn the_memo_keeps_only_what_can_repeat() {
        let memo_len = |schema: Value, instance: Value| {
            let v = Validator::compile(&schema).expect("compiles");
            let (ok, _, kept) = run(&v, &instance);
            (ok, kept)
        };
        let flat = json!((0..1000).collect::<Vec<_>>());
        assert_eq!(
            memo_len(json!({"contains": {"minimum": 2000}}), flat.clone()),
            (false, 0)
        );
        assert_eq!(
            memo_len(
                json!({"items": {"anyOf": [{"type": "string"}, {"minimum": 0}]}}),
                flat.clone()
            ),
            (true, 0)
        );
        assert_eq!(
            memo_len(
                json!({"items": {"anyOf": [{"type": "string"}, {"items": {"minimum": 0}}]}}),
                json!([[1], [2], [3]])
            ),
            (true, 0)
        );
        // A recursive type: the array itself is kept, its thousand numbers are not.
        assert_eq!(
            memo_len(
                json!({"$defs":{"v":{"anyOf":[{"type":"integer"},
                    {"type":"array","items":{"$ref":"#/$defs/v"}}]}},"$ref":"#/$defs/v"}),
                flat
            ),
            (true, 1)
        );
    }

    /// The step budget: an instance that needs exactly `max_steps` steps is evaluated, one
    /// that needs one more is invalid, with the problem that says why. `validate` words it
    /// alone.
    #[test]
    fn the_step_budget_holds_at_its_bound() {
        let schema = recursive_all_of();
        let deep = kids(30, json!({}));
        let (ok, needed, _) = run(&Validator::compile(&schema).expect("compiles"), &deep);
        assert!(ok);
        let at = Validator::compile(&schema)
            .expect("compiles")
            .max_steps(needed);
        assert!(at.is_valid(&deep));
        assert_eq!(at.validate(&deep), Ok(()));
        let past = Validator::compile(&schema)
            .expect("compiles")
            .max_steps(needed - 1);
        assert!(!past.is_valid(&deep));
        assert_eq!(
            past.validate(&deep),
            Err(format!(
                "the value is too complex to evaluate against this schema (more than {} steps)",
                needed - 1
            ))
        );
        // The default: one step for the array and one for each item.
        let v = Validator::compile(&json!({"items": {"type": "integer"}})).expect("compiles");
        let items = |n: u64| Value::Array((0..n).map(|_| json!(0)).collect());
        let fits = items(DEFAULT_MAX_STEPS - 1);
        assert!(v.is_valid(&fits));
        assert_eq!(v.validate(&fits), Ok(()));
        let over = items(DEFAULT_MAX_STEPS);
        assert!(!v.is_valid(&over));
        assert_eq!(
            v.validate(&over),
            Err(format!(
                "the value is too complex to evaluate against this schema (more than \
                 {DEFAULT_MAX_STEPS} steps)"
            ))
        );
    }

    /// Past a bound the instance is invalid whatever keyword the step was under: under
    /// `not`, running out of steps or meeting a reference cycle does not make the value
    /// valid.
    #[test]
    fn bounds_fail_closed_under_not() {
        let v =
            Validator::compile(&json!({"not": {"items": {"type": "string"}}})).expect("compiles");
        let numbers = json!([1, 2, 3]);
        assert!(v.is_valid(&numbers));
        let v = v.max_steps(2);
        assert!(!v.is_valid(&numbers));
        assert_eq!(
            v.validate(&numbers),
            Err(
                "the value is too complex to evaluate against this schema (more than 2 \
                 steps)"
                    .to_owned()
            )
        );
        let cycle = Validator::compile(
            &json!({"$defs":{"a":{"$ref":"#/$defs/a"}},"not":{"$ref":"#/$defs/a"}}),
        )
        .expect("compiles");
        assert!(!cycle.is_valid(&json!(1)));
        assert_eq!(
            cycle.validate(&json!(1)),
            Err("the schema nests too deeply to evaluate (a reference cycle?)".to_owned())
        );
        let found = Validator::compile(&json!({"properties":{"a":{"items":{"$ref":"#/$defs/a"}}},
            "$defs":{"a":{"$ref":"#/$defs/a"}}}))
        .expect("compiles");
        assert_eq!(
            found.validate(&json!({"a": [1]})),
            Err("/a/0: the schema nests too deeply to evaluate (a reference cycle?)".to_owned())
        );
    }

    /// A key of the instance that a problem repeats, in its path or its message, is cut
    /// after 60 bytes (of the key in a path, of its JSON text in a message) at a
    /// character boundary, with `…`.
    #[test]
    fn reflected_keys_are_cut() {
        let closed = Validator::compile(&json!({"additionalProperties": false,
            "patternProperties": {"^n": {}}}))
        .expect("compiles");
        let not_allowed = |key: &str| {
            let mut o = Map::new();
            o.insert(key.to_owned(), json!(1));
            closed.validate(&Value::Object(o)).expect_err("invalid")
        };
        // 58 characters and the quotes: 60 bytes, shown whole.
        let at = "k".repeat(58);
        assert_eq!(
            not_allowed(&at),
            format!("the property \"{at}\" is not allowed")
        );
        // One more: the JSON text is cut after 60 bytes, in the key.
        let past = "k".repeat(59);
        assert_eq!(
            not_allowed(&past),
            format!("the property \"{past}… is not allowed")
        );
        // A character across the bound is left out whole.
        assert_eq!(
            not_allowed(&format!("{at}é")),
            format!("the property \"{at}… is not allowed")
        );
        let names =
            Validator::compile(&json!({"propertyNames": {"maxLength": 3}})).expect("compiles");
        let mut o = Map::new();
        o.insert("p".repeat(100_000), json!(1));
        assert_eq!(
            names.validate(&Value::Object(o)),
            Err(format!(
                "the property name \"{}… does not match `propertyNames`",
                "p".repeat(59)
            ))
        );
        // In a path: the key's first 60 bytes, escaped as a JSON Pointer.
        let typed = Validator::compile(&json!({"additionalProperties": {"type": "string"}}))
            .expect("compiles");
        let at_path = |key: &str| {
            let mut o = Map::new();
            o.insert(key.to_owned(), json!(1));
            typed.validate(&Value::Object(o)).expect_err("invalid")
        };
        let key = format!("a/b~{}", "c".repeat(56));
        assert_eq!(
            at_path(&key),
            format!("/a~1b~0{}: 1 is not of type \"string\"", "c".repeat(56))
        );
        assert_eq!(
            at_path(&format!("{key}d")),
            format!("/a~1b~0{}…: 1 is not of type \"string\"", "c".repeat(56))
        );
        assert_eq!(
            at_path(&format!("{}😀", "c".repeat(58))),
            format!("/{}…: 1 is not of type \"string\"", "c".repeat(58))
        );
        assert_eq!(
            at_path(&"c".repeat(1_000_000)),
            format!("/{}…: 1 is not of type \"string\"", "c".repeat(60))
        );
    }
}
