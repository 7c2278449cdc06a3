//! What a `#[prompt]` declares: each parameter a named argument (or injected value, as
//! its type decides) or a pattern, and each completion resolved to its argument's name.

use super::parse::{self, PromptArgs};
use crate::common::Errors;
use crate::common::attr::Spanned;
use crate::common::func::{Func, wire_name};

pub(crate) struct PromptModel {
    pub(crate) func: Func,
    pub(crate) name: Spanned<String>,
    pub(crate) description: Option<String>,
    pub(crate) args: PromptArgs,
    pub(crate) params: Vec<PromptParam>,
    pub(crate) completions: Vec<Completion>,
}

pub(crate) struct PromptParam {
    pub(crate) ty: syn::Type,
    pub(crate) kind: ParamKind,
    /// `#[header]`, which a prompt parameter cannot have (reported by validate).
    pub(crate) header: Option<syn::LitStr>,
}

pub(crate) enum ParamKind {
    /// A parameter with a plain name: an argument, or injected, as its type decides.
    Named {
        wire: Spanned<String>,
        description: Option<String>,
        title: Option<String>,
    },
    /// A pattern: injected.
    Pattern,
}

/// `complete(argument = provider)`.
pub(crate) struct Completion {
    /// The argument as written in the attribute (where errors point).
    pub(crate) ident: syn::Ident,
    /// Its name on the wire (without `r#`).
    pub(crate) wire: String,
    pub(crate) provider: syn::Expr,
}

pub(crate) fn build(mut func: Func, mut args: PromptArgs, errors: &mut Errors) -> PromptModel {
    let name = args.common.name_or_fn(&func);
    let description = args.common.description_or_doc(&func);
    let params = std::mem::take(&mut func.params)
        .into_iter()
        .map(|param| {
            let a = match &param.arg {
                Some((tokens, _)) => parse::arg(tokens.clone(), errors),
                None => parse::ArgArgs::default(),
            };
            let kind = match param.wire(a.rename) {
                Some(wire) if param.ident.is_some() => ParamKind::Named {
                    wire,
                    description: a.description,
                    title: a.title,
                },
                _ => {
                    if let Some((_, attr)) = &param.arg {
                        errors.at(attr, "`#[arg]` needs a parameter with a plain name");
                    }
                    ParamKind::Pattern
                }
            };
            PromptParam {
                ty: param.ty,
                kind,
                header: param.header,
            }
        })
        .collect();
    let completions = std::mem::take(&mut args.complete)
        .into_iter()
        .map(|(ident, provider)| Completion {
            wire: wire_name(&ident),
            ident,
            provider,
        })
        .collect();
    PromptModel {
        func,
        name,
        description,
        args,
        params,
        completions,
    }
}
