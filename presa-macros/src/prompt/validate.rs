//! The rules of `#[prompt]` the compiler can check.

use super::model::PromptModel;
use crate::common::Errors;
use crate::common::func::wire_name;
use crate::common::validate::{check_arg_names, check_common};

pub(crate) fn check(m: &PromptModel, errors: &mut Errors) {
    if m.name.value.is_empty() {
        errors.push(syn::Error::new(
            m.name.span,
            "a prompt name cannot be empty",
        ));
    }
    check_common(&m.args.common, &m.func, errors);
    for p in &m.params {
        if let Some(h) = &p.param.header {
            errors.at(h, "`#[header]` is only for `#[tool]` parameters");
        }
        if p.param.ident.is_none()
            && let Some((_, attr)) = &p.param.arg
        {
            errors.at(attr, "`#[arg]` needs a parameter with a plain name");
        }
    }
    check_arg_names(m.params.iter().filter_map(|p| p.wire.as_ref()), errors);
    let names: Vec<&str> = m
        .params
        .iter()
        .filter_map(|p| p.wire.as_ref())
        .map(|w| w.value.as_str())
        .collect();
    for (arg, _) in &m.args.complete {
        if !names.contains(&wire_name(arg).as_str()) {
            errors.at(
                arg,
                format!("completion for `{arg}`, which is not an argument of prompt `{}`\nhelp: the arguments are: {}", m.name.value, names.join(", ")),
            );
        }
    }
}
