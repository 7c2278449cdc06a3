//! What a `#[resource]` declares: a fixed URI or a template (parsed here with the
//! grammar the runtime uses), and each parameter resolved to a template variable or an
//! injected value.

use super::parse::ResourceArgs;
use crate::common::Errors;
use crate::common::attr::span_within;
use crate::common::func::{Func, Param, wire_name};
use presa_rules::template::{Part, Template};
use std::ops::Range;

pub(crate) struct ResourceModel {
    pub(crate) func: Func,
    /// The `uri = "…"` literal, and its text.
    pub(crate) uri: syn::LitStr,
    pub(crate) uri_text: String,
    pub(crate) kind: UriKind,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) args: ResourceArgs,
    pub(crate) params: Vec<ResourceParam>,
}

pub(crate) enum UriKind {
    /// A URI without `{` or `}`: one resource.
    Fixed,
    /// A template: a family of resources.
    Template(Vec<Variable>),
    /// A template that breaks the grammar (already reported).
    Broken,
}

/// A variable of the template.
pub(crate) struct Variable {
    pub(crate) name: String,
    /// Where `{name}` is in the template.
    pub(crate) range: Range<usize>,
}

pub(crate) struct ResourceParam {
    pub(crate) param: Param,
    pub(crate) kind: ParamKind,
}

pub(crate) enum ParamKind {
    /// Named like a template variable: its value, parsed with `FromStr`.
    Variable(String),
    /// Anything else: injected (its type must implement `FromContext`).
    Injected,
}

pub(crate) fn build(
    mut func: Func,
    args: ResourceArgs,
    errors: &mut Errors,
) -> Option<ResourceModel> {
    let Some(uri) = args.uri.clone() else {
        errors.at(
            func.name(),
            "`#[resource]` needs a URI\nhelp: add `uri = \"scheme://path\"` (or a template such as `uri = \"notes://{id}\"`)",
        );
        return None;
    };
    let uri_text = uri.value();
    let kind = if uri_text.contains(['{', '}']) {
        match Template::parse(&uri_text) {
            Ok(t) => UriKind::Template(
                t.parts()
                    .iter()
                    .filter_map(|p| match p {
                        Part::Variable { name, range } => Some(Variable {
                            name: (*name).to_owned(),
                            range: range.clone(),
                        }),
                        Part::Literal(_) => None,
                    })
                    .collect(),
            ),
            Err(e) => {
                errors.push(syn::Error::new(
                    span_within(&uri, e.range.clone()),
                    format!("invalid URI template `{uri_text}`: {e}"),
                ));
                UriKind::Broken
            }
        }
    } else {
        UriKind::Fixed
    };
    let variables: &[Variable] = match &kind {
        UriKind::Template(v) => v,
        UriKind::Fixed | UriKind::Broken => &[],
    };
    let params = std::mem::take(&mut func.params)
        .into_iter()
        .map(|param| {
            let var = param
                .ident
                .as_ref()
                .map(wire_name)
                .filter(|name| variables.iter().any(|v| v.name == *name));
            let kind = match var {
                Some(name) => ParamKind::Variable(name),
                None => ParamKind::Injected,
            };
            ResourceParam { param, kind }
        })
        .collect();
    let name = args.common.name_or_fn(&func).value;
    let description = args.common.description_or_doc(&func);
    Some(ResourceModel {
        func,
        uri,
        uri_text,
        kind,
        name,
        description,
        args,
        params,
    })
}
