//! What a `#[tool]` declares, resolved from the function and the attribute: each
//! parameter is a named one (its wire name, description, default and header decided
//! here) or a pattern.

use super::parse::{self, ToolArgs};
use crate::common::Errors;
use crate::common::attr::Spanned;
use crate::common::func::Func;

pub(crate) struct ToolModel {
    pub(crate) func: Func,
    /// The tool's name and where it came from (the attribute or the function name).
    pub(crate) name: Spanned<String>,
    pub(crate) description: Option<String>,
    pub(crate) args: ToolArgs,
    pub(crate) params: Vec<ToolParam>,
}

pub(crate) struct ToolParam {
    pub(crate) ty: syn::Type,
    pub(crate) kind: ParamKind,
}

pub(crate) enum ParamKind {
    /// A parameter with a plain name: an argument, an injected value or `Args<T>`, as its
    /// type decides (the generated code asks the type, never its spelling).
    Named(Box<NamedParam>),
    /// A pattern such as `State(db): State<Db>`: injected, or `Args<T>`.
    Pattern,
}

pub(crate) struct NamedParam {
    /// The argument's name on the wire (the parameter name or its `rename`).
    pub(crate) wire: Spanned<String>,
    pub(crate) description: Option<String>,
    pub(crate) default: Option<syn::Expr>,
    /// `#[header("…")]`: the header name, where it was written.
    pub(crate) header: Option<syn::LitStr>,
}

pub(crate) fn build(mut func: Func, args: ToolArgs, errors: &mut Errors) -> ToolModel {
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
                Some(wire) if param.ident.is_some() => ParamKind::Named(Box::new(NamedParam {
                    wire,
                    description: a.description,
                    default: a.default,
                    header: param.header,
                })),
                _ => {
                    if let Some((_, attr)) = &param.arg {
                        errors.at(
                            attr,
                            "`#[arg]` needs a parameter with a plain name\nhelp: arguments are named by their parameter; patterns are for injected parameters such as `State(db): State<Db>`",
                        );
                    }
                    if let Some(h) = &param.header {
                        errors.at(h, "`#[header]` needs a parameter with a plain name");
                    }
                    ParamKind::Pattern
                }
            };
            ToolParam {
                ty: param.ty,
                kind,
            }
        })
        .collect();
    ToolModel {
        func,
        name,
        description,
        args,
        params,
    }
}
