//! The path generated code reaches presa by: `::presa`, or the one `crate = "…"` gives
//! (for a crate that renames its dependency, or re-exports presa). The only place that
//! knows presa's name; every expansion takes its paths from a [`CratePath`].

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;

/// The path to presa in generated code.
#[derive(Clone)]
pub(crate) struct CratePath(syn::Path);

impl Default for CratePath {
    fn default() -> Self {
        CratePath(syn::parse_quote!(::presa))
    }
}

impl CratePath {
    /// Reads `crate = "path"`, reporting at the string when it is not a path.
    pub(crate) fn parse(lit: &syn::LitStr) -> syn::Result<Self> {
        lit.parse::<syn::Path>().map(CratePath).map_err(|_| {
            syn::Error::new(
                lit.span(),
                format!(
                    "`crate = \"{}\"` is not a path\nhelp: name the crate presa is known by, such as `crate = \"my_presa\"` or `crate = \"::deps::presa\"`",
                    lit.value()
                ),
            )
        })
    }

    /// The path with every token at `span`, for an item whose errors point there.
    pub(crate) fn at(&self, span: Span) -> TokenStream {
        self.0
            .to_token_stream()
            .into_iter()
            .map(|mut t: TokenTree| {
                t.set_span(span);
                t
            })
            .collect()
    }
}

impl ToTokens for CratePath {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.0.to_tokens(tokens);
    }
}
