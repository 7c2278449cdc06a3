//! Checks shared by the attributes: icon URIs, JSON given as strings, `_meta` keys,
//! argument names, and the nearest name for a "did you mean". The rules themselves are
//! presa-rules', the ones the runtime applies.

use super::Errors;
use super::attr::Spanned;

/// Icons must be `https:` or `data:` URIs that RFC 3986 allows.
pub(crate) fn check_icons(icons: &[Spanned<String>], errors: &mut Errors) {
    for icon in icons {
        if !presa_rules::uri::is_icon_scheme(&icon.value) {
            errors.push(syn::Error::new(
                icon.span,
                "an icon must be an `https:` or `data:` URI",
            ));
        } else if let Err(e) = presa_rules::uri::check_uri_characters(&icon.value) {
            errors.push(syn::Error::new(
                icon.span,
                format!("icon `{}` has {e}", icon.value),
            ));
        }
    }
}

/// Parses a string holding a JSON object, reporting at the string when it is not one.
pub(crate) fn check_json_object(
    text: &Spanned<String>,
    what: &str,
    errors: &mut Errors,
) -> Option<serde_json::Map<String, serde_json::Value>> {
    match serde_json::from_str::<serde_json::Value>(&text.value) {
        Ok(serde_json::Value::Object(m)) => Some(m),
        Ok(_) => {
            errors.push(syn::Error::new(
                text.span,
                format!("{what} must be a JSON object"),
            ));
            None
        }
        Err(e) => {
            errors.push(syn::Error::new(
                text.span,
                format!("{what} is not valid JSON: {e}"),
            ));
            None
        }
    }
}

/// The arguments' names on the wire: none empty (`#[arg(rename = "")]`), none twice.
pub(crate) fn check_arg_names<'a>(
    names: impl IntoIterator<Item = &'a Spanned<String>>,
    errors: &mut Errors,
) {
    let mut seen: Vec<&str> = Vec::new();
    for name in names {
        if name.value.is_empty() {
            errors.push(syn::Error::new(
                name.span,
                "an argument name cannot be empty",
            ));
        } else if seen.contains(&name.value.as_str()) {
            errors.push(syn::Error::new(
                name.span,
                format!("two arguments are named `{}`", name.value),
            ));
        }
        seen.push(&name.value);
    }
}

/// Checks the keys every attribute shares: icon URIs, the `meta` JSON and its keys; and,
/// when the description comes from the doc comments, that presa can read them.
pub(crate) fn check_common(
    keys: &super::attr::CommonKeys,
    func: &super::func::Func,
    errors: &mut Errors,
) {
    if keys.description.is_none()
        && let Some(doc) = super::unread_doc(&func.item.attrs)
    {
        errors.at(
            doc,
            "presa reads the description from doc comments written as text; this one is known only after macro expansion\nhelp: give the description with `description = \"…\"` in the attribute",
        );
    }
    check_icons(&keys.icons, errors);
    for scope in &keys.scopes {
        if let Err(why) = presa_rules::scope::check(&scope.value) {
            errors.push(syn::Error::new(scope.span, why));
        }
    }
    if let Some(meta) = &keys.meta
        && let Some(object) = check_json_object(meta, "`meta`", errors)
    {
        // Sorted: the map's order depends on serde_json's features.
        let mut bad: Vec<String> = object
            .keys()
            .filter(|k| !presa_rules::meta::is_valid_key(k))
            .map(|k| format!("`{k}`"))
            .collect();
        bad.sort();
        if !bad.is_empty() {
            errors.push(syn::Error::new(
                meta.span,
                format!(
                    "`meta` has keys that do not follow the `_meta` key syntax: {}\nhelp: {}",
                    bad.join(", "),
                    presa_rules::meta::KEY_RULE
                ),
            ));
        }
    }
}

/// The candidate nearest to `name` by edit distance, if one is near enough to be a typo
/// of it (a third of the longer name's characters, at least one).
pub(crate) fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|&(d, c)| d <= name.chars().count().max(c.chars().count()).max(3) / 3)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Edit distance in characters, counting a swap of two neighbours as one edit (the
/// optimal string alignment distance): `nmae` is one edit from `name`.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // rows[i][j]: the distance between the first i characters of a and the first j of b.
    let mut rows = vec![vec![0; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}
