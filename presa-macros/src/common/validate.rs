//! Checks shared by the attributes: HTTP tokens, icon URIs, JSON given as strings.

use super::Errors;
use super::attr::Spanned;

/// Whether `name` is a non-empty RFC 9110 token.
pub(crate) fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Icons must be `https:` or `data:` URIs.
pub(crate) fn check_icons(icons: &[Spanned<String>], errors: &mut Errors) {
    for icon in icons {
        let lower = icon.value.to_ascii_lowercase();
        if !(lower.starts_with("https://") || lower.starts_with("data:")) {
            errors.push(syn::Error::new(
                icon.span,
                "an icon must be an `https:` or `data:` URI",
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

/// Checks the keys every attribute shares: icon schemes and the `meta` JSON; and, when
/// the description comes from the doc comments, that presa can read them.
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
    if let Some(meta) = &keys.meta {
        check_json_object(meta, "`meta`", errors);
    }
}
