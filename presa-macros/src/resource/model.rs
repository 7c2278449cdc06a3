//! What a `#[resource]` declares.

use super::parse::ResourceArgs;
use crate::common::Errors;
use crate::common::attr::Spanned;
use crate::common::func::Func;
use crate::common::uri_template::{self, Template};

pub(crate) struct ResourceModel {
    pub(crate) func: Func,
    pub(crate) uri: Spanned<String>,
    /// The parsed template, when the URI has variables.
    pub(crate) template: Option<Template>,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) args: ResourceArgs,
}

pub(crate) fn build(func: Func, args: ResourceArgs, errors: &mut Errors) -> Option<ResourceModel> {
    let Some(uri) = args.uri.clone() else {
        errors.at(
            func.name(),
            "`#[resource]` needs a URI\nhelp: add `uri = \"scheme://path\"` (or a template such as `uri = \"notes://{id}\"`)",
        );
        return None;
    };
    let template = if uri.value.contains(['{', '}']) {
        match uri_template::parse(&uri.value) {
            Ok(t) => Some(t),
            Err(why) => {
                errors.push(syn::Error::new(
                    uri.span,
                    format!("invalid URI template `{}`: {why}", uri.value),
                ));
                None
            }
        }
    } else {
        None
    };
    let name = args.common.name_or_fn(&func).value;
    let description = args.common.description_or_doc(&func);
    Some(ResourceModel {
        func,
        uri,
        template,
        name,
        description,
        args,
    })
}
