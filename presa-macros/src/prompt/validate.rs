//! The rules of `#[prompt]` the compiler can check.

use super::model::{ParamKind, PromptModel};
use crate::common::Errors;
use crate::common::validate::{check_arg_names, check_common};

pub(crate) fn check(m: &PromptModel, errors: &mut Errors) {
    if m.name.value.is_empty() {
        errors.push(syn::Error::new(
            m.name.span,
            "a prompt name cannot be empty",
        ));
    }
    check_common(&m.args.common, &m.func, errors);
    for h in m.params.iter().filter_map(|p| p.header.as_ref()) {
        errors.at(h, "`#[header]` is only for `#[tool]` parameters");
    }
    let wires: Vec<_> = m
        .params
        .iter()
        .filter_map(|p| match &p.kind {
            ParamKind::Named { wire, .. } => Some(wire),
            ParamKind::Pattern => None,
        })
        .collect();
    check_arg_names(wires.iter().copied(), errors);
    let names: Vec<&str> = wires.iter().map(|w| w.value.as_str()).collect();
    for c in &m.completions {
        if !names.contains(&c.wire.as_str()) {
            errors.at(
                &c.ident,
                format!("completion for `{}`, which is not an argument of prompt `{}`\nhelp: the arguments are: {}", c.ident, m.name.value, names.join(", ")),
            );
        }
    }
}
