//! The rules of `#[resource]` the compiler can check.

use super::model::ResourceModel;
use crate::common::Errors;
use crate::common::func::wire_name;
use crate::common::validate::check_common;

pub(crate) fn check(m: &ResourceModel, errors: &mut Errors) {
    let uri = &m.uri.value;
    let scheme_ok = uri.split_once(':').is_some_and(|(s, _)| {
        !s.is_empty()
            && s.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    if !scheme_ok {
        errors.push(syn::Error::new(
            m.uri.span,
            format!("resource URI `{uri}` must be absolute (start with a scheme such as `file:` or `notes:`)"),
        ));
    }
    // A template that did not parse has its error already.
    let problem = match (&m.template, uri.contains(['{', '}'])) {
        (Some(_), _) => crate::common::uri_template::literal_problem(uri),
        (None, false) => crate::common::uri_template::uri_problem(uri),
        (None, true) => None,
    };
    if let Some(why) = problem {
        errors.push(syn::Error::new(
            m.uri.span,
            format!("resource URI `{uri}` has {why}"),
        ));
    }
    check_common(&m.args.common, &m.func, errors);
    for p in &m.func.params {
        if let Some((_, attr)) = &p.arg {
            errors.at(attr, "`#[arg]` is not used on `#[resource]` parameters");
        }
        if let Some(h) = &p.header {
            errors.at(h, "`#[header]` is only for `#[tool]` parameters");
        }
    }
    let params: Vec<String> = m
        .func
        .params
        .iter()
        .filter_map(|p| p.ident.as_ref().map(wire_name))
        .collect();
    match &m.template {
        Some(t) => {
            for var in &t.variables {
                if !params.contains(var) {
                    errors.push(syn::Error::new(
                        m.uri.span,
                        format!("URI template variable `{{{var}}}` has no parameter\nhelp: add a parameter `{var}: String` (or any `FromStr` type) to the function"),
                    ));
                }
            }
            for (var, _) in &m.args.complete {
                if !t.variables.contains(&wire_name(var)) {
                    errors.at(
                        var,
                        format!("completion for `{var}`, which is not a variable of the URI template `{}`", m.uri.value),
                    );
                }
            }
        }
        None => {
            for (var, _) in &m.args.complete {
                errors.at(
                    var,
                    "completion needs a URI template variable; this resource has a fixed URI",
                );
            }
        }
    }
}
