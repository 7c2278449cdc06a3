//! `#[prompt]`: parse, model, validate, expand.

mod expand;
mod model;
mod parse;
mod validate;

use crate::common::{Errors, fallback, func};
use proc_macro2::TokenStream;

pub(crate) fn entry(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let func = func::parse(item.clone(), "#[prompt]", &mut errors);
    let args = parse::attribute(attr, &mut errors);
    let model = func.map(|f| model::build(f, args, &mut errors));
    if let Some(m) = &model {
        validate::check(m, &mut errors);
    }
    match (errors.finish(), model) {
        (Ok(()), Some(m)) => expand::expand(&m),
        (Err(e), _) => fallback(item, e),
        (Ok(()), None) => TokenStream::new(),
    }
}
