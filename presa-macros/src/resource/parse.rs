//! Parsing `#[resource(…)]`.

use crate::common::Errors;
use crate::common::attr::{self, Spanned};
use proc_macro2::TokenStream;

pub(crate) const KEYS: &[&str] = &[
    "uri",
    "name",
    "title",
    "description",
    "mime_type",
    "size",
    "icons",
    "meta",
    "complete",
];

#[derive(Default)]
pub(crate) struct ResourceArgs {
    pub(crate) uri: Option<Spanned<String>>,
    pub(crate) name: Option<String>,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) mime_type: Option<String>,
    pub(crate) size: Option<syn::LitInt>,
    pub(crate) icons: Vec<Spanned<String>>,
    pub(crate) meta: Option<Spanned<String>>,
    /// `complete(variable = provider, …)`.
    pub(crate) complete: Vec<(syn::Ident, syn::Expr)>,
}

pub(crate) fn attribute(tokens: TokenStream, errors: &mut Errors) -> ResourceArgs {
    let mut args = ResourceArgs::default();
    attr::parse_args(tokens, errors, |meta, errors| {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match key.as_str() {
            "uri" => args.uri = Some(attr::string(meta)?),
            "name" => args.name = Some(attr::string(meta)?.value),
            "title" => args.title = Some(attr::string(meta)?.value),
            "description" => args.description = Some(attr::string(meta)?.value),
            "mime_type" => args.mime_type = Some(attr::string(meta)?.value),
            "size" => args.size = Some(meta.value()?.parse()?),
            "icons" => args.icons = attr::strings(meta)?,
            "meta" => args.meta = Some(attr::string(meta)?),
            "complete" => attr::parse_nested(meta, errors, |inner, _| {
                let Some(ident) = inner.path.get_ident().cloned() else {
                    return Err(inner.error("expected `variable = provider`"));
                };
                args.complete.push((ident, attr::expr(inner)?));
                Ok(())
            })?,
            _ => return Err(attr::unknown(meta, "`#[resource]`", KEYS)),
        }
        Ok(())
    });
    args
}
