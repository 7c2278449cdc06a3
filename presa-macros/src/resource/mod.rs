//! `#[resource]`: parse, model, validate, expand. A URI with `{variables}` declares a
//! resource template; one without declares a resource at that URI.

mod expand;
mod model;
mod parse;
mod validate;

use proc_macro2::TokenStream;

pub(crate) fn entry(attr: TokenStream, item: TokenStream) -> TokenStream {
    crate::common::run(
        "#[resource]",
        attr,
        item,
        parse::attribute,
        model::build,
        validate::check,
        expand::expand,
    )
}
