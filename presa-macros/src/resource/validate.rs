//! The rules of `#[resource]` the compiler can check: the URI's (presa-rules', the ones
//! `build()` applies), and that every template variable has its parameter.

use super::model::{ParamKind, ResourceModel, UriKind, Variable};
use crate::common::Errors;
use crate::common::attr::span_within;
use crate::common::func::wire_name;
use crate::common::validate::{check_common, closest};

pub(crate) fn check(m: &ResourceModel, errors: &mut Errors) {
    let uri = &m.uri_text;
    if !presa_rules::uri::is_absolute_uri(uri) {
        errors.push(syn::Error::new(
            m.uri.span(),
            format!("resource URI `{uri}` must be absolute (start with a scheme such as `file:` or `notes:`)"),
        ));
    }
    if let UriKind::Fixed = m.kind
        && let Err(e) = presa_rules::uri::check_uri_characters(uri)
    {
        errors.push(syn::Error::new(
            span_within(&m.uri, e.at..e.at + 1),
            format!("resource URI `{uri}` has {e}"),
        ));
    }
    check_common(&m.args.common, &m.func, errors);
    for p in &m.params {
        if let Some((_, attr)) = &p.param.arg {
            errors.at(attr, "`#[arg]` is not used on `#[resource]` parameters");
        }
        if let Some(h) = &p.param.header {
            errors.at(h, "`#[header]` is only for `#[tool]` parameters");
        }
    }
    match &m.kind {
        UriKind::Template(variables) => {
            check_variables(m, variables, errors);
            for (var, _) in &m.args.complete {
                if !variables.iter().any(|v| v.name == wire_name(var)) {
                    errors.at(
                        var,
                        format!("completion for `{var}`, which is not a variable of the URI template `{uri}`"),
                    );
                }
            }
        }
        UriKind::Fixed => {
            for (var, _) in &m.args.complete {
                errors.at(
                    var,
                    "completion needs a URI template variable; this resource has a fixed URI",
                );
            }
        }
        // Its error is reported; which parameters match would be a guess.
        UriKind::Broken => {}
    }
}

/// Every variable needs a parameter named like it. A variable without one, beside a
/// parameter that is no variable and whose name is close, is most likely a typo: both get
/// an error, each naming the other.
fn check_variables(m: &ResourceModel, variables: &[Variable], errors: &mut Errors) {
    let uri = &m.uri_text;
    // Named parameters that are no variable: injected, or misspelt variables.
    let others: Vec<(String, &syn::Ident)> = m
        .params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Injected))
        .filter_map(|p| p.param.ident.as_ref().map(|i| (wire_name(i), i)))
        .collect();
    let mut suggested: Vec<&str> = Vec::new();
    for var in variables {
        let name = &var.name;
        let has_param = m
            .params
            .iter()
            .any(|p| matches!(&p.kind, ParamKind::Variable(v) if v == name));
        if has_param {
            continue;
        }
        let near = closest(name, others.iter().map(|(n, _)| n.as_str()))
            .filter(|n| !suggested.contains(n));
        let help = match near {
            Some(param) => {
                format!("did you mean the parameter `{param}`? a variable's parameter has its name")
            }
            None if is_rust_name(name) => format!(
                "add a parameter `{}: String` (or any `FromStr` type) to the function",
                as_rust_name(name)
            ),
            None => format!(
                "a parameter is named like its variable, and `{name}` is no Rust name; rename the variable"
            ),
        };
        errors.push(syn::Error::new(
            span_within(&m.uri, var.range.clone()),
            format!("URI template variable `{{{name}}}` has no parameter\nhelp: {help}"),
        ));
        if let Some(param) = near
            && let Some((_, ident)) = others.iter().find(|(n, _)| n == param)
        {
            suggested.push(param);
            errors.at(
                ident,
                format!("parameter `{param}` is not a variable of the URI template `{uri}`\nhelp: did you mean `{name}`? rename the parameter or the variable so the two match"),
            );
        }
    }
}

/// Whether a parameter can be named `name` (as itself, or as a raw identifier).
fn is_rust_name(name: &str) -> bool {
    syn::parse_str::<syn::Ident>(name).is_ok()
        || syn::parse_str::<syn::Ident>(&format!("r#{name}")).is_ok()
}

/// `name` as a parameter would spell it: raw when it is a keyword.
fn as_rust_name(name: &str) -> String {
    if syn::parse_str::<syn::Ident>(name).is_ok() {
        name.to_owned()
    } else {
        format!("r#{name}")
    }
}
