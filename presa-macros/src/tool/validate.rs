//! The rules of `#[tool]` the compiler can check, each reported at its token.

use super::model::ToolModel;
use crate::common::Errors;
use crate::common::validate::{check_arg_names, check_common, check_json_object, is_token};

pub(crate) fn check(m: &ToolModel, errors: &mut Errors) {
    let name = &m.name.value;
    let valid_name = !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if !valid_name {
        errors.push(syn::Error::new(
            m.name.span,
            format!("invalid tool name `{name}`\nhelp: a tool name has 1 to 128 characters from A-Z, a-z, 0-9, `_`, `.` and `-`; set one with `name = \"…\"`"),
        ));
    }
    if m.description.is_none() && crate::common::unread_doc(&m.func.item.attrs).is_none() {
        errors.at(
            m.func.name(),
            format!("tool `{name}` has no description\nhelp: add a `///` doc comment to the function, or `description = \"…\"` to `#[tool]`; models choose tools by their descriptions"),
        );
    }
    if let Some(task) = &m.args.task
        && !matches!(task.value.as_str(), "sync" | "optional" | "required")
    {
        errors.push(syn::Error::new(
            task.span,
            format!(
                "unknown task mode `{}`\nhelp: expected one of `sync`, `optional`, `required`",
                task.value
            ),
        ));
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

    let mut headers: Vec<(String, &syn::LitStr)> = Vec::new();
    for p in &m.params {
        if p.param.ident.is_none() {
            if let Some((_, attr)) = &p.param.arg {
                errors.at(
                    attr,
                    "`#[arg]` needs a parameter with a plain name\nhelp: arguments are named by their parameter; patterns are for injected parameters such as `State(db): State<Db>`",
                );
            }
            if let Some(h) = &p.param.header {
                errors.at(h, "`#[header]` needs a parameter with a plain name");
            }
        }
        if let Some(h) = &p.param.header {
            let value = h.value();
            if !is_token(&value) {
                errors.at(
                    h,
                    format!("invalid header name `{value}`\nhelp: an `x-mcp-header` name is a non-empty HTTP token: letters, digits and !#$%&'*+-.^_`|~, no spaces or colons"),
                );
            }
            let lower = value.to_ascii_lowercase();
            if let Some((_, first)) = headers.iter().find(|(l, _)| *l == lower) {
                errors.at(
                    h,
                    format!("duplicate header name `{value}` (header names are compared ignoring case; `{}` is already used)", first.value()),
                );
            } else {
                headers.push((lower, h));
            }
        }
    }
    check_arg_names(m.params.iter().filter_map(|p| p.wire.as_ref()), errors);
}
