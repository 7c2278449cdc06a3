//! Parsing `#[prompt(…)]` and the `#[arg(…)]` of its parameters.

use crate::common::Errors;
use crate::common::attr::{self, CommonKeys, Spanned};
use proc_macro2::TokenStream;

pub(crate) const KEYS: &[&str] = &[
    "name",
    "title",
    "description",
    "icons",
    "meta",
    "scopes",
    "complete",
    "crate",
];
pub(crate) const ARG_KEYS: &[&str] = &["description", "title", "rename"];

#[derive(Default)]
pub(crate) struct PromptArgs {
    pub(crate) common: CommonKeys,
    /// `complete(argument = provider, …)`.
    pub(crate) complete: Vec<(syn::Ident, syn::Expr)>,
}

pub(crate) fn attribute(tokens: TokenStream, errors: &mut Errors) -> PromptArgs {
    let mut args = PromptArgs::default();
    attr::parse_args(tokens, errors, |meta, errors| {
        let key = attr::key_of(meta);
        if args.common.parse(&key, meta)? {
            return Ok(());
        }
        match key.as_str() {
            "complete" => attr::completions(meta, errors, "argument", &mut args.complete)?,
            _ => return Err(attr::unknown(meta, "`#[prompt]`", KEYS)),
        }
        Ok(())
    });
    args
}

/// The arguments of a prompt parameter's `#[arg(…)]`.
#[derive(Default)]
pub(crate) struct ArgArgs {
    pub(crate) description: Option<String>,
    pub(crate) title: Option<String>,
    pub(crate) rename: Option<Spanned<String>>,
}

pub(crate) fn arg(tokens: TokenStream, errors: &mut Errors) -> ArgArgs {
    let mut args = ArgArgs::default();
    attr::parse_args(tokens, errors, |meta, _| {
        let key = attr::key_of(meta);
        match key.as_str() {
            "description" => args.description = Some(attr::string(meta)?.value),
            "title" => args.title = Some(attr::string(meta)?.value),
            "rename" => args.rename = Some(attr::string(meta)?),
            _ => return Err(attr::unknown(meta, "`#[arg]`", ARG_KEYS)),
        }
        Ok(())
    });
    args
}
