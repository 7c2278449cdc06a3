//! `#[prompt]`: parse, model, validate, expand.

mod expand;
mod model;
mod parse;
mod validate;

use proc_macro2::TokenStream;

pub(crate) fn entry(attr: TokenStream, item: TokenStream) -> TokenStream {
    crate::common::run(
        "#[prompt]",
        attr,
        item,
        parse::attribute,
        |f, a, e| Some(model::build(f, a, e)),
        validate::check,
        expand::expand,
    )
}
