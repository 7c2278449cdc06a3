//! What a `#[prompt]` declares.

use super::parse::{self, PromptArgs};
use crate::common::Errors;
use crate::common::attr::Spanned;
use crate::common::func::{Func, Param};

pub(crate) struct PromptModel {
    pub(crate) func: Func,
    pub(crate) name: Spanned<String>,
    pub(crate) description: Option<String>,
    pub(crate) args: PromptArgs,
    pub(crate) params: Vec<PromptParam>,
}

pub(crate) struct PromptParam {
    pub(crate) param: Param,
    pub(crate) wire: Option<Spanned<String>>,
    pub(crate) description: Option<String>,
    pub(crate) title: Option<String>,
}

pub(crate) fn build(mut func: Func, args: PromptArgs, errors: &mut Errors) -> PromptModel {
    let name = args.common.name_or_fn(&func);
    let description = args.common.description_or_doc(&func);
    let params = std::mem::take(&mut func.params)
        .into_iter()
        .map(|param| {
            let a = match &param.arg {
                Some((tokens, _)) => parse::arg(tokens.clone(), errors),
                None => parse::ArgArgs::default(),
            };
            let wire = param.wire(a.rename.clone());
            PromptParam {
                param,
                wire,
                description: a.description,
                title: a.title,
            }
        })
        .collect();
    PromptModel {
        func,
        name,
        description,
        args,
        params,
    }
}
