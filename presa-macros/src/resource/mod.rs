//! `#[resource]`: parse, model, validate, expand. A URI with `{variables}` declares a
//! resource template; one without declares a resource at that URI.

mod expand;
mod model;
mod parse;
mod validate;

use crate::common::{Errors, fallback, func};
use proc_macro2::TokenStream;

pub(crate) fn entry(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let func = func::parse(item.clone(), "#[resource]", &mut errors);
    let args = parse::attribute(attr, &mut errors);
    let model = func.and_then(|f| model::build(f, args, &mut errors));
    if let Some(m) = &model {
        validate::check(m, &mut errors);
    }
    match (errors.finish(), model) {
        (Ok(()), Some(m)) => expand::expand(&m),
        (Err(e), _) => fallback(item, e),
        (Ok(()), None) => fallback(
            item,
            syn::Error::new(proc_macro2::Span::call_site(), "invalid #[resource]"),
        ),
    }
}
