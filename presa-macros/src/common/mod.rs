//! What the three attributes share: error collection, the crate path, the parsed
//! function, doc comments, parameter attributes, and the fallback expansion used when
//! there are errors.

pub(crate) mod attr;
pub(crate) mod crate_path;
pub(crate) mod expand;
pub(crate) mod func;
pub(crate) mod validate;

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};

/// Collects every error of one expansion, so one compile shows them all.
#[derive(Default)]
pub(crate) struct Errors {
    errors: Option<syn::Error>,
}

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.errors {
            Some(e) => e.combine(error),
            None => self.errors = Some(error),
        }
    }

    pub(crate) fn at(&mut self, span: impl ToTokens, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(span, message));
    }

    pub(crate) fn finish(self) -> Result<(), syn::Error> {
        match self.errors {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The four stages every attribute runs, in order: parse the function and the attribute,
/// build the model, validate it, expand it. Errors from every stage are collected; with
/// any, the user's function is emitted unchanged beside them.
pub(crate) fn run<A, M>(
    what: &str,
    attr: TokenStream,
    item: TokenStream,
    parse_attr: impl FnOnce(TokenStream, &mut Errors) -> A,
    build: impl FnOnce(func::Func, A, &mut Errors) -> Option<M>,
    check: impl FnOnce(&M, &mut Errors),
    expand: impl FnOnce(&M) -> TokenStream,
) -> TokenStream {
    let mut errors = Errors::default();
    let func = func::parse(item.clone(), what, &mut errors);
    let args = parse_attr(attr, &mut errors);
    let model = func.and_then(|f| build(f, args, &mut errors));
    if let Some(m) = &model {
        check(m, &mut errors);
    }
    match (errors.finish(), model) {
        (Ok(()), Some(m)) => expand(&m),
        (Err(e), _) => fallback(item, e),
        // Every stage that gives up reports why; this keeps the function if one did not.
        (Ok(()), None) => fallback(
            item,
            syn::Error::new(proc_macro2::Span::call_site(), format!("invalid {what}")),
        ),
    }
}

/// On error: the user's item unchanged (parameter attributes removed, so they do not add
/// confusing errors of their own) plus the errors.
pub(crate) fn fallback(item: TokenStream, error: syn::Error) -> TokenStream {
    let errors = error.to_compile_error();
    match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(mut f) => {
            func::strip_param_attrs(&mut f);
            quote! { #f #errors }
        }
        Err(_) => quote! { #item #errors },
    }
}

/// The text of the doc comments, lines joined, one leading space removed; in a `/** */`
/// block whose lines all start with `*` (after indentation), those `*` too.
pub(crate) fn doc_text(attrs: &[syn::Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for a in attrs {
        if !a.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &a.meta
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
        {
            let v = s.value();
            let starred = v.contains('\n')
                && v.lines()
                    .map(str::trim_start)
                    .filter(|l| !l.is_empty())
                    .all(|l| l.starts_with('*'));
            for line in v.lines() {
                let line = if starred {
                    line.trim_start().strip_prefix('*').unwrap_or(line)
                } else {
                    line
                };
                lines.push(line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned());
            }
        }
    }
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// A doc attribute presa cannot read (`#[doc = include_str!(…)]`, `#[doc = concat!(…)]`):
/// its text is known only after macro expansion.
pub(crate) fn unread_doc(attrs: &[syn::Attribute]) -> Option<&syn::Attribute> {
    attrs.iter().find(|a| {
        a.path().is_ident("doc")
            && matches!(&a.meta, syn::Meta::NameValue(nv)
                if !matches!(&nv.value, syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(_), .. })))
    })
}
