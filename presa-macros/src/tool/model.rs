//! What a `#[tool]` declares, resolved from the function and the attribute.

use super::parse::{self, ToolArgs};
use crate::common::Errors;
use crate::common::attr::Spanned;
use crate::common::func::{Func, Param};

pub(crate) struct ToolModel {
    pub(crate) func: Func,
    /// The tool's name and where it came from (the attribute or the function name).
    pub(crate) name: Spanned<String>,
    pub(crate) description: Option<String>,
    pub(crate) args: ToolArgs,
    pub(crate) params: Vec<ParamModel>,
}

pub(crate) struct ParamModel {
    pub(crate) index: usize,
    pub(crate) param: Param,
    /// The argument's name on the wire (the parameter name or its `rename`).
    pub(crate) wire: Option<Spanned<String>>,
    pub(crate) description: Option<String>,
    pub(crate) default: Option<syn::Expr>,
}

pub(crate) fn build(mut func: Func, args: ToolArgs, errors: &mut Errors) -> ToolModel {
    let name = args.common.name_or_fn(&func);
    let description = args.common.description_or_doc(&func);
    let params = std::mem::take(&mut func.params)
        .into_iter()
        .enumerate()
        .map(|(index, param)| {
            let a = match &param.arg {
                Some((tokens, _)) => parse::arg(tokens.clone(), errors),
                None => parse::ArgArgs::default(),
            };
            let wire = param.wire(a.rename.clone());
            ParamModel {
                index,
                param,
                wire,
                description: a.description,
                default: a.default,
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
