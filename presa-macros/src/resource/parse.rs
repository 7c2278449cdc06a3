//! Parsing `#[resource(…)]`.

use crate::common::Errors;
use crate::common::attr::{self, CommonKeys};
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
    "scopes",
    "complete",
    "crate",
];

#[derive(Default)]
pub(crate) struct ResourceArgs {
    /// `uri = "…"`, the literal kept for spans inside it.
    pub(crate) uri: Option<syn::LitStr>,
    pub(crate) common: CommonKeys,
    pub(crate) mime_type: Option<String>,
    pub(crate) size: Option<syn::LitInt>,
    /// `complete(variable = provider, …)`.
    pub(crate) complete: Vec<(syn::Ident, syn::Expr)>,
}

pub(crate) fn attribute(tokens: TokenStream, errors: &mut Errors) -> ResourceArgs {
    let mut args = ResourceArgs::default();
    attr::parse_args(tokens, errors, |meta, errors| {
        let key = attr::key_of(meta);
        if args.common.parse(&key, meta)? {
            return Ok(());
        }
        match key.as_str() {
            "uri" => args.uri = Some(attr::lit(meta)?),
            "mime_type" => args.mime_type = Some(attr::string(meta)?.value),
            "size" => args.size = Some(meta.value()?.parse()?),
            "complete" => attr::completions(meta, errors, "variable", &mut args.complete)?,
            _ => return Err(attr::unknown(meta, "`#[resource]`", KEYS)),
        }
        Ok(())
    });
    args
}
