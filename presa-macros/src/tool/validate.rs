//! The rules of `#[tool]` the compiler can check, each reported at its token: the name
//! and header rules are presa-rules', the ones `build()` applies.

use super::model::{NamedParam, ParamKind, ToolModel};
use crate::common::Errors;
use crate::common::validate::{check_arg_names, check_common, check_json_object};

pub(crate) fn check(m: &ToolModel, errors: &mut Errors) {
    let name = &m.name.value;
    if let Err(e) = presa_rules::tool::check_name(name) {
        errors.push(syn::Error::new(
            m.name.span,
            format!(
                "invalid tool name `{name}`: {e}\nhelp: {}; set one with `name = \"…\"`",
                presa_rules::tool::NAME_RULE
            ),
        ));
    }
    if m.description.is_none() && crate::common::unread_doc(&m.func.item.attrs).is_none() {
        errors.at(
            m.func.name(),
            format!("tool `{name}` has no description\nhelp: add a `///` doc comment to the function, or `description = \"…\"` to `#[tool]`; models choose tools by their descriptions"),
        );
    }
    check_common(&m.args.common, &m.func, errors);
    if let Some(schema) = &m.args.input_schema
        && let Some(obj) = check_json_object(schema, "`input_schema`", errors)
        && obj.get("type").and_then(|t| t.as_str()) != Some("object")
    {
        errors.push(syn::Error::new(
            schema.span,
            "`input_schema` must have `\"type\": \"object\"` at its root",
        ));
    }

    let named: Vec<&NamedParam> = m
        .params
        .iter()
        .filter_map(|p| match &p.kind {
            ParamKind::Named(n) => Some(&**n),
            ParamKind::Pattern => None,
        })
        .collect();
    let mut headers: Vec<&syn::LitStr> = Vec::new();
    for h in named.iter().filter_map(|n| n.header.as_ref()) {
        let value = h.value();
        if !presa_rules::header::is_token(&value) {
            errors.at(
                h,
                format!(
                    "invalid header name `{value}`\nhelp: {}",
                    presa_rules::header::NAME_RULE
                ),
            );
        }
        match headers
            .iter()
            .find(|first| presa_rules::header::same_name(&first.value(), &value))
        {
            Some(first) => errors.at(
                h,
                format!("duplicate header name `{value}` (header names are compared ignoring case; `{}` is already used)", first.value()),
            ),
            None => headers.push(h),
        }
    }
    check_arg_names(named.iter().map(|n| &n.wire), errors);
}
