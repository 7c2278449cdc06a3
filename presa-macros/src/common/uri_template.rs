//! Compile-time check of RFC 6570 level 1 URI templates (`notes://{id}`): only simple
//! `{name}` expressions, each name once, never two expressions side by side. presa's
//! runtime matcher accepts exactly these templates.

pub(crate) struct Template {
    pub(crate) variables: Vec<String>,
}

pub(crate) fn parse(source: &str) -> Result<Template, String> {
    let mut variables: Vec<String> = Vec::new();
    let mut rest = source;
    let mut last_was_variable = false;
    while let Some(open) = rest.find(['{', '}']) {
        if rest[open..].starts_with('}') {
            return Err("a `}` without its `{`".into());
        }
        if open == 0 && last_was_variable {
            return Err("two variables with nothing between them cannot be told apart".into());
        }
        let after = &rest[open + 1..];
        let close = after.find('}').ok_or("a `{` without its `}`")?;
        let name = &after[..close];
        let simple =
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !simple {
            return Err(format!(
                "`{{{name}}}` is not a level 1 variable (only `{{name}}` with letters, digits and `_`)"
            ));
        }
        if variables.iter().any(|v| v == name) {
            return Err(format!("variable `{{{name}}}` appears twice"));
        }
        variables.push(name.to_owned());
        rest = &after[close + 1..];
        last_was_variable = true;
        if !rest.is_empty() && !rest.starts_with('{') {
            last_was_variable = false;
        }
    }
    Ok(Template { variables })
}

/// What RFC 3986 does not allow in a fixed resource URI, if anything: the rule
/// `build()` applies (presa's `registry::uri_characters`), checked here so the error
/// points at the attribute. ASCII letters, digits and the RFC's delimiters only, `%`
/// only as an escape, one `#` at most, `[` `]` only in the authority.
pub(crate) fn uri_problem(uri: &str) -> Option<String> {
    let bytes = uri.as_bytes();
    let authority = uri.find("://").map(|at| {
        let start = at + 3;
        let len = uri[start..]
            .find(['/', '?', '#'])
            .unwrap_or(uri.len() - start);
        start..start + len
    });
    let mut fragment = false;
    for (i, &b) in bytes.iter().enumerate() {
        let why = match b {
            b'%' if !escape_at(bytes, i) => Some("a `%` that starts no escape"),
            b'#' if fragment => Some("a second `#`"),
            b'#' => {
                fragment = true;
                None
            }
            b'[' | b']' if !authority.as_ref().is_some_and(|a| a.contains(&i)) => {
                Some("`[` or `]` outside the authority")
            }
            _ if b.is_ascii_alphanumeric() || b"%-._~:/?[]@!$&'()*+,;=".contains(&b) => None,
            _ if !b.is_ascii() => Some("a character past ASCII"),
            _ => Some("a character no URI holds"),
        };
        if let Some(why) = why {
            return Some(format!("{why} (RFC 3986: escape it as %XX)"));
        }
    }
    None
}

/// What RFC 6570 does not allow in a template's literal text, if anything (checked with
/// the variables taken out): none of `"`, `'`, `<`, `>`, `\`, `^`, `` ` `` and `|`, `%`
/// only as an escape, no space or
/// control character.
pub(crate) fn literal_problem(template: &str) -> Option<String> {
    let mut literal = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        literal.push_str(&rest[..open]);
        rest = rest[open..]
            .find('}')
            .map_or("", |close| &rest[open + close + 1..]);
    }
    literal.push_str(rest);
    // Spaces and controls as the runtime judges them: any Unicode one.
    if literal.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("a space or control character, which no URI holds".into());
    }
    let bytes = literal.as_bytes();
    let bad = bytes.iter().enumerate().any(|(i, &b)| match b {
        b'%' => !escape_at(bytes, i),
        b'"' | b'\'' | b'<' | b'>' | b'\\' | b'^' | b'`' | b'|' => true,
        _ => false,
    });
    bad.then(|| "a character RFC 6570 does not allow in a literal (escape it as %XX)".into())
}

/// Whether a `%` at `i` starts an escape: two hex digits follow.
fn escape_at(bytes: &[u8], i: usize) -> bool {
    matches!(
        (bytes.get(i + 1), bytes.get(i + 2)),
        (Some(h), Some(l)) if h.is_ascii_hexdigit() && l.is_ascii_hexdigit()
    )
}
