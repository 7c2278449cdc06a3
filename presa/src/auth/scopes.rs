//! Scopes: what a scope may be (RFC 6749 section 3.3), and how a server's scopes imply
//! one another (the 2026-07-28 revision asks servers to honour such hierarchies when they
//! decide whether a token is enough).

use std::collections::{HashMap, HashSet};

/// Whether `scope` is a scope token: one or more printable ASCII characters other than
/// space, `"` and `\` (RFC 6749 section 3.3).
pub fn is_scope_token(scope: &str) -> bool {
    presa_rules::scope::is_token(scope)
}

/// Which scopes a granted scope also covers, closed over chains (`a` implies `b`, `b`
/// implies `c`: `a` covers `c`).
#[derive(Debug, Default)]
pub(crate) struct ScopeRules {
    covers: HashMap<String, HashSet<String>>,
}

impl ScopeRules {
    /// The rules of `implies` (each a broad scope and the narrower ones it implies).
    pub(crate) fn new(implies: &[(String, Vec<String>)]) -> ScopeRules {
        let mut direct: HashMap<&str, Vec<&str>> = HashMap::new();
        for (broad, narrower) in implies {
            direct
                .entry(broad.as_str())
                .or_default()
                .extend(narrower.iter().map(String::as_str));
        }
        let mut covers = HashMap::new();
        for &broad in direct.keys() {
            let mut seen: HashSet<String> = HashSet::new();
            let mut next = vec![broad];
            while let Some(scope) = next.pop() {
                for &n in direct.get(scope).into_iter().flatten() {
                    if n != broad && seen.insert(n.to_owned()) {
                        next.push(n);
                    }
                }
            }
            covers.insert(broad.to_owned(), seen);
        }
        ScopeRules { covers }
    }

    /// Whether the scopes `granted` cover `needed`: one of them is it, or implies it.
    pub(crate) fn covers(&self, granted: &[String], needed: &str) -> bool {
        granted
            .iter()
            .any(|g| g == needed || self.covers.get(g).is_some_and(|c| c.contains(needed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implications_are_closed_over_chains() {
        let rules = ScopeRules::new(&[
            ("repo:admin".into(), vec!["repo:write".into()]),
            ("repo:write".into(), vec!["repo:read".into()]),
            ("loop:a".into(), vec!["loop:b".into()]),
            ("loop:b".into(), vec!["loop:a".into()]),
        ]);
        let granted = |s: &[&str]| s.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(rules.covers(&granted(&["repo:admin"]), "repo:read"));
        assert!(rules.covers(&granted(&["repo:write"]), "repo:read"));
        assert!(!rules.covers(&granted(&["repo:read"]), "repo:write"));
        assert!(rules.covers(&granted(&["repo:read"]), "repo:read"));
        assert!(!rules.covers(&granted(&[]), "repo:read"));
        assert!(rules.covers(&granted(&["loop:a"]), "loop:b"));
        assert!(!rules.covers(&granted(&["other"]), "repo:read"));
    }
}
