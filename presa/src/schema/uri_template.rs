//! RFC 6570 level 1 URI templates (`test://template/{id}/data`): parsing, and matching a
//! concrete URI to extract the variables.

use crate::wire::uri::percent_decode;

/// One piece of a template.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var(String),
}

/// A parsed level-1 URI template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

impl UriTemplate {
    /// Parses a template: RFC 6570 level 1, with the grammar of
    /// [`presa_rules::template`] (the one `#[resource]` checks at compile time). Only
    /// simple `{name}` expressions; names are letters, digits, `_` and `%XX` escapes with
    /// single `.`s between them, each used once, and two expressions may not touch (the
    /// match would be ambiguous).
    pub fn parse(source: &str) -> Result<Self, String> {
        let parsed = presa_rules::template::Template::parse(source)
            .map_err(|e| format!("URI template {source:?}: {e}"))?;
        let parts = parsed
            .parts()
            .iter()
            .map(|p| match p {
                presa_rules::template::Part::Literal(l) => Part::Literal((*l).to_owned()),
                presa_rules::template::Part::Variable { name, .. } => Part::Var((*name).to_owned()),
            })
            .collect();
        Ok(UriTemplate {
            source: source.to_owned(),
            parts,
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The variable names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(v) => Some(v.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// Matches a concrete URI, returning each variable's (percent-decoded) value. A
    /// variable matches one or more characters and never spans `/`, `?` or `#`. Where it
    /// ends: at the end of the URI when the template ends with it or with the literal
    /// after it (so `{name}.txt` matches `a.txt.txt` with `a.txt`); where its segment
    /// ends when the literal after it holds the next `/`, `?` or `#` (so `{a}.txt/{b}`
    /// matches `a.txt.txt/b`); otherwise at the first occurrence of that literal. One
    /// pass, no backtracking, so matching is linear in the URI.
    pub fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let stop = |c: char| matches!(c, '/' | '?' | '#');
        let mut vars = Vec::new();
        let mut rest = uri;
        for (i, part) in self.parts.iter().enumerate() {
            match part {
                Part::Literal(l) => rest = rest.strip_prefix(l.as_str())?,
                Part::Var(name) => {
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Literal(next)) if i + 2 == self.parts.len() => {
                            rest.strip_suffix(next.as_str())?.len()
                        }
                        Some(Part::Literal(next)) => match next.find(stop) {
                            Some(k) => rest.find(stop)?.checked_sub(k)?,
                            None => rest.find(next.as_str())?,
                        },
                        _ => rest.find(stop).unwrap_or(rest.len()),
                    };
                    let value = rest
                        .get(..end)
                        .filter(|v| !v.is_empty() && !v.contains(stop))?;
                    vars.push((name.clone(), percent_decode(value)?));
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(vars)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::uri::percent_decode;

    #[test]
    fn matches_level_one_templates() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(
            t.matches("test://template/123/data"),
            Some(vec![("id".into(), "123".into())])
        );
        assert_eq!(t.matches("test://template//data"), None);
        assert_eq!(t.matches("test://template/1/2/data"), None);
        assert_eq!(t.matches("test://template/123/datax"), None);
        let t = UriTemplate::parse("notes://{id}").unwrap();
        assert_eq!(
            t.matches("notes://a%20b"),
            Some(vec![("id".into(), "a b".into())])
        );
    }

    /// A value may hold the literal that follows its variable (level 1 leaves `.`, `-`,
    /// `_` and `~` unescaped): the template's last literal is matched at the end of the
    /// URI, and a literal holding the next `/` where the segment ends.
    #[test]
    fn a_value_may_hold_the_literal_after_it() {
        let t = UriTemplate::parse("t://{x}.txt").unwrap();
        assert_eq!(
            t.matches("t://a.txt.txt"),
            Some(vec![("x".into(), "a.txt".into())])
        );
        assert_eq!(t.matches("t://a.txt"), Some(vec![("x".into(), "a".into())]));
        assert_eq!(t.matches("t://.txt"), None, "an empty value");
        assert_eq!(t.matches("t://a/b.txt"), None, "a value spanning a segment");
        assert_eq!(t.matches("t://a.txt.md"), None);
        let t = UriTemplate::parse("x://{a}.txt/{b}").unwrap();
        assert_eq!(
            t.matches("x://a.txt.txt/b"),
            Some(vec![("a".into(), "a.txt".into()), ("b".into(), "b".into())])
        );
        assert_eq!(t.matches("x://a.md/b"), None);
        assert_eq!(
            t.matches("x://é.txt/b").map(|v| v[0].1.clone()).as_deref(),
            Some("é")
        );
        let t = UriTemplate::parse("y://{a}t/{b}").unwrap();
        assert_eq!(t.matches("y://é/b"), None, "no cut inside a character");
        // A literal inside a segment, followed by more: its first occurrence, as before.
        let t = UriTemplate::parse("v://{a}-{b}/end").unwrap();
        assert_eq!(
            t.matches("v://x-y-z/end"),
            Some(vec![("a".into(), "x".into()), ("b".into(), "y-z".into())])
        );
    }

    #[test]
    fn percent_escapes_are_two_hex_digits() {
        assert_eq!(percent_decode("a%2Fb%7e").as_deref(), Some("a/b~"));
        assert_eq!(percent_decode("%C3%A9").as_deref(), Some("é"));
        for bad in ["%+1", "%-1", "%1", "%", "%zz", "%C3"] {
            assert_eq!(percent_decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn rejects_bad_templates() {
        for bad in ["a{", "a{}", "a{b}{c}", "a{+b}", "a{b}x{b}", "a}b"] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
        // A `%` in a name starts a two-hex-digit escape; no URI holds a space.
        for bad in [
            "t://{%zz}",
            "t://{a%2}",
            "t://{a%}",
            "t://a b/{c}",
            "t://{c}\t",
        ] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad:?}");
        }
        assert!(UriTemplate::parse("t://{a%20b}/{c.d}").is_ok());
    }

    /// Variable names follow RFC 6570's `varname`, the grammar `#[resource]` checks too
    /// (presa_rules::template): a `.` only between two name characters.
    #[test]
    fn variable_names_are_rfc_6570_varnames() {
        for ok in ["t://{a.b.c}", "t://{_}", "t://{%C3%A9}", "t://{a.%20}"] {
            let t = UriTemplate::parse(ok).unwrap();
            assert_eq!(t.variables().count(), 1, "{ok}");
        }
        for bad in ["t://{a..b}", "t://{.a}", "t://{a.}", "t://{a-b}", "t://{.}"] {
            let e = UriTemplate::parse(bad).unwrap_err();
            assert!(e.contains("is not a level 1 variable"), "{bad}: {e}");
        }
        let t = UriTemplate::parse("t://{a.b}/x").unwrap();
        assert_eq!(
            t.matches("t://v%2E1/x"),
            Some(vec![("a.b".into(), "v.1".into())])
        );
    }
}
