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
