//! RFC 6570 level 1 URI templates (`notes://{id}`): literal text and simple `{name}`
//! expressions. Each name appears once, and two expressions never touch (a match could
//! not tell where one value ends and the next begins).
//!
//! A variable name is RFC 6570's `varname`: `varchar *( ["."] varchar )`, where a
//! `varchar` is an ASCII letter, a digit, `_` or a `%XX` escape. So `{id}`, `{user_id}`,
//! `{a.b}` and `{caf%C3%A9}` are names; `{}`, `{.a}`, `{a.}`, `{a..b}`, `{a-b}` and
//! `{%2}` are not. A literal holds no space or control character, none of
//! `"'<>\^`|{}`, and `%` only as the start of an escape.

use crate::uri::escape_at;
use std::fmt;
use std::ops::Range;

/// The name rule in words, for a help line.
pub const VARNAME_RULE: &str = "a variable name holds ASCII letters, digits, `_` and %XX escapes, with single `.`s between them";

/// One piece of a parsed template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part<'a> {
    /// Literal text, as written (non-empty).
    Literal(&'a str),
    /// A `{name}` expression.
    Variable {
        /// The name, without braces.
        name: &'a str,
        /// The byte range of the expression in the template, braces included.
        range: Range<usize>,
    },
}

/// A parsed template: its pieces in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template<'a> {
    parts: Vec<Part<'a>>,
}

impl<'a> Template<'a> {
    /// Parses `source` (see the module documentation for the grammar); the error names
    /// the first piece, left to right, that breaks it.
    pub fn parse(source: &'a str) -> Result<Self, TemplateError> {
        parse(source).map(|parts| Template { parts })
    }

    /// The pieces, in order.
    pub fn parts(&self) -> &[Part<'a>] {
        &self.parts
    }

    /// The variable names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.parts.iter().filter_map(|p| match p {
            Part::Variable { name, .. } => Some(*name),
            Part::Literal(_) => None,
        })
    }
}

/// What breaks the grammar.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TemplateProblem {
    /// A `{` without its `}`.
    Unclosed,
    /// A `}` without its `{`.
    Unopened,
    /// An expression that is not `{varname}` (an operator, an empty or invalid name); the
    /// expression as written, braces included.
    NotLevelOne(String),
    /// Two expressions with nothing between them; the first one's name and the second's.
    Adjacent(String, String),
    /// A name used a second time.
    Repeated(String),
    /// A space or control character in a literal.
    SpaceOrControl,
    /// A character RFC 6570 does not allow in a literal.
    NotInLiteral(char),
    /// A `%` in a literal that starts no escape.
    StrayPercent,
}

/// Where a template breaks the grammar, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateError {
    /// The byte range of the offending piece in the template: the expression, the brace,
    /// or the character.
    pub range: Range<usize>,
    /// What is wrong there.
    pub problem: TemplateProblem,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.problem {
            TemplateProblem::Unclosed => f.write_str("a `{` without its `}`"),
            TemplateProblem::Unopened => f.write_str("a `}` without its `{`"),
            TemplateProblem::NotLevelOne(expr) => {
                write!(f, "`{expr}` is not a level 1 variable ({VARNAME_RULE})")
            }
            TemplateProblem::Adjacent(first, second) => write!(
                f,
                "`{{{first}}}` and `{{{second}}}` have nothing between them, so their values cannot be told apart"
            ),
            TemplateProblem::Repeated(name) => write!(f, "variable `{{{name}}}` appears twice"),
            TemplateProblem::SpaceOrControl => {
                f.write_str("a space or control character, which no URI holds")
            }
            TemplateProblem::NotInLiteral(c) => write!(
                f,
                "`{c}` outside a variable, which RFC 6570 does not allow (escape it as %XX)"
            ),
            TemplateProblem::StrayPercent => {
                f.write_str("a `%` that starts no escape (RFC 6570: write it as %25)")
            }
        }
    }
}

impl std::error::Error for TemplateError {}

/// Whether `name` is an RFC 6570 `varname`.
pub fn is_varname(name: &str) -> bool {
    let b = name.as_bytes();
    let mut i = 0;
    // Whether the last thing read was a varchar: a `.` needs one on each side.
    let mut after_varchar = false;
    while i < b.len() {
        match b[i] {
            c if c.is_ascii_alphanumeric() || c == b'_' => i += 1,
            b'%' if escape_at(b, i) => i += 3,
            b'.' if after_varchar => {
                after_varchar = false;
                i += 1;
                continue;
            }
            _ => return false,
        }
        after_varchar = true;
    }
    after_varchar
}

fn parse(source: &str) -> Result<Vec<Part<'_>>, TemplateError> {
    let fail = |range: Range<usize>, problem| Err(TemplateError { range, problem });
    let bytes = source.as_bytes();
    let mut parts: Vec<Part<'_>> = Vec::new();
    let mut literal_start = 0;
    let mut i = 0;
    while let Some(c) = source[i..].chars().next() {
        let next = i + c.len_utf8();
        match c {
            '{' => {
                if literal_start < i {
                    parts.push(Part::Literal(&source[literal_start..i]));
                }
                let Some(len) = source[next..].find('}') else {
                    return fail(i..source.len(), TemplateProblem::Unclosed);
                };
                let end = next + len + 1;
                let name = &source[next..end - 1];
                if !is_varname(name) {
                    return fail(i..end, TemplateProblem::NotLevelOne(source[i..end].into()));
                }
                if let Some(Part::Variable { name: previous, .. }) = parts.last() {
                    return fail(
                        i..end,
                        TemplateProblem::Adjacent((*previous).into(), name.into()),
                    );
                }
                let repeated = parts
                    .iter()
                    .any(|p| matches!(p, Part::Variable { name: n, .. } if *n == name));
                if repeated {
                    return fail(i..end, TemplateProblem::Repeated(name.into()));
                }
                parts.push(Part::Variable {
                    name,
                    range: i..end,
                });
                literal_start = end;
                i = end;
                continue;
            }
            '}' => return fail(i..next, TemplateProblem::Unopened),
            '%' if !escape_at(bytes, i) => return fail(i..next, TemplateProblem::StrayPercent),
            '"' | '\'' | '<' | '>' | '\\' | '^' | '`' | '|' => {
                return fail(i..next, TemplateProblem::NotInLiteral(c));
            }
            // Spaces and controls as Unicode defines them, not only ASCII's.
            c if c.is_whitespace() || c.is_control() => {
                return fail(i..next, TemplateProblem::SpaceOrControl);
            }
            _ => {}
        }
        i = next;
    }
    if literal_start < source.len() {
        parts.push(Part::Literal(&source[literal_start..]));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(source: &str) -> (Range<usize>, TemplateProblem) {
        let e = Template::parse(source).expect_err(source);
        (e.range, e.problem)
    }

    #[test]
    fn parts_and_ranges() {
        let t = Template::parse("test://t/{id}/data.{ext}").expect("valid");
        assert_eq!(
            t.parts(),
            [
                Part::Literal("test://t/"),
                Part::Variable {
                    name: "id",
                    range: 9..13
                },
                Part::Literal("/data."),
                Part::Variable {
                    name: "ext",
                    range: 19..24
                },
            ]
        );
        assert_eq!(t.variables().collect::<Vec<_>>(), ["id", "ext"]);
        let t = Template::parse("{a}").expect("a lone variable");
        assert_eq!(t.parts().len(), 1);
        let t = Template::parse("x://é/{a}ü").expect("literals past ASCII");
        assert_eq!(t.parts()[2], Part::Literal("ü"));
        assert_eq!(Template::parse("").expect("empty").parts(), []);
        assert_eq!(
            Template::parse("n://plain").expect("no variable").parts(),
            [Part::Literal("n://plain")]
        );
    }

    /// RFC 6570's varname, at each edge of the rule.
    #[test]
    fn variable_names() {
        for ok in [
            "a", "A", "0", "_", "id", "user_id", "a.b", "a.b.c", "a%20b", "%C3%A9", "a.%20",
            "%20.a",
        ] {
            assert!(is_varname(ok), "{ok}");
        }
        for bad in [
            "", ".", ".a", "a.", "a..b", "%", "%2", "a%2", "%zz", "a-b", "a b", "é", "+a", "#a",
            "a:b", "a,b", "a*",
        ] {
            assert!(!is_varname(bad), "{bad}");
        }
    }

    #[test]
    fn each_problem_names_its_piece() {
        assert_eq!(problem("n://{id"), (4..7, TemplateProblem::Unclosed));
        assert_eq!(problem("n://a}b"), (5..6, TemplateProblem::Unopened));
        assert_eq!(
            problem("n://{+path}"),
            (4..11, TemplateProblem::NotLevelOne("{+path}".into()))
        );
        assert_eq!(
            problem("n://{}"),
            (4..6, TemplateProblem::NotLevelOne("{}".into()))
        );
        assert_eq!(
            problem("n://{a..b}"),
            (4..10, TemplateProblem::NotLevelOne("{a..b}".into()))
        );
        assert_eq!(
            problem("n://{a}{b}"),
            (7..10, TemplateProblem::Adjacent("a".into(), "b".into()))
        );
        assert_eq!(
            problem("n://{id}/{id}"),
            (9..13, TemplateProblem::Repeated("id".into()))
        );
        assert_eq!(
            problem("n://a b/{c}"),
            (5..6, TemplateProblem::SpaceOrControl)
        );
        assert_eq!(
            problem("n://{c}\t"),
            (7..8, TemplateProblem::SpaceOrControl)
        );
        assert_eq!(
            problem("n://\u{a0}"),
            (4..6, TemplateProblem::SpaceOrControl),
            "a space past ASCII"
        );
        assert_eq!(
            problem("n://a|b"),
            (5..6, TemplateProblem::NotInLiteral('|'))
        );
        assert_eq!(
            problem("n://%zz/{a}"),
            (4..5, TemplateProblem::StrayPercent)
        );
        assert_eq!(problem("n://{a}%2"), (7..8, TemplateProblem::StrayPercent));
        // The first problem from the left wins.
        assert_eq!(problem("n://a b}"), (5..6, TemplateProblem::SpaceOrControl));
    }

    #[test]
    fn literal_characters() {
        for c in ['"', '\'', '<', '>', '\\', '^', '`', '|'] {
            let t = format!("n://{c}{{a}}");
            assert_eq!(problem(&t), (4..5, TemplateProblem::NotInLiteral(c)), "{t}");
        }
        assert!(Template::parse("n://a%20b/{c}?x=1&y=*;~").is_ok());
    }

    #[test]
    fn messages() {
        let message = |s: &str| Template::parse(s).expect_err(s).to_string();
        assert_eq!(message("n://{id"), "a `{` without its `}`");
        assert_eq!(
            message("n://{a}{b}"),
            "`{a}` and `{b}` have nothing between them, so their values cannot be told apart"
        );
        assert_eq!(message("n://{id}/{id}"), "variable `{id}` appears twice");
        assert!(message("n://{+p}").starts_with("`{+p}` is not a level 1 variable ("));
        assert_eq!(
            message("n://100%/{id}"),
            "a `%` that starts no escape (RFC 6570: write it as %25)"
        );
        assert_eq!(
            message("n://a|"),
            "`|` outside a variable, which RFC 6570 does not allow (escape it as %XX)"
        );
    }
}
